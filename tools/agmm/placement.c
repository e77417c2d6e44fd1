/* --bind for agmm run/bench (placement.h): the plan for the forked ranks
 * is made here in the parent, before the fork, so every rank (a copy of
 * this process) reads the same plan for the header; agmm_launch makes the
 * same plan again from the same word and applies it (src/place/). */
#include "placement.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "report.h"

static agmm_topo_t topo;
static int topo_state; /* 0 not loaded, 1 loaded, -1 failed */
static agmm_place_t plan;
static int plan_mpi; /* the MPI launcher's binding is kept */

const agmm_topo_t *agmm_tool_topo(FILE *err)
{
    if (topo_state == 0) {
        agmm_log_mute(1);
        topo_state = agmm_topo_load(&topo) == AGMM_OK ? 1 : -1;
        agmm_log_mute(0);
        if (topo_state < 0 && err)
            fprintf(err, "agmm: --bind: %s\n", agmm_last_error());
    }
    return topo_state > 0 ? &topo : NULL;
}

const char *agmm_tool_bind_word(const agmm_cli_t *cli)
{
    return cli->bind ? cli->bind : "auto";
}

const char *agmm_tool_bind_launch(const agmm_cli_t *cli)
{
    return plan.bound ? agmm_tool_bind_word(cli) : "none";
}

int agmm_cli_check_bind(agmm_cli_t *cli, FILE *err, int world_size)
{
    agmm_place_free(&plan);
    memset(&plan, 0, sizeof plan);
    plan_mpi = world_size > 0;
    if (plan_mpi) {
        if (!cli->bind) return 0;
        fprintf(err,
                "agmm: --bind: under an MPI launcher the launcher places the "
                "ranks (mpirun --map-by ppr:1:numa:pe=N --bind-to core; see "
                "docs/mpi.md)\n");
        return 2;
    }
    const char *word = agmm_tool_bind_word(cli);
    if (!strcmp(word, "none")) {
        snprintf(plan.note, sizeof plan.note, "not binding (--bind none)");
        return 0;
    }
    const agmm_topo_t *t = agmm_tool_topo(err);
    if (!t) return 2;
    if (t->described && !cli->bind) { /* the default: nothing to apply */
        snprintf(plan.note, sizeof plan.note,
                 "not binding: HWLOC_SYNTHETIC/HWLOC_XMLFILE describe another "
                 "machine");
        return 0;
    }
    if (t->described) {
        fprintf(err,
                "agmm: --bind: HWLOC_SYNTHETIC/HWLOC_XMLFILE describe another "
                "machine (unset them, or plan for it with agmm launch "
                "--dry-run)\n");
        return 2;
    }
    char why[300];
    if (agmm_place_plan(t, cli->ranks, word, cli->comm_cores + cli->gemm_cores,
                        &plan, why, sizeof why) != 0) {
        fprintf(err, "agmm: --bind: %s\n", why);
        return 2;
    }
    return 0;
}

/* This process's affinity, "0-3". */
static void own_affinity(char *buf, size_t len)
{
    cpu_set_t set;
    agmm_cpuset_t s;
    memset(&s, 0, sizeof s);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int i = 0; i < CPU_SETSIZE && i < AGMM_CPUSET_MAX; i++)
            if (CPU_ISSET(i, &set)) agmm_cpuset_add(&s, i);
    agmm_cpuset_format(&s, buf, len);
}

void agmm_tool_describe_placement(const agmm_cli_t *cli, FILE *out)
{
    if (plan_mpi) {
        char mine[400];
        own_affinity(mine, sizeof mine);
        fprintf(out,
                "placement: the MPI launcher's binding, kept (this rank: "
                "cpus %s)\n",
                mine);
        return;
    }
    fprintf(out, "placement: --bind %s: %s\n", agmm_tool_bind_word(cli),
            plan.note);
    for (int r = 0; plan.bound && r < plan.nranks; r++) {
        char d[600];
        agmm_place_describe_rank(&plan, &topo, r, d, sizeof d);
        fprintf(out, "placement: rank %d: %s\n", r, d);
    }
}

void agmm_tool_json_placement(const agmm_cli_t *cli)
{
    printf(",\"placement\":{\"bind\":");
    if (plan_mpi) {
        char mine[400];
        own_affinity(mine, sizeof mine);
        printf("\"mpi\",\"bound\":false,\"note\":\"the MPI launcher's binding, "
               "kept\",\"this_rank_cpus\":\"%s\",\"ranks\":null}",
               mine);
        return;
    }
    agmm_tool_json_string(agmm_tool_bind_word(cli));
    printf(",\"bound\":%s,\"note\":", plan.bound ? "true" : "false");
    agmm_tool_json_string(plan.note);
    printf(",\"ranks\":");
    if (!plan.bound) {
        printf("null}");
        return;
    }
    printf("[");
    for (int r = 0; r < plan.nranks; r++) {
        char cpus[400], nodes[100];
        agmm_cpuset_format(&plan.rank[r].cpus, cpus, sizeof cpus);
        agmm_cpuset_format(&plan.rank[r].nodes, nodes, sizeof nodes);
        printf("%s{\"rank\":%d,\"cpus\":\"%s\",\"cores\":%d,\"nodes\":\"%s\","
               "\"memory_nodes\":\"%s\"}",
               r ? "," : "", r, cpus, plan.rank[r].ncores, nodes, nodes);
    }
    printf("]}");
}
