/* A band scaled by each job's own spread (include/pflex/shrink.h,
 * pflex_shrink_scaled_band): the calibration groups' errors standardized by
 * what their refinement's templates disagreed about, the job's band that
 * standardized quantile times its own disagreement. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "pflex/error.h"
#include "pflex/shrink.h"

/* The q-quantile of z[0 .. k): the sample's where PFLEX_SHRINK_TAIL_MIN
 * values lie beyond it, else a normal's fitted to them (as the band's). */
static double z_quantile(double *z, size_t k, double q) {
  if ((double)k * fmin(q, 1 - q) >= PFLEX_SHRINK_TAIL_MIN) {
    gsl_sort(z, 1, k);
    return gsl_stats_quantile_from_sorted_data(z, 1, k, q);
  }
  double m = gsl_stats_mean(z, 1, k), sd = gsl_stats_sd_m(z, 1, k, m);
  return m + gsl_cdf_ugaussian_Pinv(q) * sd;
}

int pflex_shrink_scaled_band(const double *ratio, const double *spread, size_t n, double q,
                             double *ret_z) {
  if ((n && (!ratio || !spread)) || !ret_z || !(q > 0 && q < 1)) return -EINVAL;
  double *z = malloc((n ? n : 1) * sizeof *z);
  if (!z) return -ENOMEM;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (ratio[i] > 0 && isfinite(ratio[i]) && spread[i] > 0 && isfinite(spread[i]))
      z[k++] = log(ratio[i]) / fmax(spread[i], PFLEX_SHRINK_MIN_SPREAD);
  int err = k < 2 ? -PFLEX_E_NOPOINTS : 0;
  if (!err) *ret_z = z_quantile(z, k, q);
  free(z);
  return err;
}

double pflex_shrink_scaled_factor(double z, double spread, bool rise) {
  if (isnan(z)) return rise ? 1e-3 : PFLEX_SHRINK_MAX_LOSS; /* no evidence: the most pessimistic */
  double v = exp(z * fmax(spread, PFLEX_SHRINK_MIN_SPREAD));
  if (rise) return v < 1e-3 ? 1e-3 : v > 1 ? 1 : v;
  return v < 1 ? 1 : v > PFLEX_SHRINK_MAX_LOSS ? PFLEX_SHRINK_MAX_LOSS : v;
}
