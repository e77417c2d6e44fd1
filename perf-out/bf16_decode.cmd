$ build/agmm bench --dtype bf16 --m-local 16 --rounds 28 --warmup 4 --json
