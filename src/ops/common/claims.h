/* Conversion claims (claims.c): a plan's global tiles filled once per
 * round by one thread of the rank. */
#ifndef AGMM_OPS_CLAIMS_H
#define AGMM_OPS_CLAIMS_H

#include <stdint.h>

#include "agmm.h"

/* Fill global tiles [g0, g1) of the plan's layout once per
 * round, by one thread of this rank: a worker that needs them claims each
 * tile nobody has claimed for `epoch` yet (CAS on claimed[g]) and calls
 * fill(ctx, g) for it, then publishes converted[g] = epoch (release);
 * tiles another worker claimed are waited for (acquire). A timed-out wait
 * names (src, g - base) as "conversion of tile". */
typedef void (*agmm_tile_fill_fn)(void *ctx, int64_t g);
agmm_status_t agmm_plan_claim_tiles(agmm_plan_t *p, int64_t g0, int64_t g1,
                                    uint64_t epoch, agmm_tile_fill_fn fill,
                                    void *ctx, int src, int64_t base);

#endif
