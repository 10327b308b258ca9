/* The family shape of the closed-loop refinement (include/pflex/refine.h):
 * the parametric family refitted to observations by maximum a posteriori
 * along pflex_curve_from_pfi's path, and the residual correction that makes
 * the refitted member pass through what was seen. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_min.h>

#include "core/refine_internal.h"
#include "pflex/refine.h"

/* The one-parameter path of pflex_curve_from_pfi: u in (0, 1] is c, u in
 * (1, 2] lowers vratio from its base value to 1 with c = 1. */
static struct pflex_curve_params on_path(const struct pflex_curve_params *base, double u) {
  struct pflex_curve_params q = *base;
  if (u <= 1) {
    q.c = u;
  } else {
    q.c = 1;
    q.vratio = base->vratio - (u - 1) * (base->vratio - 1);
    if (q.vratio < 1) q.vratio = 1;
  }
  return q;
}

struct refit {
  const struct pflex_curve_params *base;
  double p_max, t_max, u0, prior_sd, noise;
  const double *w, *t;
  const double *x; /* clock of each observation on the c-part of the path */
  size_t n;
};

/* Negative log posterior (up to a constant): squared standardized residuals. */
static double cost(double u, void *data) {
  const struct refit *r = data;
  struct pflex_curve_params q = on_path(r->base, u);
  double s = (u - r->u0) / r->prior_sd;
  s *= s;
  for (size_t k = 0; k < r->n; k++) {
    /* For u <= 1 only c varies, and the clock at a given power does not
     * depend on c: T/T_max = 1 / (c/x + 1 - c) without solving for x. */
    double model = u <= 1 ? (r->x[k] > 0 ? 1.0 / (u / r->x[k] + 1.0 - u) : 0.0)
                          : pflex_curve_family_tput(&q, r->w[k] / r->p_max);
    double e = (model - r->t[k] / r->t_max) / r->noise;
    s += e * e;
  }
  return s;
}

/* Where a member lies on the path from base (inverse of on_path). */
static double path_position(const struct pflex_curve_params *base,
                            const struct pflex_curve_params *q) {
  if (q->c < 1 || !(base->vratio > 1)) return q->c;
  double u = 1 + (base->vratio - q->vratio) / (base->vratio - 1);
  return u < 1 ? 1 : u > 2 ? 2 : u;
}

/* The path (knee and idle share of the prediction, c = 1 at its start) and
 * the posterior's terms, with x the clock of each observation. */
static void refit_setup(const struct pflex_curve_params *base,
                        const struct pflex_curve_params *pred, double prior_sd, double noise,
                        double p_max, double t_max, const double *obs_w, const double *obs_t,
                        size_t nobs, const double *x, struct pflex_curve_params *b,
                        struct refit *r) {
  *b = *base;
  b->c = 1;
  b->knee = pred->knee;
  b->idle_frac = pred->idle_frac;
  *r = (struct refit){.base = b,
                      .p_max = p_max,
                      .t_max = t_max,
                      .u0 = path_position(b, pred),
                      .prior_sd = prior_sd,
                      .noise = noise > 1e-6 ? noise : 1e-6,
                      .w = obs_w,
                      .t = obs_t,
                      .x = x,
                      .n = nobs};
}

/* Brent from a bracket (us[bi] below both neighbours); the better of its
 * minimum and the bracket's middle. */
static double polish(gsl_min_fminimizer *m, struct refit *r, const double *us, const double *fs,
                     size_t bi) {
  gsl_function F = {.function = cost, .params = r};
  if (gsl_min_fminimizer_set_with_values(m, &F, us[bi], fs[bi], us[bi - 1], fs[bi - 1], us[bi + 1],
                                         fs[bi + 1]) != GSL_SUCCESS)
    return us[bi];
  for (int it = 0; it < 100; it++) {
    if (gsl_min_fminimizer_iterate(m) != GSL_SUCCESS) break;
    double a = gsl_min_fminimizer_x_lower(m), z = gsl_min_fminimizer_x_upper(m);
    if (gsl_min_test_interval(a, z, 1e-7, 0) == GSL_SUCCESS) break;
  }
  double u = gsl_min_fminimizer_x_minimum(m), f = gsl_min_fminimizer_f_minimum(m);
  return f < fs[bi] ? u : us[bi];
}

int refine_family_fit(const struct pflex_curve_params *base, const struct pflex_curve_params *pred,
                      double prior_sd, double noise, double p_max, double t_max,
                      const double *obs_w, const double *obs_t, size_t nobs, double *x,
                      gsl_min_fminimizer *m, struct pflex_curve_params *ret, double *ret_u) {
  struct pflex_curve_params b;
  struct refit r;
  refit_setup(base, pred, prior_sd, noise, p_max, t_max, obs_w, obs_t, nobs, x, &b, &r);
  /* The clock at each observed power (the same for every c). */
  for (size_t k = 0; k < nobs; k++)
    x[k] = pflex_curve_family_clock(&b, obs_w[k] / p_max);
  if (nobs == 0) {
    *ret = on_path(&b, r.u0);
    *ret_u = r.u0;
    return 0;
  }
  /* A scan brackets the minimum (dense on the cheap c-part of the path);
   * Brent polishes it. */
  enum { NSCAN = 33 };
  const double lo = 1e-4;
  double best_u = lo, best = INFINITY, us[NSCAN], fs[NSCAN];
  size_t bi = 0, nscan = 25;
  for (size_t k = 0; k < nscan; k++) {
    us[k] = k < 25 ? lo + (1 - lo) * (double)k / 24 : 1 + (double)(k - 24) / 8;
    fs[k] = cost(us[k], &r);
    if (fs[k] < best) {
      best = fs[k];
      best_u = us[k];
      bi = k;
    }
    /* The costlier vratio part of the path only when the data push past c = 1. */
    if (k == 24 && bi == 24) nscan = NSCAN;
  }
  if (bi > 0 && bi + 1 < nscan && fs[bi] < fs[bi - 1] && fs[bi] < fs[bi + 1])
    best_u = polish(m, &r, us, fs, bi);
  *ret = on_path(&b, best_u);
  *ret_u = best_u;
  return 0;
}

int pflex_refine_family_fit(const struct pflex_curve_params *base,
                            const struct pflex_curve_params *pred, double prior_sd, double noise,
                            double p_max, double t_max, const double *obs_w, const double *obs_t,
                            size_t nobs, struct pflex_curve_params *ret) {
  if (!base || !pred || !ret || !(prior_sd > 0) || !(noise >= 0) || !(p_max > 0) ||
      !(t_max > 0) || (nobs && (!obs_w || !obs_t)))
    return -EINVAL;
  double *x = malloc((nobs ? nobs : 1) * sizeof *x);
  gsl_min_fminimizer *m = gsl_min_fminimizer_alloc(gsl_min_fminimizer_brent);
  int err = -ENOMEM;
  double u;
  if (x && m)
    err = refine_family_fit(base, pred, prior_sd, noise, p_max, t_max, obs_w, obs_t, nobs, x, m,
                            ret, &u);
  if (m) gsl_min_fminimizer_free(m);
  free(x);
  return err;
}

/* SD of u over (0, 2] under weights exp(-cost / 2), on a uniform grid. */
static double spread(struct refit *r) {
  enum { NU = 201 };
  double f[NU], fmin = INFINITY;
  for (size_t k = 0; k < NU; k++) {
    f[k] = cost(2.0 * (double)(k + 1) / NU, r);
    if (f[k] < fmin) fmin = f[k];
  }
  double sw = 0, su = 0, suu = 0;
  for (size_t k = 0; k < NU; k++) {
    double u = 2.0 * (double)(k + 1) / NU, w = exp(-0.5 * (f[k] - fmin));
    sw += w, su += w * u, suu += w * u * u;
  }
  double mean = su / sw, var = suu / sw - mean * mean;
  return var > 0 ? sqrt(var) : 0;
}

void refine_family_spread(const struct pflex_curve_params *base,
                          const struct pflex_curve_params *pred, double prior_sd, double noise,
                          double p_max, double t_max, const double *obs_w, const double *obs_t,
                          size_t nobs, const double *x, double *ret_post, double *ret_prior) {
  struct pflex_curve_params b;
  struct refit r;
  refit_setup(base, pred, prior_sd, noise, p_max, t_max, obs_w, obs_t, nobs, x, &b, &r);
  *ret_post = spread(&r);
  r.n = 0;
  *ret_prior = spread(&r);
}

/* ---- the residual correction -------------------------------------------------- */

/* The residual ratio at power p. */
static double corr_ratio(const struct refine_corr *c, double p) {
  if (c->n == 0 || p >= c->p_max) return 1.0;
  if (p <= c->ap[0]) return c->ar[0];
  size_t k = 1;
  while (k < c->n && c->ap[k] < p)
    k++;
  double p1 = k < c->n ? c->ap[k] : c->p_max, r1 = k < c->n ? c->ar[k] : 1.0;
  return c->ar[k - 1] + (r1 - c->ar[k - 1]) * (p - c->ap[k - 1]) / (p1 - c->ap[k - 1]);
}

/* Throughput of the refitted curve before the residual correction. */
static double corr_base(const struct refine_corr *c, double p) {
  return c->t_max * pflex_curve_family_tput(&c->q, p / c->p_max);
}

/* Tabulates the corrected curve: REFINE_CORR_TABLE points uniform in clock
 * from P_min to P_max, so that evaluating it needs no root finding. */
void refine_corr_tabulate(struct refine_corr *c) {
  enum { N = REFINE_CORR_TABLE };
  double xl = pflex_curve_family_clock(&c->q, c->p_min / c->p_max);
  for (size_t k = 0; k < N; k++) {
    double x = k + 1 == N ? 1.0 : xl + (1 - xl) * (double)k / (N - 1);
    c->tp[k] = k == 0       ? c->p_min
               : k + 1 == N ? c->p_max
                            : c->p_max * pflex_curve_family_power(&c->q, x);
    if (k > 0 && c->tp[k] <= c->tp[k - 1]) c->tp[k] = nextafter(c->tp[k - 1], INFINITY);
    /* Throughput at clock x directly: no root finding. */
    double base = x > 0 ? c->t_max / (c->q.c / x + 1 - c->q.c) : 0;
    c->tt[k] = base * corr_ratio(c, c->tp[k]);
  }
}

double refine_corr_eval(void *ctx, double p) {
  const struct refine_corr *c = ctx;
  enum { N = REFINE_CORR_TABLE };
  if (p <= c->tp[0]) return c->tt[0];
  if (p >= c->tp[N - 1]) return c->tt[N - 1];
  size_t lo = 0, hi = N - 1;
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (c->tp[mid] <= p)
      lo = mid;
    else
      hi = mid;
  }
  return c->tt[lo] + (c->tt[hi] - c->tt[lo]) * (p - c->tp[lo]) / (c->tp[hi] - c->tp[lo]);
}

void refine_corr_set(struct refine_corr *c, const double *w, const double *t, size_t nobs,
                     double *pairs) {
  size_t m = 0;
  for (size_t k = 0; k < nobs; k++) {
    if (!(w[k] < c->p_max * (1 - 1e-3))) continue; /* at P_max: no shape information */
    double f = corr_base(c, w[k]);
    pairs[2 * m] = w[k];
    pairs[2 * m + 1] = t[k] / f;
    m++;
  }
  /* Nearby observations are averaged: their difference is noise, and a
   * steep ratio between them would be an artefact. */
  refine_anchors_merge(c, pairs, m, 0.01 * c->p_max);
}
