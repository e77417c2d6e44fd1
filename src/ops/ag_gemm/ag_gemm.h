/* All-gather + GEMM (AGMM_OP_AG_GEMM): what its files share. Rank r holds
 * A_r ([m_local[r], k]); every rank computes C = gather(A_0..A_{P-1}) @ W
 * for each of its weights. op.c is its entry in the operation table;
 * fused.c and baseline.c its schedules; rows.c the rows the engine reads;
 * call.c the rows of one call and the gathered A handed back. */
#ifndef AGMM_OPS_AG_GEMM_H
#define AGMM_OPS_AG_GEMM_H

#include "ops/common/plan.h"
#include "ops/common/round.h"

/* (fused.c) Rows of a round at or below which a GEMM worker of an engine
 * with cheap calls, its share all arrived, makes one call over them (one
 * weight read for few rows: decode); above, one call per tile. On a Zen 4
 * core oneDNN's long calls run slower than the same rows in tiles (4096 x
 * 4096 x 5504 bf16 in 128-row calls: 0.948 of one call's time; 512-row
 * calls 0.908), and on an AMX core the row count made no difference
 * (645-699 GF/s from 128 to 4096): docs/history/, "Zen 4 again".
 * model/ag.c has the same number. */
enum { AGMM_AG_WHOLE_ROWS = 512 };

/* (rows.c) Tiles [t0, t1) of source rank `src` in the engine's input dtype
 * for round `epoch`: in place (native dtype) or converted into g32 (once
 * per tile per round, claims.c). `a_local` is this rank's shard; with
 * `in_window`, local rows in the native dtype are copied into the window
 * (once per tile per round) so that every source's rows are contiguous
 * there, as in g32. Returns a pointer with leading dimension k, elements
 * of p->gemm_esize bytes. */
agmm_status_t agmm_ag_gemm_rows(agmm_plan_t *p, int src, int64_t t0, int64_t t1,
                                const void *a_local, uint64_t epoch,
                                int in_window, const void **rows);

/* (call.c) set_rows: the call's rows (m_rows, NULL: the plan's most) into
 * m_local, row_off, tiles, M and win_off, by the round's caller before
 * any worker starts. copy_gathered: gather(A) of the round just run into
 * `out` ([M, k] in dtype; INT8: and the rows' scales into out_scale
 * [M] when not NULL), from `a` (the round's A: this rank's rows) and the
 * window, by the caller after its workers joined and before it
 * acknowledges the round. */
void agmm_ag_set_rows(agmm_plan_t *p, const int64_t *m_rows);
void agmm_ag_copy_gathered(agmm_plan_t *p, const void *a, void *out,
                           float *out_scale);
/* The rows cells (call.c). send: raise rows[rank] to
 * agmm_rows_signal(e, m_local[rank]) on the peers i = first, first + stride,
 * ... of the rotated order (i >= 1), each after its ack of round e - 1.
 * check: wait for src's rows cell of round e and compare it with this
 * rank's m_local[src]; a difference aborts the world naming both ranks
 * (AGMM_ERR_MISMATCH) before any row of src is used. */
agmm_status_t agmm_ag_send_rows(agmm_round_t *x, int first, int stride);
agmm_status_t agmm_ag_check_rows(agmm_round_t *x, int src);
/* Posted receives (MPI) only: wait for the tiles peers send empty in a
 * round with fewer rows than the plan's most (see call.c). */
agmm_status_t agmm_ag_wait_absent(agmm_round_t *x);

/* The schedules (fused.c, baseline.c): one round on this rank. */
agmm_status_t agmm_ag_run_fused(agmm_round_t *round);
agmm_status_t agmm_ag_run_baseline(agmm_round_t *round);

#endif
