/* Piecewise-linear pieces the allocator's optimizer (alloc.c) and its exact
 * oracle (alloc_oracle.c) share: the knots a curve is sampled at, the upper
 * concave hull of sampled points, and the threshold slope of a budget over
 * hull segments (src/core/alloc_internal.h). */
#include <math.h>
#include <stddef.h>

#include "core/alloc_internal.h"
#include "pflex/curve.h"

/* Knots of job i's piecewise-linear approximation on [lo, hi], sorted, unique:
 * a uniform grid merged with the curve's measured points (already sorted). */
size_t pflex__alloc_knots(const struct pflex_curve *c, double lo, double hi, unsigned k,
                          double *xs) {
  size_t np, n = 0, m = 0;
  const struct pflex_curve_point *pts = pflex_curve_points(c, &np);
  unsigned ng = pflex_curve_piecewise_linear(c) ? 2 : k; /* exact: the ends only */
  while (m < np && !(pts[m].power_w > lo))
    m++;
  for (unsigned g = 0; g < ng; g++) {
    double x = g + 1 == ng ? hi : lo + (hi - lo) * g / (ng - 1);
    for (; m < np && pts[m].power_w < x; m++)
      if (n == 0 || pts[m].power_w > xs[n - 1]) xs[n++] = pts[m].power_w;
    if (n == 0 || x > xs[n - 1]) xs[n++] = x;
  }
  return n;
}

/* Upper concave hull (monotone chain) of points sorted by x, in place. */
size_t pflex__alloc_upper_hull(struct pflex__hullpt *p, size_t n) {
  size_t h = 0;
  for (size_t i = 0; i < n; i++) {
    while (h >= 2) {
      struct pflex__hullpt a = p[h - 2], b = p[h - 1];
      double cross = (b.x - a.x) * (p[i].y - a.y) - (b.y - a.y) * (p[i].x - a.x);
      if (cross >= 0)
        h--; /* b lies on or below the chord a-p[i] */
      else
        break;
    }
    p[h++] = p[i];
  }
  return h;
}

/* The slope lambda of the segment at which the cumulative length, in order of
 * decreasing slope, first reaches budget; -INFINITY when all segments together
 * are shorter. Expected linear time: 3-way quickselect weighted by length. */
double pflex__alloc_threshold(struct pflex__seg *s, size_t n, double budget) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    double a = s[lo].slope, b = s[lo + (hi - lo) / 2].slope, c = s[hi - 1].slope;
    double pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
    /* Dutch flag: [lo, gt) > pivot, [gt, i) == pivot, [lt, hi) < pivot; the
     * lengths of the first two parts are summed on the way. */
    size_t gt = lo, i = lo, lt = hi;
    double g = 0, e = 0;
    while (i < lt) {
      if (s[i].slope > pivot) {
        g += s[i].dp;
        struct pflex__seg t = s[gt];
        s[gt++] = s[i];
        s[i++] = t;
      } else if (s[i].slope < pivot) {
        struct pflex__seg t = s[--lt];
        s[lt] = s[i];
        s[i] = t;
      } else {
        e += s[i].dp;
        i++;
      }
    }
    if (g >= budget) {
      hi = gt;
    } else if (g + e >= budget) {
      return pivot;
    } else {
      budget -= g + e;
      lo = lt;
    }
  }
  return -INFINITY;
}
