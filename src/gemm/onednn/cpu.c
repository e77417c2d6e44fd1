/* The base of the oneDNN engine (cpu.h): the process's CPU engine, the
 * OpenMP thread-count guard and the mapping of oneDNN's failures.
 * Debian's oneDNN runs on OpenMP (libgomp), whose thread count is an ICV
 * of each thread: everything of the engine that creates or runs is called
 * at one thread (agmm_dn_one_omp_thread), see prep.c. */
#include "gemm/onednn/cpu.h"

#include <dnnl_debug.h>
#include <pthread.h>

#include "common/log.h"

/* libgomp's, linked explicitly (CMakeLists.txt): declared here so agmm
 * needs no -fopenmp (clang's would bring another OpenMP runtime). */
extern void omp_set_num_threads(int n);
extern int omp_get_max_threads(void);

static dnnl_engine_t g_engine;
static dnnl_status_t g_engine_status = dnnl_runtime_error;
static pthread_once_t g_engine_once = PTHREAD_ONCE_INIT;
static void engine_init(void)
{
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    g_engine_status = dnnl_engine_create(&g_engine, dnnl_cpu, 0);
    omp_set_num_threads(saved);
}

dnnl_engine_t agmm_dn_engine(void)
{
    pthread_once(&g_engine_once, engine_init);
    if (g_engine_status != dnnl_success) {
        agmm_dn_fail(g_engine_status, "CPU engine");
        return NULL;
    }
    return g_engine;
}

agmm_status_t agmm_dn_fail(dnnl_status_t s, const char *what)
{
    return agmm_error(s == dnnl_out_of_memory   ? AGMM_ERR_NO_MEMORY
                      : s == dnnl_unimplemented ? AGMM_ERR_UNSUPPORTED
                                                : AGMM_ERR_SYSTEM,
                      "gemm: oneDNN %s failed: %s", what, dnnl_status2str(s));
}

int agmm_dn_one_omp_thread(void)
{
    int saved = omp_get_max_threads();
    if (saved != 1) omp_set_num_threads(1);
    return saved;
}

void agmm_dn_restore_omp(int saved)
{
    if (saved != 1) omp_set_num_threads(saved);
}

size_t agmm_dn_pd_scratch(const_dnnl_primitive_desc_t pd)
{
    agmm_dn_cmd_t sp =
        dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    return sp ? dnnl_memory_desc_get_size(sp) : 0;
}
