/* Request body parsers (body.h). Every check names its field; nothing is
 * returned unless the whole body is valid. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "agent/body.h"
#include "agent/promtext.h"

int agent_error_set(struct agent_error *e, int status, const char *field, const char *fmt, ...) {
  va_list ap;
  e->status = status;
  snprintf(e->field, sizeof e->field, "%s", field ? field : "");
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
  return -EINVAL;
}

static json_t *load_object(const char *body, size_t len, struct agent_error *e) {
  json_error_t je;
  if (len == 0) {
    agent_error_set(e, 400, "", "empty body: expected a JSON object");
    return NULL;
  }
  json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
  if (!root) {
    agent_error_set(e, 400, "", "malformed JSON at line %d, column %d: %s", je.line, je.column,
                    je.text);
    return NULL;
  }
  if (!json_is_object(root)) {
    agent_error_set(e, 400, "", "the body must be a JSON object");
    json_decref(root);
    return NULL;
  }
  return root;
}

/* -EINVAL naming the first key of obj that is not in `known` (NULL-ended). */
static int only_known(json_t *obj, const char *prefix, const char *const *known,
                      struct agent_error *e) {
  const char *key;
  json_t *v;
  json_object_foreach(obj, key, v) {
    size_t i = 0;
    while (known[i] && strcmp(known[i], key) != 0)
      i++;
    if (!known[i]) {
      char field[96];
      snprintf(field, sizeof field, "%s%.60s", prefix, key);
      return agent_error_set(e, 400, field, "unknown field");
    }
  }
  return 0;
}

static int get_watts(json_t *v, const char *field, unsigned *ret_mw, struct agent_error *e) {
  if (!json_is_number(v)) return agent_error_set(e, 400, field, "must be a number of watts");
  double w = json_number_value(v);
  if (!(w > 0 && w <= AGENT_WATTS_MAX))
    return agent_error_set(e, 422, field, "%g W is outside (0, %g]", w, AGENT_WATTS_MAX);
  *ret_mw = (unsigned)lround(w * 1000.0);
  return 0;
}

static int get_gpu(json_t *v, const char *field, unsigned ngpus, unsigned *ret,
                   struct agent_error *e) {
  if (!json_is_integer(v)) return agent_error_set(e, 400, field, "must be a GPU index (integer)");
  json_int_t i = json_integer_value(v);
  if (i < 0 || i >= (json_int_t)ngpus)
    return agent_error_set(e, 422, field, "no GPU %lld: this node has %u (0-%u)", (long long)i,
                           ngpus, ngpus ? ngpus - 1 : 0);
  *ret = (unsigned)i;
  return 0;
}

static int parse_cap_item(json_t *it, size_t k, unsigned ngpus, struct agent_cap_item *out,
                          struct agent_error *e) {
  static const char *const known[] = {"gpu", "job", "watts", NULL};
  char prefix[32], field[64];
  snprintf(prefix, sizeof prefix, "caps[%zu].", k);
  if (!json_is_object(it)) {
    snprintf(field, sizeof field, "caps[%zu]", k);
    return agent_error_set(e, 400, field, "must be an object {\"gpu\":N,\"watts\":W}");
  }
  if (only_known(it, prefix, known, e)) return -EINVAL;
  json_t *gpu = json_object_get(it, "gpu"), *job = json_object_get(it, "job");
  snprintf(field, sizeof field, "%sgpu", prefix);
  if (!gpu == !job) return agent_error_set(e, 400, field, "give exactly one of gpu and job");
  memset(out, 0, sizeof *out);
  if (gpu && get_gpu(gpu, field, ngpus, &out->gpu, e)) return -EINVAL;
  if (job) {
    snprintf(field, sizeof field, "%sjob", prefix);
    if (!json_is_string(job) || !agent_job_id_valid(json_string_value(job)))
      return agent_error_set(e, 400, field, "must be a job id (1-64 of A-Z a-z 0-9 _ + -)");
    out->by_job = true;
    snprintf(out->job, sizeof out->job, "%s", json_string_value(job));
  }
  snprintf(field, sizeof field, "%swatts", prefix);
  json_t *w = json_object_get(it, "watts");
  if (!w) return agent_error_set(e, 400, field, "missing");
  return get_watts(w, field, &out->mw, e);
}

static int parse_caps_array(json_t *caps, unsigned ngpus, struct agent_caps_req *r,
                            struct agent_error *e) {
  if (!json_is_array(caps)) return agent_error_set(e, 400, "caps", "must be an array");
  if (json_array_size(caps) > AGENT_MAX_GPUS)
    return agent_error_set(e, 422, "caps", "more than %d entries", AGENT_MAX_GPUS);
  size_t k;
  json_t *it;
  json_array_foreach(caps, k, it) {
    if (parse_cap_item(it, k, ngpus, &r->items[k], e)) return -EINVAL;
    for (size_t j = 0; j < k; j++) {
      const struct agent_cap_item *a = &r->items[j], *b = &r->items[k];
      if (a->by_job == b->by_job && (a->by_job ? strcmp(a->job, b->job) == 0 : a->gpu == b->gpu)) {
        char field[64];
        snprintf(field, sizeof field, "caps[%zu].%s", k, b->by_job ? "job" : "gpu");
        return agent_error_set(e, 422, field, "given twice (also caps[%zu])", j);
      }
    }
  }
  r->n = json_array_size(caps);
  return 0;
}

static int parse_fallback(json_t *fb, struct agent_caps_req *r, struct agent_error *e) {
  static const char *const known[] = {"watts", NULL};
  r->fallback_default = true;
  if (!fb) return 0;
  if (json_is_string(fb) && strcmp(json_string_value(fb), "default") == 0) return 0;
  if (!json_is_object(fb))
    return agent_error_set(e, 400, "fallback", "must be \"default\" or {\"watts\":W}");
  if (only_known(fb, "fallback.", known, e)) return -EINVAL;
  json_t *w = json_object_get(fb, "watts");
  if (!w) return agent_error_set(e, 400, "fallback.watts", "missing");
  r->fallback_default = false;
  return get_watts(w, "fallback.watts", &r->fallback_mw, e);
}

int agent_caps_parse(const char *body, size_t len, unsigned ngpus, double default_lease_s,
                     double max_lease_s, struct agent_caps_req *ret, struct agent_error *e) {
  static const char *const known[] = {"caps", "lease_s", "fallback", NULL};
  json_t *root = load_object(body, len, e);
  if (!root) return -EINVAL;
  struct agent_caps_req r = {.lease_s = default_lease_s};
  int err = only_known(root, "", known, e);
  json_t *caps = json_object_get(root, "caps"), *lease = json_object_get(root, "lease_s");
  if (!err && !caps) err = agent_error_set(e, 400, "caps", "missing (an empty list renews)");
  if (!err) err = parse_caps_array(caps, ngpus, &r, e);
  if (!err && lease && !json_is_number(lease))
    err = agent_error_set(e, 400, "lease_s", "must be a number of seconds");
  if (!err && lease) {
    r.lease_s = json_number_value(lease);
    if (!(r.lease_s >= 0.1 && r.lease_s <= max_lease_s))
      err = agent_error_set(e, 422, "lease_s", "%g s is outside [0.1, %g]", r.lease_s, max_lease_s);
  }
  if (!err) err = parse_fallback(json_object_get(root, "fallback"), &r, e);
  json_decref(root);
  if (!err) *ret = r;
  return err;
}

/* http on loopback only: a root daemon fetches nothing else for anyone. */
static bool loopback_url(const char *u) {
  static const char *const ok[] = {"http://127.0.0.1:",
                                   "http://127.0.0.1/",
                                   "http://localhost:",
                                   "http://localhost/",
                                   "http://[::1]:",
                                   "http://[::1]/",
                                   NULL};
  for (size_t i = 0; ok[i]; i++)
    if (strncmp(u, ok[i], strlen(ok[i])) == 0) return !strpbrk(u, " \t\r\n@");
  return false;
}

static int parse_scrape(json_t *root, struct agent_job_req *r, struct agent_error *e) {
  json_t *url = json_object_get(root, "metrics_url"), *metric = json_object_get(root, "metric");
  snprintf(r->metric, sizeof r->metric, "tokens_per_second");
  if (metric && !url) return agent_error_set(e, 400, "metric", "needs metrics_url");
  if (!url) return 0;
  if (!json_is_string(url) || strlen(json_string_value(url)) >= sizeof r->metrics_url ||
      !loopback_url(json_string_value(url)))
    return agent_error_set(e, 422, "metrics_url",
                           "must be an http URL on loopback (http://127.0.0.1:PORT/metrics)");
  snprintf(r->metrics_url, sizeof r->metrics_url, "%s", json_string_value(url));
  if (!metric) return 0;
  if (!json_is_string(metric) || !agent_prom_name_valid(json_string_value(metric)))
    return agent_error_set(e, 400, "metric", "must be a Prometheus metric name");
  snprintf(r->metric, sizeof r->metric, "%s", json_string_value(metric));
  return 0;
}

/* "class", "weight", "min_throughput": each optional. */
static int parse_meta(json_t *root, struct agent_job_meta *m, struct agent_error *e) {
  json_t *cls = json_object_get(root, "class"), *w = json_object_get(root, "weight"),
         *mt = json_object_get(root, "min_throughput");
  *m = (struct agent_job_meta){.weight = 0, .min_throughput = -1};
  if (cls && (!json_is_string(cls) || !agent_class_name_valid(json_string_value(cls))))
    return agent_error_set(e, 400, "class", "must be a class name (1-%d of A-Z a-z 0-9 _ -)",
                           AGENT_CLASS_MAX);
  if (cls) snprintf(m->class_name, sizeof m->class_name, "%s", json_string_value(cls));
  if (w && !json_is_number(w)) return agent_error_set(e, 400, "weight", "must be a number");
  if (w && !(json_number_value(w) > 0 && json_number_value(w) <= AGENT_JOB_WEIGHT_MAX))
    return agent_error_set(e, 422, "weight", "%g is outside (0, %g]", json_number_value(w),
                           AGENT_JOB_WEIGHT_MAX);
  if (w) m->weight = json_number_value(w);
  if (mt && !json_is_number(mt))
    return agent_error_set(e, 400, "min_throughput", "must be a number (a fraction)");
  if (mt && !(json_number_value(mt) >= 0 && json_number_value(mt) <= 1))
    return agent_error_set(e, 422, "min_throughput", "%g is outside [0, 1]", json_number_value(mt));
  if (mt) m->min_throughput = json_number_value(mt);
  return 0;
}

int agent_job_parse(const char *body, size_t len, unsigned ngpus, struct agent_job_req *ret,
                    struct agent_error *e) {
  static const char *const known[] = {"gpus",   "metrics_url",    "metric", "class",
                                      "weight", "min_throughput", NULL};
  json_t *root = load_object(body, len, e);
  if (!root) return -EINVAL;
  struct agent_job_req r = {0};
  int err = only_known(root, "", known, e);
  json_t *gpus = json_object_get(root, "gpus");
  if (!err && !gpus) err = agent_error_set(e, 400, "gpus", "missing");
  if (!err && !json_is_array(gpus)) err = agent_error_set(e, 400, "gpus", "must be an array");
  if (!err && (json_array_size(gpus) == 0 || json_array_size(gpus) > AGENT_MAX_GPUS))
    err = agent_error_set(e, 422, "gpus", "must list 1-%d GPU indexes", AGENT_MAX_GPUS);
  for (size_t k = 0; !err && k < json_array_size(gpus); k++) {
    char field[32];
    snprintf(field, sizeof field, "gpus[%zu]", k);
    err = get_gpu(json_array_get(gpus, k), field, ngpus, &r.gpus[k], e);
    for (size_t j = 0; !err && j < k; j++)
      if (r.gpus[j] == r.gpus[k])
        err = agent_error_set(e, 422, field, "GPU %u given twice (also gpus[%zu])", r.gpus[k], j);
  }
  if (!err) err = parse_scrape(root, &r, e);
  if (!err) err = parse_meta(root, &r.meta, e);
  r.n = err ? 0 : json_array_size(gpus);
  json_decref(root);
  if (!err) *ret = r;
  return err;
}

bool agent_job_id_valid(const char *id) {
  size_t n = 0;
  for (const char *p = id; *p; p++, n++) {
    char c = *p;
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '+' || c == '-';
    if (!ok || n >= AGENT_JOB_ID_MAX) return false;
  }
  return n > 0;
}

bool agent_class_name_valid(const char *name) {
  size_t n = 0;
  for (const char *p = name; *p; p++, n++) {
    char c = *p;
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok || n >= AGENT_CLASS_MAX) return false;
  }
  return n > 0;
}
