/* Measured curves, and the refined curves' templates shape and knot map,
 * are evaluated by pflex's own code instead of gsl_interp_eval, for speed
 * (src/core/steffen.h): it must give GSL's interpolant bit for bit, or every
 * study result would move. Compared here on random curves (Steffen and
 * linear, 2 to 40 points, noisy and monotone) at random powers, at every
 * point and at both ends; and the module itself on the refinement's grids. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_interp.h>

#include "core/curve_internal.h"
#include "core/steffen.h"
#include "pflex/curve.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static double uniform(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (double)(rng >> 11) * 0x1p-53;
}

static void compare(const struct pflex_curve *c, enum pflex_curve_interp interp) {
  size_t n;
  const struct pflex_curve_point *pt = pflex_curve_points(c, &n);
  assert_true(n >= 2);
  double *xs = malloc(n * sizeof *xs), *ys = malloc(n * sizeof *ys);
  assert_non_null(xs);
  assert_non_null(ys);
  for (size_t i = 0; i < n; i++)
    xs[i] = pt[i].power_w, ys[i] = pt[i].tput;
  const gsl_interp_type *type =
      interp == PFLEX_INTERP_LINEAR || n < 3 ? gsl_interp_linear : gsl_interp_steffen;
  gsl_interp *g = gsl_interp_alloc(type, n);
  assert_non_null(g);
  assert_int_equal(gsl_interp_init(g, xs, ys, n), 0);
  for (size_t k = 0; k < 200 + 2 * n; k++) {
    double p = k < n       ? xs[k]
               : k < 2 * n ? nextafter(xs[k - n], INFINITY)
                           : xs[0] + (xs[n - 1] - xs[0]) * uniform();
    if (p > xs[n - 1]) p = xs[n - 1];
    double want = gsl_interp_eval(g, xs, ys, p, NULL), got = pflex_curve_eval(c, p);
    assert_memory_equal(&want, &got, sizeof want); /* bit for bit */
  }
  gsl_interp_free(g);
  free(xs);
  free(ys);
}

static void test_eval_matches_gsl(void **state) {
  (void)state;
  for (int trial = 0; trial < 3000; trial++) {
    size_t n = 2 + (size_t)(uniform() * 39);
    struct pflex_curve_point pt[40];
    double p = 500 + 2000 * uniform(), t = 100 * uniform() + 1;
    for (size_t i = 0; i < n; i++) {
      p += 1 + 400 * uniform() * (trial % 3 == 0 ? 1e-6 : 1); /* some nearly equal powers */
      t += (trial % 2 ? uniform() - 0.3 : uniform()) * 50;    /* half of them not monotone */
      if (t <= 0) t = 0.5;
      pt[i] = (struct pflex_curve_point){p, t, 0};
    }
    enum pflex_curve_interp interp = trial % 4 == 1 ? PFLEX_INTERP_LINEAR : PFLEX_INTERP_STEFFEN;
    struct pflex_curve *c;
    assert_int_equal(pflex_curve_new_measured(pt, n, interp, &c), 0);
    size_t m;
    pflex_curve_points(c, &m);
    if (m >= 2) compare(c, interp);
    pflex_curve_free(c);
  }
}

/* pflex__curve_interval_cubic (the flat optimal's polish pieces): on every
 * interval of a Steffen curve its cubic, evaluated as the pieces are
 * (y0 + t (b + t (c + t d))), is pflex_curve_eval bit for bit; of a linear
 * one, to rounding. Other curves and intervals past the last are refused. */
static void test_interval_cubic_is_eval(void **state) {
  (void)state;
  for (int trial = 0; trial < 1000; trial++) {
    size_t n = 2 + (size_t)(uniform() * 12);
    struct pflex_curve_point pt[14];
    double p = 100 + 500 * uniform(), t = 10 * uniform() + 1;
    for (size_t i = 0; i < n; i++) {
      p += 5 + 100 * uniform();
      t += (trial % 2 ? uniform() - 0.3 : uniform()) * 20;
      if (t <= 0) t = 0.5;
      pt[i] = (struct pflex_curve_point){p, t, 0};
    }
    enum pflex_curve_interp interp = trial % 3 == 1 ? PFLEX_INTERP_LINEAR : PFLEX_INTERP_STEFFEN;
    struct pflex_curve *c;
    assert_int_equal(pflex_curve_new_measured(pt, n, interp, &c), 0);
    size_t m;
    const struct pflex_curve_point *q = pflex_curve_points(c, &m);
    bool exact = interp == PFLEX_INTERP_STEFFEN && m >= 3;
    for (size_t i = 0; i + 1 < m; i++) {
      double cubic[4];
      assert_true(pflex__curve_interval_cubic(c, i, cubic));
      for (int k = 0; k < 8; k++) { /* the interval's start, then inside it */
        double x = q[i].power_w + (q[i + 1].power_w - q[i].power_w) * (k ? uniform() : 0);
        double u = x - q[i].power_w;
        double got = cubic[0] + u * (cubic[1] + u * (cubic[2] + u * cubic[3]));
        double want = pflex_curve_eval(c, x);
        if (exact)
          assert_memory_equal(&got, &want, sizeof got);
        else
          assert_true(fabs(got - want) <= 1e-12 * fabs(want));
      }
    }
    double cubic[4];
    assert_false(pflex__curve_interval_cubic(c, m - 1, cubic));
    pflex_curve_free(c);
  }
  struct pflex_curve *par;
  const struct pflex_curve_params prm = {.c = 0.6, .knee = 0.5, .idle_frac = 0.1, .vratio = 1.3};
  assert_int_equal(pflex_curve_new_parametric(&prm, 400, 1000, 700, &par), 0);
  double cubic[4];
  assert_false(pflex__curve_interval_cubic(par, 0, cubic));
  pflex_curve_free(par);
}

/* The refinement's two interpolants (src/core/refine.c): the templates
 * shape on 65 powers uniform from P_min to P_max, and the knot map on a few
 * uneven, sometimes nearly equal, nodes; non-decreasing values, and (the
 * module's own check) the nodes gsl_interp_init refuses. */
static void test_module_matches_gsl(void **state) {
  (void)state;
  double xs[65], ys[65], poly[4 * 64];
  gsl_error_handler_t *old = gsl_set_error_handler_off(); /* a refused init returns an error */
  for (int trial = 0; trial < 2000; trial++) {
    bool uniform_grid = trial % 2 == 0;
    size_t n = uniform_grid ? 65 : 1 + (size_t)(uniform() * 12);
    double p_min = 100 + 300 * uniform(), p_max = p_min + 50 + 600 * uniform(), t = 10 * uniform();
    for (size_t i = 0; i < n; i++) {
      xs[i] = uniform_grid ? p_min + (p_max - p_min) * (double)i / (double)(n - 1)
                           : (i ? xs[i - 1] : p_min) + (trial % 7 == 1 ? 1e-13 : 30 * uniform());
      t += trial % 5 == 0 ? 0 : 5 * uniform(); /* flat runs too */
      ys[i] = t;
    }
    if (trial % 11 == 3 && n >= 3) xs[n / 2] = xs[n / 2 - 1]; /* not strictly increasing */
    gsl_interp *g = n >= 3 ? gsl_interp_alloc(gsl_interp_steffen, n) : NULL;
    bool gsl_ok = g && gsl_interp_init(g, xs, ys, n) == 0;
    assert_int_equal(pflex__steffen_ok(xs, n), gsl_ok);
    if (gsl_ok) {
      pflex__steffen_poly(xs, ys, n, poly);
      for (size_t k = 0; k < 100 + 2 * n; k++) {
        double x = k < n       ? xs[k]
                   : k < 2 * n ? nextafter(xs[k - n], INFINITY)
                               : xs[0] + (xs[n - 1] - xs[0]) * uniform();
        if (x > xs[n - 1]) x = xs[n - 1];
        double want = gsl_interp_eval(g, xs, ys, x, NULL);
        double got = pflex__steffen_at(xs, poly, pflex__steffen_interval(xs, n, x), x);
        assert_memory_equal(&want, &got, sizeof want); /* bit for bit */
      }
    }
    if (g) gsl_interp_free(g);
  }
  gsl_set_error_handler(old);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_eval_matches_gsl),
      cmocka_unit_test(test_module_matches_gsl),
      cmocka_unit_test(test_interval_cubic_is_eval),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
