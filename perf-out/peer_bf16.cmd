$ mpirun --oversubscribe -np 2 build/bench/agmm_ag_peer --dtype bf16 --rounds 7 --warmup 2 --json
