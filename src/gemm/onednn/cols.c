/* The oneDNN engine's table (engine.h; its entry in the engine list,
 * gemm/engine_list.c): a prepared column range is one part (prep.c), or,
 * when it is wide, several parts of PART_COLS columns side by side, each
 * with its own weight, run one after the other over all of a call's rows
 * (attr.part_cols and part_buf_rows, engine.h, set other parts).
 *
 * Why: oneDNN 2.6's AMX brgemm matmul, on one thread, runs a wide call at
 * about half the rate of the same work in 256-column parts visited column
 * part first (the part's weight, k x 256, stays in L2 while every row
 * passes; the wide call streams the whole weight again per row block).
 * Measured side by side in one process (docs/history/, "Wide
 * column ranges"): 2048 x 4096 x 11008 bf16, one 2048-row call 543 ms,
 * in 256-column parts 389 ms. So a range of at least 2 x PART_COLS columns
 * whose part gets an AMX implementation is split (int8 never: its own pass,
 * s8.c, works on the whole range). The choice depends on the
 * shape and attributes only, not on the rows of the calls, so plans made
 * for different rows per call give the same bits; a call of few rows pays
 * one oneDNN call per part (a few microseconds each). A prep made with
 * share takes the base's parts.
 *
 * A part's C is dense (PART_COLS wide: oneDNN's brgemm takes no strided
 * C, dense.c), so a call goes through a buffer of at most
 * BUF_ROWS x PART_COLS after the largest part scratchpad, in the caller's
 * scratch:
 *   plain:              part into the buffer, copied into C;
 *   accumulate, fp32 C: the parts are plain (their bias kept, act
 *                       dropped): C = act(C_old + buffer), one rounding;
 *   accumulate, else:   C_old copied into the buffer, the part accumulates
 *                       there (a dense C: bit-exact), copied back.
 * Accumulate is thus C_old + the plain prep's product bit for bit, as
 * engine.h requires.
 *
 * Threads: as prep.c (a prep is read-only after load; runs of one
 * prep on several threads each bring their own scratch).
 */
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "gemm/engine.h"
#include "gemm/epilogue.h"
#include "gemm/onednn/onednn_internal.h"

enum { PART_COLS = 256, BUF_ROWS = 512, MAX_PARTS = 4096 };

struct agmm_gemm_prep {
    int64_t cols;  /* columns per part; 0: one part, the whole range */
    int nparts;    /* >= 1 */
    int64_t ncols; /* of the range */
    int64_t ldc;
    int64_t buf_rows; /* rows the buffer holds (0: no buffer) */
    agmm_dtype_t c_dtype;
    size_t w_esize, a_row; /* bytes of a W element, of a row of A */
    int accumulate;
    agmm_gemm_act_t act;
    size_t part_scratch; /* the largest part's scratch, 64-aligned */
    agmm_dn_prep_t *part[];
};

/* Columns per part for shape/attr (0: one part). */
static int64_t choose_cols(const agmm_gemm_shape_t *s,
                           const agmm_gemm_attr_t *a)
{
    int64_t forced = a->part_cols; /* engine.h: 0 is the engine's choice */
    if (forced < 0 || a->a_dtype == AGMM_DTYPE_INT8) return 0;
    if (forced > 0) return s->ncols > forced ? forced : 0;
    if (s->ncols < 2 * PART_COLS ||
        (s->ncols + PART_COLS - 1) / PART_COLS > MAX_PARTS)
        return 0;
    agmm_gemm_shape_t part = *s;
    part.ncols = PART_COLS;
    return agmm_dn_amx(&part, a) ? PART_COLS : 0;
}

/* Part j's shape and attr (dense C; accumulate as the header says). */
static void part_of(const agmm_gemm_shape_t *s, const agmm_gemm_attr_t *a,
                    int64_t cols, int j, agmm_gemm_shape_t *ps,
                    agmm_gemm_attr_t *pa)
{
    *ps = *s;
    *pa = *a;
    ps->ncols = AGMM_MIN(cols, s->ncols - (int64_t)j * cols);
    ps->ldc = ps->ncols;
    if (a->accumulate && a->c_dtype == AGMM_DTYPE_FP32) {
        pa->accumulate = 0;
        pa->act = AGMM_GEMM_ACT_NONE;
    }
}

static int64_t buffer_rows(const agmm_gemm_shape_t *s,
                           const agmm_gemm_attr_t *a)
{
    int64_t most = 1;
    for (int i = 0; i < s->nrows; i++)
        most = AGMM_MAX(most, s->rows[i]);
    int64_t forced = a->part_buf_rows;
    return AGMM_MIN(most, forced > 0 ? forced : BUF_ROWS);
}

/* The row counts a part is called with: each of s's through the buffer,
 * buf_rows at a time, and the remainder. out: 2 * s->nrows entries. */
static int part_rows(const agmm_gemm_shape_t *s, int64_t buf_rows, int64_t *out)
{
    int n = 0;
    for (int i = 0; i < s->nrows; i++) {
        if (s->rows[i] <= 0) continue;
        out[n++] = AGMM_MIN(s->rows[i], buf_rows);
        if (s->rows[i] > buf_rows && s->rows[i] % buf_rows)
            out[n++] = s->rows[i] % buf_rows;
    }
    return n;
}

static size_t buffer_bytes(int64_t rows, int64_t cols, agmm_dtype_t c)
{
    return (size_t)rows * (size_t)cols * agmm_dtype_size(c);
}

static agmm_status_t cols_estimate(const agmm_gemm_shape_t *s,
                                   const agmm_gemm_attr_t *a, int share,
                                   uint64_t *weight_bytes,
                                   uint64_t *scratch_bytes)
{
    int64_t cols = choose_cols(s, a);
    if (!cols)
        return agmm_dn_estimate(s, a, share, weight_bytes, scratch_bytes);
    uint64_t w = 0, most = 0;
    int64_t *rows = agmm_alloc((2 * (size_t)s->nrows + 1) * sizeof *rows);
    if (!rows) return agmm_error(AGMM_ERR_NO_MEMORY, "gemm: out of memory");
    agmm_status_t st = AGMM_OK;
    for (int j = 0; (int64_t)j * cols < s->ncols && st == AGMM_OK; j++) {
        agmm_gemm_shape_t ps;
        agmm_gemm_attr_t pa;
        uint64_t pw = 0, sc = 0;
        part_of(s, a, cols, j, &ps, &pa);
        ps.rows = rows;
        ps.nrows = part_rows(s, buffer_rows(s, a), rows);
        st = agmm_dn_estimate(&ps, &pa, share, &pw, &sc);
        w += pw;
        most = AGMM_MAX(most, sc);
    }
    agmm_free(rows);
    AGMM_CHECK(st);
    *weight_bytes = w;
    *scratch_bytes = agmm_dn_align64(most) +
                     buffer_bytes(buffer_rows(s, a), cols, a->c_dtype);
    return AGMM_OK;
}

static void cols_destroy(agmm_gemm_prep_t *p)
{
    if (!p) return;
    for (int j = 0; j < p->nparts; j++)
        agmm_dn_destroy(p->part[j]);
    agmm_free(p);
}

static agmm_status_t cols_prepare(const agmm_gemm_shape_t *s,
                                  const agmm_gemm_attr_t *a,
                                  const agmm_gemm_prep_t *share,
                                  agmm_gemm_prep_t **out)
{
    int64_t cols = share ? share->cols : choose_cols(s, a);
    if (share && share->ncols != s->ncols)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "gemm: onednn: share has %lld columns, not %lld",
                          (long long)share->ncols, (long long)s->ncols);
    int nparts = cols ? (int)((s->ncols + cols - 1) / cols) : 1;
    agmm_gemm_prep_t *p =
        agmm_alloc(sizeof *p + (size_t)nparts * sizeof p->part[0]);
    if (!p) return agmm_error(AGMM_ERR_NO_MEMORY, "gemm: out of memory");
    memset(p, 0, sizeof *p + (size_t)nparts * sizeof p->part[0]);
    p->cols = cols;
    p->ncols = s->ncols;
    p->ldc = s->ldc;
    p->c_dtype = a->c_dtype;
    p->w_esize = agmm_dtype_size(a->w_dtype);
    p->a_row = (size_t)s->lda * agmm_dtype_size(a->a_dtype);
    p->accumulate = a->accumulate;
    p->act = a->act;
    p->buf_rows = cols ? buffer_rows(s, a) : 0;
    int64_t *rows = agmm_alloc((2 * (size_t)s->nrows + 1) * sizeof *rows);
    agmm_status_t st =
        rows ? AGMM_OK : agmm_error(AGMM_ERR_NO_MEMORY, "gemm: out of memory");
    size_t most = 0;
    for (int j = 0; j < nparts && st == AGMM_OK; j++) {
        agmm_gemm_shape_t ps = *s;
        agmm_gemm_attr_t pa = *a;
        if (cols) {
            part_of(s, a, cols, j, &ps, &pa);
            ps.rows = rows;
            ps.nrows = part_rows(s, p->buf_rows, rows);
        }
        st = agmm_dn_prepare(&ps, &pa, share ? share->part[j] : NULL,
                             &p->part[j]);
        if (st == AGMM_OK) {
            p->nparts = j + 1;
            most = AGMM_MAX(most, agmm_dn_scratch_bytes(p->part[j]));
        }
    }
    agmm_free(rows);
    if (st != AGMM_OK) {
        cols_destroy(p);
        return st;
    }
    p->part_scratch = agmm_dn_align64(most);
    *out = p;
    return AGMM_OK;
}

static agmm_status_t cols_load(agmm_gemm_prep_t *p,
                               const agmm_gemm_operand_t *o)
{
    if (!o || !o->w) return agmm_dn_load(p->part[0], o); /* its message */
    for (int j = 0; j < p->nparts; j++) {
        agmm_gemm_operand_t po = *o;
        int64_t c0 = (int64_t)j * p->cols;
        if (j) {
            po.w = (const unsigned char *)o->w + (size_t)c0 * p->w_esize;
            if (o->bias) po.bias = o->bias + c0;
            if (o->w_scale) po.w_scale = o->w_scale + c0;
        }
        AGMM_CHECK(agmm_dn_load(p->part[j], &po));
    }
    return AGMM_OK;
}

static agmm_status_t cols_load_bias(agmm_gemm_prep_t *p, const float *bias)
{
    for (int j = 0; j < p->nparts; j++)
        AGMM_CHECK(agmm_dn_load_bias(
            p->part[j], bias ? bias + (int64_t)j * p->cols : NULL));
    return AGMM_OK;
}

/* Part j over m rows: through the buffer, BUF_ROWS rows at a time. */
static agmm_status_t run_part(agmm_gemm_prep_t *p, int j, int64_t m,
                              const unsigned char *a, const float *a_scale,
                              unsigned char *c, void *scratch)
{
    size_t ces = agmm_dtype_size(p->c_dtype);
    int64_t pc = AGMM_MIN(p->cols, p->ncols - (int64_t)j * p->cols);
    size_t row = (size_t)pc * ces, c_row = (size_t)p->ldc * ces;
    unsigned char *buf = (unsigned char *)scratch + p->part_scratch;
    int add = p->accumulate && p->c_dtype == AGMM_DTYPE_FP32;
    int copy_in = p->accumulate && !add;
    c += (size_t)j * (size_t)p->cols * ces;
    for (int64_t r0 = 0; r0 < m; r0 += p->buf_rows) {
        int64_t mc = AGMM_MIN(p->buf_rows, m - r0);
        unsigned char *cr = c + (size_t)r0 * c_row;
        if (copy_in)
            for (int64_t i = 0; i < mc; i++)
                memcpy(buf + (size_t)i * row, cr + (size_t)i * c_row, row);
        AGMM_CHECK(agmm_dn_run(p->part[j], mc, a + (size_t)r0 * p->a_row,
                               a_scale, buf, scratch));
        for (int64_t i = 0; i < mc; i++) {
            if (!add) {
                memcpy(cr + (size_t)i * c_row, buf + (size_t)i * row, row);
                continue;
            }
            float *ci = (float *)(void *)(cr + (size_t)i * c_row);
            const float *bi = (const float *)(void *)(buf + (size_t)i * row);
            for (int64_t x = 0; x < pc; x++)
                ci[x] = agmm_gemm_act_f32(p->act, ci[x] + bi[x]);
        }
    }
    return AGMM_OK;
}

static agmm_status_t cols_run(agmm_gemm_prep_t *p, int64_t m, const void *a,
                              const float *a_scale, void *c, void *scratch)
{
    if (!p->cols) return agmm_dn_run(p->part[0], m, a, a_scale, c, scratch);
    for (int j = 0; j < p->nparts; j++) /* part first: its weight stays */
        AGMM_CHECK(run_part(p, j, m, a, a_scale, c, scratch));
    return AGMM_OK;
}

static size_t cols_scratch_bytes(const agmm_gemm_prep_t *p)
{
    if (!p->cols) return agmm_dn_scratch_bytes(p->part[0]);
    return p->part_scratch + buffer_bytes(p->buf_rows, p->cols, p->c_dtype);
}

static uint64_t cols_weight_bytes(const agmm_gemm_prep_t *p)
{
    uint64_t w = 0;
    for (int j = 0; j < p->nparts; j++)
        w += agmm_dn_weight_bytes(p->part[j]);
    return w;
}

static const char *cols_impl(const agmm_gemm_prep_t *p)
{
    return agmm_dn_impl(p->part[0]);
}

const agmm_gemm_engine_t agmm_gemm_engine_onednn = {
    .name = "onednn",
    .kind = AGMM_GEMM_ENGINE_ONEDNN,
    .cheap_tile_calls = 1,
    .version = agmm_dn_version,
    .input_dtype = agmm_dn_input_dtype,
    .why_not_native = agmm_dn_why_not_native,
    .estimate = cols_estimate,
    .prepare = cols_prepare,
    .load = cols_load,
    .load_bias = cols_load_bias,
    .run = cols_run,
    .scratch_bytes = cols_scratch_bytes,
    .weight_bytes = cols_weight_bytes,
    .impl = cols_impl,
    .destroy = cols_destroy,
};
