/* The wq engine's prefill rule and sizes (prefill_rule.h).
 *
 * The rule, measured (docs/design.md, "Quantized weights"): the path costs
 * one dequantization of the range's weight per call (k x ncols values)
 * and gains the library GEMM's rate over the kernels' (oneDNN's bf16 dot
 * has twice the FMA's rate) on every row. One rank, k 4096, ncols 5504,
 * int4 g128, one call per round, ms a round (median of 5, kernels vs
 * path; Zen 4 class, 2 shared cores): bf16 A at 32 rows 21.1 vs 21.7,
 * 40 rows 36.2 vs 38.5, 64 rows 64.3 vs 40.7, 128 rows 102.8 vs 83.9,
 * 256 rows 283 vs 160; fp32 A (int8, oneDNN's f32 matmul: the FMA's rate
 * both) 64 rows 72.0 vs 71.6, 256 rows 224 vs 217. Hence 64 rows for
 * bf16 A, 256 for fp32 A (AGMM_WQ_PREFILL_ROWS sets both: 0 or "off"
 * keeps the kernels for every call).
 *
 * Sizes: a block of NB_BYTES of dequantized weight (k x nb, nb a multiple
 * of 16, at least 16) stays in L2 while the library multiplies MB rows
 * of A by it. */
#include "gemm/wq/prefill_rule.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/param.h"
#include "common/util.h"

enum { ROWS_BF16 = 64, ROWS_F32 = 256, MB = 256 };
#define NB_BYTES ((int64_t)1 << 20)

static int64_t g_rows = -1; /* -1: the defaults */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void read_env(void)
{
    const char *e = agmm_param_str(AGMM_PARAM_WQ_PREFILL_ROWS);
    if (!e || !*e) return;
    if (strcmp(e, "off") == 0) {
        g_rows = 0;
        return;
    }
    char *end;
    long long v = strtoll(e, &end, 10);
    if (*end || v < 0) {
        agmm_warn("AGMM_WQ_PREFILL_ROWS=%s: not a row count (allowed: "
                  "0 or off, or a count >= 1); using the defaults",
                  e);
        return;
    }
    g_rows = v;
}

int64_t agmm_wq_prefill_rows(agmm_dtype_t a_dtype)
{
    pthread_once(&g_once, read_env);
    if (g_rows >= 0) return g_rows;
    return a_dtype == AGMM_DTYPE_BF16 ? ROWS_BF16 : ROWS_F32;
}

static size_t up64(size_t b)
{
    return (b + 63) / 64 * 64;
}

agmm_status_t agmm_wq_pf_make(const agmm_gemm_shape_t *s,
                              const agmm_gemm_attr_t *a, agmm_wq_pf_t *pf,
                              agmm_wq_lib_t **lib)
{
    memset(pf, 0, sizeof *pf);
    if (lib) *lib = NULL;
    int64_t rows = agmm_wq_prefill_rows(a->a_dtype), mmax = 0;
    for (int i = 0; i < s->nrows; i++)
        mmax = AGMM_MAX(mmax, s->rows[i]);
    if (rows <= 0 || mmax < rows) return AGMM_OK;
    if (a->a_dtype != AGMM_DTYPE_BF16 && a->a_dtype != AGMM_DTYPE_FP32)
        return AGMM_OK;
    int bf16 = a->a_dtype == AGMM_DTYPE_BF16;
    int64_t es = bf16 ? 2 : 4;
    int64_t nb = NB_BYTES / (s->k * es) / 16 * 16;
    nb = AGMM_MAX(nb, (int64_t)16);
    if (nb >= s->ncols) nb = s->ncols; /* one block */
    int64_t mb = AGMM_MIN(mmax, (int64_t)MB);
    /* The row counts: mb, and each count's remainder of mb. */
    int64_t *ms = agmm_alloc((size_t)(s->nrows + 1) * sizeof *ms);
    if (!ms) return agmm_error(AGMM_ERR_NO_MEMORY, "gemm: wq: no memory");
    int nms = 0;
    ms[nms++] = mb;
    for (int i = 0; i < s->nrows; i++)
        if (s->rows[i] >= rows && s->rows[i] % mb) ms[nms++] = s->rows[i] % mb;
    int64_t ns[2] = {nb, s->ncols % nb};
    agmm_wq_lib_cfg_t cfg = {.a_dtype = a->a_dtype,
                             .k = s->k,
                             .lda = s->lda,
                             .ms = ms,
                             .nms = nms,
                             .ns = ns,
                             .nns = ns[1] ? 2 : 1};
    size_t lbytes = 0;
    int lbf16 = 0;
    agmm_status_t st = agmm_wq_lib_make(&cfg, lib, &lbytes, &lbf16);
    agmm_free(ms);
    if (st == AGMM_ERR_UNSUPPORTED) return AGMM_OK; /* the kernels, then */
    AGMM_CHECK(st);
    pf->rows = rows;
    pf->mb = mb;
    pf->nb = nb;
    pf->bf16 = lbf16;
    pf->prod_off = up64((size_t)(s->k * nb * es));
    pf->lib_off = pf->prod_off + up64((size_t)(mb * nb) * sizeof(float));
    pf->bytes = pf->lib_off + up64(lbytes);
    return AGMM_OK;
}
