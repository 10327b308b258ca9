/* Options shared by `pflex pfi` and `pflex stats` (pfi_args.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/pfi_args.h"
#include "cli/util.h"

void cli_pfi_args_init(struct cli_pfi_args *a) {
  memset(a, 0, sizeof *a);
  pflex_pfi_opts_init(&a->opts);
}

void cli_pfi_args_finish(struct cli_pfi_args *a) {
  a->opts.grid = a->grid.v;
  a->opts.ngrid = a->grid.n;
}

void cli_pfi_args_release(struct cli_pfi_args *a) {
  free(a->grid.v);
  a->grid = (struct cli_list){0};
  a->opts.grid = NULL;
  a->opts.ngrid = 0;
}

static const char *definition_name(int i) {
  return i >= PFLEX_PFI_RATIO && i <= PFLEX_PFI_ELASTICITY
             ? pflex_pfi_definition_name((enum pflex_pfi_definition)i)
             : NULL;
}

static const char *exclude_name(int i) {
  return i >= PFLEX_PFI_EXCLUDE_NOISE && i <= PFLEX_PFI_EXCLUDE_PAPER
             ? pflex_pfi_exclude_name((enum pflex_pfi_exclude)i)
             : NULL;
}

/* --noise run|repeat into opts.ignore_sd. */
static int parse_noise(const char *arg, void *field) {
  bool *ignore_sd = field;
  if (strcmp(arg, "run") == 0)
    *ignore_sd = false;
  else if (strcmp(arg, "repeat") == 0)
    *ignore_sd = true;
  else
    return -EINVAL;
  return 0;
}

#define A struct cli_pfi_args
const struct cli_option cli_pfi_target_options[] = {
    {CLI_ENUM_FN("definition", "D", A, opts.definition, definition_name,
                 "ratio (Eq. 1 and 3, default), area, or elasticity (paper Appendix A)")},
    {CLI_ENUM_FN("exclude", "R", A, opts.exclude, exclude_name,
                 "noise (default): drop caps whose throughput drop is within k standard errors "
                 "of T_i/T_max; paper: drop only runs with T_i == T_max")},
    {CLI_DOUBLE("noise-k", "K", A, opts.noise_k, 0, INFINITY,
                "threshold of the noise rule in standard errors (default 2)")},
    {CLI_CUSTOM("noise", "N", A, opts.ignore_sd, parse_noise, "one of run, repeat",
                "run (default): each run's power_sd/tokens_sd when given (its within-run "
                "error), else the CVs; repeat: the CVs for every run (run-to-run noise)")},
    {CLI_DOUBLE("power-cv", "X", A, opts.power_cv, 0, INFINITY,
                "relative noise of power when power_sd is absent (default 0.004, the paper's "
                "repeat CV)")},
    {CLI_DOUBLE("tput-cv", "X", A, opts.tput_cv, 0, INFINITY,
                "relative noise of throughput when tokens_sd is absent (default 0.005)")},
    {CLI_END}};

const struct cli_option cli_pfi_read_options[] = {
    {CLI_ENUM_FN("unit", "U", A, read.unit, cli_unit_name,
                 "throughput column: tokens (default), samples, steps, step-time")},
    {CLI_STRING("tput-column", "C", A, read.tput_column,
                "read the throughput from column C (in the unit --unit names)")},
    {CLI_DOUBLE("reference-cap", "W", A, read.reference_cap_w, 0, INFINITY,
                "each group's run at W per GPU is its reference (uncapped) run; runs above it "
                "are left out (default: the highest cap, noted when below the GPU's default "
                "limit)"),
     .flags = CLI_OPEN_MIN},
    {CLI_END}};

const struct cli_option cli_pfi_ci_options[] = {
    {CLI_COUNT("draws", "N", A, opts.draws, 0, 10000000,
               "Monte Carlo draws for the 95% CI (default 10000; 0: no CI)")},
    {CLI_COUNT("seed", "S", A, opts.seed, 0, 0xffffffffULL,
               "random seed of the Monte Carlo draws (default 1)")},
    {CLI_END}};

const struct cli_option cli_pfi_set_option[] = {
    {CLI_STRING("set", "NAME", A, read.set_filter,
                "only runs whose set column is NAME (e.g. headline)")},
    {CLI_END}};
#undef A

void cli_pfi_reason_text(const struct pflex_pfi_run_result *r, const struct pflex_pfi_opts *o,
                         char *buf, size_t size) {
  switch (r->reason) {
  case PFLEX_PFI_REASON_TMAX_EQUAL:
    snprintf(buf, size, "throughput equals the uncapped run's (T_i == T_max): Eq. 1 is undefined");
    break;
  case PFLEX_PFI_REASON_NOISE:
    if (r->drop < -o->noise_k * r->drop_se)
      /* Faster than uncapped beyond noise: excluded all the same (its PFI_i would be
       * negative), but the likelier story is a bad uncapped run, so say that. */
      snprintf(buf, size,
               "throughput %.2f%% above the uncapped run's, beyond noise (%g x %.2f%%): "
               "check the uncapped run",
               -100 * r->drop, o->noise_k, 100 * r->drop_se);
    else if (r->drop <= 0)
      snprintf(buf, size, "cap does not bind: throughput %.2f%% above the uncapped run's",
               -100 * r->drop);
    else
      snprintf(buf, size,
               "cap does not bind: throughput %.2f%% below the uncapped run's, under %g standard "
               "errors (%g x %.2f%% = %.2f%%)",
               100 * r->drop, o->noise_k, o->noise_k, 100 * r->drop_se,
               100 * o->noise_k * r->drop_se);
    break;
  case PFLEX_PFI_REASON_GRID: snprintf(buf, size, "cap not in the grid"); break;
  case PFLEX_PFI_REASON_NONE: snprintf(buf, size, "not excluded"); break;
  }
}

/* Why a computation that failed with v->err left no value, in words. */
static const char *why_none(const struct cli_pfi_value *v, const struct pflex_pfi_opts *opts) {
  if (v->err != -PFLEX_E_NOPOINTS) return pflex_strerror(v->err);
  size_t noise = 0, excluded = 0;
  for (size_t i = 0; i < v->n; i++)
    if (v->runs[i].role == PFLEX_PFI_EXCLUDED) {
      excluded++;
      noise += v->runs[i].reason == PFLEX_PFI_REASON_NOISE;
    }
  if (opts->definition == PFLEX_PFI_ELASTICITY && excluded + 1 < v->n)
    return "the runs kept have fewer than two distinct powers: no fit";
  if (noise)
    return "every capped run was excluded (see the notes; --exclude paper keeps all but "
           "T_i == T_max)";
  return "every capped run was excluded (see the notes)";
}

int cli_pfi_value_compute(const struct pflex_runset *set, const struct pflex_group *g,
                          const struct pflex_pfi_opts *opts, struct cli_pfi_value *v) {
  memset(v, 0, sizeof *v);
  if (g->n < 2) {
    /* pflex_pfi_compute would say only -EINVAL. */
    v->err = -PFLEX_E_NOPOINTS;
    v->why = "the group has a single run: PFI needs the uncapped run and at least one capped run";
    return v->err;
  }
  struct pflex_pfi_point *pts;
  v->err = pflex_pfi_group_points(set, g, &pts);
  if (v->err) return v->err;
  v->err = pflex_pfi_compute(pts, g->n, opts, &v->res);
  if (v->err == 0) {
    v->runs = v->res.runs;
    v->n = v->res.n;
  } else if (v->err == -PFLEX_E_NOPOINTS) {
    v->runs = calloc(g->n, sizeof *v->runs);
    if (v->runs && pflex_pfi_classify(pts, g->n, opts, v->runs) == 0) v->n = g->n;
  }
  free(pts);
  if (v->err) v->why = why_none(v, opts);
  return v->err;
}

void cli_pfi_value_release(struct cli_pfi_value *v) {
  if (v->err == 0)
    pflex_pfi_result_release(&v->res);
  else
    free(v->runs);
  memset(v, 0, sizeof *v);
}

static int set_key(json_t *obj, const char *prefix, const char *key, json_t *val) {
  char name[64];
  snprintf(name, sizeof name, "%s%s", prefix, key);
  return json_object_set_new(obj, name, val ? val : json_null());
}

int cli_pfi_value_json(json_t *obj, const char *prefix, const struct cli_pfi_value *v) {
  bool ok = v->err == 0, ci = ok && v->res.have_ci;
  int e = 0;
  e |= set_key(obj, prefix, "pfi", ok ? json_real(v->res.pfi) : json_null());
  e |= set_key(obj, prefix, "ci_low", ci ? json_real(v->res.ci_low) : json_null());
  e |= set_key(obj, prefix, "ci_high", ci ? json_real(v->res.ci_high) : json_null());
  e |= set_key(obj, prefix, "runs", json_integer(ok ? (json_int_t)v->res.runs_used : 0));
  e |= set_key(obj, prefix, "draws_used", json_integer(ok ? (json_int_t)v->res.draws_used : 0));
  if (!ok) e |= set_key(obj, prefix, "error", json_string(v->why));
  json_t *ex = json_array();
  for (size_t i = 0; ex && i < v->n; i++) {
    const struct pflex_pfi_run_result *r = &v->runs[i];
    if (r->role != PFLEX_PFI_EXCLUDED || r->reason == PFLEX_PFI_REASON_GRID) continue;
    e |= json_array_append_new(ex, json_pack("{s:f, s:s, s:f, s:f}", "cap_w", r->cap_w, "reason",
                                             pflex_pfi_reason_name(r->reason), "drop", r->drop,
                                             "drop_se", r->drop_se));
  }
  e |= set_key(obj, prefix, "excluded", ex);
  json_t *per = json_array();
  for (size_t i = 0; per && ok && i < v->n; i++)
    if (v->runs[i].have_pfi_i)
      e |= json_array_append_new(
          per, json_pack("{s:f, s:f}", "cap_w", v->runs[i].cap_w, "pfi_i", v->runs[i].pfi_i));
  e |= set_key(obj, prefix, "per_cap", per);
  return e ? -ENOMEM : 0;
}

void cli_pfi_value_notes(FILE *out, const char *group, const struct cli_pfi_value *v,
                         const struct pflex_pfi_opts *opts, const char *what, bool with_excluded) {
  char buf[256];
  if (v->err) fprintf(out, "  %s%s: no PFI: %s\n", group, what, v->why);
  /* Dropped draws bias the interval: say so rather than print it as if complete. */
  if (!v->err && opts->draws && v->res.draws_used < opts->draws)
    fprintf(out,
            "  %s%s: CI from %zu of %zu draws: the others gave a non-positive power or "
            "throughput or no value\n",
            group, what, v->res.draws_used, opts->draws);
  for (size_t i = 0; with_excluded && i < v->n; i++) {
    const struct pflex_pfi_run_result *r = &v->runs[i];
    if (r->role != PFLEX_PFI_EXCLUDED || r->reason == PFLEX_PFI_REASON_GRID) continue;
    cli_pfi_reason_text(r, opts, buf, sizeof buf);
    fprintf(out, "  %s%s: %g W excluded: %s\n", group, what, r->cap_w, buf);
  }
}
