/* The simulated cluster with hosted agents (sim_host.h): what the cluster
 * side needs. The agents' sim backends are the GPUs' physics there, so this
 * side learns power and limits the way the controller does, from each
 * agent's GET /v1/gpus. */
#ifndef CTL_SIM_HOSTED_H
#define CTL_SIM_HOSTED_H

#include <stddef.h>

#include "controller/client.h"
#include "controller/sim_host.h"
#include "controller/sim_world.h"

/* The sim backend's spec for every node: its job's twin group on the real
 * clock, the world's gap and startup as the sim's warmup and startup
 * phases (after a churn), no eval or checkpoint dips; the first job is
 * already training (since=), a node without a job idles (start=call). -EINVAL with err when a group cannot be named in a spec. */
int sim_hosted_specs(const struct sim_world *w, struct sim_host_node *nodes, char *err,
                     size_t errlen);

/* GET /v1/gpus from every agent: each GPU's reading (power_w), limit and
 * limit in effect into the world's nodes; an agent that does not answer
 * keeps its last values, as does one with skip[i] set (skip may be NULL: it
 * is not asked). *ret_wrong (may be NULL): GPUs whose limit is not their
 * default (or not known to be); *ret_answered: agents that answered. */
void sim_hosted_read(struct sim_world *w, struct ctl_client *agents, struct ctl_request *reqs,
                     const bool *skip, size_t *ret_wrong, size_t *ret_answered);

#endif
