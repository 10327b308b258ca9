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

void cli_pfi_args_release(struct cli_pfi_args *a) {
  free(a->grid);
  a->grid = NULL;
}

static int parse_double(const char *opt, const char *arg, double lo, double *ret) {
  char *end;
  errno = 0;
  double v = strtod(arg, &end);
  if (end == arg || *end || errno || !isfinite(v) || v < lo) {
    cli_error("%s: '%s' is not a number >= %g", opt, arg, lo);
    return -EINVAL;
  }
  *ret = v;
  return 0;
}

static int parse_ulong(const char *opt, const char *arg, unsigned long max, unsigned long *ret) {
  char *end;
  errno = 0;
  unsigned long v = strtoul(arg, &end, 10);
  if (end == arg || *end || errno || arg[0] == '-' || v > max) {
    cli_error("%s: '%s' is not a whole number from 0 to %lu", opt, arg, max);
    return -EINVAL;
  }
  *ret = v;
  return 0;
}

int cli_pfi_option(struct cli_pfi_args *a, int c, const char *arg) {
  unsigned long u;
  switch (c) {
  case OPT_GRID:
    free(a->grid);
    a->grid = NULL;
    if (cli_parse_list(arg, &a->grid, &a->ngrid)) {
      cli_error("--grid: '%s' is not a list of caps in W (e.g. 200,500,600,700)", arg);
      return -EINVAL;
    }
    a->opts.grid = a->grid;
    a->opts.ngrid = a->ngrid;
    return 0;
  case OPT_DEFINITION:
    if (pflex_pfi_definition_parse(arg, &a->opts.definition)) {
      cli_error("--definition: '%s' is not one of ratio, area, elasticity", arg);
      return -EINVAL;
    }
    return 0;
  case OPT_EXCLUDE:
    if (pflex_pfi_exclude_parse(arg, &a->opts.exclude)) {
      cli_error("--exclude: '%s' is not one of noise, paper", arg);
      return -EINVAL;
    }
    return 0;
  case OPT_DRAWS:
    if (parse_ulong("--draws", arg, 10000000, &u)) return -EINVAL;
    a->opts.draws = u;
    return 0;
  case OPT_SEED:
    if (parse_ulong("--seed", arg, 0xffffffffUL, &u)) return -EINVAL;
    a->opts.seed = u;
    return 0;
  case OPT_POWER_CV: return parse_double("--power-cv", arg, 0, &a->opts.power_cv);
  case OPT_TPUT_CV: return parse_double("--tput-cv", arg, 0, &a->opts.tput_cv);
  case OPT_NOISE_K: return parse_double("--noise-k", arg, 0, &a->opts.noise_k);
  case OPT_UNIT:
    if (cli_parse_unit(arg, &a->read.unit)) {
      cli_error("--unit: '%s' is not one of tokens, samples, steps, step-time", arg);
      return -EINVAL;
    }
    return 0;
  }
  return 1;
}

void cli_pfi_reason_text(const struct pflex_pfi_run_result *r, const struct pflex_pfi_opts *o,
                         char *buf, size_t size) {
  switch (r->reason) {
  case PFLEX_PFI_REASON_TMAX_EQUAL:
    snprintf(buf, size, "throughput equals the uncapped run's (T_i == T_max): Eq. 1 is undefined");
    break;
  case PFLEX_PFI_REASON_NOISE:
    if (r->drop <= 0)
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

int cli_pfi_value_compute(const struct pflex_runset *set, const struct pflex_group *g,
                          const struct pflex_pfi_opts *opts, struct cli_pfi_value *v) {
  memset(v, 0, sizeof *v);
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
  if (!ok)
    e |= set_key(obj, prefix, "error",
                 json_string(v->err == -PFLEX_E_NOPOINTS ? "no capped run left after exclusions"
                                                         : pflex_strerror(v->err)));
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
                         const struct pflex_pfi_opts *opts, const char *what) {
  char buf[256];
  if (v->err && v->err != -PFLEX_E_NOPOINTS) {
    fprintf(out, "  %s%s: no PFI: %s\n", group, what, pflex_strerror(v->err));
    return;
  }
  if (v->err == -PFLEX_E_NOPOINTS)
    fprintf(out, "  %s%s: no PFI: no capped run left after the exclusions below\n", group, what);
  for (size_t i = 0; i < v->n; i++) {
    const struct pflex_pfi_run_result *r = &v->runs[i];
    if (r->role != PFLEX_PFI_EXCLUDED || r->reason == PFLEX_PFI_REASON_GRID) continue;
    cli_pfi_reason_text(r, opts, buf, sizeof buf);
    fprintf(out, "  %s%s: %g W excluded: %s\n", group, what, r->cap_w, buf);
  }
}
