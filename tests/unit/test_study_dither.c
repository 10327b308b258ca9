/* Unit tests of the closed loop's dither (src/core/study_dither.c): only
 * the jobs left within the merge of their last observation move, each to
 * that observation +- d P_max inside its bounds, the moves summing to zero
 * watts (never more power than before, to rounding), the larger side
 * scaled down; a dither not wider than the merge, or a job with no room,
 * moves nothing. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <gsl/gsl_rng.h>

#include "core/study_dither.h"

#define N 40

static double sum(const double *v, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++)
    s += v[i];
  return s;
}

/* Random jobs, half near their last observation: the near ones move to it
 * +- d P_max (or less, on the side scaled), the others stay; the total
 * stays, to rounding, and never rises; every power in its bounds. */
static void test_random_budget_neutral(void **state) {
  (void)state;
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  for (int rep = 0; rep < 200; rep++) {
    double p[N], p0[N], pobs[N], lo[N], hi[N], pm[N], mv[N];
    size_t idx[N];
    for (size_t j = 0; j < N; j++) {
      pm[j] = hi[j] = 500 * (1 + (double)gsl_rng_uniform_int(rng, 96)); /* 8-768 GPUs' worth */
      lo[j] = 0.3 * pm[j];
      p[j] = p0[j] = (0.5 + 0.4 * gsl_rng_uniform(rng)) * pm[j];
      double off =
          j % 2 ? 0.02 * (2 * gsl_rng_uniform(rng) - 1) : 0.03 + 0.1 * gsl_rng_uniform(rng);
      pobs[j] = p[j] + off * pm[j];
    }
    size_t moved = pflex__study_dither(N, p, pobs, lo, hi, pm, 0.06, 0.02, idx, mv);
    assert_true(moved > 0 && moved <= N / 2);
    double before = sum(p0, N), after = sum(p, N);
    assert_true(after <= before * (1 + 1e-14)); /* to the rounding of a sum */
    assert_true(before - after < 1e-9 * before);
    size_t full = 0, n_up = 0, n_down = 0;
    for (size_t j = 0; j < N; j++) {
      assert_true(p[j] >= lo[j] && p[j] <= hi[j]);
      if (j % 2 == 0) {
        assert_true(p[j] == p0[j]); /* far from its observation: stays */
        continue;
      }
      double d = (p[j] - pobs[j]) / pm[j];
      assert_true(fabs(d) <= 0.06 + 1e-9);
      full += fabs(fabs(d) - 0.06) < 1e-9;
      n_up += p[j] > p0[j], n_down += p[j] < p0[j];
    }
    assert_true(full >= 1); /* the side not scaled: the full dither */
    assert_true(n_up > 0 && n_down > 0);
  }
  gsl_rng_free(rng);
}

/* Two like jobs at their observations: one up, one down by the same watts. */
static void test_pair(void **state) {
  (void)state;
  double p[2] = {700, 700}, pobs[2] = {700, 700}, lo[2] = {300, 300}, hi[2] = {1000, 1000};
  double mv[2];
  size_t idx[2];
  assert_int_equal(pflex__study_dither(2, p, pobs, lo, hi, hi, 0.06, 0.02, idx, mv), 2);
  assert_true(fabs(p[0] + p[1] - 1400) < 1e-9);
  assert_true(fabs(fabs(p[0] - 700) - 60) < 1e-9 && fabs(fabs(p[1] - 700) - 60) < 1e-9);
  assert_true((p[0] - 700) * (p[1] - 700) < 0);
}

/* A large and a small job: the large one's move is scaled to the small
 * one's watts. A job at its upper bound moves down only; one with no room
 * (lo = hi) stays. */
static void test_scaled_and_bounds(void **state) {
  (void)state;
  double p[3] = {7000, 700, 500}, pobs[3] = {7000, 700, 500}, lo[3] = {3000, 300, 500};
  double hi[3] = {10000, 700, 500}, pm[3] = {10000, 1000, 1000}, mv[3];
  size_t idx[3];
  assert_int_equal(pflex__study_dither(3, p, pobs, lo, hi, pm, 0.06, 0.02, idx, mv), 2);
  assert_true(fabs(p[1] - 640) < 1e-9);  /* at its upper bound: down the full 60 W */
  assert_true(fabs(p[0] - 7060) < 1e-9); /* up 60 W, not 600 */
  assert_true(p[2] == 500);
}

/* A dither not wider than the merge moves nothing. */
static void test_too_narrow(void **state) {
  (void)state;
  double p[2] = {700, 700}, pobs[2] = {700, 700}, lo[2] = {300, 300}, hi[2] = {1000, 1000};
  double mv[2];
  size_t idx[2];
  assert_int_equal(pflex__study_dither(2, p, pobs, lo, hi, hi, 0.02, 0.02, idx, mv), 0);
  assert_true(p[0] == 700 && p[1] == 700);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_budget_neutral),
      cmocka_unit_test(test_pair),
      cmocka_unit_test(test_scaled_and_bounds),
      cmocka_unit_test(test_too_narrow),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
