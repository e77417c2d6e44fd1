$ build/agmm bench --dtype bf16 --tile-m 32 --mode gemm-only --rounds 7 --warmup 2 --json
