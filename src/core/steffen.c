/* Steffen's interpolation as GSL sets it up (steffen.h). */
#include "core/steffen.h"

#include <math.h>

static double sign_of(double x, double y) { /* x with the sign of y (x >= 0) */
  return (x < 0 && y > 0) || (x > 0 && y < 0) ? -x : x;
}

bool pflex__steffen_ok(const double *xs, size_t n) {
  if (n < 3) return false;
  for (size_t i = 1; i < n; i++)
    if (!(xs[i] > xs[i - 1])) return false;
  return true;
}

/* The slopes at the points are the paper's (eq. 11; one-sided at the ends),
 * the coefficients its eqs. 2-5. */
void pflex__steffen_poly(const double *xs, const double *ys, size_t n, double *poly) {
  double yp_prev = (ys[1] - ys[0]) / (xs[1] - xs[0]);
  for (size_t i = 0; i + 1 < n; i++) {
    double yp_next;
    if (i + 2 < n) {
      double hi = xs[i + 2] - xs[i + 1], him1 = xs[i + 1] - xs[i];
      double si = (ys[i + 2] - ys[i + 1]) / hi, sim1 = (ys[i + 1] - ys[i]) / him1;
      double pi = (sim1 * hi + si * him1) / (him1 + hi);
      double m = fabs(si) < 0.5 * fabs(pi) ? fabs(si) : 0.5 * fabs(pi);
      m = fabs(sim1) < m ? fabs(sim1) : m;
      yp_next = (sign_of(1.0, sim1) + sign_of(1.0, si)) * m;
    } else {
      yp_next = (ys[n - 1] - ys[n - 2]) / (xs[n - 1] - xs[n - 2]);
    }
    double h = xs[i + 1] - xs[i], s = (ys[i + 1] - ys[i]) / h;
    poly[4 * i] = (yp_prev + yp_next - 2 * s) / h / h;
    poly[4 * i + 1] = (3 * s - 2 * yp_prev - yp_next) / h;
    poly[4 * i + 2] = yp_prev;
    poly[4 * i + 3] = ys[i];
    yp_prev = yp_next;
  }
}
