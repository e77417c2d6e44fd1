/* The OpenBLAS kernel advice (src/gemm/blas_advice.h) as a pure function
 * of the kernel name, the CPU's features and OPENBLAS_CORETYPE: an SSE or
 * AVX-only kernel on an AVX-512 CPU is told SkylakeX, on an AVX2 + FMA CPU
 * Haswell; an AVX2 or newer kernel, a kernel the user chose, a name not
 * known and a CPU with nothing better get none. Then the public
 * agmm_blas_advice() agrees with the function on this process's inputs. */
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "check.h"
#include "gemm/blas_advice.h"

#define AVX2_FMA (AGMM_CPU_AVX2 | AGMM_CPU_FMA)
#define AVX512   (AGMM_CPU_AVX512F | AVX2_FMA)

/* The advice for (kernel, cpu, coretype) contains `want`, or is none when
 * want is NULL. */
static void expect(const char *kernel, unsigned cpu, const char *coretype,
                   const char *want)
{
    char buf[256];
    memset(buf, 'x', sizeof buf);
    int got = agmm_blas_advice_for(kernel, cpu, coretype, buf, sizeof buf);
    if (!want) {
        CHECK(got == 0 && buf[0] == 0, "%s cpu %#x coretype %s: advice '%s'",
              kernel ? kernel : "(null)", cpu, coretype ? coretype : "(null)",
              got ? buf : "");
        return;
    }
    CHECK(got == 1 && strstr(buf, want) && !strchr(buf, '\n'),
          "%s cpu %#x coretype %s: advice '%s', want '%s'", kernel, cpu,
          coretype ? coretype : "(null)", got ? buf : "(none)", want);
}

int main(void)
{
    /* An old kernel on a newer CPU: the kernel to set. */
    expect("Prescott", AVX512, NULL, "set OPENBLAS_CORETYPE=SkylakeX");
    expect("Prescott", AVX512, NULL,
           "OpenBLAS runs its Prescott kernel (SSE, no AVX) on a CPU with "
           "AVX-512");
    expect("Prescott", AGMM_CPU_AVX512F, "", "SkylakeX"); /* "" = unset */
    expect("Prescott", AVX2_FMA, NULL, "set OPENBLAS_CORETYPE=Haswell");
    expect("Prescott", AVX2_FMA, NULL, "on a CPU with AVX2 and FMA");
    expect("prescott", AVX2_FMA, NULL, "Haswell"); /* any case */
    expect("Nehalem", AVX512, NULL, "SkylakeX");
    expect("Core2", AVX2_FMA, NULL, "Haswell");
    expect("Opteron_SSE3", AVX512, NULL, "SkylakeX");
    expect("Sandybridge", AVX512, NULL, "(AVX, no AVX2)");
    expect("Piledriver", AVX2_FMA, NULL, "Haswell");

    /* The kernel is already AVX2 or newer. */
    expect("Haswell", AVX512, NULL, NULL);
    expect("Zen", AVX512, NULL, NULL);
    expect("SkylakeX", AVX512, NULL, NULL);
    expect("Cooperlake", AVX512, NULL, NULL);
    expect("SapphireRapids", AVX512, NULL, NULL);
    /* The user chose the kernel. */
    expect("Prescott", AVX512, "Prescott", NULL);
    expect("Prescott", AVX512, "SkylakeX", NULL);
    expect("Prescott", AVX2_FMA, "Haswell", NULL);
    /* A name that is not one of OpenBLAS's x86 cores. */
    expect("unknown", AVX512, NULL, NULL);
    expect("Unknown", AVX512, NULL, NULL);
    expect("NEOVERSEN1", AVX512, NULL, NULL);
    expect("", AVX512, NULL, NULL);
    expect(NULL, AVX512, NULL, NULL);
    /* Nothing better on the CPU: AVX2 without FMA, or no AVX2. */
    expect("Prescott", 0, NULL, NULL);
    expect("Prescott", AGMM_CPU_AVX2, NULL, NULL);
    expect("Prescott", AGMM_CPU_FMA, NULL, NULL);

    /* A short buffer: cut, still terminated; size 0: not written. */
    char small[8];
    CHECK(agmm_blas_advice_for("Prescott", AVX512, NULL, small, sizeof small) ==
                  1 &&
              strlen(small) == sizeof small - 1,
          "8-byte buffer: '%s'", small);
    CHECK(agmm_blas_advice_for("Prescott", AVX512, NULL, small, 0) == 0,
          "0-byte buffer");

    /* The public answer is the function on this process's inputs, and is
     * the same pointer each call. */
    char want[256];
    int have =
        agmm_blas_advice_for(agmm_blas_kernel(), agmm_cpu_flags(),
                             getenv("OPENBLAS_CORETYPE"), want, sizeof want);
    const char *a = agmm_blas_advice();
    CHECK(have ? a && !strcmp(a, want) : a == NULL,
          "agmm_blas_advice() '%s', the function's '%s' (kernel %s)",
          a ? a : "(null)", have ? want : "(none)", agmm_blas_kernel());
    CHECK(agmm_blas_advice() == a, "a second call differs");
    printf("this process: kernel %s, advice %s\n", agmm_blas_kernel(),
           a ? a : "none");
    CHECK_DONE("test_blas_advice");
}
