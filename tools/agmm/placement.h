/* --bind for the tool (placement.c): checked against this machine when
 * the options are validated, given to agmm_launch for the forked ranks,
 * and printed in the header and --json. agmm launch (launch.c) plans with
 * the same functions. */
#ifndef AGMM_TOOL_PLACEMENT_H
#define AGMM_TOOL_PLACEMENT_H

#include <stdio.h>

#include "cli/cli.h"
#include "place/place.h"

/* This machine's topology, loaded once per process (NULL: hwloc failed,
 * said on err). */
const agmm_topo_t *agmm_tool_topo(FILE *err);

/* Validate cli->bind (NULL: auto) for cli->ranks forked ranks of
 * cli->comm_cores + cli->gemm_cores threads, and keep the plan for the
 * header: 0, or 2 with one line "agmm: --bind: ..." on err. Under MPI
 * (world_size > 0) an explicit --bind is refused: the MPI launcher
 * places the ranks. */
int agmm_cli_check_bind(agmm_cli_t *cli, FILE *err, int world_size);

/* The word given (NULL: "auto"), and the one agmm_launch gets
 * (agmm_launch_opts_t.bind): "none" when the plan binds nothing, since the
 * header already says why (the library would say it again). */
const char *agmm_tool_bind_word(const agmm_cli_t *cli);
const char *agmm_tool_bind_launch(const agmm_cli_t *cli);

/* The header's "placement:" lines; the --json "placement" member (with
 * its leading comma). Rank 0 of a forked run prints every rank's share
 * (the plan made before the fork); under MPI, this rank's affinity. */
void agmm_tool_describe_placement(const agmm_cli_t *cli, FILE *out);
void agmm_tool_json_placement(const agmm_cli_t *cli);

#endif
