/* The AVX-512 BF16 dot kernel (wq_internal.h): one panel of 16 columns
 * is one zmm of fp32 sums, multiplied with VDPBF16PS, which adds two
 * products (a pair of rows of k) into each fp32 lane: half the multiply
 * instructions of the FMA kernel (kern_avx512.c) for the same work.
 *
 * Operands, exact: A's rows are bf16 (the scratch holds them as bf16,
 * copied from a bf16 A: gemm.c), the weight's stored u (128 + 0..15,
 * 0..255 or -128..127: at most 8 significant bits) is exact in bf16, and the
 * product of two bf16 is exact in fp32; VDPBF16PS rounds each of its two
 * additions to fp32 (nearest even), so a group's sum is an fp32 sum of
 * its products in some order, as wq_internal.h's "What a kernel computes"
 * and check/wq_ref.h's bound take. The instruction reads subnormal bf16
 * inputs as 0 and flushes subnormal results to 0: gemm.c never hands
 * this kernel rows with a subnormal value (they go to the FMA kernel);
 * results so small that the sums underflow are outside the bound anyway.
 *
 * The weight turned into bf16 pairs in registers, per quad of 4 rows:
 *   int4: per octet (two quads, 64 bytes: wq_internal.h), pair i of
 *         every column is (dword >> 4i) & 0x000f000f; or'ed with
 *         0x43004300 each nibble u becomes bf16(128 + u) (exact: 128..143
 *         need 8 significant bits), so the group's sum is of a (u + 128)
 *         and the zero term takes off (zero + 128) x asum: 7 shift or
 *         logic instructions for four vectors of pairs, no shuffle (the
 *         lookup of bf16(u) by vpermw measured 2.4x slower at one row);
 *   int8: rows 4q+i are 16 bytes each: widened and converted to fp32
 *         (exact), whose high 16 bits are the bf16; the even row's moved
 *         down and merged with the odd row's (shift, ternary logic).
 * A's pair (a[4q], a[4q+1]) is one 32-bit broadcast from the scratch.
 * int4 (int4_block): per panel and row 2 chains of sums (an octet's pairs
 * 0 and 2 into one, 1 and 3 into the other), whatever the rows and the
 * panels beside it, so a row's bits do not depend on the rows or columns
 * it is computed with (a plan's fused and baseline calls, tiles coalesced
 * in any order). Several panels a call (agmm_wq_panels_avx512bf16): one
 * row runs 4 panels side by side (8 chains hide the instruction's
 * latency), more rows blocks of 4 rows x 2 panels (16 sums), each A pair
 * broadcast into a register once for both panels and each octet's pair
 * vectors made once for the 4 rows; each block converts the weight again
 * (7 cheap instructions an octet). Measured on Zen 5 from DRAM (K = N =
 * 4096, one thread): 1.2-1.35x panel_rows' 4 chains a row at 2-32 rows,
 * 0.75-0.84 of VDPBF16PS at 8-32 rows, equal at one row.
 * int8 (panel_rows): per row 4 chains (two quads at a time: the rows 0/1
 * and 2/3 pairs of the even and of the odd quad), the same 4 whatever the
 * rows; up to 4 rows at a time in registers (16 sums, 4 weight vectors
 * and the constants fill the 32), more in blocks of 4 converting again;
 * at one row 2 panels side by side (8 chains: 1.3-1.5x from DRAM); a
 * call of more than 8 rows (up to AGMM_WQ_RB_DOT, 32) converts each quad
 * once into an L1 buffer that its blocks of 4 rows read (panel_many),
 * with the same sums in the same order.
 * At each group's end the chains are added, the zero term taken off and
 * the scale applied into `out` (the running total). The panels are
 * streamed front to back with a software prefetch 4 KiB ahead into L2
 * (prefetcht2; 1 KiB into L1 measured 1.1-1.3x slower at 2-8 rows from
 * DRAM on Zen 5); int4's last 4 KiB of a panel prefetch the start of the
 * panel its next block streams (int4_block: 0.84-0.87x the time at one
 * row from DRAM, bench/wq_decode.c, 8 pairs). PF_BYTES and PF_HINT may be
 * given at compile time (-D) to measure others.
 *
 * Compiled for AVX-512F/BW/BF16 by function attribute; called only when
 * the CPU has AVX512_BF16 (common/cpu.h: cpuid leaf 7, subleaf 1, EAX bit
 * 5, read once). */
#include <string.h>

#include "gemm/wq/wq_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define TARGET __attribute__((target("avx512f,avx512bw,avx512bf16")))
#ifndef PF_BYTES
#define PF_BYTES 4096
#endif
#ifndef PF_HINT
#define PF_HINT _MM_HINT_T2
#endif

typedef struct consts {
    __m512i nib;  /* 0x000f000f */
    __m512i off;  /* 0x43004300: bf16(128) in both words */
    __m512i high; /* 0xffff0000 */
} consts_t;

/* An int4 octet's four bf16-pair vectors, v[i] the rows (2i, 2i+1) of
 * every column as bf16(128 + u) (wq_internal.h): (x >> 4i) & 0x000f000f
 * | 0x43004300, one shift and one ternary logic op each. */
TARGET static inline __attribute__((always_inline)) void
oct_pairs(const uint8_t *p, const consts_t *k, __m512i *v)
{
    __m512i x = _mm512_loadu_si512((const void *)p);
    v[0] = _mm512_ternarylogic_epi32(x, k->nib, k->off, 0xEA);
    v[1] = _mm512_ternarylogic_epi32(_mm512_srli_epi32(x, 4), k->nib, k->off,
                                     0xEA);
    v[2] = _mm512_ternarylogic_epi32(_mm512_srli_epi32(x, 8), k->nib, k->off,
                                     0xEA);
    v[3] = _mm512_ternarylogic_epi32(_mm512_srli_epi32(x, 12), k->nib, k->off,
                                     0xEA);
}

/* An int8 quad's two bf16-pair vectors: rows (4q+0, 4q+1) and (4q+2,
 * 4q+3). */
TARGET static inline __attribute__((always_inline)) void
quad_pairs(const uint8_t *p, int sgn, const consts_t *k, __m512i *w01,
           __m512i *w23)
{
    __m512 f[4];
    for (int i = 0; i < 4; i++) {
        __m128i b = _mm_loadu_si128((const __m128i *)(p + 16 * i));
        f[i] = _mm512_cvtepi32_ps(sgn ? _mm512_cvtepi8_epi32(b)
                                      : _mm512_cvtepu8_epi32(b));
    }
    /* (even >> 16) | (odd & 0xffff0000) */
    *w01 = _mm512_ternarylogic_epi32(
        _mm512_srli_epi32(_mm512_castps_si512(f[0]), 16),
        _mm512_castps_si512(f[1]), k->high, 0xF8);
    *w23 = _mm512_ternarylogic_epi32(
        _mm512_srli_epi32(_mm512_castps_si512(f[2]), 16),
        _mm512_castps_si512(f[3]), k->high, 0xF8);
}

/* acc += the dot of A's pair at a (broadcast) with w. The broadcast is
 * the instruction's own memory operand ({1to16}, done by the load unit),
 * as the FMA kernel's vfmadd231ps gets from the compiler; GCC 12 does not
 * fold _mm512_set1_epi32 into VDPBF16PS, and a separate vpbroadcastd per
 * dot measured ~2x slower (int4, 4 rows). AT&T syntax (agmm's default). */
TARGET static inline __attribute__((always_inline)) __m512
dot_pair(__m512 acc, const uint16_t *a, __m512i w)
{
    __asm__("vdpbf16ps %2%{1to16%}, %1, %0"
            : "+v"(acc)
            : "v"(w), "m"(*(const uint32_t *)(const void *)a));
    return acc;
}

/* int8: npan panels (pstride bytes apart) against `rows` rows: per panel and
 * row the same 4 chains in the same order whatever npan (so the bits do
 * not depend on it); npan x rows <= 4. out: [npan][rows][16]. Several
 * panels at one row give the core 4 x npan independent chains and
 * npan streams of the weight in flight. */
TARGET static inline __attribute__((always_inline)) void
panel_rows(const struct agmm_wq *w, const uint8_t *panel, size_t pstride,
           const int npan, const int rows, const uint16_t *a, int64_t lda,
           const float *asum, float *out)
{
    enum { NC = 4 }; /* chains per row */
    consts_t k;
    k.nib = _mm512_set1_epi32(0x000f000f);
    k.off = _mm512_set1_epi32(0x43004300);
    k.high = _mm512_set1_epi32((int)0xffff0000u);
    for (int r = 0; r < npan * rows; r++)
        _mm512_storeu_ps(out + r * AGMM_WQ_NP, _mm512_setzero_ps());
    const uint8_t *p = panel;     /* panel 0's; panel j's is p + j * pstride */
    const int sgn = w->symmetric; /* int8 only (int4: int4_block) */
    const size_t qb = w->quad_bytes;
    for (int64_t g = 0; g < w->ng; g++) {
        __m512 s[4], z[4];
        for (int j = 0; j < npan; j++) {
            const float *pj = (const float *)(const void *)(p + j * pstride);
            s[j] = _mm512_loadu_ps(pj);
            z[j] = _mm512_loadu_ps(pj + AGMM_WQ_NP);
        }
        p += 2 * AGMM_WQ_NP * sizeof(float);
        int64_t quads = agmm_wq_quads(w, g);
        __m512 acc[4][NC];
        for (int r = 0; r < npan * rows; r++)
            for (int c = 0; c < NC; c++)
                acc[r][c] = _mm512_setzero_ps();
        const uint16_t *ag = a + g * w->gq * 4;
        int64_t qd = 0;
        for (; qd + 2 <= quads; qd += 2) {
            for (int j = 0; j < npan; j++) {
                const uint8_t *pj = p + j * pstride;
                _mm_prefetch((const char *)pj + PF_BYTES, PF_HINT);
                _mm_prefetch((const char *)pj + PF_BYTES + 64, PF_HINT);
                __m512i v[4];
                quad_pairs(pj, sgn, &k, &v[0], &v[1]);
                quad_pairs(pj + qb, sgn, &k, &v[2], &v[3]);
                for (int r = 0; r < rows; r++) {
                    const uint16_t *ar = ag + r * lda + qd * 4;
                    for (int i = 0; i < 4; i++)
                        acc[j * rows + r][i] =
                            dot_pair(acc[j * rows + r][i], ar + 2 * i, v[i]);
                }
            }
            p += 2 * qb;
        }
        if (qd < quads) { /* an odd last quad */
            for (int j = 0; j < npan; j++) {
                const uint8_t *pj = p + j * pstride;
                _mm_prefetch((const char *)pj + PF_BYTES, PF_HINT);
                __m512i v[2];
                quad_pairs(pj, sgn, &k, &v[0], &v[1]);
                for (int r = 0; r < rows; r++) {
                    const uint16_t *ar = ag + r * lda + qd * 4;
                    for (int i = 0; i < 2; i++)
                        acc[j * rows + r][i] =
                            dot_pair(acc[j * rows + r][i], ar + 2 * i, v[i]);
                }
            }
            p += qb;
        }
        for (int j = 0; j < npan; j++)
            for (int r = 0; r < rows; r++) {
                __m512 *ac = acc[j * rows + r];
                __m512 t = _mm512_add_ps(_mm512_add_ps(ac[0], ac[1]),
                                         _mm512_add_ps(ac[2], ac[3]));
                if (w->has_zero)
                    t = _mm512_fnmadd_ps(
                        z[j], _mm512_set1_ps(asum[r * w->ng + g]), t);
                float *o = out + (j * rows + r) * AGMM_WQ_NP;
                _mm512_storeu_ps(o,
                                 _mm512_fmadd_ps(s[j], t, _mm512_loadu_ps(o)));
            }
    }
}

/* The dots of `rows` (1..4) rows over nq converted quads wv (2 vectors
 * a quad), their 4 sums a row carried in accm: panel_rows' chains and
 * order exactly (quads in pairs from the group's start, an odd last one
 * into chains 0 and 1), so the bits are panel_rows'. */
TARGET static inline __attribute__((always_inline)) void
block_rows(const __m512i *wv, int64_t nq, const int rows, const uint16_t *ag,
           int64_t lda, __m512 (*accm)[4])
{
    __m512 acc[4][4];
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < 4; c++)
            acc[r][c] = accm[r][c];
    int64_t q = 0;
#pragma GCC unroll 1
    for (; q + 2 <= nq; q += 2) {
        /* In registers once for the block's rows: GCC would reload them
         * for every dot, twice the loads the load unit can issue. */
        __m512i v0 = wv[2 * q], v1 = wv[2 * q + 1], v2 = wv[2 * q + 2],
                v3 = wv[2 * q + 3];
        __asm__("" : "+v"(v0), "+v"(v1), "+v"(v2), "+v"(v3));
        const __m512i v[4] = {v0, v1, v2, v3};
        for (int r = 0; r < rows; r++) {
            const uint16_t *ar = ag + r * lda + q * 4;
            for (int i = 0; i < 4; i++)
                acc[r][i] = dot_pair(acc[r][i], ar + 2 * i, v[i]);
        }
    }
    if (q < nq)
        for (int r = 0; r < rows; r++) {
            const uint16_t *ar = ag + r * lda + q * 4;
            for (int i = 0; i < 2; i++)
                acc[r][i] = dot_pair(acc[r][i], ar + 2 * i, wv[2 * q + i]);
        }
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < 4; c++)
            accm[r][c] = acc[r][c];
}

/* int8, more than 8 rows: each group's quads are converted once, QCHUNK
 * at a time, into an L1 buffer (4 KiB) that every block of 4 rows then reads,
 * instead of converting them again per block (the conversion is as many
 * instructions as the dots of 4 rows). The sums of all rows live in accm
 * between chunks. Same arithmetic as panel_rows, row by row. Measured
 * (bench/wq_decode.c, K = N = 4096, shared machine): int8 at M 16 / 32
 * 4.2-4.4 / 7.4 ms against 4.7 / 8.4-8.6 converting per block, and at
 * M 8 slower (3.2 against 2.8-2.9 ms): hence 5..8 rows as two blocks. */
#define QCHUNK 32 /* even: quad pairs start at the group's start */
TARGET static void panel_many(const struct agmm_wq *w, const uint8_t *panel,
                              int rows, const uint16_t *a, int64_t lda,
                              const float *asum, float *out)
{
    _Alignas(64) __m512i wbuf[2 * QCHUNK];
    _Alignas(64) __m512 abuf[AGMM_WQ_RB_DOT][4];
    /* Through opaque pointers: GCC would otherwise unroll the quad loops
     * whole and keep the buffer in registers and spills (measured 1.4x
     * slower than per-block conversion). */
    __m512i *wv = wbuf;
    __m512(*accm)[4] = abuf;
    __asm__("" : "+r"(wv), "+r"(accm));
    consts_t k;
    k.nib = _mm512_set1_epi32(0x000f000f);
    k.off = _mm512_set1_epi32(0x43004300);
    k.high = _mm512_set1_epi32((int)0xffff0000u);
    for (int r = 0; r < rows; r++)
        _mm512_storeu_ps(out + r * AGMM_WQ_NP, _mm512_setzero_ps());
    const uint8_t *p = panel;
    const int sgn = w->symmetric;
    const size_t qb = w->quad_bytes;
    for (int64_t g = 0; g < w->ng; g++) {
        __m512 s = _mm512_loadu_ps((const float *)p);
        __m512 z = _mm512_loadu_ps((const float *)p + AGMM_WQ_NP);
        p += 2 * AGMM_WQ_NP * sizeof(float);
        int64_t quads = agmm_wq_quads(w, g);
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < 4; c++)
                accm[r][c] = _mm512_setzero_ps();
        const uint16_t *ag = a + g * w->gq * 4;
        for (int64_t q0 = 0; q0 < quads; q0 += QCHUNK) {
            int64_t nq = quads - q0 < QCHUNK ? quads - q0 : QCHUNK;
#pragma GCC unroll 2
            for (int64_t q = 0; q < nq; q++) {
                _mm_prefetch((const char *)p + PF_BYTES, PF_HINT);
                _mm_prefetch((const char *)p + PF_BYTES + 32, PF_HINT);
                quad_pairs(p, sgn, &k, &wv[2 * q], &wv[2 * q + 1]);
                p += qb;
            }
            for (int rb = 0; rb < rows; rb += 4) {
                const uint16_t *ab = ag + rb * lda + q0 * 4;
                switch (rows - rb) {
                case 1:
                    block_rows(wv, nq, 1, ab, lda, accm + rb);
                    break;
                case 2:
                    block_rows(wv, nq, 2, ab, lda, accm + rb);
                    break;
                case 3:
                    block_rows(wv, nq, 3, ab, lda, accm + rb);
                    break;
                default:
                    block_rows(wv, nq, 4, ab, lda, accm + rb);
                    break;
                }
            }
        }
        for (int r = 0; r < rows; r++) {
            __m512 t = _mm512_add_ps(_mm512_add_ps(accm[r][0], accm[r][1]),
                                     _mm512_add_ps(accm[r][2], accm[r][3]));
            if (w->has_zero)
                t = _mm512_fnmadd_ps(z, _mm512_set1_ps(asum[r * w->ng + g]), t);
            float *o = out + r * AGMM_WQ_NP;
            _mm512_storeu_ps(o, _mm512_fmadd_ps(s, t, _mm512_loadu_ps(o)));
        }
    }
}

TARGET static void int4_panels(const struct agmm_wq *w, const uint8_t *panel,
                               int npan, int rows, const uint16_t *a,
                               int64_t lda, const float *asum, float *out);

TARGET void agmm_wq_panel_avx512bf16(const struct agmm_wq *w,
                                     const uint8_t *panel, int rows,
                                     const uint16_t *a, int64_t lda,
                                     const float *asum, float *out)
{
    if (w->bits == 4) {
        int4_panels(w, panel, 1, rows, a, lda, asum, out);
        return;
    }
    if (rows > 8) {
        panel_many(w, panel, rows, a, lda, asum, out);
        return;
    }
    if (rows > 4) { /* blocks of 4: measured faster than the buffer */
        panel_rows(w, panel, 0, 1, 4, a, lda, asum, out);
        agmm_wq_panel_avx512bf16(w, panel, rows - 4, a + 4 * lda, lda,
                                 asum + 4 * w->ng, out + 4 * AGMM_WQ_NP);
        return;
    }
    switch (rows) {
    case 1:
        panel_rows(w, panel, 0, 1, 1, a, lda, asum, out);
        break;
    case 2:
        panel_rows(w, panel, 0, 1, 2, a, lda, asum, out);
        break;
    case 3:
        panel_rows(w, panel, 0, 1, 3, a, lda, asum, out);
        break;
    default:
        panel_rows(w, panel, 0, 1, 4, a, lda, asum, out);
        break;
    }
}
/* Where int4_block prefetches for panel 0 at p (panel j's: + j * pstride):
 * PF_BYTES ahead, except within a panel's last PF_BYTES, where it goes
 * pf_skip = (npan - 1) panels further, to the start of the panel npan on
 * (the next block's panel j, which the caller streams next: panels are
 * consecutive in w->data; with more than 4 rows the same panels come
 * again first, from L2) rather than into panel j + 1, which this block
 * is streaming already. Prefetches do not fault: past the weight's end
 * they are dropped. */
static inline const uint8_t *pf_at(const struct agmm_wq *w,
                                   const uint8_t *panel, const uint8_t *p,
                                   size_t pf_skip)
{
    size_t ahead = (size_t)(p - panel) + PF_BYTES;
    return p + PF_BYTES + (ahead >= w->panel_bytes ? pf_skip : 0);
}

/* int4, any rows: npan panels (pstride bytes apart) against `rows` rows
 * (npan x rows x 2 sums in registers, <= 16), out [npan][rows][16]. Per
 * panel and row 2 chains: pairs 0 and 2 of an octet into the first, 1
 * and 3 into the second, whatever npan and rows (so a row's bits do not
 * depend on them). A's pair is broadcast once into a register for the
 * npan panels, each octet's pair vectors made once for the rows: at 4
 * rows x 2 panels a load feeds 1.8 VDPBF16PS (the memory-operand
 * broadcast of panel_rows: 1), the limit on a core that issues two of
 * them a cycle. */
TARGET static inline __attribute__((always_inline)) void
int4_block(const struct agmm_wq *w, const uint8_t *panel, size_t pstride,
           const int npan, const int rows, const uint16_t *a, int64_t lda,
           const float *asum, float *out)
{
    consts_t k;
    k.nib = _mm512_set1_epi32(0x000f000f);
    k.off = _mm512_set1_epi32(0x43004300);
    const uint8_t *p = panel; /* panel 0's; panel j's is p + j * pstride */
    const size_t pf_skip = (size_t)(npan - 1) * pstride; /* pf_at's */
    for (int64_t g = 0; g < w->ng; g++) {
        const uint8_t *head = p; /* the group's scales and zeros */
        p += 2 * AGMM_WQ_NP * sizeof(float);
        const int64_t octs = agmm_wq_quads(w, g) / 2;
        __m512 acc[4][4][2]; /* [panel][row][chain] */
        for (int j = 0; j < npan; j++)
            for (int r = 0; r < rows; r++)
                acc[j][r][0] = acc[j][r][1] = _mm512_setzero_ps();
        const uint16_t *ag = a + g * w->gq * 4;
        for (int64_t o = 0; rows == 1 && o < octs; o++, p += 64) {
            /* one row: panel by panel, A's pair from memory (loads are
             * not the limit here; 4 x 4 pair vectors would spill) */
            const uint16_t *ar = ag + o * 8;
            const uint8_t *pf = pf_at(w, panel, p, pf_skip);
            for (int j = 0; j < npan; j++) {
                __m512i v[4];
                _mm_prefetch((const char *)pf + j * pstride, PF_HINT);
                oct_pairs(p + j * pstride, &k, v);
                for (int i = 0; i < 4; i++)
                    acc[j][0][i & 1] =
                        dot_pair(acc[j][0][i & 1], ar + 2 * i, v[i]);
            }
        }
        for (int64_t o = 0; rows > 1 && o < octs; o++, p += 64) {
            __m512i v[4][4];
            const uint8_t *pf = pf_at(w, panel, p, pf_skip);
            for (int j = 0; j < npan; j++) {
                _mm_prefetch((const char *)pf + j * pstride, PF_HINT);
                oct_pairs(p + j * pstride, &k, v[j]);
            }
            for (int r = 0; r < rows; r++) {
                const uint16_t *ar = ag + r * lda + o * 8;
                for (int i = 0; i < 4; i++) {
                    int32_t pr;
                    memcpy(&pr, ar + 2 * i, sizeof pr);
                    __m512bh b = (__m512bh)_mm512_set1_epi32(pr);
                    for (int j = 0; j < npan; j++)
                        acc[j][r][i & 1] = _mm512_dpbf16_ps(acc[j][r][i & 1], b,
                                                            (__m512bh)v[j][i]);
                }
            }
        }
        for (int j = 0; j < npan; j++) {
            const float *hj = (const float *)(const void *)(head + j * pstride);
            __m512 sc = _mm512_loadu_ps(hj);
            /* the values are u + 128 */
            __m512 z = _mm512_add_ps(_mm512_loadu_ps(hj + AGMM_WQ_NP),
                                     _mm512_set1_ps((float)AGMM_WQ_U_OFFSET));
            for (int r = 0; r < rows; r++) {
                __m512 t = _mm512_add_ps(acc[j][r][0], acc[j][r][1]);
                if (w->has_zero)
                    t = _mm512_fnmadd_ps(z, _mm512_set1_ps(asum[r * w->ng + g]),
                                         t);
                float *o = out + (j * rows + r) * AGMM_WQ_NP;
                __m512 prev = g ? _mm512_loadu_ps(o) : _mm512_setzero_ps();
                _mm512_storeu_ps(o, _mm512_fmadd_ps(sc, t, prev));
            }
        }
    }
}

/* int4: rows in blocks of 4 over pairs of panels (one row: 4 panels). */
TARGET static void int4_panels(const struct agmm_wq *w, const uint8_t *panel,
                               int npan, int rows, const uint16_t *a,
                               int64_t lda, const float *asum, float *out)
{
    const size_t ps = w->panel_bytes;
    for (int j0 = 0; j0 < npan;) {
        int left = npan - j0;
        const uint8_t *pj = panel + (size_t)j0 * ps;
        if (rows == 1 && left >= 4) {
            int4_block(w, pj, ps, 4, 1, a, lda, asum, out + j0 * AGMM_WQ_NP);
            j0 += 4;
            continue;
        }
        int np = left >= 2 ? 2 : 1;
        for (int rb = 0; rb < rows; rb += 4) {
            int nr = rows - rb < 4 ? rows - rb : 4;
            const uint16_t *ab = a + rb * lda;
            const float *sb = asum + rb * w->ng;
            /* out [npan][rows][16]: block (j0.., rb..) written panel by
             * panel through a [np][nr][16] view */
            float tmp[2 * 4 * AGMM_WQ_NP];
#define INT4_CASE(NP, NR) int4_block(w, pj, ps, NP, NR, ab, lda, sb, tmp)
            if (np == 2) {
                switch (nr) {
                case 1:
                    INT4_CASE(2, 1);
                    break;
                case 2:
                    INT4_CASE(2, 2);
                    break;
                case 3:
                    INT4_CASE(2, 3);
                    break;
                default:
                    INT4_CASE(2, 4);
                    break;
                }
            } else {
                switch (nr) {
                case 1:
                    INT4_CASE(1, 1);
                    break;
                case 2:
                    INT4_CASE(1, 2);
                    break;
                case 3:
                    INT4_CASE(1, 3);
                    break;
                default:
                    INT4_CASE(1, 4);
                    break;
                }
            }
#undef INT4_CASE
            for (int j = 0; j < np; j++)
                memcpy(out + ((j0 + j) * rows + rb) * AGMM_WQ_NP,
                       tmp + j * nr * AGMM_WQ_NP,
                       sizeof(float) * (size_t)nr * AGMM_WQ_NP);
        }
        j0 += np;
    }
}

TARGET void agmm_wq_panels_avx512bf16(const struct agmm_wq *w,
                                      const uint8_t *panel, int npan, int rows,
                                      const uint16_t *a, int64_t lda,
                                      const float *asum, float *out)
{
    if (w->bits == 4) {
        int4_panels(w, panel, npan, rows, a, lda, asum, out);
        return;
    }
    const size_t ps = w->panel_bytes;
    if (npan == 2 && rows == 1) {
        panel_rows(w, panel, ps, 2, 1, a, lda, asum, out);
        return;
    }
    for (int j = 0; j < npan; j++)
        agmm_wq_panel_avx512bf16(w, panel + j * ps, rows, a, lda, asum,
                                 out + j * rows * AGMM_WQ_NP);
}
#endif
