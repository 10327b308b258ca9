/* Unit tests of the objectives (include/pflex/objective.h) and of the
 * shrinkage toward an equal cut (include/pflex/shrink.h). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "pflex/error.h"
#include "pflex/objective.h"
#include "pflex/shrink.h"

#define NEAR(a, b, tol) assert_true(fabs((a) - (b)) <= (tol))

/* T = t_max * sqrt(p / p_max) on [p_min, p_max]: concave, known slopes. */
static struct pflex_curve *sqrt_curve(double p_min, double p_max, double t_max) {
  struct pflex_curve_point pts[41];
  for (int i = 0; i <= 40; i++) {
    double p = p_min + (p_max - p_min) * i / 40.0;
    pts[i] = (struct pflex_curve_point){.power_w = p, .tput = t_max * sqrt(p / p_max)};
  }
  struct pflex_curve *c;
  assert_int_equal(pflex_curve_new_measured(pts, 41, PFLEX_INTERP_LINEAR, &c), 0);
  return c;
}

static void test_objective_scale(void **state) {
  (void)state;
  double s = 0;
  assert_int_equal(pflex_objective_scale(PFLEX_OBJECTIVE_TOKENS, 8, 1000, &s), 0);
  assert_true(s == 1);
  assert_int_equal(pflex_objective_scale(PFLEX_OBJECTIVE_PROGRESS, 8, 1000, &s), 0);
  NEAR(s, 8.0 / 1000, 1e-15);
  s = 42;
  assert_int_equal(pflex_objective_scale(PFLEX_OBJECTIVE_PROGRESS, 8, 0, &s), -EINVAL);
  assert_int_equal(pflex_objective_scale(PFLEX_OBJECTIVE_PROGRESS, 0, 10, &s), -EINVAL);
  assert_int_equal(pflex_objective_scale(PFLEX_OBJECTIVE_PROGRESS, 8, NAN, &s), -EINVAL);
  assert_true(s == 42); /* nothing written on error */
  enum pflex_objective o;
  assert_int_equal(pflex_objective_parse("progress", &o), 0);
  assert_int_equal(o, PFLEX_OBJECTIVE_PROGRESS);
  assert_int_equal(pflex_objective_parse("tokens", &o), 0);
  assert_int_equal(o, PFLEX_OBJECTIVE_TOKENS);
  assert_int_equal(pflex_objective_parse("Progress", &o), -EINVAL);
  assert_string_equal(pflex_objective_name(PFLEX_OBJECTIVE_N), "unknown");
}

/* All or nothing: a job without T_max leaves every weight as it was. */
static void test_objective_apply(void **state) {
  (void)state;
  struct pflex_curve *c = sqrt_curve(100, 400, 50);
  struct pflex_alloc_job j[3];
  for (int i = 0; i < 3; i++) {
    pflex_alloc_job_init(&j[i]);
    j[i].curve = c;
    j[i].gpus = i + 1;
    j[i].weight = 2;
  }
  j[1].t_max = 10; /* given: wins over the curve's */
  assert_int_equal(pflex_objective_apply(PFLEX_OBJECTIVE_PROGRESS, j, 3, NULL), 0);
  NEAR(j[0].weight, 2 * 1 / 50.0, 1e-15);
  NEAR(j[1].weight, 2 * 2 / 10.0, 1e-15);
  NEAR(j[2].weight, 2 * 3 / 50.0, 1e-15);
  j[2].curve = NULL;
  double w0 = j[0].weight;
  size_t bad = 99;
  assert_int_equal(pflex_objective_apply(PFLEX_OBJECTIVE_PROGRESS, j, 3, &bad), -EINVAL);
  assert_int_equal(bad, 2);
  assert_true(j[0].weight == w0);
  pflex_curve_free(c);
}

static void test_factors(void **state) {
  (void)state;
  double g, l;
  assert_int_equal(pflex_shrink_factors(2.0, 0.5, 1, &g, &l), 0);
  NEAR(g, 2.0 / 2.5, 1e-15);
  NEAR(l, 2.0 / 1.5, 1e-15);
  assert_int_equal(pflex_shrink_factors(2.0, 0, 1, &g, &l), 0); /* no uncertainty: f itself */
  assert_true(g == 1 && l == 1);
  assert_int_equal(pflex_shrink_factors(1.0, 2.0, 1, &g, &l), 0); /* PFI within z SDs of 0 */
  NEAR(g, 1.0 / 3.0, 1e-15);
  assert_true(l == PFLEX_SHRINK_MAX_LOSS);
  assert_int_equal(pflex_shrink_factors(2.0, -1, 1, &g, &l), -EINVAL);
  assert_int_equal(pflex_shrink_factors(NAN, 1, 1, &g, &l), -EINVAL);
}

/* g(p) = f(a) + gain (f(p) - f(a)) above the anchor, loss (...) below. */
static void test_shrunk_curve(void **state) {
  (void)state;
  struct pflex_curve *f = sqrt_curve(100, 400, 50);
  struct pflex_shrink s;
  assert_int_equal(pflex_shrink_init(&s, f, 225, 0.5, 2.0), 0);
  double ta = pflex_curve_eval(f, 225);
  NEAR(pflex_curve_eval(s.curve, 225), ta, 1e-12);
  NEAR(pflex_curve_eval(s.curve, 400), ta + 0.5 * (50 - ta), 1e-9);
  NEAR(pflex_curve_eval(s.curve, 144), ta + 2.0 * (pflex_curve_eval(f, 144) - ta), 1e-9);
  /* Concave at the anchor: the slope drops from loss f' to gain f'. */
  NEAR(pflex_curve_deriv(s.curve, 224.9), 2.0 * pflex_curve_deriv(f, 224.9), 1e-9);
  NEAR(pflex_curve_deriv(s.curve, 225.1), 0.5 * pflex_curve_deriv(f, 225.1), 1e-9);
  /* Never below 0, however steep the fall. */
  struct pflex_shrink t;
  assert_int_equal(pflex_shrink_init(&t, f, 400, 0.5, 10.0), 0);
  assert_true(pflex_curve_eval(t.curve, 100) >= 0);
  pflex_shrink_release(&t);
  pflex_shrink_release(&t); /* idempotent */
  assert_int_equal(pflex_shrink_init(&t, f, 225, 1.5, 2.0), -EINVAL);
  assert_null(t.curve);
  assert_int_equal(pflex_shrink_init(&t, f, 225, 0.5, 0.9), -EINVAL);
  pflex_shrink_release(&s);
  pflex_curve_free(f);
}

/* A band by distance: a move up to near_w is counted with gain/loss, from
 * far_w with gain_far/loss_far, linearly in between; the derivative is the
 * value's. Unset, the far factors are the near ones (pflex_shrink_init). */
static void test_shrunk_far(void **state) {
  (void)state;
  struct pflex_curve *f = sqrt_curve(100, 400, 50);
  struct pflex_shrink s;
  assert_int_equal(pflex_shrink_init(&s, f, 225, 0.9, 1.1), 0);
  assert_true(s.gain_far == 0.9 && s.loss_far == 1.1);
  assert_int_equal(pflex_shrink_set_far(&s, 0.5, 2.0, 10, 50), 0);
  double ta = pflex_curve_eval(f, 225);
  NEAR(pflex_curve_eval(s.curve, 230), ta + 0.9 * (pflex_curve_eval(f, 230) - ta), 1e-9);
  NEAR(pflex_curve_eval(s.curve, 300), ta + 0.5 * (pflex_curve_eval(f, 300) - ta), 1e-9);
  NEAR(pflex_curve_eval(s.curve, 255), ta + 0.7 * (pflex_curve_eval(f, 255) - ta), 1e-9);
  NEAR(pflex_curve_eval(s.curve, 220), ta + 1.1 * (pflex_curve_eval(f, 220) - ta), 1e-9);
  NEAR(pflex_curve_eval(s.curve, 150), ta + 2.0 * (pflex_curve_eval(f, 150) - ta), 1e-9);
  NEAR(pflex_curve_eval(s.curve, 195), ta + 1.55 * (pflex_curve_eval(f, 195) - ta), 1e-9);
  for (double p = 161.3; p < 300; p += 7) { /* off the curve's and the factor's knots */
    double h = 1e-4;
    double num = (pflex_curve_eval(s.curve, p + h) - pflex_curve_eval(s.curve, p - h)) / (2 * h);
    NEAR(pflex_curve_deriv(s.curve, p), num, 1e-5);
  }
  assert_int_equal(pflex_shrink_set_far(&s, 1.2, 2.0, 10, 50), -EINVAL);
  assert_int_equal(pflex_shrink_set_far(&s, 0.5, 0.9, 10, 50), -EINVAL);
  assert_int_equal(pflex_shrink_set_far(&s, 0.5, 2.0, 50, 10), -EINVAL);
  pflex_shrink_release(&s);
  assert_int_equal(pflex_shrink_set_far(&s, 0.5, 2.0, 10, 50), -EINVAL); /* no curve */
  pflex_curve_free(f);
}

/* The anchors stay unless the allocation on the curves beats them. */
static void test_worth(void **state) {
  (void)state;
  struct pflex_curve *f = sqrt_curve(100, 400, 50);
  struct pflex_alloc_job j[2];
  for (int i = 0; i < 2; i++) {
    pflex_alloc_job_init(&j[i]);
    j[i].curve = f;
  }
  j[1].weight = 3; /* job 1 is worth more: power moved to it pays */
  double anchor[2] = {250, 250}, moved[2] = {200, 300}, back[2] = {300, 200};
  assert_true(pflex_shrink_worth(j, moved, anchor, 2, 1e-5));
  assert_false(pflex_shrink_worth(j, back, anchor, 2, 1e-5));
  assert_false(pflex_shrink_worth(j, anchor, anchor, 2, 0)); /* equal is not better */
  pflex_curve_free(f);
}

/* RMS error over the other folds only. */
static void test_fold_sd(void **state) {
  (void)state;
  double pred[4] = {1, 2, 3, NAN}, truth[4] = {1.5, 2, 2, 1};
  int fold[4] = {0, 0, 1, 1};
  /* group 0: only group 2 (fold 1, finite): error 1 */
  NEAR(pflex_shrink_fold_sd(pred, truth, fold, 4, 0), 1.0, 1e-15);
  /* group 2: groups 0 and 1: errors 0.5, 0 */
  NEAR(pflex_shrink_fold_sd(pred, truth, fold, 4, 2), sqrt(0.125), 1e-15);
  /* no fold: every other group */
  NEAR(pflex_shrink_fold_sd(pred, truth, NULL, 4, 1), sqrt(1.25 / 2), 1e-15);
  int same[2] = {0, 0};
  assert_true(isnan(pflex_shrink_fold_sd(pred, truth, same, 2, 0)));
}

/* A change ratio: the truth's change over the model's. */
static void test_ratio(void **state) {
  (void)state;
  struct pflex_curve *model = sqrt_curve(100, 400, 50), *truth = sqrt_curve(100, 400, 80);
  /* the same shape, T_max 80 against 50: every change 1.6 times */
  NEAR(pflex_shrink_ratio(model, truth, 0.5, 0.6), 1.6, 1e-9);
  struct pflex_curve_point flat[2] = {{.power_w = 100, .tput = 50}, {.power_w = 400, .tput = 50}};
  struct pflex_curve *f;
  assert_int_equal(pflex_curve_new_measured(flat, 2, PFLEX_INTERP_LINEAR, &f), 0);
  assert_true(isnan(pflex_shrink_ratio(f, truth, 0.5, 0.6))); /* the model does not change */
  NEAR(pflex_shrink_ratio(model, f, 0.5, 0.6), 1e-3, 1e-15);  /* the truth does not: 1e-3 */
  pflex_curve_free(f);
  pflex_curve_free(model);
  pflex_curve_free(truth);
}

/* The band: a log-normal fitted to the ratios, its quantiles. */
static void test_band(void **state) {
  (void)state;
  const double k[6] = {0.6, 0.8, 1.0, 1.1, 1.2, NAN}; /* NAN: left out */
  double m = 0, ss = 0, g, l;
  for (int i = 0; i < 5; i++)
    m += log(k[i]) / 5;
  for (int i = 0; i < 5; i++)
    ss += (log(k[i]) - m) * (log(k[i]) - m);
  double sd = sqrt(ss / 4), z25 = -0.6744897501960817; /* Phi^-1(0.25) */
  assert_int_equal(pflex_shrink_band(k, 6, k, 6, 0.25, &g, &l), 0);
  NEAR(g, exp(m + z25 * sd), 1e-9);
  NEAR(l, exp(m - z25 * sd), 1e-9);
  assert_true(g < 1 && l > 1);
  /* Every prediction too flat by 1.25: no rise counts more than predicted
   * (gain 1 at most), every fall 1.25 times. */
  const double same[3] = {1.25, 1.25, 1.25};
  assert_int_equal(pflex_shrink_band(same, 3, same, 3, 0.25, &g, &l), 0);
  NEAR(g, 1, 1e-12);
  NEAR(l, 1.25, 1e-9);
  assert_int_equal(pflex_shrink_band(k, 1, k, 6, 0.25, &g, &l), -PFLEX_E_NOPOINTS);
  assert_int_equal(pflex_shrink_band(k, 6, k, 6, 1.0, &g, &l), -EINVAL);
}

/* The log-normal's z-quantile of the n values v, as the band's fit. */
static double fit_quantile(const double *v, int n, double z) {
  double m = 0, ss = 0;
  for (int i = 0; i < n; i++)
    m += log(v[i]) / n;
  for (int i = 0; i < n; i++)
    ss += (log(v[i]) - m) * (log(v[i]) - m);
  return exp(m + z * sqrt(ss / (n - 1)));
}

/* Where enough values lie beyond the quantile (PFLEX_SHRINK_TAIL_MIN), the
 * band is their own quantile: one flat outlier (a ratio floored at 1e-3)
 * no longer widens it for all; where too few do, it is the fit's. */
static void test_band_sample(void **state) {
  (void)state;
  double v[20], g, l;
  v[0] = 1e-3; /* sorted: the outlier, then 0.9 .. 1.1 */
  for (int i = 1; i < 20; i++)
    v[i] = 0.9 + 0.2 * (i - 1) / 18.0;
  /* q = 0.25: 5 of 20 below; GSL's interpolated quantile at 0.25 (20 - 1) */
  double lo = v[4] + 0.75 * (v[5] - v[4]), hi = v[14] + 0.25 * (v[15] - v[14]);
  assert_int_equal(pflex_shrink_band(v, 20, v, 20, 0.25, &g, &l), 0);
  NEAR(g, lo, 1e-12);
  NEAR(l, hi, 1e-12);
  double z25 = -0.6744897501960817;
  assert_true(g > fit_quantile(v, 20, z25) + 0.5); /* the fit is dragged down to ~0.3 */
  /* q = 0.1: 2 of 20 beyond, too few: the fit's */
  double z10 = -1.2815515655446004;
  assert_int_equal(pflex_shrink_band(v, 20, v, 20, 0.1, &g, &l), 0);
  NEAR(g, fit_quantile(v, 20, z10), 1e-9);
  NEAR(l, fit_quantile(v, 20, -z10), 1e-9);
}

/* The band scaled by each job's spread: the calibration pairs'
 * log(ratio) / spread's quantile, whatever their spreads (a pair whose
 * templates disagreed more erred more, and counts alike); a job's factor
 * that z times its own spread, floored at PFLEX_SHRINK_MIN_SPREAD, clamped
 * as the band's. Pairs without a finite positive ratio and spread are
 * left out. */
static void test_scaled_band(void **state) {
  (void)state;
  double r[24], sp[24], z;
  for (int i = 0; i < 20; i++) { /* z = -1.9 .. 1.9 step 0.2, spreads 0.05 .. 0.24 */
    sp[i] = 0.05 + 0.01 * i;
    r[i] = exp((-1.9 + 0.2 * ((i * 7) % 20)) * sp[i]);
  }
  r[20] = NAN, sp[20] = 0.1;
  r[21] = 0.9, sp[21] = 0;
  r[22] = -1, sp[22] = 0.1;
  r[23] = 0.9, sp[23] = INFINITY;
  /* q = 0.25: 5 of 20 below; GSL's interpolated quantile at 0.25 (20 - 1) */
  assert_int_equal(pflex_shrink_scaled_band(r, sp, 24, 0.25, &z), 0);
  NEAR(z, -1.9 + 0.2 * 4.75, 1e-9);
  assert_int_equal(pflex_shrink_scaled_band(r, sp, 24, 0.75, &z), 0);
  NEAR(z, -1.9 + 0.2 * 14.25, 1e-9);
  /* q = 0.1: too few beyond, a normal's: mean 0, SD of -1.9 .. 1.9 */
  double sd = sqrt(20 * (20 * 20 - 1) / 12.0 * 0.04 / 19);
  assert_int_equal(pflex_shrink_scaled_band(r, sp, 24, 0.1, &z), 0);
  NEAR(z, -1.2815515655446004 * sd, 1e-9);
  assert_int_equal(pflex_shrink_scaled_band(r, sp, 1, 0.1, &z), -PFLEX_E_NOPOINTS);
  assert_int_equal(pflex_shrink_scaled_band(r, sp, 20, 0, &z), -EINVAL);
  assert_int_equal(pflex_shrink_scaled_band(NULL, sp, 20, 0.1, &z), -EINVAL);
  /* A job's factors: its spread scales the band. */
  NEAR(pflex_shrink_scaled_factor(-1, 0.1, true), exp(-0.1), 1e-15);
  NEAR(pflex_shrink_scaled_factor(-1, 0.2, true), exp(-0.2), 1e-15);
  NEAR(pflex_shrink_scaled_factor(1, 0.2, false), exp(0.2), 1e-15);
  NEAR(pflex_shrink_scaled_factor(-1, 0.001, true), exp(-PFLEX_SHRINK_MIN_SPREAD), 1e-15);
  NEAR(pflex_shrink_scaled_factor(0.5, 0.1, true), 1, 0);   /* a gain is at most 1 */
  NEAR(pflex_shrink_scaled_factor(-0.5, 0.1, false), 1, 0); /* a loss at least 1 */
  NEAR(pflex_shrink_scaled_factor(-100, 1, true), 1e-3, 0);
  NEAR(pflex_shrink_scaled_factor(100, 1, false), PFLEX_SHRINK_MAX_LOSS, 0);
  NEAR(pflex_shrink_scaled_factor(NAN, 0.1, true), 1e-3, 0); /* no evidence: pessimistic */
  NEAR(pflex_shrink_scaled_factor(NAN, 0.1, false), PFLEX_SHRINK_MAX_LOSS, 0);
  NEAR(pflex_shrink_scaled_factor(-1, NAN, true), exp(-PFLEX_SHRINK_MIN_SPREAD), 1e-15);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_objective_scale), cmocka_unit_test(test_objective_apply),
      cmocka_unit_test(test_factors),         cmocka_unit_test(test_shrunk_curve),
      cmocka_unit_test(test_worth),           cmocka_unit_test(test_fold_sd),
      cmocka_unit_test(test_ratio),           cmocka_unit_test(test_band),
      cmocka_unit_test(test_band_sample),
      cmocka_unit_test(test_shrunk_far),
      cmocka_unit_test(test_scaled_band),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
