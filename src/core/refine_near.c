/* The data shape's refined curve shaped by the templates whose curves pass
 * nearest the job's observations (refine_internal.h).
 *
 * After an observation the question the optimizer asks is the curve's slope
 * near the observed power, given the throughput seen there. The candidates'
 * shape (templates averaged by how near their PFI lies to a PFI) answers it
 * for the PFI, a summary over the whole grid; the templates whose own
 * relative throughput at the observed relative powers lies nearest to the
 * observed one answer it where it is asked. Measured on the mixed clusters
 * of tests/integration/study_fair.sh (docs/study.md, "Seventh wave"). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "core/refine_internal.h"

/* Template j's relative throughput at relative power x: its curve read at
 * x times its P_max, below its own P_min continued along its slope over
 * the next 0.05 of P_max (as the templates' shape does, curve.c), floored
 * at 0. */
static double template_rel(const struct pflex_curve *c, double x) {
  double pm = pflex_curve_p_max(c), tm = pflex_curve_t_max(c), lo = pflex_curve_p_min(c) / pm;
  if (x >= lo) return pflex_curve_eval(c, x * pm) / tm;
  const double h = 0.05;
  double r0 = pflex_curve_eval(c, lo * pm) / tm, r1 = pflex_curve_eval(c, (lo + h) * pm) / tm;
  double r = r0 - (r1 - r0) / h * (lo - x);
  return r > 0 ? r : 0;
}

int pflex__refine_near_new(double p_min, double p_max, const struct pflex_curve *const *tmpl,
                           size_t nt, const unsigned char *use, struct refine_near **ret) {
  size_t n = 0;
  for (size_t j = 0; j < nt; j++)
    n += !use || use[j];
  *ret = NULL;
  if (n == 0) return 0;
  size_t stride = (n + REFINE_NEAR_MAX - 1) / REFINE_NEAR_MAX, keep = (n + stride - 1) / stride;
  struct refine_near *nb = calloc(1, sizeof *nb);
  if (!nb || !(nb->rel = malloc(keep * REFINE_NEAR_K * sizeof *nb->rel))) {
    free(nb);
    return -ENOMEM;
  }
  for (size_t m = 0; m < REFINE_NEAR_K; m++)
    nb->pw[m] =
        m + 1 == REFINE_NEAR_K ? p_max : p_min + (p_max - p_min) * (double)m / (REFINE_NEAR_K - 1);
  /* Past REFINE_NEAR_MAX templates used, every stride-th of them. */
  for (size_t j = 0, u = 0; j < nt; j++) {
    if (use && !use[j]) continue;
    if (u++ % stride) continue;
    double *row = &nb->rel[nb->n++ * REFINE_NEAR_K];
    for (size_t m = 0; m < REFINE_NEAR_K; m++)
      row[m] = template_rel(tmpl[j], nb->pw[m] / p_max);
  }
  *ret = nb;
  return 0;
}

void pflex__refine_near_free(struct refine_near *nb) {
  if (!nb) return;
  free(nb->rel);
  free(nb);
}

/* A row's value at power p, linear between the table's powers. */
static double row_at(const struct refine_near *nb, const double *row, double p) {
  double f = (p - nb->pw[0]) / (nb->pw[REFINE_NEAR_K - 1] - nb->pw[0]) * (REFINE_NEAR_K - 1);
  if (!(f > 0)) return row[0];
  size_t m = (size_t)f;
  if (m >= REFINE_NEAR_K - 1) return row[REFINE_NEAR_K - 1];
  return row[m] + (f - (double)m) * (row[m + 1] - row[m]);
}

/* The K-th smallest of n values (partial selection; n small). */
static double kth_smallest(double *v, size_t n, size_t k) {
  for (size_t i = 0; i <= k && i < n; i++) {
    size_t b = i;
    for (size_t j = i + 1; j < n; j++)
      if (v[j] < v[b]) b = j;
    double x = v[i];
    v[i] = v[b];
    v[b] = x;
  }
  return v[k < n ? k : n - 1];
}

double pflex__refine_near_spread(const struct refine_near *nb, const double *d, double p0,
                                 double p1) {
  const double *w = d + nb->n;
  double sw = 0, s1 = 0, s2 = 0;
  for (size_t j = 0; j < nb->n; j++) {
    if (w[j] == 0) continue;
    const double *row = &nb->rel[j * REFINE_NEAR_K];
    double c = row_at(nb, row, p1) - row_at(nb, row, p0);
    sw += w[j], s1 += w[j] * c, s2 += w[j] * c * c;
  }
  if (!(sw > 0)) return NAN;
  double mean = s1 / sw, var = s2 / sw - mean * mean;
  return mean > 0 ? sqrt(var > 0 ? var : 0) / mean : NAN;
}

void pflex__refine_near_fit(const struct refine_near *nb, const double *ap, const double *ar,
                            size_t nk, double t_max, double floor_h, double *d, double *q) {
  /* Each template's RMS distance from the knots, in relative throughput. */
  for (size_t j = 0; j < nb->n; j++) {
    const double *row = &nb->rel[j * REFINE_NEAR_K];
    double s = 0;
    for (size_t k = 0; k < nk; k++) {
      double e = row_at(nb, row, ap[k]) - ar[k] / t_max;
      s += e * e;
    }
    d[j] = sqrt(s / (double)(nk ? nk : 1));
  }
  /* The kernel's width: the distance of the k-th nearest, k = sqrt(n) (the
   * usual nearest-neighbour rule: more neighbours as templates grow denser)
   * up to REFINE_NEAR_NB. */
  double *tmp = d + nb->n;
  for (size_t j = 0; j < nb->n; j++)
    tmp[j] = d[j];
  size_t k = (size_t)ceil(sqrt((double)nb->n));
  double h = kth_smallest(tmp, nb->n, (k < REFINE_NEAR_NB ? k : REFINE_NEAR_NB) - 1);
  if (!(h > floor_h)) h = floor_h;
  double sw = 0;
  for (size_t m = 0; m < REFINE_NEAR_K; m++)
    q[m] = 0;
  for (size_t j = 0; j < nb->n; j++) {
    double z = d[j] / h, w = z < 38 ? exp(-0.5 * z * z) : 0;
    tmp[j] = w; /* kept for pflex__refine_near_spread */
    if (w == 0) continue;
    sw += w;
    for (size_t m = 0; m < REFINE_NEAR_K; m++)
      q[m] += w * nb->rel[j * REFINE_NEAR_K + m];
  }
  for (size_t m = 0; m < REFINE_NEAR_K; m++)
    q[m] = (m + 1 == REFINE_NEAR_K ? 1 : fmin(fmax(q[m] / sw, 1e-3), 1)) * t_max;
  /* Made non-decreasing (a template's extrapolation may not be). */
  for (size_t m = REFINE_NEAR_K - 1; m-- > 0;)
    if (q[m] > q[m + 1]) q[m] = q[m + 1];
}
