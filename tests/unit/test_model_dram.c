/* The performance model's weight-streaming floor
 * (agmm_model_machine_t.dram_gbs): a decode round of ag-gemm (1 row per
 * rank) is at least its weight bytes over the DRAM rate with the floor,
 * the old prediction without it (0); a call per tile reads the weight once
 * per tile; a quantized weight's bytes are its packed values and group
 * scales; a bad rate is refused. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "agmm_model.h"
#include "check.h"
#include "gemm/wq/wq.h"
#include "model/model.h"
#include "model_fixture.h"

enum { K = 4096, N = 11008 };

/* 2 ranks of 1 row, bf16, one GEMM worker over all N columns, a fast
 * GEMM (1000 GFLOP/s: its 2 x 1 x N x K flops take 0.09 ms) and copies
 * that cost ~nothing. */
static void decode(agmm_model_machine_t *m, agmm_plan_desc_t *d)
{
    static const int64_t rows[2] = {1, 1};
    flat_machine(m, 1000);
    m->ranks_per_host = 2;
    m->copy_gbs = 1e9;
    plan(d, 2, rows, K, N);
    d->dtype = AGMM_DTYPE_BF16;
}

static void floor_of_a_decode_round(void)
{
    agmm_model_machine_t m;
    agmm_plan_desc_t d;
    decode(&m, &d);
    double over = (10 + 1) * 1e-6, copy = K * 2 / 1e18;
    agmm_model_result_t r;
    CHECK(m.dram_gbs == 0, "no floor by default");
    CHECK(agmm_model_predict(&m, &d, &r) == AGMM_OK, "predict");
    /* Without the floor: as before, one call of both rows (the round is
     * at most AGMM_AG_WHOLE_ROWS rows and every tile is there). */
    CLOSE(r.fused.time_s, copy + gemm_s(3, 2, N, K, 1000) + over,
          "no floor: the old fused round");
    CLOSE(r.baseline.time_s, copy + gemm_s(3, 2, N, K, 1000) + over,
          "no floor: the old baseline round");
    double bytes = mdl_weight_bytes(&d, K, N);
    CLOSE(bytes, 2.0 * K * N, "a bf16 weight: 2 bytes an element");
    /* With the floor: the call reads 90 MB at 30 GB/s, 3 ms, far more
     * than its 0.09 ms of flops. */
    m.dram_gbs = 30;
    CHECK(agmm_model_check(&m, &d) == AGMM_OK, "a floor is a good machine");
    agmm_model_result_t f;
    CHECK(agmm_model_predict(&m, &d, &f) == AGMM_OK, "predict");
    double floor_s = bytes / 30e9;
    CHECK(f.fused.time_s >= floor_s, "fused %.6g s >= weight / DRAM %.6g s",
          f.fused.time_s, floor_s);
    CHECK(f.baseline.time_s >= floor_s, "baseline %.6g s >= %.6g s",
          f.baseline.time_s, floor_s);
    CLOSE(f.fused.gemm_s, floor_s, "fused GEMM: one call at the floor");
    CLOSE(f.baseline.time_s, copy + floor_s + over, "baseline round");
    CHECK(f.fused.bound == AGMM_MODEL_BOUND_GEMM, "GEMM-bound: %s",
          agmm_model_bound_name(f.fused.bound));
    /* A floor below the flops' time changes nothing. */
    m.dram_gbs = 1e6;
    CHECK(agmm_model_predict(&m, &d, &f) == AGMM_OK, "predict");
    CLOSE(f.fused.time_s, r.fused.time_s, "a floor under the GEMM");
    /* Back to 0: the old prediction again. */
    m.dram_gbs = 0;
    CHECK(agmm_model_predict(&m, &d, &f) == AGMM_OK, "predict");
    CLOSE(f.fused.time_s, r.fused.time_s, "0: no floor");
}

/* With a comm worker the fused GEMM worker calls once per tile (it looks
 * before the peer's tile has arrived): each call reads the whole weight,
 * so the fused round reads it twice, the baseline once. */
static void a_call_per_tile_reads_it_per_tile(void)
{
    agmm_model_machine_t m;
    agmm_plan_desc_t d;
    decode(&m, &d);
    d.comm_workers = 1;
    m.dram_gbs = 30;
    agmm_model_result_t r;
    CHECK(agmm_model_predict(&m, &d, &r) == AGMM_OK, "predict");
    double floor_s = mdl_weight_bytes(&d, K, N) / 30e9;
    CLOSE(r.fused.gemm_s, 2 * floor_s, "fused: two tile calls, two reads");
    CLOSE(r.baseline.gemm_s, floor_s, "baseline: one call, one read");
    CHECK(r.fused.time_s >= 2 * floor_s, "fused %.6g s >= 2 x %.6g s",
          r.fused.time_s, floor_s);
}

/* What a call reads: a quantized weight's packed bytes (values and a
 * scale and zero point per group and column), fp32 on the f32 path. */
static void weight_bytes(void)
{
    agmm_model_machine_t m;
    agmm_plan_desc_t d;
    decode(&m, &d);
    d.gemm_path = AGMM_GEMM_PATH_F32;
    CLOSE(mdl_weight_bytes(&d, K, N), 4.0 * K * N, "the f32 path: fp32");
    d.gemm_path = AGMM_GEMM_PATH_AUTO;
    d.weight_dtype = AGMM_WDTYPE_INT4;
    d.group_size = 128;
    double q = mdl_weight_bytes(&d, K, N);
    CLOSE(q, (double)agmm_wq_packed_bytes(K, N, 4, 128), "int4 packed");
    double values = K * (double)N / 2, groups = 8.0 * (K / 128) * N;
    CHECK(q >= values + groups && q <= 1.01 * (values + groups),
          "int4: %.0f bytes, values %.0f + scales and zeros %.0f", q, values,
          groups);
    d.weight_dtype = AGMM_WDTYPE_INT8;
    CLOSE(mdl_weight_bytes(&d, K, N),
          (double)agmm_wq_packed_bytes(K, N, 8, 128), "int8 packed");
    CHECK(mdl_weight_bytes(&d, K, N) > 1.8 * q,
          "int8: twice int4's values, the same scales");
    /* The int4 round at the floor: a quarter-ish of bf16's. */
    d.weight_dtype = AGMM_WDTYPE_INT4;
    m.dram_gbs = 30;
    agmm_model_result_t r;
    CHECK(agmm_model_predict(&m, &d, &r) == AGMM_OK, "predict int4");
    CLOSE(r.baseline.gemm_s, q / 30e9, "int4 baseline at the floor");
}

static void refused(void)
{
    agmm_model_machine_t m;
    agmm_plan_desc_t d;
    decode(&m, &d);
    m.dram_gbs = -1;
    CHECK(agmm_model_check(&m, &d) == AGMM_ERR_INVALID_ARG, "dram_gbs -1");
    CHECK(strstr(agmm_last_error(), "dram_gbs"), "names it: %s",
          agmm_last_error());
    m.dram_gbs = NAN;
    CHECK(agmm_model_check(&m, &d) == AGMM_ERR_INVALID_ARG, "dram_gbs nan");
}

int main(void)
{
    floor_of_a_decode_round();
    a_call_per_tile_reads_it_per_tile();
    weight_bytes();
    refused();
    CHECK_DONE("test_model_dram");
}
