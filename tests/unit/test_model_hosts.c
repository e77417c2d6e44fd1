/* The performance model (agmm_model.h) across hosts and at scale: MPI's
 * relay against direct puts on hand-worked rounds, what bounds a relayed
 * round, the symmetric fast path against the full simulation, 1024 ranks
 * in events proportional to one host's puts. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "agmm_model.h"
#include "check.h"
#include "model/model.h"
#include "model_fixture.h"

/* 2 hosts x 2 ranks over MPI: each host's NIC sends every tile of its two
 * ranks to two remote ranks, or, relayed, to one (the relay copies it on
 * to its host mate): the link carries half the bytes. */
static void mpi_relay_halves_link(void)
{
    static const int64_t rows[4] = {256, 256, 256, 256};
    agmm_model_machine_t m;
    flat_machine(&m, 40);
    m.transport = AGMM_MODEL_MPI;
    m.hosts = 2;
    m.ranks_per_host = 2;
    m.link_gbps = 10;
    m.link_latency_us = 5;
    m.copy_gbs = 10;
    agmm_plan_desc_t d;
    plan(&d, 4, rows, 1024, 256);
    d.comm_workers = 1;
    agmm_model_result_t direct, relay;
    CHECK(agmm_model_predict(&m, &d, &direct) == AGMM_OK, "predict");
    m.relay = 1;
    CHECK(agmm_model_predict(&m, &d, &relay) == AGMM_OK, "predict relay");
    double shard_ser = 256.0 * 1024 * 4 * 8 / 10e9;
    CLOSE(direct.fused.busy_s[AGMM_MODEL_BOUND_LINK], 4 * shard_ser,
          "direct: 2 ranks x 2 remote peers per NIC");
    CLOSE(relay.fused.busy_s[AGMM_MODEL_BOUND_LINK], 2 * shard_ser,
          "relay: 2 ranks x 1 relay per NIC");
    CLOSE(relay.fused.busy_s[AGMM_MODEL_BOUND_RELAY],
          2 * 128.0 * 1024 * 4 / 10e9, "relay: one copy per received tile");
    CHECK(direct.fused.busy_s[AGMM_MODEL_BOUND_RELAY] == 0,
          "no relay: no forwards");
    CLOSE(relay.baseline.time_s, direct.baseline.time_s,
          "the baseline is not relayed");
}

/* 3 hosts x 4 ranks: a relay forwards the tiles of two remote ranks to
 * three host mates, twice what a comm worker copies to them of its own:
 * with a fast link and slow copies the relay bounds the round; with a
 * slow link it is what makes the round fast. */
static void relay_bound(void)
{
    static const int64_t rows[12] = {512, 512, 512, 512, 512, 512,
                                     512, 512, 512, 512, 512, 512};
    agmm_model_machine_t m;
    agmm_model_machine_init(&m);
    m.transport = AGMM_MODEL_MPI;
    m.hosts = 3;
    m.ranks_per_host = 4;
    m.link_gbps = 400;
    m.link_latency_us = 5;
    m.copy_gbs = 0.5;
    agmm_plan_desc_t d;
    plan(&d, 12, rows, 4096, 256);
    d.comm_workers = 1;
    agmm_model_result_t on, off;
    m.relay = 1;
    CHECK(agmm_model_predict(&m, &d, &on) == AGMM_OK, "relay");
    m.relay = 0;
    CHECK(agmm_model_predict(&m, &d, &off) == AGMM_OK, "direct");
    CHECK(on.fused.bound == AGMM_MODEL_BOUND_RELAY, "relay-bound: %s",
          agmm_model_bound_name(on.fused.bound));
    CLOSE(on.fused.busy_s[AGMM_MODEL_BOUND_RELAY],
          2 * 4 * 3 * 128.0 * 4096 * 4 / 0.5e9,
          "2 sources x 4 tiles x 3 mates");
    CHECK(on.fused.time_s > off.fused.time_s, "relayed %.6g > direct %.6g",
          on.fused.time_s, off.fused.time_s);
    m.link_gbps = 10;
    m.copy_gbs = 5;
    CHECK(agmm_model_predict(&m, &d, &off) == AGMM_OK, "direct, slow link");
    m.relay = 1;
    CHECK(agmm_model_predict(&m, &d, &on) == AGMM_OK, "relay, slow link");
    CHECK(off.fused.bound == AGMM_MODEL_BOUND_LINK, "direct: %s",
          agmm_model_bound_name(off.fused.bound));
    CHECK(on.fused.time_s < 0.7 * off.fused.time_s, "relayed %.6g, direct %.6g",
          on.fused.time_s, off.fused.time_s);
}

/* Every rank the same rows: ag-gemm's representative round is the
 * world's exactly; gemm-rs and gemm-ar sum in rank order, so their fast
 * path (the first and the last group simulated, the slower kept)
 * approximates: within 2% here. */
static void symmetry(void)
{
    static const int64_t rows[8] = {300, 300, 300, 300, 300, 300, 300, 300};
    const int ops[3] = {AGMM_OP_AG_GEMM, AGMM_OP_GEMM_RS, AGMM_OP_GEMM_AR};
    for (int tr = 0; tr < 3; tr++)
        for (int o = 0; o < 3; o++)
            for (int cw = 0; cw <= 1; cw++) {
                agmm_model_machine_t m;
                agmm_model_machine_init(&m);
                m.transport = (agmm_model_transport_t)tr;
                m.hosts = tr == AGMM_MODEL_MPI ? 4 : 1;
                m.ranks_per_host = 8 / m.hosts;
                m.link_gbps = 25;
                m.link_latency_us = 3;
                m.relay = tr == AGMM_MODEL_MPI && o == 0;
                agmm_plan_desc_t d;
                plan(&d, 8, rows, 1024, 768);
                d.tile_n = 128;
                d.gemm_workers = 3;
                d.comm_workers = cw;
                d.op = (agmm_op_t)ops[o];
                agmm_model_result_t fast, full;
                CHECK(mdl_predict(&m, &d, MDL_FAST, &fast) == AGMM_OK, "fast");
                CHECK(mdl_predict(&m, &d, MDL_FULL, &full) == AGMM_OK, "full");
                double tol = o == 0 ? 1e-9 : 0.02;
                CHECK(fabs(fast.fused.time_s - full.fused.time_s) <=
                          tol * full.fused.time_s,
                      "transport %d op %d comm %d: fused %.9g vs full %.9g", tr,
                      o, cw, fast.fused.time_s, full.fused.time_s);
                CHECK(fabs(fast.baseline.time_s - full.baseline.time_s) <=
                          tol * full.baseline.time_s,
                      "transport %d op %d comm %d: baseline %.9g vs full %.9g",
                      tr, o, cw, fast.baseline.time_s, full.baseline.time_s);
                if (o == 0) {
                    CLOSE(fast.last_arrival_s, full.last_arrival_s,
                          "last arrival");
                    CHECK(fast.events < full.events,
                          "fewer events: %lld vs %lld", (long long)fast.events,
                          (long long)full.events);
                }
            }
}

/* 1024 ranks (128 hosts x 8) on MPI, every rank the same rows: the fast
 * path simulates one host, so the events stay proportional to its puts
 * (8 ranks x 4 tiles x 1023 peers), not the world's 4M. */
static void thousand_ranks(void)
{
    enum { P = 1024 };
    static int64_t rows[P];
    for (int i = 0; i < P; i++)
        rows[i] = 512;
    agmm_model_machine_t m;
    agmm_model_machine_init(&m);
    m.transport = AGMM_MODEL_MPI;
    m.hosts = 128;
    m.ranks_per_host = 8;
    m.link_gbps = 100;
    m.link_latency_us = 5;
    agmm_plan_desc_t d;
    plan(&d, P, rows, 4096, 4096);
    d.tile_n = 512;
    d.gemm_workers = 7;
    d.comm_workers = 1;
    agmm_model_result_t r;
    CHECK(agmm_model_predict(&m, &d, &r) == AGMM_OK, "1024 ranks");
    CHECK(r.events > 8 * 4 * 1023 && r.events < 2000000, "events %lld",
          (long long)r.events);
    /* The NIC carries 8 ranks' shards to 1016 remote ranks at least. */
    double nic = 8.0 * 512 * 4096 * 4 * 1016 * 8 / 100e9;
    CLOSE(r.fused.busy_s[AGMM_MODEL_BOUND_LINK], nic, "a NIC's busy time");
    CHECK(r.fused.time_s > nic && r.baseline.time_s > nic, "after the NIC");
}

int main(void)
{
    mpi_relay_halves_link();
    relay_bound();
    symmetry();
    thousand_ranks();
    CHECK_DONE("test_model_hosts");
}
