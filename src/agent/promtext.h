/* Reading one metric out of a Prometheus text exposition (the format a
 * training process's /metrics endpoint serves), for per-job throughput. */
#ifndef PFLEX_AGENT_PROMTEXT_H
#define PFLEX_AGENT_PROMTEXT_H

#include <stdbool.h>
#include <stddef.h>

/* True for a valid Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*, at
 * most 127 characters). */
bool agent_prom_name_valid(const char *name);

/* The sum over every series of metric `name` (any labels; e.g. one per
 * rank) in text of len bytes; comments, other metrics and non-finite values
 * are skipped. 0 with *ret_sum and *ret_series (>= 1); -ENOENT when no
 * series of that name has a finite value. */
int agent_prom_sum(const char *text, size_t len, const char *name, double *ret_sum,
                   size_t *ret_series);

#endif
