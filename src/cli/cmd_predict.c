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

struct row {
  double pred, measured;
  bool prior;
};

static json_t *jnum(double v) {
  return isfinite(v) ? json_real(v) : json_null();
}

static int run(int argc, char **argv) {
  struct args args = {.unit = PFLEX_TPUT_TOKENS_PER_S};
  struct cli_parsed p;
  int perr = cli_parse(&spec, argc, argv, &args, &p);
  if (perr) return cli_parse_status(perr);
  const char *model_path = args.model, *set_filter = args.set;
  bool fallback = args.prior_fallback, json = args.json, csv = args.csv;
  struct pflex_runs_read_opts ro = {.unit = args.unit};
  const char *path = p.operands[0];
  struct pflex_model m;
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  int err = pflex_model_read_json(model_path, &m, &diag);
  if (err) {
    cli_error_diag("cannot read model", &diag, err);
    return PFLEX_EXIT_FAIL;
  }
  struct pflex_runset set;
  pflex_runset_init(&set);
  struct pflex_dataset d;
  pflex_dataset_init(&d);
  struct row *rows = NULL;
  int rc = PFLEX_EXIT_FAIL;
  if (cli_load_runs(path, &ro, &set)) goto out;
  struct pflex_featlist none;
  pflex_featlist_init(&none);
  err = pflex_dataset_build(&set, set_filter, &none, &m.target, false, &d, &diag);
  if (err) {
    cli_error_diag("cannot use", &diag, err);
    goto out;
  }
  rows = calloc(d.n, sizeof *rows);
  if (!rows) {
    cli_error("out of memory");
    goto out;
  }
  size_t nprior = 0;
  for (size_t i = 0; i < d.n; i++) {
    rows[i].measured = d.y[i];
    struct pflex_diag fd;
    pflex_diag_clear(&fd);
    err = pflex_model_predict_run(&m, &set, d.uncapped[i], fallback, &rows[i].pred, &rows[i].prior,
                                  &fd);
    if (err) {
      char buf[1024];
      pflex_diag_format(&fd, buf, sizeof buf);
      cli_error("cannot predict group '%s': %s (--prior-fallback uses the population prior)",
                d.groups[i], buf);
      goto out;
    }
    if (rows[i].prior && fd.message[0])
      cli_warn("group '%s' lacks %s: predicted by the population prior", d.groups[i], fd.message);
    nprior += rows[i].prior;
  }
  /* Scores over the groups with a measured PFI. */
  size_t nm = 0;
  double *ym = malloc((d.n ? d.n : 1) * sizeof *ym), *pm = malloc((d.n ? d.n : 1) * sizeof *pm);
  if (!ym || !pm) {
    free(ym);
    free(pm);
    cli_error("out of memory");
    goto out;
  }
  for (size_t i = 0; i < d.n; i++)
    if (isfinite(rows[i].measured)) {
      ym[nm] = rows[i].measured;
      pm[nm++] = rows[i].pred;
    }
  struct pflex_scores sc = {NAN, NAN, NAN};
  if (nm >= 2) pflex_scores_compute(ym, pm, nm, &sc);
  free(ym);
  free(pm);

  if (json) {
    json_t *arr = json_array(), *fa = json_array();
    for (size_t j = 0; fa && j < m.feats.n; j++)
      json_array_append_new(fa, json_string(m.feats.names[j]));
    for (size_t i = 0; arr && i < d.n; i++)
      json_array_append_new(
          arr, json_pack("{s:s, s:s, s:s, s:I, s:o, s:s, s:o}", "group", d.groups[i], "arch",
                         pflex_arch_name(d.arch[i]), "task", pflex_task_name(d.task[i]), "runs",
                         (json_int_t)d.nruns[i], "predicted", jnum(rows[i].pred), "prediction",
                         rows[i].prior ? "prior" : "model", "measured", jnum(rows[i].measured)));
    json_t *root = json_pack("{s:s, s:s, s:o, s:s, s:o, s:{s:I, s:o, s:o, s:o}}", "model",
                             model_path, "kind", pflex_model_kind_name(m.kind), "features", fa,
                             "runs", path, "predictions", arr, "scores", "n", (json_int_t)nm, "r2",
                             jnum(sc.r2), "rmse", jnum(sc.rmse), "rho", jnum(sc.rho));
    if (cli_print_json(root, JSON_REAL_PRECISION(17))) goto out;
  } else if (csv) {
    printf("group,arch,task,runs,predicted,prediction,measured\n");
    for (size_t i = 0; i < d.n; i++) {
      pflex_csv_write_field(stdout, d.groups[i], ',');
      printf("%s,%s,%zu,", pflex_arch_name(d.arch[i]), pflex_task_name(d.task[i]), d.nruns[i]);
      pflex_csv_write_double(stdout, rows[i].pred, ',');
      printf("%s,", rows[i].prior ? "prior" : "model");
      if (isfinite(rows[i].measured)) pflex_csv_write_double(stdout, rows[i].measured, 0);
      printf("\n");
    }
  } else {
    printf("model '%s' (%s", model_path, pflex_model_kind_name(m.kind));
    for (size_t j = 0; j < m.feats.n; j++)
      printf("%s%s", j ? "," : ": ", m.feats.names[j]);
    printf(")\nmeasured ");
    pc_target_line(stdout, &m.target);
    printf("%-44s %-9s %4s %9s %9s  %s\n", "group", "cluster", "runs", "predicted", "measured",
           "by");
    for (size_t i = 0; i < d.n; i++) {
      printf("%-44s %-9s %4zu", d.groups[i],
             pflex_cluster_name(d.arch[i], d.task[i], PFLEX_LOCO_ARCH_TASK), d.nruns[i]);
      pc_num(stdout, 10, rows[i].pred);
      pc_num(stdout, 10, rows[i].measured);
      printf("  %s\n", rows[i].prior ? "prior" : "model");
    }
    if (nm >= 2) {
      printf("\nagainst the measured PFI (%zu groups): ", nm);
      pc_scores(stdout, &sc);
      printf("\n");
    }
    if (nprior)
      printf("%zu group%s predicted by the population prior\n", nprior, nprior == 1 ? "" : "s");
  }
  rc = PFLEX_EXIT_OK;
out:
  free(rows);
  pflex_dataset_release(&d);
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
