/* `pflex aggregate`: one telemetry series (one job at one cap) -> one run row.
 *
 * Reads a series CSV, finds the training phase and reduces it by the paper's
 * top-10% mean (docs/telemetry.md), and prints the run as a table, as a runs
 * CSV row (--csv, or --out FILE, --append to add it to a file) or as JSON.
 * Phase counts go to stderr. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/util.h"
#include "pflex/runs.h"
#include "pflex/runs_csv.h"
#include "pflex/series.h"
#include "pflex/series_csv.h"

struct args {
  const char *group, *gpu_type, *tput, *tput_column, *out;
  double cap, fb_threshold_gib;
  enum pflex_tput_unit unit;
  struct pflex_phase_opts phase;
  bool append, csv, json;
};

#define A struct args
static const struct cli_option options[] = {
    {CLI_STRING("group", "NAME", A, group,
                "sweep group of the run (default: SERIES file name without .csv)")},
    {CLI_STRING("gpu-type", "NAME", A, gpu_type, "GPU type, e.g. H200 (default: unknown)")},
    {CLI_DOUBLE("cap", "W", A, cap, 1, 1e5,
                "per-GPU power cap of the run; the TDP when uncapped (default: the series' "
                "power_limit_w metric, else required)")},
    {CLI_STRING("tput", "FILE", A, tput,
                "throughput samples from a separate CSV (time_s, throughput)")},
    {CLI_ENUM_FN("unit", "U", A, unit, cli_unit_name,
                 "throughput unit: tokens (default), samples, steps, step-time")},
    {CLI_STRING("tput-column", "NAME", A, tput_column,
                "throughput column (default by unit: tokens_per_s, samples_per_s, steps_per_s, "
                "s_per_step)")},
    {CLI_DOUBLE("fb-threshold-gib", "G", A, fb_threshold_gib, 0, 1e6,
                "warmup while frame-buffer use < G GiB (default 10)")},
    {CLI_DOUBLE("util-threshold", "PCT", A, phase.util_threshold, 0, 100,
                "training needs mean GPU utilization >= PCT (default 50)"),
     .flags = CLI_OPEN_MIN},
    {CLI_DOUBLE("sustain-s", "S", A, phase.sustain_s, 0, 1e7,
                "... held for at least S seconds (default 30)")},
    {CLI_DOUBLE("top", "F", A, phase.top, 0, 1,
                "fraction of training samples averaged (default 0.10)"),
     .flags = CLI_OPEN_MIN},
    {CLI_DOUBLE("align-s", "S", A, phase.align_s, 0, 1e7,
                "time tolerance for aligning GPUs' samples (default: half the median sampling "
                "interval)")},
    {CLI_STRING("out", "FILE", A, out, "write the run as a runs CSV file (atomic)")},
    {CLI_FLAG("append", A, append, "with --out: add the run to the runs already in FILE"),
     .needs = "out"},
    {CLI_FLAG("csv", A, csv, "print the run as a runs CSV row")},
    {CLI_FLAG("json", A, json, "print JSON")},
    {CLI_END}};
#undef A

static const struct cli_spec spec = {
    .name = "aggregate",
    .usage = "pflex aggregate SERIES.csv [options]",
    .about = "Aggregates one run's telemetry series over its training phase (mean of the top "
             "10%) into one run row (docs/telemetry.md); phase counts go to stderr.",
    .options = options,
    .operands = "SERIES.csv",
    .min_operands = 1,
    .max_operands = 1,
    .exclusive = (const char *const[]){"csv json", NULL}};

/* The runs CSV columns of a unit (the one unit table). */
static const char *tput_column_of(enum pflex_tput_unit unit) {
  return pflex_tput_unit_info(unit)->column;
}

static const char *sd_column_of(enum pflex_tput_unit unit) {
  return pflex_tput_unit_info(unit)->sd_column;
}

/* The throughput as the runs CSV writes it: a time per step is the inverse of
 * the aggregated rate, its standard error scaled by the derivative of 1/x. */
static void tput_out(const struct pflex_agg_value *t, enum pflex_tput_unit unit, double *ret_v,
                     double *ret_se) {
  bool inv = unit == PFLEX_TPUT_PER_STEP_TIME;
  *ret_v = inv ? 1.0 / t->value : t->value;
  *ret_se = inv ? t->se / (t->value * t->value) : t->se;
}

static char *default_group(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t n = strlen(base);
  if (n > 4 && strcmp(base + n - 4, ".csv") == 0) n -= 4;
  char *g = malloc(n + 1);
  if (g) {
    memcpy(g, base, n);
    g[n] = '\0';
  }
  return g;
}

static json_t *value_json(const struct pflex_agg_value *v) {
  if (!v->valid) return json_null();
  return json_pack("{s:f,s:f,s:f,s:I,s:I}", "value", v->value, "sd", v->sd, "se", v->se, "k",
                   (json_int_t)v->k, "n", (json_int_t)v->n);
}

static int print_json(const struct pflex_series_agg *a, const char *group, const char *gpu_type,
                      double cap, enum pflex_tput_unit unit) {
  double tv, tse;
  tput_out(&a->tput, unit, &tv, &tse);
  json_t *phases = json_object();
  for (int p = 0; p < PFLEX_PHASE_COUNT; p++)
    json_object_set_new(phases, pflex_phase_name(p),
                        json_pack("{s:I,s:I}", "steps", (json_int_t)a->phase_steps[p], "samples",
                                  (json_int_t)a->phase_samples[p]));
  json_t *metrics = json_array();
  for (size_t m = 0; m < a->nmetrics; m++) {
    json_t *o = value_json(&a->metrics[m].agg);
    if (json_is_null(o)) {
      json_decref(o);
      o = json_object();
      json_object_set_new(o, "value", json_null());
    }
    json_object_set_new(o, "name", json_string(a->metrics[m].name));
    json_object_set_new(o, "kind",
                        json_string(a->metrics[m].kind == PFLEX_AGG_SUM ? "sum" : "mean"));
    json_array_append_new(metrics, o);
  }
  json_t *root =
      json_pack("{s:s,s:s,s:i,s:f,s:f,s:f,s:f,s:f,s:o,s:{s:f,s:f,s:f},s:I,s:o,s:o,s:o}", "group",
                group, "gpu", gpu_type, "gpus", a->gpus, "cap_w", cap, "power_w", a->power.value,
                "power_sd", a->power.se, tput_column_of(unit), tv, sd_column_of(unit), tse,
                "phases", phases, "training", "start_s", a->train_start_s, "end_s", a->train_end_s,
                "step_s", a->step_s, "incomplete_steps", (json_int_t)a->incomplete_steps, "power",
                value_json(&a->power), "tput", value_json(&a->tput), "metrics", metrics);
  return cli_print_json(root, JSON_REAL_PRECISION(12));
}

static void print_table(const struct pflex_series_agg *a, const char *group, const char *gpu_type,
                        double cap, enum pflex_tput_unit unit) {
  double tv, tse, tsd;
  tput_out(&a->tput, unit, &tv, &tse);
  tsd =
      unit == PFLEX_TPUT_PER_STEP_TIME ? a->tput.sd / (a->tput.value * a->tput.value) : a->tput.sd;
  printf("run       %s (%s x %d, cap %g W)\n", group, gpu_type, a->gpus, cap);
  printf("training  %.1f s to %.1f s, samples every %.3g s\n", a->train_start_s, a->train_end_s,
         a->step_s);
  printf("\n%-22s %14s %12s %12s %6s %7s  %s\n", "metric", "top-mean", "sd", "se", "k", "n",
         "over GPUs");
  printf("%-22s %14.6g %12.4g %12.4g %6zu %7zu  %s\n", tput_column_of(unit), tv, tsd, tse,
         a->tput.k, a->tput.n, "job");
  for (size_t m = 0; m < a->nmetrics; m++) {
    const struct pflex_series_metric_agg *ma = &a->metrics[m];
    if (!ma->agg.valid) {
      printf("%-22s %14s\n", ma->name, "-");
      continue;
    }
    printf("%-22s %14.6g %12.4g %12.4g %6zu %7zu  %s\n", ma->name, ma->agg.value, ma->agg.sd,
           ma->agg.se, ma->agg.k, ma->agg.n, ma->kind == PFLEX_AGG_SUM ? "sum" : "mean");
  }
}

/* Reads the series and, from its own file, the throughput; -1 after printing why not. */
static int read_series(const char *path, const char *tput_path,
                       const struct pflex_series_read_opts *ro, struct pflex_series *s) {
  struct pflex_diag d;
  int r = pflex_series_read_csv(path, ro, s, &d);
  if (r >= 0 && tput_path) r = pflex_series_read_tput_csv(tput_path, ro, s, &d);
  if (r >= 0) return 0;
  cli_error_diag("cannot read", &d, r);
  return -1;
}

/* Aggregates the training phase and reports its phases on stderr; -1 after
 * printing why there is no run (no phase, no positive throughput). */
static int aggregate(const char *path, const struct pflex_series *s,
                     const struct pflex_phase_opts *po, const char *tput_column,
                     struct pflex_series_agg *a) {
  struct pflex_diag d;
  int r = pflex_series_aggregate(s, po, a, &d);
  if (r < 0) {
    char what[600];
    snprintf(what, sizeof what, "cannot aggregate '%s':", path);
    d.file[0] = '\0';
    cli_error_diag(what, &d, r);
    return -1;
  }
  fprintf(stderr,
          "phases of '%s' (samples/steps): warmup %zu/%zu, startup %zu/%zu, training "
          "%zu/%zu, other %zu/%zu; %d GPUs\n",
          path, a->phase_samples[PFLEX_PHASE_WARMUP], a->phase_steps[PFLEX_PHASE_WARMUP],
          a->phase_samples[PFLEX_PHASE_STARTUP], a->phase_steps[PFLEX_PHASE_STARTUP],
          a->phase_samples[PFLEX_PHASE_TRAINING], a->phase_steps[PFLEX_PHASE_TRAINING],
          a->phase_samples[PFLEX_PHASE_OTHER], a->phase_steps[PFLEX_PHASE_OTHER], a->gpus);
  if (a->incomplete_steps)
    cli_warn("%zu training steps lack some GPU's power reading and were left out of the power sum",
             a->incomplete_steps);
  if (a->tput.valid && a->tput.value > 0) return 0;
  cli_error("cannot aggregate '%s': no positive throughput sample (column '%s') in the training "
            "window %.1f s to %.1f s (%zu samples in all)",
            path, tput_column, a->train_start_s, a->train_end_s, s->ntput);
  return -1;
}

/* The run's cap: --cap, else the series' power_limit_w metric; NAN after
 * printing that neither is there. */
static double run_cap(double cap, const struct pflex_series *s, const struct pflex_series_agg *a) {
  size_t m;
  if (!isnan(cap)) return cap;
  if (pflex_series_find_metric(s, "power_limit_w", &m) == 0 && a->metrics[m].agg.valid)
    return a->metrics[m].agg.value;
  cli_error("the run's cap is unknown: give --cap W (the TDP for an uncapped run)");
  return NAN;
}

/* The run to add to --out: the group must run on the same GPUs there and
 * lack a run at this cap. */
struct new_run {
  const char *group, *gpu_type;
  int gpus;
  double cap;
};

/* With --append: reads the runs already in out (partial groups are fine: the
 * sweep group may still lack its uncapped run) and checks the new run fits
 * them; -1 after printing why not. */
static int read_out(const char *out, enum pflex_tput_unit unit, const struct new_run *nr,
                    struct pflex_runset *set) {
  struct pflex_runs_read_opts rro = {.unit = unit, .partial_groups = true};
  struct pflex_diag d;
  int r = pflex_runs_read_csv(out, &rro, set, &d);
  if (r < 0) {
    cli_error_diag("cannot read", &d, r);
    return -1;
  }
  if (set->unit != unit) {
    cli_error("'%s' holds throughput as %s, this run as %s", out, pflex_tput_unit_name(set->unit),
              pflex_tput_unit_name(unit));
    return -1;
  }
  for (size_t i = 0; i < set->n; i++) {
    const struct pflex_run *o = &set->runs[i];
    if (strcmp(o->group, nr->group) != 0) continue;
    if (strcmp(o->gpu, nr->gpu_type) != 0 || o->gpus != nr->gpus) {
      cli_error("'%s': group '%s' runs on %d x %s (line %zu), this run on %d x %s", out, nr->group,
                o->gpus, o->gpu, o->line, nr->gpus, nr->gpu_type);
      return -1;
    }
    if (o->cap_w == nr->cap) {
      cli_error("'%s' already has a run of group '%s' at cap %g W (line %zu)", out, nr->group,
                nr->cap, o->line);
      return -1;
    }
  }
  return 0;
}

static int run(int argc, char **argv) {
  struct args args = {.gpu_type = "unknown", .cap = NAN, .unit = PFLEX_TPUT_TOKENS_PER_S};
  pflex_phase_opts_default(&args.phase);
  args.fb_threshold_gib = args.phase.fb_threshold_mib / 1024.0;
  struct cli_parsed p;
  int perr = cli_parse(&spec, argc, argv, &args, &p);
  if (perr) return cli_parse_status(perr);
  if (cli_given(&p, "fb-threshold-gib"))
    args.phase.fb_threshold_mib = args.fb_threshold_gib * 1024.0;
  const char *path = p.operands[0], *out = args.out;
  enum pflex_tput_unit unit = args.unit;
  const char *tput_column = args.tput_column ? args.tput_column : tput_column_of(unit);

  int status = PFLEX_EXIT_FAIL;
  char *group_buf = NULL;
  struct pflex_series s;
  struct pflex_series_agg a = {0};
  struct pflex_runset set;
  pflex_series_init(&s);
  pflex_runset_init(&set);
  struct pflex_series_read_opts ro = {.tput_column = tput_column,
                                      .per_step_time = unit == PFLEX_TPUT_PER_STEP_TIME};
  if (read_series(path, args.tput, &ro, &s) || aggregate(path, &s, &args.phase, tput_column, &a))
    goto out;
  struct new_run nr = {.group = args.group,
                       .gpu_type = args.gpu_type,
                       .gpus = a.gpus,
                       .cap = run_cap(args.cap, &s, &a)};
  if (isnan(nr.cap)) {
    status = PFLEX_EXIT_USAGE;
    goto out;
  }
  if (!nr.group) nr.group = group_buf = default_group(path);
  if (!nr.group || !nr.group[0]) {
    cli_error("cannot derive a group name from '%s': give --group", path);
    goto out;
  }
  if (!pflex_tput_unit_absolute(unit))
    fprintf(stderr, "note: throughput is %s: only ratios are meaningful\n",
            pflex_tput_unit_name(unit));
  set.unit = unit;
  if (args.append && access(out, F_OK) == 0 && read_out(out, unit, &nr, &set)) goto out;
  int r = pflex_series_agg_append_run(&a, nr.group, nr.gpu_type, nr.cap, &set);
  if (r < 0) {
    cli_error("cannot build the run: %s", pflex_strerror(r));
    goto out;
  }
  if (out && (r = pflex_runs_write_csv(&set, out)) < 0) {
    cli_error("cannot write '%s': %s", out, pflex_strerror(r));
    goto out;
  }
  if (out)
    fprintf(stderr, "wrote group '%s' at cap %g W to '%s' (%zu run%s in the file)\n", nr.group,
            nr.cap, out, set.n, set.n == 1 ? "" : "s");
  if (args.json) {
    if (print_json(&a, nr.group, nr.gpu_type, nr.cap, unit)) goto out; /* error already printed */
  } else if (args.csv)
    r = pflex_runs_write_csv_stream(&set, stdout);
  else if (!out)
    print_table(&a, nr.group, nr.gpu_type, nr.cap, unit);
  if (r < 0) {
    cli_error("cannot print the run: %s", pflex_strerror(r));
    goto out;
  }
  status = PFLEX_EXIT_OK;
out:
  free(group_buf);
  pflex_runset_release(&set);
  pflex_series_agg_release(&a);
  pflex_series_release(&s);
  return status;
}

const struct pflex_cmd pflex_cmd_aggregate = {
    .name = "aggregate",
    .run = run,
    .summary = "aggregate a run's telemetry series (training phase, top-10% mean) into a run row",
    .specs = (const struct cli_spec *const[]){&spec, NULL},
};
