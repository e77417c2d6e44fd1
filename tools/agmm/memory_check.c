/* The memory check of the `agmm` command line (cli.h:
 * agmm_cli_check_memory): what the ranks' plans and inputs need against
 * the host's MemAvailable, refused in one line naming the options that
 * set the sizes. */
#include <stdio.h>

#include "cli.h"

static void fmt_bytes(char *buf, size_t size, long double b)
{
    const long double gib = 1024.0L * 1024.0L * 1024.0L;
    if (b >= 1024.0L * gib)
        snprintf(buf, size, "%.1Lf TiB", b / (1024.0L * gib));
    else if (b >= gib / 10.0L)
        snprintf(buf, size, "%.1Lf GiB", b / gib);
    else
        snprintf(buf, size, "%.1Lf MiB", b / (1024.0L * 1024.0L));
}

int agmm_cli_check_memory(const agmm_cli_t *cli, uint64_t bytes_per_rank,
                          FILE *err)
{
    if (!cli) return 0;
    if (!err) err = stderr;
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    unsigned long long avail_kib = 0;
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "MemAvailable: %llu kB", &avail_kib) == 1) {
            found = 1;
            break;
        }
    }
    fclose(f);
    if (!found) return 0;
    long double avail = (long double)avail_kib * 1024.0L;
    /* The ranks on this host share its memory (all of them on shm). */
    int ranks = cli->ranks_here > 0 ? cli->ranks_here
                : cli->ranks > 0    ? cli->ranks
                                    : 1;
    /* bytes_per_rank == 0 means the library found the plan invalid or its
     * byte count overflowing: treat as too large. */
    long double need = bytes_per_rank == 0
                           ? (long double)UINT64_MAX * ranks
                           : (long double)bytes_per_rank * ranks;
    if (need <= avail) return 0;
    char nb[32], ab[32];
    if (bytes_per_rank == 0)
        snprintf(nb, sizeof nb, "more than 16 EiB");
    else
        fmt_bytes(nb, sizeof nb, need);
    fmt_bytes(ab, sizeof ab, avail);
    fprintf(err,
            "agmm: --m-local/--k/--n%s: the plan%s need%s %s on %d %s but "
            "only %s is available\n",
            cli->weight_sets > 1 ? "/--weight-sets" : "",
            cli->weight_sets > 1 ? "s" : "", cli->weight_sets > 1 ? "" : "s",
            nb, ranks, ranks == 1 ? "rank" : "ranks", ab);
    return 2;
}
