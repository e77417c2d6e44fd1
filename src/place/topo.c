/* The machine through hwloc (place.h): every hardware thread this process
 * may use, with its physical core, NUMA node, package and L3 group, copied
 * into the plain agmm_topo_t. hwloc reads HWLOC_SYNTHETIC ("pack:2 numa:2
 * core:16 pu:2") and HWLOC_XMLFILE itself; such a described machine is not
 * this one, so this process's affinity does not restrict it. Built without
 * hwloc (AGMM_HAVE_HWLOC unset), the machine is flat: every CPU of the
 * affinity its own core, on one node. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/param.h"
#include "place/place.h"

#ifdef AGMM_HAVE_HWLOC
#include <hwloc.h>
#endif

/* Dense renumbering of one index field after some PUs were dropped:
 * map[old] = new, in order of first appearance (logical order is kept). */
static int renumber(agmm_topo_t *t, size_t off, int *node_os_out)
{
    int map[AGMM_TOPO_MAX_PUS];
    for (int i = 0; i < AGMM_TOPO_MAX_PUS; i++)
        map[i] = -1;
    int next = 0;
    for (int i = 0; i < t->npus; i++) {
        int *f = (int *)((char *)&t->pu[i] + off);
        if (*f < 0 || *f >= AGMM_TOPO_MAX_PUS) continue;
        if (map[*f] < 0) {
            if (node_os_out) node_os_out[next] = t->node_os[*f];
            map[*f] = next++;
        }
        *f = map[*f];
    }
    return next;
}

void agmm_topo_restrict(agmm_topo_t *t, const agmm_cpuset_t *allowed)
{
    int n = 0;
    for (int i = 0; i < t->npus; i++)
        if (agmm_cpuset_has(allowed, t->pu[i].os)) t->pu[n++] = t->pu[i];
    t->npus = n;
    t->ncores = renumber(t, offsetof(agmm_pu_t, core), NULL);
    int node_os[AGMM_CPUSET_MAX];
    t->nnodes = renumber(t, offsetof(agmm_pu_t, node), node_os);
    memcpy(t->node_os, node_os, sizeof(int) * (size_t)t->nnodes);
    t->npackages = renumber(t, offsetof(agmm_pu_t, package), NULL);
    int any_l3 = 0;
    for (int i = 0; i < t->npus; i++)
        any_l3 |= t->pu[i].l3 >= 0;
    t->nl3 = any_l3 ? renumber(t, offsetof(agmm_pu_t, l3), NULL) : 0;
}

void agmm_topo_describe(const agmm_topo_t *t, char *buf, size_t len)
{
    snprintf(buf, len, "%d %s, %d NUMA %s, %d %s, %d hardware %s%s",
             t->npackages, t->npackages == 1 ? "package" : "packages",
             t->nnodes, t->nnodes == 1 ? "node" : "nodes", t->ncores,
             t->ncores == 1 ? "core" : "cores", t->npus,
             t->npus == 1 ? "thread" : "threads",
             t->described ? " (a described machine, not this one)"
             : t->flat    ? " (no hwloc in this build: CPUs taken as cores)"
                          : "");
}

static int affinity(agmm_cpuset_t *out)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
    memset(out, 0, sizeof *out);
    for (int i = 0; i < CPU_SETSIZE && i < AGMM_CPUSET_MAX; i++)
        if (CPU_ISSET(i, &set)) agmm_cpuset_add(out, i);
    return 0;
}

#ifdef AGMM_HAVE_HWLOC
static int logical_of(hwloc_topology_t topo, hwloc_obj_t pu,
                      hwloc_obj_type_t ty)
{
    hwloc_obj_t a = hwloc_get_ancestor_obj_by_type(topo, ty, pu);
    return a ? (int)a->logical_index : -1;
}

static agmm_status_t load_hwloc(agmm_topo_t *t)
{
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0)
        return agmm_error(
            AGMM_ERR_SYSTEM, "placement: hwloc could not read the machine%s",
            agmm_param_is_set(AGMM_PARAM_EXT_HWLOC_SYNTHETIC) ||
                    agmm_param_is_set(AGMM_PARAM_EXT_HWLOC_XMLFILE)
                ? " (check HWLOC_SYNTHETIC / HWLOC_XMLFILE)"
                : "");
    t->described = !hwloc_topology_is_thissystem(topo);
    int nnodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    hwloc_obj_t pu = NULL;
    int extra_core = 0; /* PUs without a core object: a core each */
    int ncore_objs = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    while ((pu = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PU, pu))) {
        if (t->npus == AGMM_TOPO_MAX_PUS ||
            (int)pu->os_index >= AGMM_CPUSET_MAX)
            break;
        agmm_pu_t *p = &t->pu[t->npus++];
        p->os = (int)pu->os_index;
        p->core = logical_of(topo, pu, HWLOC_OBJ_CORE);
        if (p->core < 0) p->core = ncore_objs + extra_core++;
        p->package = logical_of(topo, pu, HWLOC_OBJ_PACKAGE);
        if (p->package < 0) p->package = 0;
        p->l3 = logical_of(topo, pu, HWLOC_OBJ_L3CACHE);
        p->node = 0;
        for (int n = 0; n < nnodes; n++) {
            hwloc_obj_t node =
                hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)n);
            if (node && hwloc_bitmap_isset(node->cpuset, pu->os_index)) {
                p->node = n;
                break;
            }
        }
    }
    for (int n = 0; n < nnodes && n < AGMM_CPUSET_MAX; n++) {
        hwloc_obj_t node =
            hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)n);
        t->node_os[n] = node ? (int)node->os_index : n;
    }
    if (nnodes < 1) t->node_os[0] = 0;
    hwloc_topology_destroy(topo);
    return AGMM_OK;
}
#endif

agmm_status_t agmm_topo_load(agmm_topo_t *t)
{
    memset(t, 0, sizeof *t);
    agmm_cpuset_t mine;
    int have_mine = affinity(&mine) == 0;
#ifdef AGMM_HAVE_HWLOC
    AGMM_CHECK(load_hwloc(t));
#else
    t->flat = 1;
    for (int i = 0; i < AGMM_CPUSET_MAX && have_mine; i++) {
        if (!agmm_cpuset_has(&mine, i)) continue;
        agmm_pu_t *p = &t->pu[t->npus];
        p->os = i;
        p->core = t->npus++;
        p->node = p->package = 0;
        p->l3 = -1;
    }
#endif
    agmm_cpuset_t all;
    memset(&all, 0, sizeof all);
    for (int i = 0; i < t->npus; i++)
        agmm_cpuset_add(&all, t->pu[i].os);
    /* Renumbers the indices densely even when nothing is dropped. */
    agmm_topo_restrict(t, t->described || !have_mine ? &all : &mine);
    if (t->npus == 0)
        return agmm_error(AGMM_ERR_SYSTEM,
                          "placement: the machine has no CPU this process may "
                          "use");
    return AGMM_OK;
}
