/* The physical peak probe (src/gemm/peak.h): which instruction it picks for
 * each dtype on this CPU and at every weaker instruction set, and that what
 * it measures is a sane positive rate. No tight timing assertions: the
 * machine may be busy; two calls must only agree within a factor of 3. */
#include <math.h>
#include <string.h>

#include "agmm.h"
#include "check.h"
#include "gemm/peak.h"

static const agmm_dtype_t dtypes[] = {AGMM_DTYPE_FP16, AGMM_DTYPE_BF16,
                                      AGMM_DTYPE_FP32};

/* This CPU's best instruction set, detected here independently of peak.c. */
static agmm_peak_isa_t cpu_isa(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return __builtin_cpu_supports("avx512bf16") ? AGMM_PEAK_AVX512_BF16
                                                    : AGMM_PEAK_AVX512F;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return AGMM_PEAK_AVX2_FMA;
#endif
    return AGMM_PEAK_SCALAR;
}

/* The instruction the probe must time for dtype at instruction set isa:
 * bf16 has its own only with AVX512_BF16, else everything is fp32 FMA. */
static const char *want_instr(agmm_dtype_t dt, agmm_peak_isa_t isa)
{
    if (dt == AGMM_DTYPE_BF16 && isa >= AGMM_PEAK_AVX512_BF16)
        return "VDPBF16PS zmm";
    if (isa >= AGMM_PEAK_AVX512F) return "VFMADD231PS zmm";
    if (isa >= AGMM_PEAK_AVX2_FMA) return "VFMADD231PS ymm";
    return "scalar";
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
              agmm_dtype_name(dtypes[i]), got ? got : "(null)", want);
    }
    const char *instr = "unset";
    CHECK(agmm_peak_instr((agmm_dtype_t)7) == NULL,
          "invalid dtype has an instr");
    CHECK(agmm_peak_gflops((agmm_dtype_t)7, &instr) == 0 && instr == NULL,
          "invalid dtype: measured something");
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
                  instr ? instr : "(null)", want);
            printf("  %-4s isa %d: %8.1f GF/s  %s\n",
                   agmm_dtype_name(dtypes[i]), isa, g,
                   instr ? instr : "(null)");
        }
    /* Asking for more than the CPU has gives what it has. */
    const char *instr = NULL;
    double g =
        agmm_peak_gflops_isa(AGMM_DTYPE_BF16, (agmm_peak_isa_t)99, &instr);
    CHECK(g > 0 && instr &&
              strcmp(instr, want_instr(AGMM_DTYPE_BF16, cpu_isa())) == 0,
          "max_isa above the CPU's: %g GF/s %s", g, instr ? instr : "(null)");
}

/* Two calls agree within a factor of 3. A busy machine can slow one call
 * down, so a disagreement is measured again, up to three times. */
static void test_consistent(agmm_dtype_t dt)
{
    double a = 0, b = 0, ratio = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        a = agmm_peak_gflops(dt, NULL);
        b = agmm_peak_gflops(dt, NULL);
        ratio = a > b ? a / b : b / a;
        if (ratio <= 3) break;
    }
    CHECK(a > 0 && b > 0 && ratio <= 3, "%s: two calls %g and %g GF/s",
          agmm_dtype_name(dt), a, b);
}

int main(void)
{
    test_selection();
    test_levels();
    test_consistent(AGMM_DTYPE_BF16);
    test_consistent(AGMM_DTYPE_FP32);
    CHECK_DONE("test_peak");
}
