/* Mapping and caps files (include/pflex/caps_plan.h): read, checked, built
 * from an allocation, written atomically. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/atomic.h"
#include "io/json_fields.h"
#include "pflex/caps_plan.h"

void pflex_caps_plan_init(struct pflex_caps_plan *plan) {
  *plan = (struct pflex_caps_plan){.target_w = NAN};
}

void pflex_caps_plan_release(struct pflex_caps_plan *plan) {
  for (size_t i = 0; i < plan->n; i++) {
    free(plan->caps[i].node);
    free(plan->caps[i].job);
  }
  free(plan->caps);
  free(plan->strategy);
  pflex_caps_plan_init(plan);
}

static int add_cap(struct pflex_caps_plan *p, size_t *cap, const char *node, const char *job,
                   unsigned gpu, double cap_w) {
  if (p->n == *cap) {
    size_t m = *cap ? 2 * *cap : 16;
    struct pflex_gpu_cap *v = realloc(p->caps, m * sizeof *v);
    if (!v) return -ENOMEM;
    p->caps = v;
    *cap = m;
  }
  struct pflex_gpu_cap *c = &p->caps[p->n];
  *c = (struct pflex_gpu_cap){.node = strdup(node), .job = strdup(job), .gpu = gpu, .cap_w = cap_w};
  if (!c->node || !c->job) {
    free(c->node);
    free(c->job);
    return -ENOMEM;
  }
  p->n++;
  return 0;
}

static int by_node_gpu(const void *a, const void *b) {
  const struct pflex_gpu_cap *x = *(const struct pflex_gpu_cap *const *)a;
  const struct pflex_gpu_cap *y = *(const struct pflex_gpu_cap *const *)b;
  int c = strcmp(x->node, y->node);
  return c ? c : (x->gpu > y->gpu) - (x->gpu < y->gpu);
}

/* A GPU of a node listed twice: an error naming both jobs. */
static int check_unique(const struct pflex_caps_plan *p, const struct json_fields *f) {
  if (p->n < 2) return 0;
  const struct pflex_gpu_cap **v = malloc(p->n * sizeof *v);
  if (!v) return -ENOMEM;
  for (size_t i = 0; i < p->n; i++)
    v[i] = &p->caps[i];
  qsort(v, p->n, sizeof *v, by_node_gpu);
  int err = 0;
  for (size_t i = 1; i < p->n && !err; i++)
    if (by_node_gpu(&v[i - 1], &v[i]) == 0)
      err = pflex__json_fail(f, -PFLEX_E_DATA, NULL,
                             "node '%s' GPU %u is given twice (jobs '%s' and '%s')", v[i]->node,
                             v[i]->gpu, v[i - 1]->job, v[i]->job);
  free(v);
  return err;
}

static int gpu_index(const struct json_fields *f, json_t *x, unsigned *ret) {
  if (!json_is_integer(x) || json_integer_value(x) < 0 ||
      json_integer_value(x) > PFLEX_MAX_GPU_INDEX)
    return pflex__json_fail(f, -PFLEX_E_DATA, NULL, "a GPU index must be an integer 0-%d",
                            PFLEX_MAX_GPU_INDEX);
  *ret = (unsigned)json_integer_value(x);
  return 0;
}

/* One job's {"NODE": [GPU, ...]} object. */
static int read_job(struct json_fields *f, const char *job, json_t *nodes,
                    struct pflex_caps_plan *p, size_t *cap) {
  snprintf(f->where, sizeof f->where, "job '%s'", job);
  if (!job[0]) return pflex__json_fail(f, -PFLEX_E_DATA, NULL, "a job name is empty");
  if (!json_is_object(nodes) || json_object_size(nodes) == 0)
    return pflex__json_fail(f, -PFLEX_E_DATA, NULL,
                            "must be a non-empty object {\"NODE\": [GPU index, ...]}");
  const char *node;
  json_t *gpus;
  json_object_foreach(nodes, node, gpus) {
    snprintf(f->where, sizeof f->where, "job '%s', node '%s'", job, node);
    if (!node[0]) return pflex__json_fail(f, -PFLEX_E_DATA, NULL, "a node name is empty");
    if (!json_is_array(gpus) || json_array_size(gpus) == 0)
      return pflex__json_fail(f, -PFLEX_E_DATA, NULL, "must be a non-empty array of GPU indexes");
    size_t k;
    json_t *x;
    json_array_foreach(gpus, k, x) {
      unsigned g = 0;
      int err = gpu_index(f, x, &g);
      if (!err) err = add_cap(p, cap, node, job, g, NAN);
      if (err) return err;
    }
  }
  return 0;
}

/* Loads path's top-level JSON object (duplicate keys refused). */
static int load_object(const struct json_fields *f, const char *path, json_t **ret) {
  json_t *root;
  int err = pflex__json_load(path, JSON_REJECT_DUPLICATES, &root, f->diag);
  if (err) return err;
  if (!json_is_object(root)) {
    json_decref(root);
    return pflex__json_fail(f, -PFLEX_E_PARSE, NULL, "expected a JSON object");
  }
  *ret = root;
  return 0;
}

static int read_mapping(struct json_fields *f, json_t *root, struct pflex_caps_plan *p) {
  static const char *const keys[] = {"jobs", NULL};
  int err = pflex__json_check_keys(f, root, keys, NULL);
  json_t *jobs = json_object_get(root, "jobs");
  if (!err && (!json_is_object(jobs) || json_object_size(jobs) == 0))
    err = pflex__json_fail(f, -PFLEX_E_DATA, "jobs",
                           "must be a non-empty object {\"JOB\": {\"NODE\": [GPU, ...]}}");
  size_t cap = 0;
  const char *job;
  json_t *nodes;
  if (!err) json_object_foreach(jobs, job, nodes) {
      if ((err = read_job(f, job, nodes, p, &cap))) break;
    }
  f->where[0] = '\0';
  return err ? err : check_unique(p, f);
}

/* Reads path's object with body into *ret: all or nothing. */
static int read_with(const char *path, struct pflex_caps_plan *ret, struct pflex_diag *diag,
                     int (*body)(struct json_fields *, json_t *, struct pflex_caps_plan *)) {
  pflex_caps_plan_init(ret);
  struct json_fields f = {.file = path, .diag = diag};
  json_t *root = NULL;
  int err = load_object(&f, path, &root);
  if (err) return err;
  err = body(&f, root, ret);
  json_decref(root);
  if (err) pflex_caps_plan_release(ret);
  return pflex__json_said(diag, err);
}

int pflex_mapping_read_json(const char *path, struct pflex_caps_plan *ret,
                            struct pflex_diag *diag) {
  return read_with(path, ret, diag, read_mapping);
}

static int by_name(const void *a, const void *b) {
  const struct pflex_caps_job *x = *(const struct pflex_caps_job *const *)a;
  const struct pflex_caps_job *y = *(const struct pflex_caps_job *const *)b;
  return strcmp(x->name, y->name);
}

/* The allocation's jobs sorted by name, for lookups; *ret NULL when n is 0. */
static int sorted_jobs(const struct pflex_caps_job *jobs, size_t n,
                       const struct pflex_caps_job ***ret) {
  *ret = NULL;
  if (n == 0) return 0;
  const struct pflex_caps_job **v = malloc(n * sizeof *v);
  if (!v) return -ENOMEM;
  for (size_t i = 0; i < n; i++)
    v[i] = &jobs[i];
  qsort(v, n, sizeof *v, by_name);
  *ret = v;
  return 0;
}

static size_t find_job(const struct pflex_caps_job **v, size_t n, const char *name) {
  struct pflex_caps_job key = {.name = name};
  const struct pflex_caps_job *k = &key;
  const struct pflex_caps_job **hit = n ? bsearch(&k, v, n, sizeof *v, by_name) : NULL;
  return hit ? (size_t)(hit - v) : n;
}

/* Every mapped GPU gets its job's cap; counts[k] = GPUs mapped to v[k]. */
static int assign(const struct pflex_caps_plan *m, const struct pflex_caps_job **v, size_t n,
                  size_t *counts, struct pflex_caps_plan *ret, const struct json_fields *f) {
  size_t cap = 0;
  for (size_t i = 0; i < m->n; i++) {
    const struct pflex_gpu_cap *c = &m->caps[i];
    size_t k = find_job(v, n, c->job);
    if (k == n)
      return pflex__json_fail(f, -PFLEX_E_DATA, NULL,
                              "job '%s' is not among the allocated jobs (a typo?)", c->job);
    if (!isfinite(v[k]->cap_w) || v[k]->cap_w <= 0)
      return pflex__json_fail(f, -PFLEX_E_DATA, NULL, "job '%s' has no per-GPU cap", c->job);
    counts[k]++;
    int err = add_cap(ret, &cap, c->node, c->job, c->gpu, v[k]->cap_w);
    if (err) return err;
  }
  return 0;
}

int pflex_caps_plan_build(const struct pflex_caps_plan *mapping, const char *map_path,
                          const struct pflex_caps_job *jobs, size_t n, const char *strategy,
                          double target_w, enum pflex_provenance provenance,
                          struct pflex_caps_plan *ret, struct pflex_diag *diag) {
  pflex_caps_plan_init(ret);
  struct json_fields f = {.file = map_path, .diag = diag};
  const struct pflex_caps_job **v;
  int err = sorted_jobs(jobs, n, &v);
  size_t *counts = err ? NULL : calloc(n ? n : 1, sizeof *counts);
  if (!err && !counts) err = -ENOMEM;
  for (size_t k = 1; !err && k < n; k++)
    if (strcmp(v[k - 1]->name, v[k]->name) == 0)
      err = pflex__json_fail(&f, -PFLEX_E_DATA, NULL,
                             "two allocated jobs are named '%s': a mapping cannot tell them apart",
                             v[k]->name);
  if (!err) err = assign(mapping, v, n, counts, ret, &f);
  for (size_t k = 0; !err && k < n; k++)
    if (counts[k] == 0)
      err = pflex__json_fail(&f, -PFLEX_E_DATA, NULL, "job '%s' (%d GPUs) is not in the mapping",
                             v[k]->name, v[k]->gpus);
    else if (counts[k] != (size_t)v[k]->gpus)
      err = pflex__json_fail(&f, -PFLEX_E_DATA, NULL,
                             "job '%s' runs on %d GPUs but the mapping gives it %zu", v[k]->name,
                             v[k]->gpus, counts[k]);
  if (!err && strategy && !(ret->strategy = strdup(strategy))) err = -ENOMEM;
  ret->target_w = target_w;
  ret->provenance = provenance;
  free(counts);
  free(v);
  if (err) pflex_caps_plan_release(ret);
  return err;
}

static json_t *caps_json(const struct pflex_caps_plan *plan) {
  json_t *root = json_object(), *arr = json_array();
  if (!root || !arr) {
    json_decref(root);
    json_decref(arr);
    return NULL;
  }
  json_object_set_new(root, "format", json_string(PFLEX_CAPS_FORMAT));
  if (plan->strategy) json_object_set_new(root, "strategy", json_string(plan->strategy));
  if (isfinite(plan->target_w)) json_object_set_new(root, "target_w", json_real(plan->target_w));
  json_object_set_new(root, "provenance", json_string(pflex_provenance_name(plan->provenance)));
  for (size_t i = 0; i < plan->n; i++) {
    const struct pflex_gpu_cap *c = &plan->caps[i];
    json_t *o = json_pack("{s:s, s:I, s:f, s:s}", "node", c->node, "gpu", (json_int_t)c->gpu,
                          "cap_w", c->cap_w, "job", c->job);
    if (!o || json_array_append_new(arr, o)) {
      json_decref(arr);
      json_decref(root);
      return NULL;
    }
  }
  json_object_set_new(root, "caps", arr);
  return root;
}

int pflex_caps_plan_write_json(const char *path, const struct pflex_caps_plan *plan) {
  json_t *root = caps_json(plan);
  char *text = root ? json_dumps(root, JSON_PRESERVE_ORDER | JSON_INDENT(1) |
                                           JSON_REAL_PRECISION(10))
                    : NULL;
  json_decref(root);
  if (!text) return -ENOMEM;
  int err = pflex__atomic_write_text(path, text);
  free(text);
  return err;
}

static const char *const cap_keys[] = {"node", "gpu", "cap_w", "job", NULL};

/* Entry i of a caps file's "caps" array. */
static int read_cap(struct json_fields *f, size_t i, json_t *o, struct pflex_caps_plan *p,
                    size_t *cap) {
  snprintf(f->where, sizeof f->where, "caps entry %zu", i + 1);
  if (!json_is_object(o)) return pflex__json_fail(f, -PFLEX_E_DATA, NULL, "must be an object");
  const char *node = NULL, *job = NULL;
  long long gpu = 0;
  double w = NAN;
  int err = pflex__json_check_keys(f, o, cap_keys, NULL);
  if (!err) err = pflex__json_get_string(f, o, "node", true, &node);
  if (!err) err = pflex__json_get_string(f, o, "job", false, &job);
  bool have;
  if (!err) err = pflex__json_get_int(f, o, "gpu", 0, PFLEX_MAX_GPU_INDEX, true, &gpu, &have);
  if (!err)
    err = pflex__json_get_number(f, o, "cap_w", 0, 100000, JSON_REQUIRED | JSON_OPEN_MIN, &w,
                                 NULL);
  if (!err) err = add_cap(p, cap, node, job ? job : "", (unsigned)gpu, w);
  return err;
}

static int read_caps(struct json_fields *f, json_t *root, struct pflex_caps_plan *p) {
  static const char *const keys[] = {"format", "strategy", "target_w", "provenance", "caps",
                                     NULL};
  const char *format, *strategy, *prov;
  int err = pflex__json_check_keys(f, root, keys, NULL);
  if (!err) err = pflex__json_get_string(f, root, "format", true, &format);
  if (!err && strcmp(format, PFLEX_CAPS_FORMAT) != 0)
    err = pflex__json_fail(f, -PFLEX_E_DATA, "format", "'%s' is not %s", format,
                           PFLEX_CAPS_FORMAT);
  if (!err) err = pflex__json_get_string(f, root, "strategy", false, &strategy);
  if (!err && strategy && !(p->strategy = strdup(strategy))) err = -ENOMEM;
  if (!err) err = pflex__json_get_string(f, root, "provenance", false, &prov);
  if (!err && prov && pflex_provenance_parse(prov, &p->provenance))
    err = pflex__json_fail(f, -PFLEX_E_DATA, "provenance",
                           "'%s' is not unknown, measured, simulated or reconstructed", prov);
  if (!err)
    err = pflex__json_get_number(f, root, "target_w", 0, INFINITY, JSON_NULL_ABSENT, &p->target_w,
                                 NULL);
  json_t *arr = json_object_get(root, "caps");
  if (!err && !json_is_array(arr))
    err = pflex__json_fail(f, -PFLEX_E_DATA, "caps", "must be an array of caps");
  size_t cap = 0, i;
  json_t *o;
  if (!err) json_array_foreach(arr, i, o) {
      if ((err = read_cap(f, i, o, p, &cap))) break;
    }
  f->where[0] = '\0';
  return err ? err : check_unique(p, f);
}

int pflex_caps_plan_read_json(const char *path, struct pflex_caps_plan *ret,
                              struct pflex_diag *diag) {
  return read_with(path, ret, diag, read_caps);
}
