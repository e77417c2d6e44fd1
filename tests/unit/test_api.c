/* Bad input through the public API: every call with a null pointer, an
 * invalid value or enum, a plan used after destroy, a plan whose world size
 * or description does not match, returns its status code (never crashes,
 * never hangs), and the world stays usable for a correct plan afterwards.
 * Ranks come from agmm_launch(); each rank counts its own checks and
 * returns the number of failures, which the launcher hands back. */
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "api_desc.h"
#include "check.h"
#include "common/log.h"

/* ------------------------------------------------------ no world needed */

static void test_status_strings(void)
{
    for (int s = 0; s < AGMM_STATUS_COUNT; s++) {
        const char *name = agmm_status_str((agmm_status_t)s);
        const char *text = agmm_status_describe((agmm_status_t)s);
        CHECK(name && strncmp(name, "AGMM_", 5) == 0, "status %d name", s);
        CHECK(text && *text, "status %d description", s);
        for (int t = 0; t < s; t++)
            CHECK(strcmp(name, agmm_status_str((agmm_status_t)t)) != 0,
                  "statuses %d and %d share the name %s", s, t, name);
    }
    CHECK(!strcmp(agmm_status_str((agmm_status_t)-1), "AGMM_ERR_UNKNOWN"),
          "negative status");
    CHECK(!strcmp(agmm_status_str(AGMM_STATUS_COUNT), "AGMM_ERR_UNKNOWN"),
          "status past the end");
    CHECK(agmm_status_describe((agmm_status_t)999) != NULL, "describe 999");
    CHECK(agmm_dtype_size((agmm_dtype_t)4) == 0, "dtype 4 has no size");
    CHECK(agmm_dtype_size((agmm_dtype_t)-1) == 0, "dtype -1 has no size");
    CHECK(!strcmp(agmm_dtype_name((agmm_dtype_t)42), "invalid"), "dtype 42");
}

/* The engine kinds' names (agmm_gemm_engine_name) and back
 * (agmm_gemm_engine_from_name): the CLI's and Python's engine words. */
static void test_engine_names(void)
{
    static const char *const want[] = {"auto", "onednn", "openblas", "wq"};
    int k = 0;
    for (; strcmp(agmm_gemm_engine_name((agmm_gemm_engine_kind_t)k),
                  "invalid") != 0;
         k++) {
        const char *name = agmm_gemm_engine_name((agmm_gemm_engine_kind_t)k);
        CHECK(k < 4 && !strcmp(name, want[k]), "engine kind %d is named %s", k,
              name);
        CHECK(agmm_gemm_engine_from_name(name) == k, "%s parses as %d, not %d",
              name, agmm_gemm_engine_from_name(name), k);
    }
    CHECK(k == 4, "%d engine kinds named, agmm.h lists 4", k);
    CHECK(
        !strcmp(agmm_gemm_engine_name((agmm_gemm_engine_kind_t)-1), "invalid"),
        "engine kind -1");
    CHECK(agmm_gemm_engine_from_name("auto") == AGMM_GEMM_ENGINE_AUTO &&
              agmm_gemm_engine_from_name("onednn") == AGMM_GEMM_ENGINE_ONEDNN &&
              agmm_gemm_engine_from_name("openblas") ==
                  AGMM_GEMM_ENGINE_OPENBLAS &&
              agmm_gemm_engine_from_name("wq") == AGMM_GEMM_ENGINE_WQ,
          "a name parses as another kind than agmm.h's");
    static const char *const bad[] = {"invalid", "",     "ONEDNN",
                                      "onednn ", "open", "mkl"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(agmm_gemm_engine_from_name(bad[i]) == -1, "'%s' parses as %d",
              bad[i], agmm_gemm_engine_from_name(bad[i]));
    CHECK(agmm_gemm_engine_from_name(NULL) == -1, "NULL parses");
}

/* One field of a good description made bad, and the status it must get. */
typedef struct bad_desc {
    const char *what;
    void (*spoil)(agmm_plan_desc_t *d);
    agmm_status_t want;
} bad_desc_t;

static int64_t neg_m[NR] = {5, -1}, zero_m[NR] = {0, 0};
static int64_t huge_m[NR] = {INT64_MAX, 1}, big_m[NR] = {1 << 30, 1 << 30};
static int64_t int_m[NR] = {INT32_MAX / 2, INT32_MAX / 2};

/* One-line setters, one per bad field (clang-format would put each on four
 * lines). */
/* clang-format off */
static void s_nranks0(agmm_plan_desc_t *d) { d->nranks = 0; }
static void s_nranks_neg(agmm_plan_desc_t *d) { d->nranks = -5; }
static void s_m_null(agmm_plan_desc_t *d) { d->m_local = NULL; }
static void s_m_neg(agmm_plan_desc_t *d) { d->m_local = neg_m; }
static void s_m_zero(agmm_plan_desc_t *d) { d->m_local = zero_m; }
static void s_m_overflow(agmm_plan_desc_t *d) { d->m_local = huge_m; }
static void s_k0(agmm_plan_desc_t *d) { d->k = 0; }
static void s_n_neg(agmm_plan_desc_t *d) { d->n = -3; }
static void s_k_int(agmm_plan_desc_t *d) { d->k = (int64_t)INT32_MAX + 1; }
static void s_m_int(agmm_plan_desc_t *d) { d->m_local = big_m; }
static void s_tile_m0(agmm_plan_desc_t *d) { d->tile_m = 0; }
static void s_tile_n_neg(agmm_plan_desc_t *d) { d->tile_n = INT64_MIN; }
static void s_dtype_big(agmm_plan_desc_t *d) { d->dtype = (agmm_dtype_t)4; }
static void s_dtype_neg(agmm_plan_desc_t *d) { d->dtype = (agmm_dtype_t)-1; }
static void s_weights(agmm_plan_desc_t *d) { d->weights = (agmm_weights_t)2; }
static void s_comm_neg(agmm_plan_desc_t *d) { d->comm_workers = -1; }
static void s_comm_big(agmm_plan_desc_t *d) { d->comm_workers = 1 << 20; }
static void s_gemm0(agmm_plan_desc_t *d) { d->gemm_workers = 0; }
static void s_timeout_nan(agmm_plan_desc_t *d) { d->timeout_s = NAN; }
static void s_timeout_inf(agmm_plan_desc_t *d) { d->timeout_s = INFINITY; }
static void s_a_scale(agmm_plan_desc_t *d) { d->dtype = AGMM_DTYPE_INT8; d->a_scale = (agmm_scale_t)2; }
static void s_w_scale(agmm_plan_desc_t *d) { d->dtype = AGMM_DTYPE_INT8; d->w_scale = (agmm_scale_t)-1; }
static void s_int8_blas(agmm_plan_desc_t *d) { d->dtype = AGMM_DTYPE_INT8; d->gemm_engine = AGMM_GEMM_ENGINE_OPENBLAS; }
static void s_int8_f32(agmm_plan_desc_t *d) { d->dtype = AGMM_DTYPE_INT8; d->gemm_path = AGMM_GEMM_PATH_F32; }
/* clang-format on */
static void s_bytes(agmm_plan_desc_t *d)
{
    d->k = d->n = INT32_MAX;
    d->m_local = int_m; /* M = 2^31 - 2 fits an int; M * k * 2 does not */
}

static const bad_desc_t bad_descs[] = {
    {"nranks 0", s_nranks0, AGMM_ERR_INVALID_ARG},
    {"nranks -5", s_nranks_neg, AGMM_ERR_INVALID_ARG},
    {"m_local NULL", s_m_null, AGMM_ERR_INVALID_ARG},
    {"m_local -1", s_m_neg, AGMM_ERR_INVALID_ARG},
    {"every shard empty", s_m_zero, AGMM_ERR_INVALID_ARG},
    {"sum of m_local overflows", s_m_overflow, AGMM_ERR_TOO_LARGE},
    {"k 0", s_k0, AGMM_ERR_INVALID_ARG},
    {"n -3", s_n_neg, AGMM_ERR_INVALID_ARG},
    {"k past int", s_k_int, AGMM_ERR_TOO_LARGE},
    {"M past int", s_m_int, AGMM_ERR_TOO_LARGE},
    {"tile_m 0", s_tile_m0, AGMM_ERR_INVALID_ARG},
    {"tile_n INT64_MIN", s_tile_n_neg, AGMM_ERR_INVALID_ARG},
    {"dtype 4", s_dtype_big, AGMM_ERR_INVALID_ARG},
    {"dtype -1", s_dtype_neg, AGMM_ERR_INVALID_ARG},
    {"weights 2", s_weights, AGMM_ERR_INVALID_ARG},
    {"comm_workers -1", s_comm_neg, AGMM_ERR_INVALID_ARG},
    {"comm_workers 2^20", s_comm_big, AGMM_ERR_INVALID_ARG},
    {"gemm_workers 0", s_gemm0, AGMM_ERR_INVALID_ARG},
    {"timeout NaN", s_timeout_nan, AGMM_ERR_INVALID_ARG},
    {"timeout inf", s_timeout_inf, AGMM_ERR_INVALID_ARG},
    {"byte counts overflow", s_bytes, AGMM_ERR_TOO_LARGE},
    {"int8 a_scale 2", s_a_scale, AGMM_ERR_INVALID_ARG},
    {"int8 w_scale -1", s_w_scale, AGMM_ERR_INVALID_ARG},
    {"int8 on openblas", s_int8_blas, AGMM_ERR_UNSUPPORTED},
    {"int8 on the f32 path", s_int8_f32, AGMM_ERR_UNSUPPORTED},
};
#define NBAD (sizeof bad_descs / sizeof bad_descs[0])

static void test_desc_check(void)
{
    agmm_plan_desc_t d;
    good_desc(&d);
    CHECK(agmm_plan_desc_check(&d) == AGMM_OK, "good desc: %s",
          agmm_last_error());
    CHECK(agmm_plan_bytes_per_rank(&d) > 0, "good desc has a size");
    CHECK(agmm_plan_desc_check(NULL) == AGMM_ERR_INVALID_ARG, "NULL desc");
    CHECK(agmm_plan_bytes_per_rank(NULL) == 0, "NULL desc size");
    agmm_plan_desc_init(NULL); /* ignored */
    for (size_t i = 0; i < NBAD; i++) {
        good_desc(&d);
        bad_descs[i].spoil(&d);
        agmm_status_t st = agmm_plan_desc_check(&d);
        CHECK(st == bad_descs[i].want, "%s: got %s, want %s", bad_descs[i].what,
              agmm_status_str(st), agmm_status_str(bad_descs[i].want));
        CHECK(*agmm_last_error(), "%s: no error message", bad_descs[i].what);
        (void)agmm_plan_bytes_per_rank(&d); /* must not crash either */
    }
    /* Huge tiles are valid (one tile per shard) and must not overflow. */
    good_desc(&d);
    d.tile_m = d.tile_n = INT64_MAX;
    CHECK(agmm_plan_desc_check(&d) == AGMM_OK, "tiles INT64_MAX: %s",
          agmm_last_error());
}

static int noop_rank(agmm_world_t *w, void *arg)
{
    (void)w;
    (void)arg;
    return 0;
}

/* 0 when this process may run on CPU 0 alone, else 3. */
static int on_cpu0_rank(agmm_world_t *w, void *arg)
{
    (void)w;
    (void)arg;
    cpu_set_t s;
    if (sched_getaffinity(0, sizeof s, &s) != 0) return 3;
    return CPU_COUNT(&s) == 1 && CPU_ISSET(0, &s) ? 0 : 3;
}

/* 0 when this process's affinity is *arg (a cpu_set_t), else 3. */
static int same_affinity_rank(agmm_world_t *w, void *arg)
{
    (void)w;
    cpu_set_t s;
    if (sched_getaffinity(0, sizeof s, &s) != 0) return 3;
    return CPU_EQUAL(&s, (cpu_set_t *)arg) ? 0 : 3;
}

static void test_no_world(void)
{
    agmm_plan_desc_t d;
    good_desc(&d);
    agmm_plan_t *p = (agmm_plan_t *)&d; /* not a plan */
    CHECK(agmm_plan_create(NULL, &d, &p) == AGMM_ERR_INVALID_ARG,
          "create without a world");
    CHECK(p == (agmm_plan_t *)&d || p == NULL, "create: *out");
    CHECK(agmm_plan_set_weight(NULL, good_m) == AGMM_ERR_INVALID_ARG,
          "set_weight(NULL plan)");
    CHECK(agmm_plan_set_weight((agmm_plan_t *)&d, good_m) == AGMM_ERR_BAD_STATE,
          "set_weight on something that is not a plan");
    float c[4];
    CHECK(agmm_plan_run(NULL, AGMM_SCHEDULE_FUSED, c, c) ==
              AGMM_ERR_INVALID_ARG,
          "run(NULL plan)");
    CHECK(agmm_plan_run((agmm_plan_t *)&d, AGMM_SCHEDULE_FUSED, c, c) ==
              AGMM_ERR_BAD_STATE,
          "run on something that is not a plan");
    CHECK(agmm_plan_destroy(NULL) == AGMM_OK, "destroy(NULL) is a no-op");
    CHECK(agmm_plan_destroy((agmm_plan_t *)&d) == AGMM_ERR_BAD_STATE,
          "destroy something that is not a plan");
    CHECK(agmm_plan_rows(NULL) == -1, "rows(NULL)");
    CHECK(agmm_plan_row_offset(NULL, 0) == -1, "row_offset(NULL)");

    CHECK(agmm_world_rank(NULL) == -1 && agmm_world_size(NULL) == -1,
          "rank/size of NULL");
    CHECK(!strcmp(agmm_world_transport_name(NULL), "none"), "name of NULL");
    CHECK(agmm_world_barrier(NULL, 1) == AGMM_ERR_INVALID_ARG, "barrier");
    CHECK(agmm_world_allgather(NULL, c, c, 4) == AGMM_ERR_INVALID_ARG,
          "allgather");
    agmm_world_abort(NULL, "ignored");

    agmm_launch_opts_t o = {0};
    int code = -7;
    CHECK(agmm_launch(NULL, noop_rank, NULL, &code) == AGMM_ERR_INVALID_ARG,
          "launch(NULL opts)");
    o.nranks = 1;
    CHECK(agmm_launch(&o, NULL, NULL, &code) == AGMM_ERR_INVALID_ARG,
          "launch(NULL fn)");
    o.nranks = 0;
    CHECK(agmm_launch(&o, noop_rank, NULL, &code) == AGMM_ERR_INVALID_ARG,
          "launch 0 ranks");
    o.nranks = -1;
    CHECK(agmm_launch(&o, noop_rank, NULL, &code) == AGMM_ERR_INVALID_ARG,
          "launch -1 ranks");
    o.nranks = 1 << 30;
    CHECK(agmm_launch(&o, noop_rank, NULL, &code) == AGMM_ERR_INVALID_ARG,
          "launch 2^30 ranks");
    /* Placement (agmm_launch_opts_t.bind): a bad list is refused before
     * any rank starts, naming why; a good one binds the rank. */
    o.nranks = 2;
    o.bind = "0|0";
    CHECK(agmm_launch(&o, noop_rank, NULL, &code) == AGMM_ERR_INVALID_ARG &&
              strstr(agmm_last_error(), "ranks 0 and 1 both list CPU 0"),
          "launch bind 0|0: %s", agmm_last_error());
    o.bind = "numa";
    CHECK(agmm_launch(&o, noop_rank, NULL, &code) == AGMM_ERR_INVALID_ARG,
          "launch bind 'numa'");
    o.bind = "0";
    CHECK(agmm_launch(&o, noop_rank, NULL, &code) == AGMM_ERR_INVALID_ARG &&
              strstr(agmm_last_error(), "1 CPU list for 2 ranks"),
          "launch bind count: %s", agmm_last_error());
    cpu_set_t mine;
    if (sched_getaffinity(0, sizeof mine, &mine) == 0 && CPU_ISSET(0, &mine)) {
        o.nranks = 1;
        o.bind = "0";
        code = -7;
        CHECK(agmm_launch(&o, on_cpu0_rank, NULL, &code) == AGMM_OK &&
                  code == 0,
              "launch bind 0: the rank's affinity is CPU 0 alone (code %d)",
              code);
        o.bind = NULL; /* NULL is none: the caller's affinity */
        CHECK(agmm_launch(&o, same_affinity_rank, &mine, &code) == AGMM_OK &&
                  code == 0,
              "launch bind NULL: the caller's affinity (code %d)", code);
    }
    o.bind = NULL;

    float f[2] = {1, 2};
    CHECK(agmm_convert_from_fp32((agmm_dtype_t)9, f, c, 2) ==
              AGMM_ERR_INVALID_ARG,
          "convert to dtype 9");
    CHECK(agmm_convert_from_fp32(AGMM_DTYPE_FP16, NULL, c, 2) ==
              AGMM_ERR_INVALID_ARG,
          "convert from NULL");
    const void *shards[2] = {f, NULL};
    int64_t m[2] = {1, 1};
    CHECK(agmm_reference(2, shards, m, 2, 1, AGMM_DTYPE_FP32, f, c) ==
              AGMM_ERR_INVALID_ARG,
          "reference with a NULL shard");
    CHECK(agmm_reference(0, shards, m, 2, 1, AGMM_DTYPE_FP32, f, c) ==
              AGMM_ERR_INVALID_ARG,
          "reference with 0 ranks");
    CHECK(agmm_reference(1, shards, m, 2, 1, (agmm_dtype_t)5, f, c) ==
              AGMM_ERR_INVALID_ARG,
          "reference with dtype 5");
}

/* ------------------------------------------------------ inside a world */

/* A correct plan on this world: run one round and compare with the
 * reference. Returns 0 when it matches. */
static int good_round(agmm_world_t *w, agmm_schedule_t schedule)
{
    int r = agmm_world_rank(w);
    agmm_plan_desc_t d;
    good_desc(&d);
    agmm_plan_t *p = NULL;
    if (agmm_plan_create(w, &d, &p) != AGMM_OK) return 1;
    float a[2][5 * 7], wt[7 * 6], c[8 * 6], ref[8 * 6];
    for (int s = 0; s < NR; s++)
        for (int i = 0; i < 5 * 7; i++)
            a[s][i] = (float)((i * 3 + s) % 5);
    for (int i = 0; i < 7 * 6; i++)
        wt[i] = (float)(i % 4) - 1.5f;
    uint16_t a16[5 * 7], w16[7 * 6];
    agmm_convert_from_fp32(AGMM_DTYPE_FP16, a[r], a16, 5 * 7);
    agmm_convert_from_fp32(AGMM_DTYPE_FP16, wt, w16, 7 * 6);
    int bad = agmm_plan_set_weight(p, w16) != AGMM_OK ||
              agmm_plan_run(p, schedule, a16, c) != AGMM_OK;
    uint16_t s0[5 * 7], s1[5 * 7];
    agmm_convert_from_fp32(AGMM_DTYPE_FP16, a[0], s0, 5 * 7);
    agmm_convert_from_fp32(AGMM_DTYPE_FP16, a[1], s1, 5 * 7);
    const void *shards[NR] = {s0, s1};
    bad |= agmm_reference(NR, shards, good_m, 7, 6, AGMM_DTYPE_FP16, w16,
                          ref) != AGMM_OK;
    for (int i = 0; !bad && i < 8 * 6; i++)
        bad = fabsf(c[i] - ref[i]) > 1e-3f;
    bad |= agmm_plan_destroy(p) != AGMM_OK;
    return bad;
}

static int world_rank_main(agmm_world_t *w, void *arg)
{
    (void)arg;
    agmm_log_set_quiet(1); /* the refusals below are expected */
    int r = agmm_world_rank(w);
    agmm_plan_desc_t d;
    agmm_plan_t *p = NULL;
    float c[8 * 6];
    uint16_t a16[5 * 7] = {0}, w16[7 * 6] = {0};

    CHECK(agmm_world_size(w) == NR && r >= 0 && r < NR, "world %d of %d", r,
          agmm_world_size(w));
    CHECK(agmm_world_allgather(w, c, c, 0) == AGMM_ERR_INVALID_ARG,
          "allgather of 0 bytes");
    CHECK(agmm_world_allgather(w, c, c, 1 << 20) == AGMM_ERR_INVALID_ARG,
          "allgather of 1 MiB");

    /* NULL arguments to create, on every rank alike. */
    good_desc(&d);
    CHECK(agmm_plan_create(w, NULL, &p) == AGMM_ERR_INVALID_ARG,
          "create(NULL desc)");
    CHECK(agmm_plan_create(w, &d, NULL) == AGMM_ERR_INVALID_ARG,
          "create(NULL out)");
    /* Every bad description, through create. */
    for (size_t i = 0; i < NBAD; i++) {
        good_desc(&d);
        bad_descs[i].spoil(&d);
        p = (agmm_plan_t *)&d;
        agmm_status_t st = agmm_plan_create(w, &d, &p);
        CHECK(st == bad_descs[i].want && p == NULL,
              "create with %s: got %s, want %s", bad_descs[i].what,
              agmm_status_str(st), agmm_status_str(bad_descs[i].want));
    }
    /* A plan for 3 ranks on a world of 2 (every rank agrees on it). */
    int64_t m3[3] = {1, 2, 3};
    good_desc(&d);
    d.nranks = 3;
    d.m_local = m3;
    CHECK(agmm_plan_create(w, &d, &p) == AGMM_ERR_MISMATCH,
          "3-rank plan on a 2-rank world");
    d.nranks = 1;
    CHECK(agmm_plan_create(w, &d, &p) == AGMM_ERR_MISMATCH,
          "1-rank plan on a 2-rank world");
    /* The ranks pass different descriptions. */
    good_desc(&d);
    d.k = r == 0 ? 7 : 8;
    CHECK(agmm_plan_create(w, &d, &p) == AGMM_ERR_MISMATCH,
          "k differs between ranks: %s", agmm_last_error());
    good_desc(&d);
    d.dtype = r == 0 ? AGMM_DTYPE_FP16 : AGMM_DTYPE_BF16;
    CHECK(agmm_plan_create(w, &d, &p) == AGMM_ERR_MISMATCH,
          "dtype differs between ranks");
    int64_t swapped[NR] = {3, 5};
    good_desc(&d);
    if (r == 1) d.m_local = swapped;
    CHECK(agmm_plan_create(w, &d, &p) == AGMM_ERR_MISMATCH,
          "m_local differs between ranks");

    /* A real plan, misused. */
    good_desc(&d);
    CHECK(agmm_plan_create(w, &d, &p) == AGMM_OK && p, "create: %s",
          agmm_last_error());
    CHECK(agmm_plan_rows(p) == 8, "rows %lld", (long long)agmm_plan_rows(p));
    CHECK(agmm_plan_row_offset(p, 1) == 5, "row offset of rank 1");
    CHECK(agmm_plan_row_offset(p, -1) == -1 && agmm_plan_row_offset(p, 3) == -1,
          "row offset of a rank out of range");
    /* A bad argument to run on a live plan aborts the world (peers would
     * wait for this rank): see test_api_misuse.c. */
    CHECK(agmm_plan_set_weight(p, NULL) == AGMM_ERR_INVALID_ARG,
          "set_weight(NULL)");
    CHECK(agmm_plan_set_weight(p, w16) == AGMM_OK, "set_weight");
    CHECK(agmm_plan_run(p, AGMM_SCHEDULE_FUSED, a16, c) == AGMM_OK, "run: %s",
          agmm_last_error());
    CHECK(agmm_plan_destroy(p) == AGMM_OK, "destroy");
    /* Used after destroy. */
    CHECK(agmm_plan_set_weight(p, w16) == AGMM_ERR_BAD_STATE,
          "set_weight after destroy");
    CHECK(agmm_plan_run(p, AGMM_SCHEDULE_FUSED, a16, c) == AGMM_ERR_BAD_STATE,
          "run after destroy");
    CHECK(agmm_plan_run(p, AGMM_SCHEDULE_BASELINE, a16, c) ==
              AGMM_ERR_BAD_STATE,
          "baseline run after destroy");
    CHECK(agmm_plan_rows(p) == -1, "rows after destroy");
    CHECK(agmm_plan_destroy(p) == AGMM_ERR_BAD_STATE, "destroy twice");

    /* After all of that the world still computes correctly. */
    CHECK(good_round(w, AGMM_SCHEDULE_FUSED) == 0, "fused round after misuse");
    CHECK(good_round(w, AGMM_SCHEDULE_BASELINE) == 0,
          "baseline round after misuse");
    CHECK(agmm_world_barrier(w, 0) == AGMM_OK, "barrier at the end");
    return check_failed_ > 125 ? 125 : (int)check_failed_;
}

/* Only rank 1 passes a bad description: it gets INVALID_ARG at once; rank 0
 * waits in the collective create for a rank that never comes, and must get
 * a status (TIMEOUT, or ABORTED) within the world's timeout, not hang. */
static int lone_bad_rank_main(agmm_world_t *w, void *arg)
{
    (void)arg;
    agmm_log_set_quiet(1);
    agmm_plan_desc_t d;
    good_desc(&d);
    if (agmm_world_rank(w) == 1) d.tile_m = 0;
    agmm_plan_t *p = NULL;
    agmm_status_t st = agmm_plan_create(w, &d, &p);
    if (agmm_world_rank(w) == 1) return st == AGMM_ERR_INVALID_ARG ? 0 : 10;
    return (st == AGMM_ERR_TIMEOUT || st == AGMM_ERR_ABORTED) && !p ? 0 : 11;
}

int main(void)
{
    agmm_log_set_quiet(1);
    test_status_strings();
    test_engine_names();
    test_desc_check();
    test_no_world();

    agmm_launch_opts_t o = {0};
    o.nranks = NR;
    o.timeout_s = 60;
    o.quiet = 1;
    int code = -1;
    CHECK(agmm_launch(&o, world_rank_main, NULL, &code) == AGMM_OK, "launch");
    CHECK(code == 0, "a rank's API checks failed (exit code %d; see above)",
          code);

    o.timeout_s = 2;
    code = -1;
    CHECK(agmm_launch(&o, lone_bad_rank_main, NULL, &code) == AGMM_OK,
          "launch");
    CHECK(code == 0, "one rank with a bad description: exit code %d", code);

    CHECK_DONE("test_api");
}
