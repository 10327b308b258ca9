/* Never worse than an equal cut (issue 12 item 4; docs/study.md,
 * "Never worse than an equal cut").
 *
 * A predicted curve is a guess: allocating on it as if it were true moves
 * power away from the equal split as far as the guess says, and when the
 * guess is poor (a prior, an unseen GPU type) that does worse than not
 * moving at all. A shrunk curve counts a job's rise above an anchor power
 * (the equal cut's power for the job, or the power last applied and
 * observed) and its fall below it only as far as the prediction's
 * uncertainty supports:
 *
 *     g(p) = f(a) + gain * (f(p) - f(a))   for p >= a
 *     g(p) = f(a) + loss * (f(p) - f(a))   for p <  a     (never below 0)
 *
 * with f the predicted curve and a the anchor. The factors are calibrated
 * on other jobs (pflex_shrink_ratio, pflex_shrink_band: how their true
 * curves rose and fell against their model curves), or come from the
 * predicted PFI and the SD of its error (pflex_shrink_factors: a curve's
 * throughput deficit 1 - T/T_max scales as 1/PFI, so the curve with PFI
 * pfi + z sd has every rise from the anchor pfi / (pfi + z sd) times the
 * predicted one, the one with pfi - z sd every fall pfi / (pfi - z sd)
 * times). Maximizing the sum of g is maximizing a pessimistic bound: the
 * anchor allocation is always available, so when each true curve's rises
 * and falls from its anchor are at least those of g, the allocation found
 * is not worse than the anchors'. With gain = loss = 1, g is f.
 *
 * g is concave where f is (the factor drops from loss >= 1 to gain <= 1 at
 * the anchor), unless pflex_shrink_set_far makes the factors depend on the
 * distance from the anchor. No globals; the curve points at the struct, which must stay
 * where it is while the curve is used. */
#ifndef PFLEX_SHRINK_H
#define PFLEX_SHRINK_H

#include <stdbool.h>
#include <stddef.h>

#include "pflex/alloc.h"
#include "pflex/curve.h"

/* The most a fall below the anchor is multiplied by: a PFI within z SDs of 0
 * leaves the job at its anchor unless power is left over. */
#define PFLEX_SHRINK_MAX_LOSS 10.0

/* The factors for a predicted PFI with error SD sd, z SDs wide: gain =
 * pfi / (pfi + z sd) in (0, 1], loss = pfi / (pfi - z sd) in [1,
 * PFLEX_SHRINK_MAX_LOSS] (a PFI at or below 0.05 counts as 0.05, as the
 * predicted curves do). -EINVAL when a number is not finite or sd, z < 0. */
int pflex_shrink_factors(double pfi, double sd, double z, double *ret_gain, double *ret_loss);

/* A shrunk curve: set up with pflex_shrink_init, used as s->curve, freed
 * with pflex_shrink_release. */
struct pflex_shrink {
  const struct pflex_curve *base; /* f: borrowed, must outlive the shrunk curve */
  double anchor_w, t_anchor;      /* a, f(a) */
  double gain, loss;
  /* Optional (pflex_shrink_set_far): the factors of a move of far_w or more
   * from the anchor, gain and loss being those of a move of at most near_w;
   * in between interpolated linearly in the distance. Unset: far = near. */
  double gain_far, loss_far, near_w, far_w;
  struct pflex_curve *curve; /* g, on base's [P_min, P_max] (a callback curve on *s) */
};

/* g for base around anchor_w (clamped to base's range) with the factors
 * (0 < gain <= 1 <= loss). -EINVAL on bad arguments, -ENOMEM. On error s
 * holds no curve. */
int pflex_shrink_init(struct pflex_shrink *s, const struct pflex_curve *base, double anchor_w,
                      double gain, double loss);
void pflex_shrink_release(struct pflex_shrink *s); /* s->curve NULL afterwards; idempotent */

/* A band that depends on how far a move goes: each calibration measures
 * how a model's change over one distance errs, so a move of d from the
 * anchor is counted with the factors measured for d (gain, loss up to
 * near_w; gain_far, loss_far from far_w; linear in d between), instead of
 * the more pessimistic of both everywhere:
 *     g(p) = f(a) + G(|p - a|) * (f(p) - f(a)).
 * g need not be concave where G changes (0 < near_w < far_w). -EINVAL on
 * bad arguments (s set up by pflex_shrink_init; 0 < gain_far <= 1 <=
 * loss_far finite). */
int pflex_shrink_set_far(struct pflex_shrink *s, double gain_far, double loss_far, double near_w,
                         double far_w);

/* Factors calibrated on other jobs instead of a PFI's SD. For a pair of a
 * job's model curve (predicted, or refined after an observation) and its
 * true (measured) one, the ratio of the true change from x0 P_max to x1
 * P_max (x0 < x1, each curve's own P_max, clamped to its range) to the
 * model's: NAN where the model does not change, at least 1e-3. */
double pflex_shrink_ratio(const struct pflex_curve *model, const struct pflex_curve *truth,
                          double x0, double x1);

/* The band from other jobs' ratios of rises (above an anchor) and falls
 * (below it): gain is the q-quantile of the rises (at most 1), loss the
 * (1 - q)-quantile of the falls (at least 1, at most PFLEX_SHRINK_MAX_LOSS).
 * Each quantile is the finite values' own (interpolated sample quantile)
 * where at least PFLEX_SHRINK_TAIL_MIN of them lie beyond it, else that of
 * a log-normal fitted to them (mean and SD of their logarithms: a few dozen
 * pairs cannot show a small quantile, a fit can extrapolate to it; where
 * they can show it, one flat outlier's ratio, floored at 1e-3, would
 * inflate the fit's SD for all). So the band holds what a PFI's SD misses,
 * the error of the curve's shape. -EINVAL on bad arguments (0 < q < 1),
 * -PFLEX_E_NOPOINTS when either has fewer than 2 finite values, -ENOMEM. */
#define PFLEX_SHRINK_TAIL_MIN 3
int pflex_shrink_band(const double *rise, size_t nr, const double *fall, size_t nf, double q,
                      double *ret_gain, double *ret_loss);

/* A band scaled by each job's own spread (docs/study.md, "Eighth wave").
 * A calibrated band is one quantile for every job of a kind, so a job whose
 * refined curve is well pinned pays for those whose curves are not. Where a
 * refinement says how far its curve is pinned (pflex_refine_spread: how
 * much the templates it averages disagree about a change), the calibration
 * groups' ratios are standardized by their own spreads, z = log(ratio) /
 * max(spread, PFLEX_SHRINK_MIN_SPREAD), and a job's factor is exp(z_q x its
 * spread). Into *ret_z the
 * q-quantile of z over the pairs with a finite positive ratio and spread:
 * the values' own where at least PFLEX_SHRINK_TAIL_MIN lie beyond it, else
 * a normal's fitted to them (a caller asks q for rises, 1 - q for falls). -EINVAL on bad
 * arguments (0 < q < 1), -PFLEX_E_NOPOINTS with fewer than 2 pairs, -ENOMEM.
 * (src/core/shrink_scaled.c) */
int pflex_shrink_scaled_band(const double *ratio, const double *spread, size_t n, double q,
                             double *ret_z);

/* The least spread a scaled factor is taken at: templates that agree more
 * closely than this still leave the job's own shape unlike theirs. (On the
 * study's data sets it binds nowhere: docs/study.md, "Eighth wave".) */
#define PFLEX_SHRINK_MIN_SPREAD 0.03

/* A rise's (gain, in [1e-3, 1]) or a fall's (loss, in [1,
 * PFLEX_SHRINK_MAX_LOSS]) factor exp(z max(spread, PFLEX_SHRINK_MIN_SPREAD))
 * from pflex_shrink_scaled_band's z; a z that is not a number gives the most
 * pessimistic factor (1e-3, PFLEX_SHRINK_MAX_LOSS). */
double pflex_shrink_scaled_factor(double z, double spread, bool rise);

/* Whether an allocation found on the jobs' (shrunk) curves beats the
 * anchors' by enough to be taken: sum of weight x curve at power[i] exceeds
 * the same at anchor_w[i] by more than min_gain of the latter. The
 * optimizer's answer is a numerical one: where it is not better on the
 * pessimistic bound than the anchors (which are feasible), the anchors are
 * the answer (a controller keeps the caps it has, the study the equal cut). */
bool pflex_shrink_worth(const struct pflex_alloc_job *jobs, const double *power_w,
                        const double *anchor_w, size_t n, double min_gain);

/* The SD of a prediction's error for group i, from the other folds alone:
 * the root mean square of pred[j] - truth[j] over the groups j with
 * fold[j] != fold[i] (fold NULL: every j != i) whose both values are
 * finite. So a held-out group's uncertainty never uses its own error (or its
 * cluster's). NAN when no such group. */
double pflex_shrink_fold_sd(const double *pred, const double *truth, const int *fold, size_t n,
                            size_t i);

/* pflex_shrink_fold_sd for every group i at once (into ret_sd[0 .. n)), in
 * O(n log n) instead of O(n^2): the squared errors summed per fold, each
 * group's sum over the other folds the sum of the folds before its own and
 * of those after (no subtraction, so no cancellation). Equal to
 * pflex_shrink_fold_sd up to rounding (the sums are taken in another
 * order). -ENOMEM. (src/core/shrink_folds.c) */
int pflex_shrink_fold_sds(const double *pred, const double *truth, const int *fold, size_t n,
                          double *ret_sd);

#endif
