/* Plan descriptions: defaults, the common checks (each operation checks
 * its own fields: op.h), the cross-rank hash, and the operation names. No
 * world, no plan: pure functions of a description (the descriptor, pd.c,
 * runs the checks once and then books; plan.c creates plans from it). */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "agmm_ext.h" /* agmm_activation_gate */
#include "common/log.h"
#include "common/util.h"
#include "gemm/engine.h"
#include "gemm/engine_list.h"
#include "gemm/wq/wq.h" /* AGMM_WQ_MAX_ELEMENTS */
#include "ops/common/desc.h"
#include "ops/common/op.h"
#include "ops/common/path.h"
/* -------------------------------------------------------- description */

const char *agmm_op_name(agmm_op_t op)
{
    const agmm_operation_t *o = agmm_operation(op);
    return o ? o->name : "invalid";
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
    const agmm_operation_t *op = agmm_operation(d->op);
    if (op && d->n_weights > op->max_weights)
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "plan: %s takes at most %d weight%s (n_weights %d)",
                          op->name, op->max_weights,
                          op->max_weights == 1 ? "" : "s", d->n_weights);
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
    d->out_dtype = AGMM_DTYPE_FP32; /* 0 would be FP16 */
}

const char *agmm_activation_name(agmm_activation_t act)
{
    switch (act) {
    case AGMM_ACT_NONE:
        return "none";
    case AGMM_ACT_RELU:
        return "relu";
    case AGMM_ACT_GELU_TANH:
        return "gelu-tanh";
    case AGMM_ACT_GELU_ERF:
        return "gelu-erf";
    case AGMM_ACT_SILU:
        return "silu";
    case AGMM_ACT_SILU_MUL:
        return "silu-mul";
    case AGMM_ACT_GELU_TANH_MUL:
        return "gelu-tanh-mul";
    }
    return "invalid";
}

agmm_activation_t agmm_activation_gate(agmm_activation_t act)
{
    return act == AGMM_ACT_SILU_MUL        ? AGMM_ACT_SILU
           : act == AGMM_ACT_GELU_TANH_MUL ? AGMM_ACT_GELU_TANH
                                           : AGMM_ACT_NONE;
}

int agmm_desc_weights(const agmm_plan_desc_t *d)
{
    return d->n_list ? AGMM_MAX(d->n_weights, 1) : 1;
}

agmm_activation_t agmm_desc_activation(const agmm_plan_desc_t *d, int i)
{
    return d->activations ? d->activations[i] : d->activation;
}

/* A gated activation (agmm.h): a weight of [gate | up] halves (an even
 * column count), on an operation whose GEMM calls carry the epilogue (the
 * halves of one output column meet in one call's tile). */
static agmm_status_t check_gated(const agmm_plan_desc_t *d)
{
    const agmm_operation_t *op = agmm_operation(d->op);
    for (int i = 0; i < agmm_desc_weights(d); i++) {
        agmm_activation_t act = agmm_desc_activation(d, i);
        int64_t n = d->n_list ? d->n_list[i] : d->n;
        if (agmm_activation_gate(act) == AGMM_ACT_NONE) continue;
        if (op && !op->epilogue_in_gemm)
            return agmm_error(AGMM_ERR_UNSUPPORTED,
                              "plan: activation %s with %s (allowed with "
                              "ag-gemm only: the gate and up halves need the "
                              "reduced sum first)",
                              agmm_activation_name(act), op->name);
        if (n % 2)
            return agmm_error(AGMM_ERR_INVALID_ARG,
                              "plan: activation %s with n = %lld (allowed: "
                              "even, [gate | up] halves)",
                              agmm_activation_name(act), (long long)n);
    }
    return AGMM_OK;
}

const char *agmm_wdtype_name(agmm_wdtype_t w)
{
    switch (w) {
    case AGMM_WDTYPE_SAME:
        return "same";
    case AGMM_WDTYPE_INT8:
        return "int8";
    case AGMM_WDTYPE_INT4:
        return "int4";
    }
    return "invalid";
}

const char *agmm_aquant_name(agmm_aquant_t q)
{
    switch (q) {
    case AGMM_AQUANT_NONE:
        return "none";
    case AGMM_AQUANT_INT8:
        return "int8";
    }
    return "invalid";
}

/* A quantized weight (weight_dtype, group_size, weight_zero_point,
 * a_quant): what
 * the wq engine runs, and nothing else. After the operation's own checks
 * (the k split is valid). */
static agmm_status_t check_wq(const agmm_plan_desc_t *d)
{
    agmm_wdtype_t wd = d->weight_dtype;
    if (!strcmp(agmm_wdtype_name(wd), "invalid"))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "plan: weight_dtype %d is not valid (allowed: same, "
                          "int8, int4)",
                          (int)wd);
    if (!strcmp(agmm_aquant_name(d->a_quant), "invalid"))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "plan: a_quant %d is not valid (allowed: none, "
                          "int8)",
                          (int)d->a_quant);
    if (wd == AGMM_WDTYPE_SAME && d->a_quant != AGMM_AQUANT_NONE)
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "plan: a_quant int8 with weight_dtype same "
                          "(allowed: none; a_quant quantizes A for int8 / "
                          "int4 weights; int8 A and W is dtype int8)");
    if (wd == AGMM_WDTYPE_SAME) {
        if (d->gemm_engine == AGMM_GEMM_ENGINE_WQ &&
            d->dtype != AGMM_DTYPE_BF16)
            return agmm_error(AGMM_ERR_UNSUPPORTED,
                              "plan: gemm_engine wq with weight_dtype same "
                              "and dtype %s (the wq engine runs quantized "
                              "weights, and unquantized bf16 ones; allowed "
                              "here: auto, onednn, openblas)",
                              agmm_dtype_name(d->dtype));
        return AGMM_OK; /* group_size, weight_zero_point ignored */
    }
    const char *name = agmm_wdtype_name(wd);
    int64_t g = d->group_size;
    if (g != 0 && g != 32 && g != 64 && g != 128)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "plan: group_size %lld (allowed: 32, 64, 128, or 0 "
                          "for all of k)",
                          (long long)g);
    if (d->weight_zero_point != 0 && d->weight_zero_point != 1)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "plan: weight_zero_point %d (allowed: 0 symmetric, "
                          "1 asymmetric)",
                          d->weight_zero_point);
    if (d->dtype == AGMM_DTYPE_INT8)
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "plan: weight_dtype %s with dtype int8 (allowed: "
                          "fp32, bf16, fp16; int8 A runs int8 W as W8A8, "
                          "weight_dtype same)",
                          name);
    if (d->gemm_engine != AGMM_GEMM_ENGINE_AUTO &&
        d->gemm_engine != AGMM_GEMM_ENGINE_WQ)
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "plan: gemm_engine %s with weight_dtype %s (a "
                          "quantized weight runs on the wq engine; allowed: "
                          "auto, wq)",
                          agmm_gemm_engine_name(d->gemm_engine), name);
    /* Each weight within the packed layout's size (its k part is at most
     * k: k x n is the bound of every rank's; check_weights ran first). */
    for (int i = 0; i < (d->n_list ? d->n_weights : 1); i++) {
        int64_t ni = d->n_list ? d->n_list[i] : d->n;
        if (ni > 0 && d->k > AGMM_WQ_MAX_ELEMENTS / ni)
            return agmm_error(AGMM_ERR_TOO_LARGE,
                              "plan: weight_dtype %s of k %lld x n %lld "
                              "elements (allowed: at most 2^40 a weight)",
                              name, (long long)d->k, (long long)ni);
    }
    /* GEMM_RS, GEMM_AR: each rank's weight is its k part; a group must not
     * straddle the split (every part but the last a multiple of G). */
    const agmm_operation_t *op = agmm_operation(d->op);
    for (int r = 0; g > 0 && op && r + 1 < d->nranks; r++) {
        int64_t kp = op->k_part(d, r);
        if (kp != d->k && kp % g != 0)
            return agmm_error(AGMM_ERR_INVALID_ARG,
                              "plan: group_size %lld with %s: rank %d's k part "
                              "is %lld (allowed: every rank's k part but the "
                              "last's a multiple of group_size, so no group "
                              "straddles the k split; or group_size 0, one "
                              "group per rank's part; see k_local)",
                              (long long)g, op->name, r, (long long)kp);
    }
    return AGMM_OK;
}

/* The epilogue's fields: an activation (or one per weight), a C dtype of
 * fp32/bf16/fp16. After check_weights (the count of activations). */
static agmm_status_t check_epilogue(const agmm_plan_desc_t *d)
{
    if (d->activations && d->activation != AGMM_ACT_NONE)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "plan: activation %s and activations both given "
                          "(allowed: one of them; activations is one per "
                          "weight)",
                          agmm_activation_name(d->activation));
    for (int i = 0; i < agmm_desc_weights(d); i++) {
        agmm_activation_t act = agmm_desc_activation(d, i);
        if (!strcmp(agmm_activation_name(act), "invalid"))
            return d->activations
                       ? agmm_error(AGMM_ERR_INVALID_ARG,
                                    "plan: activations[%d] %d is not valid "
                                    "(allowed: none, relu, gelu-tanh, "
                                    "gelu-erf, silu, silu-mul, "
                                    "gelu-tanh-mul)",
                                    i, (int)act)
                       : agmm_error(AGMM_ERR_INVALID_ARG,
                                    "plan: activation %d is not valid "
                                    "(allowed: none, relu, gelu-tanh, "
                                    "gelu-erf, silu, silu-mul, "
                                    "gelu-tanh-mul)",
                                    (int)act);
    }
    AGMM_CHECK(check_gated(d));
    if (d->out_dtype != AGMM_DTYPE_FP32 && d->out_dtype != AGMM_DTYPE_BF16 &&
        d->out_dtype != AGMM_DTYPE_FP16)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "plan: out_dtype %d is not valid (allowed: fp32, "
                          "bf16, fp16)",
                          (int)d->out_dtype);
    return AGMM_OK;
}

agmm_status_t agmm_desc_check(const agmm_plan_desc_t *d)
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
    if (d->dtype == AGMM_DTYPE_INT8 && d->k > AGMM_INT8_MAX_K)
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "plan: k = %lld with dtype int8 (allowed <= %d: "
                          "int32 sums of longer int8 dot products may "
                          "overflow)",
                          (long long)d->k, AGMM_INT8_MAX_K);
    if (d->dtype == AGMM_DTYPE_INT8 &&
        (d->a_scale != AGMM_SCALE_CHANNEL && d->a_scale != AGMM_SCALE_TENSOR))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "plan: a_scale %d is not valid (allowed: channel, "
                          "tensor)",
                          (int)d->a_scale);
    if (d->dtype == AGMM_DTYPE_INT8 &&
        (d->w_scale != AGMM_SCALE_CHANNEL && d->w_scale != AGMM_SCALE_TENSOR))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "plan: w_scale %d is not valid (allowed: channel, "
                          "tensor)",
                          (int)d->w_scale);
    AGMM_CHECK(check_epilogue(d));
    const agmm_operation_t *op = agmm_operation(d->op);
    if (!op)
        return agmm_error(AGMM_ERR_INVALID_ARG, "plan: op %d is not valid",
                          (int)d->op);
    if (op->check_desc) AGMM_CHECK(op->check_desc(d));
    AGMM_CHECK(check_wq(d));
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
    AGMM_CHECK(agmm_path_check(d, agmm_gemm_engine_of_desc(d)));
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
    return AGMM_OK;
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
    MIX(agmm_gemm_engine_of_desc(d)->kind);
    MIX(d->op);
    MIX(d->gemm_path);
    /* The epilogue: one activation hashes as before activations (the
     * same for every weight, however given); else each weight's. */
    int same = 1;
    for (int i = 1; i < agmm_desc_weights(d); i++)
        same &= agmm_desc_activation(d, i) == agmm_desc_activation(d, 0);
    MIX(agmm_desc_activation(d, 0));
    for (int i = 1; !same && i < agmm_desc_weights(d); i++)
        MIX(agmm_desc_activation(d, i));
    MIX(d->out_dtype);
    MIX(d->bias != 0);
    if (d->dtype == AGMM_DTYPE_INT8) { /* the layouts of the scales */
        MIX(d->a_scale);
        MIX(d->w_scale);
    }
    if (d->weight_dtype != AGMM_WDTYPE_SAME) { /* the quantization */
        MIX(d->weight_dtype);
        MIX(d->group_size);
        MIX(d->weight_zero_point != 0);
        MIX(d->a_quant);
    }
    const agmm_operation_t *op = agmm_operation(d->op);
    for (int r = 0; op && r < d->nranks; r++)
        MIX(op->k_part(d, r)); /* the split in effect, given or not */
#undef MIX
    return h;
}
