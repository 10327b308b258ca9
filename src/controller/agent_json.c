/* The agent API's JSON (agent_json.h). */
#include "controller/agent_json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "agent/body.h" /* the job id and class name rules pflexd applies */
#include "pflex/alloc.h"

/* Watts a GPU may report or be limited to; more is a broken reply (and
 * would make the cluster's sums meaningless). */
#define MAX_GPU_W 100000.0

static int bad(char *err, size_t errlen, const char *what, size_t i, const char *field) {
  snprintf(err, errlen, "%s[%zu]: field '%s' missing, of the wrong type or out of range", what, i, field);
  return -EINVAL;
}

/* A number, or null (then *ret = fallback). Missing or another type: false. */
static bool num_or_null(const json_t *o, const char *key, double fallback, double *ret) {
  const json_t *v = json_object_get(o, key);
  if (json_is_null(v)) {
    *ret = fallback;
    return true;
  }
  if (!json_is_number(v) || !isfinite(json_number_value(v))) return false;
  *ret = json_number_value(v);
  return true;
}

static bool str_or_null(const json_t *o, const char *key, char *buf, size_t size) {
  const json_t *v = json_object_get(o, key);
  if (json_is_null(v)) {
    buf[0] = '\0';
    return true;
  }
  if (!json_is_string(v) || strlen(json_string_value(v)) >= size) return false;
  snprintf(buf, size, "%s", json_string_value(v));
  return true;
}

static json_t *load_root(const char *body, size_t len, char *err, size_t errlen) {
  json_error_t je;
  json_t *root = json_loadb(body, len, 0, &je);
  if (!root) snprintf(err, errlen, "malformed JSON: %s (offset %d)", je.text, je.position);
  return root;
}

static const json_t *get_array(const json_t *root, const char *key, char *err, size_t errlen) {
  const json_t *a = json_object_get(root, key);
  if (!json_is_array(a)) snprintf(err, errlen, "no '%s' array", key);
  return json_is_array(a) ? a : NULL;
}

static int parse_gpu(const json_t *o, size_t i, struct ctl_gpu_state *g, char *err, size_t errlen) {
  const json_t *idx = json_object_get(o, "index");
  if (!json_is_integer(idx) || json_integer_value(idx) < 0 || json_integer_value(idx) > 1023)
    return bad(err, errlen, "gpus", i, "index");
  g->index = (unsigned)json_integer_value(idx);
  static const struct {
    const char *key;
    size_t off;
    double fallback;
    double lo, hi; /* accepted range of a number (null: the fallback) */
  } nums[] = {
      {"power_w", offsetof(struct ctl_gpu_state, power_w), NAN, 0, MAX_GPU_W},
      {"limit_w", offsetof(struct ctl_gpu_state, limit_w), NAN, 0, MAX_GPU_W},
      {"enforced_limit_w", offsetof(struct ctl_gpu_state, enforced_w), NAN, 0, MAX_GPU_W},
      {"default_limit_w", offsetof(struct ctl_gpu_state, default_w), NAN, 0, MAX_GPU_W},
      {"min_limit_w", offsetof(struct ctl_gpu_state, min_w), NAN, 0, MAX_GPU_W},
      {"max_limit_w", offsetof(struct ctl_gpu_state, max_w), NAN, 0, MAX_GPU_W},
      {"energy_j", offsetof(struct ctl_gpu_state, energy_j), NAN, 0, INFINITY},
      {"lease_s_left", offsetof(struct ctl_gpu_state, lease_s_left), -1, 0, INFINITY},
  };
  for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
    double *x = (double *)((char *)g + nums[k].off);
    if (!num_or_null(o, nums[k].key, nums[k].fallback, x) ||
        (*x != nums[k].fallback && !(*x >= nums[k].lo && *x <= nums[k].hi)))
      return bad(err, errlen, "gpus", i, nums[k].key);
  }
  if (g->min_w > g->max_w) return bad(err, errlen, "gpus", i, "min_limit_w");
  if (!str_or_null(o, "uuid", g->uuid, sizeof g->uuid)) return bad(err, errlen, "gpus", i, "uuid");
  if (!str_or_null(o, "job", g->job, sizeof g->job) || (g->job[0] && !agent_job_id_valid(g->job)))
    return bad(err, errlen, "gpus", i, "job");
  if (json_object_get(o, "lease_state") && /* optional: not in issue 9's list */
      !str_or_null(o, "lease_state", g->lease_state, sizeof g->lease_state))
    return bad(err, errlen, "gpus", i, "lease_state");
  return 0;
}

static int gpus_of(const json_t *root, struct ctl_gpu_state *gpus, size_t max, size_t *ret_n,
                   char *err, size_t errlen) {
  const json_t *a = get_array(root, "gpus", err, errlen);
  if (!a) return -EINVAL;
  size_t n = json_array_size(a);
  int rc = 0;
  if (n > max) {
    snprintf(err, errlen, "%zu GPUs, more than %zu", n, max);
    rc = -EINVAL;
  }
  for (size_t i = 0; rc == 0 && i < n; i++) {
    memset(&gpus[i], 0, sizeof gpus[i]);
    rc = parse_gpu(json_array_get(a, i), i, &gpus[i], err, errlen);
    for (size_t k = 0; rc == 0 && k < i; k++)
      if (gpus[k].index == gpus[i].index) {
        snprintf(err, errlen, "gpus[%zu]: index %u listed twice", i, gpus[i].index);
        rc = -EINVAL;
      }
  }
  if (rc == 0) *ret_n = n;
  return rc;
}

int ctl_parse_gpus(const char *body, size_t len, struct ctl_gpu_state *gpus, size_t max,
                   size_t *ret_n, char *err, size_t errlen) {
  json_t *root = load_root(body, len, err, errlen);
  int rc = root ? gpus_of(root, gpus, max, ret_n, err, errlen) : -EINVAL;
  json_decref(root);
  return rc;
}

/* A missing key is the same as null: agents before job metadata lack them. */
static bool opt_num(const json_t *o, const char *key, double lo, double hi, double none,
                    double *ret) {
  const json_t *v = json_object_get(o, key);
  *ret = none;
  if (!v || json_is_null(v)) return true;
  if (!json_is_number(v)) return false;
  double x = json_number_value(v);
  if (!(x >= lo && x <= hi)) return false;
  *ret = x;
  return true;
}

static int parse_job_meta(const json_t *o, size_t i, struct ctl_job_meta *m, char *err,
                          size_t errlen) {
  m->class_name[0] = '\0';
  if (json_object_get(o, "class") &&
      (!str_or_null(o, "class", m->class_name, sizeof m->class_name) ||
       (m->class_name[0] && !agent_class_name_valid(m->class_name))))
    return bad(err, errlen, "jobs", i, "class");
  if (!opt_num(o, "weight", 1e-300, 1000, 0, &m->weight))
    return bad(err, errlen, "jobs", i, "weight");
  if (!opt_num(o, "min_throughput", 0, 1, -1, &m->min_tput))
    return bad(err, errlen, "jobs", i, "min_throughput");
  return 0;
}

static bool telemetry_name_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n >= CTL_TELEMETRY_NAME_MAX) return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_')) return false;
  return true;
}

static bool parse_telemetry(const json_t *o, struct ctl_telemetry *t) {
  const json_t *v = json_object_get(o, "telemetry");
  t->n = 0;
  if (!v || json_is_null(v)) return true;
  if (!json_is_object(v) || json_object_size(v) > CTL_TELEMETRY_MAX) return false;
  const char *key;
  const json_t *x;
  json_object_foreach((json_t *)v, key, x) {
    if (!telemetry_name_ok(key) || !json_is_number(x) || !isfinite(json_number_value(x)))
      return false;
    snprintf(t->name[t->n], sizeof t->name[t->n], "%s", key);
    t->value[t->n++] = json_number_value(x);
  }
  return true;
}

static int jobs_of(const json_t *root, struct ctl_job_tput *jobs, size_t max, size_t *ret_n,
                   char *err, size_t errlen) {
  const json_t *a = get_array(root, "jobs", err, errlen);
  if (!a) return -EINVAL;
  size_t n = json_array_size(a);
  int rc = 0;
  if (n > max) {
    snprintf(err, errlen, "%zu jobs, more than %zu", n, max);
    rc = -EINVAL;
  }
  for (size_t i = 0; rc == 0 && i < n; i++) {
    const json_t *o = json_array_get(a, i);
    struct ctl_job_tput *j = &jobs[i];
    memset(j, 0, sizeof *j);
    const json_t *id = json_object_get(o, "id");
    if (!json_is_string(id) || strlen(json_string_value(id)) >= sizeof j->id ||
        !agent_job_id_valid(json_string_value(id))) {
      rc = bad(err, errlen, "jobs", i, "id");
      break;
    }
    snprintf(j->id, sizeof j->id, "%s", json_string_value(id));
    if (!num_or_null(o, "throughput", NAN, &j->tput)) {
      rc = bad(err, errlen, "jobs", i, "throughput");
      break;
    }
    /* A throughput no allocator takes (pflex/alloc.h) is as good as none: the
     * job is allocated on its prior, not refused with the whole round. */
    j->has_tput = isfinite(j->tput) && j->tput >= 0 && j->tput <= PFLEX_ALLOC_MAX_TPUT;
    if (!j->has_tput) j->tput = NAN; /* no stray value behind has_tput false */
    if (!num_or_null(o, "throughput_time", NAN, &j->tput_time) ||
        !num_or_null(o, "throughput_samples", 0, &j->samples)) {
      rc = bad(err, errlen, "jobs", i, "throughput_time");
      break;
    }
    rc = parse_job_meta(o, i, &j->meta, err, errlen);
    if (rc == 0 && !parse_telemetry(o, &j->telemetry)) rc = bad(err, errlen, "jobs", i, "telemetry");
  }
  if (rc == 0) *ret_n = n;
  return rc;
}

int ctl_parse_jobs(const char *body, size_t len, struct ctl_job_tput *jobs, size_t max,
                   size_t *ret_n, char *err, size_t errlen) {
  json_t *root = load_root(body, len, err, errlen);
  int rc = root ? jobs_of(root, jobs, max, ret_n, err, errlen) : -EINVAL;
  json_decref(root);
  return rc;
}

int ctl_parse_node(const char *body, size_t len, struct ctl_gpu_state *gpus, size_t max_gpus,
                   size_t *ret_ngpus, struct ctl_job_tput *jobs, size_t max_jobs,
                   size_t *ret_njobs, char *err, size_t errlen) {
  json_t *root = load_root(body, len, err, errlen);
  size_t ng = 0, nj = 0;
  int rc = root ? gpus_of(root, gpus, max_gpus, &ng, err, errlen) : -EINVAL;
  if (rc == 0) rc = jobs_of(root, jobs, max_jobs, &nj, err, errlen);
  json_decref(root);
  if (rc == 0) {
    *ret_ngpus = ng;
    *ret_njobs = nj;
  }
  return rc;
}

char *ctl_caps_body(const unsigned *index, const double *watts, size_t n, double lease_s,
                    double fallback_w) {
  json_t *caps = json_array();
  for (size_t i = 0; caps && i < n; i++)
    json_array_append_new(
        caps, json_pack("{s:I, s:f}", "gpu", (json_int_t)index[i], "watts", floor(watts[i])));
  json_t *fb =
      fallback_w > 0 ? json_pack("{s:f}", "watts", floor(fallback_w)) : json_string("default");
  json_t *o = json_pack("{s:o, s:f, s:o}", "caps", caps, "lease_s", lease_s, "fallback", fb);
  if (!o) return NULL;
  char *s = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  return s;
}
