$ mpirun --oversubscribe -np 2 build/bench/agmm_ag_peer --dtype fp16 --engine openblas --rounds 7 --warmup 2 --json
