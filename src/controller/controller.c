/* Opening, resuming and closing a controller (controller.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/controller.h"
#include "controller/log.h"
#include "controller/schedule.h"
#include "pflex/error.h"
#include "pflex/model_json.h"

static int open_nodes(struct ctl_controller *c, char *err, size_t errlen) {
  c->nnodes = c->inv.n;
  c->nodes = calloc(c->nnodes, sizeof *c->nodes);
  c->reqs = calloc(2 * c->nnodes, sizeof *c->reqs);
  c->bodies = calloc(c->nnodes, sizeof *c->bodies);
  const char **urls = calloc(2 * c->nnodes, sizeof *urls);
  if (!c->nodes || !c->reqs || !c->bodies || !urls) {
    free(urls);
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
  }
  for (size_t i = 0; i < c->nnodes; i++) {
    snprintf(c->nodes[i].url, sizeof c->nodes[i].url, "%s", c->inv.urls[i]);
    c->nodes[i].restore_pending = true; /* unknown until the first DELETE or event */
    urls[i] = urls[c->nnodes + i] = c->inv.urls[i];
  }
  char token[CTL_TOKEN_MAX + 1];
  bool has_token = c->cfg.agent_token_file[0];
  if (has_token && ctl_read_secret(c->cfg.agent_token_file, token, sizeof token, err, errlen) < 0) {
    free(urls);
    return -EINVAL;
  }
  int rc = ctl_client_new(urls, 2 * c->nnodes, has_token ? token : NULL, &c->client);
  free(urls);
  if (rc < 0) snprintf(err, errlen, "cannot set up libcurl");
  return rc;
}

/* The events of the store not yet done, the schedule file's added once,
 * and the feedback state, so that a restarted controller resumes. */
static int resume(struct ctl_controller *c, char *err, size_t errlen) {
  double now = ctl_epoch_now();
  if (c->cfg.schedule_file[0]) {
    int rc = ctl_schedule_load(c->cfg.schedule_file, c->store, now, err, errlen);
    if (rc < 0) return rc;
    ctl_log("note", "schedule '%s': %d events added", c->cfg.schedule_file, rc);
  }
  int rc = ctl_store_events(c->store, false, now, &c->events, &c->nevents);
  if (rc < 0) {
    snprintf(err, errlen, "cannot read the events of '%s': %s", c->cfg.state_db,
             ctl_store_errmsg(c->store));
    return rc;
  }
  struct ctl_learnt_row *learnt = NULL;
  size_t nlearnt = 0;
  if (ctl_store_learnt_get(c->store, &learnt, &nlearnt) == 0) {
    if (ctl_jobset_seed(&c->jobs, learnt, nlearnt, now) < 0) nlearnt = 0;
    if (nlearnt) ctl_log("note", "%zu jobs' uncapped draw and throughput from the store", nlearnt);
  }
  free(learnt);
  struct ctl_resume r;
  if (ctl_store_resume_get(c->store, &r) == 0 && r.last_round > 0) {
    c->uncapped_w = r.uncapped_w;
    c->rounds = r.rounds;
    double target;
    if (ctl_events_target(c->events, c->nevents, now, &target, NULL)) {
      ctl_feedback_resume(&c->fb, r.offset_w);
      ctl_log("note",
              "resuming an active event (target %.0f W, feedback offset %.0f W, "
              "last round %.1f s ago)",
              target, r.offset_w, now - r.last_round);
    }
  }
  return 0;
}

static int load_model(struct ctl_controller *c, const char *path, char *err, size_t errlen) {
  struct pflex_diag d;
  pflex_diag_clear(&d);
  char name[64];
  int fd = ctl_open_trusted_name(path, name, sizeof name, err, errlen);
  if (fd < 0) return fd;
  int rc = pflex_model_read_json(name, &c->model, &d);
  close(fd);
  if (rc < 0) {
    snprintf(err, errlen, "model '%s': %s%s%s", path, d.column[0] ? d.column : "",
             d.column[0] ? ": " : "", d.message[0] ? d.message : pflex_strerror(rc));
    return rc;
  }
  c->has_model = true;
  c->jobs.model = &c->model;
  return 0;
}

int ctl_controller_open(struct ctl_controller *c, const struct ctl_config *cfg, char *err,
                        size_t errlen) {
  memset(c, 0, sizeof *c);
  c->cfg = *cfg;
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->wake, NULL);
  ctl_jobset_init(&c->jobs);
  struct ctl_feedback_opts fo = {cfg->gain_up, cfg->gain_down, cfg->margin_pct / 100.0,
                                 cfg->max_over_pct / 100.0, 0.3};
  ctl_feedback_init(&c->fb, &fo);
  c->caps_in_force_w = INFINITY;
  int rc = cfg->inventory == CTL_INVENTORY_SLURM
               ? ctl_discovery_open(cfg, &c->disc, &c->inv, err, errlen)
               : ctl_inventory_load(cfg->agents_file, &c->inv, err, errlen);
  if (rc < 0) return rc;
  if (cfg->templates_file[0]) {
    rc = ctl_templates_load(cfg->templates_file, &c->templates, err, errlen);
    if (rc < 0) return rc;
    c->jobs.templates = c->templates.curves;
    c->jobs.ntemplates = c->templates.n;
  }
  if (cfg->model_file[0]) {
    rc = load_model(c, cfg->model_file, err, errlen);
    if (rc < 0) return rc;
  }
  if (cfg->token_file[0]) {
    rc = agent_token_load(&c->api_token, cfg->token_file, err, errlen);
    if (rc < 0) return rc;
  }
  rc = open_nodes(c, err, errlen);
  if (rc < 0) return rc;
  rc = ctl_store_open(cfg->state_db, &c->store, err, errlen);
  if (rc < 0) return rc;
  return resume(c, err, errlen);
}

void ctl_controller_close(struct ctl_controller *c) {
  ctl_discovery_close(c->disc);
  ctl_client_free(c->client);
  for (size_t i = 0; c->bodies && i < c->nnodes; i++)
    free(c->bodies[i]);
  free(c->bodies);
  free(c->reqs);
  free(c->nodes);
  ctl_jobset_release(&c->jobs);
  ctl_templates_release(&c->templates);
  if (c->has_model) pflex_model_release(&c->model);
  ctl_store_close(c->store);
  ctl_inventory_release(&c->inv);
  free(c->events);
  free(c->status_json);
  free(c->metrics_text);
  pthread_cond_destroy(&c->wake);
  pthread_mutex_destroy(&c->lock);
  explicit_bzero(&c->api_token, sizeof c->api_token);
}

void ctl_controller_reload(struct ctl_controller *c) {
  if (!c->cfg.schedule_file[0]) {
    ctl_log("note", "SIGHUP: no schedule_file to read again (the config and token files are "
                    "read at start only)");
    return;
  }
  char err[512];
  double now = ctl_epoch_now();
  struct ctl_event *v = NULL;
  size_t n = 0;
  pthread_mutex_lock(&c->lock);
  int added = ctl_schedule_load(c->cfg.schedule_file, c->store, now, err, sizeof err);
  int rc = added > 0 ? ctl_store_events(c->store, false, now, &v, &n) : 0;
  if (added > 0 && rc == 0) {
    free(c->events);
    c->events = v;
    c->nevents = n;
  }
  pthread_mutex_unlock(&c->lock);
  if (added < 0)
    ctl_log("error", "SIGHUP: %s; no event added, the events before it stay", err);
  else if (rc < 0)
    ctl_log("error", "SIGHUP: %d events added to the store, but reading them back failed: %s",
            added, ctl_store_errmsg(c->store));
  else
    ctl_log("note", "SIGHUP: schedule '%s' read again: %d events added", c->cfg.schedule_file,
            added);
  if (added > 0) ctl_controller_wake(c);
}

int ctl_controller_add_event(struct ctl_controller *c, struct ctl_event *e) {
  pthread_mutex_lock(&c->lock);
  int rc = ctl_store_event_add(c->store, e);
  if (rc == 0) {
    void *p = realloc(c->events, (c->nevents + 1) * sizeof *c->events);
    if (p) {
      c->events = p;
      c->events[c->nevents++] = *e;
    } else {
      rc = -ENOMEM;
    }
  }
  pthread_mutex_unlock(&c->lock);
  if (rc == 0) ctl_controller_wake(c);
  return rc;
}

int ctl_controller_end_event(struct ctl_controller *c, int64_t id, double now,
                             struct ctl_event *ret) {
  pthread_mutex_lock(&c->lock);
  int rc = -ENOENT;
  for (size_t i = 0; i < c->nevents; i++) {
    struct ctl_event *e = &c->events[i];
    if (e->id != id) continue;
    if (e->ended_early == 0 || e->ended_early > now) e->ended_early = now;
    rc = ctl_store_event_update(c->store, e);
    *ret = *e;
    break;
  }
  if (rc == -ENOENT && ctl_store_event_get(c->store, id, ret) == 0)
    rc = -EALREADY; /* known, but already done */
  pthread_mutex_unlock(&c->lock);
  if (rc == 0) ctl_controller_wake(c);
  return rc;
}
