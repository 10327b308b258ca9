/* The snapshot the API serves: GET /v1/status (JSON) and GET /metrics
 * (Prometheus text), built once per round (controller.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "controller/controller.h"

static json_t *num_or_null(double v) {
  return isfinite(v) ? json_real(v) : json_null();
}

static json_t *job_json(const struct ctl_job *j) {
  json_t *o = json_pack(
      "{s:s, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:f, s:I}", "id", j->id, "gpus", j->gpus, "power_w",
      json_real(j->power_w), "cap_w", j->cap_w > 0 ? json_real(j->cap_w) : json_null(), "alloc_w",
      j->alloc_w > 0 ? json_real(j->alloc_w) : json_null(), "throughput",
      j->has_tput ? json_real(j->tput) : json_null(), "throughput_uncapped",
      j->t_max > 0 ? json_real(j->t_max) : json_null(), "predicted_throughput",
      j->pred_tput > 0 ? num_or_null(j->pred_tput) : json_null(), "curve_confidence",
      ctl_job_confidence(j), "observations", (json_int_t)j->observations);
  if (o) {
    json_object_set_new(o, "class", j->cls ? json_string(j->cls->name) : json_null());
    json_object_set_new(o, "requested_class",
                        j->meta.class_name[0] ? json_string(j->meta.class_name) : json_null());
    json_object_set_new(o, "weight", json_real(j->weight > 0 ? j->weight : 1.0));
    json_object_set_new(o, "floor", json_real(j->floor_frac));
    json_object_set_new(o, "complete", json_boolean(j->complete));
    json_object_set_new(o, "prior_pfi", j->prior ? json_real(j->prior_pfi) : json_null());
    json_object_set_new(o, "pfi_from", json_string(j->model_pfi > 0 ? "telemetry" : "prior"));
  }
  return o;
}

static json_t *status_json(struct ctl_controller *c, double now, double measured, double target,
                           bool has_target) {
  char t[40], acked[40];
  ctl_format_iso8601(now, t, sizeof t);
  json_t *jobs = json_array(), *down = json_array();
  for (size_t i = 0; i < c->jobs.n; i++)
    if (c->jobs.v[i].present) json_array_append_new(jobs, job_json(&c->jobs.v[i]));
  size_t unreachable = 0;
  for (size_t i = 0; i < c->nnodes; i++)
    if (!c->nodes[i].reachable) {
      unreachable++;
      json_array_append_new(
          down, json_pack("{s:s, s:s}", "url", c->nodes[i].url, "error", c->nodes[i].error));
    }
  json_t *o = json_pack(
      "{s:s, s:I, s:o, s:f, s:o, s:o, s:o, s:I, s:I, s:o, s:f, s:f, s:f, s:o, s:o}", "time", t,
      "round",
      (json_int_t)c->rounds, "target_w", has_target ? json_real(target) : json_null(), "measured_w",
      measured, "compliant", has_target ? json_boolean(measured <= target * 1.01) : json_null(),
      "budget_w", has_target ? json_real(c->last_budget_w) : json_null(), "event",
      c->event_id ? json_integer(c->event_id) : json_null(), "nodes", (json_int_t)c->nnodes,
      "unreachable", (json_int_t)unreachable, "unreachable_nodes", down, "round_ms",
      c->last_round_ms, "alloc_ms", c->last_plan.alloc_ms, "alloc_cpu_ms",
      c->last_plan.alloc_cpu_ms, "uncapped_w",
      c->uncapped_w > 0 ? json_real(c->uncapped_w) : json_null(), "jobs", jobs);
  if (!o) return NULL;
  json_t *dup = json_array();
  for (size_t i = 0; i < c->nnodes; i++)
    if (c->nodes[i].duplicate)
      json_array_append_new(dup, json_pack("{s:s, s:s}", "url", c->nodes[i].url, "same_as",
                                           c->nodes[c->nodes[i].duplicate_of].url));
  json_object_set_new(o, "duplicate_nodes", dup);
  json_object_set_new(o, "feedback_offset_w", json_real(c->fb.offset_w));
  json_object_set_new(o, "outage_rise_w",
                      has_target ? json_real(c->last_plan.rise_w) : json_null());
  json_object_set_new(o, "outage_reserve_w", json_real(c->fb.reserve_w));
  json_object_set_new(o, "caps_w", has_target ? json_real(c->last_plan.caps_w) : json_null());
  if (c->in_event && c->caps_acked_at > 0) {
    ctl_format_iso8601(c->caps_acked_at, acked, sizeof acked);
    json_object_set_new(o, "caps_acked_at", json_string(acked));
    json_object_set_new(o, "caps_acked_epoch", json_real(c->caps_acked_at));
  } else {
    json_object_set_new(o, "caps_acked_at", json_null());
  }
  json_object_set_new(o, "infeasible", json_boolean(has_target && c->last_plan.infeasible));
  json_object_set_new(o, "floor_scale", has_target ? json_real(c->last_plan.floor_scale) : json_null());
  json_object_set_new(o, "discovery", ctl_discovery_json(c, now));
  return o;
}

/* A growing text buffer for the metrics. */
struct text {
  char *s;
  size_t len, cap;
};

__attribute__((format(printf, 2, 3))) static void put(struct text *t, const char *fmt, ...) {
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    int n = vsnprintf(t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (t->s && t->len + (size_t)n < t->cap) {
      t->len += (size_t)n;
      return;
    }
    size_t nc = t->cap ? t->cap * 2 : 8192;
    while (nc < t->len + (size_t)n + 1)
      nc *= 2;
    char *p = realloc(t->s, nc);
    if (!p) return;
    t->s = p;
    t->cap = nc;
  }
}

static void gauge(struct text *t, const char *name, const char *help, double v) {
  put(t, "# HELP %s %s\n# TYPE %s gauge\n%s %.17g\n", name, help, name, name, v);
}

static void job_metrics(struct text *t, struct ctl_controller *c) {
  static const struct {
    const char *name, *help;
    int what;
  } series[] = {
      {"pflex_controller_job_power_watts", "Measured power of the job's GPUs.", 0},
      {"pflex_controller_job_cap_watts", "Per-GPU cap decided for the job (0: none).", 1},
      {"pflex_controller_job_throughput", "Last throughput the job reported.", 2},
      {"pflex_controller_job_curve_confidence", "How far observations pinned the job's curve.", 3},
  };
  for (size_t s = 0; s < sizeof series / sizeof series[0]; s++) {
    put(t, "# HELP %s %s\n# TYPE %s gauge\n", series[s].name, series[s].help, series[s].name);
    for (size_t i = 0; i < c->jobs.n; i++) {
      const struct ctl_job *j = &c->jobs.v[i];
      if (!j->present || (series[s].what == 2 && !j->has_tput)) continue;
      double v = series[s].what == 0   ? j->power_w
                 : series[s].what == 1 ? j->cap_w
                 : series[s].what == 2 ? j->tput
                                       : ctl_job_confidence(j);
      put(t, "%s{job=\"%s\"} %.17g\n", series[s].name, j->id, v);
    }
  }
}

/* The events in state st at now (the caller holds the lock). */
static size_t events_in(const struct ctl_controller *c, double now, enum ctl_event_state st) {
  size_t n = 0;
  for (size_t i = 0; i < c->nevents; i++)
    n += ctl_event_state_at(&c->events[i], now) == st;
  return n;
}

static char *metrics_text(struct ctl_controller *c, double now, double measured, double target,
                          bool has_target, size_t unreachable) {
  struct text t = {0};
  gauge(&t, "pflex_controller_target_watts", "Effective power target (0: no event).",
        has_target ? target : 0);
  gauge(&t, "pflex_controller_measured_watts",
        "Measured cluster power (unreachable nodes at their bound).", measured);
  gauge(&t, "pflex_controller_budget_watts", "Budget handed to the allocation.",
        has_target ? c->last_budget_w : 0);
  gauge(&t, "pflex_controller_feedback_offset_watts", "Feedback term added to the target.",
        c->fb.offset_w);
  gauge(&t, "pflex_controller_outage_reserve_watts",
        "Setpoint lowered by this so that what can rise under the caps fits if the "
        "controller stops.",
        c->fb.reserve_w);
  gauge(&t, "pflex_controller_compliant", "1 when at or under target + 1% (or no event).",
        !has_target || measured <= target * 1.01);
  gauge(&t, "pflex_controller_events_active", "Events in force now (their ramps included).",
        (double)events_in(c, now, CTL_EVENT_ACTIVE));
  gauge(&t, "pflex_controller_events_scheduled", "Events whose start is still to come.",
        (double)events_in(c, now, CTL_EVENT_SCHEDULED));
  gauge(&t, "pflex_controller_floor_scale",
        "Share of every job's throughput floor held (1: all floors fit, or no event).",
        has_target ? c->last_plan.floor_scale : 1);
  gauge(&t, "pflex_controller_nodes", "Agents in the inventory.", (double)c->nnodes);
  gauge(&t, "pflex_controller_nodes_unreachable", "Agents that did not answer this round.",
        (double)unreachable);
  gauge(&t, "pflex_controller_jobs", "Jobs seen this round.", (double)c->jobs.n);
  gauge(&t, "pflex_controller_round_duration_seconds", "Duration of the last round.",
        c->last_round_ms / 1e3);
  gauge(&t, "pflex_controller_allocation_duration_seconds", "Time of the last allocation.",
        c->last_plan.alloc_ms / 1e3);
  gauge(&t, "pflex_controller_allocation_cpu_seconds",
        "CPU time of the last allocation (its duration less any preemption).",
        c->last_plan.alloc_cpu_ms / 1e3);
  put(&t,
      "# HELP pflex_controller_rounds_total Rounds run.\n# TYPE pflex_controller_rounds_total "
      "counter\npflex_controller_rounds_total %lld\n",
      (long long)c->rounds);
  put(&t,
      "# HELP pflex_controller_agent_errors_total Failed agent requests.\n"
      "# TYPE pflex_controller_agent_errors_total counter\n"
      "pflex_controller_agent_errors_total %llu\n",
      c->agent_errors);
  put(&t,
      "# HELP pflex_controller_api_errors_total API requests answered with 4xx/5xx.\n"
      "# TYPE pflex_controller_api_errors_total counter\n"
      "pflex_controller_api_errors_total %llu\n",
      c->api_errors);
  job_metrics(&t, c);
  char *disc = ctl_discovery_metrics(c, ctl_epoch_now());
  if (disc) put(&t, "%s", disc);
  free(disc);
  return t.s;
}

void ctl_controller_snapshot(struct ctl_controller *c, double now, double measured_w,
                             double target_w, bool has_target) {
  json_t *o = status_json(c, now, measured_w, target_w, has_target);
  char *js = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  size_t unreachable = 0;
  for (size_t i = 0; i < c->nnodes; i++)
    unreachable += !c->nodes[i].reachable;
  pthread_mutex_lock(&c->lock);
  c->rounds_done = c->rounds;
  char *mt = metrics_text(c, now, measured_w, target_w, has_target, unreachable);
  if (js) {
    free(c->status_json);
    c->status_json = js;
  }
  if (mt) {
    free(c->metrics_text);
    c->metrics_text = mt;
  }
  pthread_mutex_unlock(&c->lock);
}
