/* Unit tests of the exact oracle's majorants (src/core/alloc_oracle.c):
 * where a curve is concave between two samples, the oracle bounds it by the
 * least of its two tangents and the lifted chord, whose corners lie between
 * the samples. Identical jobs on a concave stretch make that bound the
 * answer: n identical jobs at p each are a feasible allocation, so the
 * optimum is at least n w T(p), and the oracle's certified bound (value plus
 * gap) must be too, wherever p falls between the samples. A corner placed
 * below the curve, or a tangent on a stretch that is not concave, shows as a
 * bound below n w T(p). (The brute-force comparison on non-concave curves is
 * in test_alloc.c.) */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>
#include <gsl/gsl_rng.h>

#include "pflex/alloc.h"
#include "pflex/curve.h"
#include "pflex/error.h"

/* A concave curve: measured (Steffen through 4-8 points of a concave power
 * law, or linear through them) or parametric. */
static struct pflex_curve *concave_curve(gsl_rng *rng, int kind) {
  double lo = 200 + 300 * gsl_rng_uniform(rng), span = 200 + 600 * gsl_rng_uniform(rng);
  double t0 = 20 + 80 * gsl_rng_uniform(rng), rise = 50 + 500 * gsl_rng_uniform(rng);
  double q = 0.2 + 0.7 * gsl_rng_uniform(rng); /* x^q: concave */
  struct pflex_curve *c = NULL;
  if (kind == 2) {
    struct pflex_curve_params p = {.c = 0.3 + 0.7 * gsl_rng_uniform(rng),
                                   .knee = 0.6 * gsl_rng_uniform(rng),
                                   .idle_frac = 0.05 + 0.2 * gsl_rng_uniform(rng),
                                   .vratio = 1.0 + 0.6 * gsl_rng_uniform(rng)};
    assert_int_equal(pflex_curve_new_parametric(&p, lo, lo + span, t0 + rise, &c), 0);
    return c;
  }
  struct pflex_curve_point pt[8];
  size_t np = 4 + gsl_rng_uniform_int(rng, 5);
  for (size_t i = 0; i < np; i++) {
    double x = i / (double)(np - 1);
    pt[i] = (struct pflex_curve_point){lo + span * x, t0 + rise * pow(x, q), 0};
  }
  enum pflex_curve_interp in = kind == 1 ? PFLEX_INTERP_LINEAR : PFLEX_INTERP_STEFFEN;
  assert_int_equal(pflex_curve_new_measured(pt, np, in, &c), 0);
  return c;
}

/* n identical jobs at a random power p between P_min and P_max: the oracle
 * is at least n w T(p) less its tolerance, and its certified bound at least
 * n w T(p). 600 workloads, measured Steffen, linear and parametric curves,
 * one context throughout (so that cached majorants are met again). */
static void test_bound_above_identical_concave_jobs(void **state) {
  (void)state;
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(rng, 13);
  struct pflex_alloc_ctx *ctx = NULL;
  assert_int_equal(pflex_alloc_ctx_new(&ctx), 0);
  struct pflex_alloc_opts opts = {.ctx = ctx};
  for (int w = 0; w < 600; w++) {
    struct pflex_curve *c = concave_curve(rng, w % 3);
    size_t n = 2 + gsl_rng_uniform_int(rng, 7);
    double weight = 0.1 + 3 * gsl_rng_uniform(rng);
    struct pflex_alloc_job j[8];
    for (size_t i = 0; i < n; i++) {
      pflex_alloc_job_init(&j[i]);
      j[i].curve = c;
      j[i].weight = weight;
    }
    double lo = pflex_curve_p_min(c), hi = pflex_curve_p_max(c);
    double p = lo + (hi - lo) * (0.02 + 0.96 * gsl_rng_uniform(rng));
    double opt = (double)n * weight * pflex_curve_eval(c, p);
    struct pflex_alloc_result r[8];
    struct pflex_alloc_summary s;
    assert_int_equal(pflex_alloc_run(j, n, PFLEX_ALLOC_ORACLE, (double)n * p, &opts, r, &s),
                     0);
    assert_true(s.weighted_tput >= opt * (1 - 1e-6));
    assert_true(s.weighted_tput + s.gap_bound >= opt * (1 - 1e-12));
    pflex_curve_free(c);
  }
  pflex_alloc_ctx_free(ctx);
  gsl_rng_free(rng);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bound_above_identical_concave_jobs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
