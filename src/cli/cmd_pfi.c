/* `pflex pfi RUNS.csv`: the Power Flexibility Index of every sweep group, with
 * its Monte Carlo 95% CI, the runs it rests on, the runs left out and why,
 * and optionally the value on a sub-grid of caps (docs/pfi.md). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "cli/pfi_args.h"
#include "cli/progress.h"
#include "cli/reference_notes.h"
#include "cli/util.h"
#include "pflex/csv.h"
#include "pflex/parallel.h"
#include "pflex/runs_provenance.h"

struct args {
  struct cli_pfi_args pfi;
  bool json, csv;
  unsigned threads;
};

static const struct cli_option options[] = {
    {CLI_LIST("grid", "LIST", struct args, pfi.grid, 0, INFINITY,
              "also compute on a sub-grid of caps, e.g. 200,500,600,700 (the uncapped run is "
              "always kept); shown beside the full-grid value"),
     .flags = CLI_OPEN_MIN, .expect = "a list of caps in W (e.g. 200,500,600,700)"},
    {CLI_INCLUDE(struct args, pfi, cli_pfi_target_options)},
    {CLI_INCLUDE(struct args, pfi, cli_pfi_ci_options)},
    {CLI_INCLUDE(struct args, pfi, cli_pfi_set_option)},
    {CLI_INCLUDE(struct args, pfi, cli_pfi_read_options)},
    {CLI_FLAG("json", struct args, json, "JSON array, one object per group")},
    {CLI_FLAG("csv", struct args, csv, "CSV, one row per group")},
    {CLI_COUNT("threads", "N", struct args, threads, 0, CLI_THREADS_MAX, CLI_THREADS_HELP)},
    {CLI_END}};

static const struct cli_spec spec = {
    .name = "pfi",
    .usage = "pflex pfi RUNS.csv [options]",
    .about = "Prints per sweep group the runs used, the PFI and its 95% CI, and the runs left out.",
    .options = options,
    .operands = "RUNS.csv",
    .min_operands = 1,
    .max_operands = 1,
    .exclusive = (const char *const[]){"json csv", NULL},
    .notes = "Exit status 1 when a group has no PFI (a single run, or every capped run excluded; "
             "the other groups are still printed), 2 on a usage error."};

struct row {
  const struct pflex_group *g;
  const struct pflex_run *run; /* the uncapped run: gpu, gpus, arch, task */
  struct cli_pfi_value full, grid;
};

static void fmt_value(char *buf, size_t size, const struct cli_pfi_value *v) {
  if (v->err)
    snprintf(buf, size, "-");
  else
    snprintf(buf, size, "%.3f", fabs(v->res.pfi) < 5e-4 ? 0.0 : v->res.pfi); /* no "-0.000" */
}

static void fmt_ci(char *buf, size_t size, const struct cli_pfi_value *v) {
  if (v->err || !v->res.have_ci)
    snprintf(buf, size, "-");
  else
    cli_fmt_interval(buf, size, v->res.ci_low, v->res.ci_high);
}

static void grid_text(char *buf, size_t size, const struct cli_pfi_args *a, const char *sep) {
  size_t o = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < a->grid.n && o < size; i++)
    o += (size_t)snprintf(buf + o, size - o, "%s%g", i ? sep : "", a->grid.v[i]);
}

/* True when grid cap k matches no run of row r (the core's tolerance). */
static bool grid_missing(const struct row *r, const struct cli_pfi_args *a, size_t k) {
  for (size_t i = 0; i < r->full.n; i++)
    if (fabs(r->full.runs[i].cap_w - a->grid.v[k]) <= PFLEX_PFI_GRID_TOLERANCE_W) return false;
  return true;
}

static void print_table(const struct row *rows, size_t n, const struct cli_pfi_args *a,
                        const struct pflex_runset *set) {
  int w = 5;
  for (size_t i = 0; i < n; i++)
    if ((int)strlen(rows[i].g->name) > w) w = (int)strlen(rows[i].g->name);
  char gt[256];
  grid_text(gt, sizeof gt, a, ",");
  printf("%-*s  %-5s %4s %4s %7s  %-17s", w, "group", "gpu", "gpus", "runs", "PFI", "95% CI");
  if (a->grid.v) printf("  %9s %8s  %-17s", "grid runs", "grid PFI", "grid 95% CI");
  printf("\n");
  for (size_t i = 0; i < n; i++) {
    const struct row *r = &rows[i];
    char v[32], ci[48];
    fmt_value(v, sizeof v, &r->full);
    fmt_ci(ci, sizeof ci, &r->full);
    printf("%-*s  %-5s %4d %4zu %7s  %-17s", w, r->g->name, r->run->gpu, r->run->gpus,
           r->full.err ? (size_t)0 : r->full.res.runs_used, v, ci);
    if (a->grid.v) {
      fmt_value(v, sizeof v, &r->grid);
      fmt_ci(ci, sizeof ci, &r->grid);
      printf("  %9zu %8s  %-17s", r->grid.err ? (size_t)0 : r->grid.res.runs_used, v, ci);
    }
    printf("\n");
  }
  printf("\ndefinition %s; ", pflex_pfi_definition_name(a->opts.definition));
  if (a->opts.definition != PFLEX_PFI_RATIO)
    printf("every run used (the exclusion rule applies to the ratio definition only)");
  else if (a->opts.exclude == PFLEX_PFI_EXCLUDE_NOISE)
    printf("exclusion rule noise (k = %g)", a->opts.noise_k);
  else
    printf("exclusion rule paper (T_i == T_max only)");
  if (a->opts.draws)
    printf("; 95%% CI from %zu Monte Carlo draws, seed %lu", a->opts.draws, a->opts.seed);
  printf("; runs counts the uncapped run\n");
  cli_print_provenance(stdout, pflex_runs_provenance(set, NULL, 0));
  if (a->grid.v) printf("grid: caps %s W and the uncapped run\n", gt);
  if (!pflex_tput_unit_absolute(set->unit))
    printf("throughput unit %s: PFI uses ratios only\n", pflex_tput_unit_name(set->unit));
  bool any = false;
  for (size_t i = 0; i < n; i++) {
    if (rows[i].full.err || (a->grid.v && rows[i].grid.err)) any = true;
    if (a->opts.draws &&
        ((!rows[i].full.err && rows[i].full.res.draws_used < a->opts.draws) ||
         (a->grid.v && !rows[i].grid.err && rows[i].grid.res.draws_used < a->opts.draws)))
      any = true;
    for (size_t k = 0; k < a->grid.n; k++)
      if (grid_missing(&rows[i], a, k)) any = true;
    for (size_t k = 0; k < rows[i].full.n; k++)
      if (rows[i].full.runs[k].role == PFLEX_PFI_EXCLUDED) any = true;
  }
  if (!any) return;
  printf("\nnotes (runs left out, grid caps without a run, incomplete CIs):\n");
  for (size_t i = 0; i < n; i++) {
    cli_pfi_value_notes(stdout, rows[i].g->name, &rows[i].full, &a->opts, "", true);
    /* On the grid a run is excluded for the same reason as on the full grid;
     * repeat only what the grid adds: no value, or a CI on fewer draws. */
    if (a->grid.v && !(rows[i].grid.err && rows[i].full.err))
      cli_pfi_value_notes(stdout, rows[i].g->name, &rows[i].grid, &a->opts, " (grid)", false);
    for (size_t k = 0; k < a->grid.n; k++)
      if (grid_missing(&rows[i], a, k))
        printf("  %s (grid): no run at %g W: the grid value rests on fewer caps\n", rows[i].g->name,
               a->grid.v[k]);
  }
}

static int print_json(const struct row *rows, size_t n, const struct cli_pfi_args *a,
                      const struct pflex_runset *set) {
  json_t *arr = json_array();
  int e = arr ? 0 : -ENOMEM;
  for (size_t i = 0; !e && i < n; i++) {
    const struct row *r = &rows[i];
    json_t *o = json_pack(
        "{s:s, s:s, s:i, s:s, s:s, s:s, s:s, s:s}", "group", r->g->name, "gpu", r->run->gpu, "gpus",
        r->run->gpus, "arch", pflex_arch_name(r->run->arch), "task", pflex_task_name(r->run->task),
        "definition", pflex_pfi_definition_name(a->opts.definition), "exclude",
        pflex_pfi_exclude_name(a->opts.exclude), "unit", pflex_tput_unit_name(set->unit));
    if (!o) {
      e = -ENOMEM;
      break;
    }
    e |= json_object_set_new(o, "noise_k", json_real(a->opts.noise_k));
    e |= json_object_set_new(o, "draws", json_integer((json_int_t)a->opts.draws));
    e |= json_object_set_new(o, "seed", json_integer((json_int_t)a->opts.seed));
    e |= cli_json_provenance(o, pflex_runs_provenance(set, r->g->runs, r->g->n));
    e |= cli_pfi_value_json(o, "", &r->full);
    json_t *g = json_null();
    if (a->grid.v) {
      g = json_array();
      for (size_t k = 0; g && k < a->grid.n; k++)
        json_array_append_new(g, json_real(a->grid.v[k]));
      e |= cli_pfi_value_json(o, "grid_", &r->grid);
      json_t *miss = json_array();
      for (size_t k = 0; miss && k < a->grid.n; k++)
        if (grid_missing(r, a, k)) json_array_append_new(miss, json_real(a->grid.v[k]));
      e |= json_object_set_new(o, "grid_missing", miss);
    }
    e |= json_object_set_new(o, "grid", g);
    e |= cli_reference_note_json(o, set, r->g);
    e |= json_array_append_new(arr, o);
  }
  if (e) {
    json_decref(arr);
    cli_error("out of memory");
    return e;
  }
  return cli_print_json(arr, JSON_REAL_PRECISION(10));
}

static void csv_value(const struct cli_pfi_value *v) {
  if (v->err) {
    printf(",%d,,,", 0);
  } else {
    printf(",%zu,", v->res.runs_used);
    pflex_csv_write_double(stdout, v->res.pfi, ',');
    if (v->res.have_ci) {
      pflex_csv_write_double(stdout, v->res.ci_low, ',');
      pflex_csv_write_double(stdout, v->res.ci_high, 0);
    } else {
      putchar(',');
    }
  }
  /* Excluded runs as "CAP:reason" separated by ';' (grid exclusions left out). */
  putchar(',');
  for (size_t i = 0, first = 1; i < v->n; i++)
    if (v->runs[i].role == PFLEX_PFI_EXCLUDED && v->runs[i].reason != PFLEX_PFI_REASON_GRID) {
      if (!first) putchar(';');
      pflex_csv_write_double(stdout, v->runs[i].cap_w, ':');
      fputs(pflex_pfi_reason_name(v->runs[i].reason), stdout);
      first = 0;
    }
}

static void print_csv(const struct row *rows, size_t n, const struct cli_pfi_args *a,
                      const struct pflex_runset *set) {
  printf("group,gpu,gpus,arch,task,definition,exclude,runs,pfi,ci_low,ci_high,excluded");
  if (a->grid.v) printf(",grid,grid_runs,grid_pfi,grid_ci_low,grid_ci_high,grid_excluded");
  printf(",provenance\n");
  char gt[256];
  grid_text(gt, sizeof gt, a, ";"); /* ';' like the excluded list: no quoting needed */
  for (size_t i = 0; i < n; i++) {
    const struct row *r = &rows[i];
    pflex_csv_write_field(stdout, r->g->name, ',');
    pflex_csv_write_field(stdout, r->run->gpu, ',');
    printf("%d,%s,%s,%s,%s", r->run->gpus, pflex_arch_name(r->run->arch),
           pflex_task_name(r->run->task), pflex_pfi_definition_name(a->opts.definition),
           pflex_pfi_exclude_name(a->opts.exclude));
    csv_value(&r->full);
    if (a->grid.v) {
      printf(",%s", gt);
      csv_value(&r->grid);
    }
    printf(",%s\n", pflex_provenance_name(pflex_runs_provenance(set, r->g->runs, r->g->n)));
  }
}

/* Every group's PFI and CI on the threads: each group writes its own row;
 * the progress is told on the calling thread. */
struct compute {
  const struct pflex_runset *set;
  const struct pflex_group *groups;
  struct row *rows;
  const struct cli_pfi_args *a;
  const struct pflex_pfi_opts *full;
  struct cli_progress *pr;
  size_t ng;
};

static int compute_one(void *ctx, unsigned worker, size_t i) {
  (void)worker;
  const struct compute *c = ctx;
  struct row *r = &c->rows[i];
  r->g = &c->groups[i];
  r->run = &c->set->runs[c->groups[i].uncapped];
  cli_pfi_value_compute(c->set, &c->groups[i], c->full, &r->full);
  if (c->a->grid.v) cli_pfi_value_compute(c->set, &c->groups[i], &c->a->opts, &r->grid);
  return r->full.err == -ENOMEM || r->grid.err == -ENOMEM ? -ENOMEM : 0;
}

static void compute_done(void *ctx, size_t finished) {
  const struct compute *c = ctx;
  cli_progress_update(c->pr, "groups", finished, c->ng);
}

static int run(int argc, char **argv) {
  struct args args = {.threads = CLI_THREADS_UNSET};
  struct cli_pfi_args *const a = &args.pfi;
  cli_pfi_args_init(a);
  int status;
  struct pflex_runset set;
  struct pflex_group *groups = NULL;
  size_t ng = 0;
  struct row *rows = NULL;
  pflex_runset_init(&set);
  struct cli_parsed p;
  int err = cli_parse(&spec, argc, argv, &args, &p);
  if (err) {
    status = cli_parse_status(err);
    goto out;
  }
  cli_pfi_args_finish(a);
  bool json = args.json, csv = args.csv;

  status = PFLEX_EXIT_FAIL;
  if (cli_load_runs(p.operands[0], &a->read, &set)) goto out;
  if (pflex_runset_groups(&set, &groups, &ng) || !(rows = calloc(ng ? ng : 1, sizeof *rows))) {
    cli_error("pfi: out of memory");
    goto out;
  }
  bool missing = false;
  struct pflex_pfi_opts full = a->opts;
  full.grid = NULL;
  full.ngrid = 0;
  struct cli_progress pr; /* Monte Carlo draws of many groups take minutes */
  cli_progress_init(&pr, "pfi", false);
  struct compute c = {&set, groups, rows, a, &full, &pr, ng};
  err = pflex_parallel_for(ng, cli_threads(args.threads), compute_one, &c, compute_done);
  cli_progress_clear(&pr);
  if (err) {
    cli_error("pfi: out of memory");
    goto out;
  }
  for (size_t i = 0; i < ng; i++)
    missing |= rows[i].full.err != 0;
  if (json) {
    if (print_json(rows, ng, a, &set)) goto out;
  } else if (csv)
    print_csv(rows, ng, a, &set);
  else
    print_table(rows, ng, a, &set);
  for (size_t i = 0; i < ng; i++)
    if (rows[i].full.err) cli_error("group '%s': no PFI: %s", rows[i].g->name, rows[i].full.why);
  status = missing ? PFLEX_EXIT_FAIL : PFLEX_EXIT_OK;
out:
  for (size_t i = 0; rows && i < ng; i++) {
    cli_pfi_value_release(&rows[i].full);
    cli_pfi_value_release(&rows[i].grid);
  }
  free(rows);
  pflex_groups_free(groups, ng);
  pflex_runset_release(&set);
  cli_release(&spec, &args);
  return status;
}

const struct pflex_cmd pflex_cmd_pfi = {
    .name = "pfi",
    .run = run,
    .summary = "Power Flexibility Index of each sweep group, with 95% CI",
    .specs = (const struct cli_spec *const[]){&spec, NULL}};
