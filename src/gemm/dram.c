/* The DRAM read-rate probe (dram.h). */
#include "gemm/dram.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define DRAM_X86 1
#endif

#define REPEATS   3
#define MIN_BYTES ((size_t)256 << 20)

/* "32768K", "1M", "512" (bytes): sysfs cache sizes. */
static size_t parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s) return 0;
    if (*end == 'K' || *end == 'k') v <<= 10;
    if (*end == 'M' || *end == 'm') v <<= 20;
    if (*end == 'G' || *end == 'g') v <<= 30;
    return (size_t)v;
}

size_t agmm_dram_llc_bytes(void)
{
    size_t best = 0;
    for (int i = 0; i < 16; i++) {
        char path[96], line[64];
        snprintf(path, sizeof path,
                 "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        if (fgets(line, sizeof line, f)) {
            size_t b = parse_size(line);
            if (b > best) best = b;
        }
        fclose(f);
    }
    return best;
}

size_t agmm_dram_probe_bytes(void)
{
    size_t b = 4 * agmm_dram_llc_bytes();
    return b > MIN_BYTES ? b : MIN_BYTES;
}

size_t agmm_dram_cache_bytes(int *assumed)
{
    size_t llc = agmm_dram_llc_bytes();
    if (assumed) *assumed = llc == 0;
    return llc ? llc : agmm_dram_probe_bytes() / 4;
}

/* ------------------------------------------------------------- loops */

/* Each returns a sum of the buffer's words (kept by a volatile): 8
 * independent sums; n is a multiple of 4096 bytes. */
static uint64_t read_scalar(const void *buf, size_t n)
{
    const uint64_t *p = buf;
    uint64_t s[8] = {0};
    for (size_t i = 0; i < n / 8; i += 8)
        for (int j = 0; j < 8; j++)
            s[j] += p[i + (size_t)j];
    return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

#ifdef DRAM_X86
__attribute__((target("avx2"))) static uint64_t read_ymm(const void *buf,
                                                         size_t n)
{
    const __m256i *p = buf;
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0, s4 = s0,
            s5 = s0, s6 = s0, s7 = s0;
    for (size_t i = 0; i < n / 32; i += 8) {
        s0 = _mm256_add_epi64(s0, _mm256_load_si256(p + i));
        s1 = _mm256_add_epi64(s1, _mm256_load_si256(p + i + 1));
        s2 = _mm256_add_epi64(s2, _mm256_load_si256(p + i + 2));
        s3 = _mm256_add_epi64(s3, _mm256_load_si256(p + i + 3));
        s4 = _mm256_add_epi64(s4, _mm256_load_si256(p + i + 4));
        s5 = _mm256_add_epi64(s5, _mm256_load_si256(p + i + 5));
        s6 = _mm256_add_epi64(s6, _mm256_load_si256(p + i + 6));
        s7 = _mm256_add_epi64(s7, _mm256_load_si256(p + i + 7));
    }
    s0 = _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3));
    s4 = _mm256_add_epi64(_mm256_add_epi64(s4, s5), _mm256_add_epi64(s6, s7));
    s0 = _mm256_add_epi64(s0, s4);
    uint64_t lanes[4];
    _mm256_storeu_si256((__m256i *)lanes, s0);
    return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

__attribute__((target("avx512f"))) static uint64_t read_zmm(const void *buf,
                                                            size_t n)
{
    const __m512i *p = buf;
    __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0, s4 = s0,
            s5 = s0, s6 = s0, s7 = s0;
    for (size_t i = 0; i < n / 64; i += 8) {
        s0 = _mm512_add_epi64(s0, _mm512_load_si512(p + i));
        s1 = _mm512_add_epi64(s1, _mm512_load_si512(p + i + 1));
        s2 = _mm512_add_epi64(s2, _mm512_load_si512(p + i + 2));
        s3 = _mm512_add_epi64(s3, _mm512_load_si512(p + i + 3));
        s4 = _mm512_add_epi64(s4, _mm512_load_si512(p + i + 4));
        s5 = _mm512_add_epi64(s5, _mm512_load_si512(p + i + 5));
        s6 = _mm512_add_epi64(s6, _mm512_load_si512(p + i + 6));
        s7 = _mm512_add_epi64(s7, _mm512_load_si512(p + i + 7));
    }
    s0 = _mm512_add_epi64(_mm512_add_epi64(s0, s1), _mm512_add_epi64(s2, s3));
    s4 = _mm512_add_epi64(_mm512_add_epi64(s4, s5), _mm512_add_epi64(s6, s7));
    return (uint64_t)_mm512_reduce_add_epi64(_mm512_add_epi64(s0, s4));
}
#endif

typedef uint64_t (*read_fn)(const void *buf, size_t n);

static read_fn pick(const char **name)
{
#ifdef DRAM_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        *name = "zmm";
        return read_zmm;
    }
    if (__builtin_cpu_supports("avx2")) {
        *name = "ymm";
        return read_ymm;
    }
#endif
    *name = "scalar";
    return read_scalar;
}

const char *agmm_dram_probe_isa(void)
{
    const char *name;
    pick(&name);
    return name;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static volatile uint64_t dram_sink;

double agmm_dram_read_measure(size_t bytes)
{
    bytes &= ~(size_t)4095;
    if (bytes < 4096) bytes = 4096;
    /* agmm's allocator, as the weights it stands for: past AGMM_HUGE_MIN
     * on huge pages (MADV_HUGEPAGE), so the loop does not time 4 KiB
     * pages' TLB misses that a weight's stream does not pay (on 4 KiB
     * pages it read 19-25 GB/s where the bf16-weight kernel streamed 30) */
    void *buf = agmm_alloc(bytes);
    if (!buf) return 0;
    /* Distinct pages (not the shared zero page), touched untimed. */
    memset(buf, 1, bytes);
    const char *name;
    read_fn run = pick(&name);
    dram_sink = run(buf, bytes);
    double best = INFINITY;
    for (int r = 0; r < REPEATS; r++) {
        double t0 = now_s();
        uint64_t s = run(buf, bytes);
        double t = now_s() - t0;
        dram_sink = s;
        if (t < best) best = t;
    }
    agmm_free(buf);
    return best > 0 ? (double)bytes / best * 1e-9 : 0;
}

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static double cached;

double agmm_dram_read_gbps(void)
{
    pthread_mutex_lock(&cache_lock);
    if (!(cached > 0)) cached = agmm_dram_read_measure(agmm_dram_probe_bytes());
    double g = cached;
    pthread_mutex_unlock(&cache_lock);
    return g;
}
