/* The lease state file (state.h). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "agent/state.h"
#include "base/atomic.h" /* pflex__atomic_write_text */

static json_t *entry_json(const struct agent_state_entry *e, double mono_now, double real_now) {
  const struct agent_lease *l = &e->lease;
  json_t *o = json_pack("{s:s, s:I, s:s}", "uuid", e->uuid, "index", (json_int_t)e->index,
                        "state", agent_lease_state_name(l->state));
  if (!o) return NULL;
  if (l->state == AGENT_LEASE_HELD) {
    json_object_set_new(o, "cap_mw", json_integer(l->cap_mw));
    json_object_set_new(o, "expires", json_real(real_now + (l->expires_s - mono_now)));
    json_object_set_new(o, "lease_s", json_real(l->lease_s));
  }
  if (l->state == AGENT_LEASE_HELD || l->state == AGENT_LEASE_FALLBACK) {
    if (l->fallback_default)
      json_object_set_new(o, "fallback", json_string("default"));
    else
      json_object_set_new(o, "fallback_mw", json_integer(l->fallback_mw));
  }
  return o;
}

int agent_state_save(const char *path, const char *backend, const struct agent_state_entry *v,
                     size_t n, double mono_now, double real_now) {
  json_t *gpus = json_array();
  json_t *root = json_pack("{s:s, s:i, s:s, s:o}", "format", "pflexd-leases", "version", 1,
                           "backend", backend, "gpus", gpus);
  if (!root) return -ENOMEM;
  for (size_t i = 0; i < n; i++) {
    if (v[i].lease.state == AGENT_LEASE_NONE) continue;
    json_t *o = entry_json(&v[i], mono_now, real_now);
    if (!o || json_array_append_new(gpus, o)) {
      json_decref(root);
      return -ENOMEM;
    }
  }
  char *text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
  json_decref(root);
  if (!text) return -ENOMEM;
  int err = pflex__atomic_write_text(path, text);
  free(text);
  return err;
}

static int bad(char *errbuf, size_t errlen, const char *path, size_t k, const char *what) {
  snprintf(errbuf, errlen, "'%s': gpus[%zu]: %s", path, k, what);
  return -EINVAL;
}

static int get_mw(json_t *o, const char *key, unsigned *ret) {
  json_t *v = json_object_get(o, key);
  if (!json_is_integer(v) || json_integer_value(v) <= 0 || json_integer_value(v) > 10000000)
    return -EINVAL;
  *ret = (unsigned)json_integer_value(v);
  return 0;
}

static int parse_entry(json_t *o, struct agent_state_entry *e) {
  json_t *uuid = json_object_get(o, "uuid"), *idx = json_object_get(o, "index");
  json_t *st = json_object_get(o, "state");
  memset(e, 0, sizeof *e);
  if (!json_is_string(uuid) || strlen(json_string_value(uuid)) >= sizeof e->uuid) return -EINVAL;
  if (!json_is_integer(idx) || json_integer_value(idx) < 0 || json_integer_value(idx) >= 64)
    return -EINVAL;
  if (!json_is_string(st) || agent_lease_state_parse(json_string_value(st), &e->lease.state))
    return -EINVAL;
  snprintf(e->uuid, sizeof e->uuid, "%s", json_string_value(uuid));
  e->index = (unsigned)json_integer_value(idx);
  struct agent_lease *l = &e->lease;
  if (l->state == AGENT_LEASE_HELD) {
    json_t *exp = json_object_get(o, "expires"), *ls = json_object_get(o, "lease_s");
    if (get_mw(o, "cap_mw", &l->cap_mw) || !json_is_number(exp) || !json_is_number(ls) ||
        !isfinite(json_number_value(exp)) || !(json_number_value(ls) > 0))
      return -EINVAL;
    l->expires_s = json_number_value(exp);
    l->lease_s = json_number_value(ls);
  }
  if (l->state == AGENT_LEASE_HELD || l->state == AGENT_LEASE_FALLBACK) {
    json_t *fb = json_object_get(o, "fallback");
    l->fallback_default = json_is_string(fb) && strcmp(json_string_value(fb), "default") == 0;
    if (!l->fallback_default && get_mw(o, "fallback_mw", &l->fallback_mw)) return -EINVAL;
  }
  return 0;
}

int agent_state_load(const char *path, const char *backend, struct agent_state_entry **ret,
                     size_t *ret_n, char *errbuf, size_t errlen) {
  json_error_t je;
  if (access(path, F_OK) != 0 && errno == ENOENT) return -ENOENT;
  json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
  if (!root) {
    snprintf(errbuf, errlen, "'%s': line %d: %s", path, je.line, je.text);
    return -EINVAL;
  }
  json_t *fmt = json_object_get(root, "format"), *be = json_object_get(root, "backend");
  json_t *gpus = json_object_get(root, "gpus");
  int err = 0;
  if (!json_is_string(fmt) || strcmp(json_string_value(fmt), "pflexd-leases") != 0 ||
      !json_is_string(be) || !json_is_array(gpus)) {
    snprintf(errbuf, errlen, "'%s': not a pflexd lease file (format, backend, gpus)", path);
    err = -EINVAL;
  } else if (json_array_size(gpus) && strcmp(json_string_value(be), backend) != 0) {
    snprintf(errbuf, errlen, "'%s': written for backend '%s', not '%s'", path,
             json_string_value(be), backend);
    err = -EXDEV;
  }
  size_t n = err ? 0 : json_array_size(gpus);
  struct agent_state_entry *v = calloc(n ? n : 1, sizeof *v);
  if (!err && !v) err = -ENOMEM;
  for (size_t k = 0; !err && k < n; k++)
    if (parse_entry(json_array_get(gpus, k), &v[k]))
      err = bad(errbuf, errlen, path, k, "missing or invalid uuid, index, state, cap_mw, "
                                         "expires, lease_s or fallback");
  json_decref(root);
  if (err) {
    free(v);
    return err;
  }
  *ret = v;
  *ret_n = n;
  return 0;
}
