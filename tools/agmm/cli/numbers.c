/*
 * The syntax of the `agmm` command line's values (options.h): strict
 * numbers (no whitespace, no junk, '+' allowed, no "inf", "nan" or hex)
 * and the ROWS[,ROWS...] lists of --m-local and --k-local. parse.c reads
 * every row's value with them.
 */
#include "options.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Strict decimal int64 in [lo, hi]: no whitespace, no junk, '+' allowed. */
num_result_t opt_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    if (!s || !*s || isspace((unsigned char)s[0])) return NUM_JUNK;
    /* The sign must be followed by a digit (strtoll would skip spaces). */
    const char *d = (s[0] == '+' || s[0] == '-') ? s + 1 : s;
    if (!isdigit((unsigned char)*d)) return NUM_JUNK;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0') return NUM_JUNK;
    if (errno == ERANGE) return NUM_RANGE;
    if (v < lo || v > hi) return NUM_RANGE;
    *out = (int64_t)v;
    return NUM_OK;
}

/* Strict decimal uint64: a leading '-' is a range error. */
num_result_t opt_parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || isspace((unsigned char)s[0])) return NUM_JUNK;
    const char *d = (s[0] == '+' || s[0] == '-') ? s + 1 : s;
    if (!isdigit((unsigned char)*d)) return NUM_JUNK;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || *end != '\0') return NUM_JUNK;
    if (s[0] == '-') return NUM_RANGE;
    if (errno == ERANGE) return NUM_RANGE;
    *out = (uint64_t)v;
    return NUM_OK;
}

/* Strict finite double in (lo_excl, hi]. */
num_result_t opt_parse_double(const char *s, double lo_excl, double hi,
                              double *out)
{
    if (!s || !*s || isspace((unsigned char)s[0])) return NUM_JUNK;
    const char *d = (s[0] == '+' || s[0] == '-') ? s + 1 : s;
    /* Digits or ".5"; rejects "inf", "nan", "0x1p3". */
    if (!(isdigit((unsigned char)d[0]) ||
          (d[0] == '.' && isdigit((unsigned char)d[1]))))
        return NUM_JUNK;
    if (d[0] == '0' && (d[1] == 'x' || d[1] == 'X')) return NUM_JUNK;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0') return NUM_JUNK;
    if (!isfinite(v)) return NUM_RANGE;
    if (errno == ERANGE && (v > 1.0 || v < -1.0)) return NUM_RANGE;
    if (!(v > lo_excl) || v > hi) return NUM_RANGE;
    *out = v;
    return NUM_OK;
}

const char *opt_range_prefix(num_result_t r)
{
    return r == NUM_RANGE ? "out of range; give " : "give ";
}

/* ROWS[,ROWS...]: the list syntax; against --ranks in opt_validate.
 * --m-local and --k-local share it (`name` says which). */
int opt_get_rows(FILE *err, const char *name, const char *arg, int64_t *dst,
                 int *count_out)
{
    const char *p = arg;
    int count = 0;
    if (!*arg) {
        fprintf(err,
                "agmm: --%s: give N or a comma-separated list N,N,... (got "
                "'')\n",
                name);
        return -1;
    }
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0) {
            fprintf(err,
                    "agmm: --%s: empty value in the list; give N or N,N,... "
                    "without empty elements (got '%s')\n",
                    name, arg);
            return -1;
        }
        if (count >= AGMM_CLI_MAX_RANKS) {
            fprintf(err,
                    "agmm: --%s: at most %d values (one per rank) (got "
                    "'%.40s...')\n",
                    name, AGMM_CLI_MAX_RANKS, arg);
            return -1;
        }
        char buf[64];
        int64_t v = 0;
        num_result_t r;
        if (len >= sizeof buf) {
            r = NUM_JUNK;
            /* A very long run of digits is out of range, anything else junk. */
            size_t i = (p[0] == '+') ? 1 : 0;
            while (i < len && isdigit((unsigned char)p[i]))
                i++;
            if (i == len) r = NUM_RANGE;
        } else {
            memcpy(buf, p, len);
            buf[len] = '\0';
            r = opt_parse_i64(buf, 0, INT64_MAX, &v);
        }
        if (r != NUM_OK) {
            fprintf(err,
                    "agmm: --%s: %seach value an integer from 0 to %" PRId64
                    " (got '%.*s' in '%s')\n",
                    name, opt_range_prefix(r), (int64_t)INT64_MAX,
                    (int)(len > 40 ? 40 : len), p, arg);
            return -1;
        }
        dst[count++] = v;
        if (!comma) break;
        p = comma + 1;
    }
    *count_out = count;
    return 0;
}
