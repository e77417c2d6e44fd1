/* The joined worlds' control segment: layout and garbage rules (join.h). */
#include "world/join.h"

#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "common/util.h"
#include "transport/shm/segment.h"
#include "transport/shm/shm.h"

size_t agmm_join_seg_bytes(int size, size_t *ctl_off)
{
    size_t hdr =
        sizeof(agmm_join_hdr_t) + (size_t)size * sizeof(agmm_join_slot_t);
    size_t off = (hdr + AGMM_CACHE_LINE - 1) & ~(size_t)(AGMM_CACHE_LINE - 1);
    if (ctl_off) *ctl_off = off;
    return off + agmm_shm_ctl_bytes(size);
}

int agmm_join_hdr_valid(const agmm_join_hdr_t *h, size_t mapped)
{
    if (mapped < sizeof *h) return 0;
    if (atomic_load_explicit(&h->magic, memory_order_acquire) !=
        AGMM_JOIN_MAGIC)
        return 0;
    if (h->version != AGMM_JOIN_VERSION || h->size < 1 ||
        h->size > AGMM_JOIN_MAX_RANKS)
        return 0;
    size_t off;
    size_t need = agmm_join_seg_bytes(h->size, &off);
    return h->bytes == need && h->ctl_off == off && mapped >= need;
}

int agmm_join_holder(agmm_join_hdr_t *h, int *rank, pid_t *pid)
{
    for (int r = 0; r < h->size; r++) {
        agmm_join_slot_t *s = &h->slots[r];
        if (atomic_load(&s->state) != AGMM_SLOT_JOINED) continue;
        pid_t p = atomic_load(&s->pid);
        if (agmm_seg_pid_alive(p)) {
            if (rank) *rank = r;
            if (pid) *pid = p;
            return 1;
        }
    }
    return 0;
}

/* No holder now: garbage. A header without magic: garbage once its
 * creator is gone, or when nobody published it within the grace. */
static int is_garbage(agmm_join_hdr_t *h, size_t mapped, double age_s)
{
    if (agmm_join_hdr_valid(h, mapped)) return !agmm_join_holder(h, NULL, NULL);
    pid_t creator = atomic_load(&h->creator_pid);
    if (creator > 0) return !agmm_seg_pid_alive(creator); /* at work, or dead */
    if (atomic_load(&h->magic) == AGMM_JOIN_MAGIC) return 0; /* malformed */
    /* Sized but not even the creator's pid: it died right after sizing. */
    return age_s > AGMM_JOIN_INIT_GRACE_S;
}

int agmm_join_reap(agmm_join_hdr_t *h, size_t mapped, const char *name,
                   double age_s)
{
    if (mapped < sizeof *h || !is_garbage(h, mapped, age_s)) return 0;
    int32_t zero = 0;
    if (!atomic_compare_exchange_strong(&h->reaped, &zero, 1)) return 0;
    /* A joiner may have taken a slot since: it stores its slot, then reads
     * `reaped`; we stored `reaped`, now read the slots. */
    if (agmm_join_hdr_valid(h, mapped) && agmm_join_holder(h, NULL, NULL)) {
        atomic_store(&h->reaped, 0);
        return 0;
    }
    return agmm_seg_unlink(name) == 0;
}

double agmm_join_seg_age(const char *name)
{
    char path[AGMM_SEG_NAME_MAX + 16];
    snprintf(path, sizeof path, "%s%s", AGMM_SEG_DIR, name);
    struct stat sb;
    if (stat(path, &sb) != 0) return -1;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    double changed =
        (double)sb.st_ctim.tv_sec + 1e-9 * (double)sb.st_ctim.tv_nsec;
    double m = (double)sb.st_mtim.tv_sec + 1e-9 * (double)sb.st_mtim.tv_nsec;
    if (m > changed) changed = m;
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec - changed;
}
