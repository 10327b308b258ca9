/* The paper's Fig. 3 (report layer): every sweep group's normalized
 * power-throughput curve, each run's P/Pmax and T/Tmax relative to its group's
 * uncapped run, in four panels by arch x task (dense/MoE x pretraining/LoRA
 * fine-tuning), each with the diagonal P/Pmax = T/Tmax. */
#ifndef PFLEX_CURVES_FIGURE_H
#define PFLEX_CURVES_FIGURE_H

#include "pflex/plot.h"
#include "pflex/runs.h"

#define PFLEX_CURVES_PANELS 4

/* A built figure: plot is ready for pflex_plot_render; the rest is its storage. */
struct pflex_curves_figure {
  struct pflex_plot plot;
  struct pflex_plot_panel panels[PFLEX_CURVES_PANELS];
  char titles[PFLEX_CURVES_PANELS][96]; /* "Dense pretraining (N groups)" */
  size_t groups[PFLEX_CURVES_PANELS];   /* sweep groups drawn in each panel */
  struct pflex_plot_series *series;     /* per panel: the diagonal, then one per group */
  double *x, *y;                        /* the normalized points of every series */
};

/* Builds the figure of set's sweep groups (pflex_runset_groups of set) under
 * title (may be NULL: none). 0 or -ENOMEM; release with
 * pflex_curves_figure_release either way. */
int pflex_curves_figure_build(const struct pflex_runset *set, const struct pflex_group *groups,
                              size_t ng, const char *title, struct pflex_curves_figure *ret);
void pflex_curves_figure_release(struct pflex_curves_figure *f);

#endif
