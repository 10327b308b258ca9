/* `pflex-controller report EVENT`: what the store says happened during an
 * event, as JSON, and a timeline figure (target and measured power,
 * throughput relative to uncapped) through the report layer's plot.h. */
#ifndef CTL_REPORT_H
#define CTL_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "controller/store.h"

/* The event's report as JSON: the event (its state as of now), rounds during
 * it, compliance_s (start to at-or-under target + 1% and staying there),
 * overshoot_samples after it, max_over_pct (the most a round's measured
 * total was over its target, in % and at least 0, over every round of the
 * event, the first uncapped ones included), max_over_pct_after_compliance
 * (the same from compliance_s on, below 0 when every round stayed under:
 * sim-cluster's max_over_pct), the held part's mean throughput relative to
 * uncapped, the longest and mean round, unreachable rounds. -ENOENT for an
 * unknown event. */
int ctl_report_json(struct ctl_store *st, int64_t id, json_t **ret, char *err, size_t errlen);

/* Draws the timeline to path (.svg, .png, .pdf). */
int ctl_report_plot(struct ctl_store *st, int64_t id, const char *path, char *err, size_t errlen);

#endif
