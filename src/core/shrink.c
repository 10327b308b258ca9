/* Shrunk curves: a prediction's gains counted only as far as its uncertainty
 * supports (include/pflex/shrink.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "pflex/error.h"
#include "pflex/shrink.h"

#define PFI_FLOOR 0.05 /* as the predicted curves (refine.c's data_curve) */

int pflex_shrink_factors(double pfi, double sd, double z, double *ret_gain, double *ret_loss) {
  if (!isfinite(pfi) || !isfinite(sd) || !isfinite(z) || sd < 0 || z < 0) return -EINVAL;
  double v = pfi > PFI_FLOOR ? pfi : PFI_FLOOR, w = z * sd;
  double loss = v - w > v / PFLEX_SHRINK_MAX_LOSS ? v / (v - w) : PFLEX_SHRINK_MAX_LOSS;
  *ret_gain = v / (v + w);
  *ret_loss = loss;
  return 0;
}

/* The factor of a move from the anchor to p, and its derivative in p. */
static double factor_at(const struct pflex_shrink *s, double p, double *ret_dfdp) {
  bool up = p >= s->anchor_w;
  double d = fabs(p - s->anchor_w), fn = up ? s->gain : s->loss, ff = up ? s->gain_far : s->loss_far;
  *ret_dfdp = 0;
  if (d <= s->near_w) return fn;
  if (d >= s->far_w) return ff;
  double slope = (ff - fn) / (s->far_w - s->near_w);
  *ret_dfdp = up ? slope : -slope;
  return fn + slope * (d - s->near_w);
}

static double shrunk_eval(void *ctx, double p) {
  const struct pflex_shrink *s = ctx;
  double dg, t = s->t_anchor + factor_at(s, p, &dg) * (pflex_curve_eval(s->base, p) - s->t_anchor);
  return t > 0 ? t : 0;
}

static double shrunk_deriv(void *ctx, double p) {
  const struct pflex_shrink *s = ctx;
  if (shrunk_eval(ctx, p) <= 0) return 0;
  double dg, g = factor_at(s, p, &dg);
  return g * pflex_curve_deriv(s->base, p) + dg * (pflex_curve_eval(s->base, p) - s->t_anchor);
}

int pflex_shrink_init(struct pflex_shrink *s, const struct pflex_curve *base, double anchor_w,
                      double gain, double loss) {
  if (!s) return -EINVAL;
  memset(s, 0, sizeof *s);
  if (!base || !isfinite(anchor_w) || !(gain > 0 && gain <= 1) || !(loss >= 1 && isfinite(loss)))
    return -EINVAL;
  double lo = pflex_curve_p_min(base), hi = pflex_curve_p_max(base);
  s->base = base;
  s->anchor_w = anchor_w < lo ? lo : anchor_w > hi ? hi : anchor_w;
  s->t_anchor = pflex_curve_eval(base, s->anchor_w);
  s->gain = s->gain_far = gain;
  s->loss = s->loss_far = loss;
  struct pflex_curve_fn fn = {.eval = shrunk_eval, .deriv = shrunk_deriv, .ctx = s};
  return pflex_curve_new_callback(&fn, lo, hi, &s->curve);
}

int pflex_shrink_set_far(struct pflex_shrink *s, double gain_far, double loss_far, double near_w,
                         double far_w) {
  if (!s || !s->curve || !(gain_far > 0 && gain_far <= 1) ||
      !(loss_far >= 1 && isfinite(loss_far)) || !(near_w > 0 && far_w > near_w && isfinite(far_w)))
    return -EINVAL;
  s->gain_far = gain_far, s->loss_far = loss_far, s->near_w = near_w, s->far_w = far_w;
  return 0;
}

void pflex_shrink_release(struct pflex_shrink *s) {
  if (!s) return;
  pflex_curve_free(s->curve);
  s->curve = NULL;
}

/* Curve c at x P_max (its own P_max; clamped to its range). */
static double at(const struct pflex_curve *c, double x) {
  return pflex_curve_eval(c, x * pflex_curve_p_max(c));
}

double pflex_shrink_ratio(const struct pflex_curve *model, const struct pflex_curve *truth,
                          double x0, double x1) {
  double dm = at(model, x1) - at(model, x0);
  return dm > 0 ? fmax((at(truth, x1) - at(truth, x0)) / dm, 1e-3) : NAN;
}

/* The z-quantile of a log-normal fitted to the finite values of v (mean and
 * SD of their logarithms); NAN with fewer than 2. */
static double lognormal_quantile(const double *v, size_t n, double z) {
  double m = 0, ss = 0;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(v[i])) m += log(v[i]), k++;
  if (k < 2) return NAN;
  m /= (double)k;
  for (size_t i = 0; i < n; i++)
    if (isfinite(v[i])) ss += (log(v[i]) - m) * (log(v[i]) - m);
  return exp(m + z * sqrt(ss / (double)(k - 1)));
}

/* The q-quantile of the finite values of v as they are (GSL's interpolated
 * sample quantile), where at least PFLEX_SHRINK_TAIL_MIN of them lie beyond
 * it (k min(q, 1 - q) >= that); else NAN (the fit's turn). -ENOMEM as NAN
 * with *err set. */
static double sample_quantile(const double *v, size_t n, double q, int *err) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    k += isfinite(v[i]) != 0;
  if ((double)k * fmin(q, 1 - q) < PFLEX_SHRINK_TAIL_MIN) return NAN;
  double *t = malloc(k * sizeof *t);
  if (!t) return *err = -ENOMEM, NAN;
  k = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(v[i])) t[k++] = v[i];
  gsl_sort(t, 1, k);
  double x = gsl_stats_quantile_from_sorted_data(t, 1, k, q);
  free(t);
  return x;
}

/* The band's q-quantile of v: the values' own where they show it, else
 * the log-normal's (z = Phi^-1(q), passed as the caller has it). */
static double band_quantile(const double *v, size_t n, double q, double z, int *err) {
  double x = sample_quantile(v, n, q, err);
  return isnan(x) && !*err ? lognormal_quantile(v, n, z) : x;
}

int pflex_shrink_band(const double *rise, size_t nr, const double *fall, size_t nf, double q,
                      double *ret_gain, double *ret_loss) {
  if ((nr && !rise) || (nf && !fall) || !(q > 0 && q < 1)) return -EINVAL;
  int err = 0;
  double z = gsl_cdf_ugaussian_Pinv(q); /* < 0 */
  double g = band_quantile(rise, nr, q, z, &err), l = band_quantile(fall, nf, 1 - q, -z, &err);
  if (err) return err;
  if (isnan(g) || isnan(l)) return -PFLEX_E_NOPOINTS;
  *ret_gain = g < 1e-3 ? 1e-3 : g > 1 ? 1 : g;
  *ret_loss = l < 1 ? 1 : l > PFLEX_SHRINK_MAX_LOSS ? PFLEX_SHRINK_MAX_LOSS : l;
  return 0;
}

bool pflex_shrink_worth(const struct pflex_alloc_job *jobs, const double *power_w,
                        const double *anchor_w, size_t n, double min_gain) {
  double v = 0, v0 = 0;
  for (size_t i = 0; i < n; i++) {
    v += jobs[i].weight * pflex_curve_eval(jobs[i].curve, power_w[i]);
    v0 += jobs[i].weight * pflex_curve_eval(jobs[i].curve, anchor_w[i]);
  }
  return v > v0 + min_gain * fabs(v0);
}

double pflex_shrink_fold_sd(const double *pred, const double *truth, const int *fold, size_t n,
                            size_t i) {
  double ss = 0;
  size_t m = 0;
  for (size_t j = 0; j < n; j++) {
    if (j == i || (fold && fold[j] == fold[i])) continue;
    double e = pred[j] - truth[j];
    if (!isfinite(e)) continue;
    ss += e * e;
    m++;
  }
  return m ? sqrt(ss / (double)m) : NAN;
}
