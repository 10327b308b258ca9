/* `pflex fit`: fits a PFI predictor on the sweep groups of a runs file and
 * writes the model file (docs/prediction.md). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/pfi_args.h"
#include "cli/predict_common.h"
#include "cli/util.h"
#include "pflex/model_json.h"
#include "pflex/predict.h"
#include "pflex/runs_provenance.h"

struct args {
  struct cli_pfi_args pfi;
  const char *features, *set, *out;
  enum pflex_model_kind model;
  double lambda;
  enum pflex_loco loco;
  bool json;
};

#define A struct args
static const struct cli_option options[] = {
    {CLI_STRING("features", "LIST", A, features,
                "comma-separated features (default dram_copy): dram_copy, arith_intensity, "
                "arch_moe, task_ft, log_gpus, any telemetry column; 'meta' = arch_moe,task_ft,"
                "log_gpus; 'dcgm' = every numeric telemetry column")},
    {CLI_ENUM_FN("model", "KIND", A, model, cli_model_kind_name,
                 "ols (default), ridge (lambda by nested leave-one-out), or prior (mean PFI per "
                 "arch x task, for jobs without telemetry)")},
    {CLI_DOUBLE("lambda", "L", A, lambda, 0, INFINITY,
                "ridge: use this penalty instead of choosing it")},
    {CLI_STRING("set", "NAME", A, set, "use only runs whose set column is NAME (e.g. headline)")},
    {CLI_ENUM_FN("loco", "SCHEME", A, loco, cli_loco_name,
                 "clusters for leave-one-cluster-out: arch-task (default) or pooled-dense")},
    {CLI_LIST("grid", "LIST", A, pfi.grid, 0, INFINITY,
              "compute the target PFI on these caps only (e.g. 200,500,600,700)"),
     .flags = CLI_OPEN_MIN, .expect = "a list of caps in W (e.g. 200,500,600,700)"},
    {CLI_INCLUDE(A, pfi, cli_pfi_target_options)},
    {CLI_INCLUDE(A, pfi, cli_pfi_read_options)},
    {CLI_STRING("out", "FILE", A, out, "write the model file (JSON) to FILE")},
    {CLI_FLAG("json", A, json, "print the model file to stdout instead of the summary")},
    {CLI_END}};
#undef A

static const struct cli_spec spec = {
    .name = "fit",
    .usage = "pflex fit RUNS.csv [options]",
    .about = "Fits a PFI predictor on the sweep groups of a runs file and writes the model file "
             "(docs/prediction.md). The target PFI is computed as 'pflex pfi' does, without a "
             "confidence interval.",
    .options = options,
    .operands = "RUNS.csv",
    .min_operands = 1,
    .max_operands = 1};

static void print_summary(const struct pflex_model *m) {
  printf("model: %s, %zu feature%s, fitted on %zu groups", pflex_model_kind_name(m->kind),
         m->feats.n, m->feats.n == 1 ? "" : "s", m->n);
  if (m->set_filter) printf(" (set %s)", m->set_filter);
  printf("\n");
  cli_target_line(stdout, &m->target);
  cli_print_provenance(stdout, m->provenance);
  if (m->kind == PFLEX_MODEL_PRIOR) {
    printf("prior: overall mean PFI %.3f\n", m->prior_mean);
    for (size_t k = 0; k < m->nprior; k++)
      printf("  %-9s n=%-3zu mean %.3f\n",
             pflex_cluster_name(m->prior[k].arch, m->prior[k].task, PFLEX_LOCO_ARCH_TASK),
             m->prior[k].n, m->prior[k].mean);
  } else {
    printf("  %-24s %12.6g\n", "intercept", m->lin.intercept);
    for (size_t j = 0; j < m->feats.n; j++)
      printf("  %-24s %12.6g  (standardized %.4g)\n", m->feats.names[j], m->lin.coef[j],
             m->lin.beta_std[j]);
    if (m->kind == PFLEX_MODEL_RIDGE)
      printf("  lambda %.4g (%s)\n", m->lin.lambda,
             m->lambda_chosen ? "chosen by leave-one-out on the grid 1e-3..1e4; in the LOO "
                                "scores, for each group by the other groups' LOO errors"
                              : "given");
  }
  printf("in-sample R^2 ");
  cli_num(stdout, 0, m->r2_in);
  printf("\nLOO:  ");
  cli_scores(stdout, &m->loo);
  printf("\nLOCO: ");
  cli_scores(stdout, &m->loco);
  printf("  (clusters %s)\n\n", pflex_loco_name(m->loco_scheme));
  printf("%-44s %-9s %7s %7s %7s %7s\n", "group", "cluster", "pfi", "fitted", "loo", "loco");
  for (size_t i = 0; i < m->n; i++) {
    const struct pflex_model_group *g = &m->groups[i];
    printf("%-44s %-9s", g->group, g->cluster);
    cli_num(stdout, 8, g->pfi);
    cli_num(stdout, 8, g->fitted);
    cli_num(stdout, 8, g->loo);
    cli_num(stdout, 8, g->loco);
    printf("\n");
  }
}

/* Options that do not go together; -1 after the usage error. */
static int check_combination(const struct args *a, const struct cli_parsed *p) {
  if (a->model == PFLEX_MODEL_PRIOR && cli_given(p, "features")) {
    cli_usage_error(&spec, "a prior model uses no features: drop --features");
    return -1;
  }
  if (a->model != PFLEX_MODEL_RIDGE && cli_given(p, "lambda")) {
    cli_usage_error(&spec, "--lambda is for --model ridge");
    return -1;
  }
  return 0;
}

/* The groups to fit on: their target PFI and (but for a prior) the features. */
static int training_set(const struct pflex_runset *set, const struct args *a,
                        struct pflex_dataset *d) {
  if (a->model != PFLEX_MODEL_PRIOR)
    return cli_features_dataset(set, a->set, a->features, &a->pfi.opts, true, d);
  struct pflex_featlist none;
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  pflex_featlist_init(&none);
  int err = pflex_dataset_build(set, a->set, &none, &a->pfi.opts, true, d, &diag);
  if (err) cli_error_diag("cannot use", &diag, err);
  return err;
}

/* Fits the model and records how and on what: the target's options, the
 * runs file, the set, this pflex's version, the runs' provenance (of every
 * run of the file: never stronger than the set's). */
static int fit(const char *path, const struct pflex_runset *set, const struct args *a,
               const struct pflex_dataset *d, struct pflex_model *m) {
  struct pflex_fit_opts fo = {.kind = a->model, .lambda = a->lambda};
  int err = pflex_model_fit(d, &fo, a->loco, m);
  if (err) {
    cli_error("cannot fit on '%s': %s%s", path, pflex_strerror(err),
              err == -PFLEX_E_NOPOINTS ? " (at least 3 groups with a PFI are needed)" : "");
    return err;
  }
  m->source = strdup(path);
  m->set_filter = a->set ? strdup(a->set) : NULL;
  m->version = strdup(PFLEX_VERSION);
  m->provenance = pflex_runs_provenance(set, NULL, 0);
  if (pflex_model_set_target(m, &a->pfi.opts) || !m->source || !m->version ||
      (a->set && !m->set_filter)) {
    cli_error("out of memory");
    return -ENOMEM;
  }
  return 0;
}

/* Writes the model file (--out) and prints the model as JSON or a summary. */
static int emit(const struct pflex_model *m, const char *out, bool json) {
  int err;
  if (out && (err = pflex_model_write_json(m, out))) {
    cli_error("cannot write '%s': %s", out, pflex_strerror(err));
    return err;
  }
  if (!json) {
    print_summary(m);
    if (out) printf("\nmodel written to '%s'\n", out);
    return 0;
  }
  char *s;
  if ((err = pflex_model_to_json(m, &s))) {
    cli_error("%s", pflex_strerror(err));
    return err;
  }
  printf("%s\n", s);
  free(s);
  return 0;
}

static int run(int argc, char **argv) {
  struct args args = {.features = "dram_copy",
                      .model = PFLEX_MODEL_OLS,
                      .lambda = -1,
                      .loco = PFLEX_LOCO_ARCH_TASK};
  cli_pfi_args_init(&args.pfi);
  struct cli_parsed p;
  int err = cli_parse(&spec, argc, argv, &args, &p);
  if (err || check_combination(&args, &p)) {
    cli_release(&spec, &args);
    return err ? cli_parse_status(err) : PFLEX_EXIT_USAGE;
  }
  cli_pfi_args_finish(&args.pfi);
  args.pfi.opts.draws = 0;
  const char *path = p.operands[0];
  struct pflex_runset set;
  pflex_runset_init(&set);
  struct pflex_dataset d;
  pflex_dataset_init(&d);
  struct pflex_model m;
  pflex_model_init(&m);
  int rc = PFLEX_EXIT_FAIL;
  if (!cli_load_runs(path, &args.pfi.read, &set) && !training_set(&set, &args, &d) &&
      !fit(path, &set, &args, &d, &m) && !emit(&m, args.out, args.json))
    rc = PFLEX_EXIT_OK;
  pflex_model_release(&m);
  pflex_dataset_release(&d);
  pflex_runset_release(&set);
  cli_release(&spec, &args);
  return rc;
}

const struct pflex_cmd pflex_cmd_fit = {
    .name = "fit",
    .run = run,
    .summary = "fit a PFI predictor on sweep groups and write a model file",
    .specs = (const struct cli_spec *const[]){&spec, NULL},
};
