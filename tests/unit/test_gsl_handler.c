/* The library keeps no process-wide state: it never sets GSL's error handler
 * (the programs switch it off once, in main), and a GSL failure inside core
 * comes back as an error code instead of aborting the process. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <gsl/gsl_errno.h>

#include "pflex/curve.h"
#include "pflex/error.h"
#include "pflex/predict.h"
#include "pflex/refine.h"

static int reported; /* GSL errors the recording handler saw */

static void record(const char *reason, const char *file, int line, int gsl_errno) {
  (void)reason, (void)file, (void)line, (void)gsl_errno;
  reported++;
}

/* Points whose model does not depend on the fit parameters (powers so far
 * below the top point that the family gives them zero throughput): GSL's
 * solver meets a Jacobian of rank 0 and reports it through the handler. */
static const struct pflex_curve_point degenerate[4] = {
    {DBL_MIN, 1, 0}, {2 * DBL_MIN, 1, 0}, {3 * DBL_MIN, 1, 0}, {DBL_MAX, 1, 0}};

static void test_failure_is_an_error_with_handler_off(void **state) {
  (void)state;
  gsl_set_error_handler_off();
  struct pflex_curve_params q;
  pflex_curve_params_default("H200", 1, 700, &q);
  /* With GSL's default handler this call aborts the process. */
  assert_int_equal(pflex_curve_fit(degenerate, 4, &q, NULL, NULL), -PFLEX_E_DATA);
}

static void test_failure_really_happens_inside_gsl(void **state) {
  (void)state;
  gsl_set_error_handler(record);
  reported = 0;
  struct pflex_curve_params q;
  pflex_curve_params_default("H200", 1, 700, &q);
  assert_int_equal(pflex_curve_fit(degenerate, 4, &q, NULL, NULL), -PFLEX_E_DATA);
  assert_true(reported > 0); /* GSL did fail: the error code is not an input check */
  gsl_set_error_handler_off();
}

/* Core functions that use GSL solvers leave the caller's handler in place. */
static void test_library_never_touches_the_handler(void **state) {
  (void)state;
  gsl_set_error_handler(record);
  struct pflex_curve_params q;
  pflex_curve_params_default("H200", 8, 5600, &q);
  double grid[4] = {1600, 3200, 4000, 4800};
  struct pflex_curve *c = NULL;
  assert_int_equal(pflex_curve_from_pfi(1.8, 1600, 5600, 8000, grid, 4, &q, &c), 0);
  struct pflex_curve_point pts[6];
  for (int i = 0; i < 6; i++)
    pts[i] = (struct pflex_curve_point){1600 + 800 * i, pflex_curve_eval(c, 1600 + 800 * i), 0};
  struct pflex_curve_params fit = q;
  assert_int_equal(pflex_curve_fit(pts, 6, &fit, NULL, NULL), 0);
  double x[8] = {1, 2, 2, 1, 3, 5, 4, 4}, y[4] = {1, 2, 3, 4};
  struct pflex_fit_opts fo = {.kind = PFLEX_MODEL_OLS};
  struct pflex_linmodel m;
  pflex_linmodel_init(&m);
  assert_int_equal(pflex_linmodel_fit(x, y, 4, 2, &fo, &m), 0);
  pflex_linmodel_release(&m);
  /* The closed loop's family refit uses GSL's minimizer. */
  struct pflex_refine_job job = {.pfi = 2.5, .p_min = 1600, .p_max = 5600, .t_max = 8000,
                                 .gpus = 8, .gpu = "H200", .shape = PFLEX_REFINE_FAMILY};
  struct pflex_refine_prior *prior = NULL;
  assert_int_equal(pflex_refine_prior_new(&job, &prior), 0);
  struct pflex_refine *r = NULL;
  assert_int_equal(pflex_refine_new(prior, NULL, &r), 0);
  assert_int_equal(pflex_refine_observe(r, 3200, pflex_curve_eval(c, 3200)), 0);
  pflex_refine_free(r);
  pflex_refine_prior_free(prior);
  pflex_curve_free(c);
  assert_ptr_equal(gsl_set_error_handler_off(), record);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_failure_is_an_error_with_handler_off),
      cmocka_unit_test(test_failure_really_happens_inside_gsl),
      cmocka_unit_test(test_library_never_touches_the_handler),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
