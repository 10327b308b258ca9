/* Unit tests of power-throughput curves (src/core/curve.c). Expected values are
 * worked out by hand in the comments from the definitions in curve.h. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "pflex/curve.h"
#include "pflex/error.h"
#include "pflex/gpu_models.h"

#define NEAR(a, b, tol) assert_true(fabs((a) - (b)) <= (tol))

static struct pflex_curve *measured(const struct pflex_curve_point *p, size_t n,
                                    enum pflex_curve_interp interp) {
  struct pflex_curve *c = NULL;
  assert_int_equal(pflex_curve_new_measured(p, n, interp, &c), 0);
  return c;
}

/* Steffen interpolation stays within each interval's end values and is
 * monotone, even around a sharp bend where a natural cubic overshoots. */
static void test_no_overshoot(void **state) {
  (void)state;
  struct pflex_curve_point p[] = {
      {1000, 10, 0}, {2000, 30, 0}, {3000, 31, 0}, {4000, 31.5, 0}, {5000, 60, 0}};
  struct pflex_curve *c = measured(p, 5, PFLEX_INTERP_STEFFEN);
  double prev = -1;
  for (size_t i = 0; i + 1 < 5; i++)
    for (int k = 0; k <= 100; k++) {
      double x = p[i].power_w + (p[i + 1].power_w - p[i].power_w) * k / 100.0;
      double t = pflex_curve_eval(c, x);
      assert_true(t >= p[i].tput - 1e-12 && t <= p[i + 1].tput + 1e-12);
      assert_true(t >= prev - 1e-12);
      prev = t;
    }
  /* Passes through the points. */
  for (size_t i = 0; i < 5; i++)
    NEAR(pflex_curve_eval(c, p[i].power_w), p[i].tput, 1e-9);
  pflex_curve_free(c);
}

static void test_flat_above_pmax_floor_below_pmin(void **state) {
  (void)state;
  struct pflex_curve_point p[] = {{1600, 40, 200}, {3200, 80, 400}, {4800, 95, 700}};
  struct pflex_curve *c = measured(p, 3, PFLEX_INTERP_STEFFEN);
  assert_true(pflex_curve_p_min(c) == 1600);
  assert_true(pflex_curve_p_max(c) == 4800);
  assert_true(pflex_curve_t_max(c) == 95);
  assert_true(pflex_curve_eval(c, 6000) == 95);
  assert_true(pflex_curve_eval(c, 1e9) == 95);
  assert_true(pflex_curve_deriv(c, 5000) == 0);
  assert_true(pflex_curve_eval(c, 100) == 40); /* floor: cannot go lower */
  assert_true(pflex_curve_deriv(c, 1000) == 0);
  double pw;
  assert_int_equal(pflex_curve_inverse(c, 10, &pw), 0);
  assert_true(pw == 1600);
  assert_int_equal(pflex_curve_inverse(c, 96, &pw), -ERANGE);
  pflex_curve_free(c);
}

/* Isotonic regression: 25 then 20 violate monotonicity and are pooled to their
 * mean 22.5; two runs at the same power are averaged ((20 + 30) / 2 = 25). */
static void test_monotone_repair(void **state) {
  (void)state;
  struct pflex_curve_point p[] = {{4000, 40, 0}, {1000, 10, 0}, {2000, 25, 0}, {3000, 20, 0}};
  struct pflex_curve *c = measured(p, 4, PFLEX_INTERP_STEFFEN);
  size_t n;
  const struct pflex_curve_point *r = pflex_curve_points(c, &n);
  assert_int_equal(n, 4);
  assert_true(r[0].power_w == 1000 && r[3].power_w == 4000);
  NEAR(r[0].tput, 10, 1e-12);
  NEAR(r[1].tput, 22.5, 1e-12);
  NEAR(r[2].tput, 22.5, 1e-12);
  NEAR(r[3].tput, 40, 1e-12);
  /* The pooled flat stretch stays flat (no overshoot between equal values). */
  NEAR(pflex_curve_eval(c, 2500), 22.5, 1e-12);
  pflex_curve_free(c);

  /* Pooling across a weighted duplicate: (2000: 20, 30 -> 25 weight 2), then
   * 3000: 19 violates: (25*2 + 19) / 3 = 23. */
  struct pflex_curve_point q[] = {{2000, 20, 0}, {2000, 30, 0}, {3000, 19, 0}, {1000, 5, 0}};
  c = measured(q, 4, PFLEX_INTERP_LINEAR);
  r = pflex_curve_points(c, &n);
  assert_int_equal(n, 3);
  NEAR(r[0].tput, 5, 1e-12);
  NEAR(r[1].tput, 23, 1e-12);
  NEAR(r[2].tput, 23, 1e-12);
  assert_true(pflex_curve_piecewise_linear(c));
  pflex_curve_free(c);
}

static void test_inverse_and_deriv_measured(void **state) {
  (void)state;
  struct pflex_curve_point p[] = {
      {1600, 40, 0}, {2400, 60, 0}, {3200, 75, 0}, {4000, 85, 0}, {4800, 90, 0}};
  struct pflex_curve *c = measured(p, 5, PFLEX_INTERP_STEFFEN);
  for (double t = 41; t < 90; t += 3.7) {
    double pw;
    assert_int_equal(pflex_curve_inverse(c, t, &pw), 0);
    NEAR(pflex_curve_eval(c, pw), t, 1e-6);
  }
  for (double x = 1700; x < 4700; x += 333) {
    double h = 1e-3;
    double fd = (pflex_curve_eval(c, x + h) - pflex_curve_eval(c, x - h)) / (2 * h);
    NEAR(pflex_curve_deriv(c, x), fd, 1e-6);
  }
  /* Linear interpolation: slope between 1600 and 2400 is 20/800 = 0.025. */
  struct pflex_curve *l = measured(p, 5, PFLEX_INTERP_LINEAR);
  NEAR(pflex_curve_deriv(l, 2000), 0.025, 1e-12);
  NEAR(pflex_curve_eval(l, 2000), 50, 1e-12);
  pflex_curve_free(l);
  pflex_curve_free(c);
}

static void test_bad_points(void **state) {
  (void)state;
  struct pflex_curve *c = NULL;
  struct pflex_curve_point p[] = {{1000, 10, 0}, {-1, 5, 0}};
  assert_int_equal(pflex_curve_new_measured(p, 2, PFLEX_INTERP_STEFFEN, &c), -EINVAL);
  struct pflex_curve_point q[] = {{1000, NAN, 0}};
  assert_int_equal(pflex_curve_new_measured(q, 1, PFLEX_INTERP_STEFFEN, &c), -EINVAL);
  assert_null(c);
  /* A single point: P_min = P_max, constant. */
  struct pflex_curve_point s[] = {{1000, 10, 0}};
  assert_int_equal(pflex_curve_new_measured(s, 1, PFLEX_INTERP_STEFFEN, &c), 0);
  assert_true(pflex_curve_eval(c, 500) == 10 && pflex_curve_eval(c, 5000) == 10);
  pflex_curve_free(c);
}

/* Parametric values by hand, c = 0.5, knee = 0.6, s = 0.1, vratio = 1.4:
 * x = 0.5 (below knee): P/Pmax = 0.1 + 0.9 * 0.5 / 1.96 = 0.3295918...,
 *   T/Tmax = 1 / (0.5/0.5 + 0.5) = 2/3.
 * x = 0.8 (above): b = 0.4 / 0.4 = 1, a = 0.4, v = 1.2, x v^2 = 1.152,
 *   P/Pmax = 0.1 + 0.9 * 1.152 / 1.96 = 0.6289796..., T/Tmax = 1/1.125 = 0.8888... */
static void test_parametric_values(void **state) {
  (void)state;
  struct pflex_curve_params q = {.c = 0.5, .knee = 0.6, .idle_frac = 0.1, .vratio = 1.4};
  struct pflex_curve *c = NULL;
  assert_int_equal(pflex_curve_new_parametric(&q, 1000, 5000, 100, &c), 0);
  NEAR(pflex_curve_eval(c, 5000 * (0.1 + 0.9 * 0.5 / 1.96)), 100.0 * 2 / 3, 1e-9);
  NEAR(pflex_curve_eval(c, 5000 * (0.1 + 0.9 * 1.152 / 1.96)), 100.0 / 1.125, 1e-9);
  assert_true(pflex_curve_eval(c, 5000) == 100);
  assert_true(pflex_curve_eval(c, 9000) == 100);
  double pw;
  assert_int_equal(pflex_curve_inverse(c, 100.0 / 1.125, &pw), 0);
  NEAR(pw, 5000 * (0.1 + 0.9 * 1.152 / 1.96), 1e-6);
  /* Derivative against a central difference, and concavity (T(P) is concave:
   * second differences never positive). */
  double prev_d = INFINITY;
  for (double x = 1100; x < 4950; x += 97) {
    double h = 1e-3;
    double fd = (pflex_curve_eval(c, x + h) - pflex_curve_eval(c, x - h)) / (2 * h);
    double d = pflex_curve_deriv(c, x);
    NEAR(d, fd, 1e-6 * (1 + fabs(fd)));
    assert_true(d <= prev_d + 1e-12);
    prev_d = d;
  }
  struct pflex_curve_params bad = q;
  bad.c = 1.5;
  struct pflex_curve *b = NULL;
  assert_int_equal(pflex_curve_new_parametric(&bad, 1000, 5000, 100, &b), -EINVAL);
  pflex_curve_free(c);
}

/* Fitting recovers the parameters of points generated from the family. */
static void test_fit_recovers(void **state) {
  (void)state;
  const double cs[] = {0.35, 0.8, 0.6}, ks[] = {0.55, 0.4, 0.7};
  for (size_t t = 0; t < 3; t++) {
    struct pflex_curve_params q = {.c = cs[t], .knee = ks[t], .idle_frac = 0.12, .vratio = 1.4};
    struct pflex_curve *truth = NULL;
    assert_int_equal(pflex_curve_new_parametric(&q, 1200, 5000, 1000, &truth), 0);
    struct pflex_curve_point pts[8];
    for (int i = 0; i < 8; i++) {
      double pw = 1200 + (5000 - 1200) * i / 7.0;
      pts[i] = (struct pflex_curve_point){pw, pflex_curve_eval(truth, pw), 0};
    }
    struct pflex_curve_params fit = {.idle_frac = 0.12, .vratio = 1.4};
    double rmse;
    struct pflex_curve *fc = NULL;
    assert_int_equal(pflex_curve_fit(pts, 8, &fit, &rmse, &fc), 0);
    NEAR(fit.c, cs[t], 1e-4);
    NEAR(fit.knee, ks[t], 1e-3);
    assert_true(rmse < 1e-6);
    NEAR(pflex_curve_eval(fc, 3000), pflex_curve_eval(truth, 3000), 1e-3);
    pflex_curve_free(fc);
    pflex_curve_free(truth);
  }
  struct pflex_curve_params fit = {.idle_frac = 0.1, .vratio = 1.4};
  struct pflex_curve_point two[] = {{1000, 1, 0}, {2000, 2, 0}};
  assert_int_equal(pflex_curve_fit(two, 2, &fit, NULL, NULL), -PFLEX_E_NOPOINTS);
}

/* A curve built from a PFI reproduces that PFI on its grid: the paper's 6-cap
 * grid for an 8-GPU job (200..600 W per GPU, uncapped at 5000 W aggregate). */
static void test_from_pfi(void **state) {
  (void)state;
  const double grid[] = {1600, 2400, 3200, 4000, 4800};
  const double pfis[] = {0.95, 1.10, 1.27, 1.52, 2.00, 2.67, 5.0};
  struct pflex_curve_params base;
  pflex_curve_params_default("H200", 8, 5000, &base);
  NEAR(base.idle_frac, 8 * 75.0 / 5000, 1e-12);
  /* Each GPU's own idle power (the GPU table), never the H200's for another type. */
  struct pflex_curve_params other;
  pflex_curve_params_default("H100", 8, 5000, &other);
  NEAR(other.idle_frac, 8 * 79.0 / 5000, 1e-12);
  pflex_curve_params_default("A100", 4, 1500, &other);
  NEAR(other.idle_frac, 4 * 55.0 / 1500, 1e-12);
  pflex_curve_params_default("MI300X", 4, 2800, &other);
  NEAR(other.idle_frac, pflex_gpu_idle_share(), 1e-12);
  pflex_curve_params_default(NULL, 8, 5000, &other);
  NEAR(other.idle_frac, base.idle_frac, 0);
  for (size_t i = 0; i < sizeof pfis / sizeof pfis[0]; i++) {
    struct pflex_curve *c = NULL;
    assert_int_equal(pflex_curve_from_pfi(pfis[i], 1600, 5000, 1234, grid, 5, &base, &c), 0);
    double got;
    assert_int_equal(pflex_curve_pfi(c, grid, 5, &got), 0);
    NEAR(got, pfis[i], 1e-8);
    assert_true(pflex_curve_t_max(c) == 1234);
    pflex_curve_free(c);
  }
  /* Below 1 - idle_frac = 0.88 nothing in the family reaches. */
  struct pflex_curve *c = NULL;
  assert_int_equal(pflex_curve_from_pfi(0.8, 1600, 5000, 1, grid, 5, &base, &c), -ERANGE);
  assert_null(c);
}

/* A PFI shaped by template curves (all linear interpolation, worked by hand in
 * relative units, P_max 4000 W and T_max 100):
 * A through (1000, 25), (4000, 100): r(p) = p, deficit 1 - p, PFI 1 on any grid.
 * B through (1000, 40), (2000, 80), (4000, 100): deficit 0.6, 0.2, 0 at
 * p = 0.25, 0.5, 1; on the grid {2000, 3000} W (p = 0.5, 0.75: deficits 0.2,
 * 0.1) PFI_i = 0.5 / 0.2 = 0.25 / 0.1 = 2.5. */
static void test_from_pfi_templates(void **state) {
  (void)state;
  struct pflex_curve_point pa[] = {{1000, 25, 0}, {4000, 100, 0}};
  struct pflex_curve_point pb[] = {{1000, 40, 0}, {2000, 80, 0}, {4000, 100, 0}};
  struct pflex_curve *a = measured(pa, 2, PFLEX_INTERP_LINEAR);
  struct pflex_curve *b = measured(pb, 3, PFLEX_INTERP_LINEAR);
  const struct pflex_curve *only_a[] = {a}, *both[] = {a, b};
  const double grid[] = {2000, 3000};
  struct pflex_curve *c = NULL;
  double v;
  /* A alone, PFI 2: the deficit halves, T = 100 (0.5 + 0.5 p): 75 at 2000 W,
   * 87.5 at 3000 W; below A's P_min (p = 0.125) A is extended along its
   * slope (r = 0.125), so T(500 W) = 100 (1 - 0.5 * 0.875) = 56.25. */
  assert_int_equal(pflex_curve_from_pfi_templates(2.0, 500, 4000, 100, grid, 2, only_a, 1, 0.25, &c),
                   0);
  NEAR(pflex_curve_eval(c, 2000), 75, 1e-9);
  NEAR(pflex_curve_eval(c, 3000), 87.5, 1e-9);
  NEAR(pflex_curve_eval(c, 500), 56.25, 1e-9);
  NEAR(pflex_curve_eval(c, 4000), 100, 1e-12);
  assert_int_equal(pflex_curve_pfi(c, grid, 2, &v), 0);
  NEAR(v, 2.0, 1e-12);
  pflex_curve_free(c);
  /* Narrow kernel, PFI 2.5: only B counts, unscaled: 80 at 2000 W, 90 at 3000 W. */
  assert_int_equal(pflex_curve_from_pfi_templates(2.5, 1000, 4000, 100, grid, 2, both, 2, 0.01, &c),
                   0);
  NEAR(pflex_curve_eval(c, 2000), 80, 1e-9);
  NEAR(pflex_curve_eval(c, 3000), 90, 1e-9);
  pflex_curve_free(c);
  /* Wide kernel: equal weights; deficits (0.5 + 0.2) / 2 = 0.35 and
   * (0.25 + 0.1) / 2 = 0.175, PFI 0.5 / 0.35 = 1 / 0.7; for PFI 2 the scale is
   * 0.5 / 0.7: T = 100 (1 - 0.25) = 75 at 2000 W, 100 (1 - 0.125) = 87.5 at 3000 W. */
  assert_int_equal(pflex_curve_from_pfi_templates(2.0, 1000, 4000, 100, grid, 2, both, 2, 1e6, &c),
                   0);
  NEAR(pflex_curve_eval(c, 2000), 75, 1e-9);
  NEAR(pflex_curve_eval(c, 3000), 87.5, 1e-9);
  for (double p = 1000; p < 4000; p += 50)
    assert_true(pflex_curve_eval(c, p + 50) >= pflex_curve_eval(c, p));
  pflex_curve_free(c);
  assert_int_equal(pflex_curve_from_pfi_templates(0, 1000, 4000, 100, grid, 2, both, 2, 1, &c),
                   -EINVAL);
  assert_int_equal(pflex_curve_from_pfi_templates(2, 1000, 4000, 100, grid, 2, both, 0, 1, &c),
                   -EINVAL);
  assert_int_equal(pflex_curve_from_pfi_templates(2, 1000, 4000, 100, grid + 1, 0, both, 2, 1, &c),
                   -PFLEX_E_NOPOINTS);
  pflex_curve_free(a);
  pflex_curve_free(b);
}

/* Eq. 1 by hand on a linear curve through (0, 0) and (4000, 100) with an idle
 * part: points (2000, 60), (4000, 100): PFI_1 = (1 - 0.5) / (1 - 0.6) = 1.25. */
static void test_pfi_on_grid(void **state) {
  (void)state;
  struct pflex_curve_point p[] = {{2000, 60, 0}, {4000, 100, 0}};
  struct pflex_curve *c = measured(p, 2, PFLEX_INTERP_STEFFEN);
  double g[] = {2000, 4000, 5000}, v;
  assert_int_equal(pflex_curve_pfi(c, g, 3, &v), 0);
  NEAR(v, 1.25, 1e-12);
  assert_int_equal(pflex_curve_pfi(c, g + 1, 2, &v), -PFLEX_E_NOPOINTS);
  pflex_curve_free(c);
}

/* Power -> cap: linear between measured (power, cap) pairs:
 * 2800 W lies halfway between (1600, 200) and (4000, 500) -> 350 W. */
static void test_cap_mapping(void **state) {
  (void)state;
  struct pflex_curve_point p[] = {{1600, 40, 200}, {4000, 80, 500}, {5000, 90, 700}};
  struct pflex_curve *c = measured(p, 3, PFLEX_INTERP_STEFFEN);
  NEAR(pflex_curve_cap_for_power(c, 2800, 8, 200, 700), 350, 1e-9);
  NEAR(pflex_curve_cap_for_power(c, 4500, 8, 200, 700), 600, 1e-9);
  NEAR(pflex_curve_cap_for_power(c, 5000, 8, 200, 700), 700, 1e-9);
  NEAR(pflex_curve_cap_for_power(c, 100, 8, 200, 700), 200, 1e-9);
  pflex_curve_free(c);
  /* Without caps: p / gpus, the minimum cap as a floor, cap_max at P_max. */
  struct pflex_curve_params q = {.c = 0.5, .knee = 0.6, .idle_frac = 0.1, .vratio = 1.4};
  assert_int_equal(pflex_curve_new_parametric(&q, 1000, 5000, 100, &c), 0);
  NEAR(pflex_curve_cap_for_power(c, 3000, 8, 200, 700), 375, 1e-9);
  NEAR(pflex_curve_cap_for_power(c, 1000, 8, 200, 700), 200, 1e-9);
  NEAR(pflex_curve_cap_for_power(c, 5000, 8, 200, 700), 700, 1e-9);
  pflex_curve_free(c);
}

static double sqrt_curve(void *ctx, double p) {
  (void)ctx;
  return sqrt(p);
}

static void test_callback(void **state) {
  (void)state;
  struct pflex_curve_fn fn = {.eval = sqrt_curve};
  struct pflex_curve *c = NULL;
  assert_int_equal(pflex_curve_new_callback(&fn, 100, 400, &c), 0);
  NEAR(pflex_curve_t_max(c), 20, 1e-12);
  NEAR(pflex_curve_eval(c, 1000), 20, 1e-12);
  NEAR(pflex_curve_deriv(c, 225), 1.0 / 30, 1e-6); /* d sqrt(p) = 1 / (2 * 15) */
  double pw;
  assert_int_equal(pflex_curve_inverse(c, 15, &pw), 0);
  NEAR(pw, 225, 1e-6);
  pflex_curve_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_overshoot),
      cmocka_unit_test(test_flat_above_pmax_floor_below_pmin),
      cmocka_unit_test(test_monotone_repair),
      cmocka_unit_test(test_inverse_and_deriv_measured),
      cmocka_unit_test(test_bad_points),
      cmocka_unit_test(test_parametric_values),
      cmocka_unit_test(test_fit_recovers),
      cmocka_unit_test(test_from_pfi),
      cmocka_unit_test(test_from_pfi_templates),
      cmocka_unit_test(test_pfi_on_grid),
      cmocka_unit_test(test_cap_mapping),
      cmocka_unit_test(test_callback),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
