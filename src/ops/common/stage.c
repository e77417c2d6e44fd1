/* INT8 A as the schedules read it. An operation whose scales travel in
 * the rows (op.h: scales_in_rows, all-gather + GEMM) stages its shard
 * before the workers start: each row's k int8 values, zero padding to 4
 * bytes, then the row's fp32 scale (row_bytes apart), so that a tile put
 * carries its rows' scales under its signal and every source's rows read
 * alike in the window. Otherwise the rows are used where they are and
 * only a per-tensor scale is expanded to one per row. Runs on the round's
 * caller, before any worker (the workers read a_stage, read-only). */
#include <string.h>

#include "ops/common/book.h"
#include "ops/common/plan.h"
#include "ops/common/stage.h"

/* The most rows of this rank's A over calls. */
static int64_t a_rows_max(const agmm_plan_t *p)
{
    int64_t a_rows = 0, c_rows = 0;
    p->op->call_rows(p->rank, p->m_max, p->M_max, &a_rows, &c_rows);
    return a_rows;
}

void agmm_plan_book_stage(agmm_plan_t *p, agmm_book_t *b)
{
    if (!p->int8) return;
    int64_t rows = a_rows_max(p);
    if (p->op->scales_in_rows)
        agmm_book_local(b, "int8 staged rows", rows, (int64_t)p->row_bytes,
                        AGMM_CACHE_LINE, &p->a_stage);
    else if (p->desc.a_scale == AGMM_SCALE_TENSOR)
        agmm_book_local(b, "int8 row scales", rows, sizeof(float),
                        AGMM_CACHE_LINE, &p->a_stage);
}

void agmm_plan_stage_a(agmm_plan_t *p, const void *a_local,
                       const float *a_scale, int64_t a_rows, const void **a,
                       const float **scales)
{
    *a = a_local;
    *scales = NULL;
    if (!p->int8) return;
    int tensor = p->desc.a_scale == AGMM_SCALE_TENSOR;
    if (!p->op->scales_in_rows) {
        *scales = a_scale;
        if (!tensor) return;
        float *s = p->a_stage;
        for (int64_t i = 0; i < a_rows; i++)
            s[i] = a_scale[0];
        *scales = s;
        return;
    }
    size_t k = (size_t)p->k_gemm;
    unsigned char *dst = p->a_stage;
    const unsigned char *src = a_local;
    for (int64_t i = 0; i < a_rows; i++) {
        unsigned char *row = dst + (size_t)i * p->row_bytes;
        memcpy(row, src + (size_t)i * k, k);
        memset(row + k, 0, p->scale_off - k);
        memcpy(row + p->scale_off, &a_scale[tensor ? 0 : i], sizeof(float));
    }
    *a = dst;
}
