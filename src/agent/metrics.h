/* GET /metrics: the agent's state in the Prometheus text format (0.0.4),
 * checked by `promtool check metrics` in the tests. GPU series carry the
 * labels gpu and uuid (and job when metrics_job_label is set); job series
 * carry job. */
#ifndef PFLEX_AGENT_METRICS_H
#define PFLEX_AGENT_METRICS_H

#include <stddef.h>

#include "agent/agent.h"

/* Renders the exposition into *ret (freed by the caller) of *ret_len bytes. */
int agent_metrics_render(struct agent *a, char **ret, size_t *ret_len);

#endif
