/* Placement of ranks on a machine's cores and memory (docs/placement.md).
 *
 *   topo.c   the machine as hwloc sees it (or as HWLOC_SYNTHETIC /
 *            HWLOC_XMLFILE describe it) -> agmm_topo_t, a plain struct:
 *            one entry per hardware thread this process may use
 *   place.c  the decision: which CPUs and NUMA nodes each of P ranks gets,
 *            a pure function of an agmm_topo_t and the --bind word, so it
 *            is tested on made-up machines (tests/unit/test_place.c)
 *   cpuset.c the CPU-set type both use: parse and print "0-31,64-95"
 *   bind.c   applying a rank's share to the calling process (affinity,
 *            memory policy) and pinning a rank's worker threads to it
 *
 * Nothing here keeps hwloc objects: the topology is copied into the plain
 * struct and hwloc's own topology is destroyed before agmm_topo_load
 * returns. */
#ifndef AGMM_PLACE_PLACE_H
#define AGMM_PLACE_PLACE_H

#include <stddef.h>
#include <stdint.h>

#include "agmm.h"

/* CPU (and NUMA node) numbers 0..AGMM_CPUSET_MAX-1, as the OS numbers
 * them. */
#define AGMM_CPUSET_MAX 1024
typedef struct {
    uint64_t w[AGMM_CPUSET_MAX / 64];
} agmm_cpuset_t;

static inline void agmm_cpuset_add(agmm_cpuset_t *s, int i)
{
    if (i >= 0 && i < AGMM_CPUSET_MAX) s->w[i / 64] |= 1ull << (i % 64);
}
static inline int agmm_cpuset_has(const agmm_cpuset_t *s, int i)
{
    return i >= 0 && i < AGMM_CPUSET_MAX && (s->w[i / 64] >> (i % 64)) & 1;
}
int agmm_cpuset_count(const agmm_cpuset_t *s);
int agmm_cpuset_empty(const agmm_cpuset_t *s);
/* Do the two sets share a CPU? */
int agmm_cpuset_overlap(const agmm_cpuset_t *a, const agmm_cpuset_t *b);
/* The i-th member (0-based), -1 past the end. */
int agmm_cpuset_nth(const agmm_cpuset_t *s, int i);
/* "0-3,8,10-11" ("" for the empty set) into buf (truncated to len). */
void agmm_cpuset_format(const agmm_cpuset_t *s, char *buf, size_t len);
/* Parse "0-3,8" (from..to ranges, commas; no spaces) into *out: 0, or -1
 * with a reason in why[len] ("'x' is not a CPU number"). */
int agmm_cpuset_parse(const char *s, size_t n, agmm_cpuset_t *out, char *why,
                      size_t len);

/* One hardware thread (PU) the process may use. Indices are dense, in
 * hwloc's logical order (package, node, L3, core, thread), so the cores of
 * one node are consecutive. */
typedef struct {
    int os;      /* the OS CPU number (what affinity masks use) */
    int core;    /* index of its physical core, 0..ncores-1 */
    int node;    /* index of its NUMA node, 0..nnodes-1 */
    int package; /* index of its package (socket), 0..npackages-1 */
    int l3;      /* index of its L3 group (-1: no L3 known) */
} agmm_pu_t;

#define AGMM_TOPO_MAX_PUS AGMM_CPUSET_MAX
typedef struct {
    int npus, ncores, nnodes, npackages, nl3;
    agmm_pu_t pu[AGMM_TOPO_MAX_PUS]; /* npus entries, in logical order */
    int node_os[AGMM_CPUSET_MAX];    /* node index -> OS node number */
    /* 1: HWLOC_SYNTHETIC or HWLOC_XMLFILE described another machine (its
     * plan is for that machine: nothing of it is applied here). */
    int described;
    /* 1: no hwloc in this build: every CPU its own core, one node. */
    int flat;
} agmm_topo_t;

/* Load this machine (or the described one), restricted to the CPUs this
 * process may use (its affinity; not applied to a described machine).
 * AGMM_ERR_SYSTEM with a logged reason if hwloc fails. */
agmm_status_t agmm_topo_load(agmm_topo_t *out);
/* Keep only the PUs in `allowed` (renumbering cores, nodes, packages and
 * L3 groups that lose every PU). */
void agmm_topo_restrict(agmm_topo_t *t, const agmm_cpuset_t *allowed);
/* "2 packages, 4 NUMA nodes, 64 cores, 128 hardware threads". */
void agmm_topo_describe(const agmm_topo_t *t, char *buf, size_t len);

/* One rank's share. */
typedef struct {
    agmm_cpuset_t cpus;  /* OS CPU numbers */
    agmm_cpuset_t nodes; /* OS NUMA node numbers its memory goes on */
    int ncores;          /* physical cores among cpus */
} agmm_place_rank_t;

typedef struct {
    int nranks;
    int bound; /* 0: nothing is bound (none, or auto could not) */
    /* Why nothing is bound, or what auto chose ("one NUMA node per rank"),
     * one line without a newline. */
    char note[200];
    agmm_place_rank_t *rank; /* nranks entries when bound, else NULL */
} agmm_place_t;

/* Decide the placement of `nranks` ranks on `t` for `bind`: "auto",
 * "none" or a LIST ("0-31|32-63", one CPU list per rank). threads_per_rank
 * (0: unknown) lets auto give a group its cores' hardware threads when it
 * has fewer physical cores than threads. Pure: no system call. Returns 0,
 * or -1 with a one-line reason in why[len] (no "--bind" prefix; *out is
 * then empty). Free with agmm_place_free. */
int agmm_place_plan(const agmm_topo_t *t, int nranks, const char *bind,
                    int threads_per_rank, agmm_place_t *out, char *why,
                    size_t len);
void agmm_place_free(agmm_place_t *p);
/* "cores 0-31 (node 0), memory on node 0" for rank r of a bound plan. */
void agmm_place_describe_rank(const agmm_place_t *p, const agmm_topo_t *t,
                              int r, char *buf, size_t len);

/* ---- bind.c: applying a share in this process ------------------------ */
/* Set the calling process's affinity to r->cpus and, when the machine has
 * more than one NUMA node, its memory policy to r->nodes (MPOL_BIND; if
 * that is refused, a warning: first touch on the rank's own cores places
 * its pages), then record the share as this rank's (agmm_bind_rank_cpus).
 * Call in a single-threaded process (right after fork, or before exec).
 * Returns 0, or -1 with the reason logged (the affinity was refused). */
int agmm_bind_apply(const agmm_place_rank_t *r, int nnodes);
/* Record `cpus` as this rank's share without setting anything (the
 * affinity was set before exec: agmm launch's AGMM_BIND_CPUS). */
void agmm_bind_adopt(const agmm_cpuset_t *cpus);
/* A joined rank started by agmm launch: adopt AGMM_BIND_CPUS when it is
 * set, parses and lies within this process's affinity. */
void agmm_bind_adopt_env(void);
/* This rank's share, NULL when the rank is not bound (--bind none, MPI,
 * a library caller's default). The set is fixed once the workers run. */
const agmm_cpuset_t *agmm_bind_rank_cpus(void);

/* Worker i of a round (i = 0 is the calling thread) runs on CPU
 * share[i mod |share|] of this rank's share. With no share, attr and
 * self are no-ops. Start attr: set before pthread_create (0, or -1 if the attr
 * refused it). Self: pin the calling thread to worker i's CPU, its former
 * affinity saved in *saved (restored by agmm_bind_restore; saved->valid 0
 * when nothing was changed). */
typedef struct {
    int valid;
    agmm_cpuset_t cpus;
} agmm_bind_saved_t;
/* Worker i's CPU, -1 when the rank is not bound. */
int agmm_bind_worker_cpu(int i);
/* pthread_attr is a pthread_attr_t * (kept out of this header) */
int agmm_bind_worker_attr(void *pthread_attr, int i);
void agmm_bind_self(int i, agmm_bind_saved_t *saved);
void agmm_bind_restore(const agmm_bind_saved_t *saved);

#endif
