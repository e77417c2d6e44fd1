/* Applying a rank's share (place.h) in this process, and pinning its
 * worker threads.
 *
 * State: one share per process (a rank is a process: forked, joined or
 * MPI), written once while the process is single-threaded (right after
 * the fork, or when the rank joins, before any worker starts) and only
 * read afterwards, by any thread, so it needs no lock. */
#include <dirent.h>
#include <errno.h>
#include <linux/mempolicy.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"
#include "common/param.h"
#include "place/place.h"

static agmm_cpuset_t g_share;
static int g_bound;

static void to_cpu_set(const agmm_cpuset_t *s, cpu_set_t *out)
{
    CPU_ZERO(out);
    for (int i = 0; i < AGMM_CPUSET_MAX && i < CPU_SETSIZE; i++)
        if (agmm_cpuset_has(s, i)) CPU_SET(i, out);
}

static void from_cpu_set(const cpu_set_t *s, agmm_cpuset_t *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < AGMM_CPUSET_MAX && i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, s)) agmm_cpuset_add(out, i);
}

/* Every other thread of this process onto the same set: the share is
 * applied while the process is single-threaded as far as agmm is
 * concerned, but a runtime's own thread may already exist (the thread
 * sanitizer remakes its background thread at fork, before our child code
 * runs) and would keep the old mask. A thread that exits meanwhile is
 * skipped. */
static void bind_other_threads(const cpu_set_t *set)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)getpid());
    DIR *d = opendir(path);
    if (!d) return;
    pid_t self = (pid_t)syscall(SYS_gettid);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        pid_t tid = (pid_t)atoi(e->d_name);
        if (tid > 0 && tid != self)
            (void)sched_setaffinity(tid, sizeof *set, set);
    }
    closedir(d);
}

int agmm_bind_apply(const agmm_place_rank_t *r, int nnodes)
{
    cpu_set_t set;
    to_cpu_set(&r->cpus, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        agmm_error(AGMM_ERR_SYSTEM, "placement: sched_setaffinity: %s",
                   strerror(errno));
        return -1;
    }
    bind_other_threads(&set);
    /* One node: memory is there whatever the policy. More: bind this
     * process's future pages (its windows, staging, weights, first touched
     * here) to the nodes of its cores, as numactl -m does. Refused (a
     * container's seccomp may forbid set_mempolicy): said once, and the
     * rank goes on, its pages then placed by the kernel's default local
     * policy, which with the affinity just set is its own node(s) for
     * what it touches first. */
    if (nnodes > 1) {
        unsigned long mask[AGMM_CPUSET_MAX / (8 * sizeof(unsigned long))];
        memset(mask, 0, sizeof mask);
        for (int n = 0; n < AGMM_CPUSET_MAX; n++)
            if (agmm_cpuset_has(&r->nodes, n))
                mask[n / (8 * sizeof(unsigned long))] |=
                    1ul << (n % (8 * sizeof(unsigned long)));
        if (syscall(SYS_set_mempolicy, MPOL_BIND, mask,
                    (unsigned long)AGMM_CPUSET_MAX + 1) != 0)
            agmm_warn("placement: set_mempolicy: %s; memory placed by first "
                      "touch",
                      strerror(errno));
    }
    agmm_bind_adopt(&r->cpus);
    return 0;
}

void agmm_bind_adopt(const agmm_cpuset_t *cpus)
{
    g_share = *cpus;
    g_bound = !agmm_cpuset_empty(cpus);
}

void agmm_bind_adopt_env(void)
{
    const char *s = agmm_param_str(AGMM_PARAM_BIND_CPUS);
    if (!s || !*s) return;
    agmm_cpuset_t share, mine;
    char why[160];
    if (agmm_cpuset_parse(s, strlen(s), &share, why, sizeof why) != 0) return;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return;
    from_cpu_set(&set, &mine);
    for (int i = 0; i < AGMM_CPUSET_MAX / 64; i++)
        if (share.w[i] & ~mine.w[i]) return; /* rebound since: not ours */
    agmm_bind_adopt(&share);
}

const agmm_cpuset_t *agmm_bind_rank_cpus(void)
{
    return g_bound ? &g_share : NULL;
}

/* Worker i's CPU, -1 when the rank is not bound. */
static int worker_cpu(int i)
{
    if (!g_bound) return -1;
    int n = agmm_cpuset_count(&g_share);
    return agmm_cpuset_nth(&g_share, i % n);
}

int agmm_bind_worker_cpu(int i)
{
    return worker_cpu(i);
}

int agmm_bind_worker_attr(void *pthread_attr, int i)
{
    int cpu = worker_cpu(i);
    if (cpu < 0) return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_attr_setaffinity_np(pthread_attr, sizeof set, &set) == 0
               ? 0
               : -1;
}

void agmm_bind_self(int i, agmm_bind_saved_t *saved)
{
    saved->valid = 0;
    int cpu = worker_cpu(i);
    if (cpu < 0) return;
    cpu_set_t old, set;
    if (pthread_getaffinity_np(pthread_self(), sizeof old, &old) != 0) return;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    /* Already there (a rank of one CPU: its process was bound to it), so
     * nothing to change or restore: two system calls fewer a round, each
     * 1-1.5 us on a paravirtualized guest (docs/history/, "A
     * round's system calls"). */
    if (CPU_EQUAL(&old, &set)) return;
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) return;
    from_cpu_set(&old, &saved->cpus);
    saved->valid = 1;
}

void agmm_bind_restore(const agmm_bind_saved_t *saved)
{
    if (!saved->valid) return;
    cpu_set_t set;
    to_cpu_set(&saved->cpus, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}
