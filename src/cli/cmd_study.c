/* `pflex study`: the allocation study of paper.md section 6 on a runs file
 * (docs/study.md). The pipeline lives in the library: the groups and
 * predictions in core (study_predict.h), the engine in core (study.h), the
 * figures in report (study_figures.h); this command reads the options and
 * the runs, and prints tables or JSON. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/pfi_args.h"
#include "cli/progress.h"
#include "cli/util.h"
#include "pflex/runs_provenance.h"
#include "pflex/study.h"
#include "pflex/study_figures.h"
#include "pflex/study_predict.h"

/* What the options say. */
struct args {
  struct pflex_study_opts so;
  struct pflex_study_pred_opts po;
  struct pflex_runs_read_opts ro;
  const char *set, *outdir, *train, *path;
  struct cli_list cuts; /* percent, then fractions (so.cuts points here) */
  bool json;
};

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

static int parse_scenarios(const char *arg, void *field) {
  return parse_mask(arg, parse_scenario, field) ? -EINVAL : 0;
}

static int parse_strategies(const char *arg, void *field) {
  return parse_mask(arg, parse_strategy, field) ? -EINVAL : 0;
}

static const struct cli_choice model_kinds[] = {
    {"ols", PFLEX_MODEL_OLS}, {"ridge", PFLEX_MODEL_RIDGE}, {"prior", PFLEX_MODEL_PRIOR},
    {NULL, 0}};
static const struct cli_choice shapes[] = {
    {"data", PFLEX_STUDY_SHAPE_DATA}, {"family", PFLEX_STUDY_SHAPE_FAMILY}, {NULL, 0}};

#define A struct args
static const struct cli_option options[] = {
    {CLI_STRING("set", "NAME", A, set,
                "use the runs of this set (default: headline when the file has it, else every "
                "run)")},
    {CLI_CUSTOM("scenarios", "LIST", A, so.scenarios, parse_scenarios,
                "a list of random, production",
                "random,production (default both; production needs a task column)")},
    {CLI_CUSTOM("strategies", "LIST", A, so.strategies, parse_strategies,
                "a list of equal, moe-ft, dram, pfi, optimal, oracle",
                "equal,moe-ft,dram,pfi,optimal,oracle (default all)")},
    {CLI_LIST("cuts", "LIST", A, cuts, 0, 100,
              "cuts in percent, a list or a:b:step range (default 0:40:5)")},
    {CLI_COUNT("workloads", "N", A, so.workloads, 1, 100000000,
               "workloads per scenario (default 500)")},
    {CLI_COUNT("jobs", "N", A, so.jobs, 1, 100000000, "jobs per workload (default 100)")},
    {CLI_COUNT("rounds", "K", A, so.rounds, 0, 100,
               "closed-loop rounds after the first allocation (default 0)")},
    {CLI_DOUBLE("noise", "X", A, so.noise, 0, 1,
                "closed loop: relative noise of an observed throughput (default 0.005)"),
     .flags = CLI_OPEN_MAX},
    {CLI_COUNT("seed", "S", A, so.seed, 0, 100000000, "random seed (default 1)")},
    {CLI_STRING("features", "LIST", A, po.features,
                "predictor features (default dram_copy, the paper's model (i))")},
    {CLI_ENUM("model", "KIND", A, po.kind, model_kinds,
              "ols (default), ridge, or prior (the population prior alone, as without "
              "telemetry)")},
    {CLI_ENUM_FN("loco", "SCHEME", A, po.loco, cli_loco_name,
                 "arch-task (default) or pooled-dense")},
    {CLI_ENUM("shape", "KIND", A, so.shape, shapes,
              "how optimal turns a PFI into a curve: data (default: the shape of other groups' "
              "curves of similar PFI, from the prediction's own CV fold) or family (the "
              "parametric family's member with that PFI)")},
    {CLI_DOUBLE("bandwidth", "X", A, so.bandwidth, 0, INFINITY,
                "data shape: PFI kernel width (default 0.25)"),
     .flags = CLI_OPEN_MIN},
    {CLI_ENUM_FN("objective", "OBJ", A, so.objective, cli_objective_name,
                 "what optimal and oracle maximize and the tables measure: tokens (default: "
                 "total throughput, the paper's) or progress (sum over jobs of GPUs x T/T_max)")},
    {CLI_DOUBLE("shrink", "Z", A, so.shrink, 0, 100,
                "optimal: shrink each predicted curve toward the equal cut by Z SDs of its "
                "prediction's error (default 0: none; 1 is one SD)")},
    {CLI_DOUBLE("dither", "D", A, so.dither, 0, 0.2,
                "closed loop with --shrink: a job a round leaves where it was observed is "
                "moved D of its P_max up or down, budget-neutral, so that it is next observed "
                "at a second power (default 0: none; 0.06 in docs/study.md)")},
    {CLI_STRING("train", "RUNS", A, train,
                "fit the model on this runs file instead (its headline set when it has one) and "
                "predict every job of RUNS, unseen in fitting ('unseen')")},
    {CLI_ENUM_FN("unit", "UNIT", A, ro.unit, cli_unit_name,
                 "throughput column: tokens, samples, steps, step-time")},
    {CLI_INCLUDE(A, ro, cli_runs_source_options)}, /* --tput-column, --reference-cap */
    {CLI_STRING("out", "DIR", A, outdir,
                "also write the figures there (created if missing): fig8.svg/.png (throughput "
                "relative to oracle by cut, per strategy and scenario) and fig4.svg/.png (PFI by "
                "group: measured and predicted)")},
    {CLI_COUNT("threads", "N", A, so.threads, 0, CLI_THREADS_MAX,
               "threads to run the workloads and the predicted curves on (default: one per CPU "
               "online, at most 8; 0: one per CPU online; 1: the one core the bench's targets "
               "are read on); the results are the same bits for any number")},
    {CLI_FLAG("json", A, json, "print JSON with every number")},
    {CLI_END}};
#undef A

static const struct cli_spec spec = {
    .name = "study",
    .usage = "pflex study [RUNS] [options]",
    .about = "The allocation study of the paper's section 6 on RUNS (a runs CSV; default the "
             "built-in reference set): strategies x cuts on sampled workloads.",
    .options = options,
    .operands = "RUNS",
    .min_operands = 0,
    .max_operands = 1};

/* Fills *a from the command line: 0, or the exit status (the error printed). */
static int parse_args(int argc, char **argv, struct args *a) {
  memset(a, 0, sizeof *a);
  pflex_study_opts_init(&a->so);
  pflex_study_pred_opts_init(&a->po);
  a->so.threads =
      CLI_THREADS_UNSET; /* each thread keeps its own caches (docs/study.md, "Threads") */
  struct cli_parsed p;
  int err = cli_parse(&spec, argc, argv, a, &p);
  if (err) return cli_parse_status(err);
  for (size_t i = 0; i < a->cuts.n; i++)
    a->cuts.v[i] /= 100;
  if (a->cuts.n) {
    a->so.cuts = a->cuts.v;
    a->so.ncuts = a->cuts.n;
  }
  a->path = p.noperands ? p.operands[0] : cli_reference_runs();
  return 0;
}

/* --out: the directory exists (or is created, as mkdir -p does) and is
 * writable before the study runs, so that a long study never fails at its
 * end for want of a place to write its figures. */
static int prepare_outdir(const char *dir) {
  struct stat st;
  if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
    cli_error("--out: '%s' is not a directory", dir);
    return -ENOTDIR;
  }
  if (stat(dir, &st) != 0) {
    char *p = strdup(dir);
    if (!p) return -ENOMEM;
    int err = 0;
    for (char *s = p; !err;) { /* every prefix ending before a '/', then the whole path */
      if ((s = strchr(s + 1, '/'))) *s = '\0';
      if (mkdir(p, 0777) != 0 && errno != EEXIST) err = -errno;
      if (err) cli_error("--out: cannot create directory '%s': %s", p, strerror(-err));
      if (!s) break;
      *s = '/';
    }
    free(p);
    if (err) return err;
    fprintf(stderr, "note: created the output directory '%s'\n", dir);
  }
  if (access(dir, W_OK | X_OK) != 0) {
    int err = -errno;
    cli_error("--out: cannot write into '%s': %s", dir, strerror(-err));
    return err;
  }
  return 0;
}

/* One table of the text output: a number of each result. */
enum tail { TAIL_NONE, TAIL_UNIT, TAIL_OTHER }; /* what follows the title */
struct metric {
  const char *title;
  double (*get)(const struct pflex_study_result *r);
  bool whole; /* printed without decimals */
  enum tail tail;
};

static double m_value(const struct pflex_study_result *r) { return r->tokens_per_s; }
static double m_progress(const struct pflex_study_result *r) { return r->progress; }
static double m_loss(const struct pflex_study_result *r) { return 100 * r->loss_vs_oracle; }
static double m_gap(const struct pflex_study_result *r) { return 100 * r->gap_recovered; }
static double m_gain(const struct pflex_study_result *r) { return r->gain_per_job; }
static double m_worse(const struct pflex_study_result *r) { return 100 * r->worse_than_equal; }
static double m_other_gap(const struct pflex_study_result *r) {
  return 100 * r->other.gap_recovered;
}

/* The first table, per objective: what it sums. */
static const struct metric value_metric[PFLEX_OBJECTIVE_N] = {
    [PFLEX_OBJECTIVE_TOKENS] = {"total throughput per workload", m_value, true, TAIL_UNIT},
    [PFLEX_OBJECTIVE_PROGRESS] = {"progress per workload", m_progress, false, TAIL_UNIT},
};

static const struct metric metrics[] = {
    {"loss against oracle (%)", m_loss, false, TAIL_NONE},
    {"gap recovered (equal = 0%, oracle = 100%)", m_gap, false, TAIL_NONE},
    {"gain per job over equal", m_gain, false, TAIL_UNIT},
    {"worse than equal (% of workloads)", m_worse, false, TAIL_NONE},
    {"gap recovered", m_other_gap, false, TAIL_OTHER},
};

/* The objective's unit in the tables. */
static const char *value_unit(enum pflex_objective ob, bool relative) {
  if (ob == PFLEX_OBJECTIVE_PROGRESS) return "effective GPUs: sum of GPUs x T/T_max";
  return relative ? "relative units" : "tokens/s";
}

static enum pflex_objective other_objective(enum pflex_objective ob) {
  return ob == PFLEX_OBJECTIVE_TOKENS ? PFLEX_OBJECTIVE_PROGRESS : PFLEX_OBJECTIVE_TOKENS;
}

/* A result's row label: strategy, prediction, round. */
static void row_label(const struct pflex_study_result *r, char *label, size_t n) {
  if (r->round)
    snprintf(label, n, "%s %s r%u", pflex_alloc_strategy_name(r->strategy),
             pflex_study_pred_name(r->prediction), r->round);
  else if (r->strategy == PFLEX_ALLOC_PFI || r->strategy == PFLEX_ALLOC_OPTIMAL)
    snprintf(label, n, "%s %s", pflex_alloc_strategy_name(r->strategy),
             pflex_study_pred_name(r->prediction));
  else
    snprintf(label, n, "%s", pflex_alloc_strategy_name(r->strategy));
}

/* One table: a row per strategy, prediction and round, a column per cut. */
static void print_table(const struct pflex_study_result *r, size_t n, const double *cuts,
                        size_t ncuts, int sc, const struct metric *m, const char *unit,
                        const char *other) {
  printf("\n%s: %s", pflex_study_scenario_name(sc), m->title);
  if (m->tail == TAIL_UNIT) printf(" (%s)", unit);
  if (m->tail == TAIL_OTHER) printf(" under the other objective, %s (its own oracle)", other);
  printf("\n%-26s", "strategy / cut");
  for (size_t c = 0; c < ncuts; c++)
    printf(" %8.0f%%", 100 * cuts[c]);
  printf("\n");
  for (size_t i = 0; i < n; i++) {
    if ((int)r[i].scenario != sc || fabs(r[i].cut - cuts[0]) > 1e-9) continue;
    char label[64];
    row_label(&r[i], label, sizeof label);
    printf("%-26s", label);
    for (size_t c = 0; c < ncuts; c++) {
      const struct pflex_study_result *x =
          pflex_study_find(r, n, sc, r[i].strategy, r[i].prediction, r[i].round, cuts[c]);
      double v = x ? m->get(x) : NAN;
      if (v < 0 && v > (m->whole ? -0.5 : -0.05)) v = 0; /* no "-0.0" */
      if (isfinite(v))
        printf(m->whole ? " %9.0f" : " %9.1f", v);
      else
        printf(" %9s", "-");
    }
    printf("\n");
  }
}

static void print_tables(const struct pflex_study_result *r, size_t n, const struct args *a,
                         bool relative) {
  enum pflex_objective ob = a->so.objective;
  const char *unit = value_unit(ob, relative), *other = pflex_objective_name(other_objective(ob));
  for (int sc = 0; sc < PFLEX_SCENARIO_N; sc++) {
    if (!(a->so.scenarios & (1u << sc))) continue;
    print_table(r, n, a->so.cuts, a->so.ncuts, sc, &value_metric[ob], unit, other);
    for (size_t k = 0; k < sizeof metrics / sizeof metrics[0]; k++)
      print_table(r, n, a->so.cuts, a->so.ncuts, sc, &metrics[k], unit, other);
  }
}

static json_t *num(double v) {
  return isfinite(v) ? json_real(v) : json_null();
}

static json_t *json_predictions(const struct pflex_study_data *d) {
  const struct pflex_study_predictions *p = &d->pred;
  json_t *pa = json_array();
  for (size_t i = 0; i < d->jobs.n; i++) {
    json_t *o = json_object();
    json_object_set_new(o, "group", json_string(d->jobs.names[i]));
    json_object_set_new(o, "pfi", num(d->jobs.pfi_true[i]));
    if (p->unseen) {
      json_object_set_new(o, "unseen", num(p->unseen[i]));
    } else if (p->in) {
      json_object_set_new(o, "in_sample", num(p->in[i]));
      json_object_set_new(o, "loo", num(p->loo[i]));
      json_object_set_new(o, "loco", num(p->loco[i]));
    } else {
      json_object_set_new(o, "prior", num(p->prior[i]));
    }
    json_array_append_new(pa, o);
  }
  return pa;
}

static json_t *json_results(const struct pflex_study_result *res, size_t nres,
                            enum pflex_objective other_ob) {
  json_t *arr = json_array();
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
    json_object_set_new(o, "progress", num(x->progress));
    json_object_set_new(o, "worse_than_equal", num(x->worse_than_equal));
    json_t *other = json_object();
    json_object_set_new(other, "objective", json_string(pflex_objective_name(other_ob)));
    json_object_set_new(other, "loss_vs_oracle", num(x->other.loss_vs_oracle));
    json_object_set_new(other, "gap_recovered", num(x->other.gap_recovered));
    json_object_set_new(other, "gain_per_job", num(x->other.gain_per_job));
    json_object_set_new(other, "worse_than_equal", num(x->other.worse_than_equal));
    json_object_set_new(o, "other", other);
    json_array_append_new(arr, o);
  }
  return arr;
}

static int print_json(const struct args *a, const struct pflex_study_data *d,
                      const struct pflex_study_result *res, size_t nres,
                      const struct pflex_study_result *hp) {
  json_t *root = json_object();
  json_object_set_new(root, "runs", json_string(a->path));
  json_object_set_new(root, "set", d->set ? json_string(d->set) : json_null());
  json_object_set_new(root, "groups", json_integer((json_int_t)d->ngroups));
  json_object_set_new(root, "unit", json_string(pflex_tput_unit_name(d->runs.unit)));
  json_object_set_new(root, "relative", json_boolean(!pflex_tput_unit_absolute(d->runs.unit)));
  cli_json_provenance(root, d->jobs.provenance);
  /* The true PFIs and curves are the runs' own: their provenance alone. */
  json_object_set_new(
      root, "truth_provenance",
      json_string(pflex_provenance_name(pflex_runs_provenance(&d->runs, NULL, 0))));
  json_object_set_new(root, "workloads", json_integer((json_int_t)a->so.workloads));
  json_object_set_new(root, "jobs", json_integer((json_int_t)a->so.jobs));
  json_object_set_new(root, "rounds", json_integer(a->so.rounds));
  json_object_set_new(root, "seed", json_integer((json_int_t)a->so.seed));
  json_object_set_new(root, "features",
                      json_string(d->pred.in || d->pred.unseen ? a->po.features : "prior"));
  json_object_set_new(root, "train", a->train ? json_string(a->train) : json_null());
  json_object_set_new(root, "model", json_string(pflex_model_kind_name(d->pred.model.kind)));
  json_object_set_new(root, "predictions", json_predictions(d));
  json_object_set_new(root, "objective", json_string(pflex_objective_name(a->so.objective)));
  json_object_set_new(root, "shrink", json_real(a->so.shrink));
  if (a->so.dither > 0) json_object_set_new(root, "dither", json_real(a->so.dither));
  json_object_set_new(root, "results",
                      json_results(res, nres, other_objective(a->so.objective)));
  if (hp) {
    json_t *h = json_object();
    json_object_set_new(h, "gap_recovered", num(hp->gap_recovered));
    json_object_set_new(h, "gain_per_job", num(hp->gain_per_job));
    json_object_set_new(h, "paper_gap_recovered", json_real(0.63));
    json_object_set_new(h, "paper_gain_per_job", json_real(1500));
    json_object_set_new(root, "headline", h);
  }
  return cli_print_json(root, JSON_REAL_PRECISION(10));
}

static void print_header(const struct args *a, const struct pflex_study_data *d, bool relative) {
  printf("allocation study: %zu groups of '%s'%s%s, %zu workloads x %zu jobs, seed %lu%s\n",
         d->ngroups, a->path, d->set ? ", set " : "", d->set ? d->set : "", a->so.workloads,
         a->so.jobs, a->so.seed, relative ? "; throughput in relative units" : "");
  cli_print_provenance(stdout, d->jobs.provenance);
  /* "true" is Eq. 1 on the runs' curves: measured only when the runs are,
   * whatever a --train file was (it shapes the predictions, not the truth). */
  const char *truth = pflex_provenance_name(pflex_runs_provenance(&d->runs, NULL, 0));
  if (d->pred.unseen)
    printf("predictions: section-5 model fitted on '%s', never on these jobs (unseen); true = "
           "PFI of the runs (%s)\n",
           a->train, truth);
  else
    printf("predictions: %s; true = PFI of the runs (%s)\n",
           d->pred.in ? "section-5 model on the features given: in-sample, loo, loco"
                      : "population prior (no telemetry), leave-one-out",
           truth);
  if (!d->pred.unseen && d->pred.in && a->po.kind == PFLEX_MODEL_RIDGE)
    printf("ridge: a loo group's lambda chosen by the other groups' leave-one-out errors on all "
           "groups, its own left out (docs/prediction.md)\n");
  static const char *const about[PFLEX_OBJECTIVE_N] = {
      [PFLEX_OBJECTIVE_TOKENS] = "total throughput, the paper's",
      [PFLEX_OBJECTIVE_PROGRESS] = "sum over jobs of GPUs x T/T_max, effective GPUs"};
  enum pflex_objective ob = a->so.objective, other = other_objective(ob);
  printf("objective: %s (%s); the last table of each scenario is under %s (%s)\n",
         pflex_objective_name(ob), about[ob], pflex_objective_name(other), about[other]);
  if (a->so.shrink > 0)
    printf("optimal: each predicted curve shrunk toward the equal cut by %g SD of its "
           "prediction's error (docs/study.md)\n",
           a->so.shrink);
  else
    printf("optimal: predicted curves used as predicted, no shrinkage (--shrink 0)\n");
  if (a->so.dither > 0 && a->so.shrink > 0 && a->so.rounds > 1)
    printf("closed loop: a job a round leaves where it was observed is moved %g of its P_max "
           "(--dither; docs/study.md)\n",
           a->so.dither);
}

/* The headline quotes the paper's figure only for the paper's own jobs (the
 * reconstructed reference set): beside a twin population, another GPU or
 * another unit, 1,500 tokens/s compares nothing. */
static void print_summary(const struct args *a, const struct pflex_study_result *hp,
                          const struct pflex_study_result *ho, bool relative, bool paper) {
  bool prog = a->so.objective == PFLEX_OBJECTIVE_PROGRESS;
  const char *units = prog ? "effective GPUs" : relative ? "relative units" : "tokens/s";
  const char *other = pflex_objective_name(other_objective(a->so.objective));
  int digits = prog ? 3 : 0;
  if (hp)
    printf("\nheadline (production mix, 30%% cut%s): pfi with %s predictions recovers %.0f%% of "
           "the equal-to-oracle gap, %.*f %s per job over equal%s%s\n",
           prog ? ", objective progress" : "", pflex_study_pred_name(hp->prediction),
           100 * hp->gap_recovered, digits, hp->gain_per_job, units,
           !paper ? "" : prog ? " (paper, under tokens" : " (paper",
           paper ? ": 63%, about 1,500 tokens/s)" : "");
  if (ho)
    printf("optimal with %s predictions: %.0f%% of the gap, %.*f %s per job; worse than equal "
           "in %.1f%% of workloads; under %s %.0f%% of its gap\n",
           pflex_study_pred_name(ho->prediction), 100 * ho->gap_recovered, digits,
           ho->gain_per_job, units, 100 * ho->worse_than_equal, other,
           100 * ho->other.gap_recovered);
}

static void print_text(const struct args *a, const struct pflex_study_data *d,
                       const struct pflex_study_result *res, size_t nres,
                       const struct pflex_study_result *hp, const struct pflex_study_result *ho) {
  bool relative = !pflex_tput_unit_absolute(d->runs.unit);
  print_header(a, d, relative);
  print_tables(res, nres, a, relative);
  print_summary(a, hp, ho, relative,
                pflex_runs_provenance(&d->runs, NULL, 0) == PFLEX_PROV_RECONSTRUCTED && !relative);
  size_t above = 0;
  for (size_t i = 0; i < nres; i++)
    above += res[i].above_oracle;
  if (above)
    printf("note: in %zu workload-cuts a strategy beat the oracle by more than %g of the "
           "total: the oracle is certified within 1e-6 of the optimum, so this is a defect "
           "to report (docs/allocation.md)\n",
           above, PFLEX_STUDY_ORACLE_TOL);
}

/* What the predictions had to fall back on. */
static void print_notes(const struct args *a, const struct pflex_study_data *d) {
  const struct pflex_study_predictions *p = &d->pred;
  if (a->so.dither > 0 && !(a->so.shrink > 0 && a->so.rounds > 1))
    fprintf(stderr, "note: --dither acts only with --shrink and --rounds 2 or more\n");
  if (p->fell_back && a->po.kind == PFLEX_MODEL_PRIOR)
    fprintf(stderr, "note: --model prior: predictions are the population prior's, marked "
                    "'prior'\n");
  else if (p->fell_back)
    fprintf(stderr,
            "note: the runs lack the features '%s' (%s): predictions fall back to the "
            "population prior, marked 'prior'\n",
            a->po.features, p->missing);
  if (p->unseen_prior)
    fprintf(stderr,
            "note: %zu jobs lack a feature's telemetry: their prediction is the model's "
            "population prior\n",
            p->unseen_prior);
  if (p->loco_unfitted)
    fprintf(stderr,
            "note: %zu groups' LOCO folds could not be fitted (a cluster too small to leave "
            "out, e.g. no arch/task columns): they have no LOCO prediction, and loco counts only "
            "the workloads without them ('-' where none)\n",
            p->loco_unfitted);
}

/* A runs file whose tput_unit column (a real archive's, or `pflex twin
 * population --mixed-units`) names more than one unit: a sum of its
 * throughputs means nothing, their shares of each job's T_max do. */
static void note_mixed_units(const struct args *a, const struct pflex_runset *runs) {
  size_t k;
  if (pflex_runset_find_column(runs, "tput_unit", &k)) return;
  const char *first = NULL, *other = NULL;
  for (size_t i = 0; i < runs->n && !other; i++) {
    const char *u = runs->runs[i].extra[k];
    if (!*u) continue;
    if (!first) first = u;
    else if (strcmp(u, first) != 0) other = u;
  }
  if (!other) return;
  if (a->so.objective == PFLEX_OBJECTIVE_TOKENS)
    fprintf(stderr,
            "note: the throughput mixes units (tput_unit: %s, %s, ...): --objective tokens "
            "sums numbers that are not comparable; --objective progress does not depend on "
            "units\n",
            first, other);
  else
    fprintf(stderr,
            "note: the throughput mixes units (tput_unit: %s, %s, ...): progress counts each "
            "job's share of its own T_max, whatever its unit; the tokens figures are sums of "
            "numbers that are not comparable\n",
            first, other);
}

/* Runs the study on the data; prints its error. */
static int study(const struct args *a, const struct pflex_study_data *d,
                 struct pflex_study_result **res, size_t *nres) {
  struct cli_progress pr;
  cli_progress_init(&pr, "study", false);
  struct pflex_study_opts so = a->so;
  so.progress = cli_progress_hook(&pr);
  so.threads = cli_threads(so.threads);
  int err = pflex_study_run(d->groups, d->ngroups, d->sets, d->nsets, &so, res, nres);
  cli_progress_clear(&pr);
  if (err == -PFLEX_E_DATA)
    cli_error("the production scenario needs pretraining and fine-tuning groups: '%s' lacks a "
              "task column or one of the tasks (use --scenarios random)",
              a->path);
  else if (err)
    cli_error("study failed: %s", pflex_strerror(err));
  return err;
}

static int run(int argc, char **argv) {
  struct args a;
  int status = parse_args(argc, argv, &a);
  if (status) {
    cli_release(&spec, &a);
    return status;
  }
  status = PFLEX_EXIT_FAIL;
  struct pflex_runset all, train;
  pflex_runset_init(&all);
  pflex_runset_init(&train);
  struct pflex_study_data d;
  memset(&d, 0, sizeof d);
  struct pflex_study_result *res = NULL;
  size_t nres = 0;
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  char failed[4096];
  if (a.outdir && prepare_outdir(a.outdir)) goto done;
  if (cli_load_runs(a.path, &a.ro, &all)) goto done;
  if (a.train && cli_load_runs(a.train, &a.ro, &train)) goto done;
  int err = pflex_study_data_build(&all, a.set, a.train ? &train : NULL, &a.po, &d, &diag);
  if (err) {
    cli_error_diag("cannot run the study:", &diag, err);
    goto done;
  }
  /* The study's numbers are as good as its weakest input. */
  d.jobs.provenance = pflex_runs_provenance(&d.runs, NULL, 0);
  if (a.train)
    d.jobs.provenance =
        pflex_provenance_combine(d.jobs.provenance, pflex_runs_provenance(&train, NULL, 0));
  print_notes(&a, &d);
  note_mixed_units(&a, &all);
  if (study(&a, &d, &res, &nres)) goto done;
  const struct pflex_study_result *hp =
      pflex_study_find(res, nres, PFLEX_SCENARIO_PRODUCTION, PFLEX_ALLOC_PFI,
                       pflex_study_headline_pred(&d), 0, 0.30);
  const struct pflex_study_result *ho =
      pflex_study_find(res, nres, PFLEX_SCENARIO_PRODUCTION, PFLEX_ALLOC_OPTIMAL,
                       pflex_study_optimal_pred(&d), 0, 0.30);
  if (a.json && print_json(&a, &d, res, nres, hp)) goto done;
  if (!a.json) print_text(&a, &d, res, nres, hp, ho);
  if (a.outdir && (err = pflex_study_figures(a.outdir, res, nres, a.so.cuts, a.so.ncuts,
                                             a.so.scenarios, &d, failed, sizeof failed))) {
    cli_error("cannot write '%s': %s", failed, pflex_strerror(err));
    goto done;
  }
  status = PFLEX_EXIT_OK;
done:
  free(res);
  pflex_study_data_release(&d);
  pflex_runset_release(&train);
  pflex_runset_release(&all);
  cli_release(&spec, &a);
  return status;
}

const struct pflex_cmd pflex_cmd_study = {
    .name = "study",
    .run = run,
    .summary = "the allocation study: strategies x cuts on sampled workloads (paper section 6)",
    .specs = (const struct cli_spec *const[]){&spec, NULL}};
