/* The study's figures (include/pflex/study_figures.h): Fig. 8 and Fig. 4.
 *
 * Fig. 8 is a grid of small multiples, one column per scenario and one row
 * per question, each panel with few enough lines to tell apart and its own
 * y range: (a) every strategy with the predictions of the paper's protocol,
 * (b) Eq. 2 by prediction, (c) optimal by prediction, zoomed where it sits
 * next to the oracle, and with closed-loop rounds (d) optimal by round.
 * Every series keeps its colour, marker and line style wherever it appears,
 * and the legend draws them as the panel does. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <gsl/gsl_sort.h>

#include "pflex/plot.h"
#include "pflex/study_figures.h"

/* How a series is drawn. */
struct look {
  int color;
  const char *marker;
  enum pflex_plot_dash dash;
};

/* By strategy (panel a), indexed by enum pflex_alloc_strategy. */
static const struct look strategy_look[] = {
    [PFLEX_ALLOC_EQUAL] = {7, "\u25A0", PFLEX_PLOT_SOLID},   /* grey square */
    [PFLEX_ALLOC_MOE_FT] = {1, "\u25B2", PFLEX_PLOT_DASHED}, /* orange triangle */
    [PFLEX_ALLOC_DRAM] = {2, "\u25BC", PFLEX_PLOT_DOTTED},   /* green down triangle */
    [PFLEX_ALLOC_PFI] = {0, "\u25C6", PFLEX_PLOT_DASHDOT},   /* blue diamond */
    [PFLEX_ALLOC_OPTIMAL] = {3, "\u25CF", PFLEX_PLOT_SOLID}, /* purple disc */
};

/* By prediction (panels b, c), indexed by enum pflex_study_pred. */
static const struct look pred_look[] = {
    [PFLEX_PRED_TRUE] = {9, "\u25A0", PFLEX_PLOT_SOLID},      /* wine square */
    [PFLEX_PRED_IN_SAMPLE] = {0, "\u25C6", PFLEX_PLOT_DASHED}, /* blue diamond */
    [PFLEX_PRED_LOO] = {2, "\u25CF", PFLEX_PLOT_DOTTED},       /* green disc */
    [PFLEX_PRED_LOCO] = {1, "\u25B2", PFLEX_PLOT_DASHDOT},     /* orange triangle */
    [PFLEX_PRED_PRIOR] = {4, "\u25BC", PFLEX_PLOT_DASHED},     /* yellow down triangle */
    [PFLEX_PRED_UNSEEN] = {6, "\u25C7", PFLEX_PLOT_DOTTED},    /* violet open diamond */
};

/* By closed-loop round (panel d): the open loop dashed with open markers,
 * later rounds solid with filled ones. */
static const char *const round_marker[] = {"\u25CB", "\u25B2", "\u25CF", "\u25A0"};

enum { ROW_STRATEGIES, ROW_PFI, ROW_OPTIMAL, ROW_ROUNDS, NROWS };
static const char *const row_title[NROWS] = {
    "all strategies", "pfi (Eq. 2) by prediction", "optimal by prediction, zoomed",
    "optimal, closed loop by round"};

#define MAX_SERIES 64 /* per figure: 4 rows x 2 scenarios x at most 8 lines */

struct fig8 {
  const struct pflex_study_result *r;
  size_t n;
  const double *cuts;
  size_t ncuts;
  struct pflex_plot_series series[MAX_SERIES];
  char labels[MAX_SERIES][64];
  double *xs, *ys; /* MAX_SERIES x ncuts */
  size_t ns;
  struct pflex_plot_panel panels[NROWS * PFLEX_SCENARIO_N];
  char titles[NROWS * PFLEX_SCENARIO_N][96];
  size_t np;
};

/* Appends the series of (sc, st, pred, round) if any of its cuts has a
 * result; false when there is none (or no room). */
static bool add_series(struct fig8 *f, int sc, enum pflex_alloc_strategy st,
                       enum pflex_study_pred pred, unsigned round, struct look look,
                       const char *label) {
  if (f->ns == MAX_SERIES) return false;
  double *x = &f->xs[f->ns * f->ncuts], *y = &f->ys[f->ns * f->ncuts];
  size_t found = 0;
  for (size_t c = 0; c < f->ncuts; c++) {
    const struct pflex_study_result *res = pflex_study_find(f->r, f->n, sc, st, pred, round,
                                                            f->cuts[c]);
    x[c] = 100 * f->cuts[c];
    y[c] = res ? 1 - res->loss_vs_oracle : NAN;
    found += res != NULL;
  }
  if (!found) return false;
  size_t k = f->ns++;
  snprintf(f->labels[k], sizeof f->labels[k], "%s", label);
  f->series[k] = (struct pflex_plot_series){.label = f->labels[k],
                                                  .x = x,
                                                  .y = y,
                                                  .n = f->ncuts,
                                                  .style = PFLEX_PLOT_LINE_POINTS,
                                                  .color = look.color,
                                                  .dash = look.dash,
                                                  .width = 1.6,
                                                  .marker = look.marker};
  return true;
}

/* The oracle, the 1.0 line every panel is relative to: thin black, no marker. */
static void add_oracle(struct fig8 *f, int sc) {
  if (add_series(f, sc, PFLEX_ALLOC_ORACLE, PFLEX_PRED_TRUE, 0, (struct look){7, NULL, 0},
                 "oracle (= 1)")) {
    f->series[f->ns - 1].style = PFLEX_PLOT_LINE;
    f->series[f->ns - 1].width = 1.0;
    f->series[f->ns - 1].color = 12; /* black */
  }
}

static unsigned max_round(const struct fig8 *f) {
  unsigned k = 0;
  for (size_t i = 0; i < f->n; i++)
    if (f->r[i].round > k) k = f->r[i].round;
  return k;
}

/* The series of one row for scenario sc, from f->series[f->ns]; returns how
 * many there are besides the oracle. */
static size_t row_series(struct fig8 *f, int row, int sc, const struct pflex_study_data *d) {
  char label[64];
  size_t first = f->ns;
  if (row == ROW_STRATEGIES) {
    for (int st = 0; st < PFLEX_ALLOC_NSTRATEGIES; st++) {
      if (st == PFLEX_ALLOC_ORACLE) continue;
      enum pflex_study_pred pred = st == PFLEX_ALLOC_PFI       ? pflex_study_headline_pred(d)
                                   : st == PFLEX_ALLOC_OPTIMAL ? pflex_study_optimal_pred(d)
                                                               : PFLEX_PRED_TRUE;
      bool uses_pred = st == PFLEX_ALLOC_PFI || st == PFLEX_ALLOC_OPTIMAL;
      snprintf(label, sizeof label, "%s%s%s", pflex_alloc_strategy_name(st), uses_pred ? " " : "",
               uses_pred ? pflex_study_pred_name(pred) : "");
      struct look look = (size_t)st < sizeof strategy_look / sizeof *strategy_look
                             ? strategy_look[st]
                             : (struct look){10, "\u2715", PFLEX_PLOT_DASHED};
      add_series(f, sc, st, pred, 0, look, label);
    }
  } else if (row == ROW_PFI || row == ROW_OPTIMAL) {
    enum pflex_alloc_strategy st = row == ROW_PFI ? PFLEX_ALLOC_PFI : PFLEX_ALLOC_OPTIMAL;
    for (int pred = 0; pred < PFLEX_PRED_N; pred++) {
      snprintf(label, sizeof label, "%s %s", pflex_alloc_strategy_name(st),
               pflex_study_pred_name(pred));
      add_series(f, sc, st, pred, 0, pred_look[pred], label);
    }
  } else {
    unsigned k = max_round(f);
    for (int pred = PFLEX_PRED_IN_SAMPLE; pred < PFLEX_PRED_N; pred++) {
      if (pred == PFLEX_PRED_IN_SAMPLE) continue; /* the held-out predictions: loo, loco, unseen */
      for (unsigned rd = 0; rd <= k; rd++) {
        if (rd)
          snprintf(label, sizeof label, "%s, round %u", pflex_study_pred_name(pred), rd);
        else
          snprintf(label, sizeof label, "%s, open loop", pflex_study_pred_name(pred));
        struct look look = pred_look[pred];
        look.marker = round_marker[rd * 3 / (k ? k : 1) < 4 ? rd * 3 / (k ? k : 1) : 3];
        look.dash = rd == 0 ? PFLEX_PLOT_DASHED : rd == k ? PFLEX_PLOT_SOLID : PFLEX_PLOT_DOTTED;
        add_series(f, sc, PFLEX_ALLOC_OPTIMAL, pred, rd, look, label);
      }
    }
  }
  size_t lines = f->ns - first;
  add_oracle(f, sc);
  return lines;
}

/* One panel per scenario for each row that has lines; returns the rows drawn. */
static int build_panels(struct fig8 *f, unsigned scenarios, const struct pflex_study_data *d) {
  int rows = 0;
  for (int row = 0; row < NROWS; row++) {
    if (row == ROW_ROUNDS && max_round(f) == 0) continue;
    size_t np0 = f->np, ns0 = f->ns;
    bool any = false;
    for (int sc = 0; sc < PFLEX_SCENARIO_N; sc++) {
      if (!(scenarios & (1u << sc))) continue;
      size_t first = f->ns;
      any |= row_series(f, row, sc, d) > 0;
      size_t k = f->np++;
      snprintf(f->titles[k], sizeof f->titles[k], "(%c) %s: %s", 'a' + rows,
               pflex_study_scenario_name(sc), row_title[row]);
      f->panels[k] = (struct pflex_plot_panel){.title = f->titles[k],
                                                     .xlabel = "cluster power cut (%)",
                                                     .ylabel = "throughput / oracle",
                                                     .xmin = NAN,
                                                     .xmax = NAN,
                                                     .ymin = NAN,
                                                     .ymax = NAN,
                                                     .series = &f->series[first],
                                                     .nseries = f->ns - first,
                                                     .legend_pos = PFLEX_PLOT_LEGEND_OUTSIDE_RIGHT,
                                                     .grid = true};
    }
    f->panels[f->np - 1].legend = true; /* one legend per row, right of its last panel */
    /* A row with nothing but the oracle is dropped (the first kept, so that
     * a study of the oracle alone still draws its line). */
    if (!any && (row != ROW_STRATEGIES)) {
      f->ns = ns0;
      f->np = np0;
      continue;
    }
    rows++;
  }
  return rows;
}

int pflex_study_fig8(const struct pflex_study_result *r, size_t n, const double *cuts, size_t ncuts,
                     unsigned scenarios, const struct pflex_study_data *d, const char *path) {
  struct fig8 *f = calloc(1, sizeof *f);
  if (!f) return -ENOMEM;
  *f = (struct fig8){.r = r, .n = n, .cuts = cuts, .ncuts = ncuts};
  f->xs = calloc(MAX_SERIES * (ncuts ? ncuts : 1), sizeof *f->xs);
  f->ys = calloc(MAX_SERIES * (ncuts ? ncuts : 1), sizeof *f->ys);
  int err = -ENOMEM;
  if (f->xs && f->ys) {
    int rows = build_panels(f, scenarios, d);
    int cols = rows ? (int)f->np / rows : 0;
    size_t most = 0; /* workloads per point: those where the cut is feasible */
    for (size_t i = 0; i < n; i++)
      if (r[i].workloads > most) most = r[i].workloads;
    char note[192];
    snprintf(note, sizeof note, "data: %s; each point a mean over up to %zu workloads",
             pflex_provenance_note(d->jobs.provenance), most);
    struct pflex_plot fig = {.title = "Throughput relative to the oracle, by cluster power cut",
                             .cols = cols,
                             .rows = rows,
                             .panels = f->panels,
                             .npanels = f->np,
                             .width_px = 640 * (cols ? cols : 1) + 330,
                             .height_px = 450 * (rows ? rows : 1) + 90,
                             .note = note,
                             .legend_width = 330.0 / (640 * (cols ? cols : 1) + 330)};
    err = rows ? pflex_plot_render(&fig, path) : -EINVAL;
  }
  free(f->xs);
  free(f->ys);
  free(f);
  return err;
}

/* Fig. 4: PFI by group, the runs' own and predicted, groups sorted by the
 * runs' PFI so that the predictions' misses stand out against a rising line;
 * the groups' names label the x axis. */
int pflex_study_fig4(const struct pflex_study_data *d, const char *path) {
  const struct pflex_jobset *js = &d->jobs;
  const struct pflex_study_predictions *pr = &d->pred;
  size_t n = js->n;
  const double *src[4];
  enum pflex_study_pred kind[4];
  size_t ns = 0;
  if (pr->unseen) {
    src[ns] = pr->unseen, kind[ns++] = PFLEX_PRED_UNSEEN;
  } else if (pr->in) {
    src[ns] = pr->in, kind[ns++] = PFLEX_PRED_IN_SAMPLE;
    src[ns] = pr->loo, kind[ns++] = PFLEX_PRED_LOO;
    src[ns] = pr->loco, kind[ns++] = PFLEX_PRED_LOCO;
  } else {
    src[ns] = pr->prior, kind[ns++] = PFLEX_PRED_PRIOR;
  }
  size_t *order = calloc(n ? n : 1, sizeof *order);
  double *x = calloc(n ? n : 1, sizeof *x), *y = calloc((n ? n : 1) * (ns + 1), sizeof *y);
  const char **ticks = calloc(n ? n : 1, sizeof *ticks);
  char labels[5][64];
  int err = -ENOMEM;
  if (!order || !x || !y || !ticks) goto out;
  if (n) gsl_sort_index(order, js->pfi_true, 1, n);
  struct pflex_plot_series se[5];
  for (size_t i = 0; i < n; i++) {
    x[i] = (double)(i + 1);
    ticks[i] = js->names[order[i]];
    y[i] = js->pfi_true[order[i]];
  }
  /* The runs' PFI: "measured" only when the runs are. */
  snprintf(labels[0], sizeof labels[0], "PFI of the runs (%s)",
           pflex_provenance_name(js->provenance));
  se[0] = (struct pflex_plot_series){.label = labels[0], .x = x, .y = y, .n = n,
                                     .style = PFLEX_PLOT_LINE_POINTS, .color = 12, .width = 1.2,
                                     .marker = "\u25A0"};
  for (size_t k = 0; k < ns; k++) {
    for (size_t i = 0; i < n; i++) y[(k + 1) * n + i] = src[k][order[i]];
    snprintf(labels[k + 1], sizeof labels[k + 1], "predicted, %s", pflex_study_pred_name(kind[k]));
    se[k + 1] = (struct pflex_plot_series){.label = labels[k + 1], .x = x, .y = &y[(k + 1) * n],
                                           .n = n, .style = PFLEX_PLOT_POINTS,
                                           .color = pred_look[kind[k]].color,
                                           .marker = pred_look[kind[k]].marker};
  }
  struct pflex_plot_panel panel = {.title = "sweep groups, sorted by the PFI of their runs",
                                   .ylabel = "PFI",
                                   .xmin = 0.3,
                                   .xmax = (double)n + 0.7,
                                   .ymin = NAN,
                                   .ymax = NAN,
                                   .series = se,
                                   .nseries = ns + 1,
                                   .legend = true,
                                   .grid = true,
                                   .xticks = ticks,
                                   .nxticks = n,
                                   .bottom = 0.46};
  char note[160];
  snprintf(note, sizeof note, "data: %s", pflex_provenance_note(js->provenance));
  struct pflex_plot fig = {.title = "PFI by sweep group: the runs' PFI and its predictions",
                           .panels = &panel, .npanels = 1, .width_px = 1200, .height_px = 1050,
                           .note = note};
  err = pflex_plot_render(&fig, path);
out:
  free(order);
  free(x);
  free(y);
  free(ticks);
  return err;
}

int pflex_study_figures(const char *dir, const struct pflex_study_result *r, size_t n,
                        const double *cuts, size_t ncuts, unsigned scenarios,
                        const struct pflex_study_data *d, char *failed_path, size_t size) {
  static const char *const ext[] = {"svg", "png"};
  for (size_t e = 0; e < 2; e++) {
    snprintf(failed_path, size, "%s/fig8.%s", dir, ext[e]);
    int err = pflex_study_fig8(r, n, cuts, ncuts, scenarios, d, failed_path);
    if (!err) {
      snprintf(failed_path, size, "%s/fig4.%s", dir, ext[e]);
      err = pflex_study_fig4(d, failed_path);
    }
    if (err) return err;
  }
  if (size) failed_path[0] = '\0';
  return 0;
}
