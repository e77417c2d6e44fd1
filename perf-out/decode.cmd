$ build/agmm bench --mode all --m-local 128 --rounds 28 --warmup 4 --json
