/* The gemm-ar baseline: no overlap. gemm-rs's baseline (GEMM of the whole
 * partial, bulk puts of every peer's rows, the fixed-order reduction of
 * this rank's rows into its rows of C: ops/gemm_rs/baseline.c), then the
 * all-gather of the reduced rows: one bulk put of this rank's rows to
 * every peer (after its ack of the previous round), quiet, and the copy
 * of every owner's rows out of the reduced region into C once its cell
 * says they are there. The reduction is gemm-rs's in both schedules, so
 * fused and baseline give the same bits.
 *
 * On MPI the all-gather is these puts as well, not MPI_Allgatherv: the
 * same receive machinery (posted receives, declared in op.c) and acks as
 * the fused schedule.
 *
 * The monolithic benchmark part (phases without COMM) is the GEMM alone.
 * Threads: all on the round's caller after gemm-rs's workers joined; a
 * failure aborts the world in the round driver (run.c). */
#include "common/log.h"
#include "ops/common/round.h"
#include "ops/gemm_ar/ar.h"
#include "ops/gemm_rs/tiles.h"

agmm_status_t agmm_ar_run_baseline(agmm_round_t *round)
{
    agmm_ar_round_t ar;
    agmm_ar_round(round, &ar);
    AGMM_CHECK(agmm_rs_run_baseline(&ar.own));
    if (!(round->phases & AGMM_PHASE_COMM)) return AGMM_OK; /* monolithic */
    AGMM_CHECK(agmm_ar_put_rows(&ar));
    return agmm_ar_copy_rows(&ar);
}
