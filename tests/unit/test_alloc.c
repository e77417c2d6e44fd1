/* agmm_alloc (common/util.h): zeroed, cache-line aligned memory; a block
 * of AGMM_HUGE_MIN bytes or more aligned to AGMM_HUGE_ALIGN and advised
 * MADV_HUGEPAGE before its first touch, unless AGMM_HUGEPAGES=0.
 *
 *   test_alloc        the advice is on (the default)
 *   test_alloc off    run with AGMM_HUGEPAGES=0: no block is advised
 *
 * Whether a block was advised is read back from /proc/self/smaps: with
 * the system's THP mode "madvise", the mapping that holds it is
 * THPeligible only when advised. Under "always" or "never" every mapping
 * is eligible, or none, whatever the advice: then only the alignment and
 * the zeroing are checked (the mode is printed). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/util.h"

/* The system's THP mode: "always", "madvise", "never" or "" (unknown). */
static void thp_mode(char *out, size_t cap)
{
    out[0] = 0;
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    char line[128];
    if (!f) return;
    if (fgets(line, sizeof line, f)) {
        char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
        if (a && b && (size_t)(b - a) < cap) {
            memcpy(out, a + 1, (size_t)(b - a - 1));
            out[b - a - 1] = 0;
        }
    }
    fclose(f);
}

/* THPeligible of the mapping holding p: 1, 0, or -1 when not found. */
static int thp_eligible(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int inside = 0, got = -1;
    uintptr_t a = (uintptr_t)p;
    if (!f) return -1;
    while (got < 0 && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        /* a mapping's first line: "lo-hi perms offset dev inode path" */
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
            inside = a >= lo && a < hi;
            continue;
        }
        int v;
        if (inside && sscanf(line, "THPeligible: %d", &v) == 1) got = v;
    }
    fclose(f);
    return got;
}

static int all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i += 4093)
        if (p[i]) return 0;
    return p[n - 1] == 0;
}

int main(int argc, char **argv)
{
    int off = argc > 1 && !strcmp(argv[1], "off");
    char mode[32];
    thp_mode(mode, sizeof mode);
    printf("THP mode: %s; agmm's advice %s\n", mode[0] ? mode : "unknown",
           off ? "off (AGMM_HUGEPAGES=0)" : "on");
    const char *env = getenv("AGMM_HUGEPAGES");
    CHECK(off == (env && !strcmp(env, "0")),
          "run 'off' with AGMM_HUGEPAGES=0 and the default without it");

    /* Small: cache-line aligned, zeroed, never advised. */
    unsigned char *s = agmm_alloc(1000);
    CHECK(s && (uintptr_t)s % AGMM_CACHE_LINE == 0, "small block %p", s);
    if (s) CHECK(all_zero(s, 1000), "small block not zeroed");
    agmm_free(s);

    /* Sizes whose rounding up would overflow: NULL, not a short block
     * (and before the allocator, which ASan would stop at such a size). */
    CHECK(agmm_alloc(SIZE_MAX) == NULL, "SIZE_MAX bytes");
    if (!off) /* rounded up to 2 MiB only when advised */
        CHECK(agmm_alloc(SIZE_MAX - AGMM_HUGE_ALIGN) == NULL,
              "SIZE_MAX - 2 MiB bytes");

    /* Large, of sizes that are not multiples of 2 MiB. */
    size_t sizes[] = {AGMM_HUGE_MIN, AGMM_HUGE_MIN + 1, 3 * AGMM_HUGE_MIN + 77};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        unsigned char *p = agmm_alloc(sizes[i]);
        CHECK(p != NULL, "%zu bytes", sizes[i]);
        if (!p) continue;
        CHECK((uintptr_t)p % AGMM_CACHE_LINE == 0, "%p", p);
        if (!off)
            CHECK((uintptr_t)p % AGMM_HUGE_ALIGN == 0,
                  "%zu bytes at %p: not on a 2 MiB boundary", sizes[i], p);
        CHECK(all_zero(p, sizes[i]), "%zu bytes not zeroed", sizes[i]);
        memset(p, 0xab, sizes[i]); /* all of it is ours */
        int elig = thp_eligible(p);
        if (!strcmp(mode, "madvise")) {
            CHECK(elig == !off,
                  "%zu bytes: THPeligible %d, expected %d (THP madvise)",
                  sizes[i], elig, !off);
        }
        agmm_free(p);
    }
    CHECK_DONE("alloc");
}
