/* One pflex-controller: its configuration, the agents and what it knows of
 * them, the jobs, the events, the feedback term, the store; the round that
 * ties them together (loop.c) and the snapshot the API serves (status.c).
 *
 * Threads: the round runs on the main thread; the HTTP API (api.c) on
 * libmicrohttpd's thread. They share the events (mutex `lock`, the API adds
 * and ends events and wakes the round) and the last snapshot (the status
 * JSON and metrics text, swapped under `lock`). The store is used under
 * `lock` too. */
#ifndef CTL_CONTROLLER_H
#define CTL_CONTROLLER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/auth.h"
#include "controller/client.h"
#include "controller/config.h"
#include "controller/discover_slurm.h"
#include "controller/events.h"
#include "controller/feedback.h"
#include "controller/inventory.h"
#include "controller/jobs.h"
#include "controller/nodes.h"
#include "controller/plan.h"
#include "controller/store.h"
#include "controller/templates.h"

#define CTL_BASELINE_RING 64

struct ctl_controller {
  struct ctl_config cfg;
  volatile int *reload; /* set (by SIGHUP): read the schedule file again; NULL: never */
  struct ctl_inventory inv;
  struct ctl_discovery *disc; /* inventory = slurm (discover_slurm.h), else NULL */
  struct ctl_node *nodes;
  uint64_t uuids_sig; /* the GPUs the nodes reported when none was listed twice (nodes.h) */
  size_t nnodes;
  struct ctl_client *client;
  struct ctl_request *reqs; /* 2 per node: GET /v1/gpus, GET /v1/jobs (or a write) */
  char **bodies;            /* PUT bodies of this round, per node */
  struct ctl_jobset jobs;
  struct ctl_templates templates; /* templates_file's curves (none: the family shape) */
  struct pflex_model model;       /* model_file's (has_model) */
  bool has_model;
  struct ctl_feedback fb;
  struct ctl_store *store;
  struct agent_token api_token; /* len 0: no API token, writes are refused */

  pthread_mutex_t lock;
  pthread_cond_t wake;
  bool woken;
  struct ctl_event *events; /* not yet done, oldest first */
  size_t nevents;
  char *status_json;   /* last round's snapshot (GET /v1/status) */
  char *metrics_text;  /* (GET /metrics) */
  int64_t rounds_done; /* rounds, as the API may read them (under lock) */

  /* The round's state. */
  int64_t rounds;
  double read_mono; /* when every agent was last read (monotonic s; 0: never) */
  bool in_event;
  int64_t event_id;       /* governing event */
  double event_t0;        /* when the controller first acted on the current event span */
  double caps_acked_at;   /* first round end with every reachable node's caps acknowledged */
  double caps_in_force_w; /* INFINITY when no caps of ours are in force */
  bool saturated;
  double uncapped_w; /* the cluster's uncapped draw (baseline for cut_pct) */
  double ring[CTL_BASELINE_RING];
  size_t ring_n, ring_head;
  double unseen_w; /* bound of a node never seen: the largest node seen */
  double last_target_w, last_measured_w, last_budget_w;
  struct ctl_plan_summary last_plan;
  double last_round_ms;
  unsigned long long api_requests, api_errors, agent_errors;
};

/* Opens everything the configuration names (inventory, tokens, store,
 * client) and resumes the events and feedback state of the store. On
 * failure writes why into err. */
int ctl_controller_open(struct ctl_controller *c, const struct ctl_config *cfg, char *err,
                        size_t errlen);
void ctl_controller_close(struct ctl_controller *c);

/* One round at epoch `now`. */
int ctl_controller_round(struct ctl_controller *c, double now);

/* Runs rounds until *stop becomes true (or max_rounds), then lifts our caps
 * (DELETE /v1/caps) unless an event is still active: a controller stopped
 * mid-event leaves the agents on their leases and fallbacks. */
int ctl_controller_run(struct ctl_controller *c, volatile int *stop);

/* SIGHUP: reads the schedule file again and adds the events it holds that
 * the store does not (an entry removed from the file stays: DELETE it
 * through the API); a bad file is refused whole, nothing added, and logged.
 * The config and token files are read at start only. */
void ctl_controller_reload(struct ctl_controller *c);

/* Wakes the round early (a new or ended event). */
void ctl_controller_wake(struct ctl_controller *c);

/* The API's actions on events (under the lock). */
int ctl_controller_add_event(struct ctl_controller *c, struct ctl_event *e);
int ctl_controller_end_event(struct ctl_controller *c, int64_t id, double now,
                             struct ctl_event *ret);

/* Builds the snapshot of this round (status.c). */
void ctl_controller_snapshot(struct ctl_controller *c, double now, double measured_w,
                             double target_w, bool has_target);

double ctl_epoch_now(void);
double ctl_mono_now(void);

#endif
