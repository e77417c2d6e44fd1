/*
 * agmm: the operations of a tensor-parallel layer (all-gather + GEMM, GEMM +
 * reduce-scatter, GEMM + all-reduce) with communication/computation
 * overlap, on CPUs.
 *
 * The core API: status, world, plan, run, trace. Test and benchmark helpers
 * (the reference result, fp32 conversion, benchmark parts of a round, BLAS
 * and link-emulation queries) are in agmm_ext.h, whose API may change
 * between versions. A program uses this header in three steps:
 *
 *   1. a world: the ranks taking part. On one host agmm_launch() forks the
 *      ranks itself and hands each one its world (shared-memory transport),
 *      or processes started elsewhere join one with agmm_world_join() /
 *      agmm_world_from_env() (the same transport); under an MPI launcher
 *      agmm_world_create_mpi() wraps MPI_COMM_WORLD.
 *   2. a plan: the operation (agmm_op_t), shape, dtype, tiles and worker
 *      threads, created collectively (every rank, same description) and
 *      reused for every round. Window memory, signals and the converted
 *      weight live in the plan.
 *   3. rounds: agmm_plan_run() computes, on every rank, either
 *        all-gather + GEMM (AGMM_OP_AG_GEMM, the default):
 *          C_r = gather(A_0..A_{P-1}) @ W_r, overlapping the transfer of
 *          row tiles with the GEMM of tiles that have already arrived; or
 *        GEMM + reduce-scatter (AGMM_OP_GEMM_RS): rank r's rows of
 *          sum_p A_p @ W_p (A_p and W_p rank p's slices of the inner
 *          dimension), each partial tile sent to its owner as soon as it
 *          is computed while the next ones are; or
 *        GEMM + all-reduce (AGMM_OP_GEMM_AR): all of sum_p A_p @ W_p on
 *          every rank, each owner's reduced tile sent to every peer as
 *          soon as it is summed.
 *      agmm_plan_run_args() does the same with fewer rows than the plan's
 *      most in this call (every operation) and, for all-gather + GEMM,
 *      several weights from one gather and/or the gathered A handed back.
 *
 * Errors. Every call that can fail for a reason worth telling returns an
 * agmm_status_t: AGMM_OK, or an AGMM_ERR_* value, in which case
 * agmm_last_error() holds a one-line message saying what failed (the
 * message of the most recent failure recorded in this process, i.e. on
 * this rank; it is printed once, where the failure was detected, when
 * logging is on). The other calls are queries and setters that cannot fail
 * in a way that needs a message:
 *   - names and sizes (agmm_status_str, agmm_dtype_name, agmm_version, ...)
 *     return static strings, never NULL (an out-of-range enum value gets
 *     a placeholder name), or 0 for an invalid value (agmm_dtype_size);
 *   - queries of an object (agmm_world_rank/size, agmm_plan_rows,
 *     agmm_plan_row_offset, agmm_trace_rounds, agmm_plan_bytes_per_rank,
 *     agmm_plan_pd_desc, agmm_plan_pd_bytes_per_rank, agmm_plan_pd_tiles)
 *     return the value, or a documented sentinel (-1 or 0) for a NULL,
 *     destroyed or invalid argument, without necessarily recording a
 *     message;
 *   - setters, destroys and agmm_world_abort return void; destroys ignore
 *     NULL.
 *
 * Threads. A plan is used by one thread at a time: agmm_plan_set_weight(),
 * agmm_plan_set_weight_i(), agmm_plan_set_bias(), agmm_plan_run(),
 * agmm_plan_run_args(), agmm_plan_run_part() (agmm_ext.h) and
 * agmm_plan_destroy() on the same plan must not overlap (calls one after
 * another from different threads are fine: each call's effects are
 * visible to the next). An overlapping call is detected and refused with
 * AGMM_ERR_BAD_STATE, without touching the plan or the running call.
 * Different plans of one world may be used from different threads only
 * for local calls (set_weight, set_bias); collective calls (plan
 * create/run/destroy, barrier, allgather) must be made by every rank in
 * the same order, so one thread per rank issues them. agmm_world_abort()
 * and agmm_last_error() may be called from any thread at any time;
 * agmm_plan_rows(),
 * agmm_plan_row_offset(), agmm_plan_weights(), agmm_plan_cols() and
 * agmm_plan_schedule_info() from any thread while the plan is not being
 * destroyed (rows and row offsets then read the last round's, or the one
 * before while a round starts: each value is read atomically, not the set).
 * The arrays an agmm_run_args_t points at are read during the call only.
 *
 * Failures. A failure one rank detects during a collective call (a
 * timeout, a bad argument to agmm_plan_run on a live plan, a transport
 * error) aborts the world: every other rank's waits end at once with
 * AGMM_ERR_ABORTED and a message naming the rank and the reason. A NULL or
 * destroyed plan has no world to abort: the caller just gets the status.
 */
#ifndef AGMM_H
#define AGMM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AGMM_VERSION_MAJOR  0
#define AGMM_VERSION_MINOR  1
#define AGMM_VERSION_PATCH  0
#define AGMM_VERSION_STRING "0.1.0"

/* ---------------------------------------------------------------- status */

typedef enum agmm_status {
    AGMM_OK = 0,
    AGMM_ERR_INVALID_ARG, /* a null pointer, a bad size, a bad enum value */
    AGMM_ERR_NO_MEMORY,   /* an allocation or a mapping failed */
    AGMM_ERR_TOO_LARGE,   /* byte counts overflow, or exceed available memory */
    AGMM_ERR_SYSTEM,      /* an OS call failed (errno in the message) */
    AGMM_ERR_TIMEOUT,     /* a wait passed its deadline */
    AGMM_ERR_ABORTED,     /* another rank failed and aborted the world */
    AGMM_ERR_MISMATCH,    /* ranks disagree (plan description, world size) */
    AGMM_ERR_BAD_STATE,   /* an object used after destroy or out of order */
    AGMM_ERR_UNSUPPORTED, /* not built in, or not available on this system */
    AGMM_ERR_TRANSPORT,   /* the transport (e.g. MPI) reported an error */
    AGMM_ERR_CHECK_FAILED, /* a result did not match its reference */
    AGMM_STATUS_COUNT
} agmm_status_t;

/* A static string naming the status ("AGMM_ERR_TIMEOUT"); never NULL. */
const char *agmm_status_str(agmm_status_t status);
/* A static one-line description of the status; never NULL. */
const char *agmm_status_describe(agmm_status_t status);
/* The message of the last failure recorded by this process, "" if none. */
const char *agmm_last_error(void);

const char *agmm_version(void);

/* ----------------------------------------------------------------- types */

typedef enum agmm_dtype {
    AGMM_DTYPE_FP16 = 0, /* IEEE 754 binary16 */
    AGMM_DTYPE_BF16 = 1, /* bfloat16: the upper half of a binary32 */
    AGMM_DTYPE_FP32 = 2,
    /* W8A8, symmetric: int8 values with fp32 scales (agmm_scale_t), the
     * products summed exactly in int32, C = a_scale[i] * w_scale[j] *
     * sum_k A[i,k] W[k,j] in fp32. agmm_quantize makes -127..127 only;
     * -128 is accepted and computed exactly all the same (k is at most
     * AGMM_INT8_MAX_K, so no int32 sum can overflow). Needs the oneDNN
     * engine (OpenBLAS has no int8 GEMM); its one path is NATIVE, with two
     * variants measured at plan creation (agmm_gemm_info_t.int8_variant). */
    AGMM_DTYPE_INT8 = 3,
} agmm_dtype_t;

/* The most k an INT8 plan takes: 65536 products of -128..127 values sum
 * below 2^31 even with A shifted to u8 (255 x 128 x 65536 < 2^31), the
 * variant oneDNN may run. */
#define AGMM_INT8_MAX_K 65536

size_t agmm_dtype_size(agmm_dtype_t dtype); /* 0 for an invalid value */
/* "fp16", "bf16", "fp32", "int8" */
const char *agmm_dtype_name(agmm_dtype_t dtype);

/* How int8 values are scaled. A: one scale per row (per token) or one
 * for the rank's whole shard; W: one per column (per output channel) or
 * one for the whole weight. */
typedef enum agmm_scale {
    AGMM_SCALE_CHANNEL = 0, /* A: per row; W: per column (the default) */
    AGMM_SCALE_TENSOR = 1,  /* one scale */
} agmm_scale_t;
const char *agmm_scale_name(agmm_scale_t s); /* "channel", "tensor" */

/* Symmetric int8 quantization of x ([rows, cols] in dtype FP16, BF16 or
 * FP32, row stride ld elements): q[i, j] = round_even(x[i, j] / s) with s
 * = absmax / 127 over each row (axis AGMM_QUANT_ROWS: scales [rows]),
 * each column (AGMM_QUANT_COLS: [cols]) or the whole (AGMM_QUANT_TENSOR:
 * [1]); a set that is all zero has scale 0 and zero values. q is [rows,
 * cols] row-major (stride cols), always in -127..127. Non-finite values
 * are refused (AGMM_ERR_INVALID_ARG naming the first). Local, any thread. */
typedef enum agmm_quant_axis {
    AGMM_QUANT_ROWS = 0,
    AGMM_QUANT_COLS = 1,
    AGMM_QUANT_TENSOR = 2,
} agmm_quant_axis_t;
agmm_status_t agmm_quantize(const void *x, agmm_dtype_t dtype, int64_t rows,
                            int64_t cols, int64_t ld, agmm_quant_axis_t axis,
                            int8_t *q, float *scales);

/* Weight quantization to int4 or int8 with group scales (W4A16, W8A16),
 * in the plain layout docs/design.md ("Quantized weights") describes. w
 * is [k, n] fp32 row-major (k rows); each group of `group` rows (32, 64,
 * 128, or 0 or k for all of k; the last group may be partial) and each
 * column gets a scale, scales[ceil(k/group)][n]. symmetric: s = max|w| /
 * 7 (bits 4) or / 127 (bits 8), q = round(w / s) in -8..7 / -127..127;
 * asymmetric (zeros[ceil(k/group)][n]): s = (max - min) / 15 or / 255
 * over the group and 0, zero = round(-min / s), q = round(w / s) + zero
 * in 0..15 / 0..255. round() is to nearest, ties to even. value = (q -
 * zero) * s. q: bits 8, int8_t [k][n] (symmetric) or uint8_t [k][n];
 * bits 4, uint8_t [(k+1)/2][n], two rows per byte along k, the even row
 * in the low nibble (signed nibbles when symmetric), a padding nibble 0
 * when k is odd. A group with s = 0 (all zero) has q = 0 and zero 0.
 * AGMM_ERR_INVALID_ARG for a non-finite value (naming its row and
 * column, nothing written), bits other than 4 or 8, a bad group, a bad
 * shape or a null pointer (zeros may be NULL when symmetric). Local, any
 * thread; the caller's rounding mode is kept. */
agmm_status_t agmm_quantize_weight(const float *w, int64_t k, int64_t n,
                                   int bits, int64_t group, int symmetric,
                                   void *q, float *scales, uint8_t *zeros);

/* The element type of a plan's weights (agmm_plan_desc_t.weight_dtype).
 * SAME: W in the plan's dtype, as A (the default). INT8, INT4: W quantized
 * with group scales in the plain layout agmm_quantize_weight writes,
 * given with agmm_plan_set_weight_quantized, multiplied by fp32 / bf16 /
 * fp16 A in agmm's weight-quantized kernels (W8A16, W4A16). */
typedef enum agmm_wdtype {
    AGMM_WDTYPE_SAME = 0,
    AGMM_WDTYPE_INT8 = 1,
    AGMM_WDTYPE_INT4 = 2,
} agmm_wdtype_t;
/* "same", "int8", "int4" ("invalid" for anything else). */
const char *agmm_wdtype_name(agmm_wdtype_t w);

/* How a plan with quantized weights multiplies A (agmm_plan_desc_t.a_quant).
 * NONE (the default): A as given, fp32 / bf16 / fp16 (W4A16, W8A16).
 * INT8: each row of A quantized to int8 before its product, a scale per
 * row (max |a| / 127; a zero row scale 1), values a / scale rounded to
 * nearest even, then the int8 dot with the weight (W4A8, W8A8 in
 * groups: VPDPBUSD where the CPU has AVX512_VNNI and AVX512_VBMI, else a
 * portable loop with the same bits). Exact integer sums per group; C
 * differs from NONE's by A's rounding to int8 (docs/design.md, "Quantized
 * weights in plans"). Every call of such a plan, whatever its rows,
 * quantizes A: a row's result does not depend on the rows beside it. */
typedef enum agmm_aquant {
    AGMM_AQUANT_NONE = 0,
    AGMM_AQUANT_INT8 = 1,
} agmm_aquant_t;
/* "none", "int8" ("invalid" for anything else). */
const char *agmm_aquant_name(agmm_aquant_t q);

typedef enum agmm_weights {
    AGMM_WEIGHTS_SHARED = 0,   /* the same W on every rank */
    AGMM_WEIGHTS_PER_RANK = 1, /* rank r has its own W_r (column shard) */
} agmm_weights_t;

/* The library that runs the tile GEMMs (docs/performance.md, "GEMM
 * engines"). AUTO: oneDNN when agmm was built with it, else OpenBLAS. */
typedef enum agmm_gemm_engine_kind {
    AGMM_GEMM_ENGINE_AUTO = 0,
    AGMM_GEMM_ENGINE_ONEDNN = 1,   /* oneDNN matmul, weight reordered once */
    AGMM_GEMM_ENGINE_OPENBLAS = 2, /* CBLAS sgemm on fp32 copies */
    /* agmm's own int4 / int8 weight kernels (src/gemm/wq): the engine of
     * every plan with a quantized weight (agmm_plan_desc_t.weight_dtype),
     * which AUTO (or WQ itself) resolves to there; a plan of a plain
     * weight refuses it, a quantized plan refuses ONEDNN and OPENBLAS. */
    AGMM_GEMM_ENGINE_WQ = 3,
} agmm_gemm_engine_kind_t;

/* "auto", "onednn", "openblas", "wq" ("invalid" for anything else): the
 * kinds are 0, 1, ... up to the first named "invalid", built in or not
 * (agmm_gemm_engine_available). The CLI's and the Python package's engine
 * words are these names. */
const char *agmm_gemm_engine_name(agmm_gemm_engine_kind_t kind);
/* The kind agmm_gemm_engine_name calls `name` (exactly, case included),
 * or -1 for NULL or any other string ("invalid" too). */
int agmm_gemm_engine_from_name(const char *name);

/* How the engine multiplies a 16-bit dtype (docs/performance.md, "GEMM
 * paths"). Which is fastest depends on the CPU and the shape (bf16's dot
 * instruction runs at half the fp32 FMA rate on some CPUs and at twice it
 * or many times it on others), so AUTO measures. */
typedef enum agmm_gemm_path {
    /* The faster of the paths the engine has for the plan's dtype, timed
     * at agmm_plan_create on each rank's own thread over the plan's call
     * shapes (a few calls each, on a slice of the weight's columns); the
     * ranks agree on the path with the lowest slowest-rank time. Cached per
     * process for the same engine, dtype and shape: a second such plan
     * times nothing. agmm_plan_gemm_info() says what was measured. */
    AGMM_GEMM_PATH_AUTO = 0,
    /* The engine reads the dtype itself (oneDNN: bf16 dot products; fp16
     * where this oneDNN has a native fp16 matmul on this CPU). */
    AGMM_GEMM_PATH_NATIVE = 1,
    /* Rows converted to fp32 once per tile, the weight converted once at
     * set_weight: the fp32 kernel (twice the weight's memory, plus fp32
     * copies of the gathered rows). fp32 inputs are always this path. */
    AGMM_GEMM_PATH_F32 = 2,
} agmm_gemm_path_t;

/* "auto", "native", "f32" ("invalid" for anything else). */
const char *agmm_gemm_path_name(agmm_gemm_path_t path);
/* 1 when engine `kind` (AUTO: the default engine) can run `path` for
 * `dtype` on this CPU (AUTO always; NATIVE where the engine reads the
 * dtype itself; F32 always), else 0 (also for invalid values). */
int agmm_gemm_path_available(agmm_gemm_engine_kind_t kind, agmm_dtype_t dtype,
                             agmm_gemm_path_t path);
/* 1 when `kind` is built in (AUTO always is), else 0. */
int agmm_gemm_engine_available(agmm_gemm_engine_kind_t kind);

/* ----------------------------------------------------------------- world */

typedef struct agmm_world agmm_world_t;

int agmm_world_rank(const agmm_world_t *world); /* -1 for NULL */
int agmm_world_size(const agmm_world_t *world); /* -1 for NULL */
/* "shm" (forked or joined) or "mpi" ("none" for NULL). */
const char *agmm_world_transport_name(const agmm_world_t *world);

/* The default wait timeout of the world's barriers, all-gathers and plans
 * (seconds, > 0). Local; set it to the same value on every rank. */
void agmm_world_set_timeout(agmm_world_t *world, double timeout_s);

/* Collective: every rank returns once all ranks have entered, or with
 * AGMM_ERR_TIMEOUT / AGMM_ERR_ABORTED. A barrier that completes in an
 * aborted world returns AGMM_ERR_ABORTED, on every rank that finds it
 * aborted (in shm: on every rank, when the last to arrive had seen the
 * abort).
 * timeout_s <= 0 means the world's default timeout. */
agmm_status_t agmm_world_barrier(agmm_world_t *world, double timeout_s);

/* Collective: every rank contributes `bytes` bytes; `out` receives
 * size * bytes, ordered by rank. For small control data only. Like the
 * barrier, it returns AGMM_ERR_ABORTED when it completes in an aborted
 * world. */
agmm_status_t agmm_world_allgather(agmm_world_t *world, const void *in,
                                   void *out, size_t bytes);

/* End the run on every rank: records `message` (one line) as the reason,
 * wakes every rank blocked in an agmm wait with AGMM_ERR_ABORTED.
 * Safe to call from any thread; the first abort wins. */
void agmm_world_abort(agmm_world_t *world, const char *message);

/* Options for agmm_launch(). Zero-initialise, then set what you need. */
typedef struct agmm_launch_opts {
    int nranks;       /* >= 1 */
    double timeout_s; /* default wait timeout, <= 0 means 60 s */
    /* After the first rank fails, how long the others get to notice the
     * abort and exit on their own before they are killed. <= 0: 2 s. */
    double grace_s;
    int quiet; /* do not print launcher messages to stderr */
    /* Link emulator (shared memory only), for studying overlap on one host:
     * every put and signal on each outgoing link (rank -> peer) is paced
     * like a wire of link_gbps Gbit/s with link_latency_us one-way latency.
     * Posting does not block; the data and its signal become visible to the
     * peer at the modelled arrival time, queued behind earlier puts on the
     * same link. link_gbps <= 0 (the default): no emulation, latency
     * ignored. agmm_world_link_emulated() (agmm_ext.h) reports them. */
    double link_gbps;
    double link_latency_us; /* >= 0 */
    /* Placement of the ranks (docs/placement.md): NULL or "none" (the
     * default, as before: the ranks inherit the caller's affinity and
     * memory policy), "auto" (each rank its own NUMA node(s) or an equal
     * group of physical cores, its memory on their nodes, its worker
     * threads each pinned to a core of the group; with more ranks than
     * physical cores nothing is bound and that is said once on stderr
     * unless quiet), or one CPU list per rank separated by '|'
     * ("0-31|32-63"). The affinity is set in each rank right after the
     * fork. A list naming a CPU the caller may not use, two ranks sharing
     * a CPU, or a count other than nranks: AGMM_ERR_INVALID_ARG before any
     * rank starts. Ignored when hwloc's HWLOC_SYNTHETIC / HWLOC_XMLFILE
     * describe another machine. */
    const char *bind;
    /* Threads each rank runs (its comm + GEMM workers); auto gives a group
     * its cores' hardware threads when it has fewer physical cores than
     * this. 0: one hardware thread per physical core. */
    int bind_threads;
} agmm_launch_opts_t;

/* The function run by every rank. Its return value is the rank's exit code:
 * 0 on success; 1 when the rank failed and has said why (agmm's own errors
 * are printed where they are detected); any other value 2..125 makes the
 * launcher report "rank R exited with status S". */
typedef int (*agmm_rank_main_fn)(agmm_world_t *world, void *arg);

/* Run `rank_main` on `opts->nranks` ranks, each a process forked from the
 * caller, sharing memory. Returns when every rank has exited. The launcher
 * watches the ranks: when one exits with non-zero status or is killed it
 * aborts the world at once, says which rank failed and how, and kills the
 * ranks that have not exited after the grace period. Ranks die with the
 * launcher (PR_SET_PDEATHSIG). No shared-memory object outlives the call.
 *
 * *exit_code (may be NULL) receives 0 if every rank returned 0, else the exit
 * code of the first rank that failed (128 + signal for a killed rank). The
 * status is AGMM_OK when the ranks ran, whatever they returned. */
agmm_status_t agmm_launch(const agmm_launch_opts_t *opts,
                          agmm_rank_main_fn rank_main, void *arg,
                          int *exit_code);

/* Under an MPI launcher: build a world over MPI_COMM_WORLD (initialising
 * MPI if needed, at the thread level the backend needs). Returns
 * AGMM_ERR_UNSUPPORTED when agmm was built without MPI. If SIGPIPE is at
 * its default disposition it is set to ignored, so that a write to a dead
 * peer fails with EPIPE instead of killing this rank before it can report
 * the peer (a handler the program installed is left alone). */
agmm_status_t agmm_world_create_mpi(int *argc, char ***argv, double timeout_s,
                                    agmm_world_t **out);
/* True when the process looks started by an MPI launcher (OMPI_*, PMI_*,
 * PMIX_* variables). */
int agmm_mpi_launcher_detected(void);

/* Options for agmm_world_join(). Zero-initialise, then set. */
typedef struct agmm_join_opts {
    int rank;         /* 0 .. size-1 */
    int size;         /* >= 1 */
    const char *job;  /* job name: 1..48 chars of [A-Za-z0-9._-], no '/' */
    double timeout_s; /* rendezvous and default wait timeout; <= 0: 60 s */
} agmm_join_opts_t;

/* Collective over `size` processes started by anyone on one host (a shell
 * loop, torchrun, a serving engine's workers), each calling it once with
 * its own rank and the same size and job name (one rank per process): they
 * rendezvous through a shared-memory control segment named after this user and
 * the job
 * (/dev/shm/agmm:<uid>:<job>:0:ctl, mode 0600), then use the same
 * shared-memory data path as forked ranks ("shm"). Ranks may arrive in any
 * order; each waits up to opts->timeout_s for the others. Errors, on every
 * rank that is waiting:
 *   - AGMM_ERR_TIMEOUT: rank(s) that never came, named in the message;
 *   - AGMM_ERR_MISMATCH: ranks passed different sizes;
 *   - AGMM_ERR_BAD_STATE: the job name is held by a live process of another
 *     run (its pid is named), or this rank is taken already;
 *   - AGMM_ERR_ABORTED: a rank that had joined died while waiting.
 * A control segment left behind by a run whose processes are all gone is
 * removed and the join proceeds. Peers are watched while this rank waits in
 * any collective call: a rank whose process ends while it is still needed
 * (killed, crashed, or gone in the middle of a plan) aborts the world with
 * a message naming it (see agmm_world_destroy). */
agmm_status_t agmm_world_join(const agmm_join_opts_t *opts, agmm_world_t **out);

/* The same from the environment: AGMM_RANK, AGMM_WORLD_SIZE, AGMM_JOB; else
 * RANK, WORLD_SIZE as torchrun sets them, the job named from MASTER_ADDR and
 * MASTER_PORT (and TORCHELASTIC_RUN_ID if set). AGMM_ERR_INVALID_ARG naming
 * the variable when something is missing or malformed. timeout_s <= 0:
 * AGMM_TIMEOUT_S if set, else 60 s. */
agmm_status_t agmm_world_from_env(double timeout_s, agmm_world_t **out);

/* Remove this user's leftover agmm segments of `job` (NULL: every job)
 * whose processes are all gone; *removed (may be NULL) gets the count.
 * Segments of live processes and of other users are never touched. */
agmm_status_t agmm_cleanup(const char *job, int *removed);

/* Destroy a world made by agmm_world_create_mpi() or agmm_world_join(); NULL
 * is ignored, and so are worlds from agmm_launch() (they belong to the
 * launcher). Local: call it after the world's plans are destroyed.
 *   - MPI: finalises MPI if agmm initialised it. A world that was aborted
 *     (any rank's failure) is not finalised: this ends the whole MPI job
 *     with MPI_Abort(MPI_COMM_WORLD, 1) and does not return.
 *   - joined: unmaps the control segment and, on the last rank to leave
 *     (or when the others are gone), removes it; it always returns, also
 *     in an aborted world (the processes decide how to exit). A process
 *     that ends with exit() after destroying its plans leaves the world
 *     as this would; one that ends in the middle of a plan (or by
 *     _exit or a signal) is taken by its peers for a crashed rank. */
void agmm_world_destroy(agmm_world_t *world);

/* ------------------------------------------------------------------ plan */

typedef enum agmm_schedule {
    AGMM_SCHEDULE_FUSED = 0,    /* overlapped all-gather + GEMM */
    AGMM_SCHEDULE_BASELINE = 1, /* all-gather everything, then one GEMM */
    /* The faster of the two for this plan on this machine, by measurement:
     * the plan's first AGMM_SCHEDULE_AUTO rounds alternate fused and
     * baseline (each a real round with a correct result) and time them
     * (slowest rank); then it keeps the faster. agmm_plan_schedule_info()
     * says what it ran and why. */
    AGMM_SCHEDULE_AUTO = 2,
} agmm_schedule_t;

/* "fused", "baseline", "auto" ("invalid" for anything else). */
const char *agmm_schedule_name(agmm_schedule_t schedule);

/* The operation a plan computes. */
typedef enum agmm_op {
    /* C = gather_r(A_r) @ W: rank r holds A_r ([m_local[r], k]); every rank
     * gets all of C ([M, n], M = sum(m_local)). */
    AGMM_OP_AG_GEMM = 0,
    /* GEMM + reduce-scatter (the row-parallel half of a tensor-parallel
     * layer): rank r holds A_r ([M, k_local[r]], its slice of the inner
     * dimension) and W_r ([k_local[r], n]); C = sum_r A_r @ W_r ([M, n],
     * fp32) is scattered by rows: rank r gets rows [row_off[r],
     * row_off[r] + m_local[r]) in its c ([m_local[r], n]). Summed in a fixed
     * order (source ranks 0..P-1), so results are reproducible. */
    AGMM_OP_GEMM_RS = 1,
    /* GEMM + all-reduce: A_r, W_r and the split of k as GEMM_RS; every rank
     * gets all of C = sum_r A_r @ W_r ([M, n] fp32). Rank r owns rows
     * [row_off[r], row_off[r] + m_local[r]): it sums them as GEMM_RS does
     * (source ranks 0..P-1 in fp32) and sends the sums to every peer, so C
     * is bit-identical on every rank, in both schedules and from run to
     * run (the reduce-scatter of GEMM_RS, then an all-gather, per tile). */
    AGMM_OP_GEMM_AR = 2,
} agmm_op_t;

/* "ag-gemm", "gemm-rs", "gemm-ar" ("invalid" for anything else). */
const char *agmm_op_name(agmm_op_t op);

/* The activation of a plan's epilogue (agmm_plan_desc_t.activation),
 * applied in fp32 after the bias:
 *   RELU       max(x, 0)
 *   GELU_TANH  0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
 *   GELU_ERF   0.5 x (1 + erf(x / sqrt(2)))
 *   SILU       x / (1 + exp(-x))
 * The gated ones (the MLP's gate and up projections in one call) take a
 * weight of n = 2 * i columns laid out [gate | up]: its first i columns
 * are the gate's, the next i the up projection's (bias likewise: [n] =
 * [gate's i | up's i]); C has i columns, each
 *   C[:, j] = act(A @ W[:, j] + bias[j]) * (A @ W[:, i + j] + bias[i + j])
 * in fp32 (act SILU or GELU_TANH above; one fp32 rounding of the product),
 * rounded once to out_dtype. n must be even. AG_GEMM (and one-rank calls
 * of it) only: GEMM_RS and GEMM_AR refuse them (their epilogue needs the
 * reduced sum of both halves first).
 *   SILU_MUL       silu(gate) * up        (SwiGLU)
 *   GELU_TANH_MUL  gelu_tanh(gate) * up   (GeGLU) */
typedef enum agmm_activation {
    AGMM_ACT_NONE = 0,
    AGMM_ACT_RELU = 1,
    AGMM_ACT_GELU_TANH = 2,
    AGMM_ACT_GELU_ERF = 3,
    AGMM_ACT_SILU = 4,
    AGMM_ACT_SILU_MUL = 5,
    AGMM_ACT_GELU_TANH_MUL = 6,
} agmm_activation_t;

/* "none", "relu", "gelu-tanh", "gelu-erf", "silu", "silu-mul",
 * "gelu-tanh-mul" ("invalid" for anything else). */
const char *agmm_activation_name(agmm_activation_t act);

/* What one plan computes and how. Zero-initialise with agmm_plan_desc_init()
 * then set the fields. Every rank must pass an identical description. */
typedef struct agmm_plan_desc {
    int nranks;             /* must equal the world size */
    const int64_t *m_local; /* nranks row counts (each >= 0, sum >= 1) */
    int64_t k;              /* >= 1 */
    int64_t n;              /* >= 1; a gated activation: 2 * C's columns */
    int64_t tile_m;         /* >= 1: rows per tile (last tile may be short) */
    int64_t tile_n;         /* >= 1: columns of C per work item (gated:
                               each with its gate and up column of W) */
    agmm_dtype_t dtype;     /* of A and W; C's is out_dtype */
    agmm_weights_t weights;
    int comm_workers; /* >= 0; 0: GEMM workers issue the puts */
    int gemm_workers; /* >= 1 */
    double timeout_s; /* per wait; <= 0: the world's default */
    /* AUTO (0, the default), ONEDNN or OPENBLAS; one not built in makes
     * the plan fail with AGMM_ERR_UNSUPPORTED. A quantized weight
     * (weight_dtype) runs on WQ: AUTO or WQ then, the others refused. */
    agmm_gemm_engine_kind_t gemm_engine;
    /* AGMM_OP_AG_GEMM (0, the default), AGMM_OP_GEMM_RS or AGMM_OP_GEMM_AR. */
    agmm_op_t op;
    /* GEMM_RS and GEMM_AR only: nranks inner-dimension parts (each >= 0,
     * sum == k), or NULL: k split as evenly as possible, the first k %
     * nranks ranks one more (agmm_k_split). `weights` is ignored (every rank
     * has its own W_r). */
    const int64_t *k_local;
    /* AG_GEMM: several weights from one gather (Q/K/V, gate/up): C_i =
     * gather(A) @ W_i, W_i [k, n_list[i]], each C_i its own fp32 [M, n_i]
     * matrix. Every arrived tile of the gathered A is multiplied by every
     * weight (fused), or A is gathered once and then multiplied by each
     * (baseline). n_weights 0 or 1 with n_list NULL: one weight of `n`
     * columns (the default). n_weights >= 1 with n_list: n_list[i] >= 1
     * columns each, and `n` is ignored (set it to n_list[0] or 0). At most
     * AGMM_MAX_WEIGHTS. GEMM_RS, GEMM_AR: only one weight
     * (AGMM_ERR_UNSUPPORTED).
     */
    int n_weights;
    const int64_t *n_list;
    /* AUTO (0, the default), NATIVE or F32. A path the engine does not
     * have for the dtype (NATIVE fp16 without a native fp16 kernel,
     * NATIVE with OpenBLAS) makes the plan fail with AGMM_ERR_UNSUPPORTED;
     * fp32 inputs take either (they are the same path). */
    agmm_gemm_path_t gemm_path;
    /* INT8 only (ignored otherwise): the layout of A's scales (per row or
     * one per rank's shard, given with each run) and of each W's (per
     * column or one, given with its weight). */
    agmm_scale_t a_scale;
    agmm_scale_t w_scale;
    /* The epilogue, every operation, in this order on each element of C:
     * the fp32 result (ag-gemm: the product; gemm-rs: the reduced sum,
     * never a partial), + bias[j] (when `bias`), then `activation`, then
     * one rounding (to nearest even) to out_dtype:
     *   C = out_dtype( activation( A @ W + bias ) ).
     * INT8: the product is the scaled one (a_scale * w_scale * sum), the
     * order of engine.h. activation: AGMM_ACT_NONE (0, the default); it
     * applies to every weight, unless `activations` is given. */
    agmm_activation_t activation;
    /* C's element type: AGMM_DTYPE_FP32 (what agmm_plan_desc_init sets;
     * note 0 is FP16), BF16 or FP16; INT8 is refused. The c pointers of
     * agmm_plan_run / agmm_run_args_t point at elements of it. */
    agmm_dtype_t out_dtype;
    /* Nonzero: each weight i has a per-column fp32 bias [n_i], set with
     * agmm_plan_set_bias before the first run (every rank the same). 0
     * (the default): no bias, and agmm_plan_set_bias is refused. */
    int bias;
    /* NULL (the default): every weight's activation is `activation`. Else
     * one per weight (n_weights values, or 1 without n_list): weight i's
     * C_i = out_dtype(activations[i](gather(A) @ W_i + bias_i)), as for
     * a gate and an up projection from one gather (SiLU on one, none on
     * the other); `activation` must then be AGMM_ACT_NONE. */
    const agmm_activation_t *activations;
    /* Quantized weights (docs/design.md, "Quantized weights in plans").
     * weight_dtype: AGMM_WDTYPE_SAME (0, the default: W in `dtype`, set
     * with agmm_plan_set_weight*), or INT8 / INT4: every weight given with
     * agmm_plan_set_weight_quantized in the plain layout of
     * agmm_quantize_weight, run by the WQ engine (gemm_engine AUTO or WQ).
     * Allowed with dtype fp32, bf16 or fp16 (int8 A is the W8A8 path), any
     * out_dtype, bias and activation (gated ones too, with ag-gemm),
     * every operation.
     * group_size: rows of k sharing a scale, 32, 64, 128, or 0 (= all of
     * the rank's k: GEMM_RS / GEMM_AR, each rank's own part); with
     * GEMM_RS / GEMM_AR and a group of 32..128, every rank's k part but
     * the last rank's must be a multiple of it (groups never straddle the
     * k split: a weight quantized whole is cut into the ranks' parts at
     * group boundaries). weight_zero_point: 0 symmetric (no zero points),
     * 1 asymmetric (uint8 zero points). Both ignored with SAME. */
    agmm_wdtype_t weight_dtype;
    int64_t group_size;
    int weight_zero_point;
    /* a_quant: AGMM_AQUANT_NONE (0, the default) or INT8 (A quantized per
     * row to int8 for the product: W4A8 / W8A8 in groups; agmm_aquant_t).
     * INT8 needs weight_dtype INT8 or INT4. */
    agmm_aquant_t a_quant;
} agmm_plan_desc_t;

/* Most weights per plan (agmm_plan_desc_t.n_weights). */
#define AGMM_MAX_WEIGHTS 16

void agmm_plan_desc_init(agmm_plan_desc_t *desc);

/* GEMM_RS's (and GEMM_AR's) even split of the inner dimension (k_local NULL):
 * rank r's part, k / nranks, the first k % nranks ranks one more. -1 for k < 0,
 * nranks < 1 or r outside 0..nranks-1 (no message). */
int64_t agmm_k_split(int64_t k, int nranks, int r);

/* Rank `rank`'s part of the inner dimension under a description, the one
 * definition the library, the agmm tool, the cost model and the Python
 * package share: its A's columns and its W's rows are k's [*k0, *k0 +
 * *k_len). AG_GEMM: all of k (k0 0, k_len k). GEMM_RS, GEMM_AR:
 * k_local[rank], or agmm_k_split's part when k_local is NULL, k0 the sum of
 * the parts of the ranks before it. Reads only op, k, nranks and k_local
 * (agmm_plan_desc_check checks the parts add up to k); needs no world.
 * AGMM_ERR_INVALID_ARG (with a message) for a NULL pointer, nranks < 1,
 * rank outside 0..nranks-1, k < 0 or an op that is not valid. */
agmm_status_t agmm_plan_desc_k_part(const agmm_plan_desc_t *desc, int rank,
                                    int64_t *k0, int64_t *k_len);

/* The default split of a host's cores into each rank's workers, what the
 * agmm tool and the Python package use when not told: comm_workers = 1 if
 * 2 x ranks_per_host <= usable_cores, else 0; gemm_workers = max(1,
 * usable_cores / ranks_per_host - comm_workers). usable_cores: the cores
 * the ranks of this host may run on (e.g. the CPU affinity count);
 * ranks_per_host: the ranks sharing them. comm_given >= 0 is taken as the
 * comm workers (given by the user; gemm_workers follows from it), < 0
 * means choose. AGMM_ERR_INVALID_ARG (with a message) if usable_cores or
 * ranks_per_host is < 1 or an out pointer is NULL. */
agmm_status_t agmm_default_workers(int usable_cores, int ranks_per_host,
                                   int comm_given, int *comm_workers,
                                   int *gemm_workers);

/* Validate a description without a world: sizes, tiles, workers, byte
 * counts. On failure, agmm_last_error() names the field. */
agmm_status_t agmm_plan_desc_check(const agmm_plan_desc_t *desc);

/* Bytes of memory one rank's plan needs (windows, the GEMM engine's
 * prepared weight, fp32 rows where the engine does not read the dtype),
 * or 0 if the description is invalid, names an engine not built in, or
 * the count overflows. */
uint64_t agmm_plan_bytes_per_rank(const agmm_plan_desc_t *desc);

/* A plan descriptor (as oneDNN's primitive descriptor): a description
 * checked once, without a world (the checks of agmm_plan_desc_check), with
 * its own copy of the description and its arrays, answering what a plan of
 * it would be before (or without) creating one. agmm_plan_create makes one
 * from its description. */
typedef struct agmm_plan_pd agmm_plan_pd_t;

/* Checks desc as agmm_plan_desc_check does (the same failures and
 * messages) and makes its descriptor; AGMM_ERR_INVALID_ARG for a NULL out,
 * AGMM_ERR_NO_MEMORY. *out NULL on failure. */
agmm_status_t agmm_plan_pd_create(const agmm_plan_desc_t *desc,
                                  agmm_plan_pd_t **out);
void agmm_plan_pd_destroy(agmm_plan_pd_t *pd);

/* Queries of a descriptor (NULL: the sentinel, no message).
 * desc: its checked description (valid until it is destroyed; a rank's
 * part of k is agmm_plan_desc_k_part of it).
 * bytes_per_rank: agmm_plan_bytes_per_rank of its description.
 * call_rows: the rows of rank `rank`'s A ([a_rows, k part]) and C
 * ([c_rows, n_i]) in a call of agmm_plan_run_args with m_rows (NULL: the
 * plan's m_local, as agmm_plan_run), AGMM_ERR_INVALID_ARG (with a message)
 * for a rank outside 0..nranks-1, an m_rows[r] outside 0..m_local[r] or a
 * NULL output, AGMM_ERR_UNSUPPORTED for m_rows on an operation that takes
 * none.
 * tiles: rank `rank`'s row tiles at the plan's rows (ceil(m_local[rank] /
 * tile_m)); rank -1: every rank's, summed. -1 for another rank. */
const agmm_plan_desc_t *agmm_plan_pd_desc(const agmm_plan_pd_t *pd);
uint64_t agmm_plan_pd_bytes_per_rank(const agmm_plan_pd_t *pd);
agmm_status_t agmm_plan_pd_call_rows(const agmm_plan_pd_t *pd, int rank,
                                     const int64_t *m_rows, int64_t *a_rows,
                                     int64_t *c_rows);
int64_t agmm_plan_pd_tiles(const agmm_plan_pd_t *pd, int rank);

typedef struct agmm_plan agmm_plan_t;

/* Collective. Allocates the symmetric windows and signals and checks that
 * every rank passed the same description. */
agmm_status_t agmm_plan_create(agmm_world_t *world,
                               const agmm_plan_desc_t *desc, agmm_plan_t **out);

/* Local. Prepares W ([k, n], row-major, desc->dtype; GEMM_RS, GEMM_AR: this
 * rank's W_r, [k_local[rank], n]) for the plan's GEMM
 * engine once (oneDNN: reordered into its blocked layout, bf16 kept bf16;
 * OpenBLAS: converted to fp32); call it before the first run and whenever
 * the weight changes. With shared weights every rank passes the same W. */
agmm_status_t agmm_plan_set_weight(agmm_plan_t *plan, const void *w);

/* Local. Like agmm_plan_set_weight for weight i (0 <= i < n_weights) of a
 * plan with several weights: W_i is [k, n_list[i]]. set_weight(plan, w) is
 * set_weight_i(plan, 0, w). Every weight must be set before the first run. */
agmm_status_t agmm_plan_set_weight_i(agmm_plan_t *plan, int i, const void *w);

/* Local. An INT8 plan's weight i: w int8 [k, n_i] (GEMM_RS, GEMM_AR:
 * [k_local[rank], n]) and its fp32 scales, [n_i] (w_scale CHANNEL) or [1]
 * (TENSOR), each finite and >= 0. The other set_weight calls refuse an INT8
 * plan (they have no scales), and this one refuses the others. */
agmm_status_t agmm_plan_set_weight_scaled(agmm_plan_t *plan, int i,
                                          const int8_t *w,
                                          const float *w_scale);

/* Local. A quantized plan's weight i (desc.weight_dtype INT8 or INT4):
 * the plain layout agmm_quantize_weight writes, of the weight
 * agmm_plan_set_weight_i would take ([k, n_i]; GEMM_RS, GEMM_AR: this
 * rank's [k_local[rank], n], its groups counted from its own row 0):
 *   q       INT8: int8_t [k][n] (symmetric) or uint8_t [k][n]
 *           (asymmetric); INT4: uint8_t [(k+1)/2][n], two rows per byte;
 *   scales  fp32 [ceil(k/G)][n] (G = desc.group_size, 0: k), finite;
 *   zeros   uint8_t [ceil(k/G)][n] when desc.weight_zero_point, else
 *           NULL (ignored).
 * Packed once into the kernels' layout (none of the arrays is kept); call
 * it before the first run and whenever the weight changes. The plain
 * set_weight calls refuse a quantized plan, and this one refuses the
 * others (AGMM_ERR_INVALID_ARG, naming the call). */
agmm_status_t agmm_plan_set_weight_quantized(agmm_plan_t *plan, int i,
                                             const void *q, const void *scales,
                                             const uint8_t *zeros);

/* Local. Weight i's bias (0 <= i < n_weights): [n_i] fp32 values, each
 * finite, copied into the plan (the caller's array is not kept). Only for
 * a plan with desc.bias (else AGMM_ERR_INVALID_ARG); such a plan needs
 * every weight's bias before its first run, and takes a new one at any
 * time between runs. Every rank passes the same bias (GEMM_RS: the owner
 * of each row adds it once, after the reduction). */
agmm_status_t agmm_plan_set_bias(agmm_plan_t *plan, int i, const float *bias);

/* Collective. One round: a_local is this rank's [m_local[rank], k] shard in
 * desc->dtype, row-major; c is [M, n] row-major in desc->out_dtype (fp32
 * unless set otherwise), M = sum(m_local) (GEMM_RS: a_local is [M,
 * k_local[rank]], c is [m_local[rank], n]; GEMM_AR: a_local is [M,
 * k_local[rank]], c is [M, n]). On return the rank's C is complete and
 * a_local may be changed. (c was a float * before out_dtype; a float *
 * still converts to it.) */
agmm_status_t agmm_plan_run(agmm_plan_t *plan, agmm_schedule_t schedule,
                            const void *a_local, void *c);

/* The arguments of one round with the extended call (agmm_plan_run_args).
 * Zero-initialise with agmm_run_args_init(), then set what you need; a
 * field added in a later version is 0/NULL = the old behaviour. */
typedef struct agmm_run_args {
    agmm_schedule_t schedule;
    /* This rank's shard: [rows[rank], k] in desc->dtype, row-major (GEMM_RS,
     * GEMM_AR: [M_call, k_local[rank]]). */
    const void *a_local;
    /* n_weights outputs (1 for a plan of one weight): c[i] is [M_call,
     * n_i] in desc.out_dtype, row-major, M_call = sum of this call's rows
     * (GEMM_RS: [rows[rank], n]). c[i] may be NULL only when it has no
     * rows. (This was float *const * before out_dtype: a float *c[] array
     * needs a void *c[] or a cast.) */
    void *const *c;
    /* The rows every rank has in this call, nranks values,
     * 0 <= m_rows[r] <= desc.m_local[r] (the plan's m_local is the most
     * each rank may have; 0 allowed, all 0 allowed). Every rank passes the
     * same array (as MPI_Allgatherv's counts): each rank sends the count
     * its data of the round is laid out for with its signals (AG_GEMM: its
     * own rows; GEMM_RS, GEMM_AR: the receiver's rows it sends partials
     * of), and a rank that expected another count aborts the world naming
     * the peer, before it computes (AG_GEMM) or sums (GEMM_RS, GEMM_AR) any
     * row of it. No new plan, no extra collective. NULL: the plan's
     * m_local. GEMM_RS: the rows of C each rank gets; A is [M_call,
     * k_local[rank]] (M_call = sum of m_rows) and C [m_rows[rank], n].
     * GEMM_AR: the rows of C each rank reduces (and sends every peer); A
     * is [M_call, k_local[rank]] and C [M_call, n] on every rank. Both: the
     * result is bit for bit that of a plan made for these rows with the
     * same GEMM path. */
    const int64_t *m_rows;
    /* AG_GEMM, optional: filled with gather(A), [M_call, k] in desc->dtype,
     * rows in rank order (return_A). Peers' rows are copied once out of
     * the receive window, the local shard once from a_local (the window
     * holds them already; a_gathered is the caller's memory, so one copy
     * of each row is the least possible). NULL: not returned. */
    void *a_gathered;
    /* INT8 plans: this rank's A scales, [rows of a_local] (a_scale
     * CHANNEL) or [1] (TENSOR: one for the shard), finite and >= 0; they
     * travel with the rows (all-gather: in the same put, under the same
     * signal). Required for INT8 (AGMM_ERR_INVALID_ARG when NULL), NULL
     * otherwise. agmm_plan_run cannot carry them: INT8 plans take this
     * call. */
    const float *a_scale;
    /* INT8 with a_gathered: filled with the gathered rows' scales, [M_call]
     * fp32 (a per-tensor scale repeated over its rank's rows). NULL: not
     * returned. */
    float *a_gathered_scale;
} agmm_run_args_t;

void agmm_run_args_init(agmm_run_args_t *args);

/* Collective. One round with several outputs, per-call rows and/or the
 * gathered A returned (see agmm_run_args_t). agmm_plan_run(plan, s, a, c)
 * is this call with {s, a, &c, NULL, NULL}. On return every C_i (and
 * a_gathered) is complete, and a_local may be changed. */
agmm_status_t agmm_plan_run_args(agmm_plan_t *plan,
                                 const agmm_run_args_t *args);

/* What AGMM_SCHEDULE_AUTO did so far for a plan. */
typedef struct agmm_schedule_info {
    agmm_schedule_t last; /* FUSED or BASELINE: what the last auto round ran */
    agmm_schedule_t pick; /* once decided: what every later auto round runs */
    int decided;          /* 0 while measuring */
    int trials;           /* auto rounds measured (AGMM_AUTO_TRIALS each) */
    double fused_us;      /* best measured round (slowest rank), 0: none */
    double baseline_us;
    char reason[200]; /* one line: why `last` ran, or why `pick` won */
} agmm_schedule_info_t;

/* Measured auto rounds per schedule before auto decides. */
#define AGMM_AUTO_TRIALS 2

/* Local. Fills *info (zeroed, reason "no auto round yet" before the first
 * auto round). Every rank gets the same answer. */
agmm_status_t agmm_plan_schedule_info(const agmm_plan_t *plan,
                                      agmm_schedule_info_t *info);

/* Collective. Waits until the last acknowledgement every peer sends for
 * this plan has arrived (none is then in flight towards its windows),
 * then a barrier, then frees the windows. In an aborted world it waits for
 * nothing and still frees. NULL is ignored; AGMM_ERR_BAD_STATE for a plan
 * destroyed already or with another call in progress (then nothing is
 * freed). */
agmm_status_t agmm_plan_destroy(agmm_plan_t *plan);

/* The GEMM engine a plan runs, for reports. */
typedef struct agmm_gemm_info {
    agmm_gemm_engine_kind_t engine; /* ONEDNN, OPENBLAS or WQ (AUTO
                                       resolved) */
    const char *name;               /* "onednn", "openblas", "wq" */
    const char *version;            /* the library's, e.g. "2.6.3" */
    /* The kernel it picked, e.g. "brg:avx512_core_bf16"; WQ: "wq:<variant>
     * int4|int8 g<G>|gk sym|asym", the variant portable, avx2, avx512 (fp32
     * FMA) or avx512bf16 (VDPBF16PS, bf16 A: chosen by measurement for the
     * plan's row counts). */
    char impl[128];
    /* 1 in every world (forked or MPI): agmm sets the engine and the BLAS
     * to one thread per call; its workers are the parallelism. */
    int threads_per_call;
    /* Engine primitives created by this process so far (all plans): stays
     * constant while rounds run, since every plan creates its own at
     * agmm_plan_create. */
    uint64_t primitives_created;
    /* The path the plan runs (NATIVE or F32: AUTO resolved), and how it
     * was chosen: by the user (chosen_by "forced"), as the only one there
     * is ("only"), or measured ("measured", or "cached": measured by an
     * earlier plan of this process with the same engine, dtype and shape).
     * Both candidates when measured or cached (native, then f32): the
     * slowest rank's predicted GEMM time of one round (us), this rank's
     * measured rate (GFLOP/s on one thread) and the implementation it
     * ran; none otherwise. */
    agmm_gemm_path_t path;
    const char *chosen_by;
    int candidates;
    struct agmm_gemm_candidate {
        agmm_gemm_path_t path;
        double round_us;
        double gflops;
        char impl[64];
    } candidate[2];
    double choose_ms; /* this rank's time measuring (0: nothing timed) */
    /* INT8: the variant of the native path the plan runs, "s8s8", or
     * "u8s8" (A shifted to u8, the compensation subtracted: the same
     * results), measured as the paths are (the candidates are then s8s8,
     * then u8s8; a forced native runs s8s8); NULL for other dtypes. */
    const char *int8_variant;
    /* Where the epilogue (bias, activation, out_dtype) runs: "none" (the
     * plan has none), "engine" (in the engine's GEMM calls: oneDNN's
     * post-ops, OpenBLAS's pass over each call), "pass" (an fp32 result
     * first, then a pass over it: where the engine refused the epilogue
     * or would run it with a slow reference kernel, and in GEMM_RS, which
     * applies it once after the reduction), or "mixed" (some column
     * segments each way). */
    const char *epilogue;
    /* The instruction set of agmm's own epilogue pass on this CPU (the
     * loops the pass runs wherever epilogue says "pass" or "mixed", and
     * the OpenBLAS engine's and int8's epilogues): "x86-64-v4" (AVX-512),
     * "x86-64-v3" (AVX2 with FMA) or "x86-64"; set whatever this plan's
     * epilogue. */
    const char *epilogue_isa;
} agmm_gemm_info_t;

/* Local. Fills *info for a live plan. */
agmm_status_t agmm_plan_gemm_info(const agmm_plan_t *plan,
                                  agmm_gemm_info_t *info);

/* Rows of the gathered matrix and the first row of rank `r`'s shard
 * (r == nranks: the total) in the last round run on the plan (before the
 * first round: the plan's m_local, i.e. the most rows). -1 for a NULL or
 * destroyed plan or r out of range. */
int64_t agmm_plan_rows(const agmm_plan_t *plan);
int64_t agmm_plan_row_offset(const agmm_plan_t *plan, int r);
/* The plan's weights (1 for a plan of one weight) and the columns of
 * weight i (of W: a gated activation's C has half as many); -1 for a NULL
 * or destroyed plan or i out of range. */
int agmm_plan_weights(const agmm_plan_t *plan);
int64_t agmm_plan_cols(const agmm_plan_t *plan, int i);

/* --------------------------------------------------------------- tracing */

/* A timeline of a plan's rounds: every put, signal publish, blocking wait,
 * conversion, GEMM call and round boundary of every worker thread of every
 * rank, on one clock. Events go into buffers allocated when the trace is
 * created: no lock and no allocation while a round runs, and a plan without
 * a trace pays one predictable branch per event site. docs/tracing.md
 * describes the outputs and how to read them. */
typedef struct agmm_trace agmm_trace_t;

/* Local. Record the rounds `plan` runs from now on, with room for
 * `max_rounds` rounds (>= 1; events beyond it are dropped and counted).
 * One trace per plan; destroy the trace before the plan. */
agmm_status_t agmm_trace_create(agmm_plan_t *plan, int max_rounds,
                                agmm_trace_t **out);

/* Collective. Stop recording and gather every rank's events on rank 0 on
 * rank 0's clock (ranks on rank 0's host share CLOCK_MONOTONIC; others are
 * aligned at a barrier). */
agmm_status_t agmm_trace_gather(agmm_trace_t *trace);

/* Rank 0, after gather: write the Chrome trace-event JSON (opens in
 * Perfetto and chrome://tracing) and/or an SVG timeline; a NULL path skips
 * that file. A file appears complete or not at all (written under a
 * temporary name, then renamed). Other ranks return AGMM_OK. */
agmm_status_t agmm_trace_write(const agmm_trace_t *trace, const char *json_path,
                               const char *svg_path);

/* One rank's view of one round, from its events (docs/tracing.md). */
typedef struct agmm_trace_summary {
    int round; /* 1-based, in the order the plan ran them */
    agmm_schedule_t schedule;
    double round_us;       /* the rank's agmm_plan_run */
    double gemm_wait_us;   /* waits of its GEMM workers, summed */
    double gemm_busy_us;   /* conversion + GEMM of its GEMM workers, summed */
    double comm_busy_us;   /* time any of its puts was in progress */
    double comm_hidden_us; /* part of comm_busy_us during which at least
                              one of its GEMM workers converted or
                              multiplied; hidden share = hidden / busy */
} agmm_trace_summary_t;

/* Rank 0, after gather: rounds recorded (0 elsewhere), and the summary of
 * round index `round` (0-based) on `rank`. */
int agmm_trace_rounds(const agmm_trace_t *trace);
agmm_status_t agmm_trace_summary(const agmm_trace_t *trace, int round, int rank,
                                 agmm_trace_summary_t *out);
/* Rank 0, after gather: events kept and dropped (buffers full), all ranks. */
void agmm_trace_counts(const agmm_trace_t *trace, uint64_t *events,
                       uint64_t *dropped);

/* Local. Stop recording (if still attached) and free. NULL is ignored. */
void agmm_trace_destroy(agmm_trace_t *trace);

#ifdef __cplusplus
}
#endif

#endif /* AGMM_H */
