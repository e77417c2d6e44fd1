/*
 * AMX kernels of the peak probe (peak_amx.h).
 *
 * One source tile (16 rows x 64 bytes) is loaded into tmm6 and tmm7 before
 * the loop; each iteration then runs one instruction into each of the
 * AGMM_PEAK_AMX_ACC accumulators tmm0..tmm5 (six independent chains, so
 * the loop is bound by the tile unit's throughput rather than by one
 * instruction's latency), and nothing else but the loop counter.
 *
 * Per instruction (flops counted as a GEMM's 2*M*N*K):
 *   TDPBF16PS  fp32 16x16 += bf16 16x32 . 32x16   16*16*32*2 = 16384 flops
 *   TDPBSSD    int32 16x16 += s8 16x64 . 64x16     16*16*64*2 = 32768 ops
 *   TDPBUSD    the same with u8 x s8                             32768 ops
 * On the Xeon of issue 21 (family 6 model 207) TDPBF16PS measured up to
 * ~2190 GF/s and the int8 ones ~4500 GOP/s.
 *
 * The source is bf16 2^-6 (products 2^-12: the accumulators grow by 2^-7
 * per instruction and stop growing where that is below their rounding, so
 * never overflow) or int8 1 (int32 accumulators grow by 64 and wrap, which
 * costs nothing).
 *
 * The instructions are written as bytes (the mnemonics in the comments),
 * so the file assembles with any x86-64 toolchain, old binutils included,
 * and needs no -mamx-* flag; they run only after agmm_peak_amx_has() has
 * checked CPUID (leaf 7 EDX: bit 22 AMX-BF16, 24 AMX-TILE, 25 AMX-INT8)
 * and Linux has granted the tile data state: without
 * arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) the first tile
 * instruction would raise SIGILL. The grant is for the whole process and
 * is what oneDNN asks for too before its AMX kernels. Register operands
 * are pinned: the tile configuration at (%rax), the tile at (%rsi) with a
 * row stride of %rdx = 64, the iteration count in %rcx.
 */
#include "gemm/peak_amx.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__)
#define PEAK_AMX 1
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA  18

static int amx_bits; /* bit 0: bf16, bit 1: int8 (0 until amx_once) */
static pthread_once_t amx_once_ctl = PTHREAD_ONCE_INIT;

static void amx_once(void)
{
#ifdef PEAK_AMX
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return;
    if (!(d & (1u << 24))) return; /* AMX-TILE */
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0)
        return;
    amx_bits = ((d >> 22) & 1) | (((d >> 25) & 1) << 1);
#endif
}

int agmm_peak_amx_has(int int8)
{
    pthread_once(&amx_once_ctl, amx_once);
    return (amx_bits >> (int8 ? 1 : 0)) & 1;
}

#ifdef PEAK_AMX
/* LDTILECFG's 64-byte operand: palette 1, tiles 0-7 of 16 rows x 64
 * bytes. */
typedef struct tilecfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tilecfg_t;

/* The loop for the instruction whose VEX byte 2 is P (W0, vvvv = tmm7,
 * L0, the prefix) and opcode OP, tmmN += tmm6 . tmm7 (ModRM 0xc6 + 8N). */
#define AMX_LOOP(P, OP)                                                        \
    ".byte 0xc4,0xe2,0x78,0x49,0x00\n\t"      /* ldtilecfg (rax) */            \
    ".byte 0xc4,0xe2,0x7b,0x4b,0x34,0x16\n\t" /* tileloadd (rsi,rdx),tmm6 */   \
    ".byte 0xc4,0xe2,0x7b,0x4b,0x3c,0x16\n\t" /* tileloadd (rsi,rdx),tmm7 */   \
    ".byte 0xc4,0xe2,0x7b,0x49,0xc0\n\t"      /* tilezero tmm0 */              \
    ".byte 0xc4,0xe2,0x7b,0x49,0xc8\n\t"      /* tilezero tmm1 */              \
    ".byte 0xc4,0xe2,0x7b,0x49,0xd0\n\t"      /* tilezero tmm2 */              \
    ".byte 0xc4,0xe2,0x7b,0x49,0xd8\n\t"      /* tilezero tmm3 */              \
    ".byte 0xc4,0xe2,0x7b,0x49,0xe0\n\t"      /* tilezero tmm4 */              \
    ".byte 0xc4,0xe2,0x7b,0x49,0xe8\n\t"      /* tilezero tmm5 */              \
    "1:\n\t"                                                                   \
    ".byte 0xc4,0xe2," P "," OP ",0xc6\n\t" /* tmm0 += tmm6 . tmm7 */          \
    ".byte 0xc4,0xe2," P "," OP ",0xce\n\t" /* tmm1 */                         \
    ".byte 0xc4,0xe2," P "," OP ",0xd6\n\t" /* tmm2 */                         \
    ".byte 0xc4,0xe2," P "," OP ",0xde\n\t" /* tmm3 */                         \
    ".byte 0xc4,0xe2," P "," OP ",0xe6\n\t" /* tmm4 */                         \
    ".byte 0xc4,0xe2," P "," OP ",0xee\n\t" /* tmm5 */                         \
    "dec %%rcx\n\t"                                                            \
    "jnz 1b\n\t"                                                               \
    ".byte 0xc4,0xe2,0x7a,0x4b,0x04,0x16\n\t" /* tilestored tmm0,(rsi,rdx) */  \
    ".byte 0xc4,0xe2,0x78,0x49,0xc0\n\t"      /* tilerelease */

/* The tile (source in, tmm0 out) and the configuration for one call. */
typedef struct amx_buf {
    _Alignas(64) uint8_t tile[1024];
    tilecfg_t cfg;
} amx_buf_t;

static void amx_setup(amx_buf_t *b, int bf16)
{
    memset(b, 0, sizeof *b);
    b->cfg.palette = 1;
    for (int t = 0; t < 8; t++) {
        b->cfg.colsb[t] = 64;
        b->cfg.rows[t] = 16;
    }
    if (bf16) {
        uint16_t v = 0x3c80; /* bf16 2^-6 */
        for (int i = 0; i < 512; i++)
            memcpy(b->tile + 2 * i, &v, 2);
    } else {
        memset(b->tile, 1, sizeof b->tile);
    }
}

/* The first accumulator's element (0, 0) after the loop. */
static float amx_result(const amx_buf_t *b, int bf16)
{
    if (bf16) {
        float f;
        memcpy(&f, b->tile, sizeof f);
        return f;
    }
    int32_t i;
    memcpy(&i, b->tile, sizeof i);
    return (float)i;
}

/* VEX byte 2: 0x40 (vvvv = ~7) | pp (01: 66, 10: F3, 11: F2). */
#define AMX_KERNEL(name, bf16, P, OP)                                          \
    float name(uint64_t iters)                                                 \
    {                                                                          \
        if (!agmm_peak_amx_has(!(bf16)) || iters < 1) return 0;                \
        amx_buf_t b;                                                           \
        amx_setup(&b, bf16);                                                   \
        __asm__ volatile(AMX_LOOP(P, OP)                                       \
                         : "+c"(iters)                                         \
                         : "a"(&b.cfg), "S"(b.tile), "d"((uint64_t)64)         \
                         : "memory", "cc");                                    \
        return amx_result(&b, bf16);                                           \
    }

AMX_KERNEL(agmm_peak_amx_bf16, 1, "0x42", "0x5c") /* F3: TDPBF16PS */
AMX_KERNEL(agmm_peak_amx_ssd, 0, "0x43", "0x5e")  /* F2: TDPBSSD */
AMX_KERNEL(agmm_peak_amx_usd, 0, "0x41", "0x5e")  /* 66: TDPBUSD */
#else
float agmm_peak_amx_bf16(uint64_t iters)
{
    (void)iters;
    return 0;
}
float agmm_peak_amx_ssd(uint64_t iters)
{
    (void)iters;
    return 0;
}
float agmm_peak_amx_usd(uint64_t iters)
{
    (void)iters;
    return 0;
}
#endif
