/* What the engines call back into (engine.h), apart from the list that
 * chooses them (engine_list.c): the process-wide count of engine
 * primitives created (the "nothing is created in a round" check of
 * tests/unit/test_gemm_engine.c and agmm_plan_gemm_info), and what every
 * engine shares of the attributes: their names, their initialiser and the
 * checks of shape, attr and share. */
#include "gemm/engine.h"

#include <stdatomic.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

/* Bumped by prepare() on the plan owner's thread, read by anyone: its own
 * cache line, relaxed (a count, ordering nothing). */
static struct {
    _Alignas(AGMM_CACHE_LINE) _Atomic uint64_t n;
} created;

void agmm_gemm_engine_count_creation(void)
{
    atomic_fetch_add_explicit(&created.n, 1, memory_order_relaxed);
}

uint64_t agmm_gemm_engine_created(void)
{
    return atomic_load_explicit(&created.n, memory_order_relaxed);
}

const char *agmm_gemm_act_name(agmm_gemm_act_t act)
{
    switch (act) {
    case AGMM_GEMM_ACT_NONE:
        return "none";
    case AGMM_GEMM_ACT_RELU:
        return "relu";
    case AGMM_GEMM_ACT_GELU_TANH:
        return "gelu-tanh";
    case AGMM_GEMM_ACT_GELU_ERF:
        return "gelu-erf";
    case AGMM_GEMM_ACT_SILU:
        return "silu";
    }
    return "invalid";
}

void agmm_gemm_attr_init(agmm_gemm_attr_t *attr, agmm_dtype_t a_dtype,
                         agmm_dtype_t w_dtype)
{
    memset(attr, 0, sizeof *attr);
    attr->a_dtype = a_dtype;
    attr->w_dtype = w_dtype;
    attr->c_dtype = AGMM_DTYPE_FP32;
}

agmm_status_t agmm_gemm_check(const char *engine, const agmm_gemm_shape_t *s,
                              const agmm_gemm_attr_t *a,
                              const agmm_gemm_shape_t *ss,
                              const agmm_gemm_attr_t *sa)
{
    if (!s || !a)
        return agmm_error(AGMM_ERR_INVALID_ARG, "gemm: %s: NULL shape or attr",
                          engine);
    if (!agmm_dtype_size(a->a_dtype) || !agmm_dtype_size(a->w_dtype) ||
        !agmm_dtype_size(a->c_dtype))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "gemm: %s: a_dtype %d, w_dtype %d or c_dtype %d is "
                          "not a dtype",
                          engine, (int)a->a_dtype, (int)a->w_dtype,
                          (int)a->c_dtype);
    int int8 = a->a_dtype == AGMM_DTYPE_INT8 || a->w_dtype == AGMM_DTYPE_INT8;
    if (int8 && (a->a_dtype != a->w_dtype || !a->a_scale || !a->w_scale ||
                 a->c_dtype == AGMM_DTYPE_INT8))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "gemm: %s: int8 needs a_dtype = w_dtype = int8 "
                          "(here %s, %s), a_scale and w_scale (%d, %d) and a "
                          "float c_dtype (%s)",
                          engine, agmm_dtype_name(a->a_dtype),
                          agmm_dtype_name(a->w_dtype), a->a_scale, a->w_scale,
                          agmm_dtype_name(a->c_dtype));
    if (a->a_dtype != AGMM_DTYPE_FP32 && a->a_dtype != a->w_dtype)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "gemm: %s: a_dtype %s must be fp32 or w_dtype (%s)",
                          engine, agmm_dtype_name(a->a_dtype),
                          agmm_dtype_name(a->w_dtype));
    if (a->wq_bits != 0 && a->wq_bits != 4 && a->wq_bits != 8)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "gemm: %s: wq_bits %d (allowed: 0, 4, 8)", engine,
                          a->wq_bits);
    if (a->wq_bits && strcmp(engine, "wq"))
        return agmm_error(AGMM_ERR_UNSUPPORTED,
                          "gemm: %s: a quantized weight (int%d) runs on the wq "
                          "engine only",
                          engine, a->wq_bits);
    if (!strcmp(agmm_gemm_act_name(a->act), "invalid"))
        return agmm_error(AGMM_ERR_INVALID_ARG, "gemm: %s: act %d is not valid",
                          engine, (int)a->act);
    if (s->k < 1 || s->ncols < 1 || s->ldw < s->ncols || s->lda < s->k ||
        s->ldc < s->ncols || s->nrows < 0 || (s->nrows > 0 && !s->rows) ||
        s->ld_a_scale < 0)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "gemm: %s: bad shape (k %lld, ncols %lld, ldw %lld, "
                          "lda %lld, ldc %lld, ld_a_scale %lld)",
                          engine, (long long)s->k, (long long)s->ncols,
                          (long long)s->ldw, (long long)s->lda,
                          (long long)s->ldc, (long long)s->ld_a_scale);
    if (ss && (ss->k != s->k || ss->ncols != s->ncols || ss->ldw != s->ldw ||
               sa->w_dtype != a->w_dtype || sa->a_dtype != a->a_dtype ||
               !sa->bias != !a->bias || !sa->w_scale != !a->w_scale ||
               (int8 && (!sa->s8_as_u8 != !a->s8_as_u8 ||
                         !sa->s8_split != !a->s8_split)) ||
               sa->wq_bits != a->wq_bits || sa->wq_group != a->wq_group ||
               !sa->wq_asym != !a->wq_asym || !sa->wq_a8 != !a->wq_a8))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "gemm: %s: share: the shared prep's k, ncols, ldw, "
                          "dtypes, bias, w_scale, s8_as_u8, s8_split or "
                          "quantization differ",
                          engine);
    return AGMM_OK;
}
