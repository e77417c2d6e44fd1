/* The link emulator of the shared-memory transport: paces puts and signals
 * on each outgoing link (this rank -> one peer) like a wire of a given speed
 * and latency, for studying overlap on one host.
 *
 * Model, per link: a message of b bytes posted at time t starts on the wire
 * at s = max(t, the end of the previous message on that link), leaves it at
 * s + 8b / rate and arrives latency later. Posting never blocks: the message
 * is queued, and the rank's delivery thread copies the data into the peer's
 * memory and raises its signal (release) once the arrival time has passed,
 * so nothing is visible to the peer before its modelled arrival. A link's
 * messages arrive in the order they were posted.
 *
 * Threads: any thread of the rank may post (the queues are under one
 * mutex); one delivery thread per rank delivers; drain() waits until every
 * message the calling thread posted is delivered. The source buffer of a put
 * must stay unchanged until drain() (the transport's quiet) returns. */
#ifndef AGMM_TRANSPORT_LINK_H
#define AGMM_TRANSPORT_LINK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"

typedef struct agmm_link agmm_link_t;

/* `nlinks` links (one per peer rank), each `gbps` Gbit/s (> 0) with
 * `latency_us` (>= 0). Starts the delivery thread. */
agmm_status_t agmm_link_create(int nlinks, double gbps, double latency_us,
                               agmm_link_t **out);

/* Queue on `link`: copy `bytes` from `src` to `dst` (may be 0 bytes), then
 * store `value` into *sig with release order, at the modelled arrival. */
agmm_status_t agmm_link_post(agmm_link_t *l, int link, void *dst,
                             const void *src, size_t bytes,
                             _Atomic uint64_t *sig, uint64_t value);

/* Wait until every message the calling thread posted is delivered, the
 * world is aborted, or the deadline (agmm_now() seconds) passes (then the
 * world is aborted too). Other threads' messages are not waited for. */
agmm_status_t agmm_link_drain(agmm_link_t *l, agmm_world_t *w, double deadline);

/* Stop the delivery thread (undelivered messages are dropped) and free. */
void agmm_link_destroy(agmm_link_t *l);

#endif
