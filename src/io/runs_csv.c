/* The runs CSV (docs/formats.md): reading with validation, and atomic writing.
 *
 * Reading is all or nothing: the file is read as a stream of records, each
 * checked as it comes, into a local runset, which replaces *ret_set only
 * when every rule holds. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/atomic.h"
#include "base/utf8.h"
#include "io/csv_table.h"
#include "io/runs_internal.h"
#include "pflex/csv.h"
#include "pflex/format.h"
#include "pflex/runs.h"
#include "pflex/reference.h"
#include "pflex/runs_csv.h"

/* Columns pflex interprets; every other column is kept verbatim in extra. */
static const char *const known_columns[] = {"group",    "gpu",   "gpus",    "cap_w",     "power_w",
                                            "power_sd", "model", "arch",    "task",      "seq_len",
                                            "batch",    "ep",    "compile", "grad_ckpt", "set"};

/* Their indexes in known_columns; the first five are required. */
enum {
  COL_GROUP,
  COL_GPU,
  COL_GPUS,
  COL_CAP,
  COL_POWER,
  COL_POWER_SD,
  COL_MODEL,
  COL_ARCH,
  COL_TASK,
  COL_SEQ_LEN,
  COL_BATCH,
  COL_EP,
  COL_COMPILE,
  COL_GRAD_CKPT,
  COL_SET,
  NCOLS,
  NREQUIRED = COL_POWER + 1
};

/* The optional whole-number and yes/no columns: where the value goes, its bit in have. */
static const struct {
  int col;
  bool is_bool;
  size_t offset;
  unsigned bit;
} optional_fields[] = {
    {COL_SEQ_LEN, false, offsetof(struct pflex_run, seq_len), PFLEX_RUN_SEQ_LEN},
    {COL_BATCH, false, offsetof(struct pflex_run, batch), PFLEX_RUN_BATCH},
    {COL_EP, false, offsetof(struct pflex_run, ep), PFLEX_RUN_EP},
    {COL_COMPILE, true, offsetof(struct pflex_run, compile), PFLEX_RUN_COMPILE},
    {COL_GRAD_CKPT, true, offsetof(struct pflex_run, grad_ckpt), PFLEX_RUN_GRAD_CKPT},
};

struct ctx {
  const char *path;
  const struct pflex__csv_record *h; /* the header */
  struct pflex_diag *diag;
};

static int parse_double(const struct ctx *c, const struct pflex__csv_record *r, long col,
                        double *ret) {
  const char *s = r->fields[col];
  const char *name = c->h->fields[col];
  if (!*s) return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, r->line, name, "empty");
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end)
    return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, r->line, name, "'%s' is not a number",
                          s);
  /* strtod's ERANGE also flags an underflow to a subnormal or zero value: that
   * is a number (the JSON reader takes it too; range checks follow); only an
   * overflow, which gives HUGE_VAL, is not finite. */
  if (!isfinite(v))
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
    return pflex_diag_set(c->diag, -PFLEX_E_DATA, c->path, r->line, c->h->fields[col],
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
    return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, r->line, c->h->fields[col],
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
  return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, r->line, c->h->fields[col],
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
  const struct pflex__csv_record *h = c->h;
  enum pflex_tput_unit want = opts ? opts->unit : PFLEX_TPUT_TOKENS_PER_S;
  if (opts && opts->tput_column) {
    long col = pflex__csv_column(h, opts->tput_column);
    if (col < 0)
      return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, h->line, opts->tput_column,
                            "throughput column missing from the header");
    *ret_col = col;
    *ret_unit = want;
    char sd[80];
    snprintf(sd, sizeof sd, "%s_sd", opts->tput_column);
    *ret_sd = pflex__csv_column(h, sd);
    return 0;
  }
  /* The throughput columns are those of the unit table. */
  const struct pflex_tput_unit_info *which = pflex_tput_unit_at(0), *u;
  size_t nfound = 0;
  long found = -1;
  for (size_t i = 0; (u = pflex_tput_unit_at(i)); i++) {
    long col = pflex__csv_column(h, u->column);
    if (want != PFLEX_TPUT_TOKENS_PER_S && u->unit == want) {
      if (col < 0)
        return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, h->line, u->column,
                              "required column missing from the header (the unit asked for)");
      found = col, which = u, nfound = 1;
      break;
    }
    if (col < 0) continue;
    if (nfound++ == 0 || u->unit == PFLEX_TPUT_TOKENS_PER_S) found = col, which = u;
  }
  if (nfound == 0)
    return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, h->line, "tokens_per_s",
                          "required column missing from the header (or samples_per_s, "
                          "steps_per_s, s_per_step)");
  if (nfound > 1 && which->unit != PFLEX_TPUT_TOKENS_PER_S)
    return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, h->line, NULL,
                          "several throughput columns and none chosen (--unit)");
  *ret_col = found;
  *ret_unit = which->unit;
  *ret_sd = pflex__csv_column(h, which->sd_column);
  return 0;
}

bool pflex__runs_column_reserved(const char *name, enum pflex_tput_unit unit) {
  const struct pflex_tput_unit_info *u = pflex_tput_unit_info(unit);
  if (u && (strcmp(name, u->column) == 0 || strcmp(name, u->sd_column) == 0)) return true;
  return is_known(name);
}

static bool tput_column_name(size_t col, long tput_col, long tput_sd) {
  return (long)col == tput_col || (long)col == tput_sd;
}

/* Where each column is: the known ones (-1 when absent), the throughput and
 * its SD, and the extra columns kept verbatim (in the runset's order). */
struct layout {
  long col[NCOLS];
  long tput, tput_sd;
  size_t *extra_col;
};

/* Finds the columns, refusing a file without the required ones, and adds
 * the extra columns to set. */
static int find_columns(const struct ctx *c, const struct pflex_runs_read_opts *opts,
                        struct pflex_runset *set, struct layout *L) {
  const struct pflex__csv_record *h = c->h;
  for (size_t i = 0; i < NCOLS; i++) {
    L->col[i] = pflex__csv_column(h, known_columns[i]);
    if (i < NREQUIRED && L->col[i] < 0)
      return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, h->line, known_columns[i],
                            "required column missing from the header");
  }
  int err = pick_tput(c, opts, &L->tput, &L->tput_sd, &set->unit);
  if (err) return err;
  L->extra_col = calloc(h->n ? h->n : 1, sizeof *L->extra_col);
  if (!L->extra_col) return -ENOMEM;
  size_t nextra = 0;
  for (size_t k = 0; k < h->n; k++) {
    const char *name = h->fields[k];
    if (is_known(name) || tput_column_name(k, L->tput, L->tput_sd)) continue;
    if ((err = pflex_runset_add_column(set, name, NULL))) return err;
    L->extra_col[nextra++] = k;
  }
  return 0;
}

/* The noise columns: power_sd, and the throughput's SD (a time-per-step SD
 * becomes the SD of its inverse to first order). */
static int read_sds(const struct ctx *c, const struct layout *L, enum pflex_tput_unit unit,
                    const struct pflex__csv_record *r, struct pflex_run *run) {
  double v;
  int err;
  long pc = L->col[COL_POWER_SD];
  if (pc >= 0 && *r->fields[pc]) {
    if ((err = parse_double(c, r, pc, &v))) return err;
    if (v < 0)
      return pflex_diag_set(c->diag, -PFLEX_E_DATA, c->path, r->line, "power_sd", "negative");
    run->power_sd = v, run->have |= PFLEX_RUN_POWER_SD;
  }
  if (L->tput_sd >= 0 && *r->fields[L->tput_sd]) {
    if ((err = parse_double(c, r, L->tput_sd, &v))) return err;
    if (v < 0)
      return pflex_diag_set(c->diag, -PFLEX_E_DATA, c->path, r->line,
                            c->h->fields[L->tput_sd], "negative");
    if (unit == PFLEX_TPUT_PER_STEP_TIME) v = v * run->tput * run->tput;
    if (!isfinite(v))
      return pflex_diag_set(c->diag, -PFLEX_E_DATA, c->path, r->line,
                            c->h->fields[L->tput_sd],
                            "too large for the time per step (the throughput SD is infinite)");
    run->tput_sd = v, run->have |= PFLEX_RUN_TPUT_SD;
  }
  return 0;
}

/* Whether known column i is in the file and not empty in row r. */
static bool given(const struct layout *L, const struct pflex__csv_record *r, int i) {
  return L->col[i] >= 0 && *r->fields[L->col[i]];
}

/* The optional descriptive columns: model, arch, task, the table's numbers and flags, set. */
static int read_optional(const struct ctx *c, const struct layout *L,
                         const struct pflex__csv_record *r, struct pflex_run *run) {
  int err;
  if (given(L, r, COL_MODEL)) run->model = r->fields[L->col[COL_MODEL]];
  if (given(L, r, COL_ARCH) && (err = parse_arch(c, r, L->col[COL_ARCH], &run->arch))) return err;
  if (given(L, r, COL_TASK) && (err = parse_task(c, r, L->col[COL_TASK], &run->task))) return err;
  for (size_t k = 0; k < sizeof optional_fields / sizeof *optional_fields; k++) {
    int i = optional_fields[k].col;
    if (!given(L, r, i)) continue;
    void *field = (char *)run + optional_fields[k].offset;
    err = optional_fields[k].is_bool ? parse_bool(c, r, L->col[i], field)
                                     : parse_int(c, r, L->col[i], 1, field);
    if (err) return err;
    run->have |= optional_fields[k].bit;
  }
  if (given(L, r, COL_SET)) run->set = r->fields[L->col[COL_SET]];
  return 0;
}

#define UTF8_HINT "convert the file to UTF-8, e.g. with iconv"

/* Every field of record r (the header too) is UTF-8: names and kept columns
 * are written back as JSON, which cannot carry anything else. */
static int check_utf8(const struct ctx *c, const struct pflex__csv_record *r) {
  size_t at;
  for (size_t k = 0; k < r->n; k++)
    if (!pflex__utf8_valid(r->fields[k], &at)) {
      if (r == c->h)
        return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, r->line, NULL,
                              "column name %zu is not UTF-8 text (byte %zu); " UTF8_HINT, k + 1,
                              at + 1);
      return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, r->line, c->h->fields[k],
                            "not UTF-8 text (byte %zu of the field); " UTF8_HINT, at + 1);
    }
  return 0;
}

/* One row into run (its strings point into the table). */
static int read_row(const struct ctx *c, const struct layout *L, enum pflex_tput_unit unit,
                    const struct pflex__csv_record *r, struct pflex_run *run) {
  int err = check_utf8(c, r);
  if (err) return err;
  run->group = r->fields[L->col[COL_GROUP]];
  run->gpu = r->fields[L->col[COL_GPU]];
  if (!*run->group)
    return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, r->line, "group", "empty");
  if (!*run->gpu) return pflex_diag_set(c->diag, -PFLEX_E_PARSE, c->path, r->line, "gpu", "empty");
  if ((err = parse_int(c, r, L->col[COL_GPUS], 1, &run->gpus)) ||
      (err = parse_positive(c, r, L->col[COL_CAP], &run->cap_w)) ||
      (err = parse_positive(c, r, L->col[COL_POWER], &run->power_w)) ||
      (err = parse_positive(c, r, L->tput, &run->tput)))
    return err;
  if (unit == PFLEX_TPUT_PER_STEP_TIME) {
    run->tput = 1.0 / run->tput;
    /* A subnormal time per step (e.g. 1e-320) has no finite throughput. */
    if (!isfinite(run->tput))
      return pflex_diag_set(c->diag, -PFLEX_E_DATA, c->path, r->line, c->h->fields[L->tput],
                            "'%s' is too small a time per step (its throughput is infinite)",
                            r->fields[L->tput]);
  }
  if ((err = read_sds(c, L, unit, r, run))) return err;
  return read_optional(c, L, r, run);
}

/* The file read as a stream: every row is validated as it comes; only those
 * of the set asked for (if any) are kept, their strings copied. */
struct stream {
  struct ctx c;
  const struct pflex_runs_read_opts *opts;
  struct pflex_runset set;
  struct layout L;
  char **extra; /* one row's extra cells */
  size_t nrows, header_line;
  bool columns_found;
};

static int on_header(void *ctx, const struct pflex__csv_record *h) {
  struct stream *st = ctx;
  st->c.h = h;
  st->header_line = h->line;
  return check_utf8(&st->c, h);
}

/* The columns are found at the first row, so that a file of only a header
 * is refused as such whatever its columns. */
static int on_row(void *ctx, const struct pflex__csv_record *r) {
  struct stream *st = ctx;
  struct pflex_runset *set = &st->set;
  int err = 0;
  if (!st->columns_found) {
    st->columns_found = true;
    if ((err = find_columns(&st->c, st->opts, set, &st->L))) return err;
    if (set->nextra && !(st->extra = calloc(set->nextra, sizeof *st->extra))) return -ENOMEM;
  }
  st->nrows++;
  struct pflex_run run = {.line = r->line, .extra = st->extra};
  if ((err = read_row(&st->c, &st->L, set->unit, r, &run))) return err;
  for (size_t k = 0; k < set->nextra; k++)
    st->extra[k] = r->fields[st->L.extra_col[k]];
  const char *filter = st->opts ? st->opts->set_filter : NULL;
  if (filter && !(run.set && strcmp(run.set, filter) == 0)) return 0;
  double ref = st->opts ? st->opts->reference_cap_w : 0;
  if (ref > 0 && run.cap_w > ref + PFLEX_REFERENCE_TOL_W) return 0;
  return pflex_runset_append(set, &run);
}

int pflex_runs_read_csv(const char *path, const struct pflex_runs_read_opts *opts,
                        struct pflex_runset *ret_set, struct pflex_diag *diag) {
  struct stream st = {.c = {.path = path, .diag = diag},
                      .opts = opts,
                      .L = {.tput = -1, .tput_sd = -1}};
  pflex_runset_init(&st.set);
  struct pflex__csv_sink sink = {on_header, on_row, &st};
  int err = pflex__csv_stream(path, &sink, diag);
  if (!err && st.nrows == 0)
    err = pflex_diag_set(diag, -PFLEX_E_PARSE, path, st.header_line, NULL,
                         "header only: the file has no runs");
  struct pflex_runset *set = &st.set;
  if (!err && !(set->source = strdup(path))) err = -ENOMEM;
  if (!err && set->n == 0)
    err = pflex_diag_set(diag, -PFLEX_E_DATA, path, 0, "set", "no run has set '%s'",
                         opts->set_filter);
  bool partial = !(opts && opts->require_uncapped) || opts->partial_groups;
  if (!err) err = pflex_runset_check_groups(set, partial, diag);
  if (!err && opts && opts->reference_cap_w > 0)
    err = pflex_runset_check_reference(set, opts->reference_cap_w, diag);
  free(st.L.extra_col);
  free(st.extra);
  if (err) {
    pflex_runset_release(set);
    return err;
  }
  *ret_set = *set;
  return 0;
}

/* The optional columns that some run of the set fills (written for every run). */
struct present {
  unsigned have; /* enum pflex_run_field bits */
  bool model, arch, task, set;
  const struct pflex_tput_unit_info *unit;
};

static struct present present_columns(const struct pflex_runset *set) {
  struct present p = {.unit = pflex_tput_unit_info(set->unit)};
  if (!p.unit) p.unit = pflex_tput_unit_at(0);
  for (size_t i = 0; i < set->n; i++) {
    const struct pflex_run *r = &set->runs[i];
    p.have |= r->have;
    p.model |= r->model != NULL;
    p.arch |= r->arch != PFLEX_ARCH_UNKNOWN;
    p.task |= r->task != PFLEX_TASK_UNKNOWN;
    p.set |= r->set != NULL;
  }
  return p;
}

static int write_header(FILE *f, const struct pflex_runset *set, const struct present *p) {
  fprintf(f, "group,gpu,gpus,cap_w,power_w,%s", p->unit->column);
  if (p->have & PFLEX_RUN_POWER_SD) fputs(",power_sd", f);
  if (p->have & PFLEX_RUN_TPUT_SD) fprintf(f, ",%s", p->unit->sd_column);
  if (p->model) fputs(",model", f);
  if (p->arch) fputs(",arch", f);
  if (p->task) fputs(",task", f);
  for (size_t k = 0; k < sizeof optional_fields / sizeof *optional_fields; k++)
    if (p->have & optional_fields[k].bit) fprintf(f, ",%s", known_columns[optional_fields[k].col]);
  if (p->set) fputs(",set", f);
  int err = 0;
  for (size_t k = 0; k < set->nextra; k++) {
    fputc(',', f);
    err = err ? err : pflex_csv_write_field(f, set->extra_names[k], 0);
  }
  fputc('\n', f);
  return err;
}

/* ",value" when the run has the optional number (bit), "," when only others do. */
static void write_opt_number(FILE *f, const struct present *p, const struct pflex_run *r,
                             unsigned bit, double value) {
  if (!(p->have & bit)) return;
  char num[40];
  if (r->have & bit) {
    pflex_format_double(num, sizeof num, value);
    fputc(',', f);
    fputs(num, f);
  } else {
    fputc(',', f);
  }
}

/* v in decimal, then sep unless it is 0: printf's "%d" without its parsing. */
static void write_int(FILE *f, int v, char sep) {
  char buf[16], *p = buf + sizeof buf;
  unsigned u = v < 0 ? 0u - (unsigned)v : (unsigned)v;
  *--p = '\0';
  do
    *--p = (char)('0' + u % 10);
  while (u /= 10);
  if (v < 0) *--p = '-';
  fputs(p, f);
  if (sep) fputc(sep, f);
}

static int write_row(FILE *f, const struct pflex_runset *set, const struct present *p,
                     const struct pflex_run *r) {
  bool inv = set->unit == PFLEX_TPUT_PER_STEP_TIME;
  char num[40];
  int err = pflex_csv_write_field(f, r->group, ',');
  if (!err) err = pflex_csv_write_field(f, r->gpu, ',');
  /* fputs, not fprintf: a large export writes millions of these fields. */
  write_int(f, r->gpus, ',');
  pflex_format_double(num, sizeof num, r->cap_w);
  fputs(num, f);
  fputc(',', f);
  pflex_format_double(num, sizeof num, r->power_w);
  fputs(num, f);
  fputc(',', f);
  pflex_format_double(num, sizeof num, inv ? 1.0 / r->tput : r->tput);
  fputs(num, f);
  write_opt_number(f, p, r, PFLEX_RUN_POWER_SD, r->power_sd);
  write_opt_number(f, p, r, PFLEX_RUN_TPUT_SD, inv ? r->tput_sd / r->tput / r->tput : r->tput_sd);
  if (p->model)
    fputc(',', f), err = err ? err : pflex_csv_write_field(f, r->model ? r->model : "", 0);
  if (p->arch) fputc(',', f), fputs(pflex_arch_name(r->arch), f);
  if (p->task) fputc(',', f), fputs(pflex_task_name(r->task), f);
  for (size_t k = 0; k < sizeof optional_fields / sizeof *optional_fields; k++) {
    if (!(p->have & optional_fields[k].bit)) continue;
    if (!(r->have & optional_fields[k].bit)) {
      fputc(',', f);
      continue;
    }
    const void *field = (const char *)r + optional_fields[k].offset;
    fputc(',', f);
    write_int(f, optional_fields[k].is_bool ? (int)*(const bool *)field : *(const int *)field, 0);
  }
  if (p->set) fputc(',', f), err = err ? err : pflex_csv_write_field(f, r->set ? r->set : "", 0);
  for (size_t k = 0; k < set->nextra && !err; k++) {
    fputc(',', f);
    err = pflex_csv_write_field(f, r->extra[k], 0);
  }
  fputc('\n', f);
  return err;
}

int pflex_runs_write_csv_stream(const struct pflex_runset *set, FILE *f) {
  struct present p = present_columns(set);
  int err = write_header(f, set, &p);
  for (size_t i = 0; i < set->n && !err; i++)
    err = write_row(f, set, &p, &set->runs[i]);
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
