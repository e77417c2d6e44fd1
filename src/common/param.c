/* The parameter table (param.h's AGMM_PARAM_TABLE as rows), its typed
 * accessors and its printout (`agmm --help-env`). The one file of src/
 * and tools/ that reads the environment. */
#include "common/param.h"

#include <stdlib.h>
#include <string.h>

static const agmm_param_t k_params[AGMM_PARAM_COUNT] = {
#define LIB     AGMM_PARAM_BY_LIB
#define CLI     AGMM_PARAM_BY_CLI
#define PY      AGMM_PARAM_BY_PY
#define FOREIGN AGMM_PARAM_FOREIGN
#define TEST    AGMM_PARAM_TEST
#define AGMM_PARAM_ROW(id, name, type, dflt, flags, doc)                       \
    [AGMM_PARAM_##id] = {name, AGMM_PARAM_TYPE_##type, dflt, flags, doc},
    AGMM_PARAM_TABLE(AGMM_PARAM_ROW)
#undef AGMM_PARAM_ROW
#undef LIB
#undef CLI
#undef PY
#undef FOREIGN
#undef TEST
};

const agmm_param_t *agmm_param(agmm_param_id_t id)
{
    return &k_params[id];
}

const char *agmm_param_str(agmm_param_id_t id)
{
    return getenv(k_params[id].name);
}

int agmm_param_is_set(agmm_param_id_t id)
{
    return agmm_param_str(id) != NULL;
}

int agmm_param_bool(agmm_param_id_t id)
{
    const char *v = agmm_param_str(id);
    if (!strcmp(k_params[id].dflt, "1")) return !(v && !strcmp(v, "0"));
    return v && !strcmp(v, "1");
}

long agmm_param_int(agmm_param_id_t id)
{
    const char *v = agmm_param_str(id);
    return v ? atol(v) : 0;
}

int agmm_param_long(agmm_param_id_t id, long *out)
{
    const char *v = agmm_param_str(id);
    if (!v) return 0;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || end == v) return -1;
    *out = x;
    return 1;
}

int agmm_param_double(agmm_param_id_t id, double *out)
{
    const char *v = agmm_param_str(id);
    if (!v) return 0;
    char *end;
    double x = strtod(v, &end);
    if (*end || end == v) return -1;
    *out = x;
    return 1;
}

long agmm_param_default_int(agmm_param_id_t id)
{
    return strtol(k_params[id].dflt, NULL, 10);
}

void agmm_param_print(FILE *out)
{
    static const char *const types[] = {"bool", "int", "double", "string"};
    fprintf(out, "%-34s %-6s %-7s %-12s %s\n", "variable", "type", "default",
            "read by", "what it does");
    for (int i = 0; i < AGMM_PARAM_COUNT; i++) {
        const agmm_param_t *p = &k_params[i];
        char by[32];
        snprintf(by, sizeof by, "%s%s%s%s",
                 p->flags & AGMM_PARAM_BY_LIB ? "lib," : "",
                 p->flags & AGMM_PARAM_BY_CLI ? "cli," : "",
                 p->flags & AGMM_PARAM_BY_PY ? "py," : "",
                 p->flags & AGMM_PARAM_TEST ? "test," : "");
        by[strlen(by) - 1] = '\0'; /* every row has a reader */
        fprintf(out, "%-34s %-6s %-7s %-12s %s%s\n", p->name, types[p->type],
                p->dflt, by, p->flags & AGMM_PARAM_FOREIGN ? "(foreign) " : "",
                p->doc);
    }
}
