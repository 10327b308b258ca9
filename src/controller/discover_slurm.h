/* The agents from Slurm (inventory = slurm, docs/slurm.md "Discovery"): a
 * thread runs `sinfo --json` and `squeue --json` (Slurm's own client
 * commands, no shell, each bounded in time and output) every slurm_poll_s
 * and publishes the result of a poll in which both succeeded; a poll that
 * fails keeps the last good one and is counted and reported.
 *
 * The round (discover_apply.c) takes a new result at its start: the agents
 * are the nodes whose GRES names a GPU (any state but FUTURE and
 * POWERED_DOWN), each at agent_url_template; a node that leaves stays an
 * agent, marked departed, until it may hold no cap of ours. The status and
 * metrics show the discovery (discover_status.c). */
#ifndef CTL_DISCOVER_SLURM_H
#define CTL_DISCOVER_SLURM_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "controller/config.h"
#include "controller/inventory.h"
#include "controller/slurm_json.h"

struct ctl_controller;

/* One poll's outcome as the thread publishes it (under lock). */
struct ctl_discovery_state {
  uint64_t generation;  /* successful polls so far; a new one means a new result */
  double last_ok;       /* epoch of the last successful poll (0: none) */
  double last_poll;     /* epoch of the end of the last poll */
  double last_poll_s;   /* how long it took */
  bool ok;              /* the last poll succeeded */
  char error[512];      /* why the last poll failed ("" when ok) */
  uint64_t polls, failures;
};

struct ctl_discovery {
  struct ctl_config cfg;
  pthread_t thread;
  bool running;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  bool stop;
  /* Under lock: the thread's newest result and its state. */
  struct ctl_discovery_state st;
  struct ctl_slurm_nodes new_nodes;
  struct ctl_slurm_jobs new_jobs;
  /* The round's own (no lock): what it applied. */
  uint64_t applied;
  struct ctl_discovery_state seen; /* st as of the round's last look */
  struct ctl_slurm_nodes nodes;
  struct ctl_slurm_jobs jobs;
  struct ctl_inventory want; /* the agents' URLs of nodes (sorted) */
  size_t unregistered;       /* as the last status counted them (discover_status.c) */
};

/* The controller's inventory from Slurm: polls once (a failure is an error:
 * err says why), fills inv with the agents' URLs and starts the thread. */
int ctl_discovery_open(const struct ctl_config *cfg, struct ctl_discovery **ret,
                       struct ctl_inventory *inv, char *err, size_t errlen);
/* Stops the thread (waits for a poll in progress, at most slurm_timeout_s
 * per command) and frees everything. NULL is fine. */
void ctl_discovery_close(struct ctl_discovery *d);

/* Runs one poll (both commands) now; on success ret_nodes/ret_jobs hold the
 * result (release them), else err says why. For the thread and the tests. */
int ctl_discovery_poll(const struct ctl_config *cfg, struct ctl_slurm_nodes *ret_nodes,
                       struct ctl_slurm_jobs *ret_jobs, char *err, size_t errlen);

/* The agents' URLs of a node list (sorted, without duplicates): every node
 * with a GPU in any state but future and powered down, at the template
 * ({node}: its name, {addr}: its NodeAddr). -EINVAL with err for a URL
 * that is too long. */
int ctl_discovery_urls(const struct ctl_slurm_nodes *nodes, const char *url_template,
                       struct ctl_inventory *ret, char *err, size_t errlen);

/* The node's agent URL ({node} and {addr} replaced; an IPv6 address in
 * brackets); false when it does not fit in size. */
bool ctl_discovery_node_url(const char *url_template, const struct ctl_slurm_node *nd, char *buf,
                            size_t size);
/* Whether a node is an agent: a GPU in its GRES, not FUTURE, not POWERED_DOWN. */
bool ctl_discovery_is_agent(const struct ctl_slurm_node *nd);

/* Checks a template: http:// or https://, {node} or {addr}, no other '{'. */
int ctl_discovery_template_check(const char *url_template, char *err, size_t errlen);

/* At the start of a round: applies a new result (new agents join, departed
 * ones are kept while they may hold caps), and drops departed agents once
 * they are known restored. Never fails the round: on error the old agents
 * stay (logged). */
void ctl_discovery_apply(struct ctl_controller *c);

/* The "discovery" object of GET /v1/status, and its metrics text (malloc'd,
 * appended to /metrics). */
json_t *ctl_discovery_json(struct ctl_controller *c, double now);
char *ctl_discovery_metrics(struct ctl_controller *c, double now);

#endif
