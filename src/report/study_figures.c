/* The study's figures (include/pflex/study_figures.h): Fig. 8 and Fig. 4. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <gsl/gsl_sort.h>

#include "pflex/plot.h"
#include "pflex/study_figures.h"

/* Fig. 8: throughput relative to the oracle by cut; one panel per scenario,
 * one line per strategy and prediction (open loop). */
int pflex_study_fig8(const struct pflex_study_result *r, size_t n, const double *cuts, size_t ncuts,
                     unsigned scenarios, const char *path) {
  struct pflex_plot_panel panels[PFLEX_SCENARIO_N];
  struct pflex_plot_series *series = calloc(n, sizeof *series);
  double *xs = calloc(n * ncuts, sizeof *xs), *ys = calloc(n * ncuts, sizeof *ys);
  char(*labels)[48] = calloc(n, sizeof *labels);
  int err = -ENOMEM;
  if (!series || !xs || !ys || !labels) goto out;
  size_t np = 0, ns = 0;
  for (int sc = 0; sc < PFLEX_SCENARIO_N; sc++) {
    if (!(scenarios & (1u << sc))) continue;
    size_t first = ns;
    for (size_t i = 0; i < n; i++) {
      if ((int)r[i].scenario != sc || r[i].round || fabs(r[i].cut - cuts[0]) > 1e-9) continue;
      struct pflex_plot_series *se = &series[ns];
      if (r[i].strategy == PFLEX_ALLOC_PFI || r[i].strategy == PFLEX_ALLOC_OPTIMAL)
        snprintf(labels[ns], sizeof labels[ns], "%s %s", pflex_alloc_strategy_name(r[i].strategy),
                 pflex_study_pred_name(r[i].prediction));
      else
        snprintf(labels[ns], sizeof labels[ns], "%s", pflex_alloc_strategy_name(r[i].strategy));
      for (size_t c = 0; c < ncuts; c++) {
        const struct pflex_study_result *x =
            pflex_study_find(r, n, sc, r[i].strategy, r[i].prediction, 0, cuts[c]);
        xs[ns * ncuts + c] = 100 * cuts[c];
        ys[ns * ncuts + c] = x ? 1 - x->loss_vs_oracle : NAN;
      }
      *se = (struct pflex_plot_series){.label = labels[ns],
                                       .x = &xs[ns * ncuts],
                                       .y = &ys[ns * ncuts],
                                       .n = ncuts,
                                       .style = PFLEX_PLOT_LINE_POINTS,
                                       .color = -1,
                                       .dash = r[i].prediction == PFLEX_PRED_TRUE ||
                                                       r[i].strategy == PFLEX_ALLOC_EQUAL
                                                   ? PFLEX_PLOT_SOLID
                                                   : PFLEX_PLOT_DASHED};
      ns++;
    }
    panels[np++] = (struct pflex_plot_panel){.title = pflex_study_scenario_name(sc),
                                             .xlabel = "cluster power cut (%)",
                                             .ylabel = "throughput / oracle (from 0.8)",
                                             .xmin = NAN,
                                             .xmax = NAN,
                                             .ymin = 0.8,
                                             .ymax = 1.005,
                                             .series = &series[first],
                                             .nseries = ns - first,
                                             .grid = true};
  }
  /* One legend, right of the last panel: every panel has the same lines, and
   * a legend inside would hide the gentle cuts where the lines are close. */
  if (np) {
    panels[np - 1].legend = true;
    panels[np - 1].legend_pos = PFLEX_PLOT_LEGEND_OUTSIDE_RIGHT;
  }
  struct pflex_plot fig = {
      .panels = panels, .npanels = np, .width_px = 900 * (int)np + 400, .height_px = 800};
  err = pflex_plot_render(&fig, path);
out:
  free(series);
  free(xs);
  free(ys);
  free(labels);
  return err;
}

/* Fig. 4: PFI by group, measured and predicted, groups sorted by measured PFI
 * so that the predictions' misses stand out against a rising line. */
int pflex_study_fig4(const struct pflex_study_data *d, const char *path) {
  const struct pflex_jobset *js = &d->jobs;
  const struct pflex_study_predictions *pr = &d->pred;
  size_t n = js->n;
  const double *src[4];
  const char *names[4];
  size_t ns = 0;
  src[ns] = js->pfi_true, names[ns++] = "measured";
  if (pr->unseen) {
    src[ns] = pr->unseen, names[ns++] = "unseen";
  } else if (pr->in) {
    src[ns] = pr->in, names[ns++] = "in-sample";
    src[ns] = pr->loo, names[ns++] = "loo";
    src[ns] = pr->loco, names[ns++] = "loco";
  } else {
    src[ns] = pr->prior, names[ns++] = "prior (loo)";
  }
  size_t *order = calloc(n ? n : 1, sizeof *order);
  double *x = calloc(n ? n : 1, sizeof *x), *y = calloc((n ? n : 1) * ns, sizeof *y);
  int err = -ENOMEM;
  if (!order || !x || !y) goto out;
  if (n) gsl_sort_index(order, js->pfi_true, 1, n);
  struct pflex_plot_series se[4];
  for (size_t k = 0; k < ns; k++) {
    for (size_t i = 0; i < n; i++) {
      x[i] = (double)(i + 1);
      y[k * n + i] = src[k][order[i]];
    }
    se[k] = (struct pflex_plot_series){.label = names[k],
                                       .x = x,
                                       .y = &y[k * n],
                                       .n = n,
                                       .style = k == 0 ? PFLEX_PLOT_LINE_POINTS : PFLEX_PLOT_POINTS,
                                       .color = -1};
  }
  struct pflex_plot_panel panel = {.title = "PFI by sweep group, sorted by measured PFI",
                                   .xlabel = "group (rank of measured PFI)",
                                   .ylabel = "PFI",
                                   .xmin = 0,
                                   .xmax = (double)n + 1,
                                   .ymin = NAN,
                                   .ymax = NAN,
                                   .series = se,
                                   .nseries = ns,
                                   .legend = true,
                                   .grid = true};
  struct pflex_plot fig = {.panels = &panel, .npanels = 1, .width_px = 900, .height_px = 600};
  err = pflex_plot_render(&fig, path);
out:
  free(order);
  free(x);
  free(y);
  return err;
}

int pflex_study_figures(const char *dir, const struct pflex_study_result *r, size_t n,
                        const double *cuts, size_t ncuts, unsigned scenarios,
                        const struct pflex_study_data *d, char *failed_path, size_t size) {
  static const char *const ext[] = {"svg", "png"};
  for (size_t e = 0; e < 2; e++) {
    snprintf(failed_path, size, "%s/fig8.%s", dir, ext[e]);
    int err = pflex_study_fig8(r, n, cuts, ncuts, scenarios, failed_path);
    if (!err) {
      snprintf(failed_path, size, "%s/fig4.%s", dir, ext[e]);
      err = pflex_study_fig4(d, failed_path);
    }
    if (err) return err;
  }
  if (size) failed_path[0] = '\0';
  return 0;
}
