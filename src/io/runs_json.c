/* Runsets to and from JSON with jansson (include/pflex/runs_json.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/atomic.h"
#include "io/json_fields.h"
#include "io/runs_internal.h"
#include "pflex/runs_json.h"

#define FORMAT_NAME "pflex-runs"
#define FORMAT_VERSION 1

/* ---- writing ---- */

static int set_new(json_t *obj, const char *key, json_t *value) {
  return value && json_object_set_new(obj, key, value) == 0 ? 0 : -ENOMEM;
}

static json_t *run_to_json(const struct pflex_runset *set, const struct pflex_run *r) {
  json_t *o = json_object();
  if (!o) return NULL;
  int err = set_new(o, "group", json_string(r->group));
  if (!err) err = set_new(o, "gpu", json_string(r->gpu));
  if (!err) err = set_new(o, "gpus", json_integer(r->gpus));
  if (!err) err = set_new(o, "cap_w", json_real(r->cap_w));
  if (!err) err = set_new(o, "power_w", json_real(r->power_w));
  if (!err) err = set_new(o, "tput", json_real(r->tput));
  if (!err && (r->have & PFLEX_RUN_POWER_SD)) err = set_new(o, "power_sd", json_real(r->power_sd));
  if (!err && (r->have & PFLEX_RUN_TPUT_SD)) err = set_new(o, "tput_sd", json_real(r->tput_sd));
  if (!err && r->model) err = set_new(o, "model", json_string(r->model));
  if (!err && r->arch) err = set_new(o, "arch", json_string(pflex_arch_name(r->arch)));
  if (!err && r->task) err = set_new(o, "task", json_string(pflex_task_name(r->task)));
  if (!err && r->set) err = set_new(o, "set", json_string(r->set));
  if (!err && (r->have & PFLEX_RUN_SEQ_LEN)) err = set_new(o, "seq_len", json_integer(r->seq_len));
  if (!err && (r->have & PFLEX_RUN_BATCH)) err = set_new(o, "batch", json_integer(r->batch));
  if (!err && (r->have & PFLEX_RUN_EP)) err = set_new(o, "ep", json_integer(r->ep));
  if (!err && (r->have & PFLEX_RUN_COMPILE)) err = set_new(o, "compile", json_boolean(r->compile));
  if (!err && (r->have & PFLEX_RUN_GRAD_CKPT))
    err = set_new(o, "grad_ckpt", json_boolean(r->grad_ckpt));
  if (!err && set->nextra) {
    json_t *ex = json_object();
    err = set_new(o, "extra", ex);
    for (size_t k = 0; !err && k < set->nextra; k++)
      err =
          set_new(ex, set->extra_names[k], json_string(r->extra && r->extra[k] ? r->extra[k] : ""));
  }
  if (err) {
    json_decref(o);
    return NULL;
  }
  return o;
}

int pflex_runs_to_json(const struct pflex_runset *set, char **ret_json) {
  if (!set || !ret_json) return -EINVAL;
  json_t *root = json_object();
  json_t *cols = json_array();
  json_t *runs = json_array();
  int err = root && cols && runs ? 0 : -ENOMEM;
  if (!err) err = set_new(root, "format", json_string(FORMAT_NAME));
  if (!err) err = set_new(root, "version", json_integer(FORMAT_VERSION));
  if (!err) err = set_new(root, "unit", json_string(pflex_tput_unit_key(set->unit)));
  for (size_t k = 0; !err && k < set->nextra; k++)
    err = json_array_append_new(cols, json_string(set->extra_names[k])) ? -ENOMEM : 0;
  for (size_t i = 0; !err && i < set->n; i++)
    err = json_array_append_new(runs, run_to_json(set, &set->runs[i])) ? -ENOMEM : 0;
  if (!err) {
    err =
        json_object_set(root, "columns", cols) || json_object_set(root, "runs", runs) ? -ENOMEM : 0;
  }
  char *text = NULL;
  if (!err) {
    /* 17 significant digits: every double reads back as itself. */
    text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    if (!text) err = -ENOMEM;
  }
  json_decref(cols);
  json_decref(runs);
  json_decref(root);
  if (err) return err;
  size_t len = strlen(text);
  char *out = malloc(len + 2);
  if (!out) {
    free(text);
    return -ENOMEM;
  }
  memcpy(out, text, len);
  out[len] = '\n';
  out[len + 1] = '\0';
  free(text);
  *ret_json = out;
  return 0;
}

int pflex_runs_write_json(const struct pflex_runset *set, const char *path) {
  if (!set || !path || !*path) return -EINVAL;
  char *text;
  int err = pflex_runs_to_json(set, &text);
  if (err) return err;
  err = pflex__atomic_write_text(path, text);
  free(text);
  return err;
}

/* ---- reading ---- */

struct reader {
  const char *name;
  struct pflex_diag *diag;
};

/* The field reader of run number run (1-based; 0: the top level). */
static struct json_fields fields(const struct reader *rd, size_t run) {
  struct json_fields f = {.file = rd->name, .diag = rd->diag};
  if (run) snprintf(f.where, sizeof f.where, "run %zu", run);
  return f;
}

static int fail(struct reader *rd, int err, size_t run, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int fail(struct reader *rd, int err, size_t run, const char *field, const char *fmt, ...) {
  char msg[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  struct json_fields f = fields(rd, run);
  return pflex__json_fail(&f, err, field, "%s", msg);
}

/* A whole number field in the CSV reader's range, so that every JSON import
 * can be exported as CSV and read back. */
static int get_int(const struct json_fields *f, json_t *o, const char *key, bool required, int *ret,
                   bool *ret_have) {
  long long v;
  int err = pflex__json_get_int(f, o, key, 1, PFLEX_RUN_INT_MAX, required, &v, ret_have);
  if (!err && *ret_have) *ret = (int)v;
  return err;
}

static const char *const run_keys[] = {"group",   "gpu",       "gpus",    "cap_w", "power_w",
                                       "tput",    "power_sd",  "tput_sd", "model", "arch",
                                       "task",    "set",       "seq_len", "batch", "ep",
                                       "compile", "grad_ckpt", "extra",   NULL};
static const char *const root_keys[] = {"format", "version", "unit", "columns", "runs", NULL};

/* Where and what was measured: group, GPU, GPU count, cap, power and
 * throughput (each > 0), and the optional SDs. */
static int read_measurement(const struct json_fields *f, json_t *o, struct pflex_run *r) {
  const char *group = NULL, *gpu = NULL;
  bool have = false;
  int err = pflex__json_get_string(f, o, "group", true, &group);
  if (!err) err = pflex__json_get_string(f, o, "gpu", true, &gpu);
  if (!err) err = get_int(f, o, "gpus", true, &r->gpus, &have);
  if (!err)
    err = pflex__json_get_number(f, o, "cap_w", 0, INFINITY, JSON_REQUIRED | JSON_OPEN_MIN,
                                 &r->cap_w, &have);
  if (!err)
    err = pflex__json_get_number(f, o, "power_w", 0, INFINITY, JSON_REQUIRED | JSON_OPEN_MIN,
                                 &r->power_w, &have);
  if (!err)
    err = pflex__json_get_number(f, o, "tput", 0, INFINITY, JSON_REQUIRED | JSON_OPEN_MIN,
                                 &r->tput, &have);
  if (!err) err = pflex__json_get_number(f, o, "power_sd", 0, INFINITY, 0, &r->power_sd, &have);
  if (!err && have) r->have |= PFLEX_RUN_POWER_SD;
  if (!err) err = pflex__json_get_number(f, o, "tput_sd", 0, INFINITY, 0, &r->tput_sd, &have);
  if (!err && have) r->have |= PFLEX_RUN_TPUT_SD;
  r->group = (char *)group;
  r->gpu = (char *)gpu;
  return err;
}

/* The workload, all optional: model, set, architecture and task. */
static int read_workload(struct reader *rd, const struct json_fields *f, json_t *o, size_t run,
                         struct pflex_run *r) {
  const char *model = NULL, *sname = NULL, *arch = NULL, *task = NULL;
  int err = pflex__json_get_string(f, o, "model", false, &model);
  if (!err) err = pflex__json_get_string(f, o, "set", false, &sname);
  if (!err) err = pflex__json_get_string(f, o, "arch", false, &arch);
  if (!err && arch && pflex_arch_parse(arch, &r->arch))
    err = fail(rd, -PFLEX_E_DATA, run, "arch", "'%s' is not dense or moe", arch);
  if (!err) err = pflex__json_get_string(f, o, "task", false, &task);
  if (!err && task && pflex_task_parse(task, &r->task))
    err = fail(rd, -PFLEX_E_DATA, run, "task", "'%s' is not pt or ft", task);
  r->model = (char *)model;
  r->set = (char *)sname;
  return err;
}

/* The training configuration, all optional, each with its have flag. */
static int read_config(const struct json_fields *f, json_t *o, struct pflex_run *r) {
  const struct {
    const char *key;
    int *dst;
    unsigned flag;
  } ints[] = {{"seq_len", &r->seq_len, PFLEX_RUN_SEQ_LEN},
              {"batch", &r->batch, PFLEX_RUN_BATCH},
              {"ep", &r->ep, PFLEX_RUN_EP}};
  const struct {
    const char *key;
    bool *dst;
    unsigned flag;
  } bools[] = {{"compile", &r->compile, PFLEX_RUN_COMPILE},
               {"grad_ckpt", &r->grad_ckpt, PFLEX_RUN_GRAD_CKPT}};
  bool have;
  for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
    int err = get_int(f, o, ints[k].key, false, ints[k].dst, &have);
    if (err) return err;
    if (have) r->have |= ints[k].flag;
  }
  for (size_t k = 0; k < sizeof bools / sizeof bools[0]; k++) {
    int err = pflex__json_get_bool(f, o, bools[k].key, bools[k].dst, &have);
    if (err) return err;
    if (have) r->have |= bools[k].flag;
  }
  return 0;
}

/* A time-per-step runset is exported as s_per_step = 1 / tput
 * (pflex_runs_write_csv): that and its SD must be finite. */
static int check_per_step(struct reader *rd, const struct pflex_runset *set, size_t run,
                          const struct pflex_run *r) {
  if (set->unit != PFLEX_TPUT_PER_STEP_TIME) return 0;
  if (isfinite(1.0 / r->tput) &&
      !((r->have & PFLEX_RUN_TPUT_SD) && !isfinite(r->tput_sd / r->tput / r->tput)))
    return 0;
  return fail(rd, -PFLEX_E_DATA, run, "tput",
              "too small for a time per step (1 / tput, or the SD of the time, is infinite)");
}

/* The extra columns of the run just appended (last in set): strings, or
 * numbers kept as their JSON text. */
static int read_extra(struct reader *rd, struct pflex_runset *set, json_t *extra, size_t run) {
  const char *key;
  json_t *val;
  json_object_foreach(extra, key, val) {
    char num[40];
    const char *s;
    /* The CSV export must be able to name every extra column once. */
    if (!*key) return fail(rd, -PFLEX_E_DATA, run, "extra", "a column with an empty name");
    if (pflex__runs_column_reserved(key, set->unit))
      return fail(rd, -PFLEX_E_DATA, run, key, "a runs column, not an extra one");
    if (json_is_string(val)) {
      s = json_string_value(val);
    } else if (json_is_integer(val)) {
      snprintf(num, sizeof num, "%lld", (long long)json_integer_value(val));
      s = num;
    } else if (json_is_real(val)) {
      snprintf(num, sizeof num, "%.17g", json_real_value(val));
      s = num;
    } else {
      return fail(rd, -PFLEX_E_PARSE, run, key, "extra column value is not a string or number");
    }
    int err = pflex_runset_set_extra(set, set->n - 1, key, s);
    if (err) return err;
  }
  return 0;
}

static int read_run(struct reader *rd, struct pflex_runset *set, json_t *o, size_t run) {
  if (!json_is_object(o)) return fail(rd, -PFLEX_E_PARSE, run, NULL, "not an object");
  struct json_fields f = fields(rd, run);
  int err = pflex__json_check_keys(&f, o, run_keys, "(other columns belong under \"extra\")");
  if (err) return err;
  struct pflex_run r = {0};
  err = read_measurement(&f, o, &r);
  if (!err) err = read_workload(rd, &f, o, run, &r);
  if (!err) err = read_config(&f, o, &r);
  if (!err) err = check_per_step(rd, set, run, &r);
  json_t *extra = json_object_get(o, "extra");
  if (!err && extra && !json_is_object(extra))
    err = fail(rd, -PFLEX_E_PARSE, run, "extra", "not an object");
  if (err) return err;
  err = pflex_runset_append(set, &r);
  if (err || !extra) return err;
  return read_extra(rd, set, extra, run);
}

int pflex_runs_from_json(const char *text, const char *name, struct pflex_runset *ret_set,
                         struct pflex_diag *diag) {
  pflex_diag_clear(diag);
  if (!text || !ret_set) return -EINVAL;
  struct reader rd = {.name = name, .diag = diag};
  json_error_t jerr;
  json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
  if (!root)
    return pflex_diag_set(diag, -PFLEX_E_PARSE, name, jerr.line > 0 ? (size_t)jerr.line : 0, NULL,
                          "%s", jerr.text);
  struct pflex_runset set;
  pflex_runset_init(&set);
  const char *format = NULL, *unit = NULL;
  json_t *version = json_object_get(root, "version");
  json_t *cols = json_object_get(root, "columns");
  json_t *runs = json_object_get(root, "runs");
  int err = 0;
  struct json_fields top = fields(&rd, 0);
  if (!json_is_object(root)) err = fail(&rd, -PFLEX_E_PARSE, 0, NULL, "not a JSON object");
  if (!err) err = pflex__json_check_keys(&top, root, root_keys, NULL);
  if (!err) err = pflex__json_get_string(&top, root, "format", true, &format);
  if (!err && strcmp(format, FORMAT_NAME) != 0)
    err = fail(&rd, -PFLEX_E_DATA, 0, "format", "'%s' is not " FORMAT_NAME, format);
  if (!err && (!json_is_integer(version) || json_integer_value(version) != FORMAT_VERSION))
    err = fail(&rd, -PFLEX_E_DATA, 0, "version", "unsupported version (this pflex reads 1)");
  if (!err) err = pflex__json_get_string(&top, root, "unit", true, &unit);
  if (!err && pflex_tput_unit_from_key(unit, &set.unit))
    err = fail(&rd, -PFLEX_E_DATA, 0, "unit", "unknown unit '%s'", unit);
  if (!err && cols && !json_is_array(cols))
    err = fail(&rd, -PFLEX_E_PARSE, 0, "columns", "not an array");
  if (!err && !json_is_array(runs))
    err = fail(&rd, -PFLEX_E_PARSE, 0, "runs", "missing or not an array");
  /* Columns first, so that their order survives even when some are empty everywhere. */
  for (size_t k = 0; !err && k < json_array_size(cols); k++) {
    json_t *c = json_array_get(cols, k);
    if (!json_is_string(c) || !*json_string_value(c))
      err = fail(&rd, -PFLEX_E_PARSE, 0, "columns", "a column name is not a non-empty string");
    else if (pflex__runs_column_reserved(json_string_value(c), set.unit))
      err = fail(&rd, -PFLEX_E_DATA, 0, "columns", "'%s' is a runs column, not an extra one",
                 json_string_value(c));
    else
      err = pflex_runset_add_column(&set, json_string_value(c), NULL);
  }
  for (size_t i = 0; !err && i < json_array_size(runs); i++)
    err = read_run(&rd, &set, json_array_get(runs, i), i + 1);
  if (!err && name) {
    set.source = strdup(name);
    if (!set.source) err = -ENOMEM;
  }
  json_decref(root);
  if (err) {
    pflex_runset_release(&set);
    return pflex__json_said(diag, err);
  }
  *ret_set = set;
  return 0;
}

int pflex_runs_read_json(const char *path, struct pflex_runset *ret_set, struct pflex_diag *diag) {
  pflex_diag_clear(diag);
  if (!path || !ret_set) return -EINVAL;
  FILE *f = fopen(path, "rb");
  if (!f) {
    int e = errno;
    return pflex_diag_set(diag, -e, path, 0, NULL, "%s", strerror(e));
  }
  char *buf = NULL;
  size_t len = 0, cap = 0;
  int err = 0;
  for (;;) {
    if (cap - len < 65536) {
      cap = cap ? 2 * cap : 65536;
      char *nb = realloc(buf, cap + 1);
      if (!nb) {
        err = -ENOMEM;
        break;
      }
      buf = nb;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) {
      if (ferror(f)) err = -EIO;
      break;
    }
  }
  fclose(f);
  if (!err && len == 0) err = pflex_diag_set(diag, -PFLEX_E_PARSE, path, 0, NULL, "empty file");
  if (err) {
    free(buf);
    if (diag && !diag->message[0])
      pflex_diag_set(diag, err, path, 0, NULL, "%s", pflex_strerror(err));
    return err;
  }
  buf[len] = '\0';
  if (memchr(buf, '\0', len)) {
    free(buf);
    return pflex_diag_set(diag, -PFLEX_E_PARSE, path, 0, NULL, "not a text file (NUL byte)");
  }
  err = pflex_runs_from_json(buf, path, ret_set, diag);
  free(buf);
  return err;
}
