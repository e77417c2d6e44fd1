/* The all-reduce of a decode round's partials between two ranks, two ways
 * (docs/history/, "A round's system calls"): is issue 23's one-hop
 * variant worth a protocol change?
 *
 *   two steps (agmm's fused gemm-ar): each rank puts the peer's half of
 *     its partial into the peer's window and raises a flag, sums its own
 *     half with the peer's (rank order), puts the sum into the peer's
 *     window, raises a second flag, copies the peer's sum into C;
 *   one hop: each rank writes its partial into its own window (where a
 *     GEMM would write it), raises a flag, and sums both windows into C
 *     (rank order).
 * Both wait for the peer's "done reading" of the round before (ack)
 * before they write where it reads. Two processes (fork) on a shared
 * mapping, pinned to the first two CPUs of the affinity if there are two.
 * Timed per exchange on each rank: the exchange alone, and with the
 * partial's write (into private memory for two steps, into the window for
 * one hop). Every C is checked against the sum (exit 1 if wrong).
 *
 * usage: agmm_ar_one_hop [ROWS [N [REPS]]]   (16, 4096, 200) */
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"

/* Each flag on its own line, as agmm's signal cells: one writer each. */
typedef struct {
    _Alignas(AGMM_CACHE_LINE) _Atomic uint64_t v;
} cell_t;

typedef struct {
    cell_t flag[2][2]; /* [rank][step] */
    cell_t ack[2];
} flags_t;

typedef struct {
    flags_t *f;
    float *win[2]; /* each rank's window: a partial (one hop) or halves */
    float *red[2]; /* each rank's reduced region (two steps) */
    size_t n;      /* elements of a partial (ROWS x N, even) */
} shared_t;

/* Wait for *a >= v; 1 (and a message naming it) if the peer has not
 * raised it within 10 s: a peer that failed and exited leaves the other
 * rank waiting, and the bench ends instead of hanging. */
static int wait_ge(_Atomic uint64_t *a, uint64_t v, int r, const char *what)
{
    double deadline = agmm_now() + 10.0;
    for (unsigned spins = 1; atomic_load_explicit(a, memory_order_acquire) < v;
         spins++) {
        agmm_cpu_relax();
        if ((spins & 1023) == 0 && agmm_now() > deadline) { /* clock rarely */
            fprintf(stderr,
                    "agmm_ar_one_hop: rank %d: no %s of epoch %llu from "
                    "rank %d within 10 s\n",
                    r, what, (unsigned long long)v, 1 - r);
            return 1;
        }
    }
    return 0;
}

/* Rank r's partial of epoch e: e's parity's values, precomputed (the
 * write is a store of 4 bytes an element, as a GEMM's output is). */
static float *g_src[2];

static void make_sources(size_t n, int r)
{
    for (int par = 0; par < 2; par++) {
        g_src[par] = aligned_alloc(64, n * 4);
        for (size_t i = 0; i < n; i++)
            g_src[par][i] =
                (float)((i + (size_t)par * 7 + (size_t)r * 3) & 1023);
    }
}

static void fill(float *p, size_t n, uint64_t e)
{
    memcpy(p, g_src[e & 1], n * 4);
}

/* out = a + b, element by element (a: rank 0's, b: rank 1's). */
static void sum(float *restrict out, const float *restrict a,
                const float *restrict b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
}

static int two_steps(const shared_t *s, int r, uint64_t e, float *part,
                     float *c, double *t_all, double *t_ex)
{
    size_t h = s->n / 2;
    int q = 1 - r;
    double t0 = agmm_now();
    fill(part, s->n, e);
    double t1 = agmm_now();
    if (wait_ge(&s->f->ack[q].v, e - 1, r, "ack")) return 1;
    memcpy(s->win[q] + (size_t)r * h, part + (size_t)q * h, h * 4);
    atomic_store_explicit(&s->f->flag[r][0].v, e, memory_order_release);
    if (wait_ge(&s->f->flag[q][0].v, e, r, "partial")) return 1;
    const float *mine = part + (size_t)r * h, *in = s->win[r] + (size_t)q * h;
    float *cr = c + (size_t)r * h;
    sum(cr, r == 0 ? mine : in, r == 0 ? in : mine, h); /* rank order */
    memcpy(s->red[q], cr, h * 4);
    atomic_store_explicit(&s->f->flag[r][1].v, e, memory_order_release);
    if (wait_ge(&s->f->flag[q][1].v, e, r, "sum")) return 1;
    memcpy(c + (size_t)q * h, s->red[r], h * 4);
    atomic_store_explicit(&s->f->ack[r].v, e, memory_order_release);
    double t2 = agmm_now();
    *t_all = t2 - t0;
    *t_ex = t2 - t1;
    return 0;
}

static int one_hop(const shared_t *s, int r, uint64_t e, float *c,
                   double *t_all, double *t_ex)
{
    int q = 1 - r;
    double t0 = agmm_now();
    if (wait_ge(&s->f->ack[q].v, e - 1, r, "ack")) return 1;
    fill(s->win[r], s->n, e);
    double t1 = agmm_now();
    atomic_store_explicit(&s->f->flag[r][0].v, e, memory_order_release);
    if (wait_ge(&s->f->flag[q][0].v, e, r, "partial")) return 1;
    sum(c, s->win[0], s->win[1], s->n); /* rank order */
    atomic_store_explicit(&s->f->ack[r].v, e, memory_order_release);
    double t2 = agmm_now();
    *t_all = t2 - t0;
    *t_ex = t2 - t1;
    return 0;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Rank r's side of one way (0: two steps, 1: one hop): reps exchanges
 * after 20 untimed, epochs base + 1, ... (the second way's continue the
 * first's, so its first ack wait is met); prints the medians of rank 0;
 * 1 if a C was wrong or the peer stopped answering. */
static int rank_main(shared_t *s, int r, int way, int reps, uint64_t base)
{
    float *part = aligned_alloc(64, s->n * 4), *c = aligned_alloc(64, s->n * 4);
    double *all = calloc((size_t)reps, sizeof *all);
    double *ex = calloc((size_t)reps, sizeof *ex);
    make_sources(s->n, r);
    if (!part || !c || !all || !ex || !g_src[0] || !g_src[1]) return 1;
    int bad = 0, i;
    for (i = -20; i < reps; i++) {
        uint64_t e = base + (uint64_t)(i + 20) + 1;
        double ta, te;
        int lost = way == 0 ? two_steps(s, r, e, part, c, &ta, &te)
                            : one_hop(s, r, e, c, &ta, &te);
        if (lost) break; /* said by wait_ge */
        for (size_t k = 0; k < s->n && !bad; k++) {
            size_t par = (size_t)(e & 1);
            float a = (float)((k + par * 7) & 1023);
            float b = (float)((k + par * 7 + 3) & 1023);
            bad = c[k] != a + b;
        }
        if (i >= 0) all[i] = ta, ex[i] = te;
    }
    int lost = i < reps;
    qsort(all, (size_t)reps, sizeof *all, cmp);
    qsort(ex, (size_t)reps, sizeof *ex, cmp);
    if (r == 0 && !lost)
        printf("%-9s  with the partial's write %7.1f us  exchange alone "
               "%7.1f us  (median of %d, rank 0)\n",
               way == 0 ? "two steps" : "one hop", all[reps / 2] * 1e6,
               ex[reps / 2] * 1e6, reps);
    if (bad) fprintf(stderr, "rank %d: C is not the sum\n", r);
    free(part), free(c), free(all), free(ex), free(g_src[0]), free(g_src[1]);
    return bad || lost;
}

int main(int argc, char **argv)
{
    long rows = argc > 1 ? atol(argv[1]) : 16,
         n = argc > 2 ? atol(argv[2]) : 4096;
    int reps = argc > 3 ? atoi(argv[3]) : 200;
    if (rows < 1 || n < 2 || (rows * n) % 2 || reps < 1 ||
        rows * n > (1L << 26)) {
        fprintf(stderr, "usage: agmm_ar_one_hop [ROWS [N [REPS]]]: ROWS >= 1, "
                        "N >= 2, ROWS x N even and <= 2^26, REPS >= 1\n");
        return 2;
    }
    shared_t s = {.n = (size_t)(rows * n)};
    size_t bytes = sizeof(flags_t) + 4 * s.n * 4 + 4096;
    char *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return 1;
    s.f = (flags_t *)(void *)m;
    float *fl =
        (float *)(void *)(m + ((sizeof(flags_t) + 4095) & ~(size_t)4095));
    s.win[0] = fl, s.win[1] = fl + s.n, s.red[0] = fl + 2 * s.n;
    s.red[1] = fl + 3 * s.n;
    cpu_set_t mine;
    int cpus[2] = {-1, -1}, k = 0;
    if (sched_getaffinity(0, sizeof mine, &mine) == 0)
        for (int c = 0; c < CPU_SETSIZE && k < 2; c++)
            if (CPU_ISSET(c, &mine)) cpus[k++] = c;
    printf("%ld x %ld fp32 partials, 2 processes, CPUs %d and %d\n", rows, n,
           cpus[0], k > 1 ? cpus[1] : cpus[0]);
    fflush(stdout);
    int fail = 0;
    for (int way = 0; way < 2 && !fail; way++) {
        pid_t pid[2];
        for (int r = 0; r < 2; r++) {
            pid[r] = fork();
            if (pid[r] == 0) {
                if (k == 2) {
                    cpu_set_t one;
                    CPU_ZERO(&one);
                    CPU_SET(cpus[r], &one);
                    sched_setaffinity(0, sizeof one, &one);
                }
                int bad = rank_main(&s, r, way, reps,
                                    (uint64_t)way * (uint64_t)(reps + 20));
                fflush(stdout);
                _exit(bad);
            }
        }
        for (int r = 0; r < 2; r++) {
            int st = 0;
            if (pid[r] < 0 || waitpid(pid[r], &st, 0) != pid[r] ||
                !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                fail = 1;
        }
    }
    munmap(m, bytes);
    return fail;
}
