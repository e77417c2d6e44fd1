/* The CPU-set type of place.h: counting, printing and parsing CPU lists
 * ("0-3,8,10-11", the syntax of taskset -c, numactl and vLLM). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "place/place.h"

int agmm_cpuset_count(const agmm_cpuset_t *s)
{
    int n = 0;
    for (int i = 0; i < AGMM_CPUSET_MAX / 64; i++)
        n += __builtin_popcountll(s->w[i]);
    return n;
}

int agmm_cpuset_empty(const agmm_cpuset_t *s)
{
    return agmm_cpuset_count(s) == 0;
}

int agmm_cpuset_overlap(const agmm_cpuset_t *a, const agmm_cpuset_t *b)
{
    for (int i = 0; i < AGMM_CPUSET_MAX / 64; i++)
        if (a->w[i] & b->w[i]) return 1;
    return 0;
}

int agmm_cpuset_nth(const agmm_cpuset_t *s, int n)
{
    for (int i = 0; i < AGMM_CPUSET_MAX; i++)
        if (agmm_cpuset_has(s, i) && n-- == 0) return i;
    return -1;
}

void agmm_cpuset_format(const agmm_cpuset_t *s, char *buf, size_t len)
{
    if (len == 0) return;
    buf[0] = '\0';
    size_t at = 0;
    for (int i = 0; i < AGMM_CPUSET_MAX && at < len; i++) {
        if (!agmm_cpuset_has(s, i)) continue;
        int j = i;
        while (j + 1 < AGMM_CPUSET_MAX && agmm_cpuset_has(s, j + 1))
            j++;
        int w = j == i ? snprintf(buf + at, len - at, "%s%d", at ? "," : "", i)
                       : snprintf(buf + at, len - at, "%s%d-%d", at ? "," : "",
                                  i, j);
        if (w < 0) return;
        at += (size_t)w;
        i = j;
    }
}

/* A decimal CPU number at s[*at] (bounded by n); -1 if none. */
static int number(const char *s, size_t n, size_t *at)
{
    size_t i = *at;
    long v = 0;
    if (i >= n || !isdigit((unsigned char)s[i])) return -1;
    while (i < n && isdigit((unsigned char)s[i])) {
        v = v * 10 + (s[i] - '0');
        if (v >= AGMM_CPUSET_MAX) return -2;
        i++;
    }
    *at = i;
    return (int)v;
}

int agmm_cpuset_parse(const char *s, size_t n, agmm_cpuset_t *out, char *why,
                      size_t len)
{
    memset(out, 0, sizeof *out);
    size_t at = 0;
    if (n == 0) {
        snprintf(why, len, "an empty CPU list");
        return -1;
    }
    while (at < n) {
        size_t start = at;
        int a = number(s, n, &at), b = a;
        if (a >= 0 && at < n && s[at] == '-') {
            at++;
            b = number(s, n, &at);
        }
        if (a == -2 || b == -2) {
            snprintf(why, len, "'%.*s': CPU numbers go up to %d",
                     (int)(n - start), s + start, AGMM_CPUSET_MAX - 1);
            return -1;
        }
        if (a < 0 || b < 0 || (at < n && s[at] != ',')) {
            snprintf(why, len, "'%.*s' is not a CPU list (like 0-3,8)", (int)n,
                     s);
            return -1;
        }
        if (b < a) {
            snprintf(why, len, "'%d-%d' is an empty range", a, b);
            return -1;
        }
        for (int i = a; i <= b; i++)
            agmm_cpuset_add(out, i);
        if (at < n) {
            at++; /* the comma */
            if (at == n) {
                snprintf(why, len, "'%.*s' ends with a comma", (int)n, s);
                return -1;
            }
        }
    }
    return 0;
}
