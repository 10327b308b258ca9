/* `pflex aggregate`: one telemetry series (one job at one cap) -> one run row.
 *
 * Reads a series CSV, finds the training phase and reduces it by the paper's
 * top-10% mean (docs/telemetry.md), and prints the run as a table, as a runs
 * CSV row (--csv, or --out FILE, --append to add it to a file) or as JSON.
 * Phase counts go to stderr. */
#include <errno.h>
#include <getopt.h>
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

#define USAGE                                                                                      \
  "pflex aggregate SERIES.csv [options]\n"                                                         \
  "Aggregates one run's telemetry series over its training phase (mean of the top 10%).\n"         \
  "  --group NAME            sweep group of the run (default: SERIES file name without .csv)\n"    \
  "  --gpu-type NAME         GPU type, e.g. H200 (default: unknown)\n"                             \
  "  --cap W                 per-GPU power cap of the run; the TDP when uncapped (default: the\n"  \
  "                          series' power_limit_w metric, else required)\n"                       \
  "  --tput FILE             throughput samples from a separate CSV (time_s, throughput)\n"        \
  "  --unit U                throughput unit: tokens (default), samples, steps, step-time\n"       \
  "  --tput-column NAME      throughput column (default by unit: tokens_per_s, samples_per_s,\n"   \
  "                          steps_per_s, s_per_step)\n"                                           \
  "  --fb-threshold-gib G    warmup while frame-buffer use < G GiB (default 10)\n"                 \
  "  --util-threshold PCT    training needs mean GPU utilization >= PCT (default 50)\n"            \
  "  --sustain-s S           ... held for at least S seconds (default 30)\n"                       \
  "  --top F                 fraction of training samples averaged (default 0.10)\n"               \
  "  --align-s S             time tolerance for aligning GPUs' samples (default: half the\n"       \
  "                          median sampling interval)\n"                                          \
  "  --out FILE              write the run as a runs CSV file (atomic)\n"                          \
  "  --append                with --out: add the run to the runs already in FILE\n"                \
  "  --csv                   print the run as a runs CSV row\n"                                    \
  "  --json                  print JSON"

enum {
  OPT_GROUP = 1000,
  OPT_GPU_TYPE,
  OPT_CAP,
  OPT_TPUT,
  OPT_UNIT,
  OPT_TPUT_COLUMN,
  OPT_FB,
  OPT_UTIL,
  OPT_SUSTAIN,
  OPT_TOP,
  OPT_ALIGN,
  OPT_OUT,
  OPT_APPEND,
  OPT_CSV,
  OPT_JSON,
};

static const char *const default_columns[] = {
    [PFLEX_TPUT_TOKENS_PER_S] = "tokens_per_s",
    [PFLEX_TPUT_SAMPLES_PER_S] = "samples_per_s",
    [PFLEX_TPUT_STEPS_PER_S] = "steps_per_s",
    [PFLEX_TPUT_PER_STEP_TIME] = "s_per_step",
};

static const char *const sd_columns[] = {
    [PFLEX_TPUT_TOKENS_PER_S] = "tokens_sd",
    [PFLEX_TPUT_SAMPLES_PER_S] = "samples_sd",
    [PFLEX_TPUT_STEPS_PER_S] = "steps_sd",
    [PFLEX_TPUT_PER_STEP_TIME] = "s_per_step_sd",
};

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
                "power_sd", a->power.se, default_columns[unit], tv, sd_columns[unit], tse, "phases",
                phases, "training", "start_s", a->train_start_s, "end_s", a->train_end_s, "step_s",
                a->step_s, "incomplete_steps", (json_int_t)a->incomplete_steps, "power",
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
  printf("%-22s %14.6g %12.4g %12.4g %6zu %7zu  %s\n", default_columns[unit], tv, tsd, tse,
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

static int run(int argc, char **argv) {
  static const struct option longopts[] = {
      {"group", required_argument, NULL, OPT_GROUP},
      {"gpu-type", required_argument, NULL, OPT_GPU_TYPE},
      {"cap", required_argument, NULL, OPT_CAP},
      {"tput", required_argument, NULL, OPT_TPUT},
      {"unit", required_argument, NULL, OPT_UNIT},
      {"tput-column", required_argument, NULL, OPT_TPUT_COLUMN},
      {"fb-threshold-gib", required_argument, NULL, OPT_FB},
      {"util-threshold", required_argument, NULL, OPT_UTIL},
      {"sustain-s", required_argument, NULL, OPT_SUSTAIN},
      {"top", required_argument, NULL, OPT_TOP},
      {"align-s", required_argument, NULL, OPT_ALIGN},
      {"out", required_argument, NULL, OPT_OUT},
      {"append", no_argument, NULL, OPT_APPEND},
      {"csv", no_argument, NULL, OPT_CSV},
      {"json", no_argument, NULL, OPT_JSON},
      {NULL, 0, NULL, 0},
  };
  const char *group = NULL, *gpu_type = "unknown", *tput_path = NULL, *tput_column = NULL,
             *out = NULL;
  double cap = NAN;
  bool csv = false, json = false, append = false;
  enum pflex_tput_unit unit = PFLEX_TPUT_TOKENS_PER_S;
  struct pflex_phase_opts po;
  pflex_phase_opts_default(&po);
  double v;
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch (c) {
    case OPT_GROUP: group = optarg; break;
    case OPT_GPU_TYPE: gpu_type = optarg; break;
    case OPT_CAP:
      if (cli_parse_double("--cap", optarg, 1, 1e5, &cap) < 0) return PFLEX_EXIT_USAGE;
      break;
    case OPT_TPUT: tput_path = optarg; break;
    case OPT_UNIT:
      if (cli_parse_unit_option(optarg, &unit) < 0) return PFLEX_EXIT_USAGE;
      break;
    case OPT_TPUT_COLUMN: tput_column = optarg; break;
    case OPT_FB:
      if (cli_parse_double("--fb-threshold-gib", optarg, 0, 1e6, &v) < 0) return PFLEX_EXIT_USAGE;
      po.fb_threshold_mib = v * 1024.0;
      break;
    case OPT_UTIL:
      if (cli_parse_double("--util-threshold", optarg, 1e-9, 100, &po.util_threshold) < 0)
        return PFLEX_EXIT_USAGE;
      break;
    case OPT_SUSTAIN:
      if (cli_parse_double("--sustain-s", optarg, 0, 1e7, &po.sustain_s) < 0)
        return PFLEX_EXIT_USAGE;
      break;
    case OPT_TOP:
      if (cli_parse_double("--top", optarg, 1e-9, 1, &po.top) < 0) return PFLEX_EXIT_USAGE;
      break;
    case OPT_ALIGN:
      if (cli_parse_double("--align-s", optarg, 0, 1e7, &po.align_s) < 0) return PFLEX_EXIT_USAGE;
      break;
    case OPT_OUT: out = optarg; break;
    case OPT_APPEND: append = true; break;
    case OPT_CSV: csv = true; break;
    case OPT_JSON: json = true; break;
    default: cli_bad_option("aggregate", argv[optind - 1]); return PFLEX_EXIT_USAGE;
    }
  }
  if (optind != argc - 1) {
    cli_error("aggregate takes exactly one SERIES.csv; see 'pflex help aggregate'");
    return PFLEX_EXIT_USAGE;
  }
  if (append && !out) {
    cli_error("--append needs --out FILE");
    return PFLEX_EXIT_USAGE;
  }
  if (csv && json) {
    cli_error("--csv and --json exclude each other");
    return PFLEX_EXIT_USAGE;
  }
  const char *path = argv[optind];
  if (!tput_column) tput_column = default_columns[unit];

  int status = PFLEX_EXIT_FAIL;
  char *group_buf = NULL;
  struct pflex_series s;
  struct pflex_series_agg a = {0};
  struct pflex_runset set;
  pflex_series_init(&s);
  pflex_runset_init(&set);
  struct pflex_diag d;
  struct pflex_series_read_opts ro = {.tput_column = tput_column,
                                      .per_step_time = unit == PFLEX_TPUT_PER_STEP_TIME};
  int r = pflex_series_read_csv(path, &ro, &s, &d);
  if (r < 0) {
    cli_error_diag("cannot read", &d, r);
    goto out;
  }
  if (tput_path && (r = pflex_series_read_tput_csv(tput_path, &ro, &s, &d)) < 0) {
    cli_error_diag("cannot read", &d, r);
    goto out;
  }
  r = pflex_series_aggregate(&s, &po, &a, &d);
  if (r < 0) {
    char what[600];
    snprintf(what, sizeof what, "cannot aggregate '%s':", path);
    d.file[0] = '\0';
    cli_error_diag(what, &d, r);
    goto out;
  }
  fprintf(stderr,
          "phases of '%s' (samples/steps): warmup %zu/%zu, startup %zu/%zu, training "
          "%zu/%zu, other %zu/%zu; %d GPUs\n",
          path, a.phase_samples[PFLEX_PHASE_WARMUP], a.phase_steps[PFLEX_PHASE_WARMUP],
          a.phase_samples[PFLEX_PHASE_STARTUP], a.phase_steps[PFLEX_PHASE_STARTUP],
          a.phase_samples[PFLEX_PHASE_TRAINING], a.phase_steps[PFLEX_PHASE_TRAINING],
          a.phase_samples[PFLEX_PHASE_OTHER], a.phase_steps[PFLEX_PHASE_OTHER], a.gpus);
  if (a.incomplete_steps)
    cli_warn("%zu training steps lack some GPU's power reading and were left out of the power sum",
             a.incomplete_steps);
  if (!a.tput.valid || !(a.tput.value > 0)) {
    cli_error("cannot aggregate '%s': no positive throughput sample (column '%s') in the training "
              "window %.1f s to %.1f s (%zu samples in all)",
              path, tput_column, a.train_start_s, a.train_end_s, s.ntput);
    goto out;
  }
  if (isnan(cap)) {
    size_t m;
    if (pflex_series_find_metric(&s, "power_limit_w", &m) == 0 && a.metrics[m].agg.valid) {
      cap = a.metrics[m].agg.value;
    } else {
      cli_error("the run's cap is unknown: give --cap W (the TDP for an uncapped run)");
      status = PFLEX_EXIT_USAGE;
      goto out;
    }
  }
  if (!group) group = group_buf = default_group(path);
  if (!group || !group[0]) {
    cli_error("cannot derive a group name from '%s': give --group", path);
    goto out;
  }
  if (!pflex_tput_unit_absolute(unit))
    fprintf(stderr, "note: throughput is %s: only ratios are meaningful\n",
            pflex_tput_unit_name(unit));

  set.unit = unit;
  if (append && access(out, F_OK) == 0) {
    /* The sweep group may still lack its uncapped run: partial groups are fine. */
    struct pflex_runs_read_opts rro = {.unit = unit, .partial_groups = true};
    if ((r = pflex_runs_read_csv(out, &rro, &set, &d)) < 0) {
      cli_error_diag("cannot read", &d, r);
      goto out;
    }
    if (set.unit != unit) {
      cli_error("'%s' holds throughput as %s, this run as %s", out, pflex_tput_unit_name(set.unit),
                pflex_tput_unit_name(unit));
      goto out;
    }
    for (size_t i = 0; i < set.n; i++)
      if (strcmp(set.runs[i].group, group) == 0 &&
          (strcmp(set.runs[i].gpu, gpu_type) != 0 || set.runs[i].gpus != a.gpus)) {
        cli_error("'%s': group '%s' runs on %d x %s (line %zu), this run on %d x %s", out, group,
                  set.runs[i].gpus, set.runs[i].gpu, set.runs[i].line, a.gpus, gpu_type);
        goto out;
      } else if (strcmp(set.runs[i].group, group) == 0 && set.runs[i].cap_w == cap) {
        cli_error("'%s' already has a run of group '%s' at cap %g W (line %zu)", out, group, cap,
                  set.runs[i].line);
        goto out;
      }
  }
  r = pflex_series_agg_append_run(&a, group, gpu_type, cap, &set);
  if (r < 0) {
    cli_error("cannot build the run: %s", pflex_strerror(r));
    goto out;
  }
  if (out && (r = pflex_runs_write_csv(&set, out)) < 0) {
    cli_error("cannot write '%s': %s", out, pflex_strerror(r));
    goto out;
  }
  if (json) {
    if (print_json(&a, group, gpu_type, cap, unit)) goto out; /* error already printed */
  } else if (csv)
    r = pflex_runs_write_csv_stream(&set, stdout);
  else if (!out)
    print_table(&a, group, gpu_type, cap, unit);
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
    .usage = USAGE,
};
