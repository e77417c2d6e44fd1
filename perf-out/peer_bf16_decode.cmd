$ mpirun --oversubscribe -np 2 build/bench/agmm_ag_peer --dtype bf16 --m-local 16 --rounds 28 --warmup 4 --json
