/* Small shared helpers: clocks, cache-line sizes, checked arithmetic,
 * aligned allocation. */
#ifndef AGMM_COMMON_UTIL_H
#define AGMM_COMMON_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Every counter written by one thread and read by others gets a line of
 * its own; 128 covers the adjacent-line prefetcher on x86. */
#define AGMM_CACHE_LINE 128

#define AGMM_MIN(a, b) ((a) < (b) ? (a) : (b))
#define AGMM_MAX(a, b) ((a) > (b) ? (a) : (b))
/* ceil(a / b) for a >= 0, b >= 1, without overflow for any such pair. */
#define AGMM_DIV_UP(a, b) ((a) / (b) + ((a) % (b) != 0))

/* CLOCK_MONOTONIC in seconds / nanoseconds: one clock for the whole host,
 * comparable across processes. */
double agmm_now(void);
uint64_t agmm_now_ns(void);

/* a * b and a + b on non-negative int64, 0 on overflow (the result is in
 * *out). */
int agmm_mul_ok(int64_t a, int64_t b, int64_t *out);
int agmm_add_ok(int64_t a, int64_t b, int64_t *out);

/* Zeroed memory aligned to a cache line (NULL on failure or overflow).
 * A block of AGMM_HUGE_MIN bytes or more (a plan's arena, a prepared
 * weight) is aligned to AGMM_HUGE_ALIGN and advised MADV_HUGEPAGE before
 * it is zeroed (unless the environment sets AGMM_HUGEPAGES=0): its first
 * touch then faults 2 MiB pages instead of 4 KiB ones: a plan's creation
 * at the seed shape went from 245-298 to 50-52 ms (docs/history/,
 * "Plans in huge pages"). The GEMMs reading it ran no faster. */
#define AGMM_HUGE_MIN   ((size_t)4 << 20)
#define AGMM_HUGE_ALIGN ((size_t)2 << 20)
void *agmm_alloc(size_t bytes);
void agmm_free(void *p);

/* Hint to the CPU that we are spinning. */
static inline void agmm_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#endif
