/* `pflex study`: the allocation study of paper.md section 6 on a runs file
 * (docs/study.md). The pipeline lives in the library: the groups and
 * predictions in core (study_predict.h), the engine in core (study.h), the
 * figures in report (study_figures.h); this command reads the options and
 * the runs, and prints tables or JSON. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/commands.h"
#include "cli/util.h"
#include "pflex/study.h"
#include "pflex/study_figures.h"
#include "pflex/study_predict.h"

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

/* What the options say. */
struct args {
  struct pflex_study_opts so;
  struct pflex_study_pred_opts po;
  struct pflex_runs_read_opts ro;
  const char *set, *outdir, *train, *path;
  double *cuts;
  size_t ncuts;
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

/* ---- options: one handler each, 0 or -EINVAL (the error printed) ---------------- */

static int o_set(struct args *a, const char *v) {
  a->set = v;
  return 0;
}

static int o_scenarios(struct args *a, const char *v) {
  if (!parse_mask(v, parse_scenario, &a->so.scenarios)) return 0;
  cli_error("--scenarios: '%s' is not a list of random, production", v);
  return -EINVAL;
}

static int o_strategies(struct args *a, const char *v) {
  if (!parse_mask(v, parse_strategy, &a->so.strategies)) return 0;
  cli_error("--strategies: '%s' is not a list of equal, moe-ft, dram, pfi, optimal, oracle", v);
  return -EINVAL;
}

static int o_cuts(struct args *a, const char *v) {
  free(a->cuts);
  a->cuts = NULL;
  if (cli_parse_list(v, &a->cuts, &a->ncuts) || a->ncuts == 0) {
    cli_error("--cuts: '%s' is not a list of percentages", v);
    return -EINVAL;
  }
  for (size_t i = 0; i < a->ncuts; i++) {
    if (!(a->cuts[i] >= 0 && a->cuts[i] <= 100)) {
      cli_error("--cuts: %g is not between 0 and 100", a->cuts[i]);
      return -EINVAL;
    }
    a->cuts[i] /= 100;
  }
  a->so.cuts = a->cuts;
  a->so.ncuts = a->ncuts;
  return 0;
}

static int count(const char *opt, const char *v, unsigned long long lo, unsigned long long hi,
                 unsigned long long *ret) {
  return cli_parse_count(opt, v, lo, hi, ret) ? -EINVAL : 0;
}

static int o_workloads(struct args *a, const char *v) {
  unsigned long long n;
  int err = count("--workloads", v, 1, 100000000ull, &n);
  a->so.workloads = (size_t)n;
  return err;
}

static int o_jobs(struct args *a, const char *v) {
  unsigned long long n;
  int err = count("--jobs", v, 1, 100000000ull, &n);
  a->so.jobs = (size_t)n;
  return err;
}

static int o_rounds(struct args *a, const char *v) {
  unsigned long long n;
  int err = count("--rounds", v, 0, 100, &n);
  a->so.rounds = (unsigned)n;
  return err;
}

static int o_seed(struct args *a, const char *v) {
  unsigned long long n;
  int err = count("--seed", v, 0, 100000000ull, &n);
  a->so.seed = (unsigned long)n;
  return err;
}

static int o_noise(struct args *a, const char *v) {
  char *end;
  a->so.noise = strtod(v, &end);
  if (end != v && !*end && a->so.noise >= 0 && a->so.noise < 1) return 0;
  cli_error("--noise: '%s' is not a relative noise in [0, 1)", v);
  return -EINVAL;
}

static int o_features(struct args *a, const char *v) {
  a->po.features = v;
  return 0;
}

static int o_model(struct args *a, const char *v) {
  if (!pflex_model_kind_parse(v, &a->po.kind) && a->po.kind != PFLEX_MODEL_PRIOR) return 0;
  cli_error("--model: '%s' is not ols or ridge", v);
  return -EINVAL;
}

static int o_loco(struct args *a, const char *v) {
  if (!pflex_loco_parse(v, &a->po.loco)) return 0;
  cli_error("--loco: '%s' is not arch-task or pooled-dense", v);
  return -EINVAL;
}

static int o_unit(struct args *a, const char *v) {
  if (!cli_parse_unit(v, &a->ro.unit)) return 0;
  cli_error("--unit: unknown unit '%s' (tokens, samples, steps, step-time)", v);
  return -EINVAL;
}

static int o_json(struct args *a, const char *v) {
  (void)v;
  a->json = true;
  return 0;
}

static int o_out(struct args *a, const char *v) {
  a->outdir = v;
  return 0;
}

static int o_train(struct args *a, const char *v) {
  a->train = v;
  return 0;
}

static int o_shape(struct args *a, const char *v) {
  static const char *const names[] = {[PFLEX_STUDY_SHAPE_DATA] = "data",
                                      [PFLEX_STUDY_SHAPE_FAMILY] = "family"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(v, names[i]) == 0) {
      a->so.shape = (enum pflex_study_shape)i;
      return 0;
    }
  cli_error("--shape: '%s' is not data or family", v);
  return -EINVAL;
}

static int o_bandwidth(struct args *a, const char *v) {
  char *end;
  a->so.bandwidth = strtod(v, &end);
  if (end != v && !*end && a->so.bandwidth > 0 && isfinite(a->so.bandwidth)) return 0;
  cli_error("--bandwidth: '%s' is not a positive number", v);
  return -EINVAL;
}

static const struct {
  const char *name;
  int has_arg;
  int (*set)(struct args *, const char *);
} options[] = {
    {"set", required_argument, o_set},          {"scenarios", required_argument, o_scenarios},
    {"strategies", required_argument, o_strategies}, {"cuts", required_argument, o_cuts},
    {"workloads", required_argument, o_workloads}, {"jobs", required_argument, o_jobs},
    {"rounds", required_argument, o_rounds},    {"noise", required_argument, o_noise},
    {"seed", required_argument, o_seed},        {"features", required_argument, o_features},
    {"model", required_argument, o_model},      {"loco", required_argument, o_loco},
    {"unit", required_argument, o_unit},        {"json", no_argument, o_json},
    {"out", required_argument, o_out},          {"train", required_argument, o_train},
    {"shape", required_argument, o_shape},      {"bandwidth", required_argument, o_bandwidth},
};
#define NOPTIONS (sizeof options / sizeof options[0])

/* Fills *a from the command line; PFLEX_EXIT_USAGE (the error printed) on a bad one. */
static int parse_args(int argc, char **argv, struct args *a) {
  memset(a, 0, sizeof *a);
  pflex_study_opts_init(&a->so);
  pflex_study_pred_opts_init(&a->po);
  struct option longopts[NOPTIONS + 1] = {{0}};
  for (size_t i = 0; i < NOPTIONS; i++)
    longopts[i] = (struct option){options[i].name, options[i].has_arg, NULL, 256 + (int)i};
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    if (c < 256 || c >= 256 + (int)NOPTIONS) {
      cli_error("unknown or incomplete option '%s'; see 'pflex help study'", argv[optind - 1]);
      return PFLEX_EXIT_USAGE;
    }
    if (options[c - 256].set(a, optarg)) return PFLEX_EXIT_USAGE;
  }
  if (optind < argc - 1) {
    cli_error("expected at most one RUNS file; see 'pflex help study'");
    return PFLEX_EXIT_USAGE;
  }
  a->path = optind < argc ? argv[optind] : cli_reference_runs();
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
              pflex_study_find(r, n, sc, r[i].strategy, r[i].prediction, r[i].round, cuts[c]);
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

static json_t *json_results(const struct pflex_study_result *res, size_t nres) {
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
  json_object_set_new(root, "workloads", json_integer((json_int_t)a->so.workloads));
  json_object_set_new(root, "jobs", json_integer((json_int_t)a->so.jobs));
  json_object_set_new(root, "rounds", json_integer(a->so.rounds));
  json_object_set_new(root, "seed", json_integer((json_int_t)a->so.seed));
  json_object_set_new(root, "features",
                      json_string(d->pred.in || d->pred.unseen ? a->po.features : "prior"));
  json_object_set_new(root, "train", a->train ? json_string(a->train) : json_null());
  json_object_set_new(root, "model", json_string(pflex_model_kind_name(d->pred.model.kind)));
  json_object_set_new(root, "predictions", json_predictions(d));
  json_object_set_new(root, "results", json_results(res, nres));
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

static void print_text(const struct args *a, const struct pflex_study_data *d,
                       const struct pflex_study_result *res, size_t nres,
                       const struct pflex_study_result *hp, const struct pflex_study_result *ho) {
  bool relative = !pflex_tput_unit_absolute(d->runs.unit);
  const char *units = relative ? "relative units" : "tokens/s";
  printf("allocation study: %zu groups of '%s'%s%s, %zu workloads x %zu jobs, seed %lu%s\n",
         d->ngroups, a->path, d->set ? ", set " : "", d->set ? d->set : "", a->so.workloads,
         a->so.jobs, a->so.seed, relative ? "; throughput in relative units" : "");
  if (d->pred.unseen)
    printf("predictions: section-5 model fitted on '%s', never on these jobs (unseen); true = "
           "measured\n",
           a->train);
  else
    printf("predictions: %s\n",
           d->pred.in ? "section-5 model on the features given: in-sample, loo, loco; true = "
                        "measured"
                      : "population prior (no telemetry), leave-one-out; true = measured");
  print_tables(res, nres, a->so.cuts, a->so.ncuts, a->so.scenarios, relative);
  if (hp)
    printf("\nheadline (production mix, 30%% cut): pfi with %s predictions recovers %.0f%% of "
           "the equal-to-oracle gap, %.0f %s per job over equal (paper: 63%%, about 1,500 "
           "tokens/s)\n",
           pflex_study_pred_name(hp->prediction), 100 * hp->gap_recovered, hp->gain_per_job,
           units);
  if (ho)
    printf("optimal with %s predictions: %.0f%% of the gap, %.0f %s per job\n",
           pflex_study_pred_name(ho->prediction), 100 * ho->gap_recovered, ho->gain_per_job,
           units);
  size_t above = 0;
  for (size_t i = 0; i < nres; i++)
    above += res[i].above_oracle;
  if (above)
    printf("note: in %zu workload-cuts a strategy beat the oracle by more than %g of the "
           "total: the optimizer is exact only for concave curves (docs/allocation.md)\n",
           above, PFLEX_STUDY_ORACLE_TOL);
}

/* What the predictions had to fall back on. */
static void print_notes(const struct args *a, const struct pflex_study_data *d) {
  const struct pflex_study_predictions *p = &d->pred;
  if (p->fell_back)
    fprintf(stderr,
            "note: the runs lack the features '%s' (%s): predictions fall back to the "
            "population prior, marked 'prior'\n",
            a->po.features, p->missing);
  if (p->unseen_prior)
    fprintf(stderr,
            "note: %zu jobs lack a feature's telemetry: their prediction is the model's "
            "population prior\n",
            p->unseen_prior);
  if (p->loco_replaced)
    fprintf(stderr,
            "note: %zu LOCO predictions could not be made (a cluster too small to leave "
            "out); they use the population prior\n",
            p->loco_replaced);
}

/* Runs the study on the data; prints its error. */
static int study(const struct args *a, const struct pflex_study_data *d,
                 struct pflex_study_result **res, size_t *nres) {
  int err = pflex_study_run(d->groups, d->ngroups, d->sets, d->nsets, &a->so, res, nres);
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
    free(a.cuts);
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
  print_notes(&a, &d);
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
  free(a.cuts);
  return status;
}

const struct pflex_cmd pflex_cmd_study = {
    .name = "study",
    .run = run,
    .summary = "the allocation study: strategies x cuts on sampled workloads (paper section 6)",
    .usage = USAGE};
