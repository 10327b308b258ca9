/* Per-job throughput from StatsD on loopback (the library's intake, the
 * metric names of `pflex sweep`): a metric "JOB.NAME" (e.g. "1234.tokens")
 * counts for job JOB; a bare "NAME" for the node's only job, if it has
 * exactly one. NAME is statsd_metric (default "tokens"; a counter of tokens
 * per step, a rate gauge, or a step timer, as in docs/gpu.md). */
#ifndef PFLEX_AGENT_JOBTPUT_H
#define PFLEX_AGENT_JOBTPUT_H

#include "agent/agent.h"

/* Opens the receiver at cfg.statsd ("" = none). Only loopback UDP addresses
 * or a Unix socket in a directory no other user can write are accepted. */
int agent_jobtput_open(struct agent *a);
void agent_jobtput_close(struct agent *a);

/* The receiver's fd to poll, or -1. */
int agent_jobtput_fd(const struct agent *a);

/* Reads every queued datagram into the jobs' throughput. */
void agent_jobtput_drain(struct agent *a);

/* Splits a metric name "JOB.NAME" into job and name; a name without a '.'
 * gives job "". -EINVAL for an invalid job part. */
int agent_jobtput_split(const char *metric, char *job, size_t jobsize, const char **ret_name);

#endif
