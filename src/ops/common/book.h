/* The memory booking of a plan, in the style of oneDNN's scratchpad
 * registry: every buffer a plan has is booked once, by name, with its
 * bytes, alignment and where it lives, and both the estimate
 * (agmm_plan_bytes_per_rank) and the allocation (plan.c) read the same
 * booking, so the two cannot drift apart.
 *
 *   LOCAL   this rank's own memory: one allocation (the arena) carved at
 *           the booked offsets, each item's pointer stored where the
 *           booking says (zeroed, as agmm_alloc is);
 *   WINDOW  a symmetric window, allocated collectively by the transport;
 *   ENGINE  memory the GEMM engine allocates itself (its prepared
 *           weights), booked from the engine's estimate;
 *   HELD    allocated before the booking was made (the plan's layout
 *           arrays, which the booking is computed from).
 *
 * A booking is made by one thread, for one plan or one estimate. */
#ifndef AGMM_OPS_BOOK_H
#define AGMM_OPS_BOOK_H

#include <stdint.h>

#include "transport/transport.h"

typedef enum {
    AGMM_MEM_LOCAL = 0,
    AGMM_MEM_WINDOW = 1,
    AGMM_MEM_ENGINE = 2,
    AGMM_MEM_HELD = 3
} agmm_mem_where_t;

enum { AGMM_BOOK_MAX = 24 };

typedef struct agmm_book_item {
    const char *name;
    agmm_mem_where_t where;
    uint64_t bytes;
    uint64_t align;  /* LOCAL: of its offset in the arena */
    uint64_t offset; /* LOCAL: in the arena */
    void **dst;      /* LOCAL: receives the item's address (may be NULL) */
    agmm_win_t *win; /* WINDOW: the window to allocate (may be NULL) */
} agmm_book_item_t;

typedef struct agmm_book {
    agmm_book_item_t item[AGMM_BOOK_MAX];
    int n;
    int overflow;         /* a count overflowed 64 bits, or too many items */
    uint64_t local_bytes; /* the arena, every LOCAL item at its offset */
} agmm_book_t;

void agmm_book_init(agmm_book_t *b);
/* Book count x size bytes (both >= 0; an overflow or a negative count
 * marks the booking overflowed). */
void agmm_book_local(agmm_book_t *b, const char *name, int64_t count,
                     int64_t size, uint64_t align, void **dst);
void agmm_book_window(agmm_book_t *b, const char *name, int64_t count,
                      int64_t size, agmm_win_t *win);
void agmm_book_engine(agmm_book_t *b, const char *name, uint64_t bytes);
void agmm_book_held(agmm_book_t *b, const char *name, uint64_t bytes);
/* Every item's bytes added up (0 when overflowed). */
uint64_t agmm_book_total(const agmm_book_t *b);
/* The bytes of item `name` (0 if none). */
uint64_t agmm_book_bytes(const agmm_book_t *b, const char *name);
/* Allocate the arena and store every LOCAL item's address; *arena gets the
 * allocation (agmm_free it). AGMM_ERR_NO_MEMORY / TOO_LARGE, logged. */
agmm_status_t agmm_book_alloc_local(const agmm_book_t *b, void **arena);

#endif
