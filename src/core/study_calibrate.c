/* The study's shrinkage calibration (docs/study.md, "Never worse than an
 * equal cut"): each group's change ratios of truth to prediction at the
 * anchors, before and after the closed loop's observations, and from the
 * other folds' ratios each group's bands. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "pflex/error.h"
#include "pflex/refine.h"
#include "pflex/shrink.h"
#include "study_internal.h"

const double pflex__study_cal_off[CAL_NOFF] = {-0.10, -0.06, -0.035, 0.035, 0.06, 0.10};

/* The fewest calibration pairs of one kinship that are used on their own
 * (else those of the next looser one). */
#define CAL_MIN_SAME_GPU 8

/* The CAL_NR ratios of truth's changes to model's around anchor x. */
static void change_ratios(const struct pflex_curve *model, const struct pflex_curve *truth,
                          double x, double *r) {
  static const double steps[2] = {CAL_STEP_SMALL, CAL_STEP};
  for (int m = 0; m < 2; m++) {
    r[m] = pflex_shrink_ratio(model, truth, x, x + steps[m]);
    r[2 + m] = pflex_shrink_ratio(model, truth, x - steps[m], x);
  }
}

/* A refinement's spreads (pflex_refine_spread) of the CAL_NR changes of
 * change_ratios around anchor x (P_max units; lo: P_min / P_max). */
void pflex__study_change_spreads(const struct pflex_refine *r, double pm, double lo, double x,
                                 double *o) {
  static const double steps[2] = {CAL_STEP_SMALL, CAL_STEP};
  for (int m = 0; m < 2; m++) {
    o[m] = pflex_refine_spread(r, x * pm, fmin(x + steps[m], 1) * pm);
    o[2 + m] = pflex_refine_spread(r, fmax(x - steps[m], lo) * pm, x * pm);
  }
}

/* Phase 1 of set k's group j: at each anchor, its refinement after one
 * observation there of its true curve (with the study's noise), against
 * the truth. */
static int loop_ratios(const struct study *s, size_t k, size_t j, gsl_rng *noise) {
  const struct pflex_curve *t = s->g[j].curve;
  struct pflex_refine_opts ro = loop_opts(s);
  struct pflex_refine *r;
  int err = pflex_refine_new(s->prior[k * s->ng + j], &ro, &r);
  for (size_t x = 0; x < CAL_NX && !err; x++) {
    double pw = (CAL_X0 + CAL_DX * (double)x) * pflex_curve_p_max(t);
    double obs = pflex_curve_eval(t, pw) * (1 + gsl_ran_gaussian(noise, s->o->noise));
    if ((err = pflex_refine_reset(r, s->prior[k * s->ng + j])) ||
        (err = pflex_refine_observe(r, pw, obs)))
      break;
    double pm = pflex_curve_p_max(t), xv = CAL_X0 + CAL_DX * (double)x;
    change_ratios(pflex_refine_curve(r), t, xv, ratios_at(s, 1, k, j, x));
    pflex__study_change_spreads(r, pm, pflex_curve_p_min(t) / pm, xv,
                                cal_at(s, s->spread, k, j, x));
  }
  pflex_refine_free(r);
  return err;
}

/* Phases 2 + o of set k's group j: at each anchor x, its refinement after
 * an observation at x + pflex__study_cal_off[o] (P_max) and one at x, against the truth
 * (NAN where x + pflex__study_cal_off[o] lies outside its range). */
static int loop_ratios2(const struct study *s, size_t k, size_t j, gsl_rng *noise) {
  const struct pflex_curve *t = s->g[j].curve;
  struct pflex_refine_opts ro = loop_opts(s);
  struct pflex_refine *r;
  double pm = pflex_curve_p_max(t), lo = pflex_curve_p_min(t) / pm;
  int err = pflex_refine_new(s->prior[k * s->ng + j], &ro, &r);
  for (size_t x = 0; x < CAL_NX && !err; x++)
    for (size_t o = 0; o < CAL_NOFF && !err; o++) {
      double xa = CAL_X0 + CAL_DX * (double)x, xb = xa + pflex__study_cal_off[o];
      if (xb < lo || xb > 1 || xa < lo) continue;
      double tb = pflex_curve_eval(t, xb * pm) * (1 + gsl_ran_gaussian(noise, s->o->noise));
      double ta = pflex_curve_eval(t, xa * pm) * (1 + gsl_ran_gaussian(noise, s->o->noise));
      if (!(err = pflex_refine_reset(r, s->prior[k * s->ng + j])) &&
          !(err = pflex_refine_observe(r, xb * pm, tb)) &&
          !(err = pflex_refine_observe(r, xa * pm, ta)))
        change_ratios(pflex_refine_curve(r), t, xa, ratios_at(s, 2 + (int)o, k, j, x));
    }
  pflex_refine_free(r);
  return err;
}

/* Every calibration group's ratios: phase 0, and phase 1 in the closed
 * loop. A systematic sample past STUDY_MAX_TEMPLATES groups. */
static int study_ratios(struct study *s, gsl_rng *noise) {
  size_t stride = s->ng > STUDY_MAX_TEMPLATES ? s->ng / STUDY_MAX_TEMPLATES + 1 : 1;
  int err = 0;
  for (size_t k = 0; k < s->np && !err; k++)
    for (size_t j = 0; j < s->ng && !err && !s->preds[k].templates; j += stride) {
      if (!s->pcurve[k * s->ng + j]) continue;
      for (size_t x = 0; x < CAL_NX; x++)
        change_ratios(s->pcurve[k * s->ng + j], s->g[j].curve, CAL_X0 + CAL_DX * (double)x,
                      ratios_at(s, 0, k, j, x));
      if (s->prior) err = loop_ratios(s, k, j, noise);
    }
  if (err || !s->prior || s->o->rounds < 2) return err;
  /* Phases 2 ..: their own stream, so that phase 1's draws stay those they were. */
  gsl_rng *n2 = gsl_rng_alloc(gsl_rng_mt19937);
  if (!n2) return -ENOMEM;
  gsl_rng_set(n2, s->o->seed * 104729ul + 77ul);
  for (size_t k = 0; k < s->np && !err; k++)
    for (size_t j = 0; j < s->ng && !err && !s->preds[k].templates; j += stride)
      if (s->pcurve[k * s->ng + j]) err = loop_ratios2(s, k, j, n2);
  gsl_rng_free(n2);
  return err;
}

/* How alike two groups are for the calibration: 1 the same GPU type, else
 * 0. (Also requiring the same arch x task cell left too few pairs: on the
 * mixed clusters of tests/integration/study_fair.sh it did no better.) */
static int kinship(const struct pflex_study_group *a, const struct pflex_study_group *b) {
  const char *x = a->gpu ? a->gpu : "H200", *y = b->gpu ? b->gpu : "H200";
  return strcmp(x, y) == 0;
}

/* The calibration groups of set k for group gi (into idx): those outside its
 * fold (the same folds as its prediction) with ratios, of its own GPU type
 * when there are enough of them (a prediction errs alike on one GPU type),
 * else of every type. */
static size_t calibration_pairs(const struct study *s, size_t k, size_t gi, size_t *idx) {
  const struct pflex_study_predset *ps = &s->preds[k];
  size_t n = 0, stride = s->ng > STUDY_MAX_TEMPLATES ? s->ng / STUDY_MAX_TEMPLATES + 1 : 1;
  for (int kin = 1; kin >= 0 && n < CAL_MIN_SAME_GPU; kin--) {
    n = 0;
    for (size_t j = 0; j < s->ng; j += stride)
      if (j != gi && (!ps->fold || ps->fold[j] != ps->fold[gi]) && s->pcurve[k * s->ng + j] &&
          kinship(&s->g[j], &s->g[gi]) >= kin)
        idx[n++] = j;
  }
  return n;
}

/* Set k's bands for group gi in a phase, from its calibration groups'
 * ratios: at each anchor the more pessimistic of small and large moves, the
 * quantiles of a Gaussian's z = opts.shrink SDs; NAN where too few. At
 * round 0 they are shared among a workload's jobs (a union bound,
 * Phi(-z) / jobs, so that the whole allocation's bound holds: it is taken
 * blind); in the closed loop each job's own (Phi(-z)): a move that was
 * wrong shows at the moved job's next observation and is undone. */
static int calibrate_group(const struct study *s, int phase, size_t k, size_t gi, size_t *idx,
                           double *rise, double *fall) {
  size_t n = calibration_pairs(s, k, gi, idx);
  double q = gsl_cdf_ugaussian_P(-s->o->shrink) / (phase ? 1.0 : (double)s->o->jobs);
  for (size_t x = 0; x < CAL_NX; x++) {
    double *f = band_at(s, phase, k, gi, x);
    for (int m = 0; m < 2; m++) {
      for (size_t p = 0; p < n; p++) {
        rise[p] = ratios_at(s, phase, k, idx[p], x)[m];
        fall[p] = ratios_at(s, phase, k, idx[p], x)[2 + m];
      }
      double g, l;
      int err = pflex_shrink_band(rise, n, fall, n, q, &g, &l);
      if (err == -PFLEX_E_NOPOINTS) { /* too few: the PFI's SD */
        f[0] = f[1] = f[2] = f[3] = NAN;
        break;
      }
      if (err) return err;
      f[2 * m] = g, f[2 * m + 1] = l;
    }
  }
  return 0;
}

/* The scaled bands' z of set k's group gi (pflex_shrink_scaled_band): at
 * each anchor and change, over its calibration groups' phase-1 ratios and
 * spreads; q for rises, 1 - q for falls; NAN where too few. rs: 2 ng
 * scratch. */
static int scale_group(const struct study *s, size_t k, size_t gi, size_t *idx, double *rs) {
  size_t n = calibration_pairs(s, k, gi, idx);
  double q = gsl_cdf_ugaussian_P(-s->o->shrink);
  for (size_t x = 0; x < CAL_NX; x++)
    for (int m = 0; m < CAL_NR; m++) {
      for (size_t p = 0; p < n; p++) {
        rs[p] = ratios_at(s, 1, k, idx[p], x)[m];
        rs[n + p] = cal_at(s, s->spread, k, idx[p], x)[m];
      }
      double *z = &cal_at(s, s->zq, k, gi, x)[m];
      int err = pflex_shrink_scaled_band(rs, rs + n, n, m < 2 ? q : 1 - q, z);
      if (err == -PFLEX_E_NOPOINTS)
        *z = NAN;
      else if (err)
        return err;
    }
  return 0;
}

/* The shrinkage's calibrated bands of every set whose folds are the study's
 * own groups (not a training file's: its curves are not here). */
int pflex__study_calibrate(struct study *s) {
  if (!(s->o->shrink > 0)) return 0;
  size_t nb = CAL_PHASES * s->np * s->ng * CAL_NX;
  s->fac = malloc(nb * CAL_NB * sizeof *s->fac + 1);
  s->ratio = malloc(nb * CAL_NR * sizeof *s->ratio + 1);
  size_t *idx = calloc(s->ng, sizeof *idx);
  double *rise = calloc(2 * s->ng, sizeof *rise), *fall = calloc(s->ng, sizeof *fall);
  gsl_rng *noise = gsl_rng_alloc(gsl_rng_mt19937);
  int err = s->fac && s->ratio && idx && rise && fall && noise ? 0 : -ENOMEM;
  size_t ns = s->np * s->ng * CAL_NX * CAL_NR;
  if (!err && s->prior) {
    s->spread = malloc(ns * sizeof *s->spread + 1);
    s->zq = malloc(ns * sizeof *s->zq + 1);
    err = s->spread && s->zq ? 0 : -ENOMEM;
  }
  for (size_t i = 0; !err && s->prior && i < ns; i++)
    s->spread[i] = s->zq[i] = NAN;
  for (size_t i = 0; !err && i < nb * CAL_NB; i++)
    s->fac[i] = NAN;
  for (size_t i = 0; !err && i < nb * CAL_NR; i++)
    s->ratio[i] = NAN;
  if (!err) gsl_rng_set(noise, s->o->seed * 104723ul + 31ul);
  if (!err) err = study_ratios(s, noise);
  int nph = !s->prior ? 1 : s->o->rounds < 2 ? 2 : CAL_PHASES;
  for (int ph = 0; ph < nph && !err; ph++)
    for (size_t k = 0; k < s->np && !err; k++)
      for (size_t i = 0; i < s->ng && !err && !s->preds[k].templates; i++)
        if (s->pcurve[k * s->ng + i]) err = calibrate_group(s, ph, k, i, idx, rise, fall);
  for (size_t k = 0; k < s->np && !err && s->prior; k++)
    for (size_t i = 0; i < s->ng && !err && !s->preds[k].templates; i++)
      if (s->pcurve[k * s->ng + i]) err = scale_group(s, k, i, idx, rise);
  gsl_rng_free(noise);
  free(idx);
  free(rise);
  free(fall);
  return err;
}
