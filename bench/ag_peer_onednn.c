/* agmm_ag_peer's oneDNN engines (oneDNN 2.x C API: dnnl_matmul_desc_init +
 * dnnl_primitive_desc_create), one matmul over the gathered A.
 *
 * ag_engine_onednn: in the input dtype: bf16 x bf16 -> f32 for bf16, f32
 * for fp32; fp16 as f16 x f16 where the CPU has an implementation, else
 * converted to f32 each round against a weight converted once.
 * ag_engine_onednn_f32: what a user writes who converts to fp32 first:
 * bf16/fp16 A converted to fp32 each round (agmm's conversion,
 * agmm_convert_to_f32, inside the timed round) and one f32 x f32 -> f32
 * matmul against the weight converted to fp32 once; fp32 input is not
 * converted (the same matmul as ag_engine_onednn's).
 *
 * ag_engine_onednn_int8: W8A8, the rows and the weight already int8 (the
 * peer quantizes them, outside the timed round): one s8 x s8 -> f32
 * matmul whose output scales (mask 2) are the weight's per-column scales,
 * then each row of C times its row's scale (inside the timed round).
 *
 * All reorder the weight once into the layout the primitive prefers
 * (dnnl_format_tag_any) and create the primitive once, outside the timed
 * rounds. One OpenMP thread. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_peer.h"
#include "gemm/convert.h"
#include "oneapi/dnnl/dnnl.h"
#include "oneapi/dnnl/dnnl_debug.h"

typedef struct dnnl_state {
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    dnnl_primitive_t mm;
    dnnl_memory_t src, wei, dst; /* wei: the reordered weight */
    agmm_dtype_t dt;
    float *a32; /* [M, K] fp32 when A is converted per round, else NULL */
    int64_t m, k, n;
    int int8; /* row scales applied after the matmul (e->row_scale) */
} dnnl_state_t;

/* Log a failed oneDNN call once and jump to the cleanup. */
#define DNNL_TRY(call)                                                         \
    do {                                                                       \
        dnnl_status_t st_ = (call);                                            \
        if (st_ != dnnl_success) {                                             \
            fprintf(stderr, "agmm_ag_peer: oneDNN: %s: %s\n", #call,           \
                    dnnl_status2str(st_));                                     \
            goto fail;                                                         \
        }                                                                      \
    } while (0)

static int dnnl_run(ag_engine_t *e, const void *a, float *c)
{
    dnnl_state_t *s = e->state;
    if (s->a32) {
        agmm_convert_to_f32(s->dt, a, s->a32, (size_t)(s->m * s->k));
        a = s->a32;
    }
    DNNL_TRY(dnnl_memory_set_data_handle(s->src, (void *)a));
    DNNL_TRY(dnnl_memory_set_data_handle(s->dst, c));
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, s->src},
                               {DNNL_ARG_WEIGHTS, s->wei},
                               {DNNL_ARG_DST, s->dst}};
    DNNL_TRY(dnnl_primitive_execute(s->mm, s->stream, 3, args));
    DNNL_TRY(dnnl_stream_wait(s->stream));
    for (int64_t i = 0; s->int8 && i < s->m; i++) {
        float r = e->row_scale[i];
        for (int64_t j = 0; j < s->n; j++)
            c[i * s->n + j] *= r;
    }
    return 0;
fail:
    return -1;
}

static void dnnl_destroy(ag_engine_t *e)
{
    dnnl_state_t *s = e->state;
    if (!s) return;
    if (s->mm) dnnl_primitive_destroy(s->mm);
    if (s->src) dnnl_memory_destroy(s->src);
    if (s->wei) dnnl_memory_destroy(s->wei);
    if (s->dst) dnnl_memory_destroy(s->dst);
    if (s->stream) dnnl_stream_destroy(s->stream);
    if (s->eng) dnnl_engine_destroy(s->eng);
    free(s->a32);
    free(s);
    e->state = NULL;
}

static dnnl_data_type_t dnnl_type(agmm_dtype_t dt)
{
    return dt == AGMM_DTYPE_BF16   ? dnnl_bf16
           : dt == AGMM_DTYPE_FP16 ? dnnl_f16
                                   : dnnl_f32;
}

/* The matmul's primitive descriptor for inputs of type t, weight in the
 * layout oneDNN prefers. dnnl_unimplemented if this CPU has none. */
static dnnl_status_t matmul_pd_attr(dnnl_primitive_desc_t *pd,
                                    dnnl_engine_t eng, dnnl_data_type_t t,
                                    int64_t M, int64_t K, int64_t N,
                                    const_dnnl_primitive_attr_t attr)
{
    dnnl_dims_t sd = {M, K}, wd = {K, N}, dd = {M, N};
    dnnl_memory_desc_t src_md, wei_md, dst_md;
    dnnl_matmul_desc_t desc;
    dnnl_status_t st;
    if ((st = dnnl_memory_desc_init_by_tag(&src_md, 2, sd, t, dnnl_ab)) ||
        (st = dnnl_memory_desc_init_by_tag(&wei_md, 2, wd, t,
                                           dnnl_format_tag_any)) ||
        (st =
             dnnl_memory_desc_init_by_tag(&dst_md, 2, dd, dnnl_f32, dnnl_ab)) ||
        (st = dnnl_matmul_desc_init(&desc, &src_md, &wei_md, NULL, &dst_md)))
        return st;
    return dnnl_primitive_desc_create(pd, &desc, attr, eng, NULL);
}

static dnnl_status_t matmul_pd(dnnl_primitive_desc_t *pd, dnnl_engine_t eng,
                               dnnl_data_type_t t, int64_t M, int64_t K,
                               int64_t N)
{
    return matmul_pd_attr(pd, eng, t, M, K, N, NULL);
}

/* Reorder the user's weight w ([K, N] row-major, type t) into s->wei, laid
 * out as the primitive wants. */
static int reorder_weight(dnnl_state_t *s, const dnnl_memory_desc_t *want,
                          dnnl_data_type_t t, int64_t K, int64_t N,
                          const void *w)
{
    dnnl_dims_t wd = {K, N};
    dnnl_memory_desc_t user_md;
    dnnl_memory_t user = NULL;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t r = NULL;
    int rc = -1;
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&user_md, 2, wd, t, dnnl_ab));
    DNNL_TRY(dnnl_memory_create(&user, &user_md, s->eng, (void *)w));
    DNNL_TRY(dnnl_memory_create(&s->wei, want, s->eng, DNNL_MEMORY_ALLOCATE));
    DNNL_TRY(dnnl_reorder_primitive_desc_create(&rpd, &user_md, s->eng, want,
                                                s->eng, NULL));
    DNNL_TRY(dnnl_primitive_create(&r, rpd));
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, s->wei}};
    DNNL_TRY(dnnl_primitive_execute(r, s->stream, 2, args));
    DNNL_TRY(dnnl_stream_wait(s->stream));
    rc = 0;
fail:
    if (r) dnnl_primitive_destroy(r);
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    if (user) dnnl_memory_destroy(user);
    return rc;
}

/* The state of a new engine e (M x K x N of dtype dt): allocated, hooked
 * into e, with oneDNN's engine and stream, one OpenMP thread as agmm's
 * GEMM workers have. NULL on failure (printed; e->destroy frees what was
 * made). */
static dnnl_state_t *new_state(ag_engine_t *e, agmm_dtype_t dt, int64_t M,
                               int64_t K, int64_t N)
{
    memset(e, 0, sizeof *e);
    dnnl_state_t *s = calloc(1, sizeof *s);
    if (!s) {
        fprintf(stderr, "agmm_ag_peer: out of memory for the oneDNN engine\n");
        return NULL;
    }
    e->state = s;
    e->run = dnnl_run;
    e->destroy = dnnl_destroy;
    s->dt = dt;
    s->m = M;
    s->k = K;
    s->n = N;
    s->int8 = dt == AGMM_DTYPE_INT8;
    omp_set_num_threads(1); /* one thread per rank, like agmm's GEMM */
    DNNL_TRY(dnnl_engine_create(&s->eng, dnnl_cpu, 0));
    DNNL_TRY(dnnl_stream_create(&s->stream, s->eng, dnnl_stream_default_flags));
    return s;
fail:
    return NULL;
}

/* The rest of a peer's setup from its matmul descriptor pd (consumed:
 * destroyed on return either way): the impl and version names into e, the
 * weight w ([K, N] of dtype t) reordered into pd's layout, the primitive
 * and its A and C memories (handles set each round). 0, or -1 printed. */
static int finish_matmul(ag_engine_t *e, dnnl_state_t *s,
                         dnnl_primitive_desc_t pd, dnnl_data_type_t t,
                         int64_t K, int64_t N, const void *w)
{
    int rc = -1;
    const char *impl = "unknown";
    DNNL_TRY(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl));
    snprintf(e->impl, sizeof e->impl, "%s", impl);
    if (reorder_weight(
            s, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), t, K,
            N, w) != 0)
        goto fail;
    DNNL_TRY(dnnl_primitive_create(&s->mm, pd));
    DNNL_TRY(dnnl_memory_create(
        &s->src, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), s->eng,
        DNNL_MEMORY_NONE));
    DNNL_TRY(dnnl_memory_create(
        &s->dst, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), s->eng,
        DNNL_MEMORY_NONE));
    const dnnl_version_t *v = dnnl_version();
    snprintf(e->name, sizeof e->name, "oneDNN %d.%d.%d", v->major, v->minor,
             v->patch);
    rc = 0;
fail:
    dnnl_primitive_desc_destroy(pd);
    return rc;
}

/* want_f32: convert bf16/fp16 to fp32 and run the f32 matmul; else the
 * input dtype's matmul (fp16 converted only where the CPU has none). */
static int onednn_create(ag_engine_t *e, agmm_dtype_t dt, int64_t M, int64_t K,
                         int64_t N, const void *w, int want_f32)
{
    dnnl_primitive_desc_t pd = NULL;
    float *w32 = NULL;
    dnnl_state_t *s = new_state(e, dt, M, K, N);
    if (!s) goto fail;

    int convert = want_f32 && dt != AGMM_DTYPE_FP32, fallback = 0;
    dnnl_data_type_t t = convert ? dnnl_f32 : dnnl_type(dt);
    dnnl_status_t st = matmul_pd(&pd, s->eng, t, M, K, N);
    if (st == dnnl_unimplemented && dt == AGMM_DTYPE_FP16 && !convert) {
        /* No f16 matmul on this CPU: f32 on converted rows. */
        convert = fallback = 1;
        t = dnnl_f32;
        st = matmul_pd(&pd, s->eng, t, M, K, N);
    }
    if (st != dnnl_success) {
        fprintf(stderr, "agmm_ag_peer: oneDNN: no %s matmul: %s\n",
                dnnl_dt2str(t), dnnl_status2str(st));
        goto fail;
    }
    if (convert) {
        s->a32 = malloc((size_t)(M * K) * sizeof(float) + 1);
        w32 = malloc((size_t)(K * N) * sizeof(float));
        if (!s->a32 || !w32) {
            fprintf(stderr,
                    "agmm_ag_peer: out of memory for the oneDNN engine\n");
            goto fail;
        }
        agmm_convert_to_f32(dt, w, w32, (size_t)(K * N));
        w = w32;
    }
    int rc = finish_matmul(e, s, pd, t, K, N, w);
    pd = NULL; /* consumed */
    free(w32);
    w32 = NULL;
    if (rc != 0) goto fail;
    if (convert)
        snprintf(e->what, sizeof e->what,
                 "convert %s -> fp32 each round (%s%s) + one matmul f32 x f32 "
                 "-> f32 (weight converted to fp32 and reordered once, "
                 "primitive created once)",
                 agmm_dtype_name(dt), agmm_convert_path(),
                 fallback ? "; no f16 matmul on this CPU" : "");
    else
        snprintf(e->what, sizeof e->what,
                 "one matmul %s x %s -> f32 (%sweight reordered once, "
                 "primitive created once)",
                 dnnl_dt2str(t), dnnl_dt2str(t),
                 want_f32 ? "fp32 input, no conversion; " : "");
    if (omp_get_max_threads() != 1) {
        fprintf(stderr, "agmm_ag_peer: oneDNN would run %d threads, want 1\n",
                omp_get_max_threads());
        goto fail;
    }
    return 0;
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    free(w32);
    dnnl_destroy(e);
    return -1;
}

int ag_engine_onednn(ag_engine_t *e, agmm_dtype_t dt, int64_t M, int64_t K,
                     int64_t N, const void *w)
{
    return onednn_create(e, dt, M, K, N, w, 0);
}

int ag_engine_onednn_f32(ag_engine_t *e, agmm_dtype_t dt, int64_t M, int64_t K,
                         int64_t N, const void *w)
{
    return onednn_create(e, dt, M, K, N, w, 1);
}

int ag_engine_onednn_int8(ag_engine_t *e, int64_t M, int64_t K, int64_t N,
                          const int8_t *w, const float *w_scale)
{
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_state_t *s = new_state(e, AGMM_DTYPE_INT8, M, K, N);
    if (!s) goto fail;
    DNNL_TRY(dnnl_primitive_attr_create(&attr));
    /* C[i, j] = w_scale[j] * sum_k A[i, k] W[k, j]: mask 2 = dim 1 (N) */
    DNNL_TRY(dnnl_primitive_attr_set_output_scales(attr, N, 1 << 1, w_scale));
    dnnl_status_t st = matmul_pd_attr(&pd, s->eng, dnnl_s8, M, K, N, attr);
    if (st != dnnl_success) {
        fprintf(stderr, "agmm_ag_peer: oneDNN: no s8 matmul: %s\n",
                dnnl_status2str(st));
        goto fail;
    }
    int rc = finish_matmul(e, s, pd, dnnl_s8, K, N, w);
    pd = NULL; /* consumed */
    dnnl_primitive_attr_destroy(attr);
    attr = NULL;
    if (rc != 0) goto fail;
    snprintf(e->what, sizeof e->what,
             "one matmul s8 x s8 -> f32 with per-column output scales (the "
             "weight's), then C's rows times the gathered row scales (rows "
             "and weight quantized before the rounds, weight reordered "
             "once, primitive created once)");
    if (omp_get_max_threads() != 1) {
        fprintf(stderr, "agmm_ag_peer: oneDNN would run %d threads, want 1\n",
                omp_get_max_threads());
        dnnl_destroy(e);
        return -1;
    }
    return 0;
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    dnnl_destroy(e);
    return -1;
}
