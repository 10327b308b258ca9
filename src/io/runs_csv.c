/* The runs CSV (docs/formats.md): reading with validation, and atomic writing.
 *
 * Reading is all or nothing: the whole file is parsed and checked into a
 * local runset, which replaces *ret_set only when every rule holds. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/atomic.h"
#include "io/csv_table.h"
#include "io/runs_internal.h"
#include "pflex/csv.h"
#include "pflex/format.h"
#include "pflex/runs.h"
#include "pflex/runs_csv.h"

/* Columns pflex interprets; every other column is kept verbatim in extra. */
static const char *const known_columns[] = {"group",    "gpu",   "gpus",    "cap_w",     "power_w",
                                            "power_sd", "model", "arch",    "task",      "seq_len",
                                            "batch",    "ep",    "compile", "grad_ckpt", "set"};

static const struct {
  enum pflex_tput_unit unit;
  const char *column;
  const char *sd_column;
} tput_columns[] = {
    {PFLEX_TPUT_TOKENS_PER_S, "tokens_per_s", "tokens_sd"},
    {PFLEX_TPUT_SAMPLES_PER_S, "samples_per_s", "samples_sd"},
    {PFLEX_TPUT_STEPS_PER_S, "steps_per_s", "steps_sd"},
    {PFLEX_TPUT_PER_STEP_TIME, "s_per_step", "s_per_step_sd"},
};
#define NTPUT (sizeof tput_columns / sizeof tput_columns[0])

struct ctx {
  const char *path;
  const struct pflex__csv_table *t;
  struct pflex_diag *diag;
};

static int parse_double(const struct ctx *c, const struct pflex__csv_record *r, long col,
                        double *ret) {
  const char *s = r->fields[col];
  const char *name = c->t->header.fields[col];
  if (!*s) return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, r->line, name, "empty");
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end)
    return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, r->line, name, "'%s' is not a number",
                          s);
  if (!isfinite(v) || errno == ERANGE)
    return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, r->line, name,
                          "'%s' is not a finite number", s);
  *ret = v;
  return 0;
}

static int parse_positive(const struct ctx *c, const struct pflex__csv_record *r, long col,
                          double *ret) {
  double v;
  int err = parse_double(c, r, col, &v);
  if (err) return err;
  if (!(v > 0))
    return pflex_diag_set(c->diag, -PFLEX_E_DATA, c->path, r->line, c->t->header.fields[col],
                          "must be greater than zero, got %s", r->fields[col]);
  *ret = v;
  return 0;
}

static int parse_int(const struct ctx *c, const struct pflex__csv_record *r, long col, int min,
                     int *ret) {
  const char *s = r->fields[col];
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (!*s || *end || errno || v < min || v > PFLEX_RUN_INT_MAX)
    return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, r->line, c->t->header.fields[col],
                          "'%s' is not a whole number from %d to %d", s, min, PFLEX_RUN_INT_MAX);
  *ret = (int)v;
  return 0;
}

static int parse_bool(const struct ctx *c, const struct pflex__csv_record *r, long col, bool *ret) {
  static const char *const yes[] = {"1", "true", "yes", "y"}, *const no[] = {"0", "false", "no",
                                                                             "n"};
  const char *s = r->fields[col];
  for (size_t i = 0; i < 4; i++) {
    if (strcasecmp(s, yes[i]) == 0) return *ret = true, 0;
    if (strcasecmp(s, no[i]) == 0) return *ret = false, 0;
  }
  return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, r->line, c->t->header.fields[col],
                        "'%s' is not a boolean (1/0, true/false, yes/no, y/n)", s);
}

static int parse_arch(const struct ctx *c, const struct pflex__csv_record *r, long col,
                      enum pflex_arch *ret) {
  const char *s = r->fields[col];
  if (pflex_arch_parse(s, ret) == 0) return 0;
  return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, r->line, "arch",
                        "'%s' is not 'dense' or 'moe'", s);
}

static int parse_task(const struct ctx *c, const struct pflex__csv_record *r, long col,
                      enum pflex_task *ret) {
  const char *s = r->fields[col];
  if (pflex_task_parse(s, ret) == 0) return 0;
  return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, r->line, "task",
                        "'%s' is not 'pt' (pretraining) or 'ft' (fine-tuning)", s);
}

static bool is_known(const char *name) {
  for (size_t i = 0; i < sizeof known_columns / sizeof *known_columns; i++)
    if (strcmp(name, known_columns[i]) == 0) return true;
  return false;
}

/* Chooses the throughput column: an explicit name; else, when a unit other
 * than tokens/s is asked for, that unit's column (the user said which); else
 * tokens_per_s; else the only rate column present. */
static int pick_tput(const struct ctx *c, const struct pflex_runs_read_opts *opts, long *ret_col,
                     long *ret_sd, enum pflex_tput_unit *ret_unit) {
  const struct pflex__csv_table *t = c->t;
  enum pflex_tput_unit want = opts ? opts->unit : PFLEX_TPUT_TOKENS_PER_S;
  if (opts && opts->tput_column) {
    long col = pflex__csv_column(t, opts->tput_column);
    if (col < 0)
      return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, t->header.line, opts->tput_column,
                            "throughput column missing from the header");
    *ret_col = col;
    *ret_unit = want;
    char sd[80];
    snprintf(sd, sizeof sd, "%s_sd", opts->tput_column);
    *ret_sd = pflex__csv_column(t, sd);
    return 0;
  }
  size_t which = 0, nfound = 0;
  long found = -1;
  for (size_t i = 0; i < NTPUT; i++) {
    long col = pflex__csv_column(t, tput_columns[i].column);
    if (want != PFLEX_TPUT_TOKENS_PER_S && tput_columns[i].unit == want) {
      if (col < 0)
        return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, t->header.line,
                              tput_columns[i].column,
                              "required column missing from the header (the unit asked for)");
      found = col, which = i, nfound = 1;
      break;
    }
    if (col < 0) continue;
    if (nfound++ == 0 || tput_columns[i].unit == PFLEX_TPUT_TOKENS_PER_S) found = col, which = i;
  }
  if (nfound == 0)
    return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, t->header.line, "tokens_per_s",
                          "required column missing from the header (or samples_per_s, "
                          "steps_per_s, s_per_step)");
  if (nfound > 1 && tput_columns[which].unit != PFLEX_TPUT_TOKENS_PER_S)
    return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, t->header.line, NULL,
                          "several throughput columns and none chosen (--unit)");
  *ret_col = found;
  *ret_unit = tput_columns[which].unit;
  *ret_sd = pflex__csv_column(t, tput_columns[which].sd_column);
  return 0;
}

bool pflex__runs_column_reserved(const char *name, enum pflex_tput_unit unit) {
  for (size_t i = 0; i < NTPUT; i++)
    if (tput_columns[i].unit == unit &&
        (strcmp(name, tput_columns[i].column) == 0 || strcmp(name, tput_columns[i].sd_column) == 0))
      return true;
  return is_known(name);
}

static bool tput_column_name(const struct pflex__csv_table *t, size_t col, long tput_col,
                             long tput_sd) {
  return (long)col == tput_col || (long)col == tput_sd;
}

int pflex_runs_read_csv(const char *path, const struct pflex_runs_read_opts *opts,
                        struct pflex_runset *ret_set, struct pflex_diag *diag) {
  struct pflex__csv_table t;
  int err = pflex__csv_read(path, &t, diag);
  if (err) return err;
  struct ctx c = {.path = path, .t = &t, .diag = diag};
  struct pflex_runset set;
  pflex_runset_init(&set);
  long col[sizeof known_columns / sizeof *known_columns];
  long tput_col = -1, tput_sd = -1;
  size_t *extra_col = NULL;

  if (t.nrows == 0) {
    err = pflex_diag_set(diag, -PFLEX_E_PARSE, path, t.header.line, NULL,
                         "header only: the file has no runs");
    goto out;
  }
  for (size_t i = 0; i < sizeof known_columns / sizeof *known_columns; i++) {
    col[i] = pflex__csv_column(&t, known_columns[i]);
    if (i < 5 && col[i] < 0) {
      err = pflex_diag_set(diag, -PFLEX_E_PARSE, path, t.header.line, known_columns[i],
                           "required column missing from the header");
      goto out;
    }
  }
  err = pick_tput(&c, opts, &tput_col, &tput_sd, &set.unit);
  if (err) goto out;
  extra_col = calloc(t.header.n, sizeof *extra_col);
  if (!extra_col) {
    err = -ENOMEM;
    goto out;
  }
  size_t nextra_cols = 0;
  for (size_t k = 0; k < t.header.n; k++) {
    const char *name = t.header.fields[k];
    if (is_known(name) || tput_column_name(&t, k, tput_col, tput_sd)) continue;
    if ((err = pflex_runset_add_column(&set, name, NULL))) goto out;
    extra_col[nextra_cols++] = k;
  }

  char **extra = set.nextra ? calloc(set.nextra, sizeof *extra) : NULL;
  if (set.nextra && !extra) {
    err = -ENOMEM;
    goto out;
  }
  for (size_t i = 0; i < t.nrows; i++) {
    const struct pflex__csv_record *r = &t.rows[i];
    struct pflex_run run = {.line = r->line, .extra = extra};
    double v;
    run.group = r->fields[col[0]];
    run.gpu = r->fields[col[1]];
    if (!*run.group)
      err = pflex_diag_set(diag, -PFLEX_E_PARSE, path, r->line, "group", "empty");
    else if (!*run.gpu)
      err = pflex_diag_set(diag, -PFLEX_E_PARSE, path, r->line, "gpu", "empty");
    if (!err) err = parse_int(&c, r, col[2], 1, &run.gpus);
    if (!err) err = parse_positive(&c, r, col[3], &run.cap_w);
    if (!err) err = parse_positive(&c, r, col[4], &run.power_w);
    if (!err) err = parse_positive(&c, r, tput_col, &run.tput);
    if (!err && set.unit == PFLEX_TPUT_PER_STEP_TIME) run.tput = 1.0 / run.tput;
    if (!err && col[5] >= 0 && *r->fields[col[5]] && !(err = parse_double(&c, r, col[5], &v))) {
      if (v < 0) err = pflex_diag_set(diag, -PFLEX_E_DATA, path, r->line, "power_sd", "negative");
      run.power_sd = v, run.have |= PFLEX_RUN_POWER_SD;
    }
    if (!err && tput_sd >= 0 && *r->fields[tput_sd] && !(err = parse_double(&c, r, tput_sd, &v))) {
      if (v < 0)
        err = pflex_diag_set(diag, -PFLEX_E_DATA, path, r->line, t.header.fields[tput_sd],
                             "negative");
      /* A time-per-step SD becomes the SD of its inverse to first order. */
      if (set.unit == PFLEX_TPUT_PER_STEP_TIME) v = v * run.tput * run.tput;
      run.tput_sd = v, run.have |= PFLEX_RUN_TPUT_SD;
    }
    if (!err && col[6] >= 0 && *r->fields[col[6]]) run.model = r->fields[col[6]];
    if (!err && col[7] >= 0 && *r->fields[col[7]]) err = parse_arch(&c, r, col[7], &run.arch);
    if (!err && col[8] >= 0 && *r->fields[col[8]]) err = parse_task(&c, r, col[8], &run.task);
    if (!err && col[9] >= 0 && *r->fields[col[9]] &&
        !(err = parse_int(&c, r, col[9], 1, &run.seq_len)))
      run.have |= PFLEX_RUN_SEQ_LEN;
    if (!err && col[10] >= 0 && *r->fields[col[10]] &&
        !(err = parse_int(&c, r, col[10], 1, &run.batch)))
      run.have |= PFLEX_RUN_BATCH;
    if (!err && col[11] >= 0 && *r->fields[col[11]] &&
        !(err = parse_int(&c, r, col[11], 1, &run.ep)))
      run.have |= PFLEX_RUN_EP;
    if (!err && col[12] >= 0 && *r->fields[col[12]] &&
        !(err = parse_bool(&c, r, col[12], &run.compile)))
      run.have |= PFLEX_RUN_COMPILE;
    if (!err && col[13] >= 0 && *r->fields[col[13]] &&
        !(err = parse_bool(&c, r, col[13], &run.grad_ckpt)))
      run.have |= PFLEX_RUN_GRAD_CKPT;
    if (!err && col[14] >= 0 && *r->fields[col[14]]) run.set = r->fields[col[14]];
    for (size_t k = 0; !err && k < set.nextra; k++)
      extra[k] = r->fields[extra_col[k]];
    if (!err && opts && opts->set_filter && !(run.set && strcmp(run.set, opts->set_filter) == 0))
      continue; /* every row is still validated, only matching ones are kept */
    if (!err) err = pflex_runset_append(&set, &run);
    if (err) break;
  }
  free(extra);
  if (!err) {
    set.source = strdup(path);
    if (!set.source) err = -ENOMEM;
  }
  if (!err && set.n == 0)
    err = pflex_diag_set(diag, -PFLEX_E_DATA, path, 0, "set", "no run has set '%s'",
                         opts->set_filter);
  if (!err) err = pflex_runset_check_groups(&set, opts && opts->partial_groups, diag);
out:
  free(extra_col);
  pflex__csv_release(&t);
  if (err) {
    pflex_runset_release(&set);
    return err;
  }
  *ret_set = set;
  return 0;
}

int pflex_runs_write_csv_stream(const struct pflex_runset *set, FILE *f) {
  unsigned have = 0;
  bool any_model = false, any_arch = false, any_task = false, any_set = false;
  for (size_t i = 0; i < set->n; i++) {
    const struct pflex_run *r = &set->runs[i];
    have |= r->have;
    any_model |= r->model != NULL;
    any_arch |= r->arch != PFLEX_ARCH_UNKNOWN;
    any_task |= r->task != PFLEX_TASK_UNKNOWN;
    any_set |= r->set != NULL;
  }
  size_t u = 0;
  while (u + 1 < NTPUT && tput_columns[u].unit != set->unit)
    u++;

  int err = 0;
  fprintf(f, "group,gpu,gpus,cap_w,power_w,%s", tput_columns[u].column);
  if (have & PFLEX_RUN_POWER_SD) fputs(",power_sd", f);
  if (have & PFLEX_RUN_TPUT_SD) fprintf(f, ",%s", tput_columns[u].sd_column);
  if (any_model) fputs(",model", f);
  if (any_arch) fputs(",arch", f);
  if (any_task) fputs(",task", f);
  if (have & PFLEX_RUN_SEQ_LEN) fputs(",seq_len", f);
  if (have & PFLEX_RUN_BATCH) fputs(",batch", f);
  if (have & PFLEX_RUN_EP) fputs(",ep", f);
  if (have & PFLEX_RUN_COMPILE) fputs(",compile", f);
  if (have & PFLEX_RUN_GRAD_CKPT) fputs(",grad_ckpt", f);
  if (any_set) fputs(",set", f);
  for (size_t k = 0; k < set->nextra; k++) {
    fputc(',', f);
    err = err ? err : pflex_csv_write_field(f, set->extra_names[k], 0);
  }
  fputc('\n', f);
  char num[40];
  for (size_t i = 0; i < set->n && !err; i++) {
    const struct pflex_run *r = &set->runs[i];
    double tput = set->unit == PFLEX_TPUT_PER_STEP_TIME ? 1.0 / r->tput : r->tput;
    err = pflex_csv_write_field(f, r->group, ',');
    if (!err) err = pflex_csv_write_field(f, r->gpu, ',');
    fprintf(f, "%d,", r->gpus);
    pflex_format_double(num, sizeof num, r->cap_w);
    fprintf(f, "%s,", num);
    pflex_format_double(num, sizeof num, r->power_w);
    fprintf(f, "%s,", num);
    pflex_format_double(num, sizeof num, tput);
    fputs(num, f);
#define OPT_NUM(bit, value)                                                                        \
  if (have & (bit)) {                                                                              \
    if (r->have & (bit))                                                                           \
      pflex_format_double(num, sizeof num, (value)), fprintf(f, ",%s", num);                   \
    else                                                                                           \
      fputc(',', f);                                                                               \
  }
    OPT_NUM(PFLEX_RUN_POWER_SD, r->power_sd)
    OPT_NUM(PFLEX_RUN_TPUT_SD,
            set->unit == PFLEX_TPUT_PER_STEP_TIME ? r->tput_sd / (r->tput * r->tput) : r->tput_sd)
#undef OPT_NUM
    if (any_model)
      fputc(',', f), err = err ? err : pflex_csv_write_field(f, r->model ? r->model : "", 0);
    if (any_arch) fprintf(f, ",%s", pflex_arch_name(r->arch));
    if (any_task) fprintf(f, ",%s", pflex_task_name(r->task));
#define OPT_INT(bit, value)                                                                        \
  if (have & (bit)) {                                                                              \
    if (r->have & (bit))                                                                           \
      fprintf(f, ",%d", (int)(value));                                                             \
    else                                                                                           \
      fputc(',', f);                                                                               \
  }
    OPT_INT(PFLEX_RUN_SEQ_LEN, r->seq_len)
    OPT_INT(PFLEX_RUN_BATCH, r->batch)
    OPT_INT(PFLEX_RUN_EP, r->ep)
    OPT_INT(PFLEX_RUN_COMPILE, r->compile)
    OPT_INT(PFLEX_RUN_GRAD_CKPT, r->grad_ckpt)
#undef OPT_INT
    if (any_set) fputc(',', f), err = err ? err : pflex_csv_write_field(f, r->set ? r->set : "", 0);
    for (size_t k = 0; k < set->nextra && !err; k++) {
      fputc(',', f);
      err = pflex_csv_write_field(f, r->extra[k], 0);
    }
    fputc('\n', f);
  }
  if (!err && ferror(f)) err = -EIO;
  return err;
}

int pflex_runs_write_csv(const struct pflex_runset *set, const char *path) {
  struct pflex__atomic_file af;
  int err = pflex__atomic_begin(path, &af);
  if (err) return err;
  err = pflex_runs_write_csv_stream(set, af.f);
  if (err) {
    pflex__atomic_abort(&af);
    return err;
  }
  return pflex__atomic_commit(&af);
}
