/* Figures with PLplot (include/pflex/plot.h). Each render uses a fresh PLplot
 * stream and ends it, so renders do not share state. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <plplot.h>

#include "pflex/plot.h"

/* A colour-blind-friendly palette (Okabe-Ito, then Tol's muted), 0..255. */
static const int palette[][3] = {
    {0, 114, 178},  {213, 94, 0},   {0, 158, 115},   {204, 121, 167},
    {230, 159, 0},  {86, 180, 233}, {117, 112, 179}, {102, 102, 102},
    {170, 68, 153}, {136, 34, 85},  {68, 170, 153},  {153, 153, 51},
    {0, 0, 0}, /* 12: black */
};
#define NPAL (int)(sizeof palette / sizeof palette[0])

const char *pflex_plot_device(const char *path) {
  const char *dot = path ? strrchr(path, '.') : NULL;
  if (!dot) return NULL;
  /* PLplot's own svg driver: text as <text>, which svgcairo draws as glyph outlines. */
  if (strcasecmp(dot, ".svg") == 0) return "svg";
  if (strcasecmp(dot, ".png") == 0) return "pngcairo";
  if (strcasecmp(dot, ".pdf") == 0) return "pdfcairo";
  return NULL;
}

static void data_range(const struct pflex_plot_panel *p, double *xmin, double *xmax, double *ymin,
                       double *ymax) {
  double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
  for (size_t s = 0; s < p->nseries; s++)
    for (size_t i = 0; i < p->series[s].n; i++) {
      double x = p->series[s].x[i], y = p->series[s].y[i];
      if (!isfinite(x) || !isfinite(y)) continue;
      lo[0] = fmin(lo[0], x), hi[0] = fmax(hi[0], x);
      lo[1] = fmin(lo[1], y), hi[1] = fmax(hi[1], y);
    }
  for (int k = 0; k < 2; k++) {
    if (!isfinite(lo[k])) lo[k] = 0, hi[k] = 1;
    if (hi[k] <= lo[k]) lo[k] -= 0.5, hi[k] += 0.5;
    double pad = 0.04 * (hi[k] - lo[k]);
    lo[k] -= pad, hi[k] += pad;
  }
  *xmin = isnan(p->xmin) ? lo[0] : p->xmin;
  *xmax = isnan(p->xmax) ? hi[0] : p->xmax;
  *ymin = isnan(p->ymin) ? lo[1] : p->ymin;
  *ymax = isnan(p->ymax) ? hi[1] : p->ymax;
}

static void set_color(int c) {
  int k = ((c % NPAL) + NPAL) % NPAL;
  plscol0(15, palette[k][0], palette[k][1], palette[k][2]);
  plcol0(15);
}

/* PLplot's predefined line styles (pllsty), one per dash, so that the legend
 * (which takes the same numbers) draws each line as the plot does: solid,
 * long dashes, short dashes, long-short dashes. */
static PLINT line_style(enum pflex_plot_dash d) {
  static const PLINT styles[] = {1, 3, 2, 5};
  return (unsigned)d < sizeof styles / sizeof *styles ? styles[d] : 1;
}

static const char *marker(const struct pflex_plot_series *s) {
  return s->marker && *s->marker ? s->marker : "\u25CF"; /* ● */
}

static int draw_series(const struct pflex_plot_series *s, int color) {
  PLFLT *x = malloc((s->n ? s->n : 1) * sizeof *x), *y = malloc((s->n ? s->n : 1) * sizeof *y);
  if (!x || !y) {
    free(x), free(y);
    return -ENOMEM;
  }
  PLINT n = 0;
  for (size_t i = 0; i < s->n; i++)
    if (isfinite(s->x[i]) && isfinite(s->y[i])) x[n] = s->x[i], y[n] = s->y[i], n++;
  set_color(color);
  plwidth(s->width > 0 ? s->width : 1.5);
  enum pflex_plot_style st = s->style ? s->style : PFLEX_PLOT_LINE;
  if ((st & PFLEX_PLOT_LINE) && n > 1) {
    pllsty(line_style(s->dash));
    plline(n, x, y);
    pllsty(1);
  }
  if ((st & PFLEX_PLOT_POINTS) && n > 0) {
    plschr(0, 0.55); /* the marker glyphs' size */
    plstring(n, x, y, marker(s));
    plschr(0, 0.7);
  }
  free(x), free(y);
  return 0;
}

static int draw_legend(const struct pflex_plot_panel *p, const int *colors) {
  PLINT n = 0;
  for (size_t s = 0; s < p->nseries; s++)
    n += p->series[s].label != NULL;
  if (!n) return 0;
  PLINT *opt = calloc(n, sizeof *opt), *tcol = calloc(n, sizeof *tcol),
        *lcol = calloc(n, sizeof *lcol), *lsty = calloc(n, sizeof *lsty),
        *scol = calloc(n, sizeof *scol), *snum = calloc(n, sizeof *snum);
  PLFLT *lwid = calloc(n, sizeof *lwid), *sscale = calloc(n, sizeof *sscale);
  const char **text = calloc(n, sizeof *text), **sym = calloc(n, sizeof *sym);
  int err = 0;
  if (!opt || !tcol || !lcol || !lsty || !scol || !snum || !lwid || !sscale || !text || !sym) {
    err = -ENOMEM;
    goto out;
  }
  /* Legend colours use cmap0 entries 1..12 set to the palette. */
  PLINT k = 0;
  for (size_t s = 0; s < p->nseries; s++) {
    if (!p->series[s].label) continue;
    int c = ((colors[s] % NPAL) + NPAL) % NPAL;
    plscol0(1 + c % 14, palette[c][0], palette[c][1], palette[c][2]);
    enum pflex_plot_style st = p->series[s].style ? p->series[s].style : PFLEX_PLOT_LINE;
    opt[k] = ((st & PFLEX_PLOT_LINE) ? PL_LEGEND_LINE : 0) |
             ((st & PFLEX_PLOT_POINTS) ? PL_LEGEND_SYMBOL : 0);
    tcol[k] = 15; /* black text: cmap0 15 is set to black below */
    lcol[k] = 1 + c % 14;
    scol[k] = 1 + c % 14;
    lsty[k] = line_style(p->series[s].dash);
    lwid[k] = p->series[s].width > 0 ? p->series[s].width : 1.5;
    snum[k] = 1;
    sscale[k] = 0.6;
    sym[k] = marker(&p->series[s]);
    text[k] = p->series[s].label;
    k++;
  }
  PLFLT w, h;
  plcol0(15);
  plscol0(15, 0, 0, 0);
  PLINT pos;
  switch (p->legend_pos) {
  case PFLEX_PLOT_LEGEND_TOP_RIGHT: pos = PL_POSITION_INSIDE | PL_POSITION_TOP | PL_POSITION_RIGHT; break;
  case PFLEX_PLOT_LEGEND_BOTTOM_LEFT: pos = PL_POSITION_INSIDE | PL_POSITION_BOTTOM | PL_POSITION_LEFT; break;
  case PFLEX_PLOT_LEGEND_BOTTOM_RIGHT:
    pos = PL_POSITION_INSIDE | PL_POSITION_BOTTOM | PL_POSITION_RIGHT;
    break;
  case PFLEX_PLOT_LEGEND_OUTSIDE_RIGHT: pos = PL_POSITION_OUTSIDE | PL_POSITION_RIGHT; break;
  default: pos = PL_POSITION_INSIDE | PL_POSITION_TOP | PL_POSITION_LEFT;
  }
  /* Many entries get smaller text so the legend stays within the page. */
  PLFLT text_scale = n > 8 ? 0.5 : 0.6;
  pllegend(&w, &h, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX, pos, 0.02, 0.02, 0.1, 0, 0, 1,
           0, 0, n, opt, 0.8, text_scale, 1.8, 0.0, tcol, (const char *const *)text, NULL, NULL,
           NULL, NULL,
           lcol, lsty, lwid, scol, sscale, snum, (const char *const *)sym);
out:
  free(opt), free(tcol), free(lcol), free(lsty), free(scol), free(snum), free(lwid), free(sscale);
  free(text), free(sym);
  return err;
}

/* The axes of panel p: a grid, the box, numbers or the text ticks, labels. */
static void draw_axes(const struct pflex_plot_panel *p, double xmin, double xmax) {
  plwidth(0.5);
  plschr(0, 0.7);
  double xstep = p->nxticks ? 1 : 0;
  if (p->grid) {
    plscol0(15, 215, 215, 215);
    plcol0(15);
    plbox("g", xstep, 0, "g", 0, 0);
  }
  plscol0(15, 0, 0, 0);
  plcol0(15);
  plwidth(1.0);
  plbox(p->nxticks ? "bct" : "bcnst", xstep, 0, "bcnstv", 0, 0);
  if (p->nxticks) {
    plschr(0, 0.45);
    for (size_t k = 0; k < p->nxticks; k++) /* vertical, ending at the axis */
      plmtex("bv", 0.7, ((double)(k + 1) - xmin) / (xmax - xmin), 1.0, p->xticks[k]);
    plschr(0, 0.7);
    pllab("", p->ylabel ? p->ylabel : "", p->title ? p->title : ""); /* the ticks name x */
  } else {
    pllab(p->xlabel ? p->xlabel : "", p->ylabel ? p->ylabel : "", p->title ? p->title : "");
  }
}

/* Panel p in the page cell [x0, x1] x [y0, y1] of a cols-wide grid. */
static int draw_panel(const struct pflex_plot_panel *p, double x0, double x1, double y0, double y1,
                      int cols, bool legend_band) {
  /* Room for the y label on the left, the x label below and the title above;
   * an outside legend takes room from its panel unless the page keeps a band. */
  bool outside = p->legend && p->legend_pos == PFLEX_PLOT_LEGEND_OUTSIDE_RIGHT && !legend_band;
  double right = outside ? 0.36 : 0.04;
  double below = (p->bottom > 0 ? p->bottom : 0.2) * (y1 - y0), above = fmin(0.13 * (y1 - y0), 0.06);
  plvpor(x0 + 0.17 / cols, x1 - right / cols, y0 + below, y1 - above);
  double xmin, xmax, ymin, ymax;
  data_range(p, &xmin, &xmax, &ymin, &ymax);
  plwind(xmin, xmax, ymin, ymax);
  draw_axes(p, xmin, xmax);
  int *colors = calloc(p->nseries ? p->nseries : 1, sizeof *colors);
  if (!colors) return -ENOMEM;
  int next = 0, err = 0;
  for (size_t s = 0; s < p->nseries; s++)
    colors[s] = p->series[s].color >= 0 ? p->series[s].color : next++;
  for (size_t s = 0; s < p->nseries && !err; s++)
    err = draw_series(&p->series[s], colors[s]);
  if (!err && p->legend) err = draw_legend(p, colors);
  free(colors);
  return err;
}

/* One line of text across the page band [y0, y1]: centred (the title) or
 * from the left (the note). */
static void draw_banner(const char *text, double y0, double y1, bool centred, double size) {
  plvpor(0, 1, y0, y1);
  plwind(0, 1, 0, 1);
  plscol0(15, 0, 0, 0);
  plcol0(15);
  plschr(0, size);
  plptex(centred ? 0.5 : 0.012, 0.35, 1, 0, centred ? 0.5 : 0.0, text);
}

/* The default character height in pixels: the same on every page size (PLplot
 * scales its own default with the page, so text grew as panels shrank). */
#define TEXT_PX 24.0

/* Opens a fresh PLplot stream on path (w x h pixels); the caller's stream in *old. */
static void open_stream(const char *dev, const char *path, int w, int h, PLINT *old) {
  plgstrm(old);
  PLINT strm;
  plmkstrm(&strm);
  plsdev(dev);
  plsfnam(path);
  char geom[64];
  snprintf(geom, sizeof geom, "%dx%d", w, h);
  plsetopt("geometry", geom);
  plscolbg(255, 255, 255);
  plinit();
  plssub(1, 1);
  pladv(0);
  /* The svg driver sets its text about 1.2 times larger than cairo does for
   * the same character height: scale it so that both look alike. */
  PLFLT x0, x1, y0, y1;
  plgspa(&x0, &x1, &y0, &y1);
  double def = TEXT_PX * (y1 - y0) / h;
  plschr(strcmp(dev, "svg") == 0 ? def / 1.22 : def, 1.0);
}

int pflex_plot_render(const struct pflex_plot *plot, const char *path) {
  const char *dev = pflex_plot_device(path);
  if (!plot || !dev || !plot->npanels || !plot->panels) return -EINVAL;
  int cols = plot->cols > 0 ? plot->cols : (int)plot->npanels;
  int rows = plot->rows > 0 ? plot->rows : ((int)plot->npanels + cols - 1) / cols;
  if ((size_t)cols * (size_t)rows < plot->npanels) return -EINVAL;
  int w = plot->width_px > 0 ? plot->width_px : 640 * cols;
  int h = plot->height_px > 0 ? plot->height_px : 480 * rows + (plot->title ? 40 : 0);
  /* Check that the file can be created before PLplot (which exits on failure). */
  FILE *probe = fopen(path, "wb");
  if (!probe) return -EIO;
  fclose(probe);
  PLINT old;
  open_stream(dev, path, w, h, &old);
  /* Bands of the page: the title on top, the note at the bottom, the
   * legends' band on the right, panels between. */
  double top = plot->title ? 1 - 56.0 / h : 0.99, bottom = plot->note ? 36.0 / h : 0;
  double lw = plot->legend_width > 0 && plot->legend_width < 0.5 ? plot->legend_width : 0;
  int err = 0;
  for (size_t i = 0; i < plot->npanels && !err; i++) {
    int c = (int)i % cols, r = (int)i / cols;
    double cell = (top - bottom) / rows, width = (1 - lw) / cols;
    err = draw_panel(&plot->panels[i], width * c, width * (c + 1), top - cell * (r + 1),
                     top - cell * r, cols, lw > 0);
  }
  if (!err && plot->title) draw_banner(plot->title, top, 1, true, 0.9);
  if (!err && plot->note) draw_banner(plot->note, 0, bottom, false, 0.6);
  plend1();
  plsstrm(old);
  return err;
}
