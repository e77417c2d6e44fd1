/* The smallest complete program on the public API (include/agmm.h): two
 * ranks forked on this host, one plan, a weight, three fused rounds, every
 * rank checking its C. README.md's "Using the library" is copied from the
 * region between the markers (ctest example_readme_snippet_matches_file
 * compares them byte for byte); ctest example_readme_snippet_runs runs it.
 * Kept compact for the README: clang-format leaves it as written. */
/* clang-format off */
/* readme-snippet: begin */
#include <agmm.h>
#include <stdio.h>

enum { P = 2, ROWS = 64, K = 32, N = 16 }; /* C is [P * ROWS, N] */

/* Small integers: every sum is exact in fp32, in any order. */
static float a_at(int row, int col) { return (float)((row + 2 * col) % 7 - 3); }
static float w_at(int row, int col) { return (float)((3 * row + col) % 5 - 2); }

static float a[ROWS * K], w[K * N], c[P * ROWS * N];

/* Runs in every rank. The ranks are separate processes (forked): use or
 * write the result here; nothing comes back to the caller of agmm_launch
 * but the exit code. */
static int rank_main(agmm_world_t *world, void *arg)
{
    (void)arg;
    int me = agmm_world_rank(world);
    for (int i = 0; i < ROWS; i++)           /* this rank's shard A_me */
        for (int j = 0; j < K; j++) a[i * K + j] = a_at(me * ROWS + i, j);
    for (int i = 0; i < K; i++)
        for (int j = 0; j < N; j++) w[i * N + j] = w_at(i, j);

    int64_t rows[P] = {ROWS, ROWS};
    agmm_plan_desc_t d;
    agmm_plan_desc_init(&d);
    d.nranks = P; d.m_local = rows; d.k = K; d.n = N;
    d.dtype = AGMM_DTYPE_FP32;
    agmm_plan_t *plan;
    agmm_status_t st = agmm_plan_create(world, &d, &plan);
    if (st != AGMM_OK) goto fail;
    st = agmm_plan_set_weight(plan, w);
    for (int round = 0; st == AGMM_OK && round < 3; round++)
        st = agmm_plan_run(plan, AGMM_SCHEDULE_FUSED, a, c);
    agmm_plan_destroy(plan);
    if (st != AGMM_OK) goto fail;

    int wrong = 0;                           /* C = gather(A_0, A_1) @ W */
    for (int i = 0; i < P * ROWS; i++)
        for (int j = 0; j < N; j++) {
            float want = 0;
            for (int l = 0; l < K; l++) want += a_at(i, l) * w_at(l, j);
            wrong += c[i * N + j] != want;
        }
    printf("rank %d: C is %d x %d, %d elements wrong\n", me, P * ROWS, N, wrong);
    return wrong ? 1 : 0;
fail:
    fprintf(stderr, "rank %d: %s\n", me, agmm_last_error());
    return 1;
}

int main(void)
{
    agmm_launch_opts_t opts = {.nranks = P};
    int exit_code = 1;
    if (agmm_launch(&opts, rank_main, NULL, &exit_code) != AGMM_OK) {
        fprintf(stderr, "agmm_launch: %s\n", agmm_last_error());
        return 1;
    }
    return exit_code; /* 0 when every rank returned 0 */
}
/* readme-snippet: end */
/* clang-format on */
