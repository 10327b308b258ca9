/* Helpers shared by the commands (see util.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/reference_notes.h"
#include "cli/util.h"
#include "pflex/alloc.h"
#include "pflex/objective.h"
#include "pflex/predict.h"
#include "pflex/runs_csv.h"
#include "pflex/runs_json.h"

void cli_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void cli_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("warning: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void cli_error_diag(const char *what, const struct pflex_diag *diag, int err) {
  char buf[1024];
  pflex_diag_format(diag, buf, sizeof buf);
  if (diag->message[0])
    cli_error("%s %s", what, buf);
  else
    cli_error("%s %s: %s", what, buf, pflex_strerror(err));
}

const char *cli_unit_name(int i) {
  const struct pflex_tput_unit_info *u = i >= 0 ? pflex_tput_unit_at((size_t)i) : NULL;
  return u ? u->name : NULL;
}

const char *cli_model_kind_name(int i) {
  return i >= PFLEX_MODEL_OLS && i <= PFLEX_MODEL_PRIOR
             ? pflex_model_kind_name((enum pflex_model_kind)i)
             : NULL;
}

const char *cli_loco_name(int i) {
  return i >= PFLEX_LOCO_ARCH_TASK && i <= PFLEX_LOCO_POOLED_DENSE
             ? pflex_loco_name((enum pflex_loco)i)
             : NULL;
}

const char *cli_objective_name(int i) {
  return i >= 0 && i < PFLEX_OBJECTIVE_N ? pflex_objective_name((enum pflex_objective)i) : NULL;
}

const char *cli_strategy_name(int i) {
  return i >= 0 && i < PFLEX_ALLOC_NSTRATEGIES
             ? pflex_alloc_strategy_name((enum pflex_alloc_strategy)i)
             : NULL;
}

int cli_parse_unit(const char *s, enum pflex_tput_unit *ret) {
  return pflex_tput_unit_parse(s, ret);
}

int cli_print_json(json_t *v, size_t flags) {
  char *text = v ? json_dumps(v, JSON_INDENT(2) | flags) : NULL;
  json_decref(v);
  if (!text) {
    cli_error("out of memory");
    return -ENOMEM;
  }
  int err = puts(text) < 0 ? -EIO : 0;
  free(text);
  if (err) cli_error("cannot write the JSON output");
  return err;
}

int cli_parse_count(const char *opt, const char *arg, unsigned long long lo, unsigned long long hi,
                    unsigned long long *ret) {
  unsigned long long v;
  if (cli_decimal_count(arg, &v) || v < lo || v > hi) {
    cli_error("%s: '%s' is not a whole number from %llu to %llu", opt, arg, lo, hi);
    return -EINVAL;
  }
  *ret = v;
  return 0;
}

int cli_parse_double(const char *opt, const char *arg, double lo, double hi, double *ret) {
  double v;
  if (cli_decimal(arg, &v) || v < lo || v > hi) {
    if (isinf(hi))
      cli_error("%s: '%s' is not a number >= %g", opt, arg, lo);
    else
      cli_error("%s: '%s' is not a number from %g to %g", opt, arg, lo, hi);
    return -EINVAL;
  }
  *ret = v;
  return 0;
}

const struct cli_choice cli_format_choices[] = {
    {"csv", CLI_FORMAT_CSV}, {"json", CLI_FORMAT_JSON}, {NULL, 0}};

bool cli_ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

const char *cli_default_db(void) {
  const char *db = getenv("PFLEX_DB");
  return db && *db ? db : "pflex.db";
}

bool cli_looks_like_json(const char *path) {
  if (cli_ends_with(path, ".json")) return true;
  FILE *f = fopen(path, "r");
  if (!f) return false;
  int c;
  while ((c = fgetc(f)) != EOF && isspace(c)) {
  }
  fclose(f);
  return c == '{' || c == '[';
}

/* The runs of all whose set column is name, into out (empty). 0 or -ENOMEM. */
static int keep_set(const struct pflex_runset *all, const char *name, struct pflex_runset *out) {
  out->unit = all->unit;
  int err = all->source && !(out->source = strdup(all->source)) ? -ENOMEM : 0;
  for (size_t k = 0; !err && k < all->nextra; k++)
    err = pflex_runset_add_column(out, all->extra_names[k], NULL);
  for (size_t i = 0; !err && i < all->n; i++)
    if (all->runs[i].set && strcmp(all->runs[i].set, name) == 0)
      err = pflex_runset_append(out, &all->runs[i]);
  return err;
}

/* A runs JSON file (pflex export --format json), read as import reads it,
 * --set applied as the CSV reader applies it. */
static int read_runs_json(const char *path, const struct pflex_runs_read_opts *opts,
                          struct pflex_runset *ret_set, struct pflex_diag *diag) {
  if (opts && opts->tput_column)
    return pflex_diag_set(diag, -EINVAL, path, 0, NULL,
                          "a runs JSON file names its own throughput: --tput-column is for a "
                          "runs CSV");
  struct pflex_runset all;
  pflex_runset_init(&all);
  int err = pflex_runs_read_json(path, &all, diag);
  if (!err && opts && opts->set_filter) {
    err = keep_set(&all, opts->set_filter, ret_set);
    if (!err && ret_set->n == 0)
      err = pflex_diag_set(diag, -PFLEX_E_DATA, path, 0, "set", "no run has set '%s'",
                           opts->set_filter);
    pflex_runset_release(&all);
  } else if (!err) {
    *ret_set = all;
  }
  if (!err) err = pflex_runset_check_groups(ret_set, opts && opts->partial_groups, diag);
  if (err) pflex_runset_release(ret_set);
  return err;
}

int cli_load_runs(const char *path, const struct pflex_runs_read_opts *opts,
                  struct pflex_runset *ret_set) {
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  int err = cli_looks_like_json(path) ? read_runs_json(path, opts, ret_set, &diag)
                                      : pflex_runs_read_csv(path, opts, ret_set, &diag);
  if (err) {
    cli_error_diag("cannot read", &diag, err);
    return err;
  }
  /* Say once per kind when any run is not a measurement (column provenance). */
  size_t k = 0;
  bool have = pflex_runset_find_column(ret_set, "provenance", &k) == 0;
  bool reconstructed = false, simulated = false;
  for (size_t i = 0; have && i < ret_set->n; i++) {
    reconstructed |= strcmp(ret_set->runs[i].extra[k], "reconstructed") == 0;
    simulated |= strcmp(ret_set->runs[i].extra[k], "simulated") == 0;
  }
  if (reconstructed)
    fprintf(stderr,
            "note: '%s' holds reconstructed data (modelled from the paper's published "
            "numbers, not measurements); see data/reference/README.md\n",
            path);
  if (simulated)
    fprintf(stderr,
            "note: '%s' holds simulated data (pflex's GPU and job model, not "
            "measurements); see docs/twin.md\n",
            path);
  if (!pflex_tput_unit_absolute(ret_set->unit))
    fprintf(stderr,
            "note: throughput in '%s' is %s: only ratios are meaningful, tokens/s "
            "figures are relative\n",
            path, pflex_tput_unit_name(ret_set->unit));
  /* For analysis (not the store's import): which run each group is compared with. */
  if (!(opts && (opts->require_uncapped || opts->partial_groups)))
    cli_reference_notes_print(ret_set, opts);
  return 0;
}

void cli_print_provenance(FILE *f, enum pflex_provenance p) {
  fprintf(f, "provenance: %s\n", pflex_provenance_note(p));
}

int cli_json_provenance(json_t *o, enum pflex_provenance p) {
  return json_object_set_new(o, "provenance", json_string(pflex_provenance_name(p))) ? -ENOMEM : 0;
}

int cli_parse_list(const char *s, double **ret_values, size_t *ret_n) {
  return cli_decimal_list(s, ret_values, ret_n);
}

const char *cli_reference_runs(void) {
  static char path[4096];
  const char *dir = getenv("PFLEX_DATA_DIR");
  if (dir && *dir) {
    snprintf(path, sizeof path, "%s/reference/runs.csv", dir);
    return path;
  }
  static const char *const candidates[] = {PFLEX_DATADIR "/reference/runs.csv",
                                           PFLEX_SOURCE_DATADIR "/reference/runs.csv"};
  for (size_t i = 0; i < sizeof candidates / sizeof *candidates; i++)
    if (access(candidates[i], R_OK) == 0) return candidates[i];
  return "data/reference/runs.csv";
}

void cli_fmt_interval(char *buf, size_t size, double lo, double hi) {
  snprintf(buf, size, lo < 0 || hi < 0 ? "%.3f to %.3f" : "%.3f-%.3f", lo, hi);
}

unsigned cli_threads(unsigned given) {
  if (given != 0 && given != CLI_THREADS_UNSET) return given;
  unsigned max = given ? 8 : CLI_THREADS_MAX;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  return (unsigned long)n < max ? (unsigned)n : max;
}
