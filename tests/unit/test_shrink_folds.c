/* Unit tests of pflex_shrink_fold_sds (src/core/shrink_folds.c): every
 * group's SD over the other folds at once equals pflex_shrink_fold_sd's one
 * at a time, to rounding, on random data with few folds, many, singleton
 * folds (leave-one-out), no folds, and non-finite values. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "pflex/shrink.h"

static double uni(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(*s >> 11) / 9007199254740992.0;
}

/* ret and want agree: both NAN, or within 1e-13 relative. */
static void agree(double ret, double want) {
  if (isnan(want)) {
    assert_true(isnan(ret));
    return;
  }
  assert_true(fabs(ret - want) <= 1e-13 * fabs(want));
}

static void check(const double *pred, const double *truth, const int *fold, size_t n) {
  double *sd = malloc(n * sizeof *sd);
  assert_int_equal(pflex_shrink_fold_sds(pred, truth, fold, n, sd), 0);
  for (size_t i = 0; i < n; i++)
    agree(sd[i], pflex_shrink_fold_sd(pred, truth, fold, n, i));
  free(sd);
}

static void test_random(void **state) {
  (void)state;
  uint64_t s = 7;
  enum { N = 300 };
  double pred[N], truth[N];
  int fold[N];
  const int nfolds[] = {1, 2, 7, 40, N};
  for (size_t t = 0; t < sizeof nfolds / sizeof nfolds[0]; t++) {
    for (size_t i = 0; i < N; i++) {
      truth[i] = 3 * uni(&s);
      pred[i] = uni(&s) < 0.05 ? NAN : truth[i] + (uni(&s) - 0.5) * (i % 3 ? 1 : 1e-3);
      fold[i] = nfolds[t] == N ? (int)(N - i) : (int)(uni(&s) * nfolds[t]) - 3; /* any order */
    }
    check(pred, truth, fold, N);
    check(pred, truth, NULL, N);
  }
}

/* The hand-worked case of test_shrink's test_fold_sd, and empty sets. */
static void test_small(void **state) {
  (void)state;
  double pred[4] = {1, 2, 3, NAN}, truth[4] = {1.5, 2, 2, 1}, sd[4];
  int fold[4] = {0, 0, 1, 1}, same[2] = {0, 0};
  assert_int_equal(pflex_shrink_fold_sds(pred, truth, fold, 4, sd), 0);
  assert_true(sd[0] == 1.0 && sd[1] == 1.0);
  assert_true(fabs(sd[2] - sqrt(0.125)) < 1e-15 && fabs(sd[3] - sqrt(0.125)) < 1e-15);
  assert_int_equal(pflex_shrink_fold_sds(pred, truth, NULL, 4, sd), 0);
  assert_true(fabs(sd[1] - sqrt(1.25 / 2)) < 1e-15);
  assert_int_equal(pflex_shrink_fold_sds(pred, truth, same, 2, sd), 0);
  assert_true(isnan(sd[0]) && isnan(sd[1]));
  assert_int_equal(pflex_shrink_fold_sds(pred, truth, fold, 0, sd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random),
      cmocka_unit_test(test_small),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
