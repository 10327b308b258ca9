/* The JSON field readers (json_fields.h). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "io/json_fields.h"

static int data_err(const struct json_fields *f) {
  return f->data_err ? f->data_err : -PFLEX_E_DATA;
}

int pflex__json_load(const char *path, size_t flags, json_t **ret, struct pflex_diag *diag) {
  json_error_t je;
  *ret = json_load_file(path, flags, &je);
  if (*ret) return 0;
  return pflex_diag_set(diag, je.line > 0 ? -PFLEX_E_PARSE : -ENOENT, path,
                        je.line > 0 ? (size_t)je.line : 0, NULL, "%s", je.text);
}

int pflex__json_said(struct pflex_diag *diag, int err) {
  if (err && diag && diag->column[0]) diag->is_field = 1;
  return err;
}

int pflex__json_fail(const struct json_fields *f, int err, const char *field, const char *fmt,
                     ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (f->where[0]) return pflex_diag_set(f->diag, err, f->file, 0, field, "%s: %s", f->where, msg);
  return pflex_diag_set(f->diag, err, f->file, 0, field, "%s", msg);
}

int pflex__json_check_keys(const struct json_fields *f, json_t *obj, const char *const *known,
                           const char *hint) {
  const char *key;
  json_t *val;
  json_object_foreach(obj, key, val) {
    bool ok = false;
    for (size_t i = 0; known[i] && !ok; i++)
      ok = strcmp(known[i], key) == 0;
    if (!ok)
      return pflex__json_fail(f, data_err(f), key, "unknown field%s%s", hint ? " " : "",
                              hint ? hint : "");
  }
  return 0;
}

int pflex__json_get_string(const struct json_fields *f, json_t *obj, const char *key, bool required,
                           const char **ret) {
  json_t *v = json_object_get(obj, key);
  if (!v) {
    if (required) return pflex__json_fail(f, data_err(f), key, "missing required field");
    *ret = NULL;
    return 0;
  }
  if (!json_is_string(v)) return pflex__json_fail(f, -PFLEX_E_PARSE, key, "not a string");
  *ret = json_string_value(v);
  if (required && !**ret) return pflex__json_fail(f, data_err(f), key, "empty");
  return 0;
}

/* "not a positive number", "negative", "2 is not a number from 0 to 1". */
static int out_of_range(const struct json_fields *f, const char *key, double x, double min,
                        double max, unsigned flags) {
  bool open = flags & JSON_OPEN_MIN;
  if (min == 0 && isinf(max))
    return pflex__json_fail(f, data_err(f), key, "%s", open ? "not a positive number" : "negative");
  if (isinf(max))
    return pflex__json_fail(f, data_err(f), key, "%g is not a number %s %g", x,
                            open ? ">" : ">=", min);
  return pflex__json_fail(f, data_err(f), key, "%g is not a number from %g to %g", x, min, max);
}

int pflex__json_get_number(const struct json_fields *f, json_t *obj, const char *key, double min,
                           double max, unsigned flags, double *ret, bool *ret_have) {
  json_t *v = json_object_get(obj, key);
  if (v && json_is_null(v) && (flags & JSON_NULL_ABSENT)) v = NULL;
  if (ret_have) *ret_have = v != NULL;
  if (!v)
    return flags & JSON_REQUIRED ? pflex__json_fail(f, data_err(f), key, "missing required field")
                                 : 0;
  if (!json_is_number(v)) return pflex__json_fail(f, -PFLEX_E_PARSE, key, "not a number");
  double x = json_number_value(v);
  bool low = flags & JSON_OPEN_MIN ? !(x > min) : !(x >= min);
  if (!isfinite(x) || low || x > max) return out_of_range(f, key, x, min, max, flags);
  *ret = x;
  return 0;
}

int pflex__json_get_int(const struct json_fields *f, json_t *obj, const char *key, long long min,
                        long long max, bool required, long long *ret, bool *ret_have) {
  json_t *v = json_object_get(obj, key);
  *ret_have = v != NULL;
  if (!v) return required ? pflex__json_fail(f, data_err(f), key, "missing required field") : 0;
  if (!json_is_integer(v)) return pflex__json_fail(f, -PFLEX_E_PARSE, key, "not an integer");
  long long x = json_integer_value(v);
  if (x < min || x > max)
    return pflex__json_fail(f, data_err(f), key, "%lld is not a whole number from %lld to %lld", x,
                            min, max);
  *ret = x;
  return 0;
}

int pflex__json_get_bool(const struct json_fields *f, json_t *obj, const char *key, bool *ret,
                         bool *ret_have) {
  json_t *v = json_object_get(obj, key);
  *ret_have = v != NULL;
  if (!v) return 0;
  if (!json_is_boolean(v)) return pflex__json_fail(f, -PFLEX_E_PARSE, key, "not true or false");
  *ret = json_is_true(v);
  return 0;
}
