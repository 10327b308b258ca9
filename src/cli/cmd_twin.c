/* `pflex twin`: the GPU + job model, the reconstructed reference set, its
 * check against the paper, a population of unseen simulated jobs, and the
 * normalized-curve figure (docs/twin.md). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "cli/util.h"
#include "pflex/csv.h"
#include "pflex/curves_figure.h"
#include "pflex/plot.h"
#include "pflex/runs_csv.h"
#include "pflex/runs_provenance.h"
#include "pflex/twin.h"

#define DEFAULT_RUNS "the built-in reference set"

/* ---- reference ---- */

struct reference_args {
  const char *out;
  uint64_t seed;
  bool quiet, json;
};

static const struct cli_option reference_options[] = {
    {CLI_STRING("out", "DIR", struct reference_args, out, "output folder (created if missing)"),
     .short_name = 'o', .flags = CLI_REQUIRED},
    {CLI_COUNT("seed", "S", struct reference_args, seed, 0, UINT64_MAX,
               "noise seed (default 20260911, the committed set's)"),
     .short_name = 's'},
    {CLI_FLAG("quiet", struct reference_args, quiet, "do not print the calibration table"),
     .short_name = 'q'},
    {CLI_FLAG("json", struct reference_args, json,
              "print the calibration (published and reconstructed PFIs, parameters) as JSON "
              "instead of a table")},
    {CLI_END}};

static const struct cli_spec reference_spec = {
    .name = "twin reference",
    .help_cmd = "twin",
    .usage = "pflex twin reference --out DIR [--seed S] [--quiet | --json]",
    .about = "Rebuilds the reconstructed reference set (189 runs) into DIR/runs.csv, calibrating "
             "every published group; deterministic for a seed.",
    .options = reference_options,
    .exclusive = (const char *const[]){"quiet json", NULL}};

static json_t *calib_json(const struct pflex_twin_paper_group *g, const struct pflex_twin_calib *k) {
  json_t *row = json_object();
  json_object_set_new(row, "group", json_string(g->name));
  json_object_set_new(row, "set", json_string(pflex_twin_set_name(g->set)));
  json_object_set_new(row, "source", json_string(g->table));
  json_object_set_new(row, "pfi_published", json_real(g->pfi));
  json_object_set_new(row, "pfi_reconstructed", json_real(k->pfi));
  json_object_set_new(row, "pfi4_published", isnan(g->pfi4) ? json_null() : json_real(g->pfi4));
  json_object_set_new(row, "pfi4_reconstructed", isnan(k->pfi4) ? json_null() : json_real(k->pfi4));
  json_object_set_new(row, "compute_share", json_real(k->compute_share));
  json_object_set_new(row, "compute_activity", json_real(k->compute_activity));
  json_object_set_new(row, "mem_clock_bound", json_real(k->mem_clock_bound));
  json_object_set_new(row, "phase_split", json_real(k->phase_split));
  json_object_set_new(row, "met", json_boolean(k->met));
  return row;
}

static int reference_json(const char *path, size_t nruns, uint64_t seed,
                          const struct pflex_twin_calib *calib, size_t unmet) {
  json_t *o = json_object(), *arr = json_array();
  for (size_t i = 0; i < pflex_twin_paper_count(); i++)
    json_array_append_new(arr, calib_json(pflex_twin_paper_get(i), &calib[i]));
  json_object_set_new(o, "file", json_string(path));
  json_object_set_new(o, "runs", json_integer((json_int_t)nruns));
  json_object_set_new(o, "seed", json_integer((json_int_t)seed));
  json_object_set_new(o, "provenance", json_string("reconstructed"));
  json_object_set_new(o, "groups", arr);
  json_object_set_new(o, "unmet", json_integer((json_int_t)unmet));
  return cli_print_json(o, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
}

/* The calibration of every published group: published and reconstructed PFIs, parameters. */
static void calib_table(const struct pflex_twin_calib *calib) {
  printf("%-46s %5s %7s %5s %7s %6s %6s %5s %5s  %s\n", "group", "PFI", "recon", "PFI4", "recon4",
         "s", "a_c", "r", "phi", "met");
  for (size_t i = 0; i < pflex_twin_paper_count(); i++) {
    const struct pflex_twin_paper_group *g = pflex_twin_paper_get(i);
    const struct pflex_twin_calib *k = &calib[i];
    printf("%-46s %5.2f %7.4f %5.2f %7.4f %6.3f %6.3f %5.2f %5.2f  %s\n", g->name, g->pfi, k->pfi,
           g->pfi4, k->pfi4, k->compute_share, k->compute_activity, k->mem_clock_bound,
           k->phase_split, k->met ? "yes" : "NO");
  }
}

static int cmd_reference(int argc, char **argv) {
  struct reference_args a = {.seed = PFLEX_TWIN_REFERENCE_SEED};
  struct cli_parsed p;
  int perr = cli_parse(&reference_spec, argc, argv, &a, &p);
  if (perr) return cli_parse_status(perr);
  if (mkdir(a.out, 0777) < 0 && errno != EEXIST) {
    cli_error("cannot create '%s': %s", a.out, strerror(errno));
    return PFLEX_EXIT_FAIL;
  }
  struct pflex_runset set;
  struct pflex_twin_calib *calib = NULL;
  int r = pflex_twin_reference_build(a.seed, &set, &calib);
  if (r < 0) {
    cli_error("cannot build the reference set: %s", pflex_strerror(r));
    return PFLEX_EXIT_FAIL;
  }
  char path[4096];
  size_t len = strlen(a.out); /* DIR/ and DIR name one file: DIR/runs.csv */
  while (len > 1 && a.out[len - 1] == '/')
    len--;
  snprintf(path, sizeof path, "%.*s/runs.csv", (int)len, a.out);
  int status = PFLEX_EXIT_FAIL;
  r = pflex_runs_write_csv(&set, path);
  if (r < 0) {
    cli_error("cannot write '%s': %s", path, pflex_strerror(r));
    goto out;
  }
  size_t unmet = 0;
  for (size_t i = 0; i < pflex_twin_paper_count(); i++)
    unmet += !calib[i].met;
  if (a.json) {
    if (!reference_json(path, set.n, a.seed, calib, unmet)) status = PFLEX_EXIT_OK;
    goto out;
  }
  if (!a.quiet) calib_table(calib);
  printf("wrote %zu runs to '%s' (reconstructed: modelled, not measured; seed %llu); %zu group(s) "
         "not fully met\n",
         set.n, path, (unsigned long long)a.seed, unmet);
  status = PFLEX_EXIT_OK;
out:
  pflex_runset_release(&set);
  free(calib);
  return status;
}

/* ---- check ---- */

struct check_args {
  bool strict, json, csv;
};

static const struct cli_option check_options[] = {
    {CLI_FLAG("strict", struct check_args, strict,
              "count documented known misses as failures too")},
    {CLI_FLAG("json", struct check_args, json, "machine-readable output")},
    {CLI_FLAG("csv", struct check_args, csv, "the comparison table as CSV")},
    {CLI_END}};

static const struct cli_spec check_spec = {
    .name = "twin check",
    .help_cmd = "twin",
    .usage = "pflex twin check [RUNS.csv] [--strict] [--json | --csv]",
    .about = "Compares a runs file (default " DEFAULT_RUNS ") with every published PFI (Tables "
             "6, 7, 8 on each group's grid; Table 9 on the 4-cap grid); also prints the LOO R^2 "
             "of PFI on the DRAM copy product; exit 1 on any miss.",
    .options = check_options,
    .operands = "RUNS.csv",
    .max_operands = 1,
    .exclusive = (const char *const[]){"json csv", NULL}};

/* A twin check: the comparison rows, their misses, and the DRAM-copy fit. */
struct check {
  const char *path;
  enum pflex_provenance provenance; /* of the runs checked */
  struct pflex_twin_check_row *rows;
  size_t n, bad, known; /* rows, misses, documented known misses among them */
  int fit_err;          /* 0 when the fit's numbers hold */
  double r2_in, r2_loo;
  size_t nfit;
};

static json_t *json_or_null(double v) {
  return isfinite(v) ? json_real(v) : json_null();
}

static json_t *check_row_json(const struct pflex_twin_check_row *r) {
  json_t *row = json_object();
  json_object_set_new(row, "group", json_string(r->group));
  json_object_set_new(row, "set", json_string(pflex_twin_set_name(r->set)));
  json_object_set_new(row, "grid", json_string(r->grid));
  json_object_set_new(row, "published", json_real(r->published));
  json_object_set_new(row, "reconstructed", json_or_null(r->reconstructed));
  json_object_set_new(row, "diff", json_or_null(r->diff));
  json_object_set_new(row, "tolerance", json_real(r->tol));
  json_object_set_new(row, "ok", json_boolean(r->ok));
  json_object_set_new(row, "known_miss", r->known ? json_string(r->known) : json_null());
  return row;
}

static int check_json(const struct check *c) {
  json_t *o = json_object(), *arr = json_array();
  for (size_t i = 0; i < c->n; i++)
    json_array_append_new(arr, check_row_json(&c->rows[i]));
  json_object_set_new(o, "file", json_string(c->path));
  cli_json_provenance(o, c->provenance);
  json_object_set_new(o, "rows", arr);
  json_object_set_new(o, "misses", json_integer((json_int_t)c->bad));
  json_object_set_new(o, "known_misses", json_integer((json_int_t)c->known));
  json_t *fit = json_object();
  json_object_set_new(fit, "feature", json_string("dram_active*mem_copy_util"));
  json_object_set_new(fit, "groups", json_integer((json_int_t)c->nfit));
  json_object_set_new(fit, "r2_in", c->fit_err == 0 ? json_real(c->r2_in) : json_null());
  json_object_set_new(fit, "r2_loo", c->fit_err == 0 ? json_real(c->r2_loo) : json_null());
  json_object_set_new(fit, "paper_r2_in", json_real(0.675));
  json_object_set_new(fit, "paper_r2_loo", json_real(0.524));
  json_object_set_new(o, "dram_fit", fit);
  return cli_print_json(o, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
}

static void check_csv(const struct check *c) {
  printf("group,set,grid,published,reconstructed,diff,tolerance,ok,provenance\n");
  for (size_t i = 0; i < c->n; i++) {
    const struct pflex_twin_check_row *r = &c->rows[i];
    pflex_csv_write_field(stdout, r->group, ',');
    printf("%s,%s,", pflex_twin_set_name(r->set), r->grid);
    const double v[] = {r->published, r->reconstructed, r->diff, r->tol};
    for (size_t k = 0; k < 4; k++)
      pflex_csv_write_double(stdout, v[k], ',');
    printf("%s,%s\n", r->ok ? "yes" : r->known ? "known-miss" : "no",
           pflex_provenance_name(c->provenance));
  }
}

static void check_table(const struct check *c) {
  printf("%-46s %-10s %-5s %9s %13s %8s  %s\n", "group", "set", "grid", "published",
         "reconstructed", "diff", "ok");
  for (size_t i = 0; i < c->n; i++) {
    const struct pflex_twin_check_row *r = &c->rows[i];
    printf("%-46s %-10s %-5s %9.2f %13.4f %+8.4f  %s\n", r->group, pflex_twin_set_name(r->set),
           r->grid, r->published, r->reconstructed, r->diff,
           r->ok      ? "ok"
           : r->known ? "KNOWN MISS"
                      : "MISS");
  }
  printf("\n%zu of %zu comparisons within tolerance (own grid 0.01, 4-cap grid 0.03)\n",
         c->n - c->bad, c->n);
  cli_print_provenance(stdout, c->provenance);
  for (size_t i = 0; i < c->n; i++)
    if (!c->rows[i].ok && c->rows[i].known)
      printf("known miss (documented in data/reference/README.md): %s, %s grid: %s\n",
             c->rows[i].group, c->rows[i].grid, c->rows[i].known);
  if (c->fit_err == 0)
    printf("PFI ~ DRAM copy product (dram_active x mem_copy_util), %zu headline groups: R^2 "
           "in-sample "
           "%.3f, LOO %.3f (paper Table 3 row i: 0.675, 0.524)\n",
           c->nfit, c->r2_in, c->r2_loo);
}

static int cmd_check(int argc, char **argv) {
  struct check_args a = {0};
  struct cli_parsed p;
  int perr = cli_parse(&check_spec, argc, argv, &a, &p);
  if (perr) return cli_parse_status(perr);
  struct check c = {.path = p.noperands ? p.operands[0] : cli_reference_runs(),
                    .r2_in = NAN, .r2_loo = NAN};
  struct pflex_runset set;
  if (cli_load_runs(c.path, NULL, &set) < 0) return PFLEX_EXIT_FAIL;
  c.provenance = pflex_runs_provenance(&set, NULL, 0);
  int r = pflex_twin_check(&set, &c.rows, &c.n);
  if (r < 0) {
    cli_error("cannot check '%s': %s", c.path, pflex_strerror(r));
    pflex_runset_release(&set);
    return PFLEX_EXIT_FAIL;
  }
  c.fit_err = pflex_twin_dram_fit(&set, "headline", &c.r2_in, &c.r2_loo, &c.nfit);
  for (size_t i = 0; i < c.n; i++) {
    c.bad += !c.rows[i].ok;
    c.known += !c.rows[i].ok && c.rows[i].known;
  }
  size_t fails = a.strict ? c.bad : c.bad - c.known;
  if (a.json) {
    if (check_json(&c)) fails++;
  } else if (a.csv) {
    check_csv(&c);
  } else {
    check_table(&c);
  }
  free(c.rows);
  pflex_runset_release(&set);
  return fails ? PFLEX_EXIT_FAIL : PFLEX_EXIT_OK;
}

/* ---- population ---- */

struct population_args {
  uint64_t jobs, seed;
  const char *out, *gpus;
  bool mixed_units;
};

static const struct cli_option population_options[] = {
    {CLI_COUNT("jobs", "N", struct population_args, jobs, 1, 100000,
               "number of jobs (sweep groups)"),
     .short_name = 'n', .flags = CLI_REQUIRED},
    {CLI_COUNT("seed", "S", struct population_args, seed, 0, UINT64_MAX, "random seed (default 1)"),
     .short_name = 's'},
    {CLI_STRING("out", "FILE", struct population_args, out, "runs CSV to write"),
     .short_name = 'o'},
    {CLI_STRING("gpus", "LIST", struct population_args, gpus,
                "GPU types to draw from with equal odds, comma-separated (e.g. "
                "A100,H100,H200,L40S; default H100,H200)")},
    {CLI_FLAG("mixed-units", struct population_args, mixed_units,
              "also write each job's throughput in a unit drawn per job (tokens/s, samples/s, "
              "iterations/s): columns throughput, throughput_sd, tput_unit (read them with "
              "--tput-column throughput)")},
    {CLI_END}};

static const struct cli_spec population_spec = {
    .name = "twin population",
    .help_cmd = "twin",
    .usage = "pflex twin population --jobs N [--seed S] [--gpus LIST] [--out FILE]",
    .about = "Draws N new simulated jobs (GPU types from LIST, default H100/H200; Acme GPU "
             "counts) with 6-cap sweeps in each GPU's limit range and telemetry; writes FILE "
             "(runs CSV) or prints a summary.",
    .options = population_options};

#define POP_MAX_TYPES 32

/* --gpus A100,H100,...: the GPU types, each checked against the twin's table
 * (a usage error names the first unknown one and the known ones). names point
 * into buf. 0 or -EINVAL (reported). */
static int population_gpus(const char *list, char *buf, size_t size, const char **names,
                           size_t *ret_n) {
  snprintf(buf, size, "%s", list);
  size_t n = 0;
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (n == POP_MAX_TYPES) {
      cli_usage_error(&population_spec, "--gpus: at most %d GPU types", POP_MAX_TYPES);
      return -EINVAL;
    }
    if (!pflex_twin_gpu_find(t)) {
      char known[512] = "";
      for (size_t i = 0; i < pflex_twin_gpu_count(); i++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                 pflex_twin_gpu_get(i)->name);
      cli_usage_error(&population_spec,
                      "--gpus: the twin does not model GPU type '%s' (it models %s)", t, known);
      return -EINVAL;
    }
    names[n++] = t;
  }
  if (n == 0) {
    cli_usage_error(&population_spec, "--gpus: '%s' names no GPU type", list);
    return -EINVAL;
  }
  *ret_n = n;
  return 0;
}

static int cmd_population(int argc, char **argv) {
  struct population_args a = {.seed = 1};
  struct cli_parsed p;
  int perr = cli_parse(&population_spec, argc, argv, &a, &p);
  if (perr) return cli_parse_status(perr);
  uint64_t jobs = a.jobs, seed = a.seed;
  const char *out = a.out;
  struct pflex_runset set;
  struct pflex_twin_population_opts po = {
      .jobs = (size_t)jobs, .seed = seed, .mixed_units = a.mixed_units};
  char buf[1024];
  const char *names[POP_MAX_TYPES];
  if (a.gpus) {
    if (population_gpus(a.gpus, buf, sizeof buf, names, &po.ngpus)) return PFLEX_EXIT_USAGE;
    po.gpus = names;
  }
  int r = pflex_twin_population(&po, &set);
  if (r < 0) {
    cli_error("cannot draw the population: %s", pflex_strerror(r));
    return PFLEX_EXIT_FAIL;
  }
  if (out) {
    r = pflex_runs_write_csv(&set, out);
    if (r < 0) {
      cli_error("cannot write '%s': %s", out, pflex_strerror(r));
      pflex_runset_release(&set);
      return PFLEX_EXIT_FAIL;
    }
    printf("wrote %llu simulated jobs (%zu runs) to '%s' (simulated by the twin, not measured)\n",
           (unsigned long long)jobs, set.n, out);
  } else {
    struct pflex_group *groups = NULL;
    size_t ng = 0;
    if (pflex_runset_groups(&set, &groups, &ng) == 0) {
      printf("%-48s %6s %10s %12s\n", "group (simulated)", "gpus", "P_max W", "T_max tok/s");
      for (size_t i = 0; i < ng; i++) {
        const struct pflex_run *t = &set.runs[groups[i].uncapped];
        printf("%-48s %6d %10.0f %12.0f\n", groups[i].name, t->gpus, t->power_w, t->tput);
      }
      pflex_groups_free(groups, ng);
    }
  }
  pflex_runset_release(&set);
  return PFLEX_EXIT_OK;
}

/* ---- plot ---- */

struct plot_args {
  const char *out, *title;
};

static const struct cli_option plot_options[] = {
    {CLI_STRING("out", "FILE", struct plot_args, out, "figure to write: .svg, .png or .pdf"),
     .short_name = 'o', .flags = CLI_REQUIRED},
    {CLI_STRING("title", "TEXT", struct plot_args, title, "figure title"), .short_name = 't'},
    {CLI_END}};

static const struct cli_spec plot_spec = {
    .name = "twin plot",
    .help_cmd = "twin",
    .usage = "pflex twin plot --out FILE [--title TEXT] [RUNS.csv]",
    .about = "Draws all normalized curves (P/Pmax vs T/Tmax) by arch x task with the diagonal "
             "(default runs " DEFAULT_RUNS ").",
    .options = plot_options,
    .operands = "RUNS.csv",
    .max_operands = 1};

static int cmd_plot(int argc, char **argv) {
  struct plot_args a = {0};
  struct cli_parsed p;
  int perr = cli_parse(&plot_spec, argc, argv, &a, &p);
  if (perr) return cli_parse_status(perr);
  const char *out = a.out, *title = a.title;
  if (!pflex_plot_device(out)) {
    cli_usage_error(&plot_spec, "--out: '%s' is not a figure file (.svg, .png or .pdf)", out);
    return PFLEX_EXIT_USAGE;
  }
  const char *path = p.noperands ? p.operands[0] : cli_reference_runs();
  struct pflex_runset set;
  if (cli_load_runs(path, NULL, &set) < 0) return PFLEX_EXIT_FAIL;
  struct pflex_group *groups = NULL;
  size_t ng = 0;
  int r = pflex_runset_groups(&set, &groups, &ng);
  if (r < 0) {
    cli_error("cannot group '%s': %s", path, pflex_strerror(r));
    pflex_runset_release(&set);
    return PFLEX_EXIT_FAIL;
  }
  struct pflex_curves_figure fig;
  int err = pflex_curves_figure_build(
      &set, groups, ng, title ? title : "Normalized power-throughput curves by arch x task", &fig);
  char note[160]; /* what the curves are: the runs' provenance, never assumed */
  snprintf(note, sizeof note, "data: %s", pflex_provenance_note(pflex_runs_provenance(&set, NULL, 0)));
  fig.plot.note = note;
  if (!err) err = pflex_plot_render(&fig.plot, out);
  pflex_curves_figure_release(&fig);
  pflex_groups_free(groups, ng);
  pflex_runset_release(&set);
  if (err < 0) {
    cli_error("cannot draw '%s': %s", out, pflex_strerror(err));
    return PFLEX_EXIT_FAIL;
  }
  printf("wrote '%s'\n", out);
  return PFLEX_EXIT_OK;
}

static int run(int argc, char **argv) {
  if (argc < 2) return cli_subcommand_error("twin", NULL, "reference, check, population, plot");
  const char *sub = argv[1];
  if (strcmp(sub, "reference") == 0) return cmd_reference(argc - 1, argv + 1);
  if (strcmp(sub, "check") == 0) return cmd_check(argc - 1, argv + 1);
  if (strcmp(sub, "population") == 0) return cmd_population(argc - 1, argv + 1);
  if (strcmp(sub, "plot") == 0) return cmd_plot(argc - 1, argv + 1);
  return cli_subcommand_error("twin", sub, "reference, check, population, plot");
}

const struct pflex_cmd pflex_cmd_twin = {
    .name = "twin",
    .run = run,
    .summary = "GPU + job model: reference set, check, population, plot",
    .specs = (const struct cli_spec *const[]){&reference_spec, &check_spec, &population_spec,
                                              &plot_spec, NULL},
    .usage = "pflex twin <subcommand> [options]"};
