/* The placement decision (place.h): which CPUs and NUMA nodes each rank
 * gets, from the plain topology alone (no system call, so
 * tests/unit/test_place.c checks it on made-up machines).
 *
 * auto, in order:
 *   1. more ranks than physical cores: nothing is bound (said in the note);
 *   2. at least as many NUMA nodes as ranks: rank r gets nodes
 *      [r*q, r*q+q) with q = nodes / ranks when that divides (2 ranks on
 *      2 packages x 2 nodes: a package each), else node r (the rest idle);
 *   3. fewer nodes, and the ranks a multiple of them: each node's cores
 *      split into ranks/nodes contiguous equal groups (so no group
 *      straddles a node), the size the smallest node allows;
 *   4. otherwise: all cores in logical order, split into P contiguous
 *      equal groups (a group may straddle nodes; the note says so).
 * Equal groups leave the remainder cores idle. Each core gives its first
 * hardware thread, or all of them when the group has fewer cores than the
 * threads a rank asks for. A rank's memory goes on the nodes of its CPUs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "place/place.h"

/* The first PU index of each core, and each core's node. */
typedef struct {
    int first_pu[AGMM_TOPO_MAX_PUS];
    int node[AGMM_TOPO_MAX_PUS];
    int node_first[AGMM_CPUSET_MAX]; /* first core of each node */
    int node_cores[AGMM_CPUSET_MAX]; /* cores in each node */
} cores_t;

static void index_cores(const agmm_topo_t *t, cores_t *c)
{
    for (int i = 0; i < t->ncores; i++)
        c->first_pu[i] = -1;
    for (int n = 0; n < t->nnodes; n++) {
        c->node_first[n] = -1;
        c->node_cores[n] = 0;
    }
    for (int i = 0; i < t->npus; i++) {
        int k = t->pu[i].core;
        if (c->first_pu[k] >= 0) continue;
        c->first_pu[k] = i;
        c->node[k] = t->pu[i].node;
        if (c->node_first[c->node[k]] < 0) c->node_first[c->node[k]] = k;
        c->node_cores[c->node[k]]++;
    }
}

/* Give rank share `r` cores [from, from + n): their first threads, or all
 * of their threads when n < threads. */
static void take_cores(const agmm_topo_t *t, const cores_t *c, int from, int n,
                       int threads, agmm_place_rank_t *r)
{
    memset(r, 0, sizeof *r);
    for (int i = 0; i < t->npus; i++) {
        int k = t->pu[i].core;
        if (k < from || k >= from + n) continue;
        if (n >= threads && c->first_pu[k] != i) continue;
        agmm_cpuset_add(&r->cpus, t->pu[i].os);
        agmm_cpuset_add(&r->nodes, t->node_os[t->pu[i].node]);
    }
    r->ncores = n;
}

static int split(const agmm_topo_t *t, int p, int threads, cores_t *c,
                 agmm_place_t *out);

static int plan_auto(const agmm_topo_t *t, int p, int threads,
                     agmm_place_t *out)
{
    if (t->flat) {
        snprintf(out->note, sizeof out->note,
                 "not binding: this agmm was built without hwloc (auto needs "
                 "the machine's cores and nodes; give a CPU list instead)");
        return 0;
    }
    if (p > t->ncores) {
        snprintf(out->note, sizeof out->note,
                 "not binding: %d ranks but %d physical %s", p, t->ncores,
                 t->ncores == 1 ? "core" : "cores");
        return 0;
    }
    cores_t *cp = malloc(sizeof *cp); /* large: not on the stack */
    out->rank = calloc((size_t)p, sizeof *out->rank);
    if (!cp || !out->rank) {
        free(cp);
        return -1;
    }
    int rc = split(t, p, threads, cp, out);
    free(cp);
    return rc;
}

/* auto's steps 2-4 (the file comment), the cores indexed into *c. */
static int split(const agmm_topo_t *t, int p, int threads, cores_t *c,
                 agmm_place_t *out)
{
    index_cores(t, c);
    out->bound = 1;
    if (t->nnodes >= p) {
        int q = t->nnodes % p == 0 ? t->nnodes / p : 1;
        for (int r = 0; r < p; r++) {
            int first = c->node_first[r * q], n = 0;
            for (int k = 0; k < q; k++)
                n += c->node_cores[r * q + k];
            take_cores(t, c, first, n, threads, &out->rank[r]);
        }
        if (q == 1)
            snprintf(out->note, sizeof out->note, "one NUMA node per rank%s",
                     t->nnodes > p ? " (the last nodes idle)" : "");
        else
            snprintf(out->note, sizeof out->note, "%d NUMA nodes per rank%s", q,
                     t->npackages == p ? " (a package each)" : "");
        return 0;
    }
    int g = 0;
    if (p % t->nnodes == 0) {
        int q = p / t->nnodes;
        g = t->ncores;
        for (int n = 0; n < t->nnodes; n++)
            if (c->node_cores[n] / q < g) g = c->node_cores[n] / q;
        for (int r = 0; g > 0 && r < p; r++)
            take_cores(t, c, c->node_first[r / q] + (r % q) * g, g, threads,
                       &out->rank[r]);
        if (g > 0) {
            snprintf(out->note, sizeof out->note,
                     "%d %s of %d %s per NUMA node", q,
                     q == 1 ? "rank" : "ranks", g, g == 1 ? "core" : "cores");
            return 0;
        }
    }
    g = t->ncores / p;
    int straddle = 0;
    for (int r = 0; r < p; r++) {
        take_cores(t, c, r * g, g, threads, &out->rank[r]);
        straddle |= c->node[r * g] != c->node[r * g + g - 1];
    }
    snprintf(out->note, sizeof out->note, "%d groups of %d %s%s", p, g,
             g == 1 ? "core" : "cores",
             straddle ? " (some span two NUMA nodes)" : "");
    return 0;
}

/* The PU index of OS CPU `os` in t, -1 if t has none. */
static int pu_of(const agmm_topo_t *t, int os)
{
    for (int i = 0; i < t->npus; i++)
        if (t->pu[i].os == os) return i;
    return -1;
}

static int plan_list(const agmm_topo_t *t, int p, const char *bind,
                     agmm_place_t *out, char *why, size_t len)
{
    int lists = 1;
    for (const char *s = bind; *s; s++)
        lists += *s == '|';
    if (lists != p) {
        snprintf(why, len,
                 "%d CPU %s for %d %s (give one per rank, separated by '|', "
                 "like 0-31|32-63)",
                 lists, lists == 1 ? "list" : "lists", p,
                 p == 1 ? "rank" : "ranks");
        return -1;
    }
    out->rank = calloc((size_t)p, sizeof *out->rank);
    if (!out->rank) return -1;
    const char *s = bind;
    for (int r = 0; r < p; r++) {
        const char *e = strchr(s, '|');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        agmm_place_rank_t *pr = &out->rank[r];
        char sub[160];
        if (agmm_cpuset_parse(s, n, &pr->cpus, sub, sizeof sub) != 0) {
            snprintf(why, len, "rank %d: %s", r, sub);
            return -1;
        }
        agmm_cpuset_t cores;
        memset(&cores, 0, sizeof cores);
        for (int i = 0, cpu; (cpu = agmm_cpuset_nth(&pr->cpus, i)) >= 0; i++) {
            int pu = pu_of(t, cpu);
            if (pu < 0) {
                char allowed[160];
                agmm_cpuset_t all;
                memset(&all, 0, sizeof all);
                for (int j = 0; j < t->npus; j++)
                    agmm_cpuset_add(&all, t->pu[j].os);
                agmm_cpuset_format(&all, allowed, sizeof allowed);
                snprintf(why, len,
                         "rank %d: CPU %d is not one this process may use "
                         "(allowed: %s)",
                         r, cpu, allowed);
                return -1;
            }
            agmm_cpuset_add(&cores, t->pu[pu].core);
            agmm_cpuset_add(&pr->nodes, t->node_os[t->pu[pu].node]);
        }
        pr->ncores = agmm_cpuset_count(&cores);
        for (int q = 0; q < r; q++) {
            if (!agmm_cpuset_overlap(&out->rank[q].cpus, &pr->cpus)) continue;
            for (int i = 0;; i++) {
                int cpu = agmm_cpuset_nth(&pr->cpus, i);
                if (agmm_cpuset_has(&out->rank[q].cpus, cpu)) {
                    snprintf(why, len, "ranks %d and %d both list CPU %d", q, r,
                             cpu);
                    return -1;
                }
            }
        }
        s = e ? e + 1 : s + n;
    }
    out->bound = 1;
    snprintf(out->note, sizeof out->note, "the CPU lists given");
    return 0;
}

int agmm_place_plan(const agmm_topo_t *t, int nranks, const char *bind,
                    int threads_per_rank, agmm_place_t *out, char *why,
                    size_t len)
{
    memset(out, 0, sizeof *out);
    out->nranks = nranks;
    if (nranks < 1) {
        snprintf(why, len, "%d ranks", nranks);
        return -1;
    }
    int rc;
    if (!bind || !strcmp(bind, "none")) {
        snprintf(out->note, sizeof out->note, "not binding (--bind none)");
        rc = 0;
    } else if (!strcmp(bind, "auto")) {
        rc = plan_auto(t, nranks, threads_per_rank, out);
        if (rc) snprintf(why, len, "out of memory");
    } else if (bind[0] >= '0' && bind[0] <= '9') {
        rc = plan_list(t, nranks, bind, out, why, len);
    } else {
        snprintf(why, len,
                 "'%.60s' (allowed: auto, none, or one CPU list per rank "
                 "separated by '|', like 0-31|32-63)",
                 bind);
        rc = -1;
    }
    if (rc) agmm_place_free(out);
    return rc;
}

void agmm_place_free(agmm_place_t *p)
{
    free(p->rank);
    p->rank = NULL;
    p->bound = 0;
}

void agmm_place_describe_rank(const agmm_place_t *p, const agmm_topo_t *t,
                              int r, char *buf, size_t len)
{
    (void)t;
    if (!p->bound || r < 0 || r >= p->nranks) {
        snprintf(buf, len, "not bound");
        return;
    }
    const agmm_place_rank_t *pr = &p->rank[r];
    char cpus[400], nodes[100];
    agmm_cpuset_format(&pr->cpus, cpus, sizeof cpus);
    agmm_cpuset_format(&pr->nodes, nodes, sizeof nodes);
    int many = agmm_cpuset_count(&pr->nodes) > 1;
    snprintf(buf, len, "cores %s (%s %s), memory on %s %s", cpus,
             many ? "nodes" : "node", nodes, many ? "nodes" : "node", nodes);
}
