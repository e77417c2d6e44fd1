/* src/gemm/epilogue.c again, without clones: the baseline x86-64 loops
 * (SSE2), its functions renamed base_*, for test_epilogue_clones.c. */
#define AGMM_EPI_CLONES
#define agmm_gemm_act_f32      base_gemm_act_f32
#define agmm_gemm_epilogue     base_gemm_epilogue
#define agmm_gemm_epilogue_s32 base_gemm_epilogue_s32
#define agmm_gemm_epilogue_isa base_gemm_epilogue_isa
#define agmm_gemm_epilogue_glu base_gemm_epilogue_glu
#include "gemm/epilogue.c"
