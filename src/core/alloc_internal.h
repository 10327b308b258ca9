/* Shared between the allocator's files (src/core/alloc.c, alloc_oracle.c,
 * alloc_hull.c): the piecewise-linear pieces both samplings use, and the
 * exact oracle's entry point and cache. Not public API. */
#ifndef PFLEX_CORE_ALLOC_INTERNAL_H
#define PFLEX_CORE_ALLOC_INTERNAL_H

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

/* The slope at which the cumulative length of s[0..n) in order of decreasing
 * slope first reaches budget (-INFINITY when all are shorter); permutes s.
 * Expected linear time. */
double pflex__alloc_threshold(struct pflex__seg *s, size_t n, double budget);

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
