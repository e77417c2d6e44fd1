/* The statistics agmm_ag_peer prints of its timed rounds (ag_peer.c):
 * median and spread, in text and JSON. */
#ifndef AGMM_AG_PEER_STATS_H
#define AGMM_AG_PEER_STATS_H

typedef struct stats {
    /* us; spread: (max - min) / median */
    double min, median, mean, max, stdev, spread;
} stats_t;

/* Sorts us[0..n) (n >= 1) and summarizes it. */
stats_t summarize(double *us, int n);
/* "key":{...} (no separator) */
void json_stats(const char *key, const stats_t *s);
/* One row of the text table, in ms. */
void text_stats(const char *what, const stats_t *s);

#endif
