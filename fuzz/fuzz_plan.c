/* libFuzzer target: plan validation through the library API, with any bit
 * pattern in every field of agmm_plan_desc_t (negative and huge sizes,
 * invalid enums, NaN timeouts) and up to 8 ranks.
 *
 * Checks: agmm_plan_desc_check() and agmm_plan_bytes_per_rank() never
 * crash or overflow (the sanitizers watch the arithmetic); a refusal
 * records a message; an accepted description has a non-zero size that
 * covers its largest buffers (all-gather: gathered rows and the fp32
 * weight; gemm-rs and gemm-ar: the partial C, the receive slots and the
 * weight of the largest inner part; several weights: each weight; int8: one
 * byte a weight element; int8 / int4 weights: a byte or half a byte). The op
 * and the k_local split (or NULL), then the weights, then INT8's scale layouts,
 * then the quantized weight's fields (weight_dtype, group_size,
 * weight_zero_point, a_quant) come last, so older corpus inputs keep the
 * all-gather of one plain weight. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agmm.h"

static void fail(const char *why)
{
    fprintf(stderr, "fuzz_plan: %s (%s)\n", why, agmm_last_error());
    abort();
}

static void take(const uint8_t **data, size_t *size, void *dst, size_t n)
{
    memset(dst, 0, n);
    size_t k = *size < n ? *size : n;
    memcpy(dst, *data, k);
    *data += k;
    *size -= k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    agmm_plan_desc_t d;
    agmm_plan_desc_init(&d);
    uint8_t nr = 0;
    take(&data, &size, &nr, 1);
    int64_t m[8];
    d.nranks = nr % 9; /* 0..8: 0 is invalid */
    take(&data, &size, m, sizeof m);
    d.m_local = (nr & 0x80) ? NULL : m;
    take(&data, &size, &d.k, sizeof d.k);
    take(&data, &size, &d.n, sizeof d.n);
    take(&data, &size, &d.tile_m, sizeof d.tile_m);
    take(&data, &size, &d.tile_n, sizeof d.tile_n);
    int32_t e[4];
    take(&data, &size, e, sizeof e);
    d.dtype = (agmm_dtype_t)e[0];
    d.weights = (agmm_weights_t)e[1];
    d.comm_workers = e[2];
    d.gemm_workers = e[3];
    take(&data, &size, &d.timeout_s, sizeof d.timeout_s);
    int32_t engine = 0; /* last, so older corpus inputs keep AUTO */
    take(&data, &size, &engine, sizeof engine);
    d.gemm_engine = (agmm_gemm_engine_kind_t)engine;
    int32_t op = 0;
    take(&data, &size, &op, sizeof op);
    d.op = (agmm_op_t)(op & 0x7fffffff); /* any value, bit 31: k_local NULL */
    int64_t kl[8];
    take(&data, &size, kl, sizeof kl);
    d.k_local = op < 0 ? NULL : kl;
    /* Several weights (last, so older inputs keep one): any count, the
     * list given or NULL (bit 31). */
    int32_t nw = 0;
    int64_t nl[AGMM_MAX_WEIGHTS + 2];
    take(&data, &size, &nw, sizeof nw);
    take(&data, &size, nl, sizeof nl);
    d.n_weights = (int)(nw & 0x7fffffff) % (AGMM_MAX_WEIGHTS + 3) - (nw & 1);
    d.n_list = nw < 0 ? NULL : nl;
    /* INT8's scale layouts (last, so older inputs keep the defaults): any
     * value. */
    int32_t sc[2] = {0, 0};
    take(&data, &size, sc, sizeof sc);
    d.a_scale = (agmm_scale_t)sc[0];
    d.w_scale = (agmm_scale_t)sc[1];
    /* A quantized weight (last, so older inputs keep a plain one): any
     * value of each field. */
    int32_t wq[3] = {0, 0, 0};
    take(&data, &size, wq, sizeof wq);
    take(&data, &size, &d.group_size, sizeof d.group_size);
    d.weight_dtype = (agmm_wdtype_t)wq[0];
    d.weight_zero_point = wq[1];
    d.a_quant = (agmm_aquant_t)wq[2];

    agmm_status_t st = agmm_plan_desc_check(&d);
    uint64_t bytes = agmm_plan_bytes_per_rank(&d);
    if (st >= AGMM_STATUS_COUNT) fail("status out of range");
    if (st != AGMM_OK && !*agmm_last_error()) fail("refused without a message");
    if (st == AGMM_OK) {
        if (bytes == 0) fail("accepted plan has size 0");
        long double M = 0, max_rows = 0, kmax = 0;
        for (int r = 0; r < d.nranks; r++) {
            M += (long double)m[r];
            if (m[r] > max_rows) max_rows = (long double)m[r];
            int64_t kr = d.k_local ? d.k_local[r]
                                   : d.k / d.nranks + (r < d.k % d.nranks);
            if (kr > kmax) kmax = (long double)kr;
        }
        if (d.op == AGMM_OP_GEMM_RS && d.k_local) {
            long double sum = 0;
            for (int r = 0; r < d.nranks; r++)
                sum += (long double)d.k_local[r];
            if (sum != (long double)d.k)
                fail("accepted a k_local not summing to k");
        }
        /* The weight: fp32, except bf16 kept as bf16 (oneDNN); several
         * weights: every one of them. */
        long double wbytes = d.weight_dtype == AGMM_WDTYPE_INT4   ? 0.5
                             : d.weight_dtype == AGMM_WDTYPE_INT8 ? 1
                             : d.dtype == AGMM_DTYPE_BF16         ? 2
                             : d.dtype == AGMM_DTYPE_INT8         ? 1
                                                                  : 4,
                    nsum = 0;
        if ((unsigned)d.weight_dtype > AGMM_WDTYPE_INT4)
            fail("accepted an invalid weight_dtype");
        if ((unsigned)d.a_quant > AGMM_AQUANT_INT8 ||
            (d.a_quant == AGMM_AQUANT_INT8 &&
             d.weight_dtype == AGMM_WDTYPE_SAME))
            fail("accepted a_quant without a quantized weight");
        if (d.weight_dtype != AGMM_WDTYPE_SAME &&
            ((d.group_size != 0 && d.group_size != 32 && d.group_size != 64 &&
              d.group_size != 128) ||
             (unsigned)d.weight_zero_point > 1))
            fail("accepted a bad group_size or weight_zero_point");
        if (d.dtype == AGMM_DTYPE_INT8 &&
            ((unsigned)d.a_scale > AGMM_SCALE_TENSOR ||
             (unsigned)d.w_scale > AGMM_SCALE_TENSOR))
            fail("accepted an invalid scale layout");
        if (d.n_list && d.n_weights > AGMM_MAX_WEIGHTS)
            fail("accepted too many weights");
        if (d.n_list && d.op == AGMM_OP_GEMM_RS && d.n_weights > 1)
            fail("accepted several weights for gemm-rs");
        for (int i = 0; i < (d.n_list ? d.n_weights : 1); i++) {
            int64_t ni = d.n_list ? d.n_list[i] : d.n;
            if (ni < 1) fail("accepted a weight of no columns");
            nsum += (long double)ni;
        }
        long double n0 =
            (long double)(d.n_list ? d.n_list[0] : d.n); /* n ignored */
        /* gemm-ar books gemm-rs's buffers and more: its rank holds the
         * weight of its own inner part, not all of k. */
        long double need =
            d.op == AGMM_OP_GEMM_RS || d.op == AGMM_OP_GEMM_AR
                ? M * n0 * 4 + d.nranks * max_rows * n0 * 4 + kmax * n0 * wbytes
                : M * d.k * agmm_dtype_size(d.dtype) +
                      (long double)d.k * nsum * wbytes;
        if ((long double)bytes < need) fail("size misses a buffer");
        if (!isfinite(d.timeout_s)) fail("accepted a non-finite timeout");
    }
    return 0;
}
