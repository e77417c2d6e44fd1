/* The environment variables agmm reads, declared once (issue 49): each
 * row of AGMM_PARAM_TABLE below is one variable, its name, type, default,
 * who reads it and one line of doc. The library and the tool read a
 * variable only through the accessors below (param.c is the one file that
 * looks into the environment); the Python package reads its rows itself
 * (os.environ) and `agmm --help-env` prints the table (docs/cli.md,
 * "Environment variables", lists the same names). Adding a parameter:
 * docs/design.md, "Adding a parameter".
 *
 * Who reads a row (flags, or-ed): LIB the library, CLI the agmm tool, PY
 * the Python package; FOREIGN a variable agmm does not own (a launcher's,
 * a library's) and only reads; TEST a testing hook, not for users.
 *
 * Types: BOOL is a switch whose default is its row's: default "1" turns
 * off only at exactly "0", default "0" turns on only at exactly "1". INT
 * and DOUBLE are numbers, STR anything (a list, a name, a path). A row's
 * default is what applies when the variable is unset ("-": nothing, the
 * reader decides). */
#ifndef AGMM_COMMON_PARAM_H
#define AGMM_COMMON_PARAM_H

#include <stdio.h>

/* clang-format off */
#define AGMM_PARAM_TABLE(X)                                                    \
/* agmm's own */                                                               \
X(RANK, "AGMM_RANK", INT, "-", LIB | PY,                                       \
  "this rank of a joined world, 0..size-1 (agmm launch sets it)")              \
X(WORLD_SIZE, "AGMM_WORLD_SIZE", INT, "-", LIB | PY,                           \
  "ranks of a joined world, 1..4096 (agmm launch sets it)")                    \
X(JOB, "AGMM_JOB", STR, "-", LIB,                                              \
  "a joined world's job name, its shared-memory names (agmm launch sets it)")  \
X(TIMEOUT_S, "AGMM_TIMEOUT_S", DOUBLE, "-", LIB | PY,                          \
  "world_from_env's timeout when the caller gives none, 0 < s <= 1e6 "         \
  "(Python: 60)")                                                              \
X(BIND_CPUS, "AGMM_BIND_CPUS", STR, "-", LIB | PY,                             \
  "a bound rank's CPUs (0-31): its workers are pinned there (agmm launch "     \
  "sets it)")                                                                  \
X(HUGEPAGES, "AGMM_HUGEPAGES", BOOL, "1", LIB | PY,                            \
  "0: no MADV_HUGEPAGE on large buffers")                                      \
X(MPI_SHM, "AGMM_MPI_SHM", BOOL, "1", LIB,                                     \
  "0: ranks of one host talk over MPI, not shared memory")                     \
X(MPI_RELAY, "AGMM_MPI_RELAY", BOOL, "1", LIB,                                 \
  "0: no per-host relay of the all-gather across hosts")                       \
X(MPI_COUNTERS, "AGMM_MPI_COUNTERS", BOOL, "0", LIB,                           \
  "1: each MPI rank prints its transport counters at the end")                 \
X(WQ_KERNEL, "AGMM_WQ_KERNEL", STR, "-", LIB,                                  \
  "quantized-weight kernel: avx2, avx512, avx512bf16 or avx512vnni "           \
  "(unset: chosen by measurement)")                                            \
X(WQ_PREFILL_ROWS, "AGMM_WQ_PREFILL_ROWS", STR, "-", LIB,                      \
  "rows from which quantized weights take the prefill path (off or 0: "        \
  "never)")                                                                    \
X(BF16W_KERNEL, "AGMM_BF16W_KERNEL", STR, "-", LIB,                            \
  "bf16-weight kernel: portable, avx512-fma or avx512-bf16 (unset: the "       \
  "best)")                                                                     \
X(BF16W_AUTO, "AGMM_BF16W_AUTO", BOOL, "1", LIB,                               \
  "0: a bf16 auto plan does not measure the bf16-weight engine")               \
X(LOCAL_GEMM, "AGMM_LOCAL_GEMM", STR, "agmm", PY,                              \
  "agmm.torch's GEMM on one rank: agmm or torch")                              \
X(LIBRARY, "AGMM_LIBRARY", STR, "-", PY,                                       \
  "the libagmm.so the Python package loads (unset: its own)")                  \
X(FAULT, "AGMM_FAULT", STR, "-", LIB | TEST,                                   \
  "inject a fault: rank=R,after_puts=N,mode=hang|exit|kill|error")             \
X(TEST_MPI_HOST_SIZE, "AGMM_TEST_MPI_HOST_SIZE", INT, "-", LIB | TEST,         \
  "MPI: \"hosts\" of k consecutive ranks on one machine")                      \
X(TEST_CTL_DELAY_US, "AGMM_TEST_CTL_DELAY_US", INT, "0", LIB | TEST,           \
  "MPI: the progress thread sleeps this long (us) before each ack")            \
/* launchers' (torchrun, agmm launch) */                                       \
X(EXT_RANK, "RANK", INT, "-", LIB | PY | FOREIGN,                              \
  "torchrun's rank (after AGMM_RANK)")                                         \
X(EXT_WORLD_SIZE, "WORLD_SIZE", INT, "-", LIB | PY | FOREIGN,                  \
  "torchrun's world size (after AGMM_WORLD_SIZE)")                             \
X(EXT_LOCAL_WORLD_SIZE, "LOCAL_WORLD_SIZE", INT, "-", LIB | PY | FOREIGN,      \
  "torchrun's ranks on this host: must equal WORLD_SIZE")                      \
X(EXT_MASTER_ADDR, "MASTER_ADDR", STR, "-", LIB | FOREIGN,                     \
  "torchrun's rendezvous address: names the job")                              \
X(EXT_MASTER_PORT, "MASTER_PORT", INT, "-", LIB | FOREIGN,                     \
  "torchrun's rendezvous port, 1..65535: names the job")                       \
X(EXT_TORCHELASTIC_RUN_ID, "TORCHELASTIC_RUN_ID", STR, "-", LIB | FOREIGN,     \
  "torchrun's run id: names the job when set")                                 \
/* MPI launchers' */                                                           \
X(EXT_OMPI_COMM_WORLD_SIZE, "OMPI_COMM_WORLD_SIZE", INT, "-", LIB | FOREIGN,   \
  "set: started by Open MPI's mpirun")                                         \
X(EXT_OMPI_COMM_WORLD_LOCAL_SIZE, "OMPI_COMM_WORLD_LOCAL_SIZE", INT, "-",      \
  PY | FOREIGN, "Open MPI's ranks on this host (the default core split)")      \
X(EXT_PMI_SIZE, "PMI_SIZE", INT, "-", LIB | FOREIGN,                           \
  "set: started by a PMI-1/2 launcher (MPICH hydra, Slurm)")                   \
X(EXT_PMIX_RANK, "PMIX_RANK", INT, "-", LIB | FOREIGN,                         \
  "set: started by a PMIx launcher")                                           \
X(EXT_MPI_LOCALNRANKS, "MPI_LOCALNRANKS", INT, "-", LIB | FOREIGN,             \
  "set: started by an MPI launcher (MPICH)")                                   \
X(EXT_OMPI_KEEPALIVE_TIME, "OMPI_MCA_oob_tcp_keepalive_time", INT, "300",      \
  LIB | FOREIGN, "mpirun's keepalive (s): a lost host warned about if slow")   \
X(EXT_OMPI_KEEPALIVE_INTVL, "OMPI_MCA_oob_tcp_keepalive_intvl", INT, "20",     \
  LIB | FOREIGN, "mpirun's keepalive probe interval (s)")                      \
X(EXT_OMPI_KEEPALIVE_PROBES, "OMPI_MCA_oob_tcp_keepalive_probes", INT, "9",    \
  LIB | FOREIGN, "mpirun's keepalive probes")                                  \
/* libraries' */                                                               \
X(EXT_OPENBLAS_CORETYPE, "OPENBLAS_CORETYPE", STR, "-", LIB | CLI | FOREIGN,   \
  "OpenBLAS's kernel: reported, and advised on")                               \
X(EXT_OPENBLAS_L2_SIZE, "OPENBLAS_L2_SIZE", STR, "-", CLI | FOREIGN,           \
  "OpenBLAS's L2 size: reported")                                              \
X(EXT_OMP_NUM_THREADS, "OMP_NUM_THREADS", INT, "-", CLI | FOREIGN,             \
  "agmm launch: threads per rank (its placement); kept for the ranks")         \
X(EXT_USE_LIBUV, "USE_LIBUV", STR, "-", CLI | FOREIGN,                         \
  "agmm launch: kept for the ranks, else USE_LIBUV=0 (torch's store)")         \
X(EXT_HWLOC_SYNTHETIC, "HWLOC_SYNTHETIC", STR, "-", LIB | FOREIGN,             \
  "hwloc's described machine: named when hwloc fails")                         \
X(EXT_HWLOC_XMLFILE, "HWLOC_XMLFILE", STR, "-", LIB | FOREIGN,                 \
  "hwloc's described machine: named when hwloc fails")
/* clang-format on */

typedef enum {
#define AGMM_PARAM_ID(id, ...) AGMM_PARAM_##id,
    AGMM_PARAM_TABLE(AGMM_PARAM_ID)
#undef AGMM_PARAM_ID
        AGMM_PARAM_COUNT
} agmm_param_id_t;

typedef enum {
    AGMM_PARAM_TYPE_BOOL,
    AGMM_PARAM_TYPE_INT,
    AGMM_PARAM_TYPE_DOUBLE,
    AGMM_PARAM_TYPE_STR
} agmm_param_type_t;

enum {
    AGMM_PARAM_BY_LIB = 1,
    AGMM_PARAM_BY_CLI = 2,
    AGMM_PARAM_BY_PY = 4,
    AGMM_PARAM_FOREIGN = 8,
    AGMM_PARAM_TEST = 16
};

typedef struct {
    const char *name; /* the variable */
    agmm_param_type_t type;
    const char *dflt; /* "-": none */
    unsigned flags;   /* AGMM_PARAM_BY_* | FOREIGN | TEST */
    const char *doc;
} agmm_param_t;

/* Row `id` of the table. */
const agmm_param_t *agmm_param(agmm_param_id_t id);

/* The value as it is now, NULL when unset. Read at every call: a caller
 * that wants one value per process keeps it (pthread_once). */
const char *agmm_param_str(agmm_param_id_t id);
/* Set at all (an empty value included). */
int agmm_param_is_set(agmm_param_id_t id);
/* A BOOL row: its default unless set to the other of "0" / "1" exactly. */
int agmm_param_bool(agmm_param_id_t id);
/* The value's leading integer (atol), 0 when unset. */
long agmm_param_int(agmm_param_id_t id);
/* The whole value as a decimal integer (strtol, base 10): 1 and *out, 0
 * when unset, -1 when empty or not entirely a number (*out untouched). An
 * out of range value is LONG_MIN / LONG_MAX, for the caller's bounds. */
int agmm_param_long(agmm_param_id_t id, long *out);
/* The same for a real number (strtod). */
int agmm_param_double(agmm_param_id_t id, double *out);
/* The row's default as an integer (0 for "-"). */
long agmm_param_default_int(agmm_param_id_t id);

/* The table, one line per variable: name, type, default, readers, doc
 * (`agmm --help-env`). */
void agmm_param_print(FILE *out);

#endif
