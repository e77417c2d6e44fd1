/* agmm_ag_peer's statistics (ag_peer_stats.h). */
#include "ag_peer_stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

stats_t summarize(double *us, int n)
{
    stats_t s = {0, 0, 0, 0, 0, 0};
    qsort(us, (size_t)n, sizeof *us, cmp_double);
    s.min = us[0];
    s.max = us[n - 1];
    s.median = n % 2 ? us[n / 2] : 0.5 * (us[n / 2 - 1] + us[n / 2]);
    for (int i = 0; i < n; i++)
        s.mean += us[i] / n;
    for (int i = 0; i < n; i++)
        s.stdev += (us[i] - s.mean) * (us[i] - s.mean);
    s.stdev = n > 1 ? sqrt(s.stdev / (n - 1)) : 0;
    s.spread = s.median > 0 ? (s.max - s.min) / s.median : 0;
    return s;
}

void json_stats(const char *key, const stats_t *s)
{
    printf("\"%s\":{\"min_us\":%.3f,\"median_us\":%.3f,\"mean_us\":%.3f,"
           "\"max_us\":%.3f,\"stdev_us\":%.3f,\"spread\":%.4f}",
           key, s->min, s->median, s->mean, s->max, s->stdev, s->spread);
}

void text_stats(const char *what, const stats_t *s)
{
    printf("%-10s %11.3f %11.3f %11.3f %11.3f %11.3f %8.1f%%\n", what,
           s->median / 1e3, s->min / 1e3, s->max / 1e3, s->mean / 1e3,
           s->stdev / 1e3, 100 * s->spread);
}
