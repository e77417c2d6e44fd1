/* The timeline as an SVG drawn by agmm itself: one lane per worker thread,
 * grouped by rank; a bar per put, wait, conversion and GEMM call, coloured
 * by kind; round starts as dashed lines; a time axis and a legend. Hover a
 * bar for its details (<title>). Bars closer than a quarter pixel are
 * merged so hundreds of tiles stay a small file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "trace/trace.h"

#define W         1200.0 /* picture width */
#define LEFT      120.0  /* lane labels */
#define RIGHT     24.0
#define TOP       64.0 /* title and legend */
#define RANK_HEAD 18.0 /* "rank r" row */
#define LANE_H    20.0
#define RANK_GAP  10.0
#define AXIS_H    40.0
#define MERGE_PX  0.25

static const struct {
    int kind;
    const char *label, *fill;
} k_style[] = {
    {AGMM_TEV_PUT, "put (copy to a peer + signal)", "#1f77b4"},
    {AGMM_TEV_WAIT, "wait (signal not yet raised)", "#d62728"},
    {AGMM_TEV_CONVERT, "convert to fp32", "#ffb000"},
    {AGMM_TEV_GEMM, "GEMM", "#2ca02c"},
};
#define NSTYLE ((int)(sizeof k_style / sizeof k_style[0]))

static const char *fill_of(int kind)
{
    for (int i = 0; i < NSTYLE; i++)
        if (k_style[i].kind == kind) return k_style[i].fill;
    return NULL;
}

typedef struct view {
    double x0, x1;  /* plot area */
    uint64_t t_min; /* ns at x0 */
    double ns_px;   /* ns per pixel */
} view_t;

static double xof(const view_t *v, uint64_t ns)
{
    return v->x0 + (double)(ns - v->t_min) / v->ns_px;
}

/* A round step (1, 2 or 5 x 10^k ns) giving about 10 ticks. */
static double tick_step(double span_ns)
{
    double raw = span_ns / 10.0, p = pow(10.0, floor(log10(raw > 1 ? raw : 1)));
    double m = raw / p;
    return p * (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10);
}

static void fmt_time(char *buf, size_t n, double ns, double step)
{
    if (step >= 1e6)
        snprintf(buf, n, "%g ms", ns * 1e-6);
    else
        snprintf(buf, n, "%g us", ns * 1e-3);
}

static void describe(FILE *f, const agmm_tev_t *e)
{
    double us = (double)(e->t1 - e->t0) * 1e-3;
    switch (e->kind) {
    case AGMM_TEV_PUT:
        if (e->tile0 >= 0) /* -1: a whole shard (the baseline) */
            fprintf(f, "put tiles %d-%d", e->tile0, e->tile1 - 1);
        else
            fprintf(f, "put the whole shard");
        fprintf(f, " to rank %d, %lld bytes, %.1f us", e->peer,
                (long long)e->value, us);
        break;
    case AGMM_TEV_WAIT:
        fprintf(f, "wait for %s", agmm_tsig_name(e->sig));
        if (e->tile0 >= 0) fprintf(f, " %d", e->tile0); /* -1: no index */
        fprintf(f, " from rank %d, %.1f us", e->peer, us);
        break;
    case AGMM_TEV_CONVERT:
    case AGMM_TEV_GEMM:
        /* peer >= 0: tiles [tile0, tile1) of that rank's shard; -1: global
         * tile indices over the gathered matrix (the baseline's GEMM). */
        fprintf(f, "%s %lld rows (",
                e->kind == AGMM_TEV_GEMM ? "GEMM" : "convert",
                (long long)e->value);
        if (e->peer >= 0)
            fprintf(f, "tiles %d-%d of rank %d", e->tile0, e->tile1 - 1,
                    e->peer);
        else
            fprintf(f, "global tiles %d-%d, all ranks", e->tile0, e->tile1 - 1);
        fprintf(f, ")");
        if (e->kind == AGMM_TEV_GEMM)
            fprintf(f, " x column blocks %d-%d", e->j0, e->j1 - 1);
        fprintf(f, ", %.1f us", us);
        break;
    default:
        fprintf(f, "%.1f us", us);
        break;
    }
    fprintf(f, " (round %u %s)", e->round, agmm_trace_sched_name(e->sched));
}

/* The bars of one lane (events of one rank and lane, in time order). */
static void lane_bars(FILE *f, const view_t *v, const agmm_tev_t *const *ev,
                      size_t n, double y)
{
    size_t i = 0;
    while (i < n) {
        const char *fill = fill_of(ev[i]->kind);
        if (!fill) {
            i++;
            continue;
        }
        double a = xof(v, ev[i]->t0), b = xof(v, ev[i]->t1);
        size_t j = i + 1;
        while (j < n && ev[j]->kind == ev[i]->kind &&
               xof(v, ev[j]->t0) - b < MERGE_PX) {
            double bj = xof(v, ev[j]->t1);
            if (bj > b) b = bj;
            j++;
        }
        if (b - a < 0.5) b = a + 0.5; /* visible, however short */
        fprintf(f,
                "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
                "fill=\"%s\"><title>",
                a, y + 2, b - a, LANE_H - 4, fill);
        describe(f, ev[i]);
        if (j - i > 1) fprintf(f, " and %zu more", j - i - 1);
        fprintf(f, "</title></rect>\n");
        i = j;
    }
}

static int cmp_ptr_t0(const void *x, const void *y)
{
    const agmm_tev_t *a = *(const agmm_tev_t *const *)x;
    const agmm_tev_t *b = *(const agmm_tev_t *const *)y;
    return (a->t0 > b->t0) - (a->t0 < b->t0);
}

static void legend(FILE *f, const agmm_trace_t *t)
{
    const agmm_trace_meta_t *m = &t->meta;
    fprintf(f,
            "<text x=\"12\" y=\"22\" font-size=\"15\" font-weight=\"bold\">"
            "agmm timeline: %d ranks, %d GEMM + %d comm workers each, tiles "
            "%lldx%lld, K=%lld N=%lld %s, %d round%s</text>\n",
            m->nranks, m->gemm_workers, m->comm_workers, (long long)m->tile_m,
            (long long)m->tile_n, (long long)m->k, (long long)m->n, m->dtype,
            t->rounds, t->rounds == 1 ? "" : "s");
    double x = 12;
    for (int i = 0; i < NSTYLE; i++) {
        fprintf(f,
                "<rect x=\"%.0f\" y=\"34\" width=\"14\" height=\"14\" "
                "fill=\"%s\"/><text x=\"%.0f\" y=\"46\">%s</text>\n",
                x, k_style[i].fill, x + 19, k_style[i].label);
        x += 30 + 6.6 * (double)strlen(k_style[i].label);
    }
    fprintf(f,
            "<line x1=\"%.0f\" y1=\"34\" x2=\"%.0f\" y2=\"48\" stroke=\"#555\" "
            "stroke-dasharray=\"3,2\"/><text x=\"%.0f\" y=\"46\">round "
            "start</text>\n",
            x + 6, x + 6, x + 14);
    if (t->dropped)
        fprintf(f,
                "<text x=\"%.0f\" y=\"22\" text-anchor=\"end\" "
                "fill=\"#d62728\">%llu events dropped (buffers full)</text>\n",
                W - RIGHT, (unsigned long long)t->dropped);
}

static void axis(FILE *f, const view_t *v, double y, double top, uint64_t span)
{
    double step = tick_step((double)span);
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#000\"/>\n",
            v->x0, y, v->x1, y);
    for (double s = 0; s <= (double)span + 1; s += step) {
        double x = v->x0 + s / v->ns_px;
        char label[32];
        fmt_time(label, sizeof label, s, step);
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#ddd\"/><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                "y2=\"%.1f\" stroke=\"#000\"/><text x=\"%.1f\" y=\"%.1f\" "
                "text-anchor=\"middle\">%s</text>\n",
                x, top, x, y, x, y, x, y + 5, x, y + 18, label);
    }
    fprintf(f,
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
            "fill=\"#555\">time since the first event (CLOCK_MONOTONIC, one "
            "clock for all ranks)</text>\n",
            (v->x0 + v->x1) / 2, y + 34);
}

agmm_status_t agmm_trace_write_svg(const agmm_trace_t *t, const char *path)
{
    const agmm_trace_meta_t *m = &t->meta;
    int lanes = m->gemm_workers + m->comm_workers;
    uint64_t t_max = t->origin;
    for (size_t i = 0; i < t->nall; i++)
        if (t->all[i].t1 > t_max) t_max = t->all[i].t1;
    uint64_t span = t_max > t->origin ? t_max - t->origin : 1;
    view_t v = {LEFT, W - RIGHT, t->origin, 0};
    v.ns_px = (double)span / (v.x1 - v.x0);
    double rank_h = RANK_HEAD + LANE_H * lanes + RANK_GAP;
    double plot_bottom = TOP + rank_h * m->nranks;
    double height = plot_bottom + AXIS_H + 8;

    /* Events of one (rank, lane) in time order: sort pointers once. */
    const agmm_tev_t **ord = malloc(sizeof *ord * (t->nall ? t->nall : 1));
    if (!ord) return agmm_error(AGMM_ERR_NO_MEMORY, "trace: out of memory");
    agmm_outfile_t o;
    agmm_status_t st = agmm_outfile_open(&o, path);
    if (st != AGMM_OK) {
        free(ord);
        return st;
    }
    FILE *f = o.f;
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
            "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
            "font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"12\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
            W, height, W, height);
    legend(f, t);
    axis(f, &v, plot_bottom, TOP, span);
    for (int r = 0; r < m->nranks; r++) {
        double y0 = TOP + rank_h * r;
        fprintf(
            f,
            "<text x=\"12\" y=\"%.1f\" font-weight=\"bold\">rank %d</text>\n",
            y0 + 13, r);
        for (int l = 0; l < lanes; l++) {
            double y = y0 + RANK_HEAD + LANE_H * l;
            int idx;
            const char *role = agmm_trace_lane_role(m, l, &idx);
            fprintf(
                f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                "fill=\"%s\"/><text x=\"24\" y=\"%.1f\">%s %d</text>\n",
                v.x0, y, v.x1 - v.x0, LANE_H, l % 2 ? "#f4f4f4" : "#eaeaea",
                y + 14, role, idx);
            size_t n = 0;
            for (size_t i = 0; i < t->nall; i++)
                if (t->all[i].rank == r && t->all[i].lane == l)
                    ord[n++] = &t->all[i];
            qsort(ord, n, sizeof *ord, cmp_ptr_t0);
            lane_bars(f, &v, ord, n, y);
        }
        /* Round starts of this rank, across its lanes; a label only where
         * it does not run into the previous one. */
        double last_label = -1e9;
        for (size_t i = 0; i < t->nall; i++) {
            const agmm_tev_t *e = &t->all[i];
            if (e->rank != r || e->kind != AGMM_TEV_ROUND) continue;
            double x = xof(&v, e->t0);
            int left = x > v.x1 - 100; /* label left of the line at the end */
            int room = x - last_label > 110;
            int some = x - last_label > 16; /* room for the number */
            if (some) last_label = x;
            fprintf(
                f,
                "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" "
                "stroke=\"#555\" stroke-dasharray=\"3,2\"/><text x=\"%.2f\" "
                "y=\"%.1f\" fill=\"#555\" text-anchor=\"%s\">%s%.0u %s"
                "</text>\n",
                x, y0 + 2, x, y0 + RANK_HEAD + LANE_H * lanes,
                left ? x - 3 : x + 3, y0 + 13, left ? "end" : "start",
                room ? "round " : "", some ? e->round : 0,
                room ? agmm_trace_sched_name(e->sched) : "");
        }
    }
    fprintf(f, "</svg>\n");
    free(ord);
    return agmm_outfile_commit(&o);
}
