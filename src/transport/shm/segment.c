/* Named shared-memory segments; see segment.h for the naming scheme, the
 * security checks and the lifetime. Stateless: every function works on its
 * arguments only, any thread. */
#include "transport/shm/segment.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"

static int job_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

static int tag_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '.';
}

agmm_status_t agmm_seg_check_job(const char *job, const char *what)
{
    if (!job || !*job)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "%s: empty job name (allowed: 1..%d characters of "
                          "[A-Za-z0-9._-])",
                          what, AGMM_SEG_JOB_MAX);
    size_t n = strlen(job);
    if (n > AGMM_SEG_JOB_MAX)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "%s: job name of %zu characters (allowed: 1..%d "
                          "characters of [A-Za-z0-9._-])",
                          what, n, AGMM_SEG_JOB_MAX);
    for (size_t i = 0; i < n; i++)
        if (!job_char(job[i]))
            return agmm_error(AGMM_ERR_INVALID_ARG,
                              "%s: job name '%.*s' has '%c' at %zu (allowed: "
                              "1..%d characters of [A-Za-z0-9._-], no '/')",
                              what, (int)n, job,
                              job[i] >= 32 && job[i] < 127 ? job[i] : '?', i,
                              AGMM_SEG_JOB_MAX);
    if (strcmp(job, ".") == 0 || strcmp(job, "..") == 0)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "%s: job name '%s' is not allowed", what, job);
    return AGMM_OK;
}

agmm_status_t agmm_seg_name(char *buf, const char *job, pid_t pid,
                            const char *tag)
{
    size_t tl = tag ? strlen(tag) : 0;
    int ok = job && tl > 0 && tl <= AGMM_SEG_TAG_MAX && pid >= 0;
    for (size_t i = 0; ok && i < tl; i++)
        ok = tag_char(tag[i]);
    for (size_t i = 0; ok && job[i]; i++)
        ok = job_char(job[i]);
    if (!ok || strlen(job) > AGMM_SEG_JOB_MAX)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "shm: bad segment name parts (job '%s', tag '%s')",
                          job ? job : "(null)", tag ? tag : "(null)");
    int n = snprintf(buf, AGMM_SEG_NAME_MAX, "/agmm:%u:%s:%ld:%s",
                     (unsigned)geteuid(), job, (long)pid, tag);
    if (n < 0 || n >= AGMM_SEG_NAME_MAX)
        return agmm_error(AGMM_ERR_INVALID_ARG, "shm: segment name too long");
    return AGMM_OK;
}

/* Parse the decimal at *p up to `stop`; advance *p past it. */
static int parse_num(const char **p, char stop, unsigned long long *out)
{
    const char *s = *p;
    unsigned long long v = 0;
    if (*s < '0' || *s > '9') return 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (v > 1000000000000ull) return 0;
        v = v * 10 + (unsigned)(*s - '0');
    }
    if (*s != stop) return 0;
    *p = s + (stop ? 1 : 0);
    *out = v;
    return 1;
}

int agmm_seg_parse(const char *name, agmm_seg_name_t *out)
{
    memset(out, 0, sizeof *out);
    if (*name == '/') name++;
    if (strncmp(name, "agmm:", 5) != 0) return 0;
    const char *p = name + 5;
    unsigned long long uid, pid;
    if (!parse_num(&p, ':', &uid) || uid > 0xffffffffull) return 0;
    const char *colon = strchr(p, ':');
    if (!colon || colon == p || colon - p > AGMM_SEG_JOB_MAX) return 0;
    for (const char *c = p; c < colon; c++)
        if (!job_char(*c)) return 0;
    memcpy(out->job, p, (size_t)(colon - p));
    p = colon + 1;
    if (!parse_num(&p, ':', &pid) || pid > 0x7fffffffull) return 0;
    size_t tl = strlen(p);
    if (tl == 0 || tl > AGMM_SEG_TAG_MAX) return 0;
    for (size_t i = 0; i < tl; i++)
        if (!tag_char(p[i])) return 0;
    memcpy(out->tag, p, tl);
    out->uid = (unsigned)uid;
    out->pid = (pid_t)pid;
    return 1;
}

static agmm_status_t map_fd(int fd, const char *name, size_t bytes,
                            agmm_seg_t *out)
{
    void *addr = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (addr == MAP_FAILED) {
        int e = errno;
        return agmm_error(e == ENOMEM ? AGMM_ERR_NO_MEMORY : AGMM_ERR_SYSTEM,
                          "shm: mmap %zu KiB of segment %s: %s", bytes >> 10,
                          name, strerror(e));
    }
    snprintf(out->name, sizeof out->name, "%s", name);
    out->addr = addr;
    out->bytes = bytes;
    return AGMM_OK;
}

agmm_status_t agmm_seg_create(const char *name, size_t bytes, agmm_seg_t *out,
                              int *exists)
{
    memset(out, 0, sizeof *out);
    if (exists) *exists = 0;
    if (bytes == 0 || strlen(name) >= AGMM_SEG_NAME_MAX)
        return agmm_error(AGMM_ERR_INVALID_ARG, "shm: create %s: bad size",
                          name);
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        int e = errno;
        if (e == EEXIST && exists) {
            *exists = 1;
            return AGMM_ERR_BAD_STATE;
        }
        return agmm_error(AGMM_ERR_SYSTEM, "shm: create segment %s: %s", name,
                          strerror(e));
    }
    /* The umask can only narrow 0600; make it exactly 0600 anyway. */
    agmm_status_t st = AGMM_OK;
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)bytes) != 0) {
        int e = errno;
        st = agmm_error(e == ENOSPC || e == ENOMEM ? AGMM_ERR_NO_MEMORY
                                                   : AGMM_ERR_SYSTEM,
                        "shm: size segment %s to %zu KiB: %s", name,
                        bytes >> 10, strerror(e));
    }
    if (st == AGMM_OK) st = map_fd(fd, name, bytes, out);
    close(fd);
    if (st != AGMM_OK) shm_unlink(name);
    return st;
}

agmm_status_t agmm_seg_open(const char *name, size_t min_bytes, agmm_seg_t *out,
                            int *missing)
{
    memset(out, 0, sizeof *out);
    if (missing) *missing = 0;
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT && missing) {
            *missing = 1;
            return AGMM_ERR_BAD_STATE;
        }
        return agmm_error(AGMM_ERR_SYSTEM, "shm: open segment %s: %s", name,
                          strerror(e));
    }
    struct stat sb;
    agmm_status_t st = AGMM_OK;
    if (fstat(fd, &sb) != 0) {
        st = agmm_error(AGMM_ERR_SYSTEM, "shm: stat segment %s: %s", name,
                        strerror(errno));
    } else if (!S_ISREG(sb.st_mode) || sb.st_uid != geteuid() ||
               (sb.st_mode & 0777) != 0600) {
        st = agmm_error(AGMM_ERR_SYSTEM,
                        "shm: refusing segment %s: owned by uid %u with mode "
                        "%04o (expected uid %u, mode 0600)",
                        name, (unsigned)sb.st_uid,
                        (unsigned)(sb.st_mode & 07777), (unsigned)geteuid());
    } else if (sb.st_size == 0 && missing) {
        *missing = 2;
        st = AGMM_ERR_BAD_STATE;
    } else if ((uint64_t)sb.st_size < min_bytes || sb.st_size == 0) {
        st = agmm_error(AGMM_ERR_SYSTEM,
                        "shm: segment %s has %lld bytes (expected at least "
                        "%zu)",
                        name, (long long)sb.st_size, min_bytes);
    }
    if (st == AGMM_OK) st = map_fd(fd, name, (size_t)sb.st_size, out);
    close(fd);
    return st;
}

void agmm_seg_unmap(agmm_seg_t *seg)
{
    if (!seg || !seg->addr) return;
    munmap(seg->addr, seg->bytes);
    seg->addr = NULL;
    seg->bytes = 0;
}

int agmm_seg_unlink(const char *name)
{
    return shm_unlink(name) == 0 ? 0 : errno;
}

static int pid_gone(pid_t pid)
{
    return kill(pid, 0) != 0 && errno == ESRCH;
}

int agmm_seg_pid_alive(pid_t pid)
{
    if (pid <= 0 || pid_gone(pid)) return 0;
    /* kill() succeeds on a zombie: it has exited, only not been reaped.
     * Its stat says Z. The zombie may be reaped between kill() and the
     * read (its entry is then gone or empty): ask kill() again. Without
     * /proc, trust kill(). */
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (!f) return !pid_gone(pid);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *rp = strrchr(buf, ')'); /* the name may hold spaces */
    if (!rp) return !pid_gone(pid);
    if (rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X')) return 0;
    return 1;
}
