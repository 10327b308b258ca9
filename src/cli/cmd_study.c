/* `pflex study`: the allocation study of paper.md section 6 on a runs file
 * (docs/study.md): the sweep groups' measured curves, PFI predictions from the
 * section-5 model in sample, leave-one-out and leave-one-cluster-out, the
 * study engine (core/study.c), and tables or JSON of the results. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <jansson.h>

#include "cli/commands.h"
#include "cli/util.h"
#include "pflex/features.h"
#include "pflex/jobs.h"
#include "pflex/plot.h"
#include "pflex/predict.h"
#include "pflex/study.h"

#define DEFAULT_RUNS "the built-in reference set"

#define USAGE                                                                                      \
  "pflex study [RUNS] [options]\n"                                                                 \
  "  RUNS               runs CSV (default " DEFAULT_RUNS ")\n"                                     \
  "  --set NAME         use the runs of this set (default: headline when the file has it,\n"       \
  "                     else every run)\n"                                                         \
  "  --scenarios LIST   random,production (default both; production needs a task column)\n"        \
  "  --strategies LIST  equal,moe-ft,dram,pfi,optimal,oracle (default all)\n"                      \
  "  --cuts LIST        cuts in percent, a list or a:b:step range (default 0:40:5)\n"              \
  "  --workloads N      workloads per scenario (default 500)\n"                                    \
  "  --jobs N           jobs per workload (default 100)\n"                                         \
  "  --rounds K         closed-loop rounds after the first allocation (default 0)\n"               \
  "  --noise X          closed loop: relative noise of an observed throughput (default 0.005)\n"   \
  "  --seed S           random seed (default 1)\n"                                                 \
  "  --features LIST    predictor features (default dram_copy, the paper's model (i))\n"           \
  "  --model KIND       ols (default) or ridge\n"                                                  \
  "  --loco SCHEME      arch-task (default) or pooled-dense\n"                                     \
  "  --shape KIND       how optimal turns a PFI into a curve: data (default: the shape of other\n" \
  "                     groups' curves of similar PFI, from the prediction's own CV fold) or\n"    \
  "                     family (the parametric family's member with that PFI)\n"                   \
  "  --bandwidth X      data shape: PFI kernel width (default 0.25)\n"                             \
  "  --train RUNS       fit the model on this runs file instead (its headline set when it has\n"   \
  "                     one) and predict every job of RUNS, unseen in fitting ('unseen')\n"        \
  "  --unit UNIT        throughput column: tokens, samples, steps, step-time\n"                    \
  "  --out DIR          also write the figures there: fig8.svg/.png (throughput relative to\n"     \
  "                     oracle by cut, per strategy and scenario) and fig4.svg/.png (PFI by\n"     \
  "                     group: measured and predicted)\n"                                          \
  "  --json             print JSON with every number\n"                                            \
  "  -h, --help         print this help"

/* A runset holding only the runs of one set (all columns kept). */
static int filter_set(const struct pflex_runset *in, const char *name, struct pflex_runset *out) {
  pflex_runset_init(out);
  int err = 0;
  for (size_t k = 0; !err && k < in->nextra; k++)
    err = pflex_runset_add_column(out, in->extra_names[k], NULL);
  for (size_t i = 0; !err && i < in->n; i++)
    if (!name || (in->runs[i].set && strcmp(in->runs[i].set, name) == 0))
      err = pflex_runset_append(out, &in->runs[i]);
  out->unit = in->unit;
  if (err) pflex_runset_release(out);
  return err;
}

static bool has_set(const struct pflex_runset *s, const char *name) {
  for (size_t i = 0; i < s->n; i++)
    if (s->runs[i].set && strcmp(s->runs[i].set, name) == 0) return true;
  return false;
}

/* Splits a comma-separated list of names into a bitmask by parse(). */
static int parse_mask(const char *s, int (*parse)(const char *, unsigned *), unsigned *ret) {
  char *copy = strdup(s), *save = NULL;
  if (!copy) return -ENOMEM;
  unsigned mask = 0;
  int err = 0;
  for (char *t = strtok_r(copy, ",", &save); t && !err; t = strtok_r(NULL, ",", &save)) {
    unsigned bit;
    if ((err = parse(t, &bit))) break;
    mask |= 1u << bit;
  }
  free(copy);
  if (!err && !mask) err = -EINVAL;
  if (!err) *ret = mask;
  return err;
}

static int parse_scenario(const char *s, unsigned *ret) {
  for (unsigned i = 0; i < PFLEX_SCENARIO_N; i++)
    if (strcmp(s, pflex_study_scenario_name(i)) == 0) {
      *ret = i;
      return 0;
    }
  return -EINVAL;
}

static int parse_strategy(const char *s, unsigned *ret) {
  enum pflex_alloc_strategy st;
  int err = pflex_alloc_strategy_parse(s, &st);
  if (!err) *ret = (unsigned)st;
  return err;
}

/* Predictions per group (in jobset order) from the section-5 model. */
struct preds {
  double *in, *loo, *loco; /* NULL when the model could not be fitted (prior instead) */
  double *prior;           /* LOO predictions of the population prior, when in is NULL */
  double *unseen;          /* --train: predictions of a model fitted on other runs */
  size_t unseen_prior;     /* of those, jobs that lacked a feature: the prior's value */
  size_t replaced;         /* LOCO predictions not computable, replaced by the prior */
  struct pflex_model model;
  bool fitted;
  struct pflex_jobset train; /* --train: the training file's groups, whose curves shape the
                                unseen jobs' predicted curves */
  const struct pflex_curve **train_curves;
  size_t ntrain;
};

static int predictions(const struct pflex_runset *runs, const char *set_filter, const char *spec,
                       enum pflex_model_kind kind, enum pflex_loco loco,
                       const struct pflex_jobset *js, struct preds *p) {
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  struct pflex_featlist none, feats;
  pflex_featlist_init(&none);
  pflex_featlist_init(&feats);
  struct pflex_dataset groups, d;
  pflex_dataset_init(&d);
  int err = pflex_dataset_build(runs, set_filter, &none, NULL, true, &groups, &diag);
  if (err) {
    cli_error_diag("cannot compute the groups' PFI:", &diag, err);
    return err;
  }
  bool prior = false;
  err = pflex_featlist_parse(spec, runs, groups.uncapped, groups.n, &feats, &diag);
  if (!err) err = pflex_dataset_build(runs, set_filter, &feats, NULL, true, &d, &diag);
  if (err == -ENOENT || err == -ENODATA) {
    /* No telemetry for the features: the population prior, marked so. */
    fprintf(stderr,
            "note: the runs lack the features '%s' (%s): predictions fall back to the "
            "population prior, marked 'prior'\n",
            spec, diag.column);
    pflex_dataset_release(&d);
    pflex_dataset_init(&d);
    err = pflex_dataset_build(runs, set_filter, &none, NULL, true, &d, &diag);
    kind = PFLEX_MODEL_PRIOR;
    prior = true;
  }
  pflex_featlist_release(&feats);
  pflex_dataset_release(&groups);
  if (err) {
    cli_error_diag("cannot build the predictor's data set:", &diag, err);
    pflex_dataset_release(&d);
    return err;
  }
  struct pflex_fit_opts fo = {.kind = kind, .lambda = -1};
  pflex_model_init(&p->model);
  err = pflex_model_fit(&d, &fo, loco, &p->model);
  pflex_dataset_release(&d);
  if (err) {
    cli_error("cannot fit the PFI model: %s", pflex_strerror(err));
    return err;
  }
  p->fitted = true;
  size_t n = js->n;
  double *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b), *c = calloc(n, sizeof *c);
  if (!a || !b || !c) {
    free(a);
    free(b);
    free(c);
    return -ENOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    size_t k;
    for (k = 0; k < p->model.n; k++)
      if (strcmp(p->model.groups[k].group, js->names[i]) == 0) break;
    if (k == p->model.n) {
      cli_error("group '%s' has no PFI (no usable capped run)", js->names[i]);
      free(a);
      free(b);
      free(c);
      return -PFLEX_E_NOPOINTS;
    }
    const struct pflex_model_group *g = &p->model.groups[k];
    double pr = pflex_model_prior(&p->model, js->jobs[i].arch, js->jobs[i].task);
    a[i] = isfinite(g->fitted) ? g->fitted : pr;
    b[i] = isfinite(g->loo) ? g->loo : pr;
    c[i] = g->loco;
    if (!isfinite(c[i])) {
      c[i] = pr;
      p->replaced++;
    }
  }
  if (prior) {
    p->prior = b;
    free(a);
    free(c);
  } else {
    p->in = a;
    p->loo = b;
    p->loco = c;
  }
  return 0;
}

/* --train: the model is fitted on the groups of another runs file (its
 * headline set when it has one) and predicts every job of the study from its
 * uncapped run; a job whose run lacks a feature gets the prior's value. */
static int predictions_unseen(const char *train_path, const struct pflex_runs_read_opts *ro,
                              const char *spec, enum pflex_model_kind kind, enum pflex_loco loco,
                              const struct pflex_runset *runs, const struct pflex_jobset *js,
                              struct preds *p) {
  struct pflex_runset train;
  pflex_runset_init(&train);
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  struct pflex_featlist none, feats;
  pflex_featlist_init(&none);
  pflex_featlist_init(&feats);
  struct pflex_dataset groups, d;
  pflex_dataset_init(&groups);
  pflex_dataset_init(&d);
  struct pflex_group *g = NULL;
  size_t ng = 0;
  int err = cli_load_runs(train_path, ro, &train);
  if (err) return err;
  const char *filter = NULL;
  for (size_t i = 0; i < train.n; i++)
    if (train.runs[i].set && strcmp(train.runs[i].set, "headline") == 0) filter = "headline";
  err = pflex_dataset_build(&train, filter, &none, NULL, true, &groups, &diag);
  if (!err) err = pflex_featlist_parse(spec, &train, groups.uncapped, groups.n, &feats, &diag);
  if (!err) err = pflex_dataset_build(&train, filter, &feats, NULL, true, &d, &diag);
  if (err) {
    cli_error_diag("cannot build the training data set from", &diag, err);
    goto out;
  }
  struct pflex_fit_opts fo = {.kind = kind, .lambda = -1};
  pflex_model_init(&p->model);
  p->fitted = true;
  if ((err = pflex_model_fit(&d, &fo, loco, &p->model))) {
    cli_error("cannot fit the PFI model on '%s': %s", train_path, pflex_strerror(err));
    goto out;
  }
  /* The training groups' measured curves shape the unseen jobs' curves. */
  struct pflex_runset tr;
  if ((err = filter_set(&train, filter, &tr))) goto out;
  err = pflex_jobs_from_runs(&tr, &p->train, &diag);
  pflex_runset_release(&tr);
  if (err) {
    cli_error_diag("cannot use the training runs", &diag, err);
    goto out;
  }
  err = -ENOMEM;
  if (!(p->train_curves = calloc(p->train.n ? p->train.n : 1, sizeof *p->train_curves))) goto out;
  for (size_t i = 0; i < p->train.n; i++)
    if (p->train.curves[i]) p->train_curves[p->ntrain++] = p->train.curves[i];
  if (!(p->unseen = calloc(js->n ? js->n : 1, sizeof *p->unseen))) goto out;
  if ((err = pflex_runset_groups(runs, &g, &ng))) goto out;
  for (size_t i = 0; i < js->n; i++) {
    size_t k;
    for (k = 0; k < ng; k++)
      if (strcmp(g[k].name, js->names[i]) == 0) break;
    bool was_prior = false;
    err = k < ng ? pflex_model_predict_run(&p->model, runs, g[k].uncapped, true, &p->unseen[i],
                                           &was_prior, &diag)
                 : -ENOENT;
    if (err) {
      cli_error("cannot predict group '%s': %s", js->names[i], pflex_strerror(err));
      goto out;
    }
    if (was_prior) p->unseen_prior++;
  }
  err = 0;
out:
  pflex_groups_free(g, ng);
  pflex_featlist_release(&feats);
  pflex_dataset_release(&groups);
  pflex_dataset_release(&d);
  pflex_runset_release(&train);
  return err;
}

static void preds_release(struct preds *p) {
  free(p->train_curves);
  pflex_jobset_release(&p->train);
  free(p->unseen);
  free(p->in);
  free(p->loo);
  free(p->loco);
  free(p->prior);
  if (p->fitted) pflex_model_release(&p->model);
}

static const struct pflex_study_result *find(const struct pflex_study_result *r, size_t n, int sc,
                                             int st, int pred, unsigned round, double cut) {
  for (size_t i = 0; i < n; i++)
    if ((int)r[i].scenario == sc && (int)r[i].strategy == st && (int)r[i].prediction == pred &&
        r[i].round == round && fabs(r[i].cut - cut) < 1e-9)
      return &r[i];
  return NULL;
}

static void print_tables(const struct pflex_study_result *r, size_t n, const double *cuts,
                         size_t ncuts, unsigned scenarios, bool relative) {
  static const char *const metric[] = {"total throughput per workload", "loss against oracle (%)",
                                       "gap recovered (equal = 0%, oracle = 100%)",
                                       "gain per job over equal"};
  for (int sc = 0; sc < PFLEX_SCENARIO_N; sc++) {
    if (!(scenarios & (1u << sc))) continue;
    for (int m = 0; m < 4; m++) {
      printf("\n%s: %s%s\n", pflex_study_scenario_name(sc), metric[m],
             (m == 0 || m == 3) ? (relative ? " (relative units)" : " (tokens/s)") : "");
      printf("%-26s", "strategy / cut");
      for (size_t c = 0; c < ncuts; c++)
        printf(" %8.0f%%", 100 * cuts[c]);
      printf("\n");
      for (size_t i = 0; i < n; i++) {
        if ((int)r[i].scenario != sc || fabs(r[i].cut - cuts[0]) > 1e-9) continue;
        char label[64];
        if (r[i].round)
          snprintf(label, sizeof label, "%s %s r%u", pflex_alloc_strategy_name(r[i].strategy),
                   pflex_study_pred_name(r[i].prediction), r[i].round);
        else if (r[i].strategy == PFLEX_ALLOC_PFI || r[i].strategy == PFLEX_ALLOC_OPTIMAL)
          snprintf(label, sizeof label, "%s %s", pflex_alloc_strategy_name(r[i].strategy),
                   pflex_study_pred_name(r[i].prediction));
        else
          snprintf(label, sizeof label, "%s", pflex_alloc_strategy_name(r[i].strategy));
        printf("%-26s", label);
        for (size_t c = 0; c < ncuts; c++) {
          const struct pflex_study_result *x =
              find(r, n, sc, r[i].strategy, r[i].prediction, r[i].round, cuts[c]);
          double v = !x       ? NAN
                     : m == 0 ? x->tokens_per_s
                     : m == 1 ? 100 * x->loss_vs_oracle
                     : m == 2 ? 100 * x->gap_recovered
                              : x->gain_per_job;
          if (isfinite(v))
            printf(m == 0 ? " %9.0f" : " %9.1f", v);
          else
            printf(" %9s", "-");
        }
        printf("\n");
      }
    }
  }
}

/* Fig. 8: throughput relative to the oracle by cut; one panel per scenario,
 * one line per strategy and prediction (open loop). */
static int fig8(const struct pflex_study_result *r, size_t n, const double *cuts, size_t ncuts,
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
            find(r, n, sc, r[i].strategy, r[i].prediction, 0, cuts[c]);
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
static int fig4(const struct pflex_jobset *js, const struct preds *pr, const char *path) {
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

static int figures(const char *dir, const struct pflex_study_result *r, size_t n,
                   const double *cuts, size_t ncuts, unsigned scenarios,
                   const struct pflex_jobset *js, const struct preds *pr) {
  static const char *const ext[] = {"svg", "png"};
  char path[4096];
  for (size_t e = 0; e < 2; e++) {
    snprintf(path, sizeof path, "%s/fig8.%s", dir, ext[e]);
    int err = fig8(r, n, cuts, ncuts, scenarios, path);
    if (!err) {
      snprintf(path, sizeof path, "%s/fig4.%s", dir, ext[e]);
      err = fig4(js, pr, path);
    }
    if (err) {
      cli_error("cannot write '%s': %s", path, pflex_strerror(err));
      return err;
    }
  }
  return 0;
}

static json_t *num(double v) {
  return isfinite(v) ? json_real(v) : json_null();
}

static int run(int argc, char **argv) {
  enum {
    O_SET = 256,
    O_SCEN,
    O_STRAT,
    O_CUTS,
    O_WL,
    O_JOBS,
    O_ROUNDS,
    O_NOISE,
    O_SEED,
    O_FEAT,
    O_MODEL,
    O_LOCO,
    O_UNIT,
    O_JSON,
    O_OUT,
    O_TRAIN,
    O_SHAPE,
    O_BW
  };
  static const struct option longopts[] = {{"set", required_argument, NULL, O_SET},
                                           {"scenarios", required_argument, NULL, O_SCEN},
                                           {"strategies", required_argument, NULL, O_STRAT},
                                           {"cuts", required_argument, NULL, O_CUTS},
                                           {"workloads", required_argument, NULL, O_WL},
                                           {"jobs", required_argument, NULL, O_JOBS},
                                           {"rounds", required_argument, NULL, O_ROUNDS},
                                           {"noise", required_argument, NULL, O_NOISE},
                                           {"seed", required_argument, NULL, O_SEED},
                                           {"features", required_argument, NULL, O_FEAT},
                                           {"model", required_argument, NULL, O_MODEL},
                                           {"loco", required_argument, NULL, O_LOCO},
                                           {"unit", required_argument, NULL, O_UNIT},
                                           {"json", no_argument, NULL, O_JSON},
                                           {"out", required_argument, NULL, O_OUT},
                                           {"train", required_argument, NULL, O_TRAIN},
                                           {"shape", required_argument, NULL, O_SHAPE},
                                           {"bandwidth", required_argument, NULL, O_BW},
                                           {NULL, 0, NULL, 0}};
  struct pflex_study_opts so;
  pflex_study_opts_init(&so);
  const char *set_name = NULL, *features = "dram_copy", *unit = NULL, *outdir = NULL, *train = NULL;
  enum pflex_model_kind kind = PFLEX_MODEL_OLS;
  enum pflex_loco loco = PFLEX_LOCO_ARCH_TASK;
  double *cuts = NULL;
  size_t ncuts = 0;
  bool json = false;
  int c, status = PFLEX_EXIT_USAGE;
  char *end;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    unsigned long long v = 0;
    if (c == O_WL || c == O_JOBS || c == O_ROUNDS || c == O_SEED) {
      char opt[32];
      snprintf(opt, sizeof opt, "--%s", longopts[c - O_SET].name);
      unsigned long long lo = c == O_WL || c == O_JOBS ? 1 : 0;
      if (cli_parse_count(opt, optarg, lo, c == O_ROUNDS ? 100 : 100000000ull, &v)) goto out;
    }
    switch (c) {
    case O_SET: set_name = optarg; break;
    case O_SCEN:
      if (parse_mask(optarg, parse_scenario, &so.scenarios)) {
        cli_error("--scenarios: '%s' is not a list of random, production", optarg);
        goto out;
      }
      break;
    case O_STRAT:
      if (parse_mask(optarg, parse_strategy, &so.strategies)) {
        cli_error("--strategies: '%s' is not a list of equal, moe-ft, dram, pfi, optimal, oracle",
                  optarg);
        goto out;
      }
      break;
    case O_CUTS:
      free(cuts);
      cuts = NULL;
      if (cli_parse_list(optarg, &cuts, &ncuts) || ncuts == 0) {
        cli_error("--cuts: '%s' is not a list of percentages", optarg);
        goto out;
      }
      for (size_t i = 0; i < ncuts; i++) {
        if (!(cuts[i] >= 0 && cuts[i] <= 100)) {
          cli_error("--cuts: %g is not between 0 and 100", cuts[i]);
          goto out;
        }
        cuts[i] /= 100;
      }
      break;
    case O_WL: so.workloads = (size_t)v; break;
    case O_JOBS: so.jobs = (size_t)v; break;
    case O_ROUNDS: so.rounds = (unsigned)v; break;
    case O_SEED: so.seed = (unsigned long)v; break;
    case O_NOISE:
      so.noise = strtod(optarg, &end);
      if (end == optarg || *end || !(so.noise >= 0 && so.noise < 1)) {
        cli_error("--noise: '%s' is not a relative noise in [0, 1)", optarg);
        goto out;
      }
      break;
    case O_FEAT: features = optarg; break;
    case O_MODEL:
      if (pflex_model_kind_parse(optarg, &kind) || kind == PFLEX_MODEL_PRIOR) {
        cli_error("--model: '%s' is not ols or ridge", optarg);
        goto out;
      }
      break;
    case O_LOCO:
      if (pflex_loco_parse(optarg, &loco)) {
        cli_error("--loco: '%s' is not arch-task or pooled-dense", optarg);
        goto out;
      }
      break;
    case O_UNIT: unit = optarg; break;
    case O_JSON: json = true; break;
    case O_OUT: outdir = optarg; break;
    case O_TRAIN: train = optarg; break;
    case O_SHAPE:
      if (strcmp(optarg, "data") == 0)
        so.shape = PFLEX_STUDY_SHAPE_DATA;
      else if (strcmp(optarg, "family") == 0)
        so.shape = PFLEX_STUDY_SHAPE_FAMILY;
      else {
        cli_error("--shape: '%s' is not data or family", optarg);
        goto out;
      }
      break;
    case O_BW:
      so.bandwidth = strtod(optarg, &end);
      if (end == optarg || *end || !(so.bandwidth > 0) || !isfinite(so.bandwidth)) {
        cli_error("--bandwidth: '%s' is not a positive number", optarg);
        goto out;
      }
      break;
    default:
      cli_error("unknown or incomplete option '%s'; see 'pflex help study'", argv[optind - 1]);
      goto out;
    }
  }
  if (optind < argc - 1) {
    cli_error("expected at most one RUNS file; see 'pflex help study'");
    goto out;
  }
  if (cuts) {
    so.cuts = cuts;
    so.ncuts = ncuts;
  }
  const char *path = optind < argc ? argv[optind] : cli_reference_runs();
  struct pflex_runs_read_opts ro = {0};
  if (unit && cli_parse_unit(unit, &ro.unit)) {
    cli_error("--unit: unknown unit '%s' (tokens, samples, steps, step-time)", unit);
    goto out;
  }
  status = PFLEX_EXIT_FAIL;
  struct pflex_runset all, runs;
  pflex_runset_init(&all);
  pflex_runset_init(&runs);
  struct pflex_jobset js;
  pflex_jobset_init(&js);
  struct preds pr = {0};
  struct pflex_study_group *groups = NULL;
  struct pflex_study_result *res = NULL;
  size_t ng = 0, nres = 0;
  int *loo_fold = NULL, *loco_fold = NULL;
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  int err;
  if (cli_load_runs(path, &ro, &all)) goto done;
  if (!set_name && has_set(&all, "headline")) set_name = "headline";
  if (set_name && !has_set(&all, set_name)) {
    cli_error("'%s' has no runs of set '%s'", path, set_name);
    goto done;
  }
  if ((err = filter_set(&all, set_name, &runs))) {
    cli_error("out of memory");
    goto done;
  }
  if ((err = pflex_jobs_from_runs(&runs, &js, &diag))) {
    cli_error_diag("cannot use", &diag, err);
    goto done;
  }
  if (train ? predictions_unseen(train, &ro, features, kind, loco, &runs, &js, &pr)
            : predictions(&runs, NULL, features, kind, loco, &js, &pr))
    goto done;
  if (pr.unseen_prior)
    fprintf(stderr,
            "note: %zu jobs lack a feature's telemetry: their prediction is the model's "
            "population prior\n",
            pr.unseen_prior);
  if ((err = pflex_study_groups_from_jobs(&js, &groups, &ng))) {
    cli_error("'%s' holds no sweep group with a curve", path);
    goto done;
  }
  for (size_t i = 0; i < js.n; i++)
    if (!isfinite(js.pfi_true[i])) {
      cli_error("group '%s' has no PFI (no capped run below its throughput)", js.names[i]);
      goto done;
    }
  /* Folds for the data shape, the same as the PFI model's: a job's curve is
   * shaped by the curves of groups its prediction was fitted on (LOO: every
   * other group; LOCO: the other clusters). `true` (the PFI known, the shape
   * not) uses the LOO folds; in-sample every group. */
  if (!(loo_fold = calloc(ng, sizeof *loo_fold)) || !(loco_fold = calloc(ng, sizeof *loco_fold))) {
    cli_error("out of memory");
    goto done;
  }
  for (size_t i = 0; i < ng; i++) {
    loo_fold[i] = (int)i;
    const char *ci = pflex_cluster_name(groups[i].arch, groups[i].task, loco);
    loco_fold[i] = (int)i;
    for (size_t j = 0; j < i; j++)
      if (strcmp(ci, pflex_cluster_name(groups[j].arch, groups[j].task, loco)) == 0) {
        loco_fold[i] = loco_fold[j];
        break;
      }
  }
  struct pflex_study_predset ps[4];
  size_t nps = 0;
  ps[nps++] = (struct pflex_study_predset){.mode = PFLEX_PRED_TRUE,
                                           .pfi = js.pfi_true,
                                           .fold = pr.unseen ? NULL : loo_fold,
                                           .templates = pr.unseen ? pr.train_curves : NULL,
                                           .ntemplates = pr.ntrain};
  if (pr.unseen) {
    ps[nps++] = (struct pflex_study_predset){.mode = PFLEX_PRED_UNSEEN,
                                             .pfi = pr.unseen,
                                             .templates = pr.train_curves,
                                             .ntemplates = pr.ntrain};
  } else if (pr.in) {
    ps[nps++] = (struct pflex_study_predset){.mode = PFLEX_PRED_IN_SAMPLE, .pfi = pr.in};
    ps[nps++] =
        (struct pflex_study_predset){.mode = PFLEX_PRED_LOO, .pfi = pr.loo, .fold = loo_fold};
    ps[nps++] =
        (struct pflex_study_predset){.mode = PFLEX_PRED_LOCO, .pfi = pr.loco, .fold = loco_fold};
  } else {
    ps[nps++] =
        (struct pflex_study_predset){.mode = PFLEX_PRED_PRIOR, .pfi = pr.prior, .fold = loo_fold};
  }
  if (pr.replaced)
    fprintf(stderr,
            "note: %zu LOCO predictions could not be made (a cluster too small to leave "
            "out); they use the population prior\n",
            pr.replaced);
  err = pflex_study_run(groups, ng, ps, nps, &so, &res, &nres);
  if (err == -PFLEX_E_DATA) {
    cli_error("the production scenario needs pretraining and fine-tuning groups: '%s' lacks a "
              "task column or one of the tasks (use --scenarios random)",
              path);
    goto done;
  }
  if (err) {
    cli_error("study failed: %s", pflex_strerror(err));
    goto done;
  }
  const double *cl = so.cuts;
  size_t ncl = so.ncuts;
  bool relative = !pflex_tput_unit_absolute(runs.unit);
  /* The paper's headline: pfi with in-sample predictions, production, 30%. */
  const struct pflex_study_result *hp = find(res, nres, PFLEX_SCENARIO_PRODUCTION, PFLEX_ALLOC_PFI,
                                             pr.unseen ? PFLEX_PRED_UNSEEN
                                             : pr.in   ? PFLEX_PRED_IN_SAMPLE
                                                       : PFLEX_PRED_PRIOR,
                                             0, 0.30);
  const struct pflex_study_result *ho =
      find(res, nres, PFLEX_SCENARIO_PRODUCTION, PFLEX_ALLOC_OPTIMAL,
           pr.unseen ? PFLEX_PRED_UNSEEN
           : pr.in   ? PFLEX_PRED_LOO
                     : PFLEX_PRED_PRIOR,
           0, 0.30);
  if (json) {
    json_t *root = json_object(), *arr = json_array(), *pa = json_array();
    json_object_set_new(root, "runs", json_string(path));
    json_object_set_new(root, "set", set_name ? json_string(set_name) : json_null());
    json_object_set_new(root, "groups", json_integer((json_int_t)ng));
    json_object_set_new(root, "unit", json_string(pflex_tput_unit_name(runs.unit)));
    json_object_set_new(root, "relative", json_boolean(relative));
    json_object_set_new(root, "workloads", json_integer((json_int_t)so.workloads));
    json_object_set_new(root, "jobs", json_integer((json_int_t)so.jobs));
    json_object_set_new(root, "rounds", json_integer(so.rounds));
    json_object_set_new(root, "seed", json_integer((json_int_t)so.seed));
    json_object_set_new(root, "features", json_string(pr.in || pr.unseen ? features : "prior"));
    json_object_set_new(root, "train", train ? json_string(train) : json_null());
    json_object_set_new(root, "model", json_string(pflex_model_kind_name(pr.model.kind)));
    for (size_t i = 0; i < js.n; i++) {
      json_t *o = json_object();
      json_object_set_new(o, "group", json_string(js.names[i]));
      json_object_set_new(o, "pfi", num(js.pfi_true[i]));
      if (pr.unseen) {
        json_object_set_new(o, "unseen", num(pr.unseen[i]));
      } else if (pr.in) {
        json_object_set_new(o, "in_sample", num(pr.in[i]));
        json_object_set_new(o, "loo", num(pr.loo[i]));
        json_object_set_new(o, "loco", num(pr.loco[i]));
      } else {
        json_object_set_new(o, "prior", num(pr.prior[i]));
      }
      json_array_append_new(pa, o);
    }
    json_object_set_new(root, "predictions", pa);
    for (size_t i = 0; i < nres; i++) {
      const struct pflex_study_result *x = &res[i];
      json_t *o = json_object();
      json_object_set_new(o, "scenario", json_string(pflex_study_scenario_name(x->scenario)));
      json_object_set_new(o, "strategy", json_string(pflex_alloc_strategy_name(x->strategy)));
      json_object_set_new(o, "prediction", json_string(pflex_study_pred_name(x->prediction)));
      json_object_set_new(o, "round", json_integer(x->round));
      json_object_set_new(o, "cut", json_real(x->cut));
      json_object_set_new(o, "workloads", json_integer((json_int_t)x->workloads));
      json_object_set_new(o, "tokens_per_s", num(x->tokens_per_s));
      json_object_set_new(o, "loss_vs_oracle", num(x->loss_vs_oracle));
      json_object_set_new(o, "gap_recovered", num(x->gap_recovered));
      json_object_set_new(o, "gain_per_job", num(x->gain_per_job));
      json_object_set_new(o, "above_oracle", json_integer((json_int_t)x->above_oracle));
      json_array_append_new(arr, o);
    }
    json_object_set_new(root, "results", arr);
    if (hp) {
      json_t *h = json_object();
      json_object_set_new(h, "gap_recovered", num(hp->gap_recovered));
      json_object_set_new(h, "gain_per_job", num(hp->gain_per_job));
      json_object_set_new(h, "paper_gap_recovered", json_real(0.63));
      json_object_set_new(h, "paper_gain_per_job", json_real(1500));
      json_object_set_new(root, "headline", h);
    }
    if (cli_print_json(root, JSON_REAL_PRECISION(10))) goto done;
  } else {
    printf("allocation study: %zu groups of '%s'%s%s, %zu workloads x %zu jobs, seed %lu%s\n", ng,
           path, set_name ? ", set " : "", set_name ? set_name : "", so.workloads, so.jobs, so.seed,
           relative ? "; throughput in relative units" : "");
    if (pr.unseen)
      printf("predictions: section-5 model fitted on '%s', never on these jobs (unseen); true = "
             "measured\n",
             train);
    else
      printf("predictions: %s\n",
             pr.in ? "section-5 model on the features given: in-sample, loo, loco; true = measured"
                   : "population prior (no telemetry), leave-one-out; true = measured");
    print_tables(res, nres, cl, ncl, so.scenarios, relative);
    if (hp)
      printf("\nheadline (production mix, 30%% cut): pfi with %s predictions recovers %.0f%% of "
             "the equal-to-oracle gap, %.0f %s per job over equal (paper: 63%%, about 1,500 "
             "tokens/s)\n",
             pflex_study_pred_name(hp->prediction), 100 * hp->gap_recovered, hp->gain_per_job,
             relative ? "relative units" : "tokens/s");
    if (ho)
      printf("optimal with %s predictions: %.0f%% of the gap, %.0f %s per job\n",
             pflex_study_pred_name(ho->prediction), 100 * ho->gap_recovered, ho->gain_per_job,
             relative ? "relative units" : "tokens/s");
    size_t above = 0;
    for (size_t i = 0; i < nres; i++)
      above += res[i].above_oracle;
    if (above)
      printf("note: in %zu workload-cuts a strategy beat the oracle by more than %g of the "
             "total: the optimizer is exact only for concave curves (docs/allocation.md)\n",
             above, PFLEX_STUDY_ORACLE_TOL);
  }
  if (outdir && figures(outdir, res, nres, cl, ncl, so.scenarios, &js, &pr)) goto done;
  status = PFLEX_EXIT_OK;
done:
  free(loo_fold);
  free(loco_fold);
  free(res);
  free(groups);
  preds_release(&pr);
  pflex_jobset_release(&js);
  pflex_runset_release(&runs);
  pflex_runset_release(&all);
out:
  free(cuts);
  return status;
}

const struct pflex_cmd pflex_cmd_study = {
    .name = "study",
    .run = run,
    .summary = "the allocation study: strategies x cuts on sampled workloads (paper section 6)",
    .usage = USAGE};
