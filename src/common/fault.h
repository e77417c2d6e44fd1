/* Fault injection, a test hook (docs/reliability.md).
 *
 *   AGMM_FAULT="rank=R,after_puts=N,mode=hang|exit|kill|error"
 *
 * makes rank R misbehave just before its put number N + 1 (counted over all
 * its threads and rounds, from 0): `hang` stops publishing for good (the
 * thread blocks until the process is killed), `exit` ends the process with
 * status 3, `kill` raises SIGKILL, `error` fails the put with
 * AGMM_ERR_SYSTEM. The puts counted: the fused schedule's tile puts, the
 * baseline's bulk puts (one per peer) or its native all-gather (one per
 * round: MPI_Iallgatherv), and on MPI every control send (the end-of-round
 * acks, mpi_signal) and every tile a relay forwards to a same-host peer
 * (transport/mpi/mpi_relay.c, in the progress thread). The variable is read
 * once, when the library is loaded; unset, the only cost on the put path is one
 * predictable branch. */
#ifndef AGMM_COMMON_FAULT_H
#define AGMM_COMMON_FAULT_H

#include "agmm.h"

/* Non-zero when AGMM_FAULT names a valid fault (for any rank). */
extern int agmm_fault_armed;

/* The slow path: counts the put and fires the fault when it is due. */
agmm_status_t agmm_fault_before_put_slow(int rank);

/* Call before every put; AGMM_OK unless an injected fault fires. */
static inline agmm_status_t agmm_fault_before_put(int rank)
{
    if (__builtin_expect(agmm_fault_armed, 0))
        return agmm_fault_before_put_slow(rank);
    return AGMM_OK;
}

#endif
