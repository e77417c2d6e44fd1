/* agmm_ag_peer's inputs and its check (ag_peer_inputs.h): every element a
 * hash of its stream and index, so the check regenerates any row of any
 * rank's A and any column of its W without a gather. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "ag_peer_inputs.h"
#include "gemm/convert.h"

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Element i of input stream `stream`: uniform in [-1, 1), rounded to dt
 * (returned as the float it represents; int8: the fp32 value quantized). */
static float in_value(agmm_dtype_t dt, uint64_t stream, uint64_t i)
{
    uint64_t h = splitmix64((stream << 40) ^ i);
    float f = (float)((double)(h >> 11) * 0x1p-52 - 1.0);
    if (dt == AGMM_DTYPE_BF16) return agmm_bf16_to_f32(agmm_f32_to_bf16(f));
    if (dt == AGMM_DTYPE_FP16) return agmm_fp16_to_f32(agmm_f32_to_fp16(f));
    return f;
}

int peer_fill_int8(uint64_t stream, uint64_t first, int64_t rows, int64_t cols,
                   int64_t ld_stream, agmm_quant_axis_t axis, int8_t *q,
                   float *scales)
{
    float *f = malloc((size_t)(rows * cols) * sizeof(float) + 1);
    if (!f) return -1;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            f[i * cols + j] = in_value(AGMM_DTYPE_FP32, stream,
                                       first + (uint64_t)(i * ld_stream + j));
    agmm_status_t st =
        agmm_quantize(f, AGMM_DTYPE_FP32, rows, cols, cols, axis, q, scales);
    free(f);
    if (st != AGMM_OK)
        fprintf(stderr, "agmm_ag_peer: agmm_quantize: %s\n", agmm_last_error());
    return st == AGMM_OK ? 0 : -1;
}

void peer_fill(agmm_dtype_t dt, uint64_t stream, void *dst, int64_t n)
{
    if (dt == AGMM_DTYPE_INT8) return; /* peer_fill_int8 */
    for (int64_t i = 0; i < n; i++) {
        float f = in_value(dt, stream, (uint64_t)i);
        if (dt == AGMM_DTYPE_FP32)
            ((float *)dst)[i] = f;
        else if (dt == AGMM_DTYPE_BF16)
            ((uint16_t *)dst)[i] = agmm_f32_to_bf16(f);
        else
            ((uint16_t *)dst)[i] = agmm_f32_to_fp16(f);
    }
}

uint64_t peer_stream_a(int r)
{
    return 1 + (uint64_t)r;
}
uint64_t peer_stream_w(int r)
{
    return 1000001 + (uint64_t)r;
}

void peer_check(agmm_dtype_t dt, int64_t m_local, int64_t K, int64_t N, int ar,
                int rank, const float *c, double *out)
{
    int64_t M = m_local;
    int nranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    M *= nranks;
    out[0] = out[1] = 0;
    for (int t = 0; t < NCHECK; t++) {
        int64_t i = (int64_t)t * M / NCHECK + (t * 37) % (M / NCHECK + 1);
        if (i >= M) i = M - 1;
        int64_t j = (int64_t)(((uint64_t)t * 7919 + 3) % (uint64_t)N);
        int src = (int)(i / m_local);
        int64_t row = i % m_local;
        double dot = 0, mag = 0;
        if (dt == AGMM_DTYPE_INT8) {
            /* The row (per-row scale) and the column (per-column scale)
             * quantized again on their own: the same values and scales. */
            int8_t *qa = malloc((size_t)K + 1), *qw = malloc((size_t)K + 1);
            float sa = 0, sw = 0;
            int64_t acc = 0, amag = 0;
            if (!qa || !qw ||
                peer_fill_int8(peer_stream_a(src), (uint64_t)(row * K), 1, K, K,
                               AGMM_QUANT_ROWS, qa, &sa) ||
                peer_fill_int8(peer_stream_w(rank), (uint64_t)j, K, 1, N,
                               AGMM_QUANT_COLS, qw, &sw))
                MPI_Abort(MPI_COMM_WORLD, 1);
            for (int64_t k = 0; k < K; k++) {
                acc += (int64_t)qa[k] * qw[k];
                amag += (int64_t)abs(qa[k] * qw[k]);
            }
            free(qa), free(qw);
            dot = (double)acc * sa * sw;
            mag = (double)amag * sa * sw;
        }
        /* gemm-ar: C = sum_s A_s @ W_s over every rank's part of K */
        for (int s = 0; ar && s < nranks; s++) {
            int64_t ks = agmm_k_split(K, nranks, s);
            for (int64_t k = 0; k < ks; k++) {
                double a =
                    in_value(dt, peer_stream_a(s), (uint64_t)(i * ks + k));
                double w =
                    in_value(dt, peer_stream_w(s), (uint64_t)(k * N + j));
                dot += a * w;
                mag += fabs(a * w);
            }
        }
        for (int64_t k = 0; !ar && dt != AGMM_DTYPE_INT8 && k < K; k++) {
            double a =
                in_value(dt, peer_stream_a(src), (uint64_t)(row * K + k));
            double w = in_value(dt, peer_stream_w(rank), (uint64_t)(k * N + j));
            dot += a * w;
            mag += fabs(a * w);
        }
        double d = fabs((double)c[i * N + j] - dot);
        if (!(d <= out[0])) out[0] = d; /* NaN wins */
        double rel = mag > 0 ? d / mag : d;
        if (!(rel <= out[1])) out[1] = rel;
    }
}
