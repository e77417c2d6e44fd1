$ build/agmm bench --mode all --rounds 7 --warmup 4 --json
