/* src/gemm/epilogue.c again, with AVX2's clone as the best one (on a CPU
 * with AVX2 the loader takes it even where AVX-512 is there), its
 * functions renamed avx2_*, for test_epilogue_clones.c. Without clones
 * where the library has none (clang, sanitizers). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) &&         \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define AGMM_EPI_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define AGMM_EPI_CLONES
#endif
#define agmm_gemm_act_f32      avx2_gemm_act_f32
#define agmm_gemm_epilogue     avx2_gemm_epilogue
#define agmm_gemm_epilogue_s32 avx2_gemm_epilogue_s32
#define agmm_gemm_epilogue_isa avx2_gemm_epilogue_isa
#include "gemm/epilogue.c"
