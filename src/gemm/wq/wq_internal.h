/*
 * The packed layout of agmm_wq_t and the kernel interface, shared by the
 * files of src/gemm/wq/ only (wq.h is what the rest of agmm includes).
 *
 * Packed layout: the columns in panels of AGMM_WQ_NP = 16 (the last one
 * padded with columns of scale 0), each panel `panel_bytes` long
 * (a multiple of 64), one after the other from `data` (64-byte aligned).
 * A panel holds the groups in order; a group block is
 *   float scale[16]   the columns' scales (bf16 scales widened, exact),
 *   float zero[16]    the value subtracted from the stored u (below),
 *   then quads(g) quads of 4 rows of k:
 *     int4: 32 bytes a quad, in octets: quads 2o and 2o+1 (rows 8o..
 *           8o+7 of the group) are 64 bytes whose dword j holds column
 *           j's 8 rows, row r at bits 16 (r % 2) + 4 (r / 2) (agmm_wq_
 *           nib_shift): so (dword >> 4 i) & 0x000f000f is the pair of
 *           rows (2i, 2i+1) of every column, the bf16 pair the dot kernel
 *           multiplies, with shifts and ands only; a group has an even
 *           number of quads (rows padded to a multiple of 8);
 *     int8: 64 bytes; byte 16 i + j holds row 4q+i of column j.
 * The stored u: int4 symmetric u = q + 8 (0..15, zero 8), int4 and int8
 * asymmetric u = q (zero = the zero point), int8 symmetric u = q as
 * int8_t (zero 0). Rows past a group's end (its last quad) hold u = 0.
 * A group has quads(g) = ceil(rows(g) / 4) quads (int8) or 2 ceil(rows(g)
 * / 8) (int4), rows(g) = G but for the last; in the rows of A the kernels
 * read (agmm_wq_gemm's scratch), group g starts at g * 4 * gq (gq = 2
 * ceil(G / 8), every format), padded with zeros.
 *
 * What a kernel computes for group g, row r and column j:
 *   acc_g = sum_i a[r][i] * u_i (fp32), then
 *   out += scale_j * (acc_g - zero_j * asum[r][g])   (zero_j = 0: no term)
 * with asum[r][g] the fp32 sum of a[r] over the group's rows: the zero
 * point is taken out of the inner loop (check/wq_ref.h's bound covers it).
 * A kernel may multiply int4 values as u + AGMM_WQ_U_OFFSET and take
 * the offset off with the zero term (zero_j + offset): the dot kernel
 * does, so a nibble becomes its bf16 with an or (bf16(128 + u) is
 * 0x4300 | u, exact); the bound covers the larger sums.
 */
#ifndef AGMM_GEMM_WQ_INTERNAL_H
#define AGMM_GEMM_WQ_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "gemm/wq/wq.h"

#define AGMM_WQ_NP         16 /* columns per panel */
#define AGMM_WQ_RB         4  /* rows a kernel call does at most */
#define AGMM_WQ_RB_DOT     32 /* rows the bf16 dot kernel's call does at most */
#define AGMM_WQ_PANELS_DOT 4  /* panels its multi-panel call does at most */
#define AGMM_WQ_RB_VNNI    8  /* rows the W4A8 kernel's call does at most */
#define AGMM_WQ_U_OFFSET   128 /* see "What a kernel computes" */

struct agmm_wq {
    int64_t k, n, group; /* group: the effective G (k when 0 was given) */
    int bits, symmetric;
    int has_zero;       /* a zero term (int4, or asymmetric) */
    int64_t ng;         /* groups: ceil(k / group) */
    int64_t gq;         /* A's quads a group: 2 ceil(group / 8) */
    int64_t panels;     /* ceil(n / 16) */
    size_t quad_bytes;  /* 32 (int4) or 64 (int8) */
    size_t panel_bytes; /* one panel, a multiple of 64 */
    uint8_t *data;      /* panels x panel_bytes, 64-byte aligned; owned */
};

/* The quads of group g. */
static inline int64_t agmm_wq_quads(const struct agmm_wq *w, int64_t g)
{
    int64_t rows = g + 1 < w->ng ? w->group : w->k - g * w->group;
    return w->bits == 4 ? (rows + 7) / 8 * 2 : (rows + 3) / 4;
}

/* int4: the bit of row r (0..7) of an octet in its column's dword. */
static inline int agmm_wq_nib_shift(int r)
{
    return 16 * (r % 2) + 4 * (r / 2);
}

/* One panel against `rows` (1..AGMM_WQ_RB) rows of A:
 * a: the rows in the scratch layout (row stride lda), asum: [rows][ng],
 * out: [rows][16], overwritten. */
typedef void (*agmm_wq_panel_fn)(const struct agmm_wq *w, const uint8_t *panel,
                                 int rows, const float *a, int64_t lda,
                                 const float *asum, float *out);

void agmm_wq_panel_portable(const struct agmm_wq *w, const uint8_t *panel,
                            int rows, const float *a, int64_t lda,
                            const float *asum, float *out);

/* The A8 kernels' portable loop (kern_a8_portable.c): as
 * agmm_wq_panel_avx512vnni below, the same bits on any CPU. */
void agmm_wq_panel_portable_a8(const struct agmm_wq *w, const uint8_t *panel,
                               int rows, const int8_t *a, int64_t lda,
                               const float *qsum, const float *sa, float *out);

#if defined(__x86_64__)
void agmm_wq_panel_avx2(const struct agmm_wq *w, const uint8_t *panel, int rows,
                        const float *a, int64_t lda, const float *asum,
                        float *out);
void agmm_wq_panel_avx512(const struct agmm_wq *w, const uint8_t *panel,
                          int rows, const float *a, int64_t lda,
                          const float *asum, float *out);
/* The dot kernel (kern_avx512bf16.c): as agmm_wq_panel_fn, but 1..
 * AGMM_WQ_RB_DOT rows, and A's rows in the scratch layout are bf16 (the
 * same element positions, row stride lda in elements), none subnormal. */
void agmm_wq_panel_avx512bf16(const struct agmm_wq *w, const uint8_t *panel,
                              int rows, const uint16_t *a, int64_t lda,
                              const float *asum, float *out);
/* The same over npan (1..AGMM_WQ_PANELS_DOT) consecutive panels, out
 * [npan][rows][16], each panel's bits agmm_wq_panel_avx512bf16's: int4
 * runs panels side by side at any rows (A's pairs broadcast once for
 * them), int8 2 panels at one row (8 chains: at one row 4 leave the core
 * waiting on the instruction's latency), any other case panel by panel. */
void agmm_wq_panels_avx512bf16(const struct agmm_wq *w, const uint8_t *panel,
                               int npan, int rows, const uint16_t *a,
                               int64_t lda, const float *asum, float *out);
/* The W4A8 kernel (kern_avx512vnni.c, the A8 variants): 1..AGMM_WQ_RB_VNNI rows
 * of A quantized to int8 (the scratch layout's positions, row stride lda
 * bytes), qsum [rows][ng] their groups' sums of a_q (exact), sa [rows]
 * their scales. */
void agmm_wq_panel_avx512vnni(const struct agmm_wq *w, const uint8_t *panel,
                              int rows, const int8_t *a, int64_t lda,
                              const float *qsum, const float *sa, float *out);
/* gemm.c's quantize_rows with AVX-512 (its bytes, sums and scales):
 * `rows` fp32 rows of kp elements at as quantized in place to int8,
 * qsum [rows][ng] and sa [rows] written. */
void agmm_wq_quantize_avx512vnni(const struct agmm_wq *w, int rows, float *as,
                                 int64_t kp, float *qsum, float *sa);
/* The same over npan (1..4) consecutive panels, out [npan][rows][16],
 * each panel's bits agmm_wq_panel_avx512vnni's: 4 panels side by side at
 * one row, 2 at two rows, any other case panel by panel. */
void agmm_wq_panels_avx512vnni(const struct agmm_wq *w, const uint8_t *panel,
                               int npan, int rows, const int8_t *a, int64_t lda,
                               const float *qsum, const float *sa, float *out);
#endif

#endif /* AGMM_GEMM_WQ_INTERNAL_H */
