/* Figures: a small general wrapper over PLplot (cairo drivers).
 *
 * A figure is a grid of panels; each panel has a title, axis labels, ranges
 * and any number of series drawn as lines, points or both, with an optional
 * legend, and a figure may carry a title and a note (its provenance) under
 * the panels. The output format follows the file extension: .svg (PLplot's
 * own svg driver, which writes text as <text> elements that can be searched
 * and edited; the cairo SVG surface writes glyph outlines), .png (pngcairo),
 * .pdf (pdfcairo). The library never prints; PLplot itself may write driver
 * warnings to stderr. */
#ifndef PFLEX_PLOT_H
#define PFLEX_PLOT_H

#include <stdbool.h>
#include <stddef.h>

enum pflex_plot_style {
  PFLEX_PLOT_LINE = 1,        /* connected line */
  PFLEX_PLOT_POINTS = 2,      /* markers only */
  PFLEX_PLOT_LINE_POINTS = 3, /* both */
};

/* Line styles; the legend draws each series in its own. */
enum pflex_plot_dash { PFLEX_PLOT_SOLID = 0, PFLEX_PLOT_DASHED, PFLEX_PLOT_DOTTED, PFLEX_PLOT_DASHDOT };

struct pflex_plot_series {
  const char *label;   /* legend text, NULL = not in the legend */
  const double *x, *y; /* n points; non-finite points are skipped */
  size_t n;
  enum pflex_plot_style style; /* 0 = PFLEX_PLOT_LINE */
  int color;                   /* index into the palette (0..11, 12 black), -1 = next automatic colour */
  enum pflex_plot_dash dash;
  double width;       /* line width, 0 = default */
  const char *marker; /* UTF-8 glyph drawn at each point and in the legend ("●", "■",
                         "▲", ...); NULL = "●" */
};

/* Where a panel's legend goes. OUTSIDE_RIGHT narrows the panel to make room. */
enum pflex_plot_legend_pos {
  PFLEX_PLOT_LEGEND_TOP_LEFT = 0,
  PFLEX_PLOT_LEGEND_TOP_RIGHT,
  PFLEX_PLOT_LEGEND_BOTTOM_LEFT,
  PFLEX_PLOT_LEGEND_BOTTOM_RIGHT,
  PFLEX_PLOT_LEGEND_OUTSIDE_RIGHT,
};

struct pflex_plot_panel {
  const char *title;
  const char *xlabel, *ylabel;
  double xmin, xmax, ymin, ymax; /* axis ranges; a NAN bound is taken from the data */
  const struct pflex_plot_series *series;
  size_t nseries;
  bool legend; /* draw a legend of the labelled series */
  enum pflex_plot_legend_pos legend_pos; /* default top left, inside */
  bool grid;   /* draw grid lines */
  /* Text labels of the x axis at x = 1..nxticks (instead of numbers),
   * written vertically below it; bottom is the share of the panel's cell
   * kept below the axis for them (0 = the default for numbers). */
  const char *const *xticks;
  size_t nxticks;
  double bottom;
};

struct pflex_plot {
  const char *title; /* figure title above the panels, NULL = none */
  int cols, rows;    /* panel grid; 0 = one row of all panels */
  const struct pflex_plot_panel *panels;
  size_t npanels;
  int width_px, height_px; /* page size; 0 = 640 x 480 per panel */
  const char *note; /* one line under the panels (the data's provenance), NULL = none */
  /* Share of the page width kept right of the panels for their
   * PFLEX_PLOT_LEGEND_OUTSIDE_RIGHT legends (0 = each such panel narrows). */
  double legend_width;
};

/* The PLplot device for a file name by its extension ("svg", "pngcairo",
 * "pdfcairo"), or NULL when the extension is not supported. */
const char *pflex_plot_device(const char *path);

/* Renders the figure to path. -EINVAL on a bad figure or unsupported
 * extension, -EIO when PLplot could not open the output. */
int pflex_plot_render(const struct pflex_plot *plot, const char *path);

#endif
