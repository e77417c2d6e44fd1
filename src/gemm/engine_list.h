/* The GEMM engines as one ordered list (engine_list.c), the way oneDNN
 * lists its matmul implementations (cpu_matmul_list.cpp): each entry is an
 * engine (engine.h) with what it applies to, its capability bits
 * (AGMM_GEMM_CAP_*, like the transport's AGMM_TP_CAP_*) and the plan
 * dtypes it takes; an entry a build lacks is not in the list. Choosing an
 * engine is taking the first entry that applies to a request: its kind
 * (AUTO: any entry with AGMM_GEMM_CAP_AUTO), dtype and weight format.
 * Nothing else names an engine to choose one. Adding an engine: its entry
 * here, in order (docs/design.md, "Adding an engine"). */
#ifndef AGMM_GEMM_ENGINE_LIST_H
#define AGMM_GEMM_ENGINE_LIST_H

#include "agmm.h"
#include "gemm/engine.h"

/* What an entry serves. */
/* AUTO may pick it (the first such entry that applies). */
#define AGMM_GEMM_CAP_AUTO 0x1u
/* A weight in the plan's dtype (weight_dtype SAME). */
#define AGMM_GEMM_CAP_PLAIN_W 0x2u
/* A quantized weight (int4 / int8 in groups, attr.wq_bits). */
#define AGMM_GEMM_CAP_QUANT_W 0x4u

/* The weight format of a request. */
typedef enum agmm_gemm_wformat {
    AGMM_GEMM_W_ANY = 0, /* whichever comes first */
    AGMM_GEMM_W_PLAIN,   /* the plan's dtype */
    AGMM_GEMM_W_QUANT,   /* quantized (AGMM_GEMM_CAP_QUANT_W) */
} agmm_gemm_wformat_t;

/* What a caller asks for. */
typedef struct agmm_gemm_request {
    agmm_gemm_engine_kind_t kind; /* AUTO: the list's first AUTO entry */
    int dtype;                    /* the plan's agmm_dtype_t; -1: any */
    agmm_gemm_wformat_t weight;
} agmm_gemm_request_t;

/* One entry of the list. */
typedef struct agmm_gemm_entry {
    const agmm_gemm_engine_t *engine;
    unsigned caps;   /* AGMM_GEMM_CAP_* */
    unsigned dtypes; /* 1u << agmm_dtype_t of each plan dtype it takes */
    /* The CPU features it needs, asked at selection (NULL: none; the
     * engines of today pick their kernels per CPU themselves). */
    int (*cpu_ok)(void);
} agmm_gemm_entry_t;

/* The first entry's engine that applies to r, or NULL: none (not built
 * in, or nothing serves that dtype / weight format). */
const agmm_gemm_engine_t *agmm_gemm_engine_find(const agmm_gemm_request_t *r);

/* The engine of `kind` (AUTO: oneDNN when built, else OpenBLAS; WQ: the
 * quantized weights' engine), any dtype and weight format: the first
 * entry of that kind. NULL when it is not built in. */
const agmm_gemm_engine_t *agmm_gemm_engine_get(agmm_gemm_engine_kind_t kind);

/* The engine a plan description runs: the request of its gemm_engine,
 * dtype and weight format (a quantized weight: the wq engine; gemm_engine
 * WQ with an unquantized bf16 weight: wq's bf16-weight entry). NULL when
 * none applies (agmm_plan_desc_check refuses such a description). */
const agmm_gemm_engine_t *agmm_gemm_engine_of_desc(const agmm_plan_desc_t *d);

/* The engines of the entries (defined in their files). */
extern const agmm_gemm_engine_t agmm_gemm_engine_openblas;
extern const agmm_gemm_engine_t agmm_gemm_engine_wq;
/* The wq engine for an unquantized bf16 weight (wq/engine_bf16w.c). */
extern const agmm_gemm_engine_t agmm_gemm_engine_wq_bf16;
#ifdef AGMM_HAVE_ONEDNN
extern const agmm_gemm_engine_t agmm_gemm_engine_onednn; /* onednn/cols.c */
#endif

#endif /* AGMM_GEMM_ENGINE_LIST_H */
