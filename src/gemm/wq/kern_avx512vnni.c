/* The W4A8 / W8A8-in-groups kernel (wq_internal.h), opt-in only
 * (AGMM_WQ_KERNEL=avx512vnni or agmm_wq_gemm_with): it changes results,
 * since A is quantized per row to int8 on the fly (gemm.c: sa = max |a| /
 * 127, a_q = round(a / sa) to nearest even), then multiplied with
 * VPDPBUSD: 4 products u8 x s8 summed into each int32 lane, 64 per
 * instruction, exactly (int32 sums of at most G rows: |sum| <= 4096 x 255
 * x 127 < 2^31 for a group of up to 4096 rows, exact in fp32 below 2^24,
 * i.e. G <= 128 whatever the values).
 *
 * The weight's quad (4 rows of k) becomes one vector whose dword j holds
 * rows 4q..4q+3 of column j as bytes: int4 from the octet's dword j
 * with shifts and a select, in the order rows 0, 2, 1, 3 (A's bytes are
 * stored in that order too); int8 by vpermb (AVX512_VBMI); int8 symmetric
 * stored values (-128..127) are moved to u + 128 (xor 0x80) for the
 * unsigned operand, and 128 x the group's sum of a_q taken off with the
 * zero term. A's 4 bytes are the instruction's own {1to16} broadcast.
 * Per group and row: t = float(acc) - zero x qsum, tot += scale x t; at
 * the end out = tot x sa (the row's scale).
 *
 * Up to AGMM_WQ_RB_VNNI (8) rows a call, 2 chains a row (integer sums:
 * the order does not change the result); at one row 4 panels side by
 * side, at two 2 (agmm_wq_panels_avx512vnni). The weight is prefetched
 * 4 KiB ahead into L2, as the bf16 dot kernel does: 1 KiB into L1 left
 * the weight's loads waiting on DRAM (perf: the load and the prefetch
 * were the hottest instructions at 8 rows). A row's quantization is
 * vectorized here too (agmm_wq_quantize_avx512vnni, below: the scalar
 * loop was 17% of the samples at 8 rows), and a quad's panels are
 * unpacked before the rows' dots. bench/wq_decode.c, K = N = 4096, int4
 * G128, from DRAM, one thread, Zen 5, one quiet sitting against the
 * kernel before those two changes: 1 row 0.30-0.32 ms against 0.38-0.40
 * (the weight at the DRAM read rate), 8 rows 0.55-0.57 against
 * 0.71-0.72, 16 rows 1.08-1.09 against 1.37-1.40 (0.54 of VPDPBUSD's
 * peak), int8 symmetric at 8 rows 0.56-0.59 against 0.81-0.86; the bf16
 * dot kernel (W4A16) 0.78 ms at 8 rows, 1.52 at 16. Tried and dropped,
 * each against this kernel in the same sitting: 2 panels at 3-8 rows,
 * with A's dword from memory or broadcast into a register once for both
 * (1.2-1.35x the time at 8 rows: unlike the bf16 dot kernel's, this
 * one's {1to16} operand is not its limit); 4 quads an iteration (int8
 * 1.4-2.3x: spills); one chain a row at 8 rows (the same: not latency);
 * the int4 unpack left out (the same, with wrong results: it is free);
 * A's rows padded off 4 KiB strides, the format as a constant per copy
 * (within 5%). Compiled by function attribute;
 * called only where the CPU has AVX512_VNNI, AVX512_VBMI and AVX512_VL
 * (gemm.c: the quantizer's 16-byte stores). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "gemm/wq/wq_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define TARGET                                                                 \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))
#ifndef PF_BYTES
#define PF_BYTES 4096
#endif
#ifndef PF_HINT
#define PF_HINT _MM_HINT_T2
#endif

/* acc += u8 w . s8 a[0..3] (broadcast from memory). AT&T syntax. */
TARGET static inline __attribute__((always_inline)) __m512i
dot4(__m512i acc, __m512i w, const int8_t *a)
{
    __asm__("vpdpbusd %2%{1to16%}, %1, %0"
            : "+v"(acc)
            : "v"(w), "m"(*(const uint32_t *)(const void *)a));
    return acc;
}

TARGET static inline __attribute__((always_inline)) __m512i
quad_bytes(const uint8_t *p, int h, int int4, int sgn, __m512i idx8)
{
    if (int4) {
        /* the octet's dword j: column j's rows r at bit 16 (r % 2) +
         * 4 (r / 2), this quad's (h) 8 h higher (wq_internal.h); as
         * bytes (r0, r2, r1, r3): the nibbles at bits 0 and 16 kept,
         * those at 4 and 20 moved up a nibble, the high nibbles cleared;
         * A's bytes are in the same order (gemm.c's quantize_rows) */
        __m512i x = _mm512_srli_epi32(
            _mm512_loadu_si512((const void *)(p - 32 * h)), 8 * h);
        __m512i v = _mm512_ternarylogic_epi32(_mm512_set1_epi32(0x000f000f), x,
                                              _mm512_slli_epi32(x, 4), 0xCA);
        return _mm512_and_si512(v, _mm512_set1_epi8(0x0f));
    }
    __m512i v =
        _mm512_permutexvar_epi8(idx8, _mm512_loadu_si512((const void *)p));
    return sgn ? _mm512_xor_si512(v, _mm512_set1_epi8((char)0x80)) : v;
}

/* npan panels (pstride bytes apart) against `rows` rows, npan x rows <=
 * AGMM_WQ_RB_VNNI: out [npan][rows][16]. Several panels at one or two
 * rows give the core more independent chains and weight streams (one
 * panel at one row is 2 chains: the instruction's latency bound); the
 * integer sums are exact and the float steps per (panel, row) the same
 * whatever npan, so the bits do not depend on it. */
TARGET static inline __attribute__((always_inline)) void
panel_rows(const struct agmm_wq *w, const uint8_t *panel, size_t pstride,
           const int npan, const int rows, const int8_t *a, int64_t lda,
           const float *qsum, const float *sa, float *out)
{
    /* int8: dst byte 4j + i = src 16 i + j. */
    _Alignas(64) uint8_t i8[64];
    for (int j = 0; j < 16; j++)
        for (int i = 0; i < 4; i++)
            i8[4 * j + i] = (uint8_t)(16 * i + j);
    const __m512i idx8 = _mm512_load_si512(i8);
    /* The running totals live in `out` (loaded and stored once a group),
     * not in registers: 8 rows' 16 chains, the weight vectors and the
     * constants fill the 32 zmm, and 8 more totals made GCC spill in the
     * inner loop. */
    for (int r = 0; r < npan * rows; r++)
        _mm512_storeu_ps(out + r * AGMM_WQ_NP, _mm512_setzero_ps());
    const uint8_t *p = panel; /* panel 0's; panel j's is p + j * pstride */
    const int int4 = w->bits == 4, sgn = w->bits == 8 && w->symmetric;
    const size_t qb = w->quad_bytes;
    for (int64_t g = 0; g < w->ng; g++) {
        __m512 s[4], z[4];
        for (int j = 0; j < npan; j++) {
            const float *pj = (const float *)(const void *)(p + j * pstride);
            s[j] = _mm512_loadu_ps(pj);
            z[j] =
                sgn ? _mm512_set1_ps(128.0f) : _mm512_loadu_ps(pj + AGMM_WQ_NP);
        }
        p += 2 * AGMM_WQ_NP * sizeof(float);
        int64_t quads = agmm_wq_quads(w, g);
        __m512i acc[AGMM_WQ_RB_VNNI][2];
        for (int r = 0; r < npan * rows; r++)
            acc[r][0] = acc[r][1] = _mm512_setzero_si512();
        const int8_t *ag = a + g * w->gq * 4;
        int64_t qd = 0;
        for (; qd + 2 <= quads; qd += 2) {
            __m512i v0[4], v1[4];
            for (int j = 0; j < npan; j++) {
                const uint8_t *pj = p + j * pstride;
                _mm_prefetch((const char *)pj + PF_BYTES, PF_HINT);
                if (!int4)
                    _mm_prefetch((const char *)pj + PF_BYTES + 64, PF_HINT);
                v0[j] = quad_bytes(pj, 0, int4, sgn, idx8);
                v1[j] = quad_bytes(pj + qb, 1, int4, sgn, idx8);
            }
            for (int r = 0; r < rows; r++) {
                const int8_t *ar = ag + r * lda + qd * 4;
                for (int j = 0; j < npan; j++) {
                    __m512i *ac = acc[j * rows + r];
                    ac[0] = dot4(ac[0], v0[j], ar);
                    ac[1] = dot4(ac[1], v1[j], ar + 4);
                }
            }
            p += 2 * qb;
        }
        if (qd < quads) { /* int8: an odd last quad */
            for (int j = 0; j < npan; j++) {
                __m512i v0 = quad_bytes(p + j * pstride, 0, int4, sgn, idx8);
                for (int r = 0; r < rows; r++)
                    acc[j * rows + r][0] =
                        dot4(acc[j * rows + r][0], v0, ag + r * lda + qd * 4);
            }
            p += qb;
        }
        for (int j = 0; j < npan; j++)
            for (int r = 0; r < rows; r++) {
                __m512i *ac = acc[j * rows + r];
                __m512 t = _mm512_cvtepi32_ps(_mm512_add_epi32(ac[0], ac[1]));
                if (w->has_zero || sgn)
                    t = _mm512_fnmadd_ps(
                        z[j], _mm512_set1_ps(qsum[r * w->ng + g]), t);
                float *o = out + (j * rows + r) * AGMM_WQ_NP;
                _mm512_storeu_ps(o,
                                 _mm512_fmadd_ps(s[j], t, _mm512_loadu_ps(o)));
            }
    }
    for (int j = 0; j < npan; j++)
        for (int r = 0; r < rows; r++) {
            float *o = out + (j * rows + r) * AGMM_WQ_NP;
            _mm512_storeu_ps(
                o, _mm512_mul_ps(_mm512_loadu_ps(o), _mm512_set1_ps(sa[r])));
        }
}

TARGET void agmm_wq_panel_avx512vnni(const struct agmm_wq *w,
                                     const uint8_t *panel, int rows,
                                     const int8_t *a, int64_t lda,
                                     const float *qsum, const float *sa,
                                     float *out)
{
    const size_t ps = w->panel_bytes;
    switch (rows) {
    case 1:
        panel_rows(w, panel, ps, 1, 1, a, lda, qsum, sa, out);
        break;
    case 2:
        panel_rows(w, panel, ps, 1, 2, a, lda, qsum, sa, out);
        break;
    case 3:
        panel_rows(w, panel, ps, 1, 3, a, lda, qsum, sa, out);
        break;
    case 4:
        panel_rows(w, panel, ps, 1, 4, a, lda, qsum, sa, out);
        break;
    case 5:
        panel_rows(w, panel, ps, 1, 5, a, lda, qsum, sa, out);
        break;
    case 6:
        panel_rows(w, panel, ps, 1, 6, a, lda, qsum, sa, out);
        break;
    case 7:
        panel_rows(w, panel, ps, 1, 7, a, lda, qsum, sa, out);
        break;
    default:
        panel_rows(w, panel, ps, 1, 8, a, lda, qsum, sa, out);
        break;
    }
}

TARGET void agmm_wq_panels_avx512vnni(const struct agmm_wq *w,
                                      const uint8_t *panel, int npan, int rows,
                                      const int8_t *a, int64_t lda,
                                      const float *qsum, const float *sa,
                                      float *out)
{
    const size_t ps = w->panel_bytes;
    if (rows == 1 && npan == 4)
        panel_rows(w, panel, ps, 4, 1, a, lda, qsum, sa, out);
    else if (rows == 1 && npan == 3)
        panel_rows(w, panel, ps, 3, 1, a, lda, qsum, sa, out);
    else if (rows <= 2 && npan == 2)
        rows == 1 ? panel_rows(w, panel, ps, 2, 1, a, lda, qsum, sa, out)
                  : panel_rows(w, panel, ps, 2, 2, a, lda, qsum, sa, out);
    else /* panel by panel */
        for (int j = 0; j < npan; j++)
            agmm_wq_panel_avx512vnni(w, panel + (size_t)j * ps, rows, a, lda,
                                     qsum, sa,
                                     out + (size_t)j * rows * AGMM_WQ_NP);
}

/* quantize_rows (gemm.c) 16 elements at a time: the same division
 * (vdivps, correctly rounded as the scalar one), rounding to nearest even
 * (vrndscaleps imm 0 = nearbyintf in the default mode), clamp, and int32
 * sums, so the same bytes and sums. A group is a multiple of 4 elements;
 * its last vector is masked. Each store of 16 bytes at element i lands
 * on floats i / 4 .. i / 4 + 3, already loaded. */
TARGET void agmm_wq_quantize_avx512vnni(const struct agmm_wq *w, int rows,
                                        float *as, int64_t kp, float *qsum,
                                        float *sa)
{
    /* int4: bytes (0, 2, 1, 3) of each dword (the weight's quad order) */
    const __m128i swap =
        _mm_setr_epi8(0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15);
    const __m512 lim = _mm512_set1_ps(127.0f), nlim = _mm512_set1_ps(-127.0f);
    const __m512 fmax = _mm512_set1_ps(FLT_MAX);
    const int64_t gl = w->gq * 4; /* a group's elements */
    for (int r = 0; r < rows; r++) {
        const float *src = as + r * kp;
        int8_t *dst = (int8_t *)(void *)as + r * kp;
        __m512 amax = _mm512_setzero_ps();
        __mmask16 bad = 0;
        for (int64_t i = 0; i < kp; i += 16) {
            __mmask16 m =
                kp - i >= 16 ? 0xffff : (__mmask16)((1u << (kp - i)) - 1);
            __m512 x = _mm512_abs_ps(_mm512_maskz_loadu_ps(m, src + i));
            bad |= _mm512_mask_cmp_ps_mask(m, x, fmax, _CMP_NLE_UQ);
            amax = _mm512_max_ps(x, amax);
        }
        float mx = _mm512_reduce_max_ps(amax);
        float s = bad ? NAN : mx > 0 ? mx / 127.0f : 1.0f;
        sa[r] = s;
        if (bad) {
            memset(dst, 0, (size_t)kp);
            for (int64_t g = 0; g < w->ng; g++)
                qsum[r * w->ng + g] = 0;
            continue;
        }
        const __m512 vs = _mm512_set1_ps(s);
        for (int64_t g = 0; g < w->ng; g++) {
            __m512i sum = _mm512_setzero_si512();
            for (int64_t i = g * gl; i < (g + 1) * gl; i += 16) {
                int64_t left = (g + 1) * gl - i;
                __mmask16 m =
                    left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
                __m512 q = _mm512_roundscale_ps(
                    _mm512_div_ps(_mm512_maskz_loadu_ps(m, src + i), vs),
                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                q = _mm512_min_ps(_mm512_max_ps(q, nlim), lim);
                __m512i qi = _mm512_cvtps_epi32(q);
                sum = _mm512_add_epi32(sum, qi);
                __m128i b = _mm512_cvtepi32_epi8(qi);
                if (w->bits == 4) b = _mm_shuffle_epi8(b, swap);
                _mm_mask_storeu_epi8(dst + i, m, b);
            }
            qsum[r * w->ng + g] = (float)_mm512_reduce_add_epi32(sum);
        }
    }
}
#endif
