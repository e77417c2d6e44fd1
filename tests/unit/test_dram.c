/* The DRAM read-rate probe (src/gemm/dram.h): the cache size it reads
 * from sysfs, the buffer it sizes from it, the loop it picks for this CPU,
 * a positive rate, cached per process, and a buffer that fits the cache
 * read faster than the probe's (so the probe is not timing the cache). No
 * bound on absolute speed: the machine may be busy. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "gemm/dram.h"

/* The largest index<i>/size of cpu0, parsed here independently. */
static size_t sysfs_llc(void)
{
    size_t best = 0;
    for (int i = 0; i < 16; i++) {
        char path[96];
        snprintf(path, sizeof path,
                 "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        unsigned long v = 0;
        char unit = 0;
        if (fscanf(f, "%lu%c", &v, &unit) >= 1) {
            size_t b = (size_t)v * (unit == 'K'   ? 1024
                                    : unit == 'M' ? 1 << 20
                                                  : 1);
            if (b > best) best = b;
        }
        fclose(f);
    }
    return best;
}

int main(void)
{
    size_t llc = agmm_dram_llc_bytes();
    CHECK(llc == sysfs_llc(), "llc %zu, sysfs says %zu", llc, sysfs_llc());
    size_t probe = agmm_dram_probe_bytes();
    int assumed = -1;
    size_t cache = agmm_dram_cache_bytes(&assumed);
    CHECK(llc ? cache == llc && assumed == 0
              : cache == probe / 4 && assumed == 1 &&
                    cache >= ((size_t)64 << 20),
          "cache %zu (assumed %d) for an LLC of %zu and a probe of %zu", cache,
          assumed, llc, probe);
    CHECK(probe >= ((size_t)256 << 20) && probe >= 4 * llc,
          "probe buffer %zu for an LLC of %zu", probe, llc);

    const char *isa = agmm_dram_probe_isa(), *want = "scalar";
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        want = "zmm";
    else if (__builtin_cpu_supports("avx2"))
        want = "ymm";
#endif
    CHECK(isa && strcmp(isa, want) == 0, "loop %s, want %s", isa ? isa : "?",
          want);

    /* Any size works (rounded to whole 4 KiB pages, at least one). */
    double tiny = agmm_dram_read_measure(1);
    CHECK(tiny > 0 && isfinite(tiny), "1 byte (one page): %g GB/s", tiny);

    double a = agmm_dram_read_gbps(), b = agmm_dram_read_gbps();
    CHECK(a > 0 && isfinite(a), "DRAM read rate %g GB/s", a);
    CHECK(a == b, "not cached: %g then %g", a, b);

    /* 256 KiB sits in L2 on every x86 core of the last decade. */
    double cached = 0;
    for (int i = 0; i < 3 && !(cached > a); i++)
        cached = agmm_dram_read_measure((size_t)256 << 10);
    CHECK(cached > a, "256 KiB in cache %g GB/s, not above DRAM's %g", cached,
          a);
    printf("dram: %.1f GB/s (%s loop over %zu MiB, LLC %zu MiB); 256 KiB: "
           "%.1f GB/s\n",
           a, isa, probe >> 20, llc >> 20, cached);
    CHECK_DONE("test_dram");
}
