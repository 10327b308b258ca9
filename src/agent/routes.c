/* The API's routes and handlers (routes.h). Exactly the paths and fields of
 * docs/agent.md; every handler either applies its whole request or nothing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/caps.h"
#include "agent/metrics.h"
#include "agent/routes.h"
#include "pflex/error.h"

void agent_reply_error(struct agent_reply *rp, int status, const char *field, const char *message) {
  rp->status = status;
  rp->json = json_pack("{s:s}", "error", message);
  if (field && *field) json_object_set_new(rp->json, "field", json_string(field));
}

static void reply_body_error(struct agent_reply *rp, const struct agent_error *e) {
  agent_reply_error(rp, e->status, e->field, e->message);
}

static void h_health(struct agent *a, const struct agent_request *rq, struct agent_reply *rp) {
  rp->status = 200;
  rp->json = json_pack("{s:s, s:I, s:s, s:s}", "status", "ok", "gpus", (json_int_t)a->n, "backend",
                       pflex_gpu_backend_name(a->gpu), "version", PFLEX_VERSION);
}

static json_t *watts_or_null(const struct pflex_gpu_reading *r, unsigned bit, unsigned mw) {
  return (r->valid & bit) ? json_real(mw / 1000.0) : json_null();
}

static json_t *gpu_json(struct agent *a, unsigned i, double now) {
  const struct pflex_gpu_reading *r = &a->samp[i].last;
  static const struct pflex_gpu_reading none = {0};
  if (!a->samp[i].have_last) r = &none;
  const struct agent_job *job = agent_jobs_of_gpu(&a->jobs, i);
  double left = agent_lease_left(&a->g[i].lease, now);
  json_t *o = json_pack("{s:I, s:s}", "index", (json_int_t)i, "uuid", a->g[i].info.uuid);
  json_object_set_new(o, "power_w", watts_or_null(r, PFLEX_GPU_POWER, r->power_mw));
  json_object_set_new(o, "limit_w", watts_or_null(r, PFLEX_GPU_LIMIT, r->limit_mw));
  json_object_set_new(o, "enforced_limit_w",
                      watts_or_null(r, PFLEX_GPU_ENFORCED, r->enforced_limit_mw));
  json_object_set_new(o, "default_limit_w",
                      watts_or_null(r, PFLEX_GPU_DEFAULT_LIMIT, r->default_limit_mw));
  json_object_set_new(o, "min_limit_w", watts_or_null(r, PFLEX_GPU_CONSTRAINTS, r->min_limit_mw));
  json_object_set_new(o, "max_limit_w", watts_or_null(r, PFLEX_GPU_CONSTRAINTS, r->max_limit_mw));
  json_object_set_new(o, "energy_j",
                      (r->valid & PFLEX_GPU_ENERGY) ? json_real((double)r->energy_mj / 1000.0)
                                                    : json_null());
  json_object_set_new(o, "job", job ? json_string(job->id) : json_null());
  json_object_set_new(o, "lease_s_left", left >= 0 ? json_real(left) : json_null());
  json_object_set_new(o, "lease_state", json_string(agent_lease_state_name(a->g[i].lease.state)));
  return o;
}

static void h_gpus(struct agent *a, const struct agent_request *rq, struct agent_reply *rp) {
  json_t *gpus = json_array();
  double now = agent_now();
  for (unsigned i = 0; i < a->n; i++)
    json_array_append_new(gpus, gpu_json(a, i, now));
  rp->status = 200;
  rp->json = json_pack("{s:o}", "gpus", gpus);
}

static void h_caps_put(struct agent *a, const struct agent_request *rq, struct agent_reply *rp) {
  struct agent_caps_req r;
  struct agent_error e;
  if (agent_caps_parse(rq->body, rq->len, a->n, a->cfg.default_lease_s, a->cfg.max_lease_s, &r,
                       &e) ||
      agent_caps_put(a, &r, &rp->json, &e))
    return reply_body_error(rp, &e);
  rp->status = 200;
}

static void h_caps_delete(struct agent *a, const struct agent_request *rq, struct agent_reply *rp) {
  struct agent_error e;
  json_t *out = NULL;
  int err = agent_caps_release(a, ~(uint64_t)0, &out, &e);
  rp->status = err ? 500 : 200;
  rp->json = out;
  if (err) json_object_set_new(out, "error", json_string(e.message));
}

/* The job's class, weight and min_throughput; null where not given. */
static void add_meta(json_t *o, const struct agent_job_meta *m) {
  json_object_set_new(o, "class", m->class_name[0] ? json_string(m->class_name) : json_null());
  json_object_set_new(o, "weight", m->weight > 0 ? json_real(m->weight) : json_null());
  json_object_set_new(o, "min_throughput",
                      m->min_throughput >= 0 ? json_real(m->min_throughput) : json_null());
}

/* "telemetry" (a controller's model reads it) and the samples behind it. */
static void add_telemetry(json_t *o, const struct agent *a, uint64_t gpus, const char *id) {
  const struct agent_gpu_telemetry *t[AGENT_MAX_GPUS];
  size_t n = 0;
  for (unsigned i = 0; i < a->n; i++)
    if (gpus >> i & 1) t[n++] = &a->g[i].tel;
  unsigned long long samples = 0;
  json_t *tel = agent_telemetry_json(t, n, id, &samples);
  json_object_set_new(o, "telemetry", tel ? tel : json_null());
  json_object_set_new(o, "telemetry_samples", json_integer((json_int_t)samples));
}

static json_t *job_json(const struct agent *a, const struct agent_job *job) {
  json_t *gpus = json_array();
  uint64_t m = agent_job_gpus(&a->jobs, job);
  for (unsigned i = 0; i < a->n; i++)
    if (m >> i & 1) json_array_append_new(gpus, json_integer(i));
  const char *source = job->api_gpus && job->dir_gpus ? "api+mapping_dir"
                       : job->api_gpus                ? "api"
                                                      : "mapping_dir";
  const struct agent_tput_sample *s = agent_job_tput_last(job);
  json_t *o = json_pack("{s:s, s:o, s:s, s:o, s:o, s:I}", "id", job->id, "gpus", gpus, "source",
                        source, "throughput", s ? json_real(s->value) : json_null(),
                        "throughput_time", s ? json_real(s->time_s) : json_null(),
                        "throughput_samples", (json_int_t)job->tput_total);
  add_meta(o, &job->meta);
  add_telemetry(o, a, m, job->id);
  if (job->scrape_url[0]) {
    json_object_set_new(o, "metrics_url", json_string(job->scrape_url));
    json_object_set_new(o, "metric", json_string(job->scrape_metric));
    json_object_set_new(o, "scrape_failures", json_integer((json_int_t)job->scrape_failures));
  }
  return o;
}

static void h_jobs(struct agent *a, const struct agent_request *rq, struct agent_reply *rp) {
  json_t *jobs = json_array();
  for (size_t k = 0; k < a->jobs.n; k++)
    json_array_append_new(jobs, job_json(a, &a->jobs.v[k]));
  rp->status = 200;
  rp->json = json_pack("{s:o}", "jobs", jobs);
}

/* GET /v1/gpus and GET /v1/jobs in one reply: a controller reads every
 * node each round, and one request instead of two halves what the node (and
 * a host of many simulated agents) spends on HTTP. */
static void h_node(struct agent *a, const struct agent_request *rq, struct agent_reply *rp) {
  struct agent_reply g = {0}, j = {0};
  h_gpus(a, rq, &g);
  h_jobs(a, rq, &j);
  rp->status = 200;
  rp->json = json_pack("{s:O, s:O}", "gpus", json_object_get(g.json, "gpus"), "jobs",
                       json_object_get(j.json, "jobs"));
  json_decref(g.json);
  json_decref(j.json);
}

static bool job_id_ok(const struct agent_request *rq, struct agent_reply *rp) {
  if (agent_job_id_valid(rq->arg)) return true;
  agent_reply_error(rp, 400, "id", "the job id in the path must be 1-64 of A-Z a-z 0-9 _ + -");
  return false;
}

static void h_job_put(struct agent *a, const struct agent_request *rq, struct agent_reply *rp) {
  struct agent_job_req r;
  struct agent_error e;
  if (!job_id_ok(rq, rp)) return;
  if (agent_job_parse(rq->body, rq->len, a->n, &r, &e)) return reply_body_error(rp, &e);
  uint64_t m = 0;
  for (size_t k = 0; k < r.n; k++)
    m |= (uint64_t)1 << r.gpus[k];
  unsigned clash = 0;
  int err = agent_jobs_put(&a->jobs, rq->arg, m, &clash);
  if (err == -EBUSY) {
    char msg[160];
    snprintf(msg, sizeof msg, "GPU %u belongs to job '%s'", clash,
             agent_jobs_of_gpu(&a->jobs, clash)->id);
    return agent_reply_error(rp, 409, "gpus", msg);
  }
  if (err) return agent_reply_error(rp, 500, "", pflex_strerror(err));
  struct agent_job *job = agent_jobs_find(&a->jobs, rq->arg);
  job->meta = r.meta;
  if (strcmp(job->scrape_url, r.metrics_url) != 0 || strcmp(job->scrape_metric, r.metric) != 0) {
    snprintf(job->scrape_url, sizeof job->scrape_url, "%s", r.metrics_url);
    snprintf(job->scrape_metric, sizeof job->scrape_metric, "%s", r.metric);
    job->have_prev = false;
    job->next_scrape_s = 0;
  }
  rp->status = 200;
  rp->json = job_json(a, job);
}

static void h_job_delete(struct agent *a, const struct agent_request *rq, struct agent_reply *rp) {
  uint64_t gpus = 0;
  if (!job_id_ok(rq, rp)) return;
  if (agent_jobs_delete(&a->jobs, rq->arg, &gpus))
    return agent_reply_error(rp, 404, "id", "no such job on this node");
  struct agent_error e;
  json_t *out = NULL;
  int err = agent_caps_release_job(a, gpus, &out, &e);
  if (!out) return agent_reply_error(rp, e.status, e.field, e.message);
  json_object_set_new(out, "id", json_string(rq->arg));
  if (err) json_object_set_new(out, "error", json_string(e.message));
  rp->status = err ? 500 : 200;
  rp->json = out;
}

static void h_metrics(struct agent *a, const struct agent_request *rq, struct agent_reply *rp) {
  if (agent_metrics_render(a, &rp->text, &rp->text_len))
    return agent_reply_error(rp, 500, "", "out of memory");
  rp->status = 200;
  rp->content_type = "text/plain; version=0.0.4; charset=utf-8";
}

static const struct agent_route routes[] = {
    {"GET", "/v1/health", false, false, h_health},
    {"GET", "/v1/gpus", false, false, h_gpus},
    {"PUT", "/v1/caps", false, true, h_caps_put},
    {"DELETE", "/v1/caps", false, true, h_caps_delete},
    {"GET", "/v1/jobs", false, false, h_jobs},
    {"GET", "/v1/node", false, false, h_node},
    {"PUT", "/v1/jobs/", true, true, h_job_put},
    {"DELETE", "/v1/jobs/", true, true, h_job_delete},
    {"GET", "/metrics", false, false, h_metrics},
};

static bool path_matches(const struct agent_route *r, const char *path, const char **ret_arg) {
  size_t n = strlen(r->path);
  if (r->prefix ? strncmp(path, r->path, n) != 0 : strcmp(path, r->path) != 0) return false;
  *ret_arg = r->prefix ? path + n : "";
  return true;
}

enum agent_route_match agent_route_find(const char *method, const char *path,
                                        const struct agent_route **ret, const char **ret_arg,
                                        char *allow, size_t allowlen) {
  enum agent_route_match m = AGENT_ROUTE_NO_PATH;
  allow[0] = '\0';
  for (size_t k = 0; k < sizeof routes / sizeof routes[0]; k++) {
    const char *arg;
    if (!path_matches(&routes[k], path, &arg)) continue;
    if (strcmp(routes[k].method, method) == 0) {
      *ret = &routes[k];
      *ret_arg = arg;
      return AGENT_ROUTE_FOUND;
    }
    m = AGENT_ROUTE_NO_METHOD;
    size_t used = strlen(allow);
    snprintf(allow + used, allowlen - used, "%s%s", used ? ", " : "", routes[k].method);
  }
  return m;
}
