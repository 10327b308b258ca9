/* The normalized-curve figure (include/pflex/curves_figure.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pflex/curves_figure.h"

/* Panels: arch x task, as the paper's Fig. 3. */
static const struct {
  enum pflex_arch arch;
  enum pflex_task task;
  const char *title;
} kinds[PFLEX_CURVES_PANELS] = {{PFLEX_ARCH_DENSE, PFLEX_TASK_PT, "Dense pretraining"},
                                {PFLEX_ARCH_DENSE, PFLEX_TASK_FT, "Dense LoRA fine-tuning"},
                                {PFLEX_ARCH_MOE, PFLEX_TASK_PT, "MoE pretraining"},
                                {PFLEX_ARCH_MOE, PFLEX_TASK_FT, "MoE LoRA fine-tuning"}};

static const double diagonal[2] = {0, 1};

/* One group's runs relative to its uncapped run, into x and y (g->n points each). */
static struct pflex_plot_series group_series(const struct pflex_runset *set,
                                             const struct pflex_group *g, size_t index, double *x,
                                             double *y) {
  const struct pflex_run *top = &set->runs[g->uncapped];
  for (size_t i = 0; i < g->n; i++) {
    const struct pflex_run *r = &set->runs[g->runs[i]];
    x[i] = r->power_w / top->power_w;
    y[i] = r->tput / top->tput;
  }
  return (struct pflex_plot_series){.x = x,
                                    .y = y,
                                    .n = g->n,
                                    .style = PFLEX_PLOT_LINE_POINTS,
                                    .color = (int)(index % 7),
                                    .width = 1.2};
}

/* Panel k: the diagonal and the groups of its arch x task, from series[*ns]. */
static void build_panel(struct pflex_curves_figure *f, int k, const struct pflex_runset *set,
                        const struct pflex_group *groups, size_t ng, size_t *ns, size_t *used) {
  size_t first = *ns, count = 0;
  f->series[(*ns)++] = (struct pflex_plot_series){.label = "P/Pmax = T/Tmax",
                                                  .x = diagonal,
                                                  .y = diagonal,
                                                  .n = 2,
                                                  .color = 7,
                                                  .dash = PFLEX_PLOT_DASHED,
                                                  .width = 1.0};
  for (size_t g = 0; g < ng; g++) {
    const struct pflex_run *top = &set->runs[groups[g].uncapped];
    if (top->arch != kinds[k].arch || top->task != kinds[k].task) continue;
    f->series[(*ns)++] = group_series(set, &groups[g], count++, f->x + *used, f->y + *used);
    *used += groups[g].n;
  }
  f->groups[k] = count;
  snprintf(f->titles[k], sizeof f->titles[k], "%s (%zu groups)", kinds[k].title, count);
  f->panels[k] = (struct pflex_plot_panel){.title = f->titles[k],
                                           .xlabel = "P / P#dmax#u",
                                           .ylabel = "T / T#dmax#u",
                                           .xmin = 0.2,
                                           .xmax = 1.02,
                                           .ymin = 0.2,
                                           .ymax = 1.02,
                                           .series = f->series + first,
                                           .nseries = *ns - first,
                                           .legend = true,
                                           /* below the diagonal, where no curve goes */
                                           .legend_pos = PFLEX_PLOT_LEGEND_BOTTOM_RIGHT,
                                           .grid = true};
}

int pflex_curves_figure_build(const struct pflex_runset *set, const struct pflex_group *groups,
                              size_t ng, const char *title, struct pflex_curves_figure *ret) {
  memset(ret, 0, sizeof *ret);
  ret->series = calloc(ng + PFLEX_CURVES_PANELS, sizeof *ret->series);
  ret->x = calloc(set->n + 8, sizeof *ret->x);
  ret->y = calloc(set->n + 8, sizeof *ret->y);
  if (!ret->series || !ret->x || !ret->y) return -ENOMEM;
  size_t ns = 0, used = 0;
  for (int k = 0; k < PFLEX_CURVES_PANELS; k++)
    build_panel(ret, k, set, groups, ng, &ns, &used);
  ret->plot = (struct pflex_plot){.title = title,
                                  .cols = 2,
                                  .rows = 2,
                                  .panels = ret->panels,
                                  .npanels = PFLEX_CURVES_PANELS,
                                  .width_px = 1200,
                                  .height_px = 1000};
  return 0;
}

void pflex_curves_figure_release(struct pflex_curves_figure *f) {
  if (!f) return;
  free(f->series);
  free(f->x);
  free(f->y);
  memset(f, 0, sizeof *f);
}
