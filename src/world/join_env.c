/* agmm_world_from_env: a joined world (join.c) described by the variables
 * launchers already set. agmm's own AGMM_RANK / AGMM_WORLD_SIZE /
 * AGMM_JOB come first; else torchrun's RANK / WORLD_SIZE, with the job
 * named after the rendezvous point every rank of a torchrun job shares
 * (MASTER_ADDR, MASTER_PORT and TORCHELASTIC_RUN_ID when set). A world
 * spanning hosts (LOCAL_WORLD_SIZE != WORLD_SIZE) is refused: joined
 * worlds share memory, so they are one host's. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/param.h"
#include "transport/shm/segment.h"

/* The integer in parameter `id` (lo..hi); AGMM_ERR_INVALID_ARG naming it. */
static agmm_status_t env_int(agmm_param_id_t id, long lo, long hi, int *out)
{
    const char *var = agmm_param(id)->name, *s = agmm_param_str(id);
    if (!s || !*s)
        return agmm_error(AGMM_ERR_INVALID_ARG, "world_from_env: %s is not set",
                          var);
    long v = 0; /* out of range: LONG_MIN / LONG_MAX, outside lo..hi */
    if (agmm_param_long(id, &v) != 1 || v < lo || v > hi)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "world_from_env: %s='%.40s' (allowed an integer "
                          "%ld..%ld)",
                          var, s, lo, hi);
    *out = (int)v;
    return AGMM_OK;
}

static const char *env_needed(agmm_param_id_t id)
{
    const char *s = agmm_param_str(id);
    if (!s || !*s) {
        agmm_error(AGMM_ERR_INVALID_ARG, "world_from_env: %s is not set",
                   agmm_param(id)->name);
        return NULL;
    }
    return s;
}

/* "tr-<addr>-<port>[-<run id>]" in the job alphabet; too long: shortened
 * with a hash of the whole so distinct rendezvous points stay distinct. */
static void torch_job(const char *addr, const char *port, const char *run,
                      char *job)
{
    char full[512];
    snprintf(full, sizeof full, "tr-%s-%s%s%s", addr, port, run ? "-" : "",
             run ? run : "");
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (char *c = full; *c; c++) {
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
        int ok = (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
                 (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' ||
                 *c == '-';
        if (!ok) *c = '_';
    }
    size_t n = strlen(full);
    if (n <= AGMM_SEG_JOB_MAX) {
        memcpy(job, full, n + 1);
        return;
    }
    snprintf(job, AGMM_SEG_JOB_MAX + 1, "%.31s-%016llx", full,
             (unsigned long long)h);
}

agmm_status_t agmm_world_from_env(double timeout_s, agmm_world_t **out)
{
    if (out) *out = NULL;
    if (!out)
        return agmm_error(AGMM_ERR_INVALID_ARG, "world_from_env: out is NULL");
    agmm_join_opts_t o = {0};
    char job[AGMM_SEG_JOB_MAX + 1];
    if (agmm_param_is_set(AGMM_PARAM_RANK)) {
        AGMM_CHECK(env_int(AGMM_PARAM_WORLD_SIZE, 1, 4096, &o.size));
        AGMM_CHECK(env_int(AGMM_PARAM_RANK, 0, o.size - 1, &o.rank));
        const char *j = env_needed(AGMM_PARAM_JOB);
        if (!j) return AGMM_ERR_INVALID_ARG;
        AGMM_CHECK(agmm_seg_check_job(j, "world_from_env: AGMM_JOB"));
        snprintf(job, sizeof job, "%s", j);
    } else if (agmm_param_is_set(AGMM_PARAM_EXT_RANK)) {
        AGMM_CHECK(env_int(AGMM_PARAM_EXT_WORLD_SIZE, 1, 4096, &o.size));
        AGMM_CHECK(env_int(AGMM_PARAM_EXT_RANK, 0, o.size - 1, &o.rank));
        int local = 0;
        if (agmm_param_is_set(AGMM_PARAM_EXT_LOCAL_WORLD_SIZE)) {
            AGMM_CHECK(
                env_int(AGMM_PARAM_EXT_LOCAL_WORLD_SIZE, 1, 4096, &local));
            if (local != o.size)
                return agmm_error(AGMM_ERR_UNSUPPORTED,
                                  "world_from_env: LOCAL_WORLD_SIZE=%d but "
                                  "WORLD_SIZE=%d: a joined world is the "
                                  "processes of one host",
                                  local, o.size);
        }
        const char *addr = env_needed(AGMM_PARAM_EXT_MASTER_ADDR);
        if (!addr) return AGMM_ERR_INVALID_ARG;
        const char *port = env_needed(AGMM_PARAM_EXT_MASTER_PORT);
        if (!port) return AGMM_ERR_INVALID_ARG;
        int p;
        AGMM_CHECK(env_int(AGMM_PARAM_EXT_MASTER_PORT, 1, 65535, &p));
        torch_job(addr, port,
                  agmm_param_str(AGMM_PARAM_EXT_TORCHELASTIC_RUN_ID), job);
    } else {
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "world_from_env: AGMM_RANK is not set (set "
                          "AGMM_RANK, AGMM_WORLD_SIZE and AGMM_JOB, or RANK, "
                          "WORLD_SIZE, MASTER_ADDR and MASTER_PORT as torchrun "
                          "does)");
    }
    if (!(timeout_s > 0) && agmm_param_is_set(AGMM_PARAM_TIMEOUT_S)) {
        const char *s = agmm_param_str(AGMM_PARAM_TIMEOUT_S);
        double t = 0;
        if (agmm_param_double(AGMM_PARAM_TIMEOUT_S, &t) != 1 || !(t > 0) ||
            t > 1e6)
            return agmm_error(AGMM_ERR_INVALID_ARG,
                              "world_from_env: AGMM_TIMEOUT_S='%.40s' (allowed "
                              "seconds, 0 < t <= 1e6)",
                              s);
        timeout_s = t;
    }
    o.job = job;
    o.timeout_s = timeout_s;
    return agmm_world_join(&o, out);
}
