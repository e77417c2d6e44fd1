/* The row counts agmm_model_measure times (measure.h): those a plan's
 * rounds call, powers of two between, thinned to AGMM_MODEL_MAX_RATES. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "model/measure.h"

static int add_rows(int64_t *v, int n, int cap, int64_t r)
{
    if (r < 1 || n >= cap) return n;
    for (int i = 0; i < n; i++)
        if (v[i] == r) return n;
    v[n] = r;
    return n + 1;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int is_in(const int64_t *v, int n, int64_t r)
{
    for (int i = 0; i < n; i++)
        if (v[i] == r) return 1;
    return 0;
}

/* measure.h. v: the candidates, req: the calls' own counts (after the
 * cap), both freed here. */
int agmm_model_measure_rows(const agmm_plan_desc_t *d, int64_t row_cap,
                            int64_t *out, int *n_out, int *over_cap)
{
    int P = d->nranks, cap = 2 * P + 72, n = 0;
    int64_t *v = malloc(sizeof *v * (size_t)cap);
    if (!v) return -1;
    int64_t M = 0, tm = d->tile_m;
    for (int r = 0; r < P; r++)
        M += d->m_local[r];
    n = add_rows(v, n, cap, 1);
    n = add_rows(v, n, cap, AGMM_MIN(tm, M));
    n = add_rows(v, n, cap, M);
    for (int r = 0; r < P; r++) {
        n = add_rows(v, n, cap, d->m_local[r]);
        n = add_rows(v, n, cap, d->m_local[r] % tm);
    }
    *over_cap = 0;
    for (int i = 0; i < n; i++)
        if (v[i] > row_cap) {
            v[i] = row_cap;
            (*over_cap)++;
        }
    int nreq = 0; /* dedupe after the cap */
    for (int i = 0; i < n; i++)
        nreq = is_in(v, nreq, v[i]) ? nreq : (v[nreq] = v[i], nreq + 1);
    int64_t *req = malloc(sizeof *req * (size_t)(nreq ? nreq : 1));
    if (!req) {
        free(v);
        return -1;
    }
    memcpy(req, v, sizeof *req * (size_t)nreq);
    n = nreq;
    int64_t top = AGMM_MIN(M, row_cap);
    for (int64_t p = 2; p < top && n < cap; p *= 2)
        n = add_rows(v, n, cap, p);
    qsort(v, (size_t)n, sizeof *v, cmp_i64);
    while (n > AGMM_MODEL_MAX_RATES) { /* drop the most crowded */
        int drop = -1, drop_req = 1;
        double gap = INFINITY;
        for (int i = 1; i + 1 < n; i++) {
            int r = is_in(req, nreq, v[i]);
            double g = log((double)v[i + 1] / (double)v[i - 1]);
            if ((drop_req && !r) || (r == drop_req && g < gap)) {
                drop = i;
                gap = g;
                drop_req = r;
            }
        }
        memmove(v + drop, v + drop + 1, sizeof *v * (size_t)(n - drop - 1));
        n--;
    }
    memcpy(out, v, sizeof *v * (size_t)n);
    *n_out = n;
    free(req);
    free(v);
    return 0;
}
