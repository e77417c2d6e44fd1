/* Plan descriptions: defaults, checks, the memory estimate, the
 * cross-rank hash, and the op names. No world, no plan: pure functions of
 * a description (plan.c creates plans from them). */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "common/log.h"
#include "ops/common/plan_internal.h"
/* -------------------------------------------------------- description */

const char *agmm_op_name(agmm_op_t op)
{
    switch (op) {
    case AGMM_OP_AG_GEMM: return "ag-gemm";
    case AGMM_OP_GEMM_RS: return "gemm-rs";
    }
    return "invalid";
}

/* gemm-rs: rank r's part of the inner dimension (k_local[r], or k split as
 * evenly as possible, the first k % P ranks one more). */
int64_t agmm_plan_k_part(const agmm_plan_desc_t *d, int r)
{
    if (d->k_local) return d->k_local[r];
    return d->k / d->nranks + (r < d->k % d->nranks ? 1 : 0);
}

/* gemm-rs: the k_local checks (after k and nranks were checked). */
static agmm_status_t check_k_local(const agmm_plan_desc_t *d)
{
    if (!d->k_local) return AGMM_OK;
    int64_t sum = 0;
    for (int r = 0; r < d->nranks; r++) {
        if (d->k_local[r] < 0 || d->k_local[r] > d->k)
            return agmm_error(AGMM_ERR_INVALID_ARG,
                              "plan: k_local[%d] = %lld (allowed 0..k = %lld)",
                              r, (long long)d->k_local[r], (long long)d->k);
        sum += d->k_local[r]; /* each <= k <= INT_MAX: no overflow */
    }
    if (sum != d->k)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "plan: k_local adds up to %lld but k = %lld (the "
                          "parts must add up to k)",
                          (long long)sum, (long long)d->k);
    return AGMM_OK;
}

/* n_weights and n_list (several weights per gather). */
static agmm_status_t check_weights(const agmm_plan_desc_t *d)
{
    if (!d->n_list) {
        if (d->n_weights > 1)
            return agmm_error(AGMM_ERR_INVALID_ARG,
                              "plan: n_weights %d needs n_list (NULL is one "
                              "weight of n columns)",
                              d->n_weights);
        if (d->n_weights < 0)
            return agmm_error(AGMM_ERR_INVALID_ARG,
                              "plan: n_weights %d (allowed 0..%d)",
                              d->n_weights, AGMM_MAX_WEIGHTS);
        return AGMM_OK;
    }
    if (d->n_weights < 1 || d->n_weights > AGMM_MAX_WEIGHTS)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "plan: n_weights %d with n_list (allowed 1..%d)",
                          d->n_weights, AGMM_MAX_WEIGHTS);
    for (int i = 0; i < d->n_weights; i++)
        if (d->n_list[i] < 1 || d->n_list[i] > INT_MAX)
            return agmm_error(AGMM_ERR_INVALID_ARG,
                              "plan: n_list[%d] = %lld (allowed 1..%d)", i,
                              (long long)d->n_list[i], INT_MAX);
    if (d->op == AGMM_OP_GEMM_RS && d->n_weights > 1)
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "plan: gemm-rs takes one weight (n_weights %d); "
                          "several weights are for ag-gemm",
                          d->n_weights);
    return AGMM_OK;
}

void agmm_plan_desc_init(agmm_plan_desc_t *d)
{
    if (!d) return;
    memset(d, 0, sizeof *d);
    d->nranks = 1;
    d->k = d->n = 4096;
    d->tile_m = 128;
    d->tile_n = 256;
    d->dtype = AGMM_DTYPE_FP16;
    d->weights = AGMM_WEIGHTS_SHARED;
    d->comm_workers = 1;
    d->gemm_workers = 1;
}

agmm_status_t agmm_plan_desc_check(const agmm_plan_desc_t *d)
{
    if (!d) return agmm_error(AGMM_ERR_INVALID_ARG, "plan: desc is NULL");
    if (d->nranks < 1)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "plan: nranks %d (allowed >= 1)", d->nranks);
    if (!d->m_local)
        return agmm_error(AGMM_ERR_INVALID_ARG, "plan: m_local is NULL");
    int64_t M = 0;
    for (int r = 0; r < d->nranks; r++) {
        if (d->m_local[r] < 0)
            return agmm_error(AGMM_ERR_INVALID_ARG,
                              "plan: m_local[%d] = %lld (allowed >= 0)", r,
                              (long long)d->m_local[r]);
        if (!agmm_add_ok(M, d->m_local[r], &M))
            return agmm_error(AGMM_ERR_TOO_LARGE,
                              "plan: the sum of m_local overflows");
    }
    if (M < 1)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "plan: every shard is empty (sum of m_local = 0)");
    AGMM_CHECK(check_weights(d));
    int64_t n = d->n_list ? d->n_list[0] : d->n;
    if (d->k < 1 || n < 1)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "plan: k = %lld, n = %lld (allowed >= 1)",
                          (long long)d->k, (long long)n);
    if (M > INT_MAX || d->k > INT_MAX || n > INT_MAX)
        return agmm_error(AGMM_ERR_TOO_LARGE,
                          "plan: M, k and n must each be at most %d (CBLAS "
                          "dimensions are int)",
                          INT_MAX);
    if (d->tile_m < 1 || d->tile_n < 1)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "plan: tile_m = %lld, tile_n = %lld (allowed >= 1)",
                          (long long)d->tile_m, (long long)d->tile_n);
    if (agmm_dtype_size(d->dtype) == 0)
        return agmm_error(AGMM_ERR_INVALID_ARG, "plan: dtype %d is not valid",
                          (int)d->dtype);
    if (d->op != AGMM_OP_AG_GEMM && d->op != AGMM_OP_GEMM_RS)
        return agmm_error(AGMM_ERR_INVALID_ARG, "plan: op %d is not valid",
                          (int)d->op);
    if (d->op == AGMM_OP_GEMM_RS) AGMM_CHECK(check_k_local(d));
    if (d->weights != AGMM_WEIGHTS_SHARED &&
        d->weights != AGMM_WEIGHTS_PER_RANK)
        return agmm_error(AGMM_ERR_INVALID_ARG, "plan: weights %d is not valid",
                          (int)d->weights);
    if (!agmm_gemm_engine_available(d->gemm_engine))
        return strcmp(agmm_gemm_engine_name(d->gemm_engine), "invalid")
                   ? agmm_error(AGMM_ERR_UNSUPPORTED,
                                "plan: gemm engine %s is not built in (needs "
                                "libdnnl-dev and -DAGMM_ONEDNN=ON)",
                                agmm_gemm_engine_name(d->gemm_engine))
                   : agmm_error(AGMM_ERR_INVALID_ARG,
                                "plan: gemm_engine %d is not valid",
                                (int)d->gemm_engine);
    if (d->comm_workers < 0 || d->comm_workers > 1024)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "plan: comm_workers %d (allowed 0..1024)",
                          d->comm_workers);
    if (d->gemm_workers < 1 || d->gemm_workers > 1024)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "plan: gemm_workers %d (allowed 1..1024)",
                          d->gemm_workers);
    if (!isfinite(d->timeout_s)) /* NaN would make every wait endless */
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "plan: timeout_s %g (allowed: finite seconds; <= 0 "
                          "for the world's default)",
                          d->timeout_s);
    if (agmm_plan_bytes_per_rank(d) == 0)
        return agmm_error(AGMM_ERR_TOO_LARGE,
                          "plan: byte counts overflow 64 bits");
    return AGMM_OK;
}

/* Sum of a + b*c*... in bytes, 0 on overflow. */
static int64_t bytes3(int64_t a, int64_t b, int64_t c)
{
    int64_t ab, abc;
    if (!agmm_mul_ok(a, b, &ab) || !agmm_mul_ok(ab, c, &abc)) return -1;
    return abc;
}

/* Signal cells: `cells` plus 3 per rank, a cache line each; -1 on
 * overflow. */
static int64_t cell_bytes(int64_t cells, int nranks)
{
    int64_t n;
    if (cells < 0 || !agmm_add_ok(cells, 3 * (int64_t)nranks, &n)) return -1;
    return bytes3(n, AGMM_CACHE_LINE, 1);
}

/* A prepared weight of k x n, modelled (the engine's estimate is exact
 * per prepared column segment but builds oneDNN descriptors; this stays
 * a cheap bound): oneDNN's blocked layouts pad columns to their block
 * (<= 64) and 16-bit rows to pairs; OpenBLAS keeps an fp32 copy. */
static uint64_t weight_model(const agmm_gemm_engine_t *e, agmm_dtype_t dt,
                             int64_t k, int64_t n)
{
    if (e->kind == AGMM_GEMM_ENGINE_OPENBLAS)
        return (uint64_t)k * (uint64_t)n * sizeof(float);
    int half = e->input_dtype(dt) != AGMM_DTYPE_FP32;
    uint64_t kk = (uint64_t)k + (half ? (uint64_t)k % 2 : 0);
    uint64_t nn = ((uint64_t)n + 63) / 64 * 64;
    return kk * nn * (half ? 2u : 4u);
}

uint64_t agmm_plan_bytes_per_rank(const agmm_plan_desc_t *d)
{
    if (!d || !d->m_local || d->nranks < 1) return 0;
    int64_t M = 0, tiles = 0, max_rows = 0, max_tiles = 0, kmax = 0;
    for (int r = 0; r < d->nranks; r++) {
        if (d->m_local[r] < 0 || !agmm_add_ok(M, d->m_local[r], &M)) return 0;
        int64_t t = d->tile_m >= 1 ? AGMM_DIV_UP(d->m_local[r], d->tile_m) : 0;
        tiles += t;
        max_rows = AGMM_MAX(max_rows, d->m_local[r]);
        max_tiles = AGMM_MAX(max_tiles, t);
    }
    int64_t es = (int64_t)agmm_dtype_size(d->dtype);
    const agmm_gemm_engine_t *e = agmm_gemm_engine_get(d->gemm_engine);
    /* With n_list, n is ignored: the first weight's columns stand for it. */
    int64_t n = d->n_list ? (d->n_weights >= 1 ? d->n_list[0] : -1) : d->n;
    if (es == 0 || !e || d->k < 0 || n < 0) return 0;
    /* Several weights: one prepared weight each (the outputs are the
     * caller's). */
    uint64_t wsum = 0;
    int nw = d->n_list ? d->n_weights : 1;
    if (nw < 1 || nw > AGMM_MAX_WEIGHTS) return 0;
    for (int i = 0; i < nw; i++) {
        int64_t ni = d->n_list ? d->n_list[i] : n;
        if (ni < 0 || ni > INT_MAX) return 0;
        uint64_t wb = weight_model(e, d->dtype, d->k, ni);
        if (wb > INT64_MAX || wsum + wb > INT64_MAX) return 0; /* overflow */
        wsum += wb;
    }
    /* The engine's prepared weight (fp32 for OpenBLAS; bf16 stays bf16 on
     * oneDNN); g32 only when the engine does not read the dtype itself. */
    int rs = d->op == AGMM_OP_GEMM_RS;
    for (int r = 0; rs && r < d->nranks; r++) {
        if (d->k_local && (d->k_local[r] < 0 || d->k_local[r] > d->k)) return 0;
        kmax = AGMM_MAX(kmax, agmm_plan_k_part(d, r));
    }
    if (rs) { /* receive slots, partial, signals, weight, g32, claims */
        uint64_t wb = weight_model(e, d->dtype, kmax, n);
        int64_t cells = bytes3(d->nranks, max_tiles, 1);
        int64_t parts[6] = {
            bytes3(d->nranks, bytes3(max_rows, n, 4), 1),
            bytes3(M, n, 4),
            cell_bytes(cells, d->nranks),
            wb > INT64_MAX ? -1 : (int64_t)wb,
            e->input_dtype(d->dtype) == d->dtype ? 0 : bytes3(M, kmax, 4),
            bytes3(tiles, 3 * AGMM_CACHE_LINE + 4 * 64, 1),
        };
        int64_t total = 0;
        for (int i = 0; i < 6; i++)
            if (parts[i] < 0 || !agmm_add_ok(total, parts[i], &total)) return 0;
        return (uint64_t)total;
    }
    uint64_t wb = wsum;
    int64_t parts[5] = {
        bytes3(M, d->k, es),                               /* gathered */
        cell_bytes(tiles, d->nranks),                      /* signals */
        wb > INT64_MAX ? -1 : (int64_t)wb,                 /* weight */
        e->input_dtype(d->dtype) == d->dtype ? 0 : bytes3(M, d->k, 4), /* g32 */
        bytes3(tiles, 2 * AGMM_CACHE_LINE + 4 * 64, 1), /* claims */
    };
    int64_t total = 0;
    for (int i = 0; i < 5; i++)
        if (parts[i] < 0 || !agmm_add_ok(total, parts[i], &total)) return 0;
    return (uint64_t)total;
}

/* FNV-1a over the fields every rank must agree on. */
uint64_t agmm_plan_desc_hash(const agmm_plan_desc_t *d)
{
    uint64_t h = 1469598103934665603ull;
#define MIX(v)                                                                 \
    do {                                                                       \
        uint64_t x_ = (uint64_t)(v);                                           \
        for (int i_ = 0; i_ < 8; i_++) {                                       \
            h ^= (x_ >> (8 * i_)) & 0xff;                                      \
            h *= 1099511628211ull;                                             \
        }                                                                      \
    } while (0)
    MIX(d->nranks);
    for (int r = 0; r < d->nranks; r++)
        MIX(d->m_local[r]);
    MIX(d->k);
    if (d->n_list && d->n_weights > 1) { /* one weight hashes as before */
        MIX(d->n_weights);
        for (int i = 0; i < d->n_weights; i++)
            MIX(d->n_list[i]);
    } else {
        MIX(d->n_list ? d->n_list[0] : d->n);
    }
    MIX(d->tile_m);
    MIX(d->tile_n);
    MIX(d->dtype);
    MIX(d->weights);
    /* The engine that actually runs (AUTO resolved): ranks built
     * differently must not silently compute with different engines. */
    MIX(agmm_gemm_engine_get(d->gemm_engine)->kind);
    MIX(d->op);
    for (int r = 0; d->op == AGMM_OP_GEMM_RS && r < d->nranks; r++)
        MIX(agmm_plan_k_part(d, r)); /* the split in effect, given or not */
#undef MIX
    return h;
}

