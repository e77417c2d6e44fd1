/* One rank of a world of processes started by anyone (README "From your
 * own processes"): start it N times, each with AGMM_RANK, AGMM_WORLD_SIZE
 * and AGMM_JOB set (or RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT as
 * torchrun sets them): `agmm launch -n N -- PROGRAM` does. The ranks join by
 * job name (agmm_world_from_env), then run all-gather + GEMM in fp16, bf16 and
 * fp32 with uneven shards (rank r holds 3 + 2r rows), several rounds each with
 * new data, fused and baseline schedules, and compare every element of C with
 * agmm_reference (agmm_ext.h). The inputs are small integers, so every product
 * and sum is exact in fp32: the check is equality.
 *
 * Exit status: 0 when every round on this rank matched, 1 otherwise (the
 * reason on stderr). Options for the failure tests (tests/e2e/joined.sh):
 *   --die-at-round R   SIGKILL itself just before round R (a crashed rank)
 *   --exit-at-round R  exit(5) just before round R, with its plan alive
 *   --no-destroy       end without agmm_world_destroy (after its plans)
 *   --hold FILE        after joining, write FILE.<rank>.joined and wait
 *                      (in a barrier-free loop) until FILE exists
 *   --timeout S        the world's timeout in seconds (default: 60, or
 *                      AGMM_TIMEOUT_S)
 *   --fp32-only        only fp32 (3 rounds; e.g. under valgrind, whose
 *                      CPU has no AVX-512 for oneDNN's bf16 kernels) */
#include <agmm_ext.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { K = 40, N = 24, ROUNDS = 3, MAXP = 64 };

/* Small integers: exact in fp16, bf16 and fp32, and so are the sums. */
static float value(unsigned seed, int64_t i, int64_t j)
{
    return (float)((int)((seed * 7 + (unsigned)i * 13 + (unsigned)j * 5) % 7) -
                   3);
}

static void fill(agmm_dtype_t dt, unsigned seed, int64_t rows, int64_t cols,
                 float *tmp, void *out)
{
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            tmp[i * cols + j] = value(seed, i, j);
    agmm_convert_from_fp32(dt, tmp, out, (size_t)(rows * cols));
}

static int fail(int rank, const char *what)
{
    fprintf(stderr, "rank %d: %s: %s\n", rank, what, agmm_last_error());
    return 1;
}

/* One dtype: a plan, ROUNDS rounds, each checked on every element. */
static int run_dtype(agmm_world_t *world, agmm_dtype_t dt, int die_at,
                     int exit_at, int *round_no)
{
    int P = agmm_world_size(world), me = agmm_world_rank(world);
    int64_t m_local[MAXP], M = 0;
    for (int r = 0; r < P; r++)
        M += m_local[r] = 3 + 2 * r;
    size_t es = agmm_dtype_size(dt);
    float *tmp = malloc((size_t)(M * K + K * N) * sizeof(float));
    unsigned char *shards = malloc((size_t)(M * K) * es);
    unsigned char *w = malloc((size_t)(K * N) * es);
    float *c = malloc((size_t)(M * N) * sizeof(float));
    float *want = malloc((size_t)(M * N) * sizeof(float));
    agmm_plan_t *plan = NULL;
    int bad = 1;
    if (!tmp || !shards || !w || !c || !want) goto out;

    agmm_plan_desc_t d;
    agmm_plan_desc_init(&d);
    d.nranks = P;
    d.m_local = m_local;
    d.k = K;
    d.n = N;
    d.tile_m = 2; /* several tiles per shard */
    d.tile_n = 8;
    d.dtype = dt;
    agmm_status_t st = agmm_plan_create(world, &d, &plan);
    if (st != AGMM_OK) {
        fail(me, "plan_create");
        goto out;
    }
    fill(dt, 1000 + (unsigned)dt, K, N, tmp, w);
    if (agmm_plan_set_weight(plan, w) != AGMM_OK) {
        fail(me, "set_weight");
        goto out;
    }
    for (int round = 0; round < ROUNDS; round++) {
        ++*round_no;
        if (die_at == *round_no) raise(SIGKILL);
        if (exit_at == *round_no) exit(5);
        /* Every rank makes every shard, to compute the reference. */
        const void *ptr[MAXP];
        int64_t off = 0;
        for (int r = 0; r < P; r++) {
            unsigned seed = (unsigned)(round * 131 + r * 17 + (int)dt);
            fill(dt, seed, m_local[r], K, tmp, shards + (size_t)(off * K) * es);
            ptr[r] = shards + (size_t)(off * K) * es;
            off += m_local[r];
        }
        agmm_schedule_t sch =
            round % 2 ? AGMM_SCHEDULE_BASELINE : AGMM_SCHEDULE_FUSED;
        if (agmm_plan_run(plan, sch, ptr[me], c) != AGMM_OK) {
            fail(me, "plan_run");
            goto out;
        }
        if (agmm_reference(P, ptr, m_local, K, N, dt, w, want) != AGMM_OK) {
            fail(me, "reference");
            goto out;
        }
        int64_t wrong = 0;
        for (int64_t i = 0; i < M * N; i++)
            wrong += c[i] != want[i];
        if (wrong) {
            fprintf(stderr,
                    "rank %d: %s round %d: %lld of %lld elements differ from "
                    "the reference\n",
                    me, agmm_dtype_name(dt), round, (long long)wrong,
                    (long long)(M * N));
            goto out;
        }
    }
    bad = 0;
out:
    if (plan && agmm_plan_destroy(plan) != AGMM_OK && !bad)
        bad = fail(me, "plan_destroy");
    free(tmp);
    free(shards);
    free(w);
    free(c);
    free(want);
    return bad;
}

int main(int argc, char **argv)
{
    int die_at = 0, exit_at = 0, destroy = 1;
    double timeout_s = 0;
    const char *hold = NULL;
    int first_dtype = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--die-at-round") && i + 1 < argc)
            die_at = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--exit-at-round") && i + 1 < argc)
            exit_at = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-destroy"))
            destroy = 0;
        else if (!strcmp(argv[i], "--hold") && i + 1 < argc)
            hold = argv[++i];
        else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
            timeout_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "--fp32-only"))
            first_dtype = 2;
        else {
            fprintf(stderr,
                    "usage: %s [--die-at-round R] [--exit-at-round R] "
                    "[--no-destroy] [--hold FILE] [--timeout S] "
                    "[--fp32-only]\n",
                    argv[0]);
            return 2;
        }
    }
    agmm_world_t *world;
    if (agmm_world_from_env(timeout_s, &world) != AGMM_OK) {
        fprintf(stderr, "join: %s\n", agmm_last_error());
        return 1;
    }
    int me = agmm_world_rank(world), P = agmm_world_size(world);
    int bad = P > MAXP;
    if (bad) fprintf(stderr, "rank %d: at most %d ranks\n", me, MAXP);
    if (!bad && hold) {
        char mark[4096];
        snprintf(mark, sizeof mark, "%s.%d.joined", hold, me);
        FILE *f = fopen(mark, "w");
        if (f) fclose(f);
        while (access(hold, F_OK) != 0)
            usleep(10000);
    }
    int round_no = 0;
    agmm_dtype_t dts[] = {AGMM_DTYPE_FP16, AGMM_DTYPE_BF16, AGMM_DTYPE_FP32};
    for (int i = first_dtype; !bad && i < 3; i++)
        bad = run_dtype(world, dts[i], die_at, exit_at, &round_no);
    if (!bad)
        printf("rank %d of %d: %d rounds (%s) match the reference\n", me, P,
               round_no, first_dtype ? "fp32" : "fp16, bf16, fp32");
    if (destroy) agmm_world_destroy(world);
    return bad;
}
