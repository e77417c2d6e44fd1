/* Status codes: names and one-line descriptions (one table, one place). */
#include "agmm.h"

static const struct {
    const char *name;
    const char *text;
} status_table[AGMM_STATUS_COUNT] = {
    [AGMM_OK] = {"AGMM_OK", "success"},
    [AGMM_ERR_INVALID_ARG] = {"AGMM_ERR_INVALID_ARG", "invalid argument"},
    [AGMM_ERR_NO_MEMORY] = {"AGMM_ERR_NO_MEMORY", "out of memory"},
    [AGMM_ERR_TOO_LARGE] = {"AGMM_ERR_TOO_LARGE",
                            "sizes overflow or exceed available memory"},
    [AGMM_ERR_SYSTEM] = {"AGMM_ERR_SYSTEM", "operating system call failed"},
    [AGMM_ERR_TIMEOUT] = {"AGMM_ERR_TIMEOUT", "wait timed out"},
    [AGMM_ERR_ABORTED] = {"AGMM_ERR_ABORTED", "aborted by another rank"},
    [AGMM_ERR_MISMATCH] = {"AGMM_ERR_MISMATCH", "ranks disagree"},
    [AGMM_ERR_BAD_STATE] = {"AGMM_ERR_BAD_STATE",
                            "object used after destroy or out of order"},
    [AGMM_ERR_UNSUPPORTED] = {"AGMM_ERR_UNSUPPORTED", "not supported"},
    [AGMM_ERR_TRANSPORT] = {"AGMM_ERR_TRANSPORT", "transport error"},
    [AGMM_ERR_CHECK_FAILED] = {"AGMM_ERR_CHECK_FAILED",
                               "result does not match the reference"},
};

const char *agmm_status_str(agmm_status_t status)
{
    if ((unsigned)status >= AGMM_STATUS_COUNT) return "AGMM_ERR_UNKNOWN";
    return status_table[status].name;
}

const char *agmm_status_describe(agmm_status_t status)
{
    if ((unsigned)status >= AGMM_STATUS_COUNT) return "unknown status";
    return status_table[status].text;
}

const char *agmm_version(void)
{
    return AGMM_VERSION_STRING;
}
