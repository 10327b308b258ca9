/* `pflex allocate`: splits a cluster power target among jobs with one of the
 * allocation strategies and prints each job's power, per-GPU cap and expected
 * throughput (docs/allocation.md). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/commands.h"
#include "cli/reference_notes.h"
#include "cli/util.h"
#include "pflex/alloc.h"
#include "pflex/caps_plan.h"
#include "pflex/csv.h"
#include "pflex/curve.h"
#include "pflex/jobs.h"
#include "pflex/jobs_json.h"
#include "pflex/objective.h"
#include "pflex/pfi.h"
#include "pflex/runs_provenance.h"

#include "cli/allocate_shrink.h"

/* --pfi-sd's default: the paper's leave-one-out RMSE of its model (i)
 * (docs/paper.md, docs/study.md), a PFI prediction's typical error. */
#define DEFAULT_PFI_SD 0.241

struct args {
  double cut, target_w;
  enum pflex_alloc_strategy strategy;
  enum pflex_objective objective;
  struct pflex_alloc_opts alloc;
  enum pflex_tput_unit unit;
  const char *set, *mapping, *caps_out;
  double reference_cap;
  double shrink, pfi_sd;
  bool json, csv;
};

#define A struct args
static const struct cli_option options[] = {
    {CLI_DOUBLE("cut", "PCT", A, cut, 0, 100,
                "cut PCT percent of the jobs' total uncapped power (0-100)")},
    {CLI_DOUBLE("target-w", "W", A, target_w, 0, INFINITY, "total power target in W")},
    {CLI_ENUM_FN("strategy", "NAME", A, strategy, cli_strategy_name,
                 "equal | moe-ft | dram | pfi | optimal | oracle (default optimal)")},
    {CLI_ENUM_FN("objective", "OBJ", A, objective, cli_objective_name,
              "optimal/oracle: tokens (default: total throughput, the paper's objective) or "
              "progress (sum over jobs of GPUs x T/T_max: each job's kept fraction of speed, by "
              "its size; big slow models are no longer starved for small fast ones); multiplies "
              "any job weight")},
    {CLI_COUNT("knots", "N", A, alloc.knots, 2, 100000,
               "optimal/oracle: points per curve of the piecewise-linear approximation "
               "(default 17)")},
    {CLI_ENUM_FN("unit", "UNIT", A, unit, cli_unit_name,
                 "runs CSV throughput column: tokens, samples, steps, step-time")},
    {CLI_STRING("set", "NAME", A, set,
                "runs CSV: use only runs whose set column is NAME (e.g. headline); without it "
                "a file of several sets is used whole, with a note")},
    {CLI_STRING("mapping", "FILE", A, mapping,
                "job to GPU indexes per node (JSON, docs/allocation.md): with --caps-out, "
                "writes each GPU's cap for 'pflex cap set --from'")},
    {CLI_STRING("caps-out", "FILE", A, caps_out,
                "the caps file to write (replaced atomically); needs --mapping")},
    {CLI_DOUBLE("reference-cap", "W", A, reference_cap, 0, INFINITY,
                "runs CSV: each group's run at W per GPU is its reference (uncapped) run; runs "
                "above it are left out (default: the highest cap)"),
     .flags = CLI_OPEN_MIN},
    {CLI_DOUBLE("shrink", "Z", A, shrink, 0, 100,
                "optimal: shrink each job's curve toward its power in the equal cut by Z SDs of "
                "its PFI's error, and keep the equal cut unless a move beats it on that "
                "pessimistic bound (default 0: none; docs/allocation.md)")},
    {CLI_DOUBLE("pfi-sd", "SD", A, pfi_sd, 0, 100,
                "--shrink: the SD of a PFI's error (default 0.241, the paper's model (i) LOO "
                "RMSE)")},
    {CLI_FLAG("json", A, json, "print JSON")},
    {CLI_FLAG("csv", A, csv, "print CSV, one row per job")},
    {CLI_END}};
#undef A

static const struct cli_spec spec = {
    .name = "allocate",
    .usage = "pflex allocate JOBS (--cut PCT | --target-w W) [options]",
    .about = "Splits a cluster power target among jobs and prints each job's power, per-GPU cap "
             "and expected throughput (docs/allocation.md). JOBS is a runs CSV (each sweep group "
             "is a job with its measured curve) or a jobs JSON file.",
    .options = options,
    .operands = "JOBS file",
    .min_operands = 1,
    .max_operands = 1,
    .exclusive = (const char *const[]){"cut target-w", "json csv", NULL}};

/* A capped run faster than its group's uncapped run, by pfi's rule
 * (docs/pfi.md): within noise the cap does not bind, and the run counts at
 * the uncapped throughput, so that no curve promises more than the job's
 * measured uncapped speed; beyond noise the file is refused, as the likelier
 * story is a bad uncapped run (pfi leaves such a run out of the PFI and says
 * so; a curve through it would be wrong everywhere). */
static int check_faster(const char *path, struct pflex_runset *set, const struct pflex_group *g,
                        const struct pflex_pfi_opts *o) {
  struct pflex_pfi_point *pts = NULL;
  struct pflex_pfi_run_result *rr = calloc(g->n, sizeof *rr);
  int err = rr ? pflex_pfi_group_points(set, g, &pts) : -ENOMEM;
  if (!err && pflex_pfi_classify(pts, g->n, o, rr) != 0) g = NULL; /* jobs_from_runs says why */
  struct pflex_run *u = g && !err ? &set->runs[g->uncapped] : NULL;
  for (size_t k = 0; u && !err && k < g->n; k++) {
    struct pflex_run *r = &set->runs[g->runs[k]];
    if (r == u || !(r->tput > u->tput)) continue;
    if (rr[k].drop >= -o->noise_k * rr[k].drop_se) {
      r->tput = u->tput;
      continue;
    }
    cli_error("cannot use '%s': line %zu, group '%s': the %g W run's throughput is %.2f%% above "
              "the uncapped run's (line %zu), beyond noise (%g x %.2f%%): check the uncapped run "
              "(pfi leaves this run out; a curve through it would promise more than the job's "
              "uncapped speed)",
              path, r->line, g->name, r->cap_w, -100 * rr[k].drop, u->line, o->noise_k,
              100 * rr[k].drop_se);
    err = -PFLEX_E_DATA;
  }
  if (err == -ENOMEM) cli_error("out of memory");
  free(pts);
  free(rr);
  return err;
}

static int check_faster_runs(const char *path, struct pflex_runset *set) {
  struct pflex_group *groups = NULL;
  size_t ng = 0;
  if (pflex_runset_groups(set, &groups, &ng)) {
    cli_error("out of memory");
    return -ENOMEM;
  }
  struct pflex_pfi_opts o;
  pflex_pfi_opts_init(&o);
  int err = 0;
  for (size_t i = 0; !err && i < ng; i++)
    err = check_faster(path, set, &groups[i], &o);
  pflex_groups_free(groups, ng);
  return err;
}

/* A runs file of several sets (headline, validation, h100) used whole: say so. */
static void note_mixed_sets(const char *path, const struct pflex_runset *runs) {
  const char *first = NULL;
  for (size_t i = 0; i < runs->n; i++) {
    const char *s = runs->runs[i].set;
    if (!s || !s[0]) continue;
    if (!first) {
      first = s;
    } else if (strcmp(first, s) != 0) {
      cli_warn("'%s' holds runs of several sets ('%s', '%s', ...): all are used; --set NAME "
               "keeps one",
               path, first, s);
      return;
    }
  }
}

/* Reads the jobs; for a runs CSV also *ret_notes, the groups' reference notes
 * (cli_reference_notes_json, in job order). */
static int load(const char *path, const struct args *a, struct pflex_jobset *set,
                json_t **ret_notes) {
  const char *set_filter = a->set;
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  int err;
  /* A JSON file is a jobs file unless the jobs reader finds a runs file
   * (pflex export --format json, which names its format): that is read as
   * runs, one job per group. One parse for a jobs file. */
  if (cli_looks_like_json(path) &&
      (err = pflex_jobs_read_json(path, set, &diag)) != -PFLEX_E_FORMAT) {
    if (!err && set_filter) {
      pflex_jobset_release(set);
      cli_error("'%s' is a jobs file: --set applies to a runs CSV or JSON", path);
      return -EINVAL;
    }
    if (err) cli_error_diag("cannot read", &diag, err);
    return err;
  }
  struct pflex_runs_read_opts opts = {
      .unit = a->unit, .set_filter = set_filter, .reference_cap_w = a->reference_cap};
  struct pflex_runset runs;
  pflex_runset_init(&runs);
  if ((err = cli_load_runs(path, &opts, &runs))) return err;
  if (!set_filter) note_mixed_sets(path, &runs);
  if ((err = check_faster_runs(path, &runs))) {
    pflex_runset_release(&runs);
    return err;
  }
  err = pflex_jobs_from_runs(&runs, set, &diag);
  if (err) cli_error_diag("cannot use", &diag, err);
  if (!err) set->provenance = pflex_runs_provenance(&runs, NULL, 0);
  if (!err && !(*ret_notes = cli_reference_notes_json(&runs))) {
    cli_error("out of memory");
    pflex_jobset_release(set);
    err = -ENOMEM;
  }
  pflex_runset_release(&runs);
  return err;
}

/* The strategies' data needs, checked here so the message can name the job. */
static int check_needs(const struct pflex_jobset *set, enum pflex_alloc_strategy st) {
  for (size_t i = 0; i < set->n; i++) {
    const struct pflex_alloc_job *j = &set->jobs[i];
    if ((st == PFLEX_ALLOC_OPTIMAL || st == PFLEX_ALLOC_ORACLE) && !j->curve) {
      cli_error("strategy '%s' needs every job's curve: job '%s' has none (give points, params "
                "or pfi)",
                pflex_alloc_strategy_name(st), j->name);
      return -EINVAL;
    }
    if (st == PFLEX_ALLOC_DRAM && isnan(j->dram_copy)) {
      cli_error("strategy 'dram' needs each job's DRAM copy product: job '%s' has none (a runs "
                "CSV needs dram_active and mem_copy_util columns; a jobs file dram_copy)",
                j->name);
      return -EINVAL;
    }
    if (st == PFLEX_ALLOC_PFI && isnan(j->pfi)) {
      cli_error("strategy 'pfi' needs each job's PFI: job '%s' has none", j->name);
      return -EINVAL;
    }
    if (st == PFLEX_ALLOC_PFI && !(j->t_max > 0) && !j->curve) {
      cli_error("strategy 'pfi' needs each job's t_max: job '%s' has none", j->name);
      return -EINVAL;
    }
  }
  return 0;
}

static double job_pmax(const struct pflex_alloc_job *j) {
  return j->p_max > 0 ? j->p_max : pflex_curve_p_max(j->curve);
}

static int print_json(const struct pflex_jobset *set, enum pflex_alloc_strategy st, double cut,
                      const struct pflex_alloc_result *r, const struct pflex_alloc_summary *s,
                      json_t *notes, const struct allocate_shrink *sh) {
  json_t *root = json_object(), *arr = json_array();
  if (!root || !arr) {
    json_decref(arr);
    json_decref(root);
    return cli_print_json(NULL, 0); /* reports the lack of memory */
  }
  json_object_set_new(root, "strategy", json_string(pflex_alloc_strategy_name(st)));
  json_object_set_new(root, "unit", json_string(pflex_tput_unit_name(set->unit)));
  json_object_set_new(root, "relative", json_boolean(!pflex_tput_unit_absolute(set->unit)));
  cli_json_provenance(root, set->provenance);
  json_object_set_new(root, "target_w", json_real(s->target_w));
  json_object_set_new(root, "cut", json_real(cut));
  json_object_set_new(root, "uncapped_w", json_real(s->max_w));
  json_object_set_new(root, "min_w", json_real(s->min_w));
  json_object_set_new(root, "deepest_cut", json_real(s->deepest_cut));
  json_object_set_new(root, "total_w", json_real(s->total_w));
  json_object_set_new(root, "total_tput",
                      isfinite(s->total_tput) ? json_real(s->total_tput) : json_null());
  json_object_set_new(root, "weighted_tput",
                      isfinite(s->weighted_tput) ? json_real(s->weighted_tput) : json_null());
  json_object_set_new(root, "gap_bound", json_real(s->gap_bound));
  if (sh) json_object_set_new(root, "shrink", allocate_shrink_json(sh));
  for (size_t i = 0; i < set->n; i++) {
    const struct pflex_alloc_job *j = &set->jobs[i];
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(j->name));
    json_object_set_new(o, "gpus", json_integer(j->gpus));
    json_object_set_new(o, "power_w", json_real(r[i].power_w));
    json_object_set_new(o, "cap_w", json_real(r[i].cap_w));
    json_object_set_new(o, "tput", isfinite(r[i].tput) ? json_real(r[i].tput) : json_null());
    json_object_set_new(o, "floor_w", json_real(r[i].floor_w));
    json_object_set_new(o, "p_max_w", json_real(job_pmax(j)));
    double t_max = j->t_max > 0 ? j->t_max : j->curve ? pflex_curve_t_max(j->curve) : NAN;
    json_object_set_new(o, "t_max", isfinite(t_max) ? json_real(t_max) : json_null());
    json_object_set_new(o, "weight", json_real(j->weight));
    json_t *note = json_array_get(notes, i); /* a runs CSV's groups, as the jobs */
    if (json_is_string(note)) json_object_set(o, "reference_note", note);
    if (sh) allocate_shrink_job_json(sh, i, o);
    json_array_append_new(arr, o);
  }
  json_object_set_new(root, "jobs", arr);
  return cli_print_json(root, JSON_REAL_PRECISION(10));
}

static void print_csv(const struct pflex_jobset *set, const struct pflex_alloc_result *r) {
  const char *prov = pflex_provenance_name(set->provenance);
  printf("job,gpus,power_w,cap_w,tput,floor_w,p_max_w,provenance\n");
  for (size_t i = 0; i < set->n; i++) {
    const struct pflex_alloc_job *j = &set->jobs[i];
    pflex_csv_write_field(stdout, j->name, ',');
    printf("%d,", j->gpus);
    const double v[] = {r[i].power_w, r[i].cap_w, r[i].tput, r[i].floor_w, job_pmax(j)};
    for (size_t k = 0; k < 5; k++)
      pflex_csv_write_double(stdout, v[k], ',');
    printf("%s\n", prov);
  }
}

static void print_table(const struct pflex_jobset *set, enum pflex_alloc_strategy st, double cut,
                        const struct pflex_alloc_result *r, const struct pflex_alloc_summary *s,
                        const struct allocate_shrink *sh) {
  const char *unit = pflex_tput_unit_absolute(set->unit) ? "tokens/s" : "relative";
  if (s->target_w >= s->max_w)
    printf("strategy %s: target %.1f W is at or above the jobs' %.1f W uncapped: no cut is "
           "needed, every job runs uncapped\n",
           pflex_alloc_strategy_name(st), s->target_w, s->max_w);
  else if (cut < 0.0005) /* "0.0%" would read as no cut */
    printf("strategy %s: target %.1f W = <0.1%% cut of %.1f W uncapped\n",
           pflex_alloc_strategy_name(st), s->target_w, s->max_w);
  else
    printf("strategy %s: target %.0f W = %.1f%% cut of %.0f W uncapped\n",
           pflex_alloc_strategy_name(st), s->target_w, 100 * cut, s->max_w);
  size_t w = 4;
  for (size_t i = 0; i < set->n; i++)
    if (strlen(set->jobs[i].name) > w) w = strlen(set->jobs[i].name);
  if (w > 60) w = 60;
  printf("%-*s %5s %10s %10s %8s %12s %7s\n", (int)w, "job", "gpus", "power_w", "p_max_w", "cap_w",
         unit, "of_max");
  for (size_t i = 0; i < set->n; i++) {
    const struct pflex_alloc_job *j = &set->jobs[i];
    double tmax = j->curve ? pflex_curve_eval(j->curve, job_pmax(j)) : NAN;
    printf("%-*.*s %5d %10.1f %10.1f %8.1f %12.1f %6.1f%%\n", (int)w, (int)w, j->name, j->gpus,
           r[i].power_w, job_pmax(j), r[i].cap_w, r[i].tput, 100 * r[i].tput / tmax);
  }
  printf("%-*s %5s %10.1f %10.1f %8s %12.1f\n", (int)w, "total", "", s->total_w, s->max_w, "",
         s->total_tput);
  cli_print_provenance(stdout, set->provenance);
  if (sh) allocate_shrink_print(sh);
  if (s->gap_bound > 0)
    printf("note: some %scurves are not concave; the optimum may be up to %.3g (weighted "
           "throughput) higher than this allocation (docs/allocation.md)\n",
           sh ? "shrunk " : "", s->gap_bound);
  if (st == PFLEX_ALLOC_ORACLE)
    printf("note: oracle is optimal on the curves given, taken as the true curves\n");
}

/* A cap is a limit, not a share: GPUs draw under it (the allocation's
 * power is their draw at it), so caps may sum above the target. Says so
 * when they do, with the draw they give, rather than leave a reader to
 * take the file for a plan over the budget. */
static void caps_sum_note(const struct pflex_caps_plan *plan, const struct pflex_jobset *set,
                          const struct pflex_alloc_result *r, double target) {
  double caps = 0, draw = 0;
  for (size_t k = 0; k < plan->n; k++)
    caps += plan->caps[k].cap_w;
  for (size_t i = 0; i < set->n; i++)
    draw += r[i].power_w;
  if (caps > target)
    fprintf(stderr,
            "note: the caps sum to %.0f W, above the target %.0f W: each is the limit at which "
            "its job draws its share (all jobs' draw at their caps: %.0f W)\n",
            caps, target, draw);
}

/* --mapping FILE --caps-out OUT: each mapped GPU's cap, written for 'pflex cap set --from'. */
static int write_caps(const struct args *a, const struct pflex_jobset *set,
                      const struct pflex_alloc_result *r, enum pflex_alloc_strategy st,
                      double target) {
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  struct pflex_caps_plan map, plan;
  int err = pflex_mapping_read_json(a->mapping, &map, &diag);
  if (err) {
    cli_error_diag("cannot read the mapping", &diag, err);
    return err;
  }
  struct pflex_caps_job *jobs = calloc(set->n, sizeof *jobs);
  if (!jobs) err = -ENOMEM;
  for (size_t i = 0; jobs && i < set->n; i++)
    jobs[i] = (struct pflex_caps_job){set->jobs[i].name, set->jobs[i].gpus, r[i].cap_w};
  if (!err)
    err = pflex_caps_plan_build(&map, a->mapping, jobs, set->n, pflex_alloc_strategy_name(st),
                                target, set->provenance, &plan, &diag);
  free(jobs);
  pflex_caps_plan_release(&map);
  if (err) {
    cli_error_diag("cannot use the mapping", &diag, err);
    return err;
  }
  if ((err = pflex_caps_plan_write_json(a->caps_out, &plan)))
    cli_error("cannot write '%s': %s", a->caps_out, pflex_strerror(err));
  else
    fprintf(stderr, "wrote %zu GPU caps to '%s' ('pflex cap set --from %s' applies them)\n",
            plan.n, a->caps_out, a->caps_out);
  if (!err) caps_sum_note(&plan, set, r, target);
  pflex_caps_plan_release(&plan);
  return err;
}

static int run(int argc, char **argv) {
  struct args a = {.cut = NAN,
                   .target_w = NAN,
                   .strategy = PFLEX_ALLOC_OPTIMAL,
                   .objective = PFLEX_OBJECTIVE_TOKENS,
                   .unit = PFLEX_TPUT_TOKENS_PER_S,
                   .pfi_sd = DEFAULT_PFI_SD};
  struct cli_parsed p;
  int perr = cli_parse(&spec, argc, argv, &a, &p);
  if (perr) return cli_parse_status(perr);
  if (isnan(a.cut) && isnan(a.target_w)) {
    cli_usage_error(&spec, "give one of --cut and --target-w");
    return PFLEX_EXIT_USAGE;
  }
  double cut = a.cut / 100, target = a.target_w;
  enum pflex_alloc_strategy st = a.strategy;
  struct pflex_alloc_opts opts = a.alloc;
  bool json = a.json, csv = a.csv;
  const char *path = p.operands[0];
  struct pflex_jobset set;
  pflex_jobset_init(&set);
  if (a.shrink > 0 && st != PFLEX_ALLOC_OPTIMAL) {
    cli_usage_error(&spec, "--shrink applies to --strategy optimal");
    return PFLEX_EXIT_USAGE;
  }
  if (!a.mapping != !a.caps_out) {
    cli_usage_error(&spec, "--mapping and --caps-out go together");
    return PFLEX_EXIT_USAGE;
  }
  json_t *notes = NULL;
  struct allocate_shrink shrink = {0}, *sh = a.shrink > 0 ? &shrink : NULL;
  if (load(path, &a, &set, &notes)) return PFLEX_EXIT_FAIL;
  int status = PFLEX_EXIT_FAIL;
  struct pflex_alloc_result *r = calloc(set.n ? set.n : 1, sizeof *r);
  if (!r) {
    cli_error("out of memory");
    goto out;
  }
  if (set.n == 0) {
    cli_error("'%s' holds no jobs", path);
    goto out;
  }
  if (check_needs(&set, st)) goto out;
  size_t bad;
  if (pflex_objective_apply(a.objective, set.jobs, set.n, &bad)) {
    cli_error("--objective %s: job '%s' has no uncapped throughput",
              pflex_objective_name(a.objective), set.jobs[bad].name ? set.jobs[bad].name : "?");
    goto out;
  }
  int err;
  if (isnan(target)) {
    if ((err = pflex_alloc_target_for_cut(set.jobs, set.n, cut, &target))) {
      cli_error("cannot compute the target: %s", pflex_strerror(err));
      goto out;
    }
  }
  struct pflex_alloc_summary s;
  size_t bad_pfi = 0;
  err = sh ? allocate_shrunk(set.jobs, set.n, target, a.shrink, a.pfi_sd, &opts, r, &s, sh,
                             &bad_pfi)
           : pflex_alloc_run(set.jobs, set.n, st, target, &opts, r, &s);
  if (sh && err == -EINVAL) {
    cli_error("--shrink: job '%s' has no PFI (a jobs file's \"pfi\" or its curve's points)",
              set.jobs[bad_pfi].name ? set.jobs[bad_pfi].name : "?");
    goto out;
  }
  if (err == -PFLEX_E_INFEASIBLE) {
    /* Rounded down: a cut of the printed size must be feasible. */
    cli_error("target %.1f W is infeasible: the jobs need at least %.1f W (their floors and "
              "throughput minimums); the deepest feasible cut is %.2f%%",
              target, ceil(s.min_w * 10) / 10, floor(s.deepest_cut * 1e4) / 100);
    goto out;
  }
  if (err == -ERANGE) {
    cli_error("cannot allocate: a job lies beyond the allocator's range (P_max above %g W, "
              "weight above %g, or throughput above %g)",
              PFLEX_ALLOC_MAX_W, PFLEX_ALLOC_MAX_WEIGHT, PFLEX_ALLOC_MAX_TPUT);
    goto out;
  }
  if (err) {
    cli_error("cannot allocate: %s", pflex_strerror(err));
    goto out;
  }
  cut = s.max_w > 0 ? fmax(0, 1 - target / s.max_w) : 0; /* a target above the total: none */
  if (a.mapping && write_caps(&a, &set, r, st, target)) goto out;
  if (json) {
    if (print_json(&set, st, cut, r, &s, notes, sh)) goto out;
  } else if (csv) {
    print_csv(&set, r);
  } else {
    print_table(&set, st, cut, r, &s, sh);
  }
  status = PFLEX_EXIT_OK;
out:
  if (sh) allocate_shrink_release(sh);
  free(r);
  json_decref(notes);
  pflex_jobset_release(&set);
  return status;
}

const struct pflex_cmd pflex_cmd_allocate = {
    .name = "allocate",
    .run = run,
    .summary = "split a cluster power target among jobs (per-job power, cap, throughput)",
    .specs = (const struct cli_spec *const[]){&spec, NULL}};
