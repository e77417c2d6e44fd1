/* agmm_cleanup: remove this user's agmm segments whose processes are gone.
 * Names say whose a segment is (transport/shm/segment.h): a segment with a
 * pid goes when that process has ended; a job's control segment (pid 0)
 * goes by the rules of world/join.h (no live holder). Segments of live
 * processes, of other users, and names that are not agmm's are left alone.
 * Run by `agmm cleanup` and by every agmm_world_join for its own job. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "transport/shm/segment.h"
#include "world/join.h"

/* 1 when this call removed the control segment `name`. */
static int clean_ctl(const char *name)
{
    agmm_seg_t seg;
    int missing = 0;
    if (agmm_seg_open(name, sizeof(agmm_join_hdr_t), &seg, &missing) !=
        AGMM_OK) {
        if (missing == 2 && agmm_join_seg_age(name) > AGMM_JOIN_INIT_GRACE_S)
            return agmm_seg_unlink(name) == 0;
        return 0;
    }
    int removed =
        agmm_join_reap(seg.addr, seg.bytes, name, agmm_join_seg_age(name));
    agmm_seg_unmap(&seg);
    return removed;
}

agmm_status_t agmm_cleanup(const char *job, int *removed)
{
    if (removed) *removed = 0;
    if (job) AGMM_CHECK(agmm_seg_check_job(job, "cleanup"));
    DIR *d = opendir(AGMM_SEG_DIR);
    if (!d) {
        if (errno == ENOENT) return AGMM_OK; /* no shm on this system */
        return agmm_error(AGMM_ERR_SYSTEM, "cleanup: open %s: %s", AGMM_SEG_DIR,
                          strerror(errno));
    }
    unsigned me = (unsigned)geteuid();
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        agmm_seg_name_t n;
        if (!agmm_seg_parse(e->d_name, &n) || n.uid != me) continue;
        if (job && strcmp(n.job, job) != 0) continue;
        char name[AGMM_SEG_NAME_MAX];
        if (snprintf(name, sizeof name, "/%s", e->d_name) >= (int)sizeof name)
            continue;
        if (n.pid == 0) {
            if (strcmp(n.tag, "ctl") == 0) count += clean_ctl(name);
            continue;
        }
        if (agmm_seg_pid_alive(n.pid)) continue;
        /* Only our own: the name says our uid, the file must agree. */
        char path[AGMM_SEG_NAME_MAX + 16];
        struct stat sb;
        snprintf(path, sizeof path, "%s%s", AGMM_SEG_DIR, name);
        if (lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_uid != me)
            continue;
        if (agmm_seg_unlink(name) == 0) count++;
    }
    closedir(d);
    if (removed) *removed = count;
    return AGMM_OK;
}
