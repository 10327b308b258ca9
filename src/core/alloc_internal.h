/* Shared between the allocator's files (src/core/alloc.c, alloc_oracle.c,
 * alloc_hull.c): the piecewise-linear pieces both samplings use, and the
 * exact oracle's entry point and cache. Not public API. */
#ifndef PFLEX_CORE_ALLOC_INTERNAL_H
#define PFLEX_CORE_ALLOC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pflex/alloc.h"

/* A point of a sampled curve, and a hull segment: its slope and length (W). */
struct pflex__hullpt {
  double x, y;
};
struct pflex__seg {
  double slope, dp;
};

/* Upper concave hull (monotone chain) of points sorted by x, in place: its
 * number of vertices; collinear points are dropped, so slopes strictly fall. */
size_t pflex__alloc_upper_hull(struct pflex__hullpt *p, size_t n);

/* Knots on [lo, hi]: k uniform points (the ends only for a piecewise linear
 * curve) merged with the curve's measured points, sorted, unique; room for
 * k + points + 2. Their number. */
size_t pflex__alloc_knots(const struct pflex_curve *c, double lo, double hi, unsigned k,
                          double *xs);

/* Samples job j's curve on [lo, hi] (knots as in pflex__alloc_knots; a
 * parametric curve uniformly in clock) and writes the segments of its
 * weighted upper hull that gain throughput, steepest first, to out: their
 * number. xs, ys, hp, out: room for knots + points + 2 (alloc.c). */
size_t pflex__alloc_hull_segments(const struct pflex_alloc_job *j, double lo, double hi,
                                  unsigned knots, double *xs, double *ys, struct pflex__hullpt *hp,
                                  struct pflex__seg *out);

/* The slope at which the cumulative length of s[0..n) in order of decreasing
 * slope first reaches budget (-INFINITY when all are shorter); permutes s.
 * Expected linear time. */
double pflex__alloc_threshold(struct pflex__seg *s, size_t n, double budget);

/* optimal's points per curve when the options do not say. */
#define PFLEX__ALLOC_DEFAULT_KNOTS 17u

/* A job's resolved bounds (lo raised to its throughput floor) and data. */
struct pflex__prep {
  double lo, hi, tmax;
  double cap_min, cap_max;
};

_Static_assert(sizeof(struct pflex__prep) % sizeof(double) == 0, "prep: a stride of doubles");

/* Resolves job j's bounds into *p (alloc.c); *ret_floor_bad is set when
 * its throughput floor lies above its T_max. -EINVAL as pflex_alloc_run. */
int pflex__alloc_prep_job(const struct pflex_alloc_job *j, struct pflex__prep *p,
                          bool *ret_floor_bad);

/* Every job's bounds into pr (n), their sums and whether a throughput floor
 * lies above its T_max: pflex_alloc_run's first step (alloc.c). */
int pflex__alloc_prepare(const struct pflex_alloc_job *jobs, size_t n, struct pflex__prep *pr,
                         double *ret_min_w, double *ret_max_w, bool *ret_floor_infeasible);

/* optimal's first greedy pass on prepared jobs (their bounds as windows),
 * kept by alloc.c, owned by the prepared jobs (alloc_prepared.c): state 0
 * none yet, 1 kept, -1 never (a callback curve: what it computes may
 * change, its pointer not). The weights and knots it was made with; per
 * job its hull's length jn and distinct hull dist (SIZE_MAX: none); per
 * distinct hull its first job rep, job count mult and segments at off in
 * segs. */
struct pflex__pass1 {
  int state;
  unsigned knots;
  double *weight, *mult;
  size_t *jn, *dist, nd, *rep, *off;
  struct pflex__seg *segs;
};

/* As pflex__alloc_prepare, from jobs prepared before (alloc_prepared.c):
 * the same values where jobs are those it was made from (but for weights,
 * checked here), and in *ret_pass1 its first pass's record; prepares them
 * afresh where a job's curve is not the one it was made with, or n
 * differs (*ret_pass1 NULL). */
int pflex__alloc_prepared_take(struct pflex_alloc_prepared *pp, const struct pflex_alloc_job *jobs,
                               size_t n, struct pflex__prep *pr, double *ret_min_w,
                               double *ret_max_w, bool *ret_floor_infeasible,
                               struct pflex__pass1 **ret_pass1);

/* Frees a pass record's arrays and sets it to state s. */
void pflex__pass1_reset(struct pflex__pass1 *k, int s);

/* Job j's weight in the cut of a proportional strategy s (alloc.c); may
 * evaluate T_max into p->tmax (pfi). -EINVAL on a bad feature. */
int pflex__alloc_share_weight(const struct pflex_alloc_job *j, struct pflex__prep *p,
                              enum pflex_alloc_strategy s, double *ret_w);

/* A job in the water filling's selection: its values travel with it, so the
 * partitions read memory in order. */
struct pflex__wf_job {
  double ratio, h, w;
  size_t i;
};

/* The water filling's exact selection (alloc.c): permutes job[0..m) so that
 * the jobs clipped to their lower bound come first, in ratio order a prefix
 * (ties together), and returns their number; *ret_hacc and *ret_wacc their
 * headroom and weight. wsum: the weight of these jobs and of every job
 * above them in ratio; cut: what is to be taken from them all. */
size_t pflex__alloc_wf_clip(struct pflex__wf_job *job, size_t m, double wsum, double cut,
                            double *ret_hacc, double *ret_wacc);

/* Rounding can leave the sum of p a few ulps over the target: takes the
 * excess (and a margin) from jobs above their floor lo[i * lo_stride]. */
void pflex__alloc_enforce_target(double *p, const double *lo, size_t lo_stride, size_t n,
                                 double target);

/* fmin and fmax, inline and bit for bit glibc's (a library call each: the
 * compiler does not inline them without -ffinite-math-only): the smaller
 * (larger) value, x where the two compare equal (0 and -0), the one that
 * is not a NaN where one is, y where both are (tests/unit/test_alloc_prepared.c). */
static inline double pflex__fmin(double x, double y) {
  return (y != y && x == x) || x <= y ? x : y;
}

static inline double pflex__fmax(double x, double y) {
  return (y != y && x == x) || x >= y ? x : y;
}

/* Hash mixing for the caches' keys. */
static inline uint64_t pflex__alloc_mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

static inline uint64_t pflex__alloc_dbits(double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

/* The digest job j's curve is cached under, and in *ret_keep whether a
 * cache may keep it across calls: the curve's own digest (its content),
 * but for a callback curve, whose digest names its function: that one is
 * kept only with the job's curve_digest (the caller's content digest), and
 * keyed by both. */
static inline uint64_t pflex__alloc_curve_key(const struct pflex_alloc_job *j, bool *ret_keep) {
  uint64_t d = pflex_curve_digest(j->curve);
  bool callback = pflex_curve_kind(j->curve) == PFLEX_CURVE_CALLBACK;
  *ret_keep = !callback || j->curve_digest != 0;
  return callback && j->curve_digest ? pflex__alloc_mix(d, j->curve_digest) : d;
}

/* The oracle's cache of concave majorants (alloc_oracle.c), kept in a
 * pflex_alloc_ctx across calls. */
struct pflex__oracle_cache;
void pflex__oracle_cache_free(struct pflex__oracle_cache *oc);

/* The relative tolerance of the oracle: its answer is within this share of
 * the optimum's weighted throughput, certified (docs/allocation.md). */
#define PFLEX__ORACLE_TOL 1e-6

/* The exact oracle: maximizes sum weight_i T_i(p_i) over lo_i <= p_i <=
 * hi_i, sum p_i <= target (target >= sum lo), by branch and bound on
 * concave majorants of the curves; p (n) gets the answer, *ret_gap the
 * certified bound on its shortfall (weighted throughput units). cache:
 * NULL, or where the context keeps its cache (created on first use). */
int pflex__alloc_oracle(const struct pflex_alloc_job *jobs, size_t n, const double *lo,
                        const double *hi, double target, struct pflex__oracle_cache **cache,
                        double *p, double *ret_gap);

#endif
