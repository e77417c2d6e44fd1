$ build/bench/agmm_tile_gemm 2048 4096 4096 7
