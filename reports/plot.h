/*
 * plot.h - charts as inline SVG: no script, no fonts or files fetched,
 * readable in print.
 *
 * Two kinds: x-y charts (lines or points over time or over checkpoints,
 * with shaded x intervals such as faults) and bar charts (stacked
 * segments, bars grouped). Each run has a colour from a colour-blind-safe
 * palette (Okabe and Ito) and a marker shape, so that runs stay apart in
 * grey print; a metric within a run (duration and alignment, p50 and p99)
 * is told apart by the line's dash. Every chart has a title, axes with
 * units and a legend; a chart with nothing to draw says "none".
 * Values come with a <title> (shown on hover), so exact figures can be
 * read off without a script.
 */
#ifndef CK_PLOT_H
#define CK_PLOT_H

#include <stddef.h>

#include "strbuf.h"

/* The palette: colour i of run i (cycling). */
const char *ck_plot_color(int i);
#define CK_PLOT_COLORS 7

enum { CK_PLOT_SOLID = 0, CK_PLOT_DASHED = 1, CK_PLOT_DOTTED = 2, CK_PLOT_DASHDOT = 3 };

typedef struct ck_plot_series {
    const char *label;
    int run;              /* colour and marker */
    int style;            /* CK_PLOT_SOLID, _DASHED, _DOTTED, _DASHDOT */
    const double *x, *y;  /* n points; a NaN y is a gap (ck_plot_drawable) */
    const double *lo, *hi; /* NULL, or the spread around each y (over seeds): shaded */
    size_t n;
} ck_plot_series;

typedef struct ck_plot_band {
    double x0, x1;        /* shaded from x0 to x1 */
    const char *label;
    int run;              /* -1: shared by every run (grey) */
} ck_plot_band;

typedef struct ck_plot_xy {
    const char *id;       /* the SVG's id (an anchor), or NULL */
    const char *title, *xlabel, *ylabel; /* labels carry their units */
    const ck_plot_series *series;
    size_t nseries;
    const ck_plot_band *bands;
    size_t nbands;
    int lines;            /* join the points of a series */
} ck_plot_xy;

/* Appends an x-y chart's <svg> to b. */
void ck_plot_xy_svg(ck_sb *b, const ck_plot_xy *p);

typedef struct ck_plot_bar {
    const char *group;    /* the group it stands in (a vertex; NULL: its own) */
    const char *label;    /* under the bar (the run) */
    int run;              /* its outline's colour */
    const double *seg;    /* nseg values, stacked from the axis up; NaN: none */
    int spread;           /* 1: whiskers from lo to hi (the total's spread over seeds) */
    double lo, hi;
} ck_plot_bar;

typedef struct ck_plot_bars {
    const char *id;
    const char *title, *ylabel;
    const char *const *seg_names; /* the legend: one fill per segment */
    size_t nseg;
    const ck_plot_bar *bars;
    size_t nbars;
    double ymax;          /* the axis's top (100 for shares in %); 0: from the data */
} ck_plot_bars;

/* Appends a stacked bar chart's <svg> to b. */
void ck_plot_bars_svg(ck_sb *b, const ck_plot_bars *p);

/* 1 when v is drawn: finite and of a magnitude whose sums and spans do
 * not overflow (at most 1e300). Others are left out, as NaN is: a gap in
 * a line, no segment in a bar, no band. */
int ck_plot_drawable(double v);

/* Ticks for [lo, hi]: at most max of them, at 1, 2 or 5 times a power of
 * ten; returns how many, written to t. */
int ck_plot_ticks(double lo, double hi, int max, double *t);

#endif
