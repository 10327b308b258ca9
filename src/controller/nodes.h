/* What the controller knows of each agent's node: its GPUs as last read,
 * whether it answered this round, and the caps it acknowledged. */
#ifndef CTL_NODES_H
#define CTL_NODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/agent_json.h"
#include "controller/inventory.h"

struct ctl_node {
  char url[CTL_URL_MAX];
  bool seen;      /* answered at least once */
  bool reachable; /* answered this round */
  double last_ok; /* epoch of the last answer */
  int failures;   /* rounds in a row without an answer */
  char error[192];
  struct ctl_gpu_state gpu[CTL_MAX_NODE_GPUS];
  size_t ngpus;
  struct ctl_job_tput jobs[CTL_MAX_NODE_GPUS];
  size_t njobs;
  /* Caps decided this round (0 = none) and the last ones it acknowledged. */
  double cap_w[CTL_MAX_NODE_GPUS];
  double acked_w[CTL_MAX_NODE_GPUS];
  bool has_acked;
  double renewed_s; /* monotonic time of the last acknowledged PUT (its leases' start) */
  double fallback_w;                   /* fallback decided this round */
  double fb_sent_w[CTL_MAX_NODE_GPUS]; /* the fallback each GPU's lease holds (0 = none) */
  bool sent[CTL_MAX_NODE_GPUS];        /* in this round's PUT */
  bool restore_pending;                /* DELETE /v1/caps not yet acknowledged */
  bool split_reads; /* an agent without GET /v1/node: read by /v1/gpus and /v1/jobs */
  bool departed; /* no longer in the discovered inventory; kept until it holds no cap of ours */
  bool duplicate;      /* this round: reports a GPU an earlier node reports (one node listed
                          twice; ctl_nodes_mark_duplicates) */
  size_t duplicate_of; /* then that earlier node's index */
  bool duplicate_said;  /* the log said so (once while it lasts) */
};

/* Updates a node from this round's answers (NULL bodies: no answer, with why;
 * the same body twice: one GET /v1/node reply). Returns true when it
 * answered with valid bodies. */
bool ctl_node_update(struct ctl_node *nd, const char *gpus_body, size_t gpus_len,
                     const char *jobs_body, size_t jobs_len, const char *why, double now);

/* The most a node can draw now, W: its measured draw when it answered;
 * otherwise the sum of the caps it last acknowledged (a lease running out
 * only lowers it to the fallback), or of its GPUs' highest settable limits
 * when it holds no cap of ours, or unseen_w for a node never seen. */
double ctl_node_bound_w(const struct ctl_node *nd, double unseen_w);

/* Measured draw of a node that answered (sum of its GPUs' power). */
double ctl_node_power_w(const struct ctl_node *nd);

/* Number of GPUs whose limit is not at its default. */
size_t ctl_node_capped(const struct ctl_node *nd);

/* Finds the nodes that report a GPU (by UUID) an earlier node in the list
 * reported this round: one agent listed twice, e.g. under two spellings of
 * its address. Each such node gets duplicate (and duplicate_of, the
 * earliest such node's index) and an empty view (no GPUs, no jobs) for this
 * round, so that its power is neither counted nor capped twice. Returns how
 * many nodes are duplicates, or -ENOMEM. O(G log G) in the GPUs, but for
 * a round whose reachable nodes report the same GPUs as when the last call
 * found none (*sig, kept by the caller, 0 at first: a digest of them): then
 * O(G) and 0. sig may be NULL. */
int ctl_nodes_mark_duplicates(struct ctl_node *nodes, size_t n, uint64_t *sig);

#endif
