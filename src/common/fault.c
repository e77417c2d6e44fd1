/* Fault injection (see fault.h). One process-wide fault, parsed once from
 * AGMM_FAULT by a constructor, before main() and so before any fork: every
 * rank of the launcher inherits it, and ranks started by an MPI launcher
 * parse it themselves. */
#include "common/fault.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/param.h"

enum { FAULT_HANG, FAULT_EXIT, FAULT_KILL, FAULT_ERROR };

int agmm_fault_armed;
static int fault_rank;
static long long fault_after;
static int fault_mode;
/* Puts this process has reached since the fault was armed (all threads). */
static _Atomic long long fault_puts;

static const char *const mode_names[] = {"hang", "exit", "kill", "error"};

/* "rank=R,after_puts=N,mode=M": 0 when every key is given once and valid. */
static int parse(const char *spec)
{
    char buf[128];
    if (strlen(spec) >= sizeof buf) return -1;
    strcpy(buf, spec);
    int have = 0;
    char *save = NULL;
    for (char *kv = strtok_r(buf, ",", &save); kv;
         kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '='), *end;
        if (!eq || eq[1] == '\0') return -1;
        *eq = '\0';
        const char *v = eq + 1;
        if (!strcmp(kv, "rank") && !(have & 1)) {
            long r = strtol(v, &end, 10);
            if (*end || r < 0 || r > 1 << 20) return -1;
            fault_rank = (int)r;
            have |= 1;
        } else if (!strcmp(kv, "after_puts") && !(have & 2)) {
            fault_after = strtoll(v, &end, 10);
            if (*end || fault_after < 0) return -1;
            have |= 2;
        } else if (!strcmp(kv, "mode") && !(have & 4)) {
            int m = 0;
            while (m < 4 && strcmp(v, mode_names[m]))
                m++;
            if (m == 4) return -1;
            fault_mode = m;
            have |= 4;
        } else {
            return -1;
        }
    }
    return have == 7 ? 0 : -1;
}

__attribute__((constructor)) static void fault_init(void)
{
    const char *spec = agmm_param_str(AGMM_PARAM_FAULT);
    if (!spec || !*spec) return;
    if (parse(spec) != 0) {
        fprintf(stderr,
                "agmm: AGMM_FAULT='%s' is not valid (give rank=R,after_puts=N,"
                "mode=hang|exit|kill|error); no fault injected\n",
                spec);
        return;
    }
    agmm_fault_armed = 1;
}

agmm_status_t agmm_fault_before_put_slow(int rank)
{
    if (rank != fault_rank) return AGMM_OK;
    long long n =
        atomic_fetch_add_explicit(&fault_puts, 1, memory_order_relaxed);
    if (n < fault_after) return AGMM_OK;
    /* Another thread of the rank (a comm worker and a GEMM worker both
     * put in gemm-ar) reached the fault point first: it says so and ends
     * the rank; this one must not end it before that line is written
     * (its _exit lost the message once under ASan). */
    if (n > fault_after && fault_mode != FAULT_ERROR)
        for (;;)
            pause();
    if (n == fault_after && fault_mode != FAULT_ERROR)
        agmm_log_line("agmm: rank %d: AGMM_FAULT: %s before put %lld\n", rank,
                      mode_names[fault_mode], n + 1);
    switch (fault_mode) {
    case FAULT_HANG: /* stop publishing anything, for good */
        for (;;)
            pause();
    case FAULT_EXIT:
        _exit(3);
    case FAULT_KILL:
        raise(SIGKILL);
        for (;;)
            pause();
    default:
        return agmm_error(AGMM_ERR_SYSTEM,
                          "AGMM_FAULT: injected error before put %lld", n + 1);
    }
}
