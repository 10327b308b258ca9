/* Exploration: a binding probe cap for a job whose curve nothing pins.
 *
 * A job the allocation gives its whole uncapped draw gets a cap above that
 * draw (plan.c, at_top): the cap never binds, the job's readings are its
 * uncapped point again, and its curve stays the prior's, however wrong (a
 * flat 64-GPU MoE job kept its 40.4 kW on a steep template prior where the
 * oracle gives it 32.9 kW: docs/controller.md, "Eighth round"). So such a
 * job, once, while its curve has no observation below its P_max (confidence
 * 0) and its PFI is the population prior's, is held at a probe cap
 * CTL_EXPLORE_DEPTH of its draw per GPU until the
 * refinement has that observation (or CTL_EXPLORE_ROUNDS have passed); then
 * the allocation takes it back, on its refined curve. One job probes at a
 * time, the one with the most power first (plan.c): a probe costs a steep
 * job throughput for its few rounds, and probing every such job at once at
 * an event's start cost more than it gained on most clusters (measured).
 * A job whose PFI the model predicted from its own telemetry is not probed:
 * in the simulated cluster the probes of such jobs cost 0.03-0.18 of the
 * equal-to-oracle gap in a 30 s event and gained nothing the prediction had
 * not (docs/controller.md, "Fourteenth round"); with the population's prior
 * they still paid (one large flat job kept at its whole draw).
 *
 * Safety: lowering a cap cannot raise any draw, and the power the probe
 * frees goes to other jobs only once the readings show it freed: while it
 * probes, the job is counted at the larger of what its probe caps allow and
 * what its GPUs were last read to draw (ctl_explore_held_w), so a raise
 * elsewhere is never funded by a fall still to come. In the round a probe
 * starts the job is counted at what the allocation gave it (its whole draw). */
#ifndef CTL_EXPLORE_H
#define CTL_EXPLORE_H

#include <stdbool.h>

#include "controller/jobs.h"

#define CTL_EXPLORE_DEPTH 0.85 /* the probe cap: this share of the uncapped draw per GPU */
#define CTL_EXPLORE_ROUNDS 8   /* a probe ends after this many rounds even without a reading */

/* Whether the job is held at a probe cap. */
bool ctl_explore_active(const struct ctl_job *j);

/* Whether a job the allocation gave its whole draw (at_top) is to be
 * probed: its uncapped point is measured (P_max and T_max), it reports
 * throughput, its PFI is not its telemetry's prediction (model_pfi 0), its
 * curve has no observation below P_max, it was never probed, and a cap in
 * its range binds (the probe cap is under 97% of its draw). */
bool ctl_explore_wanted(const struct ctl_job *j);

/* Starts the probe: the job's cap this round becomes the probe's (at_top
 * false; alloc_w unchanged: it is counted at what the allocation gave it). */
void ctl_explore_begin(struct ctl_job *j);

/* Before the allocation, for a job that is probing: counts the round and ends
 * the probe (explored: never again) once the refinement has its observation,
 * after CTL_EXPLORE_ROUNDS, or when the job cannot be planned this round
 * (placeable false: a node did not answer). Returns whether it still probes. */
bool ctl_explore_step(struct ctl_job *j, bool placeable);

/* What a probing job is counted at: its GPUs times the probe cap, or what
 * they were read to draw if more (the fall has not shown yet). */
double ctl_explore_held_w(const struct ctl_job *j);

#endif
