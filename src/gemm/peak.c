/*
 * Physical peak probe (peak.h): a register-only loop of independent
 * multiply-adds, timed on the calling thread. The vector and scalar
 * kernels are here, the AMX ones in peak_amx.c.
 *
 * Each kernel keeps its accumulators in registers and updates every one of
 * them once per iteration with the probed instruction. The updates of one
 * accumulator form a dependency chain, so the loop reaches the
 * instruction's throughput only with at least latency x instructions per
 * cycle accumulators. Measured on Zen 5 (2 x 512-bit pipes): VFMADD231PS
 * zmm needs 8 (4 accumulators give half the peak: 130 instead of 260
 * GF/s), VDPBF16PS zmm about 16 (12 give 483, 16-28 give 510-524 GF/s).
 * The zmm kernels use 24 of the 32 registers, the ymm and scalar ones 12
 * of 16. The inputs are hidden from the compiler (an empty asm) so it
 * cannot fold the multiply, and the accumulators' sum goes to a volatile
 * so it cannot drop the loop.
 *
 * Flops are counted as a GEMM counts them (2*M*N*K: one multiply and one
 * add per (m, n, k)):
 *   VFMADD231PS zmm: 16 fp32 lanes x (1 multiply + 1 add)       = 32 flops
 *   VFMADD231PS ymm:  8 fp32 lanes x (1 multiply + 1 add)       = 16 flops
 *   VDPBF16PS zmm:   16 fp32 lanes, each adding two bf16 products
 *                    (a0*b0 + a1*b1 + c): 16 x (2 mul + 2 add)   = 64 flops
 *   VPDPBUSD zmm:    16 int32 lanes, each adding four u8 x s8
 *                    products: 16 x (4 mul + 4 add)              = 128 ops
 *   scalar:          one fp32 multiply and one add               =  2 flops
 *
 * Timing: the iteration count doubles until one call takes CALIB_S (this
 * also wakes the vector unit up), then REPEATS calls of about TARGET_S
 * each; the fastest call is the least disturbed one. About 0.1 s in all,
 * once per kernel and process (agmm_peak_kernel_gflops caches).
 * Calls are timed in the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), not
 * wall time: on a machine where other processes share the core, wall time
 * would count their time slices too (measured: a busy loop on the same
 * core halves a wall-clock probe, 216 instead of 523 GF/s bf16, however
 * short the calls), while the peak is what the core does while it runs
 * us. Interrupts and a hypervisor's steal time still count against it.
 */
#include "gemm/peak.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "gemm/peak_amx.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PEAK_X86 1
#endif

#define CALIB_S  2e-3
#define TARGET_S 15e-3
#define REPEATS  5

/* The accumulators a0..a11, a0..a23. */
#define REP12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define REP24(X)                                                               \
    REP12(X)                                                                   \
    X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23)

typedef float (*kernel_fn)(uint64_t iters);

typedef struct probe {
    const char *instr;
    double flops_per_instr;
    int instrs_per_iter; /* = accumulators */
    kernel_fn run;       /* iters iterations */
} probe_t;

/* ------------------------------------------------------------ kernels */

#if defined(__GNUC__) && !defined(__clang__)
/* Keep the scalar loop scalar (GCC 12 vectorizes at -O2). */
__attribute__((optimize("no-tree-vectorize")))
#endif
static float
kernel_scalar(uint64_t iters)
{
    volatile float vx = 0.5f, vy = 0x1p-10f; /* opaque: no folding */
    float x = vx, y = vy;
#define DECL(i) float a##i = (float)(i);
    REP12(DECL)
#undef DECL
    for (uint64_t it = 0; it < iters; it++) {
        /* a = a * 0.5 + y converges to 2y: no overflow, no subnormals */
#define STEP(i) a##i = a##i * x + y;
        REP12(STEP)
#undef STEP
    }
#define SUM(i) +a##i
    return 0.0f REP12(SUM);
#undef SUM
}

#ifdef PEAK_X86
__attribute__((target("avx2,fma"))) static float kernel_fma_ymm(uint64_t iters)
{
    __m256 x = _mm256_set1_ps(0.5f), y = _mm256_set1_ps(0x1p-20f);
    __asm__("" : "+x"(x), "+x"(y)); /* opaque (ymm0-15: no AVX-512 here) */
#define DECL(i) __m256 a##i = _mm256_set1_ps((float)(i));
    REP12(DECL)
#undef DECL
    for (uint64_t it = 0; it < iters; it++) {
#define STEP(i) a##i = _mm256_fmadd_ps(x, y, a##i);
        REP12(STEP)
#undef STEP
    }
    __m256 s = _mm256_setzero_ps();
#define SUM(i) s = _mm256_add_ps(s, a##i);
    REP12(SUM)
#undef SUM
    float lanes[8];
    _mm256_storeu_ps(lanes, s);
    float sum = 0;
    for (int i = 0; i < 8; i++)
        sum += lanes[i];
    return sum;
}

__attribute__((target("avx512f"))) static float kernel_fma_zmm(uint64_t iters)
{
    __m512 x = _mm512_set1_ps(0.5f), y = _mm512_set1_ps(0x1p-20f);
    __asm__("" : "+v"(x), "+v"(y));
#define DECL(i) __m512 a##i = _mm512_set1_ps((float)(i));
    REP24(DECL)
#undef DECL
    for (uint64_t it = 0; it < iters; it++) {
#define STEP(i) a##i = _mm512_fmadd_ps(x, y, a##i);
        REP24(STEP)
#undef STEP
    }
    __m512 s = _mm512_setzero_ps();
#define SUM(i) s = _mm512_add_ps(s, a##i);
    REP24(SUM)
#undef SUM
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx512f,avx512bf16"))) static float
kernel_dpbf16_zmm(uint64_t iters)
{
    /* bf16 pairs (0.5, 0.5) and (2^-20, 2^-20): each lane gains 2^-20 per
     * instruction; exact in bf16, no subnormals. */
    __m512bh x =
        _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.5f), _mm512_set1_ps(0.5f));
    __m512bh y =
        _mm512_cvtne2ps_pbh(_mm512_set1_ps(0x1p-20f), _mm512_set1_ps(0x1p-20f));
    __asm__("" : "+v"(x), "+v"(y));
#define DECL(i) __m512 a##i = _mm512_set1_ps((float)(i));
    REP24(DECL)
#undef DECL
    for (uint64_t it = 0; it < iters; it++) {
#define STEP(i) a##i = _mm512_dpbf16_ps(a##i, x, y);
        REP24(STEP)
#undef STEP
    }
    __m512 s = _mm512_setzero_ps();
#define SUM(i) s = _mm512_add_ps(s, a##i);
    REP24(SUM)
#undef SUM
    return _mm512_reduce_add_ps(s);
}
__attribute__((target("avx512f,avx512vnni"))) static float
kernel_vnni_zmm(uint64_t iters)
{
    /* u8 1 x s8 1: each lane gains 4 per instruction and wraps (free). */
    __m512i x = _mm512_set1_epi8(1), y = _mm512_set1_epi8(1);
    __asm__("" : "+v"(x), "+v"(y));
#define DECL(i) __m512i a##i = _mm512_set1_epi32(i);
    REP24(DECL)
#undef DECL
    for (uint64_t it = 0; it < iters; it++) {
        /* In inline asm: GCC 12 compiles _mm512_dpbusd_epi32(a, x, y) in
         * this loop as a copy of a, the instruction on the copy, and a
         * spill to the stack (35 stack accesses and 66 moves per
         * iteration), which the probe timed instead of the instruction:
         * 355 GOP/s on Zen 5 where 16 chains in registers retire 915, and
         * agmm's int8 GEMM ran at 1.7x that "peak". The asm keeps each
         * accumulator in its register (AT&T order: a += u8(x) . s8(y)). */
#define STEP(i) __asm__("vpdpbusd %2, %1, %0" : "+v"(a##i) : "v"(x), "v"(y));
        REP24(STEP)
#undef STEP
    }
    __m512i s = _mm512_setzero_si512();
#define SUM(i) s = _mm512_add_epi32(s, a##i);
    REP24(SUM)
#undef SUM
    return (float)_mm512_reduce_add_epi32(s);
}
#endif /* PEAK_X86 */

/* ------------------------------------------------------------- driver */

static const probe_t probes[AGMM_PEAK_NKERNELS] = {
    [AGMM_PEAK_K_SCALAR] = {"scalar", 2, 12, kernel_scalar},
#ifdef PEAK_X86
    [AGMM_PEAK_K_FMA_YMM] = {"VFMADD231PS ymm", 16, 12, kernel_fma_ymm},
    [AGMM_PEAK_K_FMA_ZMM] = {"VFMADD231PS zmm", 32, 24, kernel_fma_zmm},
    [AGMM_PEAK_K_DPBF16_ZMM] = {"VDPBF16PS zmm", 64, 24, kernel_dpbf16_zmm},
    [AGMM_PEAK_K_VNNI_ZMM] = {"VPDPBUSD zmm", 128, 24, kernel_vnni_zmm},
#else
    [AGMM_PEAK_K_FMA_YMM] = {"VFMADD231PS ymm", 16, 12, NULL},
    [AGMM_PEAK_K_FMA_ZMM] = {"VFMADD231PS zmm", 32, 24, NULL},
    [AGMM_PEAK_K_DPBF16_ZMM] = {"VDPBF16PS zmm", 64, 24, NULL},
    [AGMM_PEAK_K_VNNI_ZMM] = {"VPDPBUSD zmm", 128, 24, NULL},
#endif
    [AGMM_PEAK_K_AMX_BF16] = {"TDPBF16PS", 16384, AGMM_PEAK_AMX_ACC,
                              agmm_peak_amx_bf16},
    [AGMM_PEAK_K_AMX_SSD] = {"TDPBSSD", 32768, AGMM_PEAK_AMX_ACC,
                             agmm_peak_amx_ssd},
    [AGMM_PEAK_K_AMX_USD] = {"TDPBUSD", 32768, AGMM_PEAK_AMX_ACC,
                             agmm_peak_amx_usd},
};

static int valid_kernel(agmm_peak_kernel_t k)
{
    return (int)k >= 0 && k < AGMM_PEAK_NKERNELS;
}

int agmm_peak_kernel_available(agmm_peak_kernel_t k)
{
    if (!valid_kernel(k)) return 0;
    if (k == AGMM_PEAK_K_SCALAR) return 1;
    if (k == AGMM_PEAK_K_AMX_BF16) return agmm_peak_amx_has(0);
    if (k == AGMM_PEAK_K_AMX_SSD || k == AGMM_PEAK_K_AMX_USD)
        return agmm_peak_amx_has(1);
#ifdef PEAK_X86
    /* GCC's __builtin_cpu_supports("avx512*") also checks that the OS
     * saves the zmm state (XCR0). */
    __builtin_cpu_init();
    switch (k) {
    case AGMM_PEAK_K_FMA_YMM:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case AGMM_PEAK_K_FMA_ZMM:
        return __builtin_cpu_supports("avx512f");
    case AGMM_PEAK_K_DPBF16_ZMM:
        return __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bf16");
    case AGMM_PEAK_K_VNNI_ZMM:
        return __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512vnni");
    default:
        return 0;
    }
#else
    return 0;
#endif
}

const char *agmm_peak_kernel_instr(agmm_peak_kernel_t k)
{
    return valid_kernel(k) ? probes[k].instr : NULL;
}

agmm_peak_isa_t agmm_peak_isa(void)
{
    /* A level counts with every level below it (AMX CPUs have them). */
    static const agmm_peak_kernel_t level[] = {
        AGMM_PEAK_K_FMA_YMM, AGMM_PEAK_K_FMA_ZMM, AGMM_PEAK_K_DPBF16_ZMM,
        AGMM_PEAK_K_AMX_BF16};
    int isa = AGMM_PEAK_SCALAR;
    while (isa < 4 && agmm_peak_kernel_available(level[isa]))
        isa++;
    return (agmm_peak_isa_t)isa;
}

agmm_peak_kernel_t agmm_peak_kernel_isa(agmm_dtype_t dtype, agmm_peak_isa_t isa)
{
    if (dtype == AGMM_DTYPE_INT8) {
        /* s8 x s8 -> s32: AMX's TDPBSSD, else VNNI's VPDPBUSD (what
         * oneDNN's s8s8 kernels run on, with their compensation), else
         * the fp32 FMA as a stand-in for the pre-VNNI int8 sequence. */
        if (isa >= AGMM_PEAK_AMX_BF16 &&
            agmm_peak_kernel_available(AGMM_PEAK_K_AMX_SSD))
            return AGMM_PEAK_K_AMX_SSD;
        if (isa >= AGMM_PEAK_AVX512F &&
            agmm_peak_kernel_available(AGMM_PEAK_K_VNNI_ZMM))
            return AGMM_PEAK_K_VNNI_ZMM;
        dtype = AGMM_DTYPE_FP32;
    }
    if (dtype != AGMM_DTYPE_FP16 && dtype != AGMM_DTYPE_BF16 &&
        dtype != AGMM_DTYPE_FP32)
        return AGMM_PEAK_K_NONE;
    /* bf16 without AVX512_BF16, and fp16, are computed in fp32. */
    if (dtype == AGMM_DTYPE_BF16 && isa >= AGMM_PEAK_AMX_BF16)
        return AGMM_PEAK_K_AMX_BF16;
    if (dtype == AGMM_DTYPE_BF16 && isa >= AGMM_PEAK_AVX512_BF16)
        return AGMM_PEAK_K_DPBF16_ZMM;
    if (isa >= AGMM_PEAK_AVX512F) return AGMM_PEAK_K_FMA_ZMM;
    if (isa >= AGMM_PEAK_AVX2_FMA) return AGMM_PEAK_K_FMA_YMM;
    return AGMM_PEAK_K_SCALAR;
}

/* 1 when s contains "amx" in any case. */
static int names_amx(const char *s)
{
    for (; s && s[0]; s++)
        if ((s[0] | 0x20) == 'a' && s[1] && (s[1] | 0x20) == 'm' && s[2] &&
            (s[2] | 0x20) == 'x')
            return 1;
    return 0;
}

agmm_peak_kernel_t agmm_peak_kernel_for(agmm_dtype_t dtype,
                                        agmm_gemm_path_t path, const char *impl,
                                        agmm_peak_isa_t isa)
{
    if (path != AGMM_GEMM_PATH_AUTO && path != AGMM_GEMM_PATH_NATIVE &&
        path != AGMM_GEMM_PATH_F32)
        return AGMM_PEAK_K_NONE;
    if (agmm_peak_kernel_isa(dtype, isa) == AGMM_PEAK_K_NONE)
        return AGMM_PEAK_K_NONE;
    if (dtype == AGMM_DTYPE_INT8) { /* native only; tiles when named */
        if (!names_amx(impl) && isa > AGMM_PEAK_AVX512_BF16)
            isa = AGMM_PEAK_AVX512_BF16;
        return agmm_peak_kernel_isa(AGMM_DTYPE_INT8, isa);
    }
    /* agmm's dot weight kernel (impl "wq:avx512bf16...", used when some
     * of the plan's row counts run it: its peak is the larger) multiplies
     * bf16 A with VDPBF16PS. */
    /* The opt-in W4A8 kernel ("wq:avx512vnni...") multiplies int8 with
     * VPDPBUSD, whatever A's dtype. */
    if (impl && strncmp(impl, "wq:avx512vnni", 13) == 0)
        return agmm_peak_kernel_isa(AGMM_DTYPE_INT8, isa > AGMM_PEAK_AVX512_BF16
                                                         ? AGMM_PEAK_AVX512_BF16
                                                         : isa);
    if (dtype == AGMM_DTYPE_BF16 && path != AGMM_GEMM_PATH_F32 && impl &&
        strncmp(impl, "wq:avx512bf16", 13) == 0) {
        if (isa > AGMM_PEAK_AVX512_BF16) isa = AGMM_PEAK_AVX512_BF16;
        return agmm_peak_kernel_isa(AGMM_DTYPE_BF16, isa);
    }
    /* agmm's weight kernels (impl "wq:..."): rows widened to fp32, the
     * weight dequantized in registers, fp32 FMA whatever the A dtype;
     * but its bf16-weight kernel's VDPBF16PS ("wq:bf16 avx512-bf16"), and
     * where the impl names the prefill path's bf16 panels (the library
     * bf16 GEMM on the dequantized weight, calls of many rows) the bf16
     * dot's. */
    if (dtype != AGMM_DTYPE_BF16 || path == AGMM_GEMM_PATH_F32 ||
        (impl && strncmp(impl, "wq:", 3) == 0 &&
         strcmp(impl, "wq:bf16 avx512-bf16") != 0 &&
         !strstr(impl, "bf16 panels")))
        return agmm_peak_kernel_isa(AGMM_DTYPE_FP32, isa);
    /* Native bf16: the tiles only for a kernel that names them. */
    if (!names_amx(impl) && isa > AGMM_PEAK_AVX512_BF16)
        isa = AGMM_PEAK_AVX512_BF16;
    return agmm_peak_kernel_isa(AGMM_DTYPE_BF16, isa);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static volatile float peak_sink; /* keeps every kernel's result alive */

static double timed(kernel_fn run, uint64_t iters)
{
    double t0 = now_s();
    float s = run(iters);
    double t = now_s() - t0;
    peak_sink = s;
    return t;
}

double agmm_peak_kernel_measure(agmm_peak_kernel_t k)
{
    if (!agmm_peak_kernel_available(k) || !probes[k].run) return 0;
    const probe_t *p = &probes[k];
    uint64_t iters = 256;
    double t = timed(p->run, iters);
    while (t < CALIB_S && iters < ((uint64_t)1 << 40)) {
        iters *= 2;
        t = timed(p->run, iters);
    }
    double per_iter = t / (double)iters;
    uint64_t n = (uint64_t)(TARGET_S / (per_iter > 0 ? per_iter : 1e-9)) + 1;
    double best = INFINITY;
    for (int r = 0; r < REPEATS; r++) {
        double s = timed(p->run, n);
        if (s < best) best = s;
    }
    if (!(best > 0)) return 0;
    return p->flops_per_instr * p->instrs_per_iter * (double)n / best * 1e-9;
}

/* One measurement per kernel per process; the lock also keeps two
 * threads from probing at once (they would share the machine). */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static double cache[AGMM_PEAK_NKERNELS];

double agmm_peak_kernel_gflops(agmm_peak_kernel_t k)
{
    if (!valid_kernel(k)) return 0;
    pthread_mutex_lock(&cache_lock);
    if (!(cache[k] > 0)) cache[k] = agmm_peak_kernel_measure(k);
    double g = cache[k];
    pthread_mutex_unlock(&cache_lock);
    return g;
}

static double gflops_of(agmm_peak_kernel_t k, const char **instr)
{
    if (instr) *instr = agmm_peak_kernel_instr(k);
    return agmm_peak_kernel_gflops(k);
}

double agmm_peak_gflops_for(agmm_dtype_t dtype, agmm_gemm_path_t path,
                            const char *impl, const char **instr)
{
    return gflops_of(agmm_peak_kernel_for(dtype, path, impl, agmm_peak_isa()),
                     instr);
}

const char *agmm_peak_instr(agmm_dtype_t dtype)
{
    return agmm_peak_kernel_instr(agmm_peak_kernel_isa(dtype, agmm_peak_isa()));
}

double agmm_peak_gflops_isa(agmm_dtype_t dtype, agmm_peak_isa_t max_isa,
                            const char **instr)
{
    agmm_peak_isa_t isa = agmm_peak_isa();
    if (max_isa < isa) isa = max_isa;
    return gflops_of(agmm_peak_kernel_isa(dtype, isa), instr);
}

double agmm_peak_gflops(agmm_dtype_t dtype, const char **instr)
{
    return agmm_peak_gflops_isa(dtype, AGMM_PEAK_AMX_BF16, instr);
}
