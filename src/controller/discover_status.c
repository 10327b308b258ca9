/* What the discovery shows: the "discovery" object of GET /v1/status and
 * its lines in /metrics (discover_slurm.h).
 *
 * The two sources of a job: Slurm says which jobs run on which nodes;
 * pflexd (told by the SPANK plugin's prolog) says which GPUs are the job's
 * and with which class, weight and min_throughput. The allocation follows
 * pflexd. A running Slurm job with GPUs that no answering agent of its nodes
 * lists (its prolog did not register it) is reported as unregistered: its
 * GPUs count as GPUs without a job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/controller.h"
#include "controller/discover_slurm.h"

/* A job started this long ago whose prolog has not registered it is unregistered. */
#define UNREGISTERED_GRACE_S 30.0

struct url_ref {
  const char *url;
  const struct ctl_node *nd;
};

static int by_url(const void *a, const void *b) {
  return strcmp(((const struct url_ref *)a)->url, ((const struct url_ref *)b)->url);
}

static int by_node_name(const void *key, const void *elem) {
  return strcmp(key, ((const struct ctl_slurm_node *)elem)->name);
}

/* The agent of a Slurm node name, or NULL. refs: the agents sorted by URL. */
static const struct ctl_node *agent_of(const struct ctl_discovery *d, const struct url_ref *refs,
                                       size_t n, const char *name) {
  const struct ctl_slurm_node *sn =
      bsearch(name, d->nodes.v, d->nodes.n, sizeof *d->nodes.v, by_node_name);
  char url[CTL_URL_MAX];
  if (!sn || !ctl_discovery_node_url(d->cfg.agent_url_template, sn, url, sizeof url)) return NULL;
  struct url_ref key = {url, NULL};
  const struct url_ref *r = bsearch(&key, refs, n, sizeof *refs, by_url);
  return r ? r->nd : NULL;
}

/* Every running Slurm job: its nodes, whether pflexd registered it. */
static json_t *jobs_json(struct ctl_controller *c, double now, json_t *unregistered) {
  struct ctl_discovery *d = c->disc;
  struct url_ref *refs = calloc(c->nnodes + 1, sizeof *refs);
  json_t *a = json_array();
  if (!refs || !a) {
    free(refs);
    return a;
  }
  for (size_t i = 0; i < c->nnodes; i++)
    refs[i] = (struct url_ref){c->nodes[i].url, &c->nodes[i]};
  qsort(refs, c->nnodes, sizeof *refs, by_url);
  for (size_t i = 0; i < d->jobs.n; i++) {
    const struct ctl_slurm_job *j = &d->jobs.v[i];
    const struct ctl_job *cj = ctl_jobset_find(&c->jobs, j->id);
    bool registered = cj && cj->present, answered = true;
    json_t *names = json_array();
    for (size_t k = j->first; k < j->first + j->count; k++) {
      const struct ctl_node *nd = agent_of(d, refs, c->nnodes, d->jobs.names[k]);
      answered &= nd && nd->reachable;
      json_array_append_new(names, json_string(d->jobs.names[k]));
    }
    json_array_append_new(a, json_pack("{s:s, s:o, s:b, s:b}", "id", j->id, "nodes", names,
                                       "gpus", j->gpus, "registered", registered));
    if (j->gpus && !registered && answered && now - j->start_time > UNREGISTERED_GRACE_S)
      json_array_append_new(unregistered, json_string(j->id));
  }
  free(refs);
  return a;
}

static json_t *nodes_json(const struct ctl_discovery *d) {
  json_t *a = json_array();
  for (size_t i = 0; i < d->nodes.n; i++) {
    const struct ctl_slurm_node *sn = &d->nodes.v[i];
    char url[CTL_URL_MAX];
    bool agent = ctl_discovery_is_agent(sn) &&
                 ctl_discovery_node_url(d->cfg.agent_url_template, sn, url, sizeof url);
    json_array_append_new(a, json_pack("{s:s, s:s, s:b, s:o}", "name", sn->name, "state",
                                       sn->state, "drain", sn->drain, "agent",
                                       agent ? json_string(url) : json_null()));
  }
  return a;
}

static json_t *time_or_null(double t) {
  char buf[40];
  if (t <= 0) return json_null();
  ctl_format_iso8601(t, buf, sizeof buf);
  return json_string(buf);
}

json_t *ctl_discovery_json(struct ctl_controller *c, double now) {
  struct ctl_discovery *d = c->disc;
  if (!d) return json_pack("{s:s, s:s}", "source", "file", "agents_file", c->cfg.agents_file);
  const struct ctl_discovery_state *st = &d->seen;
  json_t *departed = json_array(), *unregistered = json_array();
  for (size_t i = 0; i < c->nnodes; i++)
    if (c->nodes[i].departed) json_array_append_new(departed, json_string(c->nodes[i].url));
  json_t *jobs = jobs_json(c, now, unregistered);
  d->unregistered = json_array_size(unregistered);
  json_t *o = json_pack("{s:s, s:b, s:o, s:o, s:o, s:f, s:I, s:I, s:I}", "source", "slurm", "ok",
                        st->ok, "error", st->ok ? json_null() : json_string(st->error), "last_ok",
                        time_or_null(st->last_ok), "last_poll", time_or_null(st->last_poll),
                        "last_poll_s", st->last_poll_s, "polls", (json_int_t)st->polls,
                        "failures", (json_int_t)st->failures, "agents", (json_int_t)d->want.n);
  if (o) {
    json_object_set_new(o, "age_s", st->last_ok > 0 ? json_real(now - st->last_ok) : json_null());
    json_object_set_new(o, "slurm_nodes", nodes_json(d));
    json_object_set_new(o, "departed", departed);
    json_object_set_new(o, "jobs", jobs);
    json_object_set_new(o, "unregistered", unregistered);
  } else {
    json_decref(departed);
    json_decref(jobs);
    json_decref(unregistered);
  }
  return o;
}

char *ctl_discovery_metrics(struct ctl_controller *c, double now) {
  struct ctl_discovery *d = c->disc;
  if (!d) return NULL;
  size_t departed = 0;
  for (size_t i = 0; i < c->nnodes; i++)
    departed += c->nodes[i].departed;
  const struct ctl_discovery_state *st = &d->seen;
  size_t size = 4096;
  char *s = malloc(size);
  if (!s) return NULL;
  int n = snprintf(
      s, size,
      "# HELP pflex_controller_discovery_ok 1 when the last discovery from Slurm succeeded.\n"
      "# TYPE pflex_controller_discovery_ok gauge\npflex_controller_discovery_ok %d\n"
      "# HELP pflex_controller_discovery_age_seconds Time since the last successful discovery.\n"
      "# TYPE pflex_controller_discovery_age_seconds gauge\n"
      "pflex_controller_discovery_age_seconds %.3f\n"
      "# HELP pflex_controller_discovery_duration_seconds Duration of the last discovery.\n"
      "# TYPE pflex_controller_discovery_duration_seconds gauge\n"
      "pflex_controller_discovery_duration_seconds %.3f\n"
      "# HELP pflex_controller_discovery_polls_total Discoveries from Slurm run.\n"
      "# TYPE pflex_controller_discovery_polls_total counter\n"
      "pflex_controller_discovery_polls_total %llu\n"
      "# HELP pflex_controller_discovery_failures_total Discoveries from Slurm that failed.\n"
      "# TYPE pflex_controller_discovery_failures_total counter\n"
      "pflex_controller_discovery_failures_total %llu\n"
      "# HELP pflex_controller_nodes_departed Agents no longer in Slurm, kept until restored.\n"
      "# TYPE pflex_controller_nodes_departed gauge\npflex_controller_nodes_departed %zu\n"
      "# HELP pflex_controller_slurm_jobs Running Slurm jobs.\n"
      "# TYPE pflex_controller_slurm_jobs gauge\npflex_controller_slurm_jobs %zu\n"
      "# HELP pflex_controller_slurm_jobs_unregistered Running Slurm jobs with GPUs that no "
      "agent lists.\n"
      "# TYPE pflex_controller_slurm_jobs_unregistered gauge\n"
      "pflex_controller_slurm_jobs_unregistered %zu\n",
      st->ok, st->last_ok > 0 ? now - st->last_ok : 0.0, st->last_poll_s,
      (unsigned long long)st->polls, (unsigned long long)st->failures, departed, d->jobs.n,
      d->unregistered);
  if (n < 0 || (size_t)n >= size) {
    free(s);
    return NULL;
  }
  return s;
}
