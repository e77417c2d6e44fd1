/* src/gemm/epilogue.c again, with x86-64-v3's clone (AVX2 with FMA) as
 * the best one (on such a CPU the loader takes it even where AVX-512 is
 * there), its functions renamed v3_*, for test_epilogue_clones.c. Without
 * clones where the library has none (clang, sanitizers). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) &&         \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define AGMM_EPI_CLONES                                                        \
    __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define AGMM_EPI_CLONES
#endif
#define agmm_gemm_act_f32      v3_gemm_act_f32
#define agmm_gemm_epilogue     v3_gemm_epilogue
#define agmm_gemm_epilogue_s32 v3_gemm_epilogue_s32
#define agmm_gemm_epilogue_isa v3_gemm_epilogue_isa
#define agmm_gemm_epilogue_glu v3_gemm_epilogue_glu
#include "gemm/epilogue.c"
