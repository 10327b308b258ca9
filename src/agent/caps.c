/* Caps and leases applied to the GPUs (caps.h). The order of every change:
 * lease file first (durable), then the limits (all-or-nothing, restore
 * records first), then memory; on failure the lease file is put back. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/caps.h"
#include "agent/state.h"
#include "pflex/error.h"

double agent_real_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int agent_caps_save(struct agent *a, const struct agent_lease *v) {
  struct agent_state_entry e[AGENT_MAX_GPUS];
  for (unsigned i = 0; i < a->n; i++) {
    snprintf(e[i].uuid, sizeof e[i].uuid, "%s", a->g[i].info.uuid);
    e[i].index = i;
    e[i].lease = v[i];
  }
  return agent_state_save(a->state_path, pflex_gpu_backend_name(a->gpu), e, a->n, agent_now(),
                          agent_real_now());
}

uint64_t agent_caps_held(const struct agent *a) {
  uint64_t m = 0;
  for (unsigned i = 0; i < a->n; i++)
    if (a->g[i].lease.state != AGENT_LEASE_NONE) m |= (uint64_t)1 << i;
  return m;
}

static void current_leases(const struct agent *a, struct agent_lease *v) {
  for (unsigned i = 0; i < a->n; i++)
    v[i] = a->g[i].lease;
}

static void commit_leases(struct agent *a, const struct agent_lease *v) {
  for (unsigned i = 0; i < a->n; i++)
    a->g[i].lease = v[i];
}

/* Why a set of changes failed, as an API error: the GPU at position
 * `failed`, or the restore file itself (failed == n). */
static int apply_failure(struct agent *a, struct agent_error *e, const struct pflex_limit_change *c,
                         size_t n, size_t failed, const char *what, int err) {
  const char *detail = pflex_gpu_last_error(a->gpu);
  int status = err == -ERANGE ? 422 : err == -PFLEX_E_HELD || err == -PFLEX_E_LOCKED ? 409 : 503;
  bool left = false;
  for (size_t k = 0; k < n; k++)
    left |= c[k].left;
  a->c.limit_failures++;
  if (failed >= n)
    return agent_error_set(e, 500, "",
                           "cannot write the restore records in '%s': %s; nothing "
                           "applied",
                           pflex_restore_path(a->rs), pflex_strerror(err));
  char field[32];
  snprintf(field, sizeof field, "gpu %u", c[failed].index);
  return agent_error_set(e, status, field, "GPU %u: %s: %s%s%s%s%s", c[failed].index, what,
                         pflex_strerror(err), detail ? " (" : "", detail ? detail : "",
                         detail ? ")" : "",
                         left ? "; some GPUs could not be put back: 'pflex cap restore'" : "");
}

/* The per-GPU targets of a request (0: not asked); -EINVAL for a job that is
 * not on this node or a GPU asked twice (directly and through its job). */
static int expand(struct agent *a, const struct agent_caps_req *r, unsigned *mw, int *item,
                  struct agent_error *e) {
  for (unsigned i = 0; i < a->n; i++)
    mw[i] = 0, item[i] = -1;
  for (size_t k = 0; k < r->n; k++) {
    const struct agent_cap_item *it = &r->items[k];
    char field[64];
    snprintf(field, sizeof field, "caps[%zu].%s", k, it->by_job ? "job" : "gpu");
    uint64_t m = (uint64_t)1 << it->gpu;
    if (it->by_job) {
      struct agent_job *job = agent_jobs_find(&a->jobs, it->job);
      if (!job) return agent_error_set(e, 422, field, "no job '%s' on this node", it->job);
      m = agent_job_gpus(&a->jobs, job);
    }
    for (unsigned i = 0; i < a->n; i++) {
      if (!(m & ((uint64_t)1 << i))) continue;
      if (item[i] >= 0)
        return agent_error_set(e, 422, field, "GPU %u is also capped by caps[%d]", i, item[i]);
      mw[i] = it->mw;
      item[i] = (int)k;
    }
  }
  return 0;
}

static json_t *put_response(const struct agent_caps_req *r, const struct pflex_limit_change *c,
                            size_t n, unsigned renewed) {
  json_t *caps = json_array();
  for (size_t k = 0; k < n; k++)
    json_array_append_new(caps, json_pack("{s:I, s:f, s:f, s:f, s:b}", "gpu",
                                          (json_int_t)c[k].index, "requested_w", c[k].mw / 1000.0,
                                          "applied_w", c[k].applied_mw / 1000.0, "before_w",
                                          c[k].before_mw / 1000.0, "clamped", c[k].clamped));
  json_t *fb = r->fallback_default ? json_string("default")
                                   : json_pack("{s:f}", "watts", r->fallback_mw / 1000.0);
  return json_pack("{s:o, s:f, s:o, s:I}", "caps", caps, "lease_s", r->lease_s, "fallback", fb,
                   "renewed", (json_int_t)renewed);
}

/* The audit trail: a note when GPUs come under a cap (not on each renewal
 * or adjustment, which the metrics count), naming them, the watts, the
 * lease and the fallback. */
static void log_taken(const struct agent_lease *old,
                      const struct pflex_limit_change *c, size_t n,
                      const struct agent_caps_req *r) {
  char gpus[AGENT_MAX_GPUS * 16] = "";
  size_t len = 0, taken = 0;
  for (size_t k = 0; k < n; k++) {
    if (old[c[k].index].state == AGENT_LEASE_HELD) continue;
    int w = snprintf(gpus + len, sizeof gpus - len, "%s%u at %.0f W", taken ? ", " : "",
                     c[k].index, c[k].applied_mw / 1000.0);
    if (w > 0 && (size_t)w < sizeof gpus - len) len += (size_t)w;
    taken++;
  }
  if (!taken) return;
  char fb[32];
  snprintf(fb, sizeof fb, "%.0f W", r->fallback_mw / 1000.0);
  agent_log("note", "caps taken: GPU%s %s; lease %.3g s, then fallback %s", taken == 1 ? "" : "s",
            gpus, r->lease_s, r->fallback_default ? "to the default limit" : fb);
}

int agent_caps_put(struct agent *a, const struct agent_caps_req *r, json_t **ret,
                   struct agent_error *e) {
  unsigned mw[AGENT_MAX_GPUS];
  int item[AGENT_MAX_GPUS];
  struct pflex_limit_change c[AGENT_MAX_GPUS];
  struct agent_lease old[AGENT_MAX_GPUS], next[AGENT_MAX_GPUS];
  size_t n = 0, failed = 0;
  if (expand(a, r, mw, item, e)) return -EINVAL;
  for (unsigned i = 0; i < a->n; i++)
    if (item[i] >= 0) c[n++] = (struct pflex_limit_change){.index = i, .mw = mw[i]};
  int err = pflex_restore_apply_limits(a->rs, a->gpu, c, n, PFLEX_APPLY_CLAMP | PFLEX_APPLY_DRY_RUN,
                                       &failed);
  if (err) return apply_failure(a, e, c, n, failed, "cannot check its limit and range", err);
  double now = agent_now();
  current_leases(a, old);
  current_leases(a, next);
  unsigned renewed = 0;
  for (unsigned i = 0; i < a->n; i++)
    renewed += next[i].state == AGENT_LEASE_HELD && item[i] < 0;
  agent_lease_renew_all(next, a->n, now, r->lease_s);
  for (size_t k = 0; k < n; k++)
    agent_lease_grant(&next[c[k].index], c[k].applied_mw, now, r->lease_s, r->fallback_default,
                      r->fallback_mw);
  err = agent_caps_save(a, next);
  if (err)
    return agent_error_set(e, 500, "", "cannot write the lease state '%s': %s; nothing applied",
                           a->state_path, pflex_strerror(err));
  err = pflex_restore_apply_limits(a->rs, a->gpu, c, n, PFLEX_APPLY_CLAMP, &failed);
  if (err) {
    if (agent_caps_save(a, old))
      agent_log("error", "cannot put back the lease state '%s' after a failed cap", a->state_path);
    return apply_failure(a, e, c, n, failed, "cannot set the limit; nothing applied", err);
  }
  log_taken(old, c, n, r);
  commit_leases(a, next);
  *ret = put_response(r, c, n, renewed);
  return 0;
}

int agent_caps_restore_marked(struct agent *a, uint64_t mask, json_t *done, json_t *failed,
                              struct agent_error *e) {
  unsigned only[AGENT_MAX_GPUS];
  size_t nonly = 0;
  for (unsigned i = 0; i < a->n; i++)
    if ((mask >> i & 1) && a->g[i].lease.state == AGENT_LEASE_RESTORE) only[nonly++] = i;
  if (!nonly) return 0;
  struct pflex_restore_result *res = NULL;
  size_t nres = 0;
  int err = pflex_restore_apply(a->rs, a->gpu, only, nonly, 0, &res, &nres);
  if (err && !res)
    return agent_error_set(e, 500, "", "cannot read the restore records: %s", pflex_strerror(err));
  for (size_t k = 0; k < nonly; k++) /* GPUs without a record were never changed */
    a->g[only[k]].lease.state = AGENT_LEASE_NONE;
  int first = 0;
  for (size_t k = 0; k < nres; k++) {
    const struct pflex_restore_result *x = &res[k];
    if (!x->found) continue;
    if (x->err && !x->changed) {
      a->g[x->index].lease.state = AGENT_LEASE_RESTORE; /* retried later */
      a->c.limit_failures++;
      json_array_append_new(failed, json_pack("{s:I, s:s}", "gpu", (json_int_t)x->index, "error",
                                              pflex_strerror(x->err)));
      if (!first)
        first = x->err,
        agent_error_set(e, 500, "", "GPU %u: cannot restore: %s", x->index, pflex_strerror(x->err));
      continue;
    }
    json_t *o =
        json_pack("{s:I, s:f, s:f}", "gpu", (json_int_t)x->index, "was_w", x->was_mw / 1000.0,
                  "limit_w", (x->changed ? x->was_mw : x->record.original_mw) / 1000.0);
    /* A limit someone else set since is theirs now: left, and no longer ours. */
    if (x->changed) json_object_set_new(o, "note", json_string("changed by someone else: left"));
    json_array_append_new(done, o);
  }
  free(res);
  return first ? -EIO : 0;
}

int agent_caps_release(struct agent *a, uint64_t mask, json_t **ret, struct agent_error *e) {
  struct agent_lease next[AGENT_MAX_GPUS];
  current_leases(a, next);
  mask &= agent_caps_held(a);
  for (unsigned i = 0; i < a->n; i++)
    if (mask >> i & 1) next[i] = (struct agent_lease){.state = AGENT_LEASE_RESTORE};
  int err = mask ? agent_caps_save(a, next) : 0;
  if (err)
    return agent_error_set(e, 500, "", "cannot write the lease state '%s': %s; nothing restored",
                           a->state_path, pflex_strerror(err));
  commit_leases(a, next);
  json_t *done = json_array(), *failed = json_array();
  int rerr = agent_caps_restore_marked(a, mask, done, failed, e);
  current_leases(a, next);
  if (mask && (err = agent_caps_save(a, next)))
    agent_log("warning", "cannot update the lease state '%s': %s (a restart restores again)",
              a->state_path, pflex_strerror(err));
  if (mask)
    agent_log("note", "caps released: %zu GPU%s restored, %zu failed", json_array_size(done),
              json_array_size(done) == 1 ? "" : "s", json_array_size(failed));
  *ret = json_pack("{s:o, s:o}", "restored", done, "failed", failed);
  return rerr;
}

/* The GPUs of mask that a lease with a wattage fallback holds (HELD) or
 * has fallen back to (FALLBACK): an event is on, and the original limit
 * could push the cluster over its target. */
static uint64_t event_safe(const struct agent *a, uint64_t mask) {
  uint64_t m = 0;
  for (unsigned i = 0; i < a->n; i++) {
    const struct agent_lease *l = &a->g[i].lease;
    bool watts =
        (l->state == AGENT_LEASE_HELD && !l->fallback_default) || l->state == AGENT_LEASE_FALLBACK;
    if ((mask >> i & 1) && watts) m |= (uint64_t)1 << i;
  }
  return m;
}

/* Moves the HELD GPUs of mask to their fallback wattage now (lease file
 * first, then the limits all-or-nothing); FALLBACK ones stay where they are.
 * Appends {"gpu","limit_w"} of each to list. */
static int to_fallback(struct agent *a, uint64_t mask, json_t *list, struct agent_error *e) {
  struct agent_lease old[AGENT_MAX_GPUS], next[AGENT_MAX_GPUS];
  struct pflex_limit_change c[AGENT_MAX_GPUS];
  size_t n = 0, failed = 0;
  current_leases(a, old);
  current_leases(a, next);
  for (unsigned i = 0; i < a->n; i++)
    if ((mask >> i & 1) && next[i].state == AGENT_LEASE_HELD) {
      agent_lease_fall_back(&next[i]);
      c[n++] = (struct pflex_limit_change){.index = i, .mw = next[i].fallback_mw};
    }
  int err = n ? agent_caps_save(a, next) : 0;
  if (err)
    return agent_error_set(e, 500, "", "cannot write the lease state '%s': %s; nothing changed",
                           a->state_path, pflex_strerror(err));
  err = n ? pflex_restore_apply_limits(a->rs, a->gpu, c, n, PFLEX_APPLY_CLAMP, &failed) : 0;
  if (err) {
    if (agent_caps_save(a, old))
      agent_log("error", "cannot put back the lease state '%s' after a failed fallback",
                a->state_path);
    return apply_failure(a, e, c, n, failed, "cannot apply its fallback limit", err);
  }
  commit_leases(a, next);
  for (unsigned i = 0; i < a->n; i++)
    if (mask >> i & 1)
      json_array_append_new(list, json_pack("{s:I, s:f}", "gpu", (json_int_t)i, "limit_w",
                                            a->g[i].lease.fallback_mw / 1000.0));
  return 0;
}

int agent_caps_release_job(struct agent *a, uint64_t mask, json_t **ret, struct agent_error *e) {
  uint64_t safe = event_safe(a, mask);
  json_t *fb = json_array();
  int err = to_fallback(a, safe, fb, e);
  if (err) {
    json_decref(fb);
    return err;
  }
  err = agent_caps_release(a, mask & ~safe, ret, e);
  json_object_set_new(*ret, "fallback", fb);
  return err;
}

/* Applies the fallback wattage of every GPU in `mask` (all-or-nothing). */
static int apply_fallbacks(struct agent *a, uint64_t mask) {
  struct pflex_limit_change c[AGENT_MAX_GPUS];
  size_t n = 0, failed = 0;
  for (unsigned i = 0; i < a->n; i++)
    if (mask >> i & 1)
      c[n++] = (struct pflex_limit_change){.index = i, .mw = a->g[i].lease.fallback_mw};
  int err = n ? pflex_restore_apply_limits(a->rs, a->gpu, c, n, PFLEX_APPLY_CLAMP, &failed) : 0;
  if (err) {
    struct agent_error e;
    apply_failure(a, &e, c, n, failed, "cannot apply its fallback limit", err);
    agent_log("error", "lease fallback: %s (retried in a second)", e.message);
  }
  return err;
}

/* The GPUs whose lease ran out by now (moved to their fallback in next),
 * and among them those with a fallback wattage. */
static uint64_t due_leases(struct agent *a, double now, struct agent_lease *next,
                           uint64_t *ret_to_watts) {
  uint64_t due = 0, to_watts = 0;
  for (unsigned i = 0; i < a->n; i++)
    if (agent_lease_due(&next[i], now)) {
      due |= (uint64_t)1 << i;
      agent_lease_fall_back(&next[i]);
      if (next[i].state == AGENT_LEASE_FALLBACK) to_watts |= (uint64_t)1 << i;
    }
  *ret_to_watts = to_watts;
  return due;
}

unsigned agent_caps_expire(struct agent *a, double now) {
  struct agent_lease next[AGENT_MAX_GPUS];
  uint64_t to_watts, restore = 0;
  current_leases(a, next);
  double deadline = agent_lease_next_deadline(next, a->n);
  uint64_t due = due_leases(a, now, next, &to_watts);
  for (unsigned i = 0; i < a->n; i++) /* restores that failed earlier are retried too */
    if (next[i].state == AGENT_LEASE_RESTORE) restore |= (uint64_t)1 << i;
  if (!due && (!restore || now < a->retry_s)) return 0;
  a->retry_s = now + 1.0;
  /* The GPUs first, the lease file after: a crash in between leaves expired
   * leases in the file, which the next start falls back just the same. */
  bool fb_failed = to_watts && apply_fallbacks(a, to_watts);
  if (fb_failed) {
    for (unsigned i = 0; i < a->n; i++) /* keep them held: retried in a second */
      if (to_watts >> i & 1) next[i] = a->g[i].lease, next[i].expires_s = now + 1.0;
    due &= ~to_watts;
  }
  commit_leases(a, next);
  struct agent_error e;
  json_t *done = json_array(), *failed = json_array();
  if (agent_caps_restore_marked(a, restore, done, failed, &e)) {
    /* Retried after 2 s, then less and less often, at least once a minute. */
    double later = a->retry_interval_s > 0 ? 2 * a->retry_interval_s : 2.0;
    a->retry_interval_s = later > 60 ? 60 : later;
    a->retry_s = now + a->retry_interval_s;
    agent_log("error", "lease fallback: %s (retried in %.0f s)", e.message, a->retry_interval_s);
  } else {
    a->retry_interval_s = 0;
  }
  json_decref(done);
  json_decref(failed);
  double landed = agent_now();
  current_leases(a, next);
  if (agent_caps_save(a, next))
    agent_log("warning", "cannot update the lease state '%s'", a->state_path);
  unsigned moved = (unsigned)__builtin_popcountll(due);
  a->c.lease_expiries += moved;
  if (moved)
    agent_log("note", "%u lease%s ran out: fallback applied %.1f ms after the deadline", moved,
              moved == 1 ? "" : "s", (landed - deadline) * 1e3);
  return moved;
}
