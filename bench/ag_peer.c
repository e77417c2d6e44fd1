/* agmm_ag_peer: the program a user writes who gathers first and then calls
 * the field's standard CPU GEMM library: MPI_Allgather of every rank's rows
 * of A, then one GEMM of the gathered A [M, K] with the rank's weight
 * [K, N] (issue 9). agmm's fused operation is measured against it.
 *
 *   --engine onednn    (when built with libdnnl-dev) one oneDNN matmul:
 *                      bf16 x bf16 -> f32, f32, fp16 as f16 where the CPU
 *                      has it (else converted to f32); weight reordered
 *                      once, primitive created once
 *   --engine onednn-f32  (the same build) what a user writes who converts
 *                      to fp32: bf16/fp16 A converted to fp32 each round
 *                      (agmm's agmm_convert_to_f32, inside the timed round)
 *                      + one oneDNN f32 matmul; weight converted to fp32
 *                      and reordered once (fp32 input: no conversion)
 *   --engine openblas  convert to fp32 (fp16, bf16) + one cblas_sgemm
 *   --engine onednn-int8  (the same build; --dtype int8, which implies it
 *                      and it implies) W8A8: every rank quantizes its rows
 *                      (per row) and its weight (per column) with
 *                      agmm_quantize before the rounds; a round gathers
 *                      the int8 rows and their scales (two MPI_Allgather)
 *                      and runs one oneDNN s8 x s8 -> f32 matmul with the
 *                      weight's scales as per-column output scales, then
 *                      scales C's rows by the gathered row scales
 *
 *   --op gemm-ar       GEMM + all-reduce instead (agmm's --op gemm-ar, issue
 *                      23): rank r holds A_r [M, K_r] (K split as agmm_k_split
 *                      does) and W_r [K_r, N]; a round is one GEMM, then
 *                      MPI_Allreduce (sum, in place) of C [M, N], M = P x
 *                      --m-local (every rank's owned rows, as in agmm)
 *
 * One thread per rank. A round: MPI_Barrier, then on each rank the time of
 * MPI_Allgather + the GEMM (+ conversion), or of the GEMM + MPI_Allreduce;
 * the round's time is the slowest rank's (MPI_Reduce max). Before the rounds,
 * one untimed round's output is checked at 64 entries per rank against
 * double-precision dot products of the same inputs (regenerated, so a wrong
 * gather fails too; int8: exact integer dot products of the regenerated
 * quantized values, scaled).
 *
 * usage: mpirun -np P agmm_ag_peer [--m-local R] [--k K] [--n N]
 *            [--dtype bf16|fp16|fp32|int8]
 *            [--engine onednn|onednn-f32|onednn-int8|openblas]
 *            [--op ag-gemm|gemm-ar] [--rounds N] [--warmup N] [--json]
 * defaults: 2048 rows per rank, K = N = 4096, bf16, oneDNN if built,
 * 10 rounds, 2 warmup. Exit 0, 1 (failed check or run), 2 (bad usage). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ag_peer.h"
#include "ag_peer_inputs.h"
#include "ag_peer_stats.h"
#include "gemm/convert.h"

typedef enum peer_engine {
    PEER_OPENBLAS,
    PEER_ONEDNN,
    PEER_ONEDNN_F32,
    PEER_ONEDNN_INT8
} peer_engine_t;

static const char *engine_name(peer_engine_t e)
{
    return e == PEER_ONEDNN        ? "onednn"
           : e == PEER_ONEDNN_F32  ? "onednn-f32"
           : e == PEER_ONEDNN_INT8 ? "onednn-int8"
                                   : "openblas";
}

typedef struct opts {
    int64_t m_local, k, n;
    agmm_dtype_t dt;
    peer_engine_t engine;
    int rounds, warmup, json;
    int ar; /* --op gemm-ar */
} opts_t;

static int parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end = NULL;
    long long v = s ? strtoll(s, &end, 10) : 0;
    if (!s || end == s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* 0, or 2 with one line on stderr if `say`. */
static int parse(int argc, char **argv, opts_t *o, int say)
{
#ifdef AG_PEER_ONEDNN
    o->engine = PEER_ONEDNN;
#else
    o->engine = PEER_OPENBLAS;
#endif
    o->m_local = 2048, o->k = 4096, o->n = 4096;
    o->dt = AGMM_DTYPE_BF16;
    o->rounds = 10, o->warmup = 2, o->json = 0, o->ar = 0;
    int dtype_set = 0, engine_set = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int64_t x = 0;
        int bad = 0, used = 1;
        if (!strcmp(a, "--json")) {
            o->json = 1;
            used = 0;
        } else if (!strcmp(a, "--m-local")) {
            bad = parse_int(v, 1, 1 << 24, &o->m_local);
        } else if (!strcmp(a, "--k")) {
            bad = parse_int(v, 1, 1 << 24, &o->k);
        } else if (!strcmp(a, "--n")) {
            bad = parse_int(v, 1, 1 << 24, &o->n);
        } else if (!strcmp(a, "--rounds") || !strcmp(a, "--warmup")) {
            int r = a[2] == 'r';
            bad = parse_int(v, r, 100000, &x);
            *(r ? &o->rounds : &o->warmup) = (int)x;
        } else if (!strcmp(a, "--dtype")) {
            if (v && !strcmp(v, "bf16"))
                o->dt = AGMM_DTYPE_BF16;
            else if (v && !strcmp(v, "fp16"))
                o->dt = AGMM_DTYPE_FP16;
            else if (v && !strcmp(v, "fp32"))
                o->dt = AGMM_DTYPE_FP32;
            else if (v && !strcmp(v, "int8"))
                o->dt = AGMM_DTYPE_INT8;
            else
                bad = 1;
            dtype_set = 1;
        } else if (!strcmp(a, "--op")) {
            if (v && !strcmp(v, "ag-gemm"))
                o->ar = 0;
            else if (v && !strcmp(v, "gemm-ar"))
                o->ar = 1;
            else
                bad = 1;
        } else if (!strcmp(a, "--engine")) {
            if (v && !strcmp(v, "openblas"))
                o->engine = PEER_OPENBLAS;
            else if (v && !strcmp(v, "onednn"))
                o->engine = PEER_ONEDNN;
            else if (v && !strcmp(v, "onednn-f32"))
                o->engine = PEER_ONEDNN_F32;
            else if (v && !strcmp(v, "onednn-int8"))
                o->engine = PEER_ONEDNN_INT8;
            else
                bad = 1;
            engine_set = 1;
        } else {
            if (say)
                fprintf(stderr,
                        "agmm_ag_peer: unknown option '%s' (see the usage in "
                        "bench/ag_peer.c)\n",
                        a);
            return 2;
        }
        if (bad) {
            if (say)
                fprintf(stderr, "agmm_ag_peer: %s: bad or missing value%s\n", a,
                        !strcmp(a, "--op") ? " (allowed: ag-gemm, gemm-ar)"
                                           : "");
            return 2;
        }
        i += used;
    }
    /* int8 is the onednn-int8 engine's alone: either implies the other. */
    if (o->engine == PEER_ONEDNN_INT8 && !dtype_set) o->dt = AGMM_DTYPE_INT8;
    if (o->dt == AGMM_DTYPE_INT8 && !engine_set) o->engine = PEER_ONEDNN_INT8;
    if ((o->dt == AGMM_DTYPE_INT8) != (o->engine == PEER_ONEDNN_INT8)) {
        if (say)
            fprintf(stderr,
                    "agmm_ag_peer: --dtype %s --engine %s: int8 runs on the "
                    "onednn-int8 engine only, and that engine on int8 only\n",
                    agmm_dtype_name(o->dt), engine_name(o->engine));
        return 2;
    }
    if (o->ar && o->dt == AGMM_DTYPE_INT8) {
        if (say)
            fprintf(stderr, "agmm_ag_peer: --op gemm-ar: int8 is not built "
                            "(allowed: --dtype bf16|fp16|fp32)\n");
        return 2;
    }
#ifndef AG_PEER_ONEDNN
    if (o->engine != PEER_OPENBLAS) {
        if (say)
            fprintf(stderr,
                    "agmm_ag_peer: --engine %s: built without oneDNN "
                    "(apt-get install libdnnl-dev)\n",
                    engine_name(o->engine));
        return 2;
    }
#endif
    return 0;
}

static void report(const opts_t *o, int P, const ag_engine_t *e,
                   const double *chk, double bound, int pass, stats_t tot,
                   stats_t gat)
{
    int64_t M = o->m_local * P;
    /* gemm-ar: each rank's GEMM is over its part of k */
    double k_rank = o->ar ? (double)o->k / P : (double)o->k;
    const char *comm = o->ar ? "allreduce" : "allgather";
    double gflops = 2.0 * (double)M * k_rank * (double)o->n /
                    (tot.median * 1e-6) * 1e-9; /* one thread per rank */
    const char *dt = agmm_dtype_name(o->dt), *eng = engine_name(o->engine);
    if (o->json) {
        printf("{\"command\":\"ag_peer\",\"op\":\"%s\",\"ranks\":%d,\"m_"
               "local\":%lld,"
               "\"m\":%lld,\"k\":%lld,\"n\":%lld,\"dtype\":\"%s\","
               "\"engine\":\"%s\",\"library\":\"%s\",\"what\":\"%s\","
               "\"impl\":\"%s\",\"threads_per_rank\":1,\"rounds\":%d,"
               "\"warmup\":%d,",
               o->ar ? "gemm-ar" : "ag-gemm", P, (long long)o->m_local,
               (long long)M, (long long)o->k, (long long)o->n, dt, eng, e->name,
               e->what, e->impl, o->rounds, o->warmup);
        json_stats("round", &tot);
        printf(",");
        json_stats(comm, &gat);
        printf(",\"gflops_per_core\":%.6g,\"check\":{\"entries\":%d,"
               "\"max_abs_diff\":%.6g,\"max_rel_diff\":%.6g,\"bound\":%.6g,"
               "\"pass\":%s}}\n",
               gflops, NCHECK, chk[0], chk[1], bound, pass ? "true" : "false");
        return;
    }
    printf("agmm_ag_peer: %d ranks, M=%lld (%lld per rank) K=%lld N=%lld, %s "
           "in, fp32 out; a round = %s, 1 thread per rank\n",
           P, (long long)M, (long long)o->m_local, (long long)o->k,
           (long long)o->n, dt,
           o->ar ? "GEMM + MPI_Allreduce" : "MPI_Allgather + GEMM");
    printf("engine: %s (%s), %s; impl %s\n", eng, e->name, e->what, e->impl);
    printf("check: %d entries per rank against double-precision dot products: "
           "max |diff| %.3g, max |diff|/sum|a*w| %.3g (bound %.3g): %s\n",
           NCHECK, chk[0], chk[1], bound, pass ? "PASS" : "FAIL");
    printf("rounds: %d timed + %d warmup; a round's time is the slowest "
           "rank's, from a common barrier\n",
           o->rounds, o->warmup);
    printf("%-10s %11s %11s %11s %11s %11s %9s\n", "part", "median_ms",
           "min_ms", "max_ms", "mean_ms", "stdev_ms", "spread");
    text_stats("round", &tot);
    text_stats(comm, &gat);
    printf("GF/s per core (median round): %.1f\n", gflops);
}

/* One round: barrier, then this rank's round and communication times (s):
 * allgather + GEMM (int8: the rows' scales are gathered too, sa_local ->
 * sa_all, else NULL, within the allgather's time), or with --op gemm-ar
 * GEMM of a_local + all-reduce of c. */
static int comm_size(void)
{
    int P = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    return P;
}

static void one_round(const opts_t *o, MPI_Datatype row, ag_engine_t *e,
                      const void *a_local, void *a_all, const float *sa_local,
                      float *sa_all, float *c, double *t)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (o->ar) {
        if (e->run(e, a_local, c) != 0) MPI_Abort(MPI_COMM_WORLD, 1);
        double t1 = MPI_Wtime();
        MPI_Allreduce(MPI_IN_PLACE, c, (int)(o->m_local * o->n * comm_size()),
                      MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        t[0] = MPI_Wtime() - t0;
        t[1] = t[0] - (t1 - t0);
        return;
    }
    MPI_Allgather(a_local, (int)o->m_local, row, a_all, (int)o->m_local, row,
                  MPI_COMM_WORLD);
    if (sa_local)
        MPI_Allgather(sa_local, (int)o->m_local, MPI_FLOAT, sa_all,
                      (int)o->m_local, MPI_FLOAT, MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    if (e->run(e, a_all, c) != 0) MPI_Abort(MPI_COMM_WORLD, 1);
    double t2 = MPI_Wtime();
    t[0] = t2 - t0;
    t[1] = t1 - t0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, P = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    opts_t o;
    int rc = parse(argc, argv, &o, rank == 0);
    if (rc != 0) {
        MPI_Finalize();
        return rc;
    }
    int64_t M = o.m_local * P, N = o.n;
    /* The GEMM's K: every rank's, or (gemm-ar) this rank's part */
    int64_t K = o.ar ? agmm_k_split(o.k, P, rank) : o.k;
    if (o.ar && ((double)M * (double)N > 2147483647.0 || o.k < P)) {
        if (rank == 0)
            fprintf(stderr,
                    "agmm_ag_peer: --op gemm-ar: needs --k >= ranks (%d) and "
                    "M x N <= 2^31 - 1 (MPI_Allreduce's count)\n",
                    P);
        MPI_Finalize();
        return 2;
    }
    size_t es = agmm_dtype_size(o.dt);
    /* gemm-ar: a_local is A_r [M, K_r], and nothing is gathered */
    void *a_local = malloc((size_t)((o.ar ? M : o.m_local) * K) * es + 1);
    void *a_all = malloc((size_t)(o.ar ? 1 : M * K) * es);
    void *w = malloc((size_t)(K * N) * es);
    float *c = malloc((size_t)(M * N) * sizeof(float));
    double *tot = calloc((size_t)o.rounds, sizeof(double));
    double *gat = calloc((size_t)o.rounds, sizeof(double));
    int int8 = o.dt == AGMM_DTYPE_INT8;
    /* int8: the row scales (this rank's, the gathered) and W's columns' */
    float *sa_local = int8 ? malloc((size_t)o.m_local * sizeof(float)) : NULL;
    float *sa_all = int8 ? malloc((size_t)M * sizeof(float)) : NULL;
    float *sw = int8 ? malloc((size_t)N * sizeof(float)) : NULL;
    if (!a_local || !a_all || !w || !c || !tot || !gat ||
        (int8 && (!sa_local || !sa_all || !sw))) {
        fprintf(stderr, "agmm_ag_peer: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    peer_fill(o.dt, peer_stream_a(rank), a_local, (o.ar ? M : o.m_local) * K);
    peer_fill(o.dt, peer_stream_w(rank), w, K * N);
    /* int8: quantized once here, as a caller of agmm's int8 plan does. */
    if (int8 && (peer_fill_int8(peer_stream_a(rank), 0, o.m_local, K, K,
                                AGMM_QUANT_ROWS, a_local, sa_local) ||
                 peer_fill_int8(peer_stream_w(rank), 0, K, N, N,
                                AGMM_QUANT_COLS, w, sw)))
        MPI_Abort(MPI_COMM_WORLD, 1);

    /* Everything done once, outside the rounds. */
    ag_engine_t e;
#ifdef AG_PEER_ONEDNN
    rc = o.engine == PEER_ONEDNN ? ag_engine_onednn(&e, o.dt, M, K, N, w)
         : o.engine == PEER_ONEDNN_F32
             ? ag_engine_onednn_f32(&e, o.dt, M, K, N, w)
         : o.engine == PEER_ONEDNN_INT8
             ? ag_engine_onednn_int8(&e, M, K, N, w, sw)
             : ag_engine_openblas(&e, o.dt, M, K, N, w);
#else
    rc = ag_engine_openblas(&e, o.dt, M, K, N, w);
#endif
    if (rc != 0) MPI_Abort(MPI_COMM_WORLD, 1);
    e.row_scale = sa_all;
    MPI_Datatype row;
    MPI_Type_contiguous((int)((size_t)K * es), MPI_BYTE, &row);
    MPI_Type_commit(&row);

    /* The check round (untimed), then warmup and timed rounds. */
    double t[2], worst[2], chk[2], chk_all[2];
    one_round(&o, row, &e, a_local, a_all, sa_local, sa_all, c, t);
    peer_check(o.dt, o.m_local, o.k, o.n, o.ar, rank, c, chk);
    MPI_Reduce(chk, chk_all, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    /* Summation error of K fp32 additions, worst case: K * 2^-24 of the
     * sum of magnitudes (the products of bf16/fp16 inputs are exact). */
    double bound = (double)(K + 2) * 0x1p-24;
    /* gemm-ar: every rank's K_r, then the P - 1 additions of the sum */
    if (o.ar) bound = (double)(o.k + P + 2) * 0x1p-24;
    /* int8: the int32 sum is exact; its conversion to fp32 and the two
     * scalings round (relative to |C| <= the scaled sum of magnitudes). */
    if (int8) bound = 4 * 0x1p-24;
    int pass = chk_all[1] <= bound;
    MPI_Bcast(&pass, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!pass && rank == 0) /* nobody benchmarks a wrong peer */
        fprintf(stderr,
                "agmm_ag_peer: check FAILED: max |diff| %.3g, max "
                "|diff|/sum|a*w| %.3g > bound %.3g; not timed\n",
                chk_all[0], chk_all[1], bound);
    for (int i = 0; pass && i < o.warmup + o.rounds; i++) {
        one_round(&o, row, &e, a_local, a_all, sa_local, sa_all, c, t);
        MPI_Reduce(t, worst, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (i >= o.warmup) {
            tot[i - o.warmup] = worst[0] * 1e6;
            gat[i - o.warmup] = worst[1] * 1e6;
        }
    }
    if (rank == 0 && pass)
        report(&o, P, &e, chk_all, bound, pass, summarize(tot, o.rounds),
               summarize(gat, o.rounds));
    fflush(stdout);
    MPI_Type_free(&row);
    e.destroy(&e);
    free(a_local), free(a_all), free(w), free(c), free(tot), free(gat);
    free(sa_local), free(sa_all), free(sw);
    MPI_Finalize();
    return pass ? 0 : 1;
}
