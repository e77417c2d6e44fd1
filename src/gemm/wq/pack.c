/* agmm_wq_pack / agmm_wq_free (wq.h): the plain layout copied once into
 * the packed one (wq_internal.h). Single-threaded; the packed weight is
 * owned by the caller until agmm_wq_free. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "gemm/convert.h"
#include "gemm/wq/wq_internal.h"

static agmm_status_t pack_check(const agmm_wq_desc_t *d)
{
    if (!d || !d->q || !d->scales || (!d->symmetric && !d->zeros))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "agmm_wq_pack: a null description, values, scales "
                          "or (asymmetric) zero points");
    if (d->k < 1 || d->n < 1 || d->k > ((int64_t)1 << 40) / d->n)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "agmm_wq_pack: bad shape k %lld n %lld",
                          (long long)d->k, (long long)d->n);
    if (d->ld != 0 && d->ld < d->n)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "agmm_wq_pack: row stride %lld < n %lld",
                          (long long)d->ld, (long long)d->n);
    if (d->bits != 4 && d->bits != 8)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "agmm_wq_pack: bits %d (4 or 8)", d->bits);
    int64_t g = d->group;
    if (g != 0 && g != 32 && g != 64 && g != 128 && g != d->k)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "agmm_wq_pack: group %lld (32, 64, 128, or 0 or k)",
                          (long long)g);
    return AGMM_OK;
}

/* The row stride of the description's arrays. */
static int64_t ld_of(const agmm_wq_desc_t *d)
{
    return d->ld > 0 ? d->ld : d->n;
}

static float scale_at(const agmm_wq_desc_t *d, int64_t idx)
{
    if (d->scales_bf16)
        return agmm_bf16_to_f32(((const uint16_t *)d->scales)[idx]);
    return ((const float *)d->scales)[idx];
}

/* The stored u of (row, col) (wq_internal.h). */
static uint8_t u_at(const agmm_wq_desc_t *d, int64_t row, int64_t col)
{
    const uint8_t *q = d->q;
    if (d->bits == 8) return q[row * ld_of(d) + col];
    uint8_t b = q[(row / 2) * ld_of(d) + col];
    uint8_t nib = row % 2 ? (uint8_t)(b >> 4) : (uint8_t)(b & 0xfu);
    return d->symmetric ? (uint8_t)(nib ^ 8u) : nib;
}

/* Check the scales and zero points of group g, every column. */
static agmm_status_t group_check(const agmm_wq_desc_t *d, int64_t g)
{
    for (int64_t j = 0; j < d->n; j++) {
        float s = scale_at(d, g * ld_of(d) + j);
        if (!isfinite(s))
            return agmm_error(AGMM_ERR_INVALID_ARG,
                              "agmm_wq_pack: scale[%lld][%lld] = %g is not "
                              "finite",
                              (long long)g, (long long)j, (double)s);
        if (!d->symmetric && d->bits == 4 && d->zeros[g * ld_of(d) + j] > 15)
            return agmm_error(AGMM_ERR_INVALID_ARG,
                              "agmm_wq_pack: zero[%lld][%lld] = %d is not an "
                              "int4 (0..15)",
                              (long long)g, (long long)j,
                              d->zeros[g * ld_of(d) + j]);
    }
    return AGMM_OK;
}

static void pack_group(const agmm_wq_desc_t *d, const struct agmm_wq *w,
                       int64_t p, int64_t g, uint8_t *dst)
{
    float s[AGMM_WQ_NP], z[AGMM_WQ_NP];
    for (int j = 0; j < AGMM_WQ_NP; j++) {
        int64_t col = p * AGMM_WQ_NP + j;
        s[j] = col < d->n ? scale_at(d, g * ld_of(d) + col) : 0.0f;
        z[j] = col >= d->n     ? 0.0f
               : !d->symmetric ? (float)d->zeros[g * ld_of(d) + col]
               : d->bits == 4  ? 8.0f
                               : 0.0f;
    }
    memcpy(dst, s, sizeof s);
    memcpy(dst + sizeof s, z, sizeof z);
    dst += sizeof s + sizeof z;
    int64_t r0 = g * w->group, r1 = r0 + w->group < w->k ? r0 + w->group : w->k;
    int64_t quads = agmm_wq_quads(w, g);
    memset(dst, 0, (size_t)quads * w->quad_bytes);
    for (int64_t qd = 0; qd < quads; qd++, dst += w->quad_bytes)
        for (int i = 0; i < 4; i++) {
            int64_t row = r0 + qd * 4 + i;
            if (row >= r1) break;
            for (int j = 0; j < AGMM_WQ_NP; j++) {
                int64_t col = p * AGMM_WQ_NP + j;
                if (col >= d->n) break;
                uint8_t u = u_at(d, row, col);
                if (d->bits == 8)
                    dst[16 * i + j] = u;
                else { /* wq_internal.h: octets, dword j */
                    int sh = agmm_wq_nib_shift((int)(qd % 2) * 4 + i);
                    dst[-(qd % 2) * 32 + 4 * j + sh / 8] |=
                        (uint8_t)(u << (sh % 8));
                }
            }
        }
}

/* The bytes of a panel's groups (panel_bytes less its padding). */
static size_t group_bytes(const struct agmm_wq *w)
{
    size_t head = 2 * AGMM_WQ_NP * sizeof(float), bytes = 0;
    for (int64_t g = 0; g < w->ng; g++)
        bytes += head + (size_t)agmm_wq_quads(w, g) * w->quad_bytes;
    return bytes;
}

/* The geometry of a packed weight (everything but its data). */
static void geometry(struct agmm_wq *w, int64_t k, int64_t n, int bits,
                     int64_t group, int symmetric)
{
    w->k = k;
    w->n = n;
    w->group = group == 0 ? k : group;
    w->bits = bits;
    w->symmetric = symmetric != 0;
    w->has_zero = bits == 4 || !symmetric;
    w->ng = (w->k + w->group - 1) / w->group;
    w->gq = (w->group + 7) / 8 * 2;
    w->panels = (w->n + AGMM_WQ_NP - 1) / AGMM_WQ_NP;
    w->quad_bytes = bits == 4 ? 32 : 64;
    w->panel_bytes = (group_bytes(w) + 63) / 64 * 64;
}

static int geometry_ok(int64_t k, int64_t n, int bits, int64_t group)
{
    return k >= 1 && n >= 1 && k <= AGMM_WQ_MAX_ELEMENTS / n &&
           (bits == 4 || bits == 8) &&
           (group == 0 || group == 32 || group == 64 || group == 128 ||
            group == k);
}

size_t agmm_wq_packed_bytes(int64_t k, int64_t n, int bits, int64_t group)
{
    if (!geometry_ok(k, n, bits, group)) return 0;
    struct agmm_wq w;
    geometry(&w, k, n, bits, group, 1);
    return w.panel_bytes * (size_t)w.panels;
}

agmm_status_t agmm_wq_alloc(int64_t k, int64_t n, int bits, int64_t group,
                            int symmetric, agmm_wq_t **out)
{
    if (!out)
        return agmm_error(AGMM_ERR_INVALID_ARG, "agmm_wq_alloc: out is NULL");
    *out = NULL;
    if (!geometry_ok(k, n, bits, group))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "agmm_wq_alloc: bad geometry k %lld n %lld bits %d "
                          "group %lld",
                          (long long)k, (long long)n, bits, (long long)group);
    struct agmm_wq *w = calloc(1, sizeof *w);
    if (!w) return agmm_error(AGMM_ERR_NO_MEMORY, "agmm_wq_alloc: no memory");
    geometry(w, k, n, bits, group, symmetric);
    size_t total = w->panel_bytes * (size_t)w->panels;
    /* on huge pages where the kernel grants them (agmm_alloc), as the bf16
     * weights: a decode call streams the whole weight, and on 4 KiB pages
     * its TLB misses held the int4 kernel to 15-20 GB/s from DRAM */
    w->data = agmm_alloc(total); /* zeroed, 64-byte aligned */
    if (!w->data) {
        free(w);
        return agmm_error(AGMM_ERR_NO_MEMORY,
                          "agmm_wq_alloc: no memory for %zu bytes", total);
    }
    *out = w;
    return AGMM_OK;
}

agmm_status_t agmm_wq_repack(agmm_wq_t *w, const agmm_wq_desc_t *d)
{
    if (!w)
        return agmm_error(AGMM_ERR_INVALID_ARG, "agmm_wq_repack: w is NULL");
    AGMM_CHECK(pack_check(d));
    if (d->k != w->k || d->n != w->n || d->bits != w->bits ||
        (d->group == 0 ? d->k : d->group) != w->group ||
        (d->symmetric != 0) != w->symmetric)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "agmm_wq_repack: the description (k %lld n %lld "
                          "bits %d group %lld symmetric %d) is not the packed "
                          "weight's",
                          (long long)d->k, (long long)d->n, d->bits,
                          (long long)d->group, d->symmetric);
    for (int64_t g = 0; g < w->ng; g++)
        AGMM_CHECK(group_check(d, g));
    size_t head = 2 * AGMM_WQ_NP * sizeof(float), bytes = group_bytes(w);
    for (int64_t p = 0; p < w->panels; p++) {
        uint8_t *dst = w->data + (size_t)p * w->panel_bytes;
        memset(dst + bytes, 0, w->panel_bytes - bytes);
        for (int64_t g = 0; g < w->ng; g++) {
            pack_group(d, w, p, g, dst);
            dst += head + (size_t)agmm_wq_quads(w, g) * w->quad_bytes;
        }
    }
    return AGMM_OK;
}

agmm_status_t agmm_wq_pack(const agmm_wq_desc_t *d, agmm_wq_t **out)
{
    if (!out)
        return agmm_error(AGMM_ERR_INVALID_ARG, "agmm_wq_pack: out is NULL");
    *out = NULL;
    AGMM_CHECK(pack_check(d));
    /* The values first: a bad one allocates nothing. */
    struct agmm_wq probe;
    geometry(&probe, d->k, d->n, d->bits, d->group, d->symmetric);
    for (int64_t g = 0; g < probe.ng; g++)
        AGMM_CHECK(group_check(d, g));
    agmm_wq_t *w = NULL;
    AGMM_CHECK(agmm_wq_alloc(d->k, d->n, d->bits, d->group, d->symmetric, &w));
    agmm_status_t st = agmm_wq_repack(w, d);
    if (st != AGMM_OK) {
        agmm_wq_free(w);
        return st;
    }
    *out = w;
    return AGMM_OK;
}

void agmm_wq_free(agmm_wq_t *w)
{
    if (!w) return;
    agmm_free(w->data);
    free(w);
}

size_t agmm_wq_bytes(const agmm_wq_t *w)
{
    return w ? w->panel_bytes * (size_t)w->panels : 0;
}
