/* Steffen's monotone cubic interpolation (M. Steffen, Astron. Astrophys. 239,
 * 443-450, 1990) evaluated without gsl_interp_eval, for the inner loops that
 * evaluate curves millions of times (measured curves in curve.c, the refined
 * curves' templates shape and knot map in refine.c). It is GSL's interpolant
 * bit for bit: the cubics' coefficients by the same expressions in the same
 * order and the same interval search (test_curve_eval and test_steffen
 * compare the two for exact equality). GSL's object still serves derivatives
 * where a caller needs them. */
#ifndef PFLEX_CORE_STEFFEN_H
#define PFLEX_CORE_STEFFEN_H

#include <stdbool.h>
#include <stddef.h>

/* Whether xs[0..n) can be interpolated as gsl_interp_init accepts it for
 * Steffen: n >= 3 points, strictly increasing. */
bool pflex__steffen_ok(const double *xs, size_t n);

/* The cubic of each interval i of n >= 2 points, d + t (c + t (b + t a)) with
 * t = x - xs[i], in poly[4i..4i+3] = a, b, c, d (4 (n - 1) doubles). */
void pflex__steffen_poly(const double *xs, const double *ys, size_t n, double *poly);

/* The interval of x as gsl_interp_bsearch(xs, x, 0, n - 1) finds it: the
 * last i <= n - 2 with xs[i] <= x, 0 when there is none (n >= 2). */
static inline size_t pflex__steffen_interval(const double *xs, size_t n, double x) {
  const double *base = xs;
  /* Branch-free: the answer stays in [base, base + len), len halving. */
  size_t len = n - 1;
  while (len > 1) {
    size_t half = len / 2;
    base = base[half] <= x ? base + half : base;
    len -= half;
  }
  return (size_t)(base - xs);
}

/* The interpolant at x in interval i. */
static inline double pflex__steffen_at(const double *xs, const double *poly, size_t i, double x) {
  double t = x - xs[i];
  const double *q = &poly[4 * i];
  return q[3] + t * (q[2] + t * (q[1] + t * q[0]));
}

#endif
