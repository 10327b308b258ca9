/* A round's raises, held to the room the last reading leaves. */
#ifndef CTL_RAISES_H
#define CTL_RAISES_H

#include <stddef.h>

#include "controller/jobs.h"
#include "controller/nodes.h"

/* Raises wait for the cuts that fund them. NVML's averaged readings lag a
 * limit change by a second or so, and a job lifted (from its least power
 * while it loaded, or given more by the allocation) rises as soon as its
 * limit does, while the jobs cut to make room fall over the same second:
 * applying both at once shows a sum over the target for a reading or two.
 * So this round's raises are scaled down to the headroom the last reading
 * (measured_w) leaves under the target itself; the rest follows once the
 * cuts show in the readings (the next rounds re-plan). Not under target +
 * max_over, the compliance band's edge: the band is left for what no reading
 * shows yet (a loading job starting to train under its cap, a reading's
 * noise, a raise drawn sooner than the reading's average shows); filled to
 * its edge, one sanitized CI run with the three faults read 1.32% over.
 * Not under the target less the outage reserve (feedback.h) either: held
 * that low, raises starved (50 nodes, 120 s churn, seed 5: 0.53 of the gap
 * against 0.80); the feedback's setpoint already keeps the reserve.
 * What of last round's raises the reading does not show yet counts as drawn
 * (ctl_jobset_raises_in_flight): the room it seems to leave is not there. A
 * first cap (from the default limit) is a cut, not a raise; a cap above the
 * fallback a restarted controller finds is a raise (the limit a GPU holds:
 * the cap its agent acknowledged, else the limit in force).
 *
 * Lowers the raised GPUs' cap_w (every raise by the same share), adds each
 * job's pushed raise to its raised_w, and returns the watts withheld. */
/* The smallest raise of a GPU's cap that is pushed: a raise under
 * max(5 W, 1% of the cap held) is not sent (loop.c), so a cap may stay that
 * far under what the plan gave it (jobs.c counts such a share as held). */
static inline double ctl_smallest_raise_w(double held_w) {
  return held_w * 0.01 > 5.0 ? held_w * 0.01 : 5.0;
}

double ctl_limit_raises(struct ctl_node *nodes, size_t n, struct ctl_jobset *js, double target_w,
                        double measured_w);

#endif
