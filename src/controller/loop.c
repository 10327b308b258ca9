/* The controller's round (controller.h): read every agent, learn, decide,
 * push, check, record. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/controller.h"
#include "controller/log.h"
#include "controller/raises.h"

#define FORGET_JOB_S 120.0

double ctl_epoch_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

double ctl_mono_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* GET /v1/node of every agent (its GPUs and jobs in one reply), all in
 * flight together; an agent that does not have it (404: an older pflexd)
 * counts as not answering this round and is read by GET /v1/gpus and GET
 * /v1/jobs from the next. */
static void request_reads(struct ctl_controller *c) {
  size_t n = c->nnodes;
  for (size_t i = 0; i < n; i++) {
    bool split = c->nodes[i].split_reads;
    c->reqs[i] = (struct ctl_request){.method = "GET", .path = split ? "/v1/gpus" : "/v1/node"};
    c->reqs[n + i] = split ? (struct ctl_request){.method = "GET", .path = "/v1/jobs"}
                           : (struct ctl_request){0};
  }
}

static int read_agents(struct ctl_controller *c, double now) {
  size_t n = c->nnodes;
  request_reads(c);
  int rc = ctl_client_run(c->client, c->reqs, c->cfg.agent_timeout_s);
  if (rc < 0) return rc;
  for (size_t i = 0; i < n; i++) {
    struct ctl_request *g = &c->reqs[i], *j = c->nodes[i].split_reads ? &c->reqs[n + i] : g;
    if (g->status == 404 && !c->nodes[i].split_reads) {
      c->nodes[i].split_reads = true;
      ctl_log("note", "agent '%s' has no GET /v1/node: reading /v1/gpus and /v1/jobs",
              c->nodes[i].url);
    }
    char why[192] = "";
    bool ok = g->status == 200 && j->status == 200;
    if (!ok) {
      const struct ctl_request *bad = g->status == 200 ? j : g;
      if (bad->status)
        snprintf(why, sizeof why, "GET %s: HTTP %ld", bad->path, bad->status);
      else
        snprintf(why, sizeof why, "GET %s: %s", bad->path, bad->error);
    }
    bool was = c->nodes[i].reachable || !c->nodes[i].seen, first = !c->nodes[i].seen;
    ctl_node_update(&c->nodes[i], ok ? g->response : NULL, g->len, ok ? j->response : NULL, j->len,
                    why, now);
    if (first && c->nodes[i].seen && !c->in_event) {
      /* First answer: caps of a controller before us are where a lease holds
       * or has fallen back; a limit set without a lease (an operator's, a
       * job's) is not ours to lift. An agent that does not say (no
       * lease_state) is lifted wherever a limit is off its default. */
      struct ctl_node *nd = &c->nodes[i];
      nd->restore_pending = false;
      for (size_t k = 0; k < nd->ngpus; k++) {
        const struct ctl_gpu_state *gs = &nd->gpu[k];
        bool leased = strcmp(gs->lease_state, "held") == 0 ||
                      strcmp(gs->lease_state, "fallback") == 0 || gs->lease_s_left >= 0;
        bool unknown = !gs->lease_state[0] && fabs(gs->limit_w - gs->default_w) > 0.5;
        nd->restore_pending |= leased || unknown;
      }
    }
    if (!c->nodes[i].reachable) {
      c->agent_errors++;
      if (was) ctl_log("warning", "agent '%s': %s", c->nodes[i].url, c->nodes[i].error);
    } else if (!was) {
      ctl_log("note", "agent '%s' answers again", c->nodes[i].url);
    }
  }
  return 0;
}

static double measured_total(struct ctl_controller *c, size_t *ret_unreachable) {
  double s = 0, largest = 0;
  size_t un = 0;
  for (size_t i = 0; i < c->nnodes; i++) {
    struct ctl_node *nd = &c->nodes[i];
    if (nd->seen) {
      double hi = 0;
      for (size_t g = 0; g < nd->ngpus; g++)
        hi += isfinite(nd->gpu[g].max_w) ? nd->gpu[g].max_w : 0;
      largest = fmax(largest, hi);
    }
  }
  c->unseen_w = largest > 0 ? largest : 8 * 700.0;
  for (size_t i = 0; i < c->nnodes; i++) {
    s += ctl_node_bound_w(&c->nodes[i], c->unseen_w);
    un += !c->nodes[i].reachable;
  }
  *ret_unreachable = un;
  return s;
}

/* The uncapped baseline: the mean of the last rounds in which nothing was
 * capped and every agent answered. */
static void update_baseline(struct ctl_controller *c, double measured, size_t unreachable) {
  size_t capped = 0;
  for (size_t i = 0; i < c->nnodes; i++)
    capped += c->nodes[i].reachable ? ctl_node_capped(&c->nodes[i]) : 0;
  if (capped || unreachable) return;
  c->ring[c->ring_head] = measured;
  c->ring_head = (c->ring_head + 1) % CTL_BASELINE_RING;
  if (c->ring_n < CTL_BASELINE_RING) c->ring_n++;
  size_t k = (size_t)c->cfg.baseline_rounds;
  k = k < c->ring_n ? k : c->ring_n;
  double s = 0;
  for (size_t i = 0; i < k; i++)
    s += c->ring[(c->ring_head + CTL_BASELINE_RING - 1 - i) % CTL_BASELINE_RING];
  c->uncapped_w = s / (double)k;
}

/* Whether e starts with this round: begun, its baseline not yet taken. */
static bool starting(const struct ctl_event *e, double now) {
  return e->start <= now && e->baseline_w <= 0;
}

/* Events that have started get their baseline; returns the effective target. */
static bool event_target(struct ctl_controller *c, double now, double measured, double *ret_w,
                         int64_t *ret_id) {
  pthread_mutex_lock(&c->lock);
  for (size_t i = 0; i < c->nevents; i++) {
    struct ctl_event *e = &c->events[i];
    if (starting(e, now)) {
      e->baseline_w = c->uncapped_w > 0 ? c->uncapped_w : measured;
      if (ctl_store_event_update(c->store, e) < 0)
        ctl_log("error", "cannot record event %lld: %s", (long long)e->id,
                ctl_store_errmsg(c->store));
      ctl_log("note", "event %lld starts: target %.0f W (baseline %.0f W)", (long long)e->id,
              ctl_event_resolved_target(e), e->baseline_w);
    }
  }
  size_t gi = 0;
  bool any = ctl_events_target(c->events, c->nevents, now, ret_w, &gi);
  *ret_id = any ? c->events[gi].id : 0;
  /* Drop the events that are done. */
  size_t w = 0;
  for (size_t i = 0; i < c->nevents; i++)
    if (ctl_event_state_at(&c->events[i], now) < CTL_EVENT_DONE)
      c->events[w++] = c->events[i];
    else
      ctl_log("note", "event %lld done", (long long)c->events[i].id);
  c->nevents = w;
  pthread_mutex_unlock(&c->lock);
  return any;
}

/* Which GPUs of a node need a new cap: a cap lower than the one its lease
 * holds always (the budget counts on it), a higher one only past a small
 * step (a raise can wait: fewer limit changes, and the lower cap is safe),
 * and any GPU whose lease holds a fallback above this round's (a stale
 * fallback could sum above the target). The others are renewed by the
 * request itself (pflexd renews every lease of the node). */
static size_t changed_gpus(struct ctl_node *nd, unsigned *idx, double *watts) {
  size_t k = 0;
  for (size_t g = 0; g < nd->ngpus; g++) {
    double held = nd->has_acked ? nd->acked_w[g] : 0;
    double want = nd->cap_w[g];
    bool raise_small = held > 0 && want > held && want - held < ctl_smallest_raise_w(held);
    if (raise_small) nd->cap_w[g] = want = held;
    bool stale_fb = !(nd->fb_sent_w[g] > 0) || nd->fb_sent_w[g] > nd->fallback_w;
    bool limit_moved = fabs(nd->gpu[g].limit_w - held) > 0.5; /* someone else changed it */
    nd->sent[g] = held <= 0 || want != held || stale_fb || limit_moved;
    if (nd->sent[g]) {
      idx[k] = nd->gpu[g].index;
      watts[k] = want;
      k++;
    }
  }
  return k;
}

/* PUT /v1/caps to every reachable node whose caps changed or whose leases
 * are half run out (a PUT renews every lease of its node: renewing each
 * round would double the agents' work, a lease-file write each, for
 * nothing); returns the nodes that acknowledged or still hold. */
static size_t push_caps(struct ctl_controller *c) {
  size_t n = c->nnodes, acked = 0;
  double lease = fmax(1.0, ceil(c->cfg.lease_rounds * c->cfg.round_s)), now = ctl_mono_now();
  for (size_t i = 0; i < 2 * n; i++)
    c->reqs[i] = (struct ctl_request){0};
  for (size_t i = 0; i < n; i++) {
    struct ctl_node *nd = &c->nodes[i];
    free(c->bodies[i]);
    c->bodies[i] = NULL;
    if (!nd->reachable || !nd->ngpus) continue;
    unsigned idx[CTL_MAX_NODE_GPUS];
    double watts[CTL_MAX_NODE_GPUS];
    size_t k = changed_gpus(nd, idx, watts);
    if (k == 0 && nd->has_acked && now - nd->renewed_s < lease / 2) {
      acked++; /* its leases hold what this round decided */
      continue;
    }
    c->bodies[i] = ctl_caps_body(idx, watts, k, lease, nd->fallback_w);
    if (c->bodies[i])
      c->reqs[i] = (struct ctl_request){.method = "PUT", .path = "/v1/caps", .body = c->bodies[i]};
  }
  if (ctl_client_run(c->client, c->reqs, c->cfg.agent_timeout_s) < 0) return 0;
  for (size_t i = 0; i < n; i++) {
    struct ctl_node *nd = &c->nodes[i];
    if (!c->reqs[i].method) continue;
    if (c->reqs[i].status == 200) {
      for (size_t g = 0; g < nd->ngpus; g++)
        if (nd->sent[g]) nd->fb_sent_w[g] = nd->fallback_w;
      memcpy(nd->acked_w, nd->cap_w, sizeof nd->acked_w);
      nd->has_acked = true;
      nd->renewed_s = now;
      nd->restore_pending = true;
      acked++;
    } else {
      c->agent_errors++;
      ctl_log("warning", "agent '%s': PUT /v1/caps: %s", nd->url,
              c->reqs[i].status ? "refused" : c->reqs[i].error);
      if (c->reqs[i].status)
        ctl_log("warning", "agent '%s': HTTP %ld: %.200s", nd->url, c->reqs[i].status,
                c->reqs[i].response);
    }
  }
  return acked;
}

/* DELETE /v1/caps wherever our caps may still be. Returns nodes still pending. */
static size_t lift_caps(struct ctl_controller *c) {
  size_t n = c->nnodes, pending = 0, asked = 0;
  for (size_t i = 0; i < 2 * n; i++)
    c->reqs[i] = (struct ctl_request){0};
  for (size_t i = 0; i < n; i++)
    if (c->nodes[i].restore_pending && c->nodes[i].reachable) {
      c->reqs[i] = (struct ctl_request){.method = "DELETE", .path = "/v1/caps"};
      asked++;
    }
  if (asked && ctl_client_run(c->client, c->reqs, c->cfg.agent_timeout_s) < 0) return asked;
  for (size_t i = 0; i < n; i++) {
    struct ctl_node *nd = &c->nodes[i];
    if (c->reqs[i].method && c->reqs[i].status == 200) {
      nd->restore_pending = false;
      nd->has_acked = false;
      memset(nd->fb_sent_w, 0, sizeof nd->fb_sent_w);
    }
    pending += nd->restore_pending;
  }
  return pending;
}

static void record(struct ctl_controller *c, double now, bool has_target, double target,
                   double budget, double measured, size_t unreachable, double round_ms) {
  struct ctl_round_row r = {.t = now,
                            .event_id = has_target ? c->event_id : 0,
                            .target_w = has_target ? target : 0,
                            .budget_w = has_target ? budget : 0,
                            .measured_w = measured,
                            .offset_w = c->fb.offset_w,
                            .caps_w = has_target ? c->last_plan.caps_w : 0,
                            .compliant = has_target ? measured <= target * 1.01 : -1,
                            .nodes = (int)c->nnodes,
                            .unreachable = (int)unreachable,
                            .jobs = (int)c->jobs.n,
                            .alloc_ms = has_target ? c->last_plan.alloc_ms : 0,
                            .round_ms = round_ms};
  struct ctl_alloc_row *a = has_target ? calloc(c->jobs.n ? c->jobs.n : 1, sizeof *a) : NULL;
  size_t na = 0;
  double tput = 0, tput_un = 0;
  for (size_t i = 0; i < c->jobs.n; i++) {
    const struct ctl_job *j = &c->jobs.v[i];
    if (!j->present) continue;
    if (j->has_tput) {
      tput += j->tput;
      tput_un += j->t_max > 0 ? j->t_max : j->tput;
    }
    if (a)
      a[na++] = (struct ctl_alloc_row){
          j->id,        j->gpus,  j->power_w,           j->cap_w, j->has_tput ? j->tput : NAN,
          j->pred_tput, j->t_max, ctl_job_confidence(j),  j->cls ? j->cls->name : NULL};
  }
  r.tput = tput;
  r.tput_uncapped = tput_un;
  struct ctl_resume rs = {c->fb.offset_w, c->uncapped_w, now, c->rounds};
  struct ctl_learnt_row *l = calloc(c->jobs.n ? c->jobs.n : 1, sizeof *l);
  struct ctl_round_write w = {.round = &r, .alloc = a, .nalloc = na, .resume = &rs};
  if (l) {
    w.learnt = l;
    w.nlearnt = ctl_jobset_learnt(&c->jobs, l, c->jobs.n);
    w.gone = (const char(*)[CTL_JOB_ID_MAX])c->jobs.gone;
    w.ngone = c->jobs.ngone;
  }
  pthread_mutex_lock(&c->lock);
  int rc = ctl_store_round(c->store, &w);
  if (rc < 0)
    ctl_log("error", "cannot record round %lld: %s", (long long)c->rounds,
            ctl_store_errmsg(c->store));
  pthread_mutex_unlock(&c->lock);
  if (rc == 0 && l) ctl_jobset_learnt_saved(&c->jobs); /* else all again next round */
  free(a);
  free(l);
}

/* The event part of a round: budget, plan, push. */
/* Logs when the jobs' floors stop fitting (scaled down together) and when
 * they fit again; the status and metrics carry floor_scale every round. */
static void say_floors(const struct ctl_controller *c, const struct ctl_plan_summary *s,
                       double target) {
  bool short_now = !s->infeasible && s->floor_scale < 1;
  bool short_before = !c->last_plan.infeasible && c->last_plan.floor_scale < 1 &&
                      c->last_plan.jobs > 0;
  if (short_now && !short_before)
    ctl_log("warning",
            "target %.0f W: the jobs' throughput floors do not all fit; every floor is held at "
            "%.1f%% of itself (a 99%% floor at %.1f%%)",
            target, 100 * s->floor_scale, 99 * s->floor_scale);
  else if (!short_now && short_before && !s->infeasible)
    ctl_log("info", "target %.0f W: every job's throughput floor fits again", target);
}

static void hold_target(struct ctl_controller *c, double now, double target, double measured,
                        double *ret_budget) {
  if (!c->in_event) {
    c->in_event = true;
    c->event_t0 = now;
    c->caps_acked_at = 0;
    ctl_feedback_start(&c->fb, target);
  }
  double budget = ctl_feedback_budget(&c->fb, target);
  if (isfinite(c->caps_in_force_w)) { /* a reading under caps of ours: the feedback acts */
    ctl_feedback_reserve(&c->fb, target, c->last_plan.rise_w);
    budget = ctl_feedback_step(&c->fb, target, measured, c->caps_in_force_w,
                               c->last_plan.infeasible ? CTL_FB_AT_BOTTOM
                               : c->saturated          ? CTL_FB_AT_TOP
                                                       : CTL_FB_FREE);
  }
  struct ctl_plan_summary s;
  if (ctl_plan(c->nodes, c->nnodes, &c->jobs, &c->cfg, budget, target, c->unseen_w, &s) < 0) {
    ctl_log("error", "round %lld: out of memory in the allocation", (long long)c->rounds);
    *ret_budget = budget;
    return;
  }
  if (s.infeasible && !c->last_plan.infeasible)
    ctl_log("warning",
            "target %.0f W cannot be held: the jobs' floors or the cluster's least (%.0f W: "
            "GPUs of jobs at their least limits, idle GPUs at their draw) are above it; every "
            "job at its least",
            target, s.least_w);
  say_floors(c, &s, target);
  size_t reachable = 0;
  for (size_t i = 0; i < c->nnodes; i++)
    reachable += c->nodes[i].reachable && c->nodes[i].ngpus;
  s.caps_w -= ctl_limit_raises(c->nodes, c->nnodes, &c->jobs, target, measured);
  size_t acked = push_caps(c);
  if (reachable && acked == reachable && !c->caps_acked_at) c->caps_acked_at = ctl_epoch_now();
  c->caps_in_force_w = s.caps_w;
  c->saturated = s.saturated;
  c->last_plan = s;
  *ret_budget = budget;
}

/* Whether an event starts with this round (its baseline not yet taken). */
static bool event_starts(struct ctl_controller *c, double now) {
  bool starts = false;
  pthread_mutex_lock(&c->lock);
  for (size_t i = 0; i < c->nevents && !starts; i++)
    starts = starting(&c->events[i], now);
  pthread_mutex_unlock(&c->lock);
  return starts;
}

/* One node listed twice counts once (ctl_nodes_mark_duplicates); the log
 * says so once while it lasts. */
static void leave_out_duplicates(struct ctl_controller *c) {
  if (ctl_nodes_mark_duplicates(c->nodes, c->nnodes, &c->uuids_sig) < 0) return;
  for (size_t i = 0; i < c->nnodes; i++) {
    struct ctl_node *nd = &c->nodes[i];
    if (nd->duplicate && !nd->duplicate_said)
      ctl_log("error",
              "agent '%s' reports the GPUs of agent '%s': one node listed twice (two spellings "
              "of one address? or simulated agents with one seed: give each pflexd --sim-job "
              "seed=N); its readings are left out while it does: remove it from the agents file",
              nd->url, c->nodes[nd->duplicate_of].url);
    nd->duplicate_said = nd->duplicate;
  }
}

/* Reads every agent and learns from what it says. */
static int read_and_learn(struct ctl_controller *c, double now) {
  int rc = read_agents(c, now);
  if (rc < 0) return rc;
  leave_out_duplicates(c);
  c->read_mono = ctl_mono_now();
  rc = ctl_jobset_gather(&c->jobs, c->nodes, c->nnodes, now, FORGET_JOB_S);
  if (rc < 0) return rc;
  ctl_jobset_learn(&c->jobs, &c->cfg);
  return 0;
}

int ctl_controller_round(struct ctl_controller *c, double now) {
  double t0 = ctl_mono_now();
  if (c->disc) ctl_discovery_apply(c); /* between rounds: a new inventory from Slurm */
  /* An event that starts now is acted on at once from the readings in hand,
   * when they are less than a round old, instead of after another read of
   * every agent: its caps go out one read earlier (at 1,000 nodes a read
   * is most of a round). The next round reads as usual. Those readings were
   * already learnt from; they are not learnt from twice. */
  bool in_hand = !c->in_event && c->read_mono > 0 && t0 - c->read_mono < c->cfg.round_s &&
                 event_starts(c, now);
  int rc = in_hand ? 0 : read_and_learn(c, now);
  if (rc < 0) return rc;
  size_t unreachable;
  double measured = measured_total(c, &unreachable);
  double target = 0, budget = 0;
  int64_t id = 0;
  bool has_target = event_target(c, now, measured, &target, &id);
  c->event_id = id;
  if (has_target) {
    hold_target(c, now, target, measured, &budget);
  } else {
    if (c->in_event) {
      ctl_log("note", "no event active: lifting the caps");
      ctl_feedback_reset(&c->fb);
    }
    c->in_event = false;
    c->caps_in_force_w = INFINITY;
    c->saturated = false;
    (void)ctl_jobset_raises_in_flight(&c->jobs); /* none are, once lifted */
    memset(&c->last_plan, 0, sizeof c->last_plan);
    lift_caps(c);
    update_baseline(c, measured, unreachable);
  }
  c->rounds++;
  c->last_round_ms = (ctl_mono_now() - t0) * 1e3;
  c->last_target_w = has_target ? target : 0;
  c->last_measured_w = measured;
  c->last_budget_w = budget;
  record(c, now, has_target, target, budget, measured, unreachable, c->last_round_ms);
  ctl_controller_snapshot(c, now, measured, target, has_target);
  return 0;
}

void ctl_controller_wake(struct ctl_controller *c) {
  pthread_mutex_lock(&c->lock);
  c->woken = true;
  pthread_cond_signal(&c->wake);
  pthread_mutex_unlock(&c->lock);
}

/* Sleeps until the next round is due or the round is woken. */
static void wait_round(struct ctl_controller *c, double due_mono) {
  double wait = due_mono - ctl_mono_now();
  if (wait <= 0) return;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  double abs_s = ts.tv_sec + ts.tv_nsec / 1e9 + wait;
  ts.tv_sec = (time_t)abs_s;
  ts.tv_nsec = (long)((abs_s - (double)ts.tv_sec) * 1e9);
  pthread_mutex_lock(&c->lock);
  while (!c->woken && pthread_cond_timedwait(&c->wake, &c->lock, &ts) == 0)
    ;
  c->woken = false;
  pthread_mutex_unlock(&c->lock);
}

int ctl_controller_run(struct ctl_controller *c, volatile int *stop) {
  double next = ctl_mono_now();
  while (!*stop && (c->cfg.max_rounds == 0 || c->rounds < c->cfg.max_rounds)) {
    if (c->reload && *c->reload) {
      *c->reload = 0;
      ctl_controller_reload(c);
    }
    int rc = ctl_controller_round(c, ctl_epoch_now());
    if (rc < 0) ctl_log("error", "round %lld: %s", (long long)c->rounds, strerror(-rc));
    next += c->cfg.round_s;
    double now = ctl_mono_now();
    if (next < now) next = now; /* a round that overran: the next one starts at once, no burst */
    wait_round(c, next);
  }
  if (c->in_event) {
    ctl_log("note", "stopping during an event: the agents keep the caps until their leases end, "
                    "then their fallbacks");
    return 0;
  }
  size_t pending = lift_caps(c);
  if (pending)
    ctl_log("warning",
            "%zu agents did not confirm that no cap of ours is left (unreachable or refused; "
            "whatever caps a controller set there end with their leases)",
            pending);
  return 0;
}
