/* The physical peak probe (src/gemm/peak.h): which instruction it picks for
 * each dtype on this CPU and at every weaker instruction set, the rule that
 * maps a GEMM path and implementation string to an instruction, and that
 * what it measures is a sane positive rate. No tight timing assertions: the
 * machine may be busy; two calls must only agree within a factor of 3
 * (measured again up to three times), and how much faster an AMX tile
 * instruction is than the vector one of its dtype is left to bench. */
#include <math.h>
#include <string.h>

#include "agmm.h"
#include "check.h"
#include "gemm/peak.h"

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

static const agmm_dtype_t dtypes[] = {AGMM_DTYPE_FP16, AGMM_DTYPE_BF16,
                                      AGMM_DTYPE_FP32};

/* AMX-TILE and AMX-BF16 (int8 = 0) or AMX-INT8 (int8 = 1) in CPUID, and
 * Linux's grant of the tile state: detected here independently of
 * peak_amx.c. */
static int cpu_amx(int int8)
{
#if defined(__x86_64__) && defined(__linux__)
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    if (!(d & (1u << 24)) || !(d & (1u << (int8 ? 25 : 22)))) return 0;
    return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
#else
    (void)int8;
    return 0;
#endif
}

/* This CPU's best instruction set of the ladder. */
static agmm_peak_isa_t cpu_isa(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        if (!__builtin_cpu_supports("avx512bf16")) return AGMM_PEAK_AVX512F;
        return cpu_amx(0) ? AGMM_PEAK_AMX_BF16 : AGMM_PEAK_AVX512_BF16;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return AGMM_PEAK_AVX2_FMA;
#endif
    return AGMM_PEAK_SCALAR;
}

/* The best fp32 instruction at isa. */
static const char *fp32_instr(agmm_peak_isa_t isa)
{
    if (isa >= AGMM_PEAK_AVX512F) return "VFMADD231PS zmm";
    if (isa >= AGMM_PEAK_AVX2_FMA) return "VFMADD231PS ymm";
    return "scalar";
}

/* The instruction the probe must time for dtype at instruction set isa:
 * bf16 has its own with AMX or AVX512_BF16, else everything is fp32. */
static const char *want_instr(agmm_dtype_t dt, agmm_peak_isa_t isa)
{
    if (dt == AGMM_DTYPE_BF16 && isa >= AGMM_PEAK_AMX_BF16) return "TDPBF16PS";
    if (dt == AGMM_DTYPE_BF16 && isa >= AGMM_PEAK_AVX512_BF16)
        return "VDPBF16PS zmm";
    return fp32_instr(isa);
}

static const char *nz(const char *s)
{
    return s ? s : "(null)";
}

static void test_selection(void)
{
    agmm_peak_isa_t isa = cpu_isa();
    CHECK(agmm_peak_isa() == isa, "agmm_peak_isa() = %d, the CPU has %d",
          (int)agmm_peak_isa(), (int)isa);
    for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++) {
        const char *got = agmm_peak_instr(dtypes[i]);
        const char *want = want_instr(dtypes[i], isa);
        CHECK(got && strcmp(got, want) == 0, "%s: instr %s, want %s",
              agmm_dtype_name(dtypes[i]), nz(got), want);
    }
    CHECK(agmm_peak_kernel_available(AGMM_PEAK_K_AMX_BF16) == cpu_amx(0),
          "TDPBF16PS available %d, the CPU says %d",
          agmm_peak_kernel_available(AGMM_PEAK_K_AMX_BF16), cpu_amx(0));
    CHECK(agmm_peak_kernel_available(AGMM_PEAK_K_AMX_SSD) == cpu_amx(1),
          "TDPBSSD available %d, the CPU says %d",
          agmm_peak_kernel_available(AGMM_PEAK_K_AMX_SSD), cpu_amx(1));
    const char *instr = "unset";
    CHECK(agmm_peak_instr((agmm_dtype_t)7) == NULL,
          "invalid dtype has an instr");
    CHECK(agmm_peak_gflops((agmm_dtype_t)7, &instr) == 0 && instr == NULL,
          "invalid dtype: measured something");
    CHECK(agmm_peak_kernel_gflops(AGMM_PEAK_NKERNELS) == 0 &&
              agmm_peak_kernel_instr(AGMM_PEAK_K_NONE) == NULL,
          "invalid kernel: measured or named");
}

/* The path/impl rule (pure: no CPU involved), at given instruction sets. */
static void test_rule(void)
{
    static const struct {
        agmm_dtype_t dt;
        agmm_gemm_path_t path;
        const char *impl;
        agmm_peak_isa_t isa;
        agmm_peak_kernel_t want;
    } cases[] = {
        {AGMM_DTYPE_BF16, AGMM_GEMM_PATH_NATIVE, "brg:avx512_core_amx_bf16",
         AGMM_PEAK_AMX_BF16, AGMM_PEAK_K_AMX_BF16},
        {AGMM_DTYPE_BF16, AGMM_GEMM_PATH_AUTO, "BRG:AVX512_CORE_AMX",
         AGMM_PEAK_AMX_BF16, AGMM_PEAK_K_AMX_BF16},
        /* an AVX-512 kernel on an AMX CPU: the vector instruction */
        {AGMM_DTYPE_BF16, AGMM_GEMM_PATH_NATIVE, "brg:avx512_core_bf16",
         AGMM_PEAK_AMX_BF16, AGMM_PEAK_K_DPBF16_ZMM},
        {AGMM_DTYPE_BF16, AGMM_GEMM_PATH_NATIVE, NULL, AGMM_PEAK_AMX_BF16,
         AGMM_PEAK_K_DPBF16_ZMM},
        {AGMM_DTYPE_BF16, AGMM_GEMM_PATH_NATIVE, "", AGMM_PEAK_AMX_BF16,
         AGMM_PEAK_K_DPBF16_ZMM},
        /* a string naming AMX on a CPU without it */
        {AGMM_DTYPE_BF16, AGMM_GEMM_PATH_NATIVE, "brg:avx512_core_amx_bf16",
         AGMM_PEAK_AVX512_BF16, AGMM_PEAK_K_DPBF16_ZMM},
        {AGMM_DTYPE_BF16, AGMM_GEMM_PATH_NATIVE, "brg:avx512_core",
         AGMM_PEAK_AVX512F, AGMM_PEAK_K_FMA_ZMM},
        {AGMM_DTYPE_BF16, AGMM_GEMM_PATH_NATIVE, "gemm:jit", AGMM_PEAK_AVX2_FMA,
         AGMM_PEAK_K_FMA_YMM},
        /* the f32 path and fp32: the best fp32 FMA, whatever the kernel */
        {AGMM_DTYPE_BF16, AGMM_GEMM_PATH_F32, "brg:avx512_core_amx_bf16",
         AGMM_PEAK_AMX_BF16, AGMM_PEAK_K_FMA_ZMM},
        {AGMM_DTYPE_FP32, AGMM_GEMM_PATH_F32, "sgemm:Prescott",
         AGMM_PEAK_AMX_BF16, AGMM_PEAK_K_FMA_ZMM},
        {AGMM_DTYPE_FP32, AGMM_GEMM_PATH_NATIVE, "sgemm:Prescott",
         AGMM_PEAK_AVX2_FMA, AGMM_PEAK_K_FMA_YMM},
        {AGMM_DTYPE_FP16, AGMM_GEMM_PATH_F32, "sgemm:Haswell", AGMM_PEAK_SCALAR,
         AGMM_PEAK_K_SCALAR},
        {AGMM_DTYPE_FP16, AGMM_GEMM_PATH_NATIVE, "brg:avx512_core_amx_fp16",
         AGMM_PEAK_AMX_BF16, AGMM_PEAK_K_FMA_ZMM},
        /* agmm's weight kernels: fp32 FMA whatever the A dtype */
        {AGMM_DTYPE_BF16, AGMM_GEMM_PATH_NATIVE, "wq:avx512 int4 g128 sym",
         AGMM_PEAK_AMX_BF16, AGMM_PEAK_K_FMA_ZMM},
        {AGMM_DTYPE_FP16, AGMM_GEMM_PATH_NATIVE, "wq:avx2 int8 g32 asym",
         AGMM_PEAK_AVX2_FMA, AGMM_PEAK_K_FMA_YMM},
        /* ... but the dot kernel's, with bf16 A: VDPBF16PS (not the
         * tiles); the f32 path keeps the FMA */
        {AGMM_DTYPE_BF16, AGMM_GEMM_PATH_NATIVE, "wq:avx512bf16 int4 g128 sym",
         AGMM_PEAK_AMX_BF16, AGMM_PEAK_K_DPBF16_ZMM},
        {AGMM_DTYPE_BF16, AGMM_GEMM_PATH_AUTO, "wq:avx512bf16 int8 gk asym",
         AGMM_PEAK_AVX512_BF16, AGMM_PEAK_K_DPBF16_ZMM},
        {AGMM_DTYPE_BF16, AGMM_GEMM_PATH_F32, "wq:avx512bf16 int4 g32 sym",
         AGMM_PEAK_AVX512_BF16, AGMM_PEAK_K_FMA_ZMM},
        /* invalid */
        {(agmm_dtype_t)7, AGMM_GEMM_PATH_F32, "", AGMM_PEAK_AMX_BF16,
         AGMM_PEAK_K_NONE},
        {AGMM_DTYPE_BF16, (agmm_gemm_path_t)9, "amx", AGMM_PEAK_AMX_BF16,
         AGMM_PEAK_K_NONE},
    };
    /* the opt-in W4A8 weight kernel multiplies int8 with VPDPBUSD */
    if (agmm_peak_kernel_available(AGMM_PEAK_K_VNNI_ZMM))
        CHECK(agmm_peak_kernel_for(AGMM_DTYPE_BF16, AGMM_GEMM_PATH_NATIVE,
                                   "wq:avx512vnni int4 g128 sym",
                                   AGMM_PEAK_AMX_BF16) == AGMM_PEAK_K_VNNI_ZMM,
              "wq:avx512vnni: not VPDPBUSD");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        agmm_peak_kernel_t got = agmm_peak_kernel_for(
            cases[i].dt, cases[i].path, cases[i].impl, cases[i].isa);
        CHECK(got == cases[i].want, "rule case %zu (%s): %s, want %s", i,
              nz(cases[i].impl), nz(agmm_peak_kernel_instr(got)),
              nz(agmm_peak_kernel_instr(cases[i].want)));
    }
}

/* Every instruction set up to this CPU's, every dtype: positive, finite,
 * and the instruction of that level. */
static void test_levels(void)
{
    for (int isa = AGMM_PEAK_SCALAR; isa <= (int)cpu_isa(); isa++)
        for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++) {
            const char *instr = NULL;
            double g =
                agmm_peak_gflops_isa(dtypes[i], (agmm_peak_isa_t)isa, &instr);
            const char *want = want_instr(dtypes[i], (agmm_peak_isa_t)isa);
            CHECK(g > 0 && isfinite(g), "%s at isa %d: %g GF/s",
                  agmm_dtype_name(dtypes[i]), isa, g);
            CHECK(instr && strcmp(instr, want) == 0,
                  "%s at isa %d: %s, want %s", agmm_dtype_name(dtypes[i]), isa,
                  nz(instr), want);
            printf("  %-4s isa %d: %8.1f GF/s  %s\n",
                   agmm_dtype_name(dtypes[i]), isa, g, nz(instr));
        }
    /* Asking for more than the CPU has gives what it has. */
    const char *instr = NULL;
    double g =
        agmm_peak_gflops_isa(AGMM_DTYPE_BF16, (agmm_peak_isa_t)99, &instr);
    CHECK(g > 0 && instr &&
              strcmp(instr, want_instr(AGMM_DTYPE_BF16, cpu_isa())) == 0,
          "max_isa above the CPU's: %g GF/s %s", g, nz(instr));
}

/* The path that ran, on this CPU: the rule's instruction, measured once
 * (a second call returns the cached rate). */
static void test_for(void)
{
    const char *instr = NULL;
    double a = agmm_peak_gflops_for(AGMM_DTYPE_BF16, AGMM_GEMM_PATH_NATIVE,
                                    "brg:avx512_core_amx_bf16", &instr);
    const char *want =
        want_instr(AGMM_DTYPE_BF16, cpu_isa()); /* AMX where there is */
    CHECK(a > 0 && instr && strcmp(instr, want) == 0,
          "bf16 native amx impl: %g %s, want %s", a, nz(instr), want);
    double b = agmm_peak_gflops_for(AGMM_DTYPE_BF16, AGMM_GEMM_PATH_NATIVE,
                                    "brg:avx512_core_amx_bf16", NULL);
    CHECK(a == b, "not cached: %g then %g", a, b);
    instr = NULL;
    double f = agmm_peak_gflops_for(AGMM_DTYPE_BF16, AGMM_GEMM_PATH_F32,
                                    "brg:avx512_core", &instr);
    CHECK(f > 0 && instr && strcmp(instr, fp32_instr(cpu_isa())) == 0,
          "bf16 f32 path: %g %s", f, nz(instr));
}

/* The tile instructions against the vector ones of their dtype; skipped
 * (said so) without AMX. */
static void test_amx(void)
{
    if (!cpu_amx(0) && !cpu_amx(1)) {
        printf("  AMX: not on this CPU (or not granted by the OS): "
               "TDPBF16PS / TDPBSSD / TDPBUSD skipped\n");
        CHECK(agmm_peak_kernel_gflops(AGMM_PEAK_K_AMX_BF16) == 0 &&
                  agmm_peak_kernel_gflops(AGMM_PEAK_K_AMX_SSD) == 0,
              "AMX measured on a CPU without it");
        return;
    }
    static const struct {
        agmm_peak_kernel_t amx, vec;
        int int8;
    } pairs[] = {{AGMM_PEAK_K_AMX_BF16, AGMM_PEAK_K_DPBF16_ZMM, 0},
                 {AGMM_PEAK_K_AMX_SSD, AGMM_PEAK_K_VNNI_ZMM, 1},
                 {AGMM_PEAK_K_AMX_USD, AGMM_PEAK_K_VNNI_ZMM, 1}};
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        if (!cpu_amx(pairs[i].int8)) continue;
        double t = agmm_peak_kernel_gflops(pairs[i].amx);
        double v = agmm_peak_kernel_gflops(pairs[i].vec);
        printf("  %-9s %8.1f G/s  %s %8.1f G/s\n",
               agmm_peak_kernel_instr(pairs[i].amx), t,
               agmm_peak_kernel_instr(pairs[i].vec), v);
        CHECK(t > 0 && isfinite(t), "%s: %g",
              agmm_peak_kernel_instr(pairs[i].amx), t);
        /* How much faster the tile unit is, is a measurement (bench,
         * docs/performance.md), not an assertion: on a shared host the
         * AMX rate swings by 2x within minutes (other guests on the
         * unit), and a test must not fail on a busy machine. */
        CHECK(!agmm_peak_kernel_available(pairs[i].vec) ||
                  (v > 0 && isfinite(v)),
              "%s: %g", agmm_peak_kernel_instr(pairs[i].vec), v);
    }
}

/* Two fresh measurements agree within a factor of 3. A busy machine can
 * slow one down, so a disagreement is measured again, up to three times. */
static void test_consistent(agmm_peak_kernel_t k)
{
    if (!agmm_peak_kernel_available(k)) return;
    double a = 0, b = 0, ratio = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        a = agmm_peak_kernel_measure(k);
        b = agmm_peak_kernel_measure(k);
        ratio = a > b ? a / b : b / a;
        if (ratio <= 3) break;
    }
    CHECK(a > 0 && b > 0 && ratio <= 3, "%s: two calls %g and %g",
          agmm_peak_kernel_instr(k), a, b);
}

int main(void)
{
    test_selection();
    test_rule();
    test_levels();
    test_for();
    test_amx();
    test_consistent(agmm_peak_kernel_isa(AGMM_DTYPE_BF16, agmm_peak_isa()));
    test_consistent(AGMM_PEAK_K_FMA_ZMM);
    test_consistent(AGMM_PEAK_K_SCALAR);
    CHECK_DONE("test_peak");
}
