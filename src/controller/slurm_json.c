/* Slurm's --json output: sinfo's nodes, squeue's running jobs (slurm_json.h). */
#include "controller/slurm_json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static int bad_field(char *err, size_t errlen, const char *array, size_t i, const char *field,
                     const char *why) {
  snprintf(err, errlen, "%s[%zu].%s: %s", array, i, field, why);
  return -EINVAL;
}

bool ctl_slurm_name_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n >= CTL_SLURM_NAME_MAX) return false;
  return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

static bool addr_ok(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n >= CTL_SLURM_ADDR_MAX) return false;
  return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-:") == n;
}

/* A string field into buf, checked by ok (NULL: any that fits). */
static int get_str(const json_t *o, const char *array, size_t i, const char *key, char *buf,
                   size_t size, bool (*ok)(const char *), char *err, size_t errlen) {
  const json_t *v = json_object_get(o, key);
  if (!json_is_string(v)) return bad_field(err, errlen, array, i, key, "missing or not a string");
  const char *s = json_string_value(v);
  if (strlen(s) >= size || (ok && !ok(s)) || strlen(s) != json_string_length(v))
    return bad_field(err, errlen, array, i, key, "not a usable name (too long or odd characters)");
  snprintf(buf, size, "%s", s);
  return 0;
}

/* Slurm's "errors" array: empty, or the first error as the reason. */
static int slurm_errors(const json_t *root, const char *command, char *err, size_t errlen) {
  const json_t *e = json_object_get(root, "errors");
  if (!e) return 0;
  if (!json_is_array(e)) {
    snprintf(err, errlen, "errors: not an array");
    return -EINVAL;
  }
  if (json_array_size(e) == 0) return 0;
  const json_t *first = json_array_get(e, 0);
  const char *desc = json_string_value(json_object_get(first, "description"));
  const char *what = json_string_value(json_object_get(first, "error"));
  const char *src = json_string_value(json_object_get(first, "source"));
  snprintf(err, errlen, "%s reports an error: %s%s%s%s%s", command, src ? src : "",
           src ? ": " : "", desc ? desc : "", desc && what ? " " : "", what ? what : "");
  return -EPROTO;
}

/* Loads the document and returns its array `key` (a new reference). */
static json_t *load(const char *body, size_t len, const char *command, const char *key,
                    int *ret_rc, char *err, size_t errlen) {
  json_error_t je;
  json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
  *ret_rc = -EINVAL;
  if (!root || !json_is_object(root)) {
    if (root)
      snprintf(err, errlen, "%s: not a JSON object", command);
    else
      snprintf(err, errlen, "%s: malformed JSON: %s (line %d, column %d)", command, je.text,
               je.line, je.column);
    json_decref(root);
    return NULL;
  }
  *ret_rc = slurm_errors(root, command, err, errlen);
  json_t *a = json_object_get(root, key);
  if (*ret_rc == 0 && !json_is_array(a)) {
    snprintf(err, errlen, "%s: %s: missing or not an array", command, key);
    *ret_rc = -EINVAL;
  }
  if (*ret_rc == 0) json_incref(a);
  json_decref(root);
  return *ret_rc == 0 ? a : NULL;
}

static bool has_flag(const json_t *flags, const char *flag) {
  size_t i;
  const json_t *f;
  json_array_foreach(flags, i, f) if (json_is_string(f) && strcmp(json_string_value(f), flag) == 0)
      return true;
  return false;
}

/* "gpu", "gpu:4", "gpu:h100:8(S:0-1)", possibly after other GRES, comma separated. */
static bool names_gpu(const char *gres) {
  for (const char *p = gres; (p = strstr(p, "gpu")) != NULL; p += 3)
    if ((p == gres || p[-1] == ',') && (p[3] == '\0' || p[3] == ':' || p[3] == ','))
      return true;
  return false;
}

static int parse_node(const json_t *o, size_t i, struct ctl_slurm_node *nd, char *err,
                      size_t errlen) {
  if (!json_is_object(o)) return bad_field(err, errlen, "nodes", i, "", "not an object");
  int rc = get_str(o, "nodes", i, "name", nd->name, sizeof nd->name, ctl_slurm_name_ok, err,
                   errlen);
  if (!rc) rc = get_str(o, "nodes", i, "address", nd->addr, sizeof nd->addr, addr_ok, err, errlen);
  if (!rc) rc = get_str(o, "nodes", i, "state", nd->state, sizeof nd->state, NULL, err, errlen);
  char gres[1024];
  if (!rc) rc = get_str(o, "nodes", i, "gres", gres, sizeof gres, NULL, err, errlen);
  if (rc) return rc;
  const json_t *flags = json_object_get(o, "state_flags");
  if (flags && !json_is_array(flags))
    return bad_field(err, errlen, "nodes", i, "state_flags", "not an array");
  nd->drain = has_flag(flags, "DRAIN");
  nd->powered_down = has_flag(flags, "POWERED_DOWN");
  nd->gpus = names_gpu(gres);
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const struct ctl_slurm_node *)a)->name, ((const struct ctl_slurm_node *)b)->name);
}

int ctl_slurm_parse_nodes(const char *body, size_t len, struct ctl_slurm_nodes *ret, char *err,
                          size_t errlen) {
  int rc;
  json_t *a = load(body, len, "sinfo --json", "nodes", &rc, err, errlen);
  if (!a) return rc;
  size_t n = json_array_size(a);
  struct ctl_slurm_nodes out = {calloc(n ? n : 1, sizeof *out.v), n};
  if (n > CTL_SLURM_MAX_NODES) {
    snprintf(err, errlen, "sinfo --json: nodes: more than %d", CTL_SLURM_MAX_NODES);
    rc = -EINVAL;
  } else if (!out.v) {
    snprintf(err, errlen, "out of memory");
    rc = -ENOMEM;
  }
  for (size_t i = 0; rc == 0 && i < n; i++)
    rc = parse_node(json_array_get(a, i), i, &out.v[i], err, errlen);
  json_decref(a);
  if (rc == 0) qsort(out.v, n, sizeof *out.v, by_name);
  for (size_t i = 1; rc == 0 && i < n; i++)
    if (strcmp(out.v[i - 1].name, out.v[i].name) == 0) {
      snprintf(err, errlen, "sinfo --json: nodes: '%s' listed twice", out.v[i].name);
      rc = -EINVAL;
    }
  if (rc) {
    free(out.v);
    return rc;
  }
  *ret = out;
  return 0;
}

void ctl_slurm_nodes_release(struct ctl_slurm_nodes *n) {
  free(n->v);
  n->v = NULL;
  n->n = 0;
}

static int add_name(struct ctl_slurm_jobs *js, size_t *cap, const char *name) {
  if (js->nnames == *cap) {
    size_t nc = *cap ? *cap * 2 : 64;
    void *p = realloc(js->names, nc * sizeof *js->names);
    if (!p) return -ENOMEM;
    js->names = p;
    *cap = nc;
  }
  snprintf(js->names[js->nnames++], CTL_SLURM_NAME_MAX, "%s", name);
  return 0;
}

/* job_resources.allocated_nodes[].nodename of a running job. */
static int job_nodes(const json_t *o, size_t i, struct ctl_slurm_jobs *js, size_t *cap,
                     struct ctl_slurm_job *j, char *err, size_t errlen) {
  const json_t *an = json_object_get(json_object_get(o, "job_resources"), "allocated_nodes");
  if (!json_is_array(an) || json_array_size(an) == 0)
    return bad_field(err, errlen, "jobs", i, "job_resources.allocated_nodes",
                     "missing or empty for a running job");
  j->first = js->nnames;
  size_t k;
  const json_t *e;
  json_array_foreach(an, k, e) {
    char name[CTL_SLURM_NAME_MAX];
    if (get_str(e, "jobs", i, "nodename", name, sizeof name, ctl_slurm_name_ok, err, errlen) < 0) {
      snprintf(err, errlen, "jobs[%zu].job_resources.allocated_nodes[%zu].nodename: missing or "
                            "not a node name", i, k);
      return -EINVAL;
    }
    if (add_name(js, cap, name) < 0) return -ENOMEM;
  }
  j->count = js->nnames - j->first;
  return 0;
}

static bool gres_detail_gpu(const json_t *o) {
  size_t k;
  const json_t *e;
  json_array_foreach(json_object_get(o, "gres_detail"), k, e) if (
      json_is_string(e) && names_gpu(json_string_value(e))) return true;
  return false;
}

/* One entry of "jobs"; *ret_running false for a job not running. */
static int parse_job(const json_t *o, size_t i, struct ctl_slurm_jobs *js, size_t *cap,
                     struct ctl_slurm_job *j, bool *ret_running, char *err, size_t errlen) {
  if (!json_is_object(o)) return bad_field(err, errlen, "jobs", i, "", "not an object");
  const json_t *id = json_object_get(o, "job_id");
  if (!json_is_integer(id) || json_integer_value(id) <= 0)
    return bad_field(err, errlen, "jobs", i, "job_id", "missing or not a positive integer");
  char state[32];
  int rc = get_str(o, "jobs", i, "job_state", state, sizeof state, NULL, err, errlen);
  if (rc) return rc;
  *ret_running = strcmp(state, "RUNNING") == 0;
  if (!*ret_running) return 0;
  snprintf(j->id, sizeof j->id, "%lld", (long long)json_integer_value(id));
  const json_t *st = json_object_get(o, "start_time");
  if (st && !json_is_integer(st))
    return bad_field(err, errlen, "jobs", i, "start_time", "not an integer");
  j->start_time = st ? (double)json_integer_value(st) : 0;
  const json_t *gd = json_object_get(o, "gres_detail");
  if (gd && !json_is_array(gd))
    return bad_field(err, errlen, "jobs", i, "gres_detail", "not an array");
  j->gpus = gres_detail_gpu(o);
  return job_nodes(o, i, js, cap, j, err, errlen);
}

int ctl_slurm_parse_jobs(const char *body, size_t len, struct ctl_slurm_jobs *ret, char *err,
                         size_t errlen) {
  int rc;
  json_t *a = load(body, len, "squeue --json", "jobs", &rc, err, errlen);
  if (!a) return rc;
  size_t n = json_array_size(a), cap = 0;
  struct ctl_slurm_jobs out = {.v = calloc(n ? n : 1, sizeof *out.v)};
  if (n > CTL_SLURM_MAX_JOBS) {
    snprintf(err, errlen, "squeue --json: jobs: more than %d", CTL_SLURM_MAX_JOBS);
    rc = -EINVAL;
  } else if (!out.v) {
    snprintf(err, errlen, "out of memory");
    rc = -ENOMEM;
  }
  for (size_t i = 0; rc == 0 && i < n; i++) {
    bool running = false;
    rc = parse_job(json_array_get(a, i), i, &out, &cap, &out.v[out.n], &running, err, errlen);
    if (rc == 0 && running) out.n++;
  }
  json_decref(a);
  if (rc == -ENOMEM) snprintf(err, errlen, "out of memory");
  if (rc) {
    ctl_slurm_jobs_release(&out);
    return rc;
  }
  *ret = out;
  return 0;
}

void ctl_slurm_jobs_release(struct ctl_slurm_jobs *j) {
  free(j->v);
  free(j->names);
  memset(j, 0, sizeof *j);
}
