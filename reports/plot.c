#include "plot.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Okabe and Ito's colour-blind-safe palette, its yellow left out (too pale
 * on white paper). */
static const char *const palette[CK_PLOT_COLORS] = {
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000",
};

/* Fills of stacked segments: the same palette in another order, so that
 * neighbouring segments differ in lightness as well as hue. */
static const char *const seg_fill[] = {
    "#0072B2", "#E69F00", "#56B4E9", "#D55E00", "#009E73", "#CC79A7", "#999999",
};

static const char *const dash[] = {"", "7 4", "2 3", "9 3 2 3"};

#define W 760
#define ML 78  /* left margin: the y axis's labels */
#define MR 24
#define MT 34  /* the title */
#define PH 220 /* the plot's height */
#define XL 40  /* under the plot: tick labels and the x axis's name */
#define LEG_ROW 18

/* The largest magnitude drawn: beyond it a value is left out (a gap), so
 * that no sum, span or scale of the axes overflows and every coordinate
 * written is finite. No run's figure comes near it. */
#define PLOT_MAX 1e300

int ck_plot_drawable(double v)
{
    return isfinite(v) && fabs(v) <= PLOT_MAX;
}

const char *ck_plot_color(int i)
{
    return palette[(i < 0 ? 0 : i) % CK_PLOT_COLORS];
}

int ck_plot_ticks(double lo, double hi, int max, double *t)
{
    if (!(hi > lo) || max < 2 || !isfinite(hi - lo))
        return 0;
    double raw = (hi - lo) / (max - 1), p = pow(10, floor(log10(raw))), step = p;
    static const double mult[] = {1, 2, 5, 10};
    for (int i = 0; i < 4; i++)
        if ((step = mult[i] * p) >= raw)
            break;
    /* A span too small (subnormal) or too large to divide into steps. */
    if (!isnormal(step) || !isfinite(lo / step) || !isfinite(hi / step))
        return 0;
    int n = 0;
    for (double v = ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9 && n < max; v += step)
        t[n++] = fabs(v) < step * 1e-9 ? 0 : v;
    return n;
}

/* A tick's label: short, with k / M / G for large values. */
static void tick_label(double v, double step, char *buf, size_t len)
{
    double a = fabs(v);
    const char *sfx = "";
    double d = 1;
    if (a >= 1e9 || step >= 1e9) {
        sfx = "G";
        d = 1e9;
    } else if (a >= 1e6 || step >= 1e6) {
        sfx = "M";
        d = 1e6;
    } else if (a >= 1e4 || step >= 1e4) {
        sfx = "k";
        d = 1e3;
    }
    double s = step / d;
    int dec = s >= 1 ? 0 : s >= 0.1 ? 1 : s >= 0.01 ? 2 : 3;
    if (fabs(v / d) >= 1e6)
        snprintf(buf, len, "%.3g%s", v / d, sfx); /* beyond G: a mantissa and exponent */
    else
        snprintf(buf, len, "%.*f%s", dec, v / d, sfx);
}

static void text(ck_sb *b, double x, double y, const char *anchor, int size, const char *s)
{
    ck_sb_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\">", x, y,
                 anchor, size);
    ck_sb_html(b, s);
    ck_sb_puts(b, "</text>\n");
}

static void marker(ck_sb *b, int run, double x, double y, const char *title)
{
    const char *c = ck_plot_color(run);
    switch (((run % 4) + 4) % 4) {
    case 0:
        ck_sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.2\" fill=\"%s\">", x, y, c);
        break;
    case 1:
        ck_sb_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"6\" height=\"6\" fill=\"%s\">",
                     x - 3, y - 3, c);
        break;
    case 2:
        ck_sb_printf(b, "<path d=\"M%.1f %.1fl3.6 6.4h-7.2z\" fill=\"%s\">", x, y - 4, c);
        break;
    default:
        ck_sb_printf(b, "<path d=\"M%.1f %.1fl4 4l-4 4l-4 -4z\" fill=\"%s\">", x, y - 4, c);
        break;
    }
    ck_sb_puts(b, "<title>");
    ck_sb_html(b, title);
    ck_sb_puts(b, "</title>");
    switch (((run % 4) + 4) % 4) {
    case 0:
        ck_sb_puts(b, "</circle>\n");
        break;
    case 1:
        ck_sb_puts(b, "</rect>\n");
        break;
    default:
        ck_sb_puts(b, "</path>\n");
    }
}

/* Legend entries laid out in rows under the plot: returns the rows used. */
typedef struct legend_item {
    const char *label;
    int run, style; /* a line and marker; style -1: a filled box of colour fill */
    const char *fill;
} legend_item;

static int legend_rows(const legend_item *it, size_t n)
{
    int rows = n ? 1 : 0;
    double x = ML;
    for (size_t i = 0; i < n; i++) {
        double w = 34 + 6.2 * (double)strlen(it[i].label) + 16;
        if (x + w > W - MR && x > ML) {
            rows++;
            x = ML;
        }
        x += w;
    }
    return rows;
}

static void legend(ck_sb *b, const legend_item *it, size_t n, double y0)
{
    double x = ML, y = y0;
    for (size_t i = 0; i < n; i++) {
        double w = 34 + 6.2 * (double)strlen(it[i].label) + 16;
        if (x + w > W - MR && x > ML) {
            y += LEG_ROW;
            x = ML;
        }
        if (it[i].style < 0) {
            ck_sb_printf(b,
                         "<rect x=\"%.1f\" y=\"%.1f\" width=\"24\" height=\"10\" fill=\"%s\" "
                         "stroke=\"#333\" stroke-width=\"0.5\"/>\n",
                         x, y - 9, it[i].fill);
        } else {
            ck_sb_printf(b,
                         "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                         "stroke-width=\"2\" stroke-dasharray=\"%s\"/>\n",
                         x, y - 4, x + 24, y - 4, ck_plot_color(it[i].run),
                         dash[it[i].style % 4]);
            marker(b, it[i].run, x + 12, y - 4, it[i].label);
        }
        text(b, x + 30, y, "start", 12, it[i].label);
        x += w;
    }
}

static void svg_open(ck_sb *b, const char *id, double h, const char *title)
{
    ck_sb_printf(b,
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" viewBox=\"0 0 %d %.0f\" "
                 "width=\"%d\" height=\"%.0f\" font-family=\"sans-serif\"",
                 W, h, W, h);
    if (id) {
        ck_sb_puts(b, " id=\"");
        ck_sb_html(b, id);
        ck_sb_puts(b, "\"");
    }
    ck_sb_puts(b, " class=\"chart\">\n<title>");
    ck_sb_html(b, title);
    ck_sb_puts(b, "</title>\n<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n");
    text(b, ML, 20, "start", 15, title);
}

/* An empty chart: its frame, "none" in it, and the end of the <svg>. */
static void none(ck_sb *b)
{
    ck_sb_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                    "stroke=\"#999\"/>\n",
                 ML, MT, W - ML - MR, PH);
    ck_sb_printf(b,
                 "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"14\" "
                 "fill=\"#666\" class=\"none\">none</text>\n</svg>\n",
                 (ML + W - MR) / 2.0, MT + PH / 2.0);
}

/* The y axis from 0 (or the least value, when negative) up: its ticks,
 * grid lines and name. */
static void y_axis(ck_sb *b, double lo, double hi, const char *name)
{
    double t[12];
    int nt = ck_plot_ticks(lo, hi, 6, t);
    double step = nt > 1 ? t[1] - t[0] : hi - lo;
    for (int i = 0; i < nt; i++) {
        double y = MT + PH - (t[i] - lo) / (hi - lo) * PH;
        char lab[32];
        tick_label(t[i], step, lab, sizeof(lab));
        ck_sb_printf(b,
                     "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", ML,
                     y, W - MR, y);
        text(b, ML - 6, y + 4, "end", 11, lab);
    }
    ck_sb_printf(b,
                 "<text transform=\"translate(16 %.1f) rotate(-90)\" text-anchor=\"middle\" "
                 "font-size=\"12\">",
                 MT + PH / 2.0);
    ck_sb_html(b, name);
    ck_sb_puts(b, "</text>\n");
}

static double upper(double hi)
{
    double t[12];
    int nt = ck_plot_ticks(0, hi > 0 ? hi * 1.05 : 1, 6, t);
    /* Up to the tick above the largest value, so that the top has a label. */
    double step = nt > 1 ? t[1] - t[0] : 1;
    /* All zero: one step, not a zero-height axis (every y would be 0/0). */
    return nt ? fmax(ceil(hi * 1.02 / step), 1) * step : 1;
}

/* The spread of a series over seeds: a translucent band from lo to hi
 * along each unbroken stretch, in the series' colour. */
static void spread(ck_sb *b, const ck_plot_series *se, double x0, double x1, double y0,
                   double y1)
{
    if (!se->lo || !se->hi)
        return;
    double pw = W - ML - MR;
    size_t i = 0;
    while (i < se->n) {
        size_t a = i;
        while (i < se->n && ck_plot_drawable(se->x[i]) && ck_plot_drawable(se->lo[i]) &&
               ck_plot_drawable(se->hi[i]))
            i++;
        if (i - a >= 2) {
            ck_sb_printf(b, "<polygon class=\"spread\" fill=\"%s\" fill-opacity=\"0.15\" points=\"",
                         ck_plot_color(se->run));
            for (size_t k = a; k < i; k++)
                ck_sb_printf(b, "%.1f,%.1f ", ML + (se->x[k] - x0) / (x1 - x0) * pw,
                             MT + PH - (se->hi[k] - y0) / (y1 - y0) * PH);
            for (size_t k = i; k-- > a;)
                ck_sb_printf(b, "%.1f,%.1f ", ML + (se->x[k] - x0) / (x1 - x0) * pw,
                             MT + PH - (se->lo[k] - y0) / (y1 - y0) * PH);
            ck_sb_puts(b, "\"/>\n");
        }
        if (i == a)
            i++;
    }
}

void ck_plot_xy_svg(ck_sb *b, const ck_plot_xy *p)
{
    double x0 = INFINITY, x1 = -INFINITY, y0 = 0, y1 = -INFINITY;
    size_t points = 0;
    for (size_t s = 0; s < p->nseries; s++)
        for (size_t i = 0; i < p->series[s].n; i++) {
            double x = p->series[s].x[i], y = p->series[s].y[i];
            if (!ck_plot_drawable(x) || !ck_plot_drawable(y))
                continue;
            points++;
            x0 = fmin(x0, x);
            x1 = fmax(x1, x);
            y0 = fmin(y0, y);
            y1 = fmax(y1, y);
            if (p->series[s].hi && ck_plot_drawable(p->series[s].hi[i]))
                y1 = fmax(y1, p->series[s].hi[i]);
            if (p->series[s].lo && ck_plot_drawable(p->series[s].lo[i]))
                y0 = fmin(y0, p->series[s].lo[i]);
        }
    legend_item items[64] = {{0}};
    size_t ni = 0;
    for (size_t s = 0; s < p->nseries && ni < 64; s++)
        if (p->series[s].n)
            items[ni++] = (legend_item){p->series[s].label, p->series[s].run, p->series[s].style,
                                        NULL};
    int rows = legend_rows(items, ni);
    double h = MT + PH + XL + rows * LEG_ROW + 6;
    svg_open(b, p->id, h, p->title);
    if (!points) {
        none(b);
        return;
    }
    for (size_t k = 0; k < p->nbands; k++) {
        if (ck_plot_drawable(p->bands[k].x0))
            x0 = fmin(x0, p->bands[k].x0);
        if (ck_plot_drawable(p->bands[k].x1))
            x1 = fmax(x1, p->bands[k].x1);
    }
    if (x1 <= x0) {
        x0 -= 0.5;
        x1 += 0.5;
    }
    /* A span the ticks cannot divide (nothing between two doubles that
     * far out, or a subnormal one): widened around its middle. */
    if (x1 - x0 < fmax(fabs(x0), fabs(x1)) * 1e-9 || x1 - x0 < 1e-200) {
        double c = x0 / 2 + x1 / 2, half = fmax(0.5, fabs(c) * 1e-9);
        x0 = c - half;
        x1 = c + half;
    }
    y1 = upper(y1);
    if (y0 < 0)
        y0 = -upper(-y0);
    double pw = W - ML - MR;
#define SX(v) (ML + ((v) - x0) / (x1 - x0) * pw)
#define SY(v) (MT + PH - ((v) - y0) / (y1 - y0) * PH)
    y_axis(b, y0, y1, p->ylabel);
    /* Shaded intervals, under the data. */
    for (size_t k = 0; k < p->nbands; k++) {
        const ck_plot_band *bd = &p->bands[k];
        if (isnan(bd->x0) || isnan(bd->x1) || bd->x1 < x0 || bd->x0 > x1)
            continue; /* nothing of it on the axis */
        double a = SX(fmax(bd->x0, x0)), z = SX(fmin(bd->x1, x1));
        if (z - a < 2)
            z = a + 2;
        ck_sb_printf(b,
                     "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" "
                     "fill-opacity=\"0.13\" class=\"band\"><title>",
                     a, MT, z - a, PH, bd->run < 0 ? "#555" : ck_plot_color(bd->run));
        ck_sb_html(b, bd->label);
        ck_sb_puts(b, "</title></rect>\n");
        text(b, a + 3, MT + 12 + (double)(k % 3) * 12, "start", 10, bd->label);
    }
    /* The x axis. */
    double t[16];
    int nt = ck_plot_ticks(x0, x1, 9, t);
    double step = nt > 1 ? t[1] - t[0] : 1;
    for (int i = 0; i < nt; i++) {
        char lab[32];
        tick_label(t[i], step, lab, sizeof(lab));
        ck_sb_printf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#333\"/>\n",
                     SX(t[i]), MT + PH, SX(t[i]), MT + PH + 4);
        text(b, SX(t[i]), MT + PH + 16, "middle", 11, lab);
    }
    ck_sb_printf(b,
                 "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                 "stroke=\"#333\"/>\n",
                 ML, MT, W - ML - MR, PH);
    text(b, ML + pw / 2, MT + PH + 33, "middle", 12, p->xlabel);
    /* The series: a line per unbroken stretch, a marker per point. */
    for (size_t s = 0; s < p->nseries; s++) {
        const ck_plot_series *se = &p->series[s];
        ck_sb_printf(b, "<g class=\"series\" data-label=\"");
        ck_sb_html(b, se->label);
        ck_sb_puts(b, "\">\n");
        spread(b, se, x0, x1, y0, y1);
        if (p->lines) {
            int open = 0;
            for (size_t i = 0; i < se->n; i++) {
                if (!ck_plot_drawable(se->x[i]) || !ck_plot_drawable(se->y[i])) {
                    if (open)
                        ck_sb_puts(b, "\"/>\n");
                    open = 0;
                    continue;
                }
                if (!open)
                    ck_sb_printf(b,
                                 "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" "
                                 "stroke-dasharray=\"%s\" points=\"",
                                 ck_plot_color(se->run), dash[se->style % 4]);
                ck_sb_printf(b, "%s%.1f,%.1f", open ? " " : "", SX(se->x[i]), SY(se->y[i]));
                open = 1;
            }
            if (open)
                ck_sb_puts(b, "\"/>\n");
        }
        if (!p->lines || se->n <= 80)
            for (size_t i = 0; i < se->n; i++) {
                if (!ck_plot_drawable(se->x[i]) || !ck_plot_drawable(se->y[i]))
                    continue;
                char tip[300];
                snprintf(tip, sizeof(tip), "%s: %g at %g", se->label, se->y[i], se->x[i]);
                marker(b, se->run, SX(se->x[i]), SY(se->y[i]), tip);
            }
        ck_sb_puts(b, "</g>\n");
    }
#undef SX
#undef SY
    legend(b, items, ni, MT + PH + XL + 12);
    ck_sb_puts(b, "</svg>\n");
}

void ck_plot_bars_svg(ck_sb *b, const ck_plot_bars *p)
{
    legend_item items[16];
    size_t ni = 0;
    /* One segment: bars in their runs' colours, named under them; no legend. */
    for (size_t k = 0; p->nseg > 1 && k < p->nseg && ni < 16; k++)
        items[ni++] = (legend_item){p->seg_names[k], 0, -1, seg_fill[k % 7]};
    int rows = legend_rows(items, ni);
    double h = MT + PH + XL + 14 + rows * LEG_ROW + 6;
    svg_open(b, p->id, h, p->title);
    double top = 0;
    int any = 0;
    for (size_t i = 0; i < p->nbars; i++) {
        double sum = 0;
        for (size_t k = 0; k < p->nseg; k++)
            if (ck_plot_drawable(p->bars[i].seg[k]) && p->bars[i].seg[k] > 0) {
                sum += p->bars[i].seg[k];
                any = 1;
            }
        top = fmax(top, sum);
        if (p->bars[i].spread && ck_plot_drawable(p->bars[i].hi))
            top = fmax(top, p->bars[i].hi);
    }
    if (!p->nbars || !any) {
        none(b);
        return;
    }
    double y1 = p->ymax > 0 ? p->ymax : upper(top);
    y_axis(b, 0, y1, p->ylabel);
    /* Slots: one per bar, plus a gap between groups. */
    double slots = 0;
    for (size_t i = 0; i < p->nbars; i++) {
        int new_group = i == 0 || !p->bars[i].group || !p->bars[i - 1].group ||
                        strcmp(p->bars[i].group, p->bars[i - 1].group) != 0;
        slots += 1 + (new_group && i ? 0.6 : 0);
    }
    double pw = W - ML - MR, slot = pw / (slots + 0.6), bw = fmin(slot * 0.8, 60);
    double x = ML + slot * 0.3, gstart = x;
    for (size_t i = 0; i < p->nbars; i++) {
        const ck_plot_bar *br = &p->bars[i];
        int new_group = i == 0 || !br->group || !p->bars[i - 1].group ||
                        strcmp(br->group, p->bars[i - 1].group) != 0;
        if (new_group && i) {
            x += slot * 0.6;
            gstart = x;
        }
        double cx = x + slot / 2, acc = 0;
        ck_sb_puts(b, "<g class=\"bar\" data-label=\"");
        ck_sb_html(b, br->label);
        ck_sb_puts(b, "\">\n");
        for (size_t k = 0; k < p->nseg; k++) {
            double v = br->seg[k];
            if (!ck_plot_drawable(v) || v <= 0)
                continue;
            double ya = MT + PH - (acc + v) / y1 * PH, hh = v / y1 * PH;
            ck_sb_printf(b,
                         "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
                         "stroke=\"#fff\" stroke-width=\"0.5\"><title>",
                         cx - bw / 2, ya, bw, hh,
                         p->nseg == 1 ? ck_plot_color(br->run) : seg_fill[k % 7]);
            char tip[300];
            snprintf(tip, sizeof(tip), "%s, %s: %g", br->label, p->seg_names[k], v);
            ck_sb_html(b, tip);
            ck_sb_puts(b, "</title></rect>\n");
            acc += v;
        }
        ck_sb_printf(b,
                     "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
                     "stroke=\"%s\" stroke-width=\"2\"/>\n",
                     cx - bw / 2, MT + PH - acc / y1 * PH, bw, acc / y1 * PH,
                     ck_plot_color(br->run));
        if (br->spread && ck_plot_drawable(br->lo) && ck_plot_drawable(br->hi)) {
            double ylo = MT + PH - br->lo / y1 * PH, yhi = MT + PH - br->hi / y1 * PH;
            ck_sb_printf(b,
                         "<path class=\"whisker\" d=\"M%.1f %.1fV%.1fM%.1f %.1fh10M%.1f %.1fh10\" "
                         "stroke=\"#222\" stroke-width=\"1.2\"><title>",
                         cx, ylo, yhi, cx - 5, ylo, cx - 5, yhi);
            char tip[300];
            snprintf(tip, sizeof(tip), "%s: from %g to %g over its runs", br->label, br->lo,
                     br->hi);
            ck_sb_html(b, tip);
            ck_sb_puts(b, "</title></path>\n");
        }
        ck_sb_puts(b, "</g>\n");
        text(b, cx, MT + PH + 14, "middle", 11, br->label);
        x += slot;
        int end_group = i + 1 == p->nbars || !br->group || !p->bars[i + 1].group ||
                        strcmp(br->group, p->bars[i + 1].group) != 0;
        if (end_group && br->group)
            text(b, (gstart + x) / 2, MT + PH + 30, "middle", 12, br->group);
    }
    ck_sb_printf(b,
                 "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                 "stroke=\"#333\"/>\n",
                 ML, MT, W - ML - MR, PH);
    legend(b, items, ni, MT + PH + XL + 20);
    ck_sb_puts(b, "</svg>\n");
}
