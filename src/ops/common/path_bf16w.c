/* The bf16w candidate of a bf16 plan's GEMM choice (issue 48): agmm's
 * bf16-weight kernel against the engine's native path, measured with the
 * weight streamed from memory (path_probe.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/param.h"
#include "common/util.h"
#include "gemm/dram.h"
#include "gemm/engine_list.h"
#include "ops/common/path_probe.h"
#include "ops/common/plan.h"

/* bf16w (issue 48): for a bf16 plan on the AUTO engine whose calls take
 * at most AGMM_BF16W_AUTO_ROWS rows (decode), agmm's own bf16-weight
 * kernel (the wq engine on an unquantized weight, gemm/wq/bf16w.h) is
 * measured against the engine's native path with the weight where a
 * round finds it: each on a slice of up to 512 columns, the best of three
 * calls, each after reading twice the largest cache when the rank's
 * weight (k x columns, bf16) outgrows that cache, so that the slice
 * streams from memory as a decode step's weights do (the paths' own
 * probe runs on a slice the caches hold,
 * where oneDNN's kernel was the faster at one row: 54 against 60 us for
 * 4 MiB, while from memory it reached 0.44-0.57 of the DRAM rate and
 * this kernel about 0.9). The pair is cached per process under the wq
 * engine's key. Every rank allgathers its two predicted round times
 * (+inf where it measured nothing: more rows a call, a failure) and the
 * plan moves to the wq engine (native path) when its slowest rank beats
 * the engine's native slowest. Every rank of a bf16 AUTO plan makes this
 * allgather (the description decides, so all alike). The plan then
 * prepares one layout of the weight, the chosen engine's.
 * AGMM_BF16W_AUTO=0 leaves the engine's choice alone (side by side
 * runs). */
#define AGMM_BF16W_AUTO_ROWS 32

int agmm_path_bf16w_applies(const probe_key_t *key)
{
    return key->k > 0 && key->rows <= AGMM_BF16W_AUTO_ROWS &&
           !agmm_path_probe_overridden() && /* the tests' measurement: the
                                               two paths only */
           agmm_param_bool(AGMM_PARAM_BF16W_AUTO);
}

agmm_status_t agmm_path_bf16w_measure(const agmm_gemm_engine_t *native,
                                      const probe_key_t *key, double call_us[2],
                                      double *ms)
{
    static const agmm_gemm_request_t bw_req = {
        AGMM_GEMM_ENGINE_WQ, AGMM_DTYPE_BF16, AGMM_GEMM_W_PLAIN};
    const agmm_gemm_engine_t *bw = agmm_gemm_engine_find(&bw_req);
    agmm_status_t st = AGMM_OK;
    probe_key_t kb = *key;
    kb.engine = bw->kind;
    probe_result_t rb = {{INFINITY, INFINITY}, {0, 0}, {0, 0}, {"", ""}};
    if (!agmm_path_cache_find(&kb, &rb)) {
        double t0 = agmm_now();
        int64_t cols = AGMM_MIN(kb.ncols, 512);
        /* from memory when the rank's weight outgrows the largest
         * cache (a round streams it), else from the caches */
        size_t llc = agmm_dram_llc_bytes();
        size_t eb = 2 * llc < ((size_t)64 << 20) ? (size_t)64 << 20 : 2 * llc;
        if ((uint64_t)kb.k * (uint64_t)kb.ncols * 2u <= (uint64_t)llc) eb = 0;
        unsigned char *ev = eb ? agmm_alloc(eb) : NULL;
        if (eb && !ev)
            st = agmm_error(AGMM_ERR_NO_MEMORY, "plan: out of memory");
        /* [0]: the wq kernel, [1]: the engine's native path */
        probe_result_t r0 = rb, r1 = rb;
        if (st == AGMM_OK) st = agmm_path_probe(bw, &kb, cols, 0, &r0, ev, eb);
        if (st == AGMM_OK)
            st = agmm_path_probe(native, key, cols, 0, &r1, ev, eb);
        agmm_free(ev);
        rb.call_us[0] = r0.call_us[0] * (double)kb.ncols / (double)cols;
        rb.call_us[1] = r1.call_us[0] * (double)kb.ncols / (double)cols;
        if (st == AGMM_OK) agmm_path_cache_add(&kb, &rb);
        if (ms) *ms += (agmm_now() - t0) * 1e3;
    }
    call_us[0] = rb.call_us[0];
    call_us[1] = rb.call_us[1];
    return st;
}

agmm_status_t agmm_path_bf16w_choose(agmm_plan_t *p, const probe_key_t *key,
                                     int ok, double calls)
{
    static const agmm_gemm_request_t bw_req = {
        AGMM_GEMM_ENGINE_WQ, AGMM_DTYPE_BF16, AGMM_GEMM_W_PLAIN};
    const agmm_gemm_engine_t *bw = agmm_gemm_engine_find(&bw_req);
    double mine[2] = {INFINITY, INFINITY};
    double *all = agmm_alloc(sizeof mine * (size_t)p->nranks);
    agmm_status_t st = AGMM_OK;
    if (ok && agmm_path_bf16w_applies(key)) {
        double us[2];
        st = agmm_path_bf16w_measure(p->engine, key, us, &p->choice.ms);
        if (st == AGMM_OK) {
            mine[0] = calls * us[0];
            mine[1] = calls * us[1];
        }
    }
    agmm_status_t st2 =
        all ? agmm_world_allgather(p->world, mine, all, sizeof mine)
            : agmm_error(AGMM_ERR_NO_MEMORY, "plan: out of memory");
    if (st == AGMM_OK) st = st2;
    if (st == AGMM_OK && ok) {
        double worst[2] = {0, 0};
        for (int r = 0; r < p->nranks; r++)
            for (int i = 0; i < 2; i++)
                worst[i] = AGMM_MAX(worst[i], all[2 * r + i]);
        if (worst[0] < worst[1]) {
            p->engine = bw;
            p->path = AGMM_GEMM_PATH_NATIVE;
        }
    }
    agmm_free(all);
    return st;
}
