$ build/agmm bench --mode all --n 256 --link-gbps 1 --link-latency-us 20 --rounds 14 --warmup 4 --json
