/* --json's shared header and its failure object (report.c). */
#ifndef AGMM_TOOL_REPORT_H
#define AGMM_TOOL_REPORT_H

#include "cli/cli.h"

typedef struct agmm_tool_report {
    int failed_rank; /* the rank that failed first, -1: none known */
    int claimed;     /* a failure was recorded (the first one wins) */
    int printed;     /* rank 0 printed the complete object */
    char error[240]; /* one line */
} agmm_tool_report_t;

/* Before forking ranks: put the report in memory the ranks share. */
void agmm_tool_report_share(void);
agmm_tool_report_t *agmm_tool_report(void);
/* A rank failed: why (NULL: agmm_last_error()). A message blaming another
 * rank ("rank 1 was killed by signal 9") names that one. First call wins. */
void agmm_tool_report_failure(int rank, const char *why);
/* The launcher was interrupted by `sig` (no rank to blame). */
void agmm_tool_report_interrupted(int sig);

/* A JSON string with quotes and escapes. */
void agmm_tool_json_string(const char *s);
/* The members run and bench share, no leading comma: ranks, transport,
 * link, m, k, n, m_local, gemm_engine (as asked: "auto" too), dtype,
 * weights, tiles, cores, warmup, blas; int8: a_scale, w_scale. */
void agmm_tool_json_header(const agmm_cli_t *cli, const char *transport);
/* With --json and nothing printed yet: the one failure object. */
void agmm_tool_json_failure(const agmm_cli_t *cli, const char *transport);

#endif
