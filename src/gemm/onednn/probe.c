/* What this oneDNN can do on this CPU (cpu.h), found once per
 * process by trying it, never by CPU name or flag:
 *   - bf16 and f16: does a 16 x 64 x 64 matmul get an implementation
 *     other than the reference one (ref:*)? oneDNN 2.6 has bf16 matmuls
 *     only from AVX512_CORE (on an AVX2-only core, e.g. AMD Zen 3, none
 *     at all) and f16 only with AVX512_FP16 / AMX-FP16. Where it has
 *     none, input_dtype says fp32: tiles and weights converted (the F32
 *     path), which on such cores is also the fastest.
 *   - int8: is the s8 x s8 -> s32 matmul exact, and the u8 x s8 one? On
 *     cores without VNNI oneDNN multiplies u8 x s8 pairs with VPMADDUBSW,
 *     whose 16-bit pair sums saturate (255 * 127 * 2 > 32767), so its sums
 *     are wrong for large values (oneDNN documents this as int8
 *     "saturation" on non-VNNI hardware). The probe runs both variants on
 *     the worst values (A 127, W 127; -128 and -128) through a weight
 *     reordered as the engine reorders it (format any) and compares every
 *     sum. agmm's INT8 promises exact int32 sums. Where they are not,
 *     7-bit weights may still be exact (2 * 255 * 64 < 32768: oneDNN's
 *     advice for such cores): the probe tries the split's halves (0..63
 *     and -2..1) too, and where those are exact INT8 runs W as two
 *     halves (SPLIT, s8.c); where neither, int8 is refused
 *     naming why (agmm_dn_int8_why).
 *   - accumulate: is a sum post-op's result C_old + the plain product bit
 *     for bit on a dense C (fp32; bf16 where native)? Where it is not,
 *     accumulate goes through the engine's own addition (DENSE_ADD,
 *     dense.c), as on a strided C, so that gemm-rs's and
 *     gemm-ar's sums keep their fixed order.
 * Each probe runs at one OpenMP thread on the calling thread; the engine
 * is made first (agmm_dn_engine, cpu.c). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm/engine.h"
#include "gemm/onednn/cpu.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_bf16, g_f16;
static pthread_once_t g_sum_once = PTHREAD_ONCE_INIT;
static int g_sum_exact[2]; /* [fp32, bf16] */
static pthread_once_t g_s8_once = PTHREAD_ONCE_INIT;
static int g_s8_mode; /* AGMM_DN_S8_* */
static char g_s8_why[160];

/* Does a 16 x 64 x 64 matmul of dtype `dt` (C f32) get an implementation
 * other than the reference one? */
static int has_fast_matmul(dnnl_engine_t eng, dnnl_data_type_t dt)
{
    agmm_dn_md_t a = NULL, w = NULL, c = NULL;
    dnnl_dims_t ad = {16, 64}, wd = {64, 64};
    dnnl_primitive_desc_t pd = NULL;
    int fast = 0;
    if (!agmm_dn_md_tag(&a, 2, ad, dt, dnnl_ab) &&
        !agmm_dn_md_tag(&w, 2, wd, dt, dnnl_format_tag_any) &&
        !agmm_dn_md_tag(&c, 2, ad, dnnl_f32, dnnl_ab) &&
        !agmm_dn_matmul_pd_create(&pd, eng, a, w, NULL, c, NULL)) {
        const char *impl = NULL;
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
        fast = impl && strncmp(impl, "ref", 3) != 0;
        dnnl_primitive_desc_destroy(pd);
    }
    agmm_dn_md_destroy(a);
    agmm_dn_md_destroy(w);
    agmm_dn_md_destroy(c);
    return fast;
}

static void probe_16bit(void)
{
    dnnl_engine_t eng = agmm_dn_engine();
    if (!eng) return;
    int saved = agmm_dn_one_omp_thread();
    g_bf16 = has_fast_matmul(eng, dnnl_bf16);
    g_f16 = has_fast_matmul(eng, dnnl_f16);
    agmm_dn_restore_omp(saved);
}

int agmm_dn_bf16_native(void)
{
    pthread_once(&g_once, probe_16bit);
    return g_bf16;
}

int agmm_dn_f16_native(void)
{
    pthread_once(&g_once, probe_16bit);
    return g_f16;
}

/* One M x K x N matmul of a (a_dt, row-major), w (w_dt, row-major, then
 * reordered to the layout oneDNN picks, as the engine does) into c (c_dt,
 * row-major; with `sum`, a sum post-op of scale 1 adds c's old values).
 * 0, or -1 when it could not be made or run; its implementation in impl. */
static int run_matmul(dnnl_engine_t eng, dnnl_data_type_t a_dt,
                      dnnl_data_type_t w_dt, dnnl_data_type_t c_dt, int64_t M,
                      int64_t K, int64_t N, void *a, void *w, void *c, int sum,
                      char *impl, size_t impl_size)
{
    agmm_dn_md_t a_md = NULL, w_md = NULL, wu_md = NULL, c_md = NULL;
    dnnl_dims_t ad = {M, K}, wd = {K, N}, cd = {M, N};
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL, rpd = NULL;
    dnnl_primitive_t prim = NULL, reorder = NULL;
    dnnl_memory_t am = NULL, wm = NULL, wum = NULL, cm = NULL;
    dnnl_stream_t stream = NULL;
    int ok = -1;
    if (agmm_dn_md_tag(&a_md, 2, ad, a_dt, dnnl_ab) ||
        agmm_dn_md_tag(&w_md, 2, wd, w_dt, dnnl_format_tag_any) ||
        agmm_dn_md_tag(&wu_md, 2, wd, w_dt, dnnl_ab) ||
        agmm_dn_md_tag(&c_md, 2, cd, c_dt, dnnl_ab) ||
        dnnl_primitive_attr_create(&attr) || dnnl_post_ops_create(&po) ||
        (sum && agmm_dn_po_sum(po)) ||
        dnnl_primitive_attr_set_post_ops(attr, po) ||
        agmm_dn_matmul_pd_create(&pd, eng, a_md, w_md, NULL, c_md, attr))
        goto out;
    const char *name = NULL;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name);
    snprintf(impl, impl_size, "%s", name ? name : "unknown");
    agmm_dn_cmd_t wq =
        dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    if (!wq || dnnl_primitive_create(&prim, pd) ||
        dnnl_memory_create(&am, a_md, eng, a) ||
        dnnl_memory_create(&wum, wu_md, eng, w) ||
        dnnl_memory_create(&wm, wq, eng, DNNL_MEMORY_ALLOCATE) ||
        dnnl_memory_create(&cm, c_md, eng, c) ||
        dnnl_reorder_primitive_desc_create(&rpd, wu_md, eng, wq, eng, NULL) ||
        dnnl_primitive_create(&reorder, rpd) ||
        dnnl_stream_create(&stream, eng, dnnl_stream_default_flags))
        goto out;
    dnnl_exec_arg_t rargs[2] = {{DNNL_ARG_FROM, wum}, {DNNL_ARG_TO, wm}};
    dnnl_exec_arg_t args[3] = {
        {DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, cm}};
    if (dnnl_primitive_execute(reorder, stream, 2, rargs) ||
        dnnl_primitive_execute(prim, stream, 3, args) ||
        dnnl_stream_wait(stream))
        goto out;
    ok = 0;
out:
    if (stream) dnnl_stream_destroy(stream);
    if (reorder) dnnl_primitive_destroy(reorder);
    if (prim) dnnl_primitive_destroy(prim);
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (am) dnnl_memory_destroy(am);
    if (wm) dnnl_memory_destroy(wm);
    if (wum) dnnl_memory_destroy(wum);
    if (cm) dnnl_memory_destroy(cm);
    agmm_dn_md_destroy(a_md);
    agmm_dn_md_destroy(w_md);
    agmm_dn_md_destroy(wu_md);
    agmm_dn_md_destroy(c_md);
    return ok;
}

enum { PM = 32, PK = 256, PN = 64 };

/* An int8 matmul (A a_dt, W s8, C s32) of constant blocks: rows [0, PM/2)
 * of A are `hi`, the rest `lo`; columns [0, PN/2) of W are `whi`, the rest
 * `wlo`. 1 when every sum is exact, 0 when one is not, -1 when the matmul
 * could not be made or run. */
static int s8_exact(dnnl_engine_t eng, dnnl_data_type_t a_dt, int hi, int lo,
                    int whi, int wlo, char *impl, size_t impl_size)
{
    static _Alignas(64) int8_t a[PM * PK], w[PK * PN];
    static _Alignas(64) int32_t c[PM * PN];
    for (int i = 0; i < PM; i++)
        memset(a + i * PK, i < PM / 2 ? hi : lo, PK);
    for (int k = 0; k < PK; k++)
        for (int j = 0; j < PN; j++)
            w[k * PN + j] = (int8_t)(j < PN / 2 ? whi : wlo);
    if (run_matmul(eng, a_dt, dnnl_s8, dnnl_s32, PM, PK, PN, a, w, c, 0, impl,
                   impl_size))
        return -1;
    for (int i = 0; i < PM; i++) {
        /* A's bytes as the primitive reads them (u8 or s8) */
        int av = a_dt == dnnl_u8 ? (uint8_t)(i < PM / 2 ? hi : lo)
                                 : (int8_t)(i < PM / 2 ? hi : lo);
        for (int j = 0; j < PN; j++)
            if (c[i * PN + j] != av * (j < PN / 2 ? whi : wlo) * PK) return 0;
    }
    return 1;
}

enum { SM = 32, SK = 2048, SN = 64 };

/* Is a sum post-op's C (c_old + A @ W in the kernel) the plain product
 * added to c_old afterwards, bit for bit, for dtype dt (C fp32)? k 2048:
 * past every kernel's blocking of k, where a kernel that folds C_old in at
 * the first block of k (gemm:jit's sgemm with beta 1, on AVX2) rounds
 * otherwise. */
static int sum_exact(dnnl_engine_t eng, dnnl_data_type_t dt)
{
    size_t es = dt == dnnl_f32 ? 4 : 2;
    unsigned char *a = malloc(SM * SK * es), *w = malloc(SK * SN * es);
    float *old = malloc(SM * SN * 4), *p = malloc(SM * SN * 4),
          *c = malloc(SM * SN * 4);
    int ok = 0;
    char impl[64];
    if (!a || !w || !old || !p || !c) goto out;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < (size_t)SM * SK + (size_t)SK * SN; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        float v = (float)((x >> 40) & 0xffff) / 32768.0f - 1.0f;
        unsigned char *dst =
            i < (size_t)SM * SK ? a + i * es : w + (i - SM * SK) * es;
        if (es == 4) {
            memcpy(dst, &v, 4);
        } else { /* bf16: the upper half, exact (16 bits of mantissa) */
            uint32_t u;
            memcpy(&u, &v, 4);
            uint16_t h = (uint16_t)(u >> 16);
            memcpy(dst, &h, 2);
        }
    }
    for (int i = 0; i < SM * SN; i++)
        old[i] = (float)((i * 37) % 101) / 7.0f - 5.0f;
    memcpy(c, old, SM * SN * 4);
    if (run_matmul(eng, dt, dt, dnnl_f32, SM, SK, SN, a, w, p, 0, impl,
                   sizeof impl) ||
        run_matmul(eng, dt, dt, dnnl_f32, SM, SK, SN, a, w, c, 1, impl,
                   sizeof impl))
        goto out;
    ok = 1;
    for (int i = 0; i < SM * SN && ok; i++) {
        float want = old[i] + p[i];
        ok = memcmp(&want, &c[i], 4) == 0;
    }
out:
    free(a);
    free(w);
    free(old);
    free(p);
    free(c);
    return ok;
}

static void probe_sum(void)
{
    dnnl_engine_t eng = agmm_dn_engine();
    if (!eng) return;
    int saved = agmm_dn_one_omp_thread();
    g_sum_exact[0] = sum_exact(eng, dnnl_f32);
    g_sum_exact[1] = agmm_dn_bf16_native() && sum_exact(eng, dnnl_bf16);
    agmm_dn_restore_omp(saved);
}

int agmm_dn_sum_exact(agmm_dtype_t dt)
{
    pthread_once(&g_sum_once, probe_sum);
    return dt == AGMM_DTYPE_FP32   ? g_sum_exact[0]
           : dt == AGMM_DTYPE_BF16 ? g_sum_exact[1]
                                   : 0;
}

static void probe_s8(void)
{
    dnnl_engine_t eng = agmm_dn_engine();
    if (!eng) {
        snprintf(g_s8_why, sizeof g_s8_why, "no oneDNN CPU engine");
        return;
    }
    int saved = agmm_dn_one_omp_thread();
    /* The largest products of each sign pair. 8 bits: s8 127 x 127 and
     * -128 x -128; u8 (A shifted by 128) 255 x 127 and 255 x -128 (A's
     * byte 0xff). 7 bits, the split's halves (0..63 and -2..1): 127 x 63
     * and -128 x -2; 255 x 63 and 255 x -2. */
    static const struct {
        dnnl_data_type_t dt;
        int hi, lo, whi, wlo, split;
        const char *name;
    } cases[] = {{dnnl_s8, 127, -128, 127, -128, 0, "s8 x s8"},
                 {dnnl_u8, -1, 0, 127, -128, 0, "u8 x s8"},
                 {dnnl_s8, 127, -128, 63, -2, 1, "s8 x s8"},
                 {dnnl_u8, -1, 0, 63, -2, 1, "u8 x s8"}};
    int exact[2] = {0, 0}; /* [8-bit, 7-bit] both variants */
    for (int split = 0; split < 2; split++) {
        exact[split] = 1;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            if (cases[i].split != split) continue;
            char impl[64] = "";
            int r = s8_exact(eng, cases[i].dt, cases[i].hi, cases[i].lo,
                             cases[i].whi, cases[i].wlo, impl, sizeof impl);
            if (r == 1) continue;
            exact[split] = 0;
            if (g_s8_why[0]) continue; /* the first reason */
            if (r == 0)
                snprintf(g_s8_why, sizeof g_s8_why,
                         "this oneDNN's %s matmul (%s) is not exact on this "
                         "CPU, even for 7-bit weights",
                         cases[i].name, impl);
            else
                snprintf(g_s8_why, sizeof g_s8_why,
                         "this oneDNN has no %s matmul on this CPU",
                         cases[i].name);
        }
        if (exact[0]) break; /* no need of the split */
    }
    g_s8_mode = exact[0]   ? AGMM_DN_S8_EXACT
                : exact[1] ? AGMM_DN_S8_SPLIT
                           : AGMM_DN_S8_NONE;
    agmm_dn_restore_omp(saved);
}

int agmm_dn_int8_mode(void)
{
    pthread_once(&g_s8_once, probe_s8);
    return g_s8_mode;
}

const char *agmm_dn_int8_why(void)
{
    pthread_once(&g_s8_once, probe_s8);
    return g_s8_mode != AGMM_DN_S8_NONE ? "" : g_s8_why;
}

/* The answers the engine gives from the probes (engine.h). */
const char *agmm_dn_version(void)
{
    static char v[32];
    if (!v[0]) {
        const dnnl_version_t *d = dnnl_version();
        snprintf(v, sizeof v, "%d.%d.%d", d->major, d->minor, d->patch);
    }
    return v;
}

agmm_dtype_t agmm_dn_input_dtype(agmm_dtype_t dt)
{
    int native = dt == AGMM_DTYPE_FP16   ? agmm_dn_f16_native()
                 : dt == AGMM_DTYPE_BF16 ? agmm_dn_bf16_native()
                 : dt == AGMM_DTYPE_INT8
                     ? agmm_dn_int8_mode() != AGMM_DN_S8_NONE
                     : 1;
    return native ? dt : AGMM_DTYPE_FP32;
}

const char *agmm_dn_why_not_native(agmm_dtype_t dt)
{
    if (agmm_dn_input_dtype(dt) == dt) return NULL;
    return dt == AGMM_DTYPE_INT8 ? agmm_dn_int8_why()
                                 : "this oneDNN has no native matmul for it "
                                   "on this CPU";
}
