/* `agmm model` (model.c): what it predicted, and from which rates, for
 * its text and --json output (model_print.c). */
#ifndef AGMM_TOOL_MODEL_REPORT_H
#define AGMM_TOOL_MODEL_REPORT_H

#include <stdio.h>

#include "agmm_model.h"
#include "cli/cli.h"
#include "model/measure.h"

/* Where one of the machine's numbers came from. */
typedef enum {
    MODEL_SRC_DEFAULT,  /* agmm_model_machine_init's */
    MODEL_SRC_GIVEN,    /* the command line */
    MODEL_SRC_MEASURED, /* agmm_model_measure on this host */
    MODEL_SRC_NONE      /* not used (convert: the path converts nothing) */
} model_src_t;

/* The numbers the sources are kept for, in this order. */
enum {
    MODEL_CALL,
    MODEL_COPY,
    MODEL_REDUCE,
    MODEL_CONVERT,
    MODEL_MSG,
    MODEL_ROUND,
    MODEL_PEER,
    MODEL_TILE,
    MODEL_DRAM,
    MODEL_NSRC
};

typedef struct model_report {
    const agmm_cli_t *cli;
    agmm_model_machine_t m;
    agmm_plan_desc_t desc; /* engine and path resolved (never AUTO) */
    agmm_model_result_t res;
    int measured; /* the GEMM rates were measured on this host */
    agmm_model_measure_info_t info; /* with `measured` */
    /* path: how it was resolved ("--gemm-path", "measured", "only one",
     * "native here") */
    const char *path_by;
    /* engine: why not desc's AUTO one (a quantized weight, the bf16-weight
     * kernel measured faster), or NULL */
    const char *engine_by;
    model_src_t src[MODEL_NSRC];
} model_report_t;

/* "default", "given", "measured", "none". */
const char *model_src_name(model_src_t s);
void model_print_text(const model_report_t *r, FILE *out);
void model_print_json(const model_report_t *r, FILE *out);

#endif
