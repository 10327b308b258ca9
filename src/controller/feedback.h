/* The feedback term on the measured cluster total.
 *
 * The allocation hands out a budget; the caps it becomes bound what the GPUs
 * may draw, but jobs draw less than their caps (idle phases, memory-bound
 * steps, measurement lag), so a budget equal to the target leaves the cluster
 * below it. The feedback term is an offset added to the target:
 *
 *   budget = target + offset
 *   offset += gain_up   * (setpoint - measured)   when measured <= target - reserve
 *   offset += gain_down * (setpoint - measured)   when measured >  target - reserve
 *   setpoint = target * (1 - margin) - reserve
 *
 * clamped to [-max_under * target, max_over * target]. The upper clamp bounds
 * the risk: the budget never exceeds target * (1 + max_over). (The caps can:
 * a job at its whole draw has a cap 3% above it, a loading job and an idle
 * GPU caps above what they are counted at; the outage reserve below keeps
 * room for what of that can rise without a new plan.) With
 * max_over at or below the 1% compliance band minus the margin, no change of
 * demand among the jobs the budget counts at their caps can make a
 * non-compliant sample, but the slack stays unused: a
 * binding limiter holds a GPU about 1.3% under its cap (the twin), and GPUs
 * without a job sit under theirs. The default (1%) reclaims most of that; a
 * sudden rise of demand can exceed the band only by what the caps allow
 * until the down gain corrects it (a round or two), and the reserve bounds
 * that rise for caps a dead controller leaves frozen for a lease. No growth
 * while the allocation is saturated at the top (every job already at its
 * P_max), no fall while it is at the bottom (every job at its least power:
 * the target is below what the floors allow): that is the anti-windup. An
 * integrator acting on a plant with d rounds of measurement lag rings once
 * its gain k passes d^d / (d+1)^(d+1) (then z^(d+1) - z^d + k has no real
 * dominant root): 1/4 for one round, 4/27 for two; gain_up 0.14 stays below
 * that for the one to two rounds of lag NVML's one-second power average
 * gives at a one-second round, and tests/unit/test_controller_feedback.c
 * proves it on such a plant. The down gain is larger: being over is what
 * must not last.
 *
 * Lag after a cut: for a second or so after caps drop, the averaged power
 * reading still shows the old draw, above what the new caps allow. Counting
 * that as demand would drive the offset far down (and the cluster far below
 * its target for many rounds). So a reading above the caps that were in force
 * when it was read is lag, not demand: it moves nothing for up to LAG_ROUNDS
 * (2) rounds in a row (NVML's average needs one to two), then counts clipped
 * to the caps (a reading that stays above them is no longer lag).
 *
 * An event starts at the top of the clamp (ctl_feedback_start: offset =
 * max_over * target), not at 0: the clamp's bound is the risk accepted
 * anyway, and jobs under binding caps draw below them, so starting low left
 * the draw under the target for the first ten to twenty rounds while gain_up
 * climbed (measured: 2% of the budget unused 3 s into an event, 0.6% after
 * 20 s). The first readings under the new caps then bring it down as far as
 * the draw requires, with gain_down if over. */
#ifndef CTL_FEEDBACK_H
#define CTL_FEEDBACK_H

#include <stdbool.h>

struct ctl_feedback_opts {
  double gain_up;   /* per round, when measured <= target (default 0.14) */
  double gain_down; /* per round, when measured > target (default 0.5) */
  double margin;    /* setpoint below target, fraction (default 0.005) */
  double max_over;  /* offset at most this fraction of target (default 0.01) */
  double max_under; /* offset at least minus this fraction of target (default 0.3) */
};

struct ctl_feedback {
  struct ctl_feedback_opts opts;
  double offset_w;
  bool started;   /* the event's offset is set (ctl_feedback_start, or resumed) */
  int lag_rounds; /* readings above the caps in a row */
  double reserve_w;   /* the setpoint is lowered by this (ctl_feedback_reserve) */
  bool reserve_known; /* reserve_w is already in the offset (not after a resume) */
};

void ctl_feedback_opts_default(struct ctl_feedback_opts *opts);
/* At an event's first round: the offset at max_over * target, unless it was
 * already started (resumed from the store: ctl_feedback_resume). */
void ctl_feedback_start(struct ctl_feedback *fb, double target_w);
/* A restarted controller's offset, as stored. */
void ctl_feedback_resume(struct ctl_feedback *fb, double offset_w);
void ctl_feedback_init(struct ctl_feedback *fb, const struct ctl_feedback_opts *opts);
/* Back to no offset (a new event). */
void ctl_feedback_reset(struct ctl_feedback *fb);
/* Where the last allocation stood: free, or pinned at the top or bottom. */
enum ctl_feedback_limit { CTL_FB_FREE = 0, CTL_FB_AT_TOP, CTL_FB_AT_BOTTOM };

/* One round: updates the offset from the measured total and returns the
 * budget for the next allocation. caps_w: the sum of the caps in force when
 * the measurement was taken (INFINITY when none); limit: the last
 * allocation gave every job its P_max (then the offset does not grow) or its
 * least power (then it does not fall). */
double ctl_feedback_step(struct ctl_feedback *fb, double target_w, double measured_w, double caps_w,
                         enum ctl_feedback_limit limit);
/* The outage reserve. Caps stay in force for a lease after the controller
 * stops (killed, host lost): whatever can rise under them without a new plan
 * must fit in the band. rise_w (ctl_plan_summary.rise_w) is that rise:
 * mostly GPUs without a job, which idle far under their least limit and
 * climb to it when a job starts on them. The part of it beyond max_over *
 * target is the reserve: the setpoint sits that much lower, so that the
 * measured total plus every possible rise stays at or under target *
 * (1 + max_over). A change of the reserve moves the offset by as much at
 * once (feed-forward), instead of over the rounds gain_up would take. Call
 * it before ctl_feedback_step, with the rise of the caps in force. */
void ctl_feedback_reserve(struct ctl_feedback *fb, double target_w, double rise_w);
/* The budget for a target with the current offset, without updating it. */
double ctl_feedback_budget(const struct ctl_feedback *fb, double target_w);

#endif
