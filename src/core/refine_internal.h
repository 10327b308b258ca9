/* Internal to the closed-loop refinement (refine.c, refine_family.c): the
 * refined curve's state, read by the callback curve handed to callers. */
#ifndef PFLEX_CORE_REFINE_INTERNAL_H
#define PFLEX_CORE_REFINE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include <gsl/gsl_min.h>

#include "pflex/curve.h"

/* Samples of the family shape's corrected curve, uniform in clock. */
#define REFINE_CORR_TABLE 65

/* The refined curve. Family shape: a refitted member q times a residual
 * correction (the ratio of each observed throughput to the member's,
 * interpolated linearly in power between the observed powers and 1 at P_max,
 * constant below the lowest observation), tabulated in tp/tt. Data shape: the
 * re-predicted curve (1 - blend) prior + blend prior2, mapped through the
 * observations as knots (ap, ar; aq the re-predicted curve at the knots). */
struct refine_corr {
  struct pflex_curve_params q;
  const struct pflex_curve *prior, *prior2;
  double blend;
  double *aq; /* max_obs + 1 */
  double p_min, p_max, t_max;
  size_t n;
  double *ap, *ar; /* anchors: power, ratio or throughput (sorted, merged) */
  /* Data shape: the map from the re-predicted curve's throughput to the
   * refined one through the knots (sx -> sy, max_obs + 2 each), a monotone
   * C1 Steffen interpolant (its cubics in spoly, 4 (max_obs + 1) doubles,
   * where smooth; else piecewise linear, knot_eval's segments). */
  double *sx, *sy, *spoly;
  size_t sn;
  bool smooth;
  double tp[REFINE_CORR_TABLE], tt[REFINE_CORR_TABLE];
  /* Data shape with templates: the re-predicted curve is instead the mean
   * of the templates nearest the observations (refine_near.c), a Steffen
   * curve through (npw, nq) (its cubics in npoly) where `near`, else the candidates' blend
   * above. */
  const double *npw;
  double *nq;
  double *npoly; /* 4 (REFINE_NEAR_K - 1) */
  bool near;
};

/* The templates of a job read for the nearest-templates shape: their
 * relative throughput at REFINE_NEAR_K powers uniform from P_min to P_max
 * (pw), one row each; at most REFINE_NEAR_MAX of them (a systematic sample
 * past that). The shape is the mean of the templates weighted by a
 * Gaussian kernel in their distance from the observed knots, its width the
 * distance of the REFINE_NEAR_NB-th nearest. */
#define REFINE_NEAR_K 65
#define REFINE_NEAR_MAX 256
#define REFINE_NEAR_NB 8
struct refine_near {
  double pw[REFINE_NEAR_K];
  double *rel; /* n x REFINE_NEAR_K */
  size_t n;
};

/* The used templates (use NULL: all) read on the job's range; *ret NULL when
 * none is used. -ENOMEM. */
int pflex__refine_near_new(double p_min, double p_max, const struct pflex_curve *const *tmpl,
                           size_t nt, const unsigned char *use, struct refine_near **ret);
void pflex__refine_near_free(struct refine_near *nb); /* accepts NULL */
/* The shape through nk knots (ap W, ar throughput, t_max the job's): q, at
 * nb->pw, in throughput, non-decreasing, t_max at P_max. The kernel is at
 * least floor_h wide (relative throughput). d: 2 nb->n scratch. */
void pflex__refine_near_fit(const struct refine_near *nb, const double *ap, const double *ar,
                            size_t nk, double t_max, double floor_h, double *d, double *q);

/* After pflex__refine_near_fit with scratch d: the relative SD of the
 * kernel-weighted templates' change from p0 to p1 (W); NAN where their mean
 * change is not positive. */
double pflex__refine_near_spread(const struct refine_near *nb, const double *d, double p0,
                                 double p1);

/* Sorts m (power, value) pairs by power and sets the anchors c->ap, c->ar to
 * the means of each run of pairs within tol W of the run's first. */
void pflex__refine_anchors_merge(struct refine_corr *c, double *pairs, size_t m, double tol);

/* Family shape. base: the family defaults of the job; pred: the predicted
 * member. pflex__refine_family_fit is pflex_refine_family_fit with caller scratch
 * (x: nobs doubles; m: a Brent minimizer) and the path position found. */
int pflex__refine_family_fit(const struct pflex_curve_params *base, const struct pflex_curve_params *pred,
                      double prior_sd, double noise, double p_max, double t_max,
                      const double *obs_w, const double *obs_t, size_t nobs, double *x,
                      gsl_min_fminimizer *m, struct pflex_curve_params *ret, double *ret_u);
/* The residual correction from the observations (pairs: 2 * nobs scratch),
 * then its table. */
void pflex__refine_corr_set(struct refine_corr *c, const double *w, const double *t, size_t nobs,
                     double *pairs);
void pflex__refine_corr_tabulate(struct refine_corr *c);
double pflex__refine_corr_eval(void *ctx, double p);
/* Posterior and prior SD of the path position over (0, 2] on a fine grid;
 * x: the clocks of the observations, as pflex__refine_family_fit left them. */
void pflex__refine_family_spread(const struct pflex_curve_params *base,
                          const struct pflex_curve_params *pred, double prior_sd, double noise,
                          double p_max, double t_max, const double *obs_w, const double *obs_t,
                          size_t nobs, const double *x, double *ret_post, double *ret_prior);

#endif
