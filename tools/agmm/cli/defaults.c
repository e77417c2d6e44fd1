/*
 * The starting values of a command's options (options.h: opt_defaults):
 * every row's default from the option table (or agmm_plan_desc_init()'s,
 * for the rows the library also has), and the cores of this host the
 * core defaults and budget count (checks.c, core_checks.c).
 */
#include "options.h"

#include <limits.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

static int online_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) return 1;
    if (n > INT_MAX) return INT_MAX;
    return (int)n;
}

/* The cores this process may run on: its CPU affinity, which taskset,
 * cgroup cpusets, Slurm and MPI binding all set (at most the online ones;
 * the online count if the affinity cannot be read). */
static int usable_cores(void)
{
    int online = online_cores();
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return online;
    int n = CPU_COUNT(&set);
    return n < 1 ? 1 : n < online ? n : online;
}

/* Every field not in the table (and every "given" flag) starts at zero;
 * the --m-local default goes to m_local[0] (validation fills the rest). */
void opt_defaults(agmm_cli_t *cli, agmm_cmd_t cmd)
{
    agmm_plan_desc_t lib;
    agmm_plan_desc_init(&lib);
    memset(cli, 0, sizeof *cli);
    cli->cmd = cmd;
    for (int i = 0; i < opt_count; i++) {
        const opt_row_t *r = &opt_table[i];
        if (r->field == OPT_NO_FIELD) continue;
        void *f = (char *)cli + r->field;
        int64_t d = r->def[cmd == AGMM_CMD_BENCH];
        switch (r->kind) {
        case OPTK_INT64:
        case OPTK_ROWS:
            if (r->from_lib)
                memcpy(&d, (const char *)&lib + r->lib_field, sizeof d);
            memcpy(f, &d, sizeof d);
            break;
        case OPTK_CHOICE:
        case OPTK_INT:
        case OPTK_FLAG:
        case OPTK_COUNT: {
            int v = (int)d;
            if (r->from_lib)
                memcpy(&v, (const char *)&lib + r->lib_field, sizeof v);
            memcpy(f, &v, sizeof v);
            break;
        }
        case OPTK_LIST: {
            unsigned v = (unsigned)d;
            memcpy(f, &v, sizeof v);
            break;
        }
        case OPTK_UINT64: {
            uint64_t v = (uint64_t)d;
            memcpy(f, &v, sizeof v);
            break;
        }
        case OPTK_DOUBLE:
            memcpy(f, &r->ddef, sizeof r->ddef);
            break;
        case OPTK_PATH:
        case OPTK_WORD:
        case OPTK_HELP:
        case OPTK_VERSION:
            break;
        }
    }
    cli->usable_cores = usable_cores();
    cli->online_cores = online_cores();
}
