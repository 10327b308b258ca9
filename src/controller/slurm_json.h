/* Slurm's own JSON, as its client commands print it with --json (Slurm
 * 22.05, plugin openapi/v0.0.38): the nodes of `sinfo --json` and the
 * running jobs of `squeue --json`. Every field used is checked, and a
 * malformed document is refused naming the field ("nodes[2].name: not a
 * string"). A document whose "errors" array is not empty is refused too:
 * Slurm 22.05 prints {"errors":[...], "jobs":[]} and exits 0 when it cannot
 * reach slurmctld, which must never read as "no jobs" or "no nodes". */
#ifndef CTL_SLURM_JSON_H
#define CTL_SLURM_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "controller/agent_json.h"

#define CTL_SLURM_NAME_MAX 64  /* a node name: [A-Za-z0-9._-], 1-63 characters */
#define CTL_SLURM_ADDR_MAX 128 /* NodeAddr: a host name or an IP address */
#define CTL_SLURM_MAX_NODES 100000
#define CTL_SLURM_MAX_JOBS 1000000

struct ctl_slurm_node {
  char name[CTL_SLURM_NAME_MAX];
  char addr[CTL_SLURM_ADDR_MAX];
  char state[24];    /* "idle", "allocated", "mixed", "down", "future", ... */
  bool drain;        /* state_flags has DRAIN */
  bool powered_down; /* state_flags has POWERED_DOWN (power saving: the node is off) */
  bool gpus;         /* its gres names a gpu */
};

struct ctl_slurm_nodes {
  struct ctl_slurm_node *v;
  size_t n;
};

/* A running job and the nodes it runs on (names[first .. first + count)). */
struct ctl_slurm_job {
  char id[CTL_JOB_ID_MAX];
  size_t first, count;
  bool gpus;         /* its gres_detail names a gpu */
  double start_time; /* epoch s, 0 when not given */
};

struct ctl_slurm_jobs {
  struct ctl_slurm_job *v;
  size_t n;
  char (*names)[CTL_SLURM_NAME_MAX];
  size_t nnames;
};

/* Parses `sinfo --json`: every node listed (any state), sorted by name. -EINVAL with err
 * naming the field, -EPROTO with Slurm's own error when "errors" is not
 * empty, -ENOMEM. ret is written only on success. */
int ctl_slurm_parse_nodes(const char *body, size_t len, struct ctl_slurm_nodes *ret, char *err,
                          size_t errlen);
void ctl_slurm_nodes_release(struct ctl_slurm_nodes *n);

/* Parses `squeue --json`: the jobs whose job_state is RUNNING, with their
 * nodes (job_resources.allocated_nodes[].nodename); other jobs (pending,
 * completed, ...) are checked for job_id and job_state only. Errors as for
 * ctl_slurm_parse_nodes. */
int ctl_slurm_parse_jobs(const char *body, size_t len, struct ctl_slurm_jobs *ret, char *err,
                         size_t errlen);
void ctl_slurm_jobs_release(struct ctl_slurm_jobs *j);

/* True for a name Slurm could give a node that is safe in a URL. */
bool ctl_slurm_name_ok(const char *s);

#endif
