/* `pflex predict`: applies a model file to the uncapped run of every sweep
 * group of a runs file (a file of one run per job is live telemetry: each job
 * is a group of one) and prints the predicted PFI, with the measured PFI
 * beside it where the group has capped runs (docs/prediction.md). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/commands.h"
#include "cli/predict_common.h"
#include "cli/util.h"
#include "pflex/csv.h"
#include "pflex/model_json.h"
#include "pflex/predict.h"
#include "pflex/runs_provenance.h"

struct args {
  const char *model, *set;
  bool prior_fallback, json, csv;
  enum pflex_tput_unit unit;
};

#define A struct args
static const struct cli_option options[] = {
    {CLI_STRING("model", "FILE", A, model, "the model file written by 'pflex fit'"),
     .flags = CLI_REQUIRED},
    {CLI_STRING("set", "NAME", A, set, "use only runs whose set column is NAME")},
    {CLI_FLAG("prior-fallback", A, prior_fallback,
              "predict a job that lacks a feature with the model's population prior (marked "
              "'prior') instead of failing")},
    {CLI_ENUM_FN("unit", "UNIT", A, unit, cli_unit_name,
                 "throughput column when not tokens_per_s: tokens, samples, steps, step-time")},
    {CLI_FLAG("json", A, json, "JSON output")},
    {CLI_FLAG("csv", A, csv, "CSV output")},
    {CLI_END}};
#undef A

static const struct cli_spec spec = {
    .name = "predict",
    .usage = "pflex predict --model MODEL.json RUNS.csv [options]",
    .about = "Applies a model file to the uncapped run of every sweep group of a runs file (a "
             "file of one run per job is live telemetry: each job is a group of one) and prints "
             "the predicted PFI, with the measured PFI beside it where the group has capped runs "
             "(docs/prediction.md).",
    .options = options,
    .operands = "RUNS.csv",
    .min_operands = 1,
    .max_operands = 1,
    .exclusive = (const char *const[]){"json csv", NULL}};

static json_t *jnum(double v) {
  return isfinite(v) ? json_real(v) : json_null();
}

/* A model applied to the groups of a runs file: each group's prediction (the
 * measured PFI is d.y) and the scores against the measured ones. */
struct prediction {
  const char *model_path, *runs_path;
  const struct pflex_model *m;
  struct pflex_dataset d;
  double *pred;
  bool *prior; /* predicted by the population prior */
  size_t nprior;
  struct pflex_scores sc;
  size_t nmeasured; /* groups the scores are over */
  enum pflex_provenance provenance; /* the model's training runs and these runs, combined */
};

static const char *by(const struct prediction *pr, size_t i) {
  return pr->prior[i] ? "prior" : "model";
}

/* Predicts every group's PFI from its uncapped run; -1 after printing why not. */
static int predict_groups(const struct pflex_runset *set, bool fallback, struct prediction *pr) {
  const struct pflex_dataset *d = &pr->d;
  pr->pred = calloc(d->n ? d->n : 1, sizeof *pr->pred);
  pr->prior = calloc(d->n ? d->n : 1, sizeof *pr->prior);
  if (!pr->pred || !pr->prior) {
    cli_error("out of memory");
    return -1;
  }
  for (size_t i = 0; i < d->n; i++) {
    struct pflex_diag fd;
    pflex_diag_clear(&fd);
    int err = pflex_model_predict_run(pr->m, set, d->uncapped[i], fallback, &pr->pred[i],
                                      &pr->prior[i], &fd);
    if (err) {
      char buf[1024];
      pflex_diag_format(&fd, buf, sizeof buf);
      cli_error("cannot predict group '%s': %s (--prior-fallback uses the population prior)",
                d->groups[i], buf);
      return -1;
    }
    if (pr->prior[i] && fd.message[0])
      cli_warn("group '%s' lacks %s: predicted by the population prior", d->groups[i], fd.message);
    pr->nprior += pr->prior[i];
  }
  if (pflex_scores_measured(d->y, pr->pred, d->n, &pr->sc, &pr->nmeasured) == -ENOMEM) {
    cli_error("out of memory");
    return -1;
  }
  return 0;
}

static int print_json(const struct prediction *pr) {
  const struct pflex_dataset *d = &pr->d;
  json_t *arr = json_array(), *fa = json_array();
  for (size_t j = 0; fa && j < pr->m->feats.n; j++)
    json_array_append_new(fa, json_string(pr->m->feats.names[j]));
  for (size_t i = 0; arr && i < d->n; i++)
    json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:I, s:o, s:s, s:o}", "group",
                                         d->groups[i], "arch", pflex_arch_name(d->arch[i]), "task",
                                         pflex_task_name(d->task[i]), "runs",
                                         (json_int_t)d->nruns[i], "predicted", jnum(pr->pred[i]),
                                         "prediction", by(pr, i), "measured", jnum(d->y[i])));
  const struct pflex_scores *sc = &pr->sc;
  json_t *root =
      json_pack("{s:s, s:s, s:o, s:s, s:o, s:{s:I, s:o, s:o, s:o}}", "model", pr->model_path,
                "kind", pflex_model_kind_name(pr->m->kind), "features", fa, "runs", pr->runs_path,
                "predictions", arr, "scores", "n", (json_int_t)pr->nmeasured, "r2", jnum(sc->r2),
                "rmse", jnum(sc->rmse), "rho", jnum(sc->rho));
  if (root && cli_json_provenance(root, pr->provenance)) json_decref(root), root = NULL;
  return cli_print_json(root, JSON_REAL_PRECISION(17));
}

static void print_csv(const struct prediction *pr) {
  const struct pflex_dataset *d = &pr->d;
  printf("group,arch,task,runs,predicted,prediction,measured,provenance\n");
  for (size_t i = 0; i < d->n; i++) {
    pflex_csv_write_field(stdout, d->groups[i], ',');
    printf("%s,%s,%zu,", pflex_arch_name(d->arch[i]), pflex_task_name(d->task[i]), d->nruns[i]);
    pflex_csv_write_double(stdout, pr->pred[i], ',');
    printf("%s,", by(pr, i));
    if (isfinite(d->y[i])) pflex_csv_write_double(stdout, d->y[i], 0);
    printf(",%s\n", pflex_provenance_name(pr->provenance));
  }
}

static void print_table(const struct prediction *pr) {
  const struct pflex_dataset *d = &pr->d;
  const struct pflex_model *m = pr->m;
  printf("model '%s' (%s", pr->model_path, pflex_model_kind_name(m->kind));
  for (size_t j = 0; j < m->feats.n; j++)
    printf("%s%s", j ? "," : ": ", m->feats.names[j]);
  printf(")\n");
  cli_print_provenance(stdout, pr->provenance);
  /* "runs": Eq. 1 on the runs' own points, a measurement only if they are. */
  printf("runs' ");
  cli_target_line(stdout, &m->target);
  printf("%-44s %-9s %4s %9s %9s  %s\n", "group", "cluster", "runs", "predicted", "runs' PFI", "by");
  for (size_t i = 0; i < d->n; i++) {
    printf("%-44s %-9s %4zu", d->groups[i],
           pflex_cluster_name(d->arch[i], d->task[i], PFLEX_LOCO_ARCH_TASK), d->nruns[i]);
    cli_num(stdout, 10, pr->pred[i]);
    cli_num(stdout, 10, d->y[i]);
    printf("  %s\n", by(pr, i));
  }
  if (pr->nmeasured >= 2) {
    printf("\nagainst the runs' PFI (%zu groups, %s): ", pr->nmeasured,
           pflex_provenance_name(pr->provenance));
    cli_scores(stdout, &pr->sc);
    printf("\n");
  }
  if (pr->nprior)
    printf("%zu group%s predicted by the population prior\n", pr->nprior,
           pr->nprior == 1 ? "" : "s");
}

static int run(int argc, char **argv) {
  struct args args = {.unit = PFLEX_TPUT_TOKENS_PER_S};
  struct cli_parsed p;
  int err = cli_parse(&spec, argc, argv, &args, &p);
  if (err) return cli_parse_status(err);
  struct pflex_model m;
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  err = pflex_model_read_json(args.model, &m, &diag);
  if (err) {
    cli_error_diag("cannot read model", &diag, err);
    return PFLEX_EXIT_FAIL;
  }
  struct prediction pr = {.model_path = args.model, .runs_path = p.operands[0], .m = &m};
  pflex_dataset_init(&pr.d);
  struct pflex_runset set;
  pflex_runset_init(&set);
  struct pflex_runs_read_opts ro = {.unit = args.unit};
  struct pflex_featlist none;
  pflex_featlist_init(&none);
  int rc = PFLEX_EXIT_FAIL;
  if (cli_load_runs(pr.runs_path, &ro, &set)) goto out;
  err = pflex_dataset_build(&set, args.set, &none, &m.target, false, &pr.d, &diag);
  if (err) {
    cli_error_diag("cannot use", &diag, err);
    goto out;
  }
  if (predict_groups(&set, args.prior_fallback, &pr)) goto out;
  pr.provenance = pflex_provenance_combine(m.provenance, pflex_runs_provenance(&set, NULL, 0));
  if (args.json) {
    if (print_json(&pr)) goto out;
  } else if (args.csv) {
    print_csv(&pr);
  } else {
    print_table(&pr);
  }
  rc = PFLEX_EXIT_OK;
out:
  free(pr.pred);
  free(pr.prior);
  pflex_dataset_release(&pr.d);
  pflex_runset_release(&set);
  pflex_model_release(&m);
  return rc;
}

const struct pflex_cmd pflex_cmd_predict = {
    .name = "predict",
    .run = run,
    .summary = "predict the PFI of jobs from their uncapped telemetry with a model file",
    .specs = (const struct cli_spec *const[]){&spec, NULL},
};
