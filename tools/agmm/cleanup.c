/* `agmm cleanup [--job NAME]`: agmm_cleanup() for this user, one line
 * saying what was removed. */
#include <stdio.h>

#include "agmm.h"
#include "tool.h"

int agmm_tool_cleanup(const agmm_cli_t *cli)
{
    int removed = 0;
    if (agmm_cleanup(cli->job, &removed) != AGMM_OK) {
        fprintf(stderr, "agmm: cleanup: %s\n", agmm_last_error());
        return 1;
    }
    char scope[80];
    if (cli->job)
        snprintf(scope, sizeof scope, "job '%s'", cli->job);
    else
        snprintf(scope, sizeof scope, "every job");
    printf("agmm cleanup: removed %d leftover segment%s of %s\n", removed,
           removed == 1 ? "" : "s", scope);
    return 0;
}
