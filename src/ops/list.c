/* The list of operations: every agmm_operation_t (ops/common/op.h), one
 * line each. Adding an operation is a folder under ops/ with its table
 * entry, and a line here (docs/design.md, "How to add an operation"). */
#include "ops/common/op.h"

extern const agmm_operation_t agmm_op_ag_gemm; /* ops/ag_gemm/op.c */
extern const agmm_operation_t agmm_op_gemm_rs; /* ops/gemm_rs/op.c */
extern const agmm_operation_t agmm_op_gemm_ar; /* ops/gemm_ar/op.c */

static const agmm_operation_t *const operations[] = {
    &agmm_op_ag_gemm,
    &agmm_op_gemm_rs,
    &agmm_op_gemm_ar,
};

const agmm_operation_t *agmm_operation(agmm_op_t kind)
{
    for (size_t i = 0; i < sizeof operations / sizeof operations[0]; i++)
        if (operations[i]->kind == kind) return operations[i];
    return NULL;
}
