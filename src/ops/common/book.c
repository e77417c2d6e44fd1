/* The memory booking (book.h). */
#include "ops/common/book.h"

#include <string.h>

#include "common/log.h"
#include "common/util.h"

void agmm_book_init(agmm_book_t *b)
{
    memset(b, 0, sizeof *b);
}

static agmm_book_item_t *add(agmm_book_t *b, const char *name,
                             agmm_mem_where_t where, int64_t count,
                             int64_t size)
{
    int64_t bytes;
    if (b->n == AGMM_BOOK_MAX || !agmm_mul_ok(count, size, &bytes)) {
        b->overflow = 1;
        return NULL;
    }
    agmm_book_item_t *it = &b->item[b->n++];
    memset(it, 0, sizeof *it);
    it->name = name;
    it->where = where;
    it->bytes = (uint64_t)bytes;
    return it;
}

void agmm_book_local(agmm_book_t *b, const char *name, int64_t count,
                     int64_t size, uint64_t align, void **dst)
{
    agmm_book_item_t *it = add(b, name, AGMM_MEM_LOCAL, count, size);
    if (!it) return;
    if (align < 1) align = 1;
    uint64_t off = (b->local_bytes + align - 1) / align * align;
    if (off < b->local_bytes || off + it->bytes < off) {
        b->overflow = 1;
        return;
    }
    it->align = align;
    it->offset = off;
    it->dst = dst;
    b->local_bytes = off + it->bytes;
}

void agmm_book_window(agmm_book_t *b, const char *name, int64_t count,
                      int64_t size, agmm_win_t *win)
{
    agmm_book_item_t *it = add(b, name, AGMM_MEM_WINDOW, count, size);
    if (it) it->win = win;
}

static void add_bytes(agmm_book_t *b, const char *name, agmm_mem_where_t where,
                      uint64_t bytes)
{
    if (bytes > INT64_MAX) {
        b->overflow = 1;
        return;
    }
    add(b, name, where, 1, (int64_t)bytes);
}

void agmm_book_engine(agmm_book_t *b, const char *name, uint64_t bytes)
{
    add_bytes(b, name, AGMM_MEM_ENGINE, bytes);
}

void agmm_book_held(agmm_book_t *b, const char *name, uint64_t bytes)
{
    add_bytes(b, name, AGMM_MEM_HELD, bytes);
}

uint64_t agmm_book_total(const agmm_book_t *b)
{
    if (b->overflow) return 0;
    /* The arena counts its alignment padding: it is allocated too. */
    uint64_t total = b->local_bytes;
    for (int i = 0; i < b->n; i++) {
        if (b->item[i].where == AGMM_MEM_LOCAL) continue;
        if (total + b->item[i].bytes < total) return 0;
        total += b->item[i].bytes;
    }
    return total > INT64_MAX ? 0 : total;
}

uint64_t agmm_book_bytes(const agmm_book_t *b, const char *name)
{
    uint64_t sum = 0;
    for (int i = 0; i < b->n; i++)
        if (!strcmp(b->item[i].name, name)) sum += b->item[i].bytes;
    return sum;
}

agmm_status_t agmm_book_alloc_local(const agmm_book_t *b, void **arena)
{
    *arena = NULL;
    if (b->overflow || b->local_bytes > SIZE_MAX)
        return agmm_error(AGMM_ERR_TOO_LARGE,
                          "plan: byte counts overflow 64 bits");
    unsigned char *base = agmm_alloc((size_t)b->local_bytes);
    if (!base)
        return agmm_error(AGMM_ERR_NO_MEMORY,
                          "plan: out of memory for %llu bytes",
                          (unsigned long long)b->local_bytes);
    for (int i = 0; i < b->n; i++)
        if (b->item[i].where == AGMM_MEM_LOCAL && b->item[i].dst)
            *b->item[i].dst = base + b->item[i].offset;
    *arena = base;
    return AGMM_OK;
}
