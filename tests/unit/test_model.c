/* The performance model (agmm_model.h) on rounds worked out by hand: the
 * GEMM call's cost, shm, the emulated link tile by tile, gemm-rs; the
 * names; descriptions refused by agmm_model_check. MPI's hosts and relay,
 * and the symmetric fast path, are test_model_hosts.c. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "agmm_model.h"
#include "check.h"
#include "model/model.h"
#include "model_fixture.h"

static void rate_interpolation(void)
{
    agmm_model_machine_t m;
    agmm_model_machine_init(&m);
    m.n_rates = 2;
    m.rates[0] = (agmm_model_rate_t){16, 10};
    m.rates[1] = (agmm_model_rate_t){256, 50};
    CLOSE(mdl_rate(&m, 1), 10, "clamped below");
    CLOSE(mdl_rate(&m, 4096), 50, "clamped above");
    CLOSE(mdl_rate(&m, 64), 30, "halfway in log rows");
}

/* 2 ranks on shm, copies ~free. Without comm workers each GEMM worker
 * copies its tiles first, so every tile is there when it looks: one call
 * over all M rows. With a comm worker the GEMM worker looks at once,
 * nothing has arrived: local tiles (one call each), then the remote ones. */
static void shm_two_ranks(void)
{
    static const int64_t rows[2] = {256, 256};
    agmm_model_machine_t m;
    flat_machine(&m, 40);
    m.ranks_per_host = 2;
    m.copy_gbs = 1e9; /* a 1 MB tile in 1e-12 s */
    agmm_plan_desc_t d;
    plan(&d, 2, rows, 1024, 256);
    agmm_model_result_t r;
    CHECK(agmm_model_predict(&m, &d, &r) == AGMM_OK, "predict");
    double over = (10 + 1) * 1e-6, copy = 2 * 128 * 1024 * 4 / 1e18;
    CLOSE(r.fused.time_s, copy + gemm_s(3, 512, 256, 1024, 40) + over,
          "shm fused, no comm worker: one call of M");
    CLOSE(r.fused.gemm_s, gemm_s(3, 512, 256, 1024, 40), "its GEMM");
    CHECK(r.fused.bound == AGMM_MODEL_BOUND_GEMM, "GEMM-bound: %s",
          agmm_model_bound_name(r.fused.bound));
    CLOSE(r.baseline.time_s,
          256 * 1024 * 4 / 1e18 + gemm_s(3, 512, 256, 1024, 40) + over,
          "shm baseline");
    /* Two ranks' GEMM workers on one core: every thread's work twice as
     * long. */
    agmm_model_result_t shared;
    m.cores_per_host = 1;
    CHECK(agmm_model_predict(&m, &d, &shared) == AGMM_OK, "predict");
    CLOSE(shared.fused.time_s - over, 2 * (r.fused.time_s - over),
          "one core for two ranks");
    CLOSE(shared.baseline.time_s - over, 2 * (r.baseline.time_s - over),
          "one core for two ranks, baseline");
    m.cores_per_host = 2;
    CHECK(agmm_model_predict(&m, &d, &shared) == AGMM_OK, "predict");
    CLOSE(shared.fused.time_s, r.fused.time_s, "a core each");
    m.cores_per_host = 0;
    d.comm_workers = 1;
    CHECK(agmm_model_predict(&m, &d, &r) == AGMM_OK, "predict");
    CLOSE(r.fused.time_s, 4 * gemm_s(3, 128, 256, 1024, 40) + over,
          "shm fused, a comm worker: four tile calls");
    /* More rows than AGMM_AG_WHOLE_ROWS (512): a call per tile, also with
     * every tile there. */
    static const int64_t rows2[2] = {384, 384};
    agmm_plan_desc_t d2;
    plan(&d2, 2, rows2, 1024, 256);
    CHECK(agmm_model_predict(&m, &d2, &r) == AGMM_OK, "predict");
    CLOSE(r.fused.time_s,
          copy * 3 / 2 + 6 * gemm_s(3, 128, 256, 1024, 40) + over,
          "shm fused, 768 rows, no comm worker: six tile calls");
    CHECK(r.events > 0, "events counted");
}

/* 2 ranks over the emulated link, n small: tile t of the peer arrives at
 * (t+1) 8 bytes / gbps + latency + its delivery copy; the fused round is
 * the last arrival plus one tile's GEMM, the baseline the shard's wire,
 * latency and copy plus the GEMM of all M rows. */
static void link_two_ranks(void)
{
    static const int64_t rows[2] = {512, 512};
    agmm_model_machine_t m;
    flat_machine(&m, 40);
    m.transport = AGMM_MODEL_LINK;
    m.ranks_per_host = 2;
    m.link_gbps = 1.0;
    m.link_latency_us = 50;
    m.copy_gbs = 1000;
    agmm_plan_desc_t d;
    plan(&d, 2, rows, 1024, 64);
    d.comm_workers = 1;
    agmm_model_result_t r;
    CHECK(agmm_model_predict(&m, &d, &r) == AGMM_OK, "predict");
    double tile = 128.0 * 1024 * 4, ser = tile * 8 / 1e9, lat = 50e-6;
    double cp = tile / 1e12, over = 11e-6, g = gemm_s(3, 128, 64, 1024, 40);
    double last = 4 * ser + lat + cp;
    CLOSE(r.last_arrival_s, last, "last tile's arrival");
    CLOSE(r.fused.time_s, last + g + over, "link fused");
    CLOSE(r.gemm_before_last_s, 7 * g, "GEMM before the last tile");
    CHECK(r.fused.bound == AGMM_MODEL_BOUND_LINK, "link-bound: %s",
          agmm_model_bound_name(r.fused.bound));
    CLOSE(r.fused.busy_s[AGMM_MODEL_BOUND_LINK], 4 * ser, "a wire's busy time");
    CLOSE(r.fused.comm_s, last, "communication alone");
    CLOSE(r.baseline.time_s,
          4 * ser + lat + 4 * cp + gemm_s(3, 1024, 64, 1024, 40) + over,
          "link baseline");
    CLOSE(r.ratio, r.fused.time_s / r.baseline.time_s, "ratio");
}

/* Uneven rows (every rank simulated): rank 1 (128 rows) waits for rank
 * 0's four tiles, rank 0 for one; rank 1 is the slowest. */
static void link_uneven(void)
{
    static const int64_t rows[2] = {512, 128};
    agmm_model_machine_t m;
    flat_machine(&m, 40);
    m.transport = AGMM_MODEL_LINK;
    m.ranks_per_host = 2;
    m.link_gbps = 2.0;
    m.link_latency_us = 20;
    m.copy_gbs = 1000;
    agmm_plan_desc_t d;
    plan(&d, 2, rows, 1024, 64);
    d.comm_workers = 1;
    agmm_model_result_t r;
    CHECK(agmm_model_predict(&m, &d, &r) == AGMM_OK, "predict");
    double tile = 128.0 * 1024 * 4, ser = tile * 8 / 2e9, lat = 20e-6;
    double cp = tile / 1e12, over = 11e-6, g = gemm_s(3, 128, 64, 1024, 40);
    CLOSE(r.fused.time_s, 4 * ser + lat + cp + g + over, "uneven fused");
    CLOSE(r.last_arrival_s, 4 * ser + lat + cp, "rank 1's last tile");
    CLOSE(r.baseline.time_s,
          4 * ser + lat + 4 * cp + gemm_s(3, 640, 64, 1024, 40) + over,
          "uneven baseline");
}

/* What bounds: slow copies on shm, a round all overhead. */
static void bounds(void)
{
    static const int64_t rows[4] = {512, 512, 512, 512};
    agmm_model_machine_t m;
    flat_machine(&m, 40);
    m.ranks_per_host = 4;
    m.copy_gbs = 0.2;
    agmm_plan_desc_t d;
    plan(&d, 4, rows, 4096, 256);
    d.comm_workers = 1;
    agmm_model_result_t r;
    CHECK(agmm_model_predict(&m, &d, &r) == AGMM_OK, "predict");
    CHECK(r.fused.bound == AGMM_MODEL_BOUND_COPY, "slow copies: %s",
          agmm_model_bound_name(r.fused.bound));
    CHECK(r.baseline.bound == AGMM_MODEL_BOUND_COPY, "baseline too: %s",
          agmm_model_bound_name(r.baseline.bound));
    static const int64_t one[2] = {1, 1};
    flat_machine(&m, 40);
    m.ranks_per_host = 2;
    m.round_us = 2000;
    plan(&d, 2, one, 64, 64);
    CHECK(agmm_model_predict(&m, &d, &r) == AGMM_OK, "predict");
    CHECK(r.fused.bound == AGMM_MODEL_BOUND_OVERHEAD, "overhead: %s",
          agmm_model_bound_name(r.fused.bound));
}

/* gemm-rs, 2 ranks on shm, one tile each, no comm worker (one call per
 * block): each rank computes the peer's tile (g), puts it (c), computes
 * its own (g); rank 1 first sums rank 0's partial (red over its columns),
 * rank 0 then sums rank 1's (red): both end at 2 g + c + red. */
static void rs_two_ranks(void)
{
    static const int64_t rows[2] = {128, 128};
    agmm_model_machine_t m;
    flat_machine(&m, 40);
    m.ranks_per_host = 2;
    m.copy_gbs = 8;
    m.reduce_gbs = 2;
    agmm_plan_desc_t d;
    plan(&d, 2, rows, 2048, 512);
    d.op = AGMM_OP_GEMM_RS;
    agmm_model_result_t r;
    CHECK(agmm_model_predict(&m, &d, &r) == AGMM_OK, "predict");
    double part = 128.0 * 512 * 4, g = gemm_s(3, 128, 512, 1024, 40);
    double c = part / 8e9, red = part / 2e9, over = 11e-6;
    CLOSE(r.fused.time_s, 2 * g + c + red + over, "gemm-rs fused");
    CLOSE(r.fused.busy_s[AGMM_MODEL_BOUND_REDUCE], red, "a rank's sums");
    CLOSE(r.baseline.time_s, gemm_s(3, 256, 512, 1024, 40) + c + 2 * red + over,
          "gemm-rs baseline");
    /* gemm-ar adds the reduced tile's put (c) to the peer and its copy
     * into C there (c): rank 0 reduces last, at 2 g + c + red. */
    d.op = AGMM_OP_GEMM_AR;
    CHECK(agmm_model_predict(&m, &d, &r) == AGMM_OK, "predict ar");
    CLOSE(r.fused.time_s, 2 * g + 3 * c + red + over, "gemm-ar fused");
}

/* tile_us on shm, 1 tile per rank, every rate ~free, no comm workers:
 * ag-gemm's GEMM worker puts its tile to the P - 1 peers (half of tile_us
 * each), by then every peer's tile is there, so it waits each (the other
 * half): fused grows by (P - 1) tile_us. gemm-rs alike: P - 1 partial
 * puts, then P - 1 partials waited and summed. The baselines' bulk puts
 * do not pay it. */
static void fused_tile_cost(void)
{
    static const int64_t rows[4] = {1, 1, 1, 1};
    for (int P = 2; P <= 4; P += 2) {
        for (int op = 0; op < 2; op++) {
            agmm_model_machine_t m;
            flat_machine(&m, 1e6);
            m.call_us = 0;
            m.round_us = 0;
            m.peer_us = 0;
            m.copy_gbs = 1e9;
            m.reduce_gbs = 1e9;
            m.ranks_per_host = P;
            agmm_plan_desc_t d;
            plan(&d, P, rows, 64, 64);
            d.op = op ? AGMM_OP_GEMM_RS : AGMM_OP_AG_GEMM;
            agmm_model_result_t r0, r1;
            CHECK(agmm_model_predict(&m, &d, &r0) == AGMM_OK, "predict");
            m.tile_us = 10;
            CHECK(agmm_model_predict(&m, &d, &r1) == AGMM_OK, "predict");
            char what[96];
            snprintf(what, sizeof what, "%s, %d ranks: fused + (P-1) tile_us",
                     agmm_op_name(d.op), P);
            CLOSE(r1.fused.time_s - r0.fused.time_s, (P - 1) * 10e-6, what);
            CHECK(r1.fused.bound == AGMM_MODEL_BOUND_OVERHEAD, "%s: bound %s",
                  what, agmm_model_bound_name(r1.fused.bound));
            CLOSE(r1.fused.busy_s[AGMM_MODEL_BOUND_OVERHEAD], (P - 1) * 10e-6,
                  "a rank's puts and waits");
            snprintf(what, sizeof what, "%s, %d ranks: baseline unchanged",
                     agmm_op_name(d.op), P);
            CLOSE(r1.baseline.time_s, r0.baseline.time_s, what);
        }
    }
    agmm_model_machine_t m;
    agmm_model_machine_init(&m);
    m.ranks_per_host = 4;
    agmm_plan_desc_t d;
    plan(&d, 4, rows, 64, 64);
    CHECK(agmm_model_check(&m, &d) == AGMM_OK, "tile_us default");
    m.tile_us = -1;
    CHECK(agmm_model_check(&m, &d) == AGMM_ERR_INVALID_ARG, "tile_us -1");
    CHECK(strstr(agmm_last_error(), "tile_us"), "names it: %s",
          agmm_last_error());
}

static void names(void)
{
    static const char *want[] = {"gemm", "link",   "relay",
                                 "copy", "reduce", "overhead"};
    for (int b = 0; b < AGMM_MODEL_BOUND_COUNT; b++)
        CHECK(!strcmp(agmm_model_bound_name((agmm_model_bound_t)b), want[b]),
              "bound %d", b);
    CHECK(!strcmp(agmm_model_bound_name(AGMM_MODEL_BOUND_COUNT), "invalid"),
          "bound");
    CHECK(!strcmp(agmm_model_transport_name(AGMM_MODEL_SHM), "shm"), "shm");
    CHECK(!strcmp(agmm_model_transport_name(AGMM_MODEL_LINK), "link"), "link");
    CHECK(!strcmp(agmm_model_transport_name(AGMM_MODEL_MPI), "mpi"), "mpi");
    CHECK(!strcmp(agmm_model_transport_name((agmm_model_transport_t)7),
                  "invalid"),
          "invalid transport");
}

static void refused(void)
{
    static const int64_t rows[4] = {64, 64, 64, 64};
    agmm_plan_desc_t d;
    plan(&d, 4, rows, 256, 256);
    agmm_model_machine_t m;
    agmm_model_machine_init(&m);
    m.ranks_per_host = 4;
    CHECK(agmm_model_check(&m, &d) == AGMM_OK, "a good description");
    m.ranks_per_host = 3;
    CHECK(agmm_model_check(&m, &d) == AGMM_ERR_INVALID_ARG, "rank count");
    CHECK(strstr(agmm_last_error(), "nranks"), "names it: %s",
          agmm_last_error());
    m.ranks_per_host = 4;
    m.n_rates = 2;
    m.rates[0] = (agmm_model_rate_t){64, 10};
    m.rates[1] = (agmm_model_rate_t){32, 20};
    CHECK(agmm_model_check(&m, &d) == AGMM_ERR_INVALID_ARG, "unsorted rates");
    m.rates[1] = (agmm_model_rate_t){128, 0};
    CHECK(agmm_model_check(&m, &d) == AGMM_ERR_INVALID_ARG, "a rate of 0");
    m.rates[1].gflops = 20;
    m.n_rates = 0;
    CHECK(agmm_model_check(&m, &d) == AGMM_ERR_INVALID_ARG, "no rates");
    m.n_rates = 2;
    m.transport = AGMM_MODEL_LINK;
    CHECK(agmm_model_check(&m, &d) == AGMM_ERR_INVALID_ARG, "link at 0 Gbit/s");
    CHECK(strstr(agmm_last_error(), "link_gbps"), "names it: %s",
          agmm_last_error());
    m.transport = AGMM_MODEL_MPI;
    CHECK(agmm_model_check(&m, &d) == AGMM_OK, "MPI on one host needs no link");
    m.hosts = 2;
    m.ranks_per_host = 2;
    CHECK(agmm_model_check(&m, &d) == AGMM_ERR_INVALID_ARG,
          "MPI hosts, no link");
    m.link_gbps = 10;
    CHECK(agmm_model_check(&m, &d) == AGMM_OK, "MPI hosts with a link");
    m.transport = AGMM_MODEL_SHM;
    CHECK(agmm_model_check(&m, &d) == AGMM_ERR_INVALID_ARG, "shm on 2 hosts");
    m.transport = AGMM_MODEL_MPI;
    m.copy_gbs = 0;
    CHECK(agmm_model_check(&m, &d) == AGMM_ERR_INVALID_ARG, "copy_gbs 0");
    m.copy_gbs = 5;
    m.relay = 2;
    CHECK(agmm_model_check(&m, &d) == AGMM_ERR_INVALID_ARG, "relay 2");
    m.relay = 0;
    m.cores_per_host = -1;
    CHECK(agmm_model_check(&m, &d) == AGMM_ERR_INVALID_ARG, "cores -1");
    m.relay = 2;
    agmm_model_result_t r;
    CHECK(agmm_model_predict(&m, &d, &r) == AGMM_ERR_INVALID_ARG,
          "predict checks too");
}

int main(void)
{
    rate_interpolation();
    shm_two_ranks();
    link_two_ranks();
    link_uneven();
    bounds();
    rs_two_ranks();
    fused_tile_cost();
    names();
    refused();
    CHECK_DONE("test_model");
}
