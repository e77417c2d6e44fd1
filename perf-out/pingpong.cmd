$ build/bench/agmm_pingpong 10000 31
