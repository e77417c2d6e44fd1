/* The base of the oneDNN engine, for its files (through onednn_internal.h)
 * and for the wq engine's prefill matmul (wq/libgemm.c): the process's
 * CPU engine, the OpenMP thread-count guard and the mapping of oneDNN's
 * failures (cpu.c), and what this oneDNN can do on this CPU, tried once
 * per process (probe.c). Includes compat.h, no other header of onednn/. */
#ifndef AGMM_GEMM_ONEDNN_CPU_H
#define AGMM_GEMM_ONEDNN_CPU_H

#include <stddef.h>

#include "agmm.h"
#include "gemm/onednn/compat.h"

/* The process's CPU engine (made once, at one OpenMP thread), or NULL
 * after logging why it could not be made. */
dnnl_engine_t agmm_dn_engine(void);

/* This thread's OpenMP thread count to 1; returns the previous one for
 * agmm_dn_restore_omp(). */
int agmm_dn_one_omp_thread(void);
void agmm_dn_restore_omp(int saved);

/* Logs "gemm: oneDNN <what> failed: <status>" and maps the status. */
agmm_status_t agmm_dn_fail(dnnl_status_t s, const char *what);
#define DN(call, what)                                                         \
    do {                                                                       \
        dnnl_status_t s_ = (call);                                             \
        if (s_ != dnnl_success) return agmm_dn_fail(s_, what);                 \
    } while (0)

/* The scratchpad bytes of a primitive descriptor. */
size_t agmm_dn_pd_scratch(const_dnnl_primitive_desc_t pd);

/* What this oneDNN does on this CPU (probe.c): a non-reference bf16 / f16
 * matmul? */
int agmm_dn_bf16_native(void);
int agmm_dn_f16_native(void);
/* Is a sum post-op C_old + the plain product bit for bit on a dense C, for
 * A/W of dtype dt (FP32, or BF16 where native; else 0)? */
int agmm_dn_sum_exact(agmm_dtype_t dt);
/* INT8 on this oneDNN and CPU: NONE (refused: agmm_dn_int8_why says
 * why; "" otherwise), EXACT (its s8 x s8 and u8 x s8 sums are exact),
 * SPLIT (exact only for weights in -64..63: W multiplied as two halves,
 * s8.c; attr.s8_split, engine.h, asks for the halves where EXACT). */
enum { AGMM_DN_S8_NONE = 0, AGMM_DN_S8_EXACT = 1, AGMM_DN_S8_SPLIT = 2 };
int agmm_dn_int8_mode(void);
const char *agmm_dn_int8_why(void);
/* The engine's answers from the probes (engine.h: version, input_dtype,
 * why_not_native). */
const char *agmm_dn_version(void);
agmm_dtype_t agmm_dn_input_dtype(agmm_dtype_t dt);
const char *agmm_dn_why_not_native(agmm_dtype_t dt);

#endif /* AGMM_GEMM_ONEDNN_CPU_H */
