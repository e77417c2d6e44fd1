$ build/agmm bench --dtype bf16 --rounds 7 --warmup 4 --json
