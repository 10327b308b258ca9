/* Unit tests of the PFI predictors and cross-validation (src/core/predict.c).
 * Expected values are worked out by hand in the comments, or computed in the
 * test by an independent route (normal equations, the hat matrix). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_linalg.h>

#include "pflex/model_json.h"
#include "pflex/predict.h"

#define CLOSE(a, b, tol) assert_true(fabs((a) - (b)) <= (tol))

/* The 1-feature example used below:
 *   x = 1 2 3 4, y = 2 3 5 6
 *   xbar = 2.5, ybar = 4, dx = -1.5 -0.5 0.5 1.5, dy = -2 -1 1 2
 *   Sxy = 3 + 0.5 + 0.5 + 3 = 7, Sxx = 2.25 + 0.25 + 0.25 + 2.25 = 5
 *   slope = 7/5 = 1.4, intercept = 4 - 1.4 * 2.5 = 0.5 */
static const double X1[] = {1, 2, 3, 4};
static const double Y1[] = {2, 3, 5, 6};

static void test_ols_one_feature(void **state) {
  (void)state;
  struct pflex_fit_opts o = {.kind = PFLEX_MODEL_OLS};
  struct pflex_linmodel m;
  assert_int_equal(pflex_linmodel_fit(X1, Y1, 4, 1, &o, &m), 0);
  CLOSE(m.coef[0], 1.4, 1e-12);
  CLOSE(m.intercept, 0.5, 1e-12);
  double x = 10;
  CLOSE(pflex_linmodel_predict(&m, &x), 14.5, 1e-11);
  /* Standardization recorded: sd of x = sqrt(5/3). */
  CLOSE(m.mean[0], 2.5, 1e-15);
  CLOSE(m.sd[0], sqrt(5.0 / 3.0), 1e-12);
  pflex_linmodel_release(&m);
}

static void test_ols_intercept_only_and_constant_feature(void **state) {
  (void)state;
  struct pflex_fit_opts o = {.kind = PFLEX_MODEL_OLS};
  struct pflex_linmodel m;
  assert_int_equal(pflex_linmodel_fit(NULL, Y1, 4, 0, &o, &m), 0);
  CLOSE(m.intercept, 4.0, 1e-15);
  pflex_linmodel_release(&m);
  /* A constant second feature carries nothing: same fit as 1 feature. */
  double x2[] = {1, 7, 2, 7, 3, 7, 4, 7};
  assert_int_equal(pflex_linmodel_fit(x2, Y1, 4, 2, &o, &m), 0);
  CLOSE(m.coef[0], 1.4, 1e-12);
  CLOSE(m.coef[1], 0.0, 1e-15);
  CLOSE(m.intercept, 0.5, 1e-11);
  pflex_linmodel_release(&m);
  assert_int_equal(pflex_linmodel_fit(X1, Y1, 1, 1, &o, &m), -PFLEX_E_NOPOINTS);
}

/* Dataset helper: allocates like the library so that release frees it. */
static void mkdata(struct pflex_dataset *d, size_t n, size_t p, const double *x, const double *y,
                   const enum pflex_arch *arch, const enum pflex_task *task) {
  pflex_dataset_init(d);
  d->n = n;
  static const char *const fn[] = {"f0", "f1", "f2", "f3"};
  for (size_t j = 0; j < p; j++)
    assert_int_equal(pflex_featlist_add(&d->feats, fn[j]), 0);
  d->groups = calloc(n, sizeof *d->groups);
  d->arch = calloc(n, sizeof *d->arch);
  d->task = calloc(n, sizeof *d->task);
  d->x = calloc(n * p + 1, sizeof *d->x);
  d->y = calloc(n, sizeof *d->y);
  d->nruns = calloc(n, sizeof *d->nruns);
  d->uncapped = calloc(n, sizeof *d->uncapped);
  for (size_t i = 0; i < n; i++) {
    char buf[32];
    snprintf(buf, sizeof buf, "g%zu", i);
    d->groups[i] = strdup(buf);
    d->arch[i] = arch ? arch[i] : PFLEX_ARCH_DENSE;
    d->task[i] = task ? task[i] : PFLEX_TASK_PT;
    d->y[i] = y[i];
    for (size_t j = 0; j < p; j++)
      d->x[i * p + j] = x[i * p + j];
  }
}

/* LOO of the 1-feature example, by refitting on three points:
 *   out x=1: fit on (2,3),(3,5),(4,6): slope 3/2, intercept 14/3 - 4.5 = 1/6,
 *            prediction 1.5 + 1/6 = 5/3
 *   out x=2: fit on (1,2),(3,5),(4,6): Sxy = 57/9, Sxx = 42/9, slope 57/42,
 *            intercept 13/3 - (57/42)(8/3) = 5/7, prediction 5/7 + 114/42 = 24/7
 *   x=3 and x=4 by the symmetry x -> 5 - x, y -> 8 - y: 8 - 24/7 = 32/7, 8 - 5/3 = 19/3.
 * Cross-check with the hat matrix: h_11 = 1/4 + 2.25/5 = 0.7, e_1 = 2 - 1.9 = 0.1,
 * LOO residual 0.1/0.3 = 1/3, prediction 2 - 1/3 = 5/3. */
static void test_loo_hand(void **state) {
  (void)state;
  struct pflex_dataset d;
  mkdata(&d, 4, 1, X1, Y1, NULL, NULL);
  struct pflex_fit_opts o = {.kind = PFLEX_MODEL_OLS};
  int fold[4];
  double yhat[4];
  pflex_folds_loo(4, fold);
  assert_int_equal(pflex_cv_predict(&d, &o, fold, yhat), 0);
  CLOSE(yhat[0], 5.0 / 3.0, 1e-12);
  CLOSE(yhat[1], 24.0 / 7.0, 1e-12);
  CLOSE(yhat[2], 32.0 / 7.0, 1e-12);
  CLOSE(yhat[3], 19.0 / 3.0, 1e-12);
  pflex_dataset_release(&d);
}

/* LOO residuals of OLS equal e_i / (1 - h_ii) with H = X (X'X)^-1 X' (X with
 * an intercept column), computed here from the normal equations with an LU
 * inverse: a route independent of the SVD/standardization in the code. */
static void test_loo_hat_identity(void **state) {
  (void)state;
  enum { N = 7, P = 2 };
  const double x[N * P] = {0.1, 3, 0.4, 1, 0.35, 2, 0.8, 5, 0.5, 4, 0.9, 1.5, 0.2, 2.5};
  const double y[N] = {1.2, 1.9, 1.6, 2.7, 2.0, 2.4, 1.1};
  struct pflex_dataset d;
  mkdata(&d, N, P, x, y, NULL, NULL);
  struct pflex_fit_opts o = {.kind = PFLEX_MODEL_OLS};
  int fold[N];
  double loo[N];
  pflex_folds_loo(N, fold);
  assert_int_equal(pflex_cv_predict(&d, &o, fold, loo), 0);

  gsl_matrix *X = gsl_matrix_alloc(N, P + 1), *XtX = gsl_matrix_calloc(P + 1, P + 1),
             *inv = gsl_matrix_alloc(P + 1, P + 1);
  for (size_t i = 0; i < N; i++) {
    gsl_matrix_set(X, i, 0, 1);
    for (size_t j = 0; j < P; j++)
      gsl_matrix_set(X, i, j + 1, x[i * P + j]);
  }
  for (size_t a = 0; a <= P; a++)
    for (size_t b = 0; b <= P; b++) {
      double s = 0;
      for (size_t i = 0; i < N; i++)
        s += gsl_matrix_get(X, i, a) * gsl_matrix_get(X, i, b);
      gsl_matrix_set(XtX, a, b, s);
    }
  gsl_permutation *perm = gsl_permutation_alloc(P + 1);
  int sgn;
  gsl_linalg_LU_decomp(XtX, perm, &sgn);
  gsl_linalg_LU_invert(XtX, perm, inv);
  double xty[P + 1] = {0}, beta[P + 1] = {0};
  for (size_t a = 0; a <= P; a++)
    for (size_t i = 0; i < N; i++)
      xty[a] += gsl_matrix_get(X, i, a) * y[i];
  for (size_t a = 0; a <= P; a++)
    for (size_t b = 0; b <= P; b++)
      beta[a] += gsl_matrix_get(inv, a, b) * xty[b];
  for (size_t i = 0; i < N; i++) {
    double fit = 0, h = 0;
    for (size_t a = 0; a <= P; a++) {
      fit += gsl_matrix_get(X, i, a) * beta[a];
      for (size_t b = 0; b <= P; b++)
        h += gsl_matrix_get(X, i, a) * gsl_matrix_get(inv, a, b) * gsl_matrix_get(X, i, b);
    }
    double loo_resid = (y[i] - fit) / (1 - h);
    CLOSE(y[i] - loo[i], loo_resid, 1e-10);
  }
  gsl_permutation_free(perm);
  gsl_matrix_free(X);
  gsl_matrix_free(XtX);
  gsl_matrix_free(inv);
  pflex_dataset_release(&d);
}

/* Explicit LOO refits: row i predicted by pflex_linmodel_fit on the other rows. */
static void loo_by_refits(const double *x, const double *y, size_t n, size_t p, double *ret) {
  double *xt = malloc((n * p + 1) * sizeof *xt), *yt = malloc(n * sizeof *yt);
  struct pflex_fit_opts o = {.kind = PFLEX_MODEL_OLS};
  for (size_t i = 0; i < n; i++) {
    size_t nt = 0;
    for (size_t r = 0; r < n; r++) {
      if (r == i) continue;
      memcpy(xt + nt * p, x + r * p, p * sizeof *xt);
      yt[nt++] = y[r];
    }
    struct pflex_linmodel m;
    assert_int_equal(pflex_linmodel_fit(xt, yt, nt, p, &o, &m), 0);
    ret[i] = pflex_linmodel_predict(&m, x + i * p);
    pflex_linmodel_release(&m);
  }
  free(xt);
  free(yt);
}

/* pflex_cv_predict's LOO (the closed form, refits where it cannot) against
 * explicit refits, to rounding, on a data set of n rows and p columns. */
static void check_loo_against_refits(const double *x, const double *y, size_t n, size_t p) {
  struct pflex_dataset d;
  mkdata(&d, n, p, x, y, NULL, NULL);
  struct pflex_fit_opts o = {.kind = PFLEX_MODEL_OLS};
  int *fold = malloc(n * sizeof *fold);
  double *loo = malloc(n * sizeof *loo), *want = malloc(n * sizeof *want);
  pflex_folds_loo(n, fold);
  assert_int_equal(pflex_cv_predict(&d, &o, fold, loo), 0);
  loo_by_refits(x, y, n, p, want);
  for (size_t i = 0; i < n; i++)
    CLOSE(loo[i], want[i], 1e-9 * (fabs(want[i]) + 1));
  free(fold);
  free(loo);
  free(want);
  pflex_dataset_release(&d);
}

static double uniform(uint64_t *state) {
  *state = *state * 6364136223846793005u + 1442695040888963407u;
  return (double)(*state >> 11) / 9007199254740992.0;
}

/* Random data sets (n from 3 to 60, p from 0 to 3, features of different
 * scales and offsets), and the designs where the closed form must hand rows
 * to refits: a column constant but for one row (leverage 1 there), a constant
 * column, collinear columns, a row repeated, more columns than the LOO fits
 * can use. */
static void test_loo_closed_form_matches_refits(void **state) {
  (void)state;
  enum { NMAX = 60, PMAX = 4 };
  static double x[NMAX * PMAX], y[NMAX];
  uint64_t rng = 42;
  const size_t sizes[][2] = {{3, 0}, {3, 1}, {4, 2}, {5, 1}, {12, 3}, {60, 2}, {60, 3}, {30, 0}};
  for (size_t c = 0; c < sizeof sizes / sizeof *sizes; c++) {
    size_t n = sizes[c][0], p = sizes[c][1];
    for (size_t i = 0; i < n; i++) {
      for (size_t j = 0; j < p; j++)
        x[i * p + j] = pow(10.0, (double)j) * (uniform(&rng) - 0.3) + 100.0 * (double)j;
      y[i] = 1.0 + 0.5 * (p ? x[i * p] : 0) + uniform(&rng);
    }
    check_loo_against_refits(x, y, n, p);
  }
  /* Column 1 constant but for row 3; column 2 constant. */
  size_t n = 10, p = 3;
  for (size_t i = 0; i < n; i++) {
    x[i * p] = uniform(&rng);
    x[i * p + 1] = i == 3 ? 9.0 : 5.0;
    x[i * p + 2] = 7.0;
    y[i] = 2.0 * x[i * p] + uniform(&rng);
  }
  check_loo_against_refits(x, y, n, p);
  /* Column 1 = 2 x column 0 + 1 (collinear), and rows 0 and 1 equal. */
  p = 2;
  for (size_t i = 0; i < n; i++) {
    x[i * p] = i == 1 ? x[0] : uniform(&rng);
    x[i * p + 1] = 2.0 * x[i * p] + 1.0;
    y[i] = x[i * p] + uniform(&rng);
  }
  check_loo_against_refits(x, y, n, p);
  /* 4 rows, 3 columns: each LOO fit has 3 rows for 3 columns and an intercept. */
  n = 4, p = 3;
  for (size_t i = 0; i < n * p; i++)
    x[i] = uniform(&rng);
  check_loo_against_refits(x, y, n, p);
}

/* The prior's LOO against brute force: for each row, the mean of the other
 * rows of its arch x task cell, or of all other rows when the cell has no
 * other row or the row's arch or task is unknown. */
static void test_loo_prior_matches_refits(void **state) {
  (void)state;
  enum { N = 41 };
  enum pflex_arch a[N];
  enum pflex_task t[N];
  double y[N], loo[N];
  uint64_t rng = 7;
  for (size_t i = 0; i < N; i++) {
    a[i] = i % 4 == 0 ? PFLEX_ARCH_UNKNOWN : PFLEX_ARCH_DENSE;
    t[i] = PFLEX_TASK_PT;
    y[i] = 1.0 + uniform(&rng);
  }
  a[3] = a[7] = PFLEX_ARCH_MOE, t[3] = t[7] = PFLEX_TASK_FT; /* moe-ft: two rows */
  t[5] = PFLEX_TASK_FT;                                     /* dense-ft: row 5 alone */
  t[9] = PFLEX_TASK_UNKNOWN;
  struct pflex_dataset d;
  mkdata(&d, N, 0, NULL, y, a, t);
  struct pflex_fit_opts o = {.kind = PFLEX_MODEL_PRIOR};
  int fold[N];
  pflex_folds_loo(N, fold);
  assert_int_equal(pflex_cv_predict(&d, &o, fold, loo), 0);
  for (size_t i = 0; i < N; i++) {
    double cell = 0, all = 0;
    size_t nc = 0;
    for (size_t j = 0; j < N; j++) {
      if (j == i) continue;
      all += y[j];
      if (a[i] && t[i] && a[j] == a[i] && t[j] == t[i]) cell += y[j], nc++;
    }
    double want = nc ? cell / (double)nc : all / (N - 1);
    CLOSE(loo[i], want, 1e-13);
  }
  pflex_dataset_release(&d);
}

static void test_loco_assignment(void **state) {
  (void)state;
  const enum pflex_arch a[] = {PFLEX_ARCH_DENSE, PFLEX_ARCH_MOE, PFLEX_ARCH_DENSE,
                               PFLEX_ARCH_DENSE, PFLEX_ARCH_MOE, PFLEX_ARCH_MOE};
  const enum pflex_task t[] = {PFLEX_TASK_PT, PFLEX_TASK_FT, PFLEX_TASK_FT,
                               PFLEX_TASK_PT, PFLEX_TASK_PT, PFLEX_TASK_FT};
  const double x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {1, 2, 3, 4, 5, 7};
  struct pflex_dataset d;
  mkdata(&d, 6, 1, x, y, a, t);
  int fold[6];
  pflex_folds_loco(&d, PFLEX_LOCO_ARCH_TASK, fold);
  const int want4[6] = {0, 1, 2, 0, 3, 1};
  for (int i = 0; i < 6; i++)
    assert_int_equal(fold[i], want4[i]);
  pflex_folds_loco(&d, PFLEX_LOCO_POOLED_DENSE, fold);
  const int want3[6] = {0, 1, 0, 0, 2, 1};
  for (int i = 0; i < 6; i++)
    assert_int_equal(fold[i], want3[i]);
  /* The clusters and their group counts, numbered as the folds. */
  struct pflex_clusters cl;
  pflex_clusters_count(&d, PFLEX_LOCO_ARCH_TASK, &cl);
  assert_int_equal(cl.n, 4);
  const char *want_name[4] = {"dense-pt", "moe-ft", "dense-ft", "moe-pt"};
  const size_t want_count[4] = {2, 2, 1, 1};
  for (int k = 0; k < 4; k++) {
    assert_string_equal(cl.name[k], want_name[k]);
    assert_int_equal(cl.count[k], want_count[k]);
  }
  pflex_clusters_count(&d, PFLEX_LOCO_POOLED_DENSE, &cl);
  assert_int_equal(cl.n, 3);
  assert_string_equal(cl.name[0], "dense");
  assert_int_equal(cl.count[0], 3);
  assert_string_equal(pflex_cluster_name(PFLEX_ARCH_MOE, PFLEX_TASK_FT, PFLEX_LOCO_ARCH_TASK),
                      "moe-ft");
  assert_string_equal(pflex_cluster_name(PFLEX_ARCH_DENSE, PFLEX_TASK_FT, PFLEX_LOCO_POOLED_DENSE),
                      "dense");

  /* LOCO predictions with the pooled-dense clusters: the moe-ft rows (x = 2, 6)
   * are predicted by the line through the other four rows (x = 1 3 4 5,
   * y = 1 3 4 5: y = x exactly): 2 and 6. */
  struct pflex_fit_opts o = {.kind = PFLEX_MODEL_OLS};
  double yhat[6];
  assert_int_equal(pflex_cv_predict(&d, &o, fold, yhat), 0);
  CLOSE(yhat[1], 2.0, 1e-12);
  CLOSE(yhat[5], 6.0, 1e-12);
  pflex_dataset_release(&d);
}

/* Scores by hand.
 * y = 1 2 3 4, yhat = 1.5 1.5 3.5 3.5: SSE = 4 x 0.25 = 1, SST = 5, R^2 = 0.8,
 *   RMSE = sqrt(1/4) = 0.5; ranks of yhat 1.5 1.5 3.5 3.5, of y 1 2 3 4:
 *   cov = 1.5 + 0.5 + 0.5 + 1.5 = 4, rho = 4 / sqrt(5 x 4) = 0.894427191.
 * yhat = 4 3 2 1: SSE = 20, R^2 = 1 - 20/5 = -3, RMSE = sqrt(5), rho = -1. */
static void test_scores_hand(void **state) {
  (void)state;
  const double y[] = {1, 2, 3, 4}, h1[] = {1.5, 1.5, 3.5, 3.5}, h2[] = {4, 3, 2, 1},
               h3[] = {2, 2, 2, 2};
  struct pflex_scores s;
  assert_int_equal(pflex_scores_compute(y, h1, 4, &s), 0);
  CLOSE(s.r2, 0.8, 1e-12);
  CLOSE(s.rmse, 0.5, 1e-12);
  CLOSE(s.rho, 4.0 / sqrt(20.0), 1e-12);
  assert_int_equal(pflex_scores_compute(y, h2, 4, &s), 0);
  CLOSE(s.r2, -3.0, 1e-12);
  CLOSE(s.rmse, sqrt(5.0), 1e-12);
  CLOSE(s.rho, -1.0, 1e-12);
  /* Constant prediction: rho undefined. */
  assert_int_equal(pflex_scores_compute(y, h3, 4, &s), 0);
  assert_true(isnan(s.rho));
  CLOSE(s.r2, 1.0 - 6.0 / 5.0, 1e-12); /* SSE = 1 + 0 + 1 + 4 */

  /* Only the rows with a measured y count: the same scores as h1 on y. */
  const double ym[] = {NAN, 1, 2, NAN, 3, 4}, hm[] = {9, 1.5, 1.5, 9, 3.5, 3.5};
  size_t n;
  assert_int_equal(pflex_scores_measured(ym, hm, 6, &s, &n), 0);
  assert_int_equal(n, 4);
  CLOSE(s.r2, 0.8, 1e-12);
  CLOSE(s.rmse, 0.5, 1e-12);
  /* One measured row: no scores. */
  assert_int_equal(pflex_scores_measured(ym, hm, 3, &s, &n), 0);
  assert_int_equal(n, 2);
  assert_int_equal(pflex_scores_measured(ym, hm, 2, &s, &n), 0);
  assert_int_equal(n, 1);
  assert_true(isnan(s.r2) && isnan(s.rmse) && isnan(s.rho));
  /* A non-finite prediction of a measured row: compute's error, NAN scores. */
  const double hbad[] = {9, 1.5, NAN, 9, 3.5, 3.5};
  assert_int_equal(pflex_scores_measured(ym, hbad, 6, &s, &n), -EINVAL);
  assert_true(isnan(s.r2));
}

/* Ridge, 1 feature, lambda = 3 on standardized x: with z = (x - 2.5)/sd,
 * Szz = n - 1 = 3, the raw slope is Sxy / (Sxx + lambda sd^2)
 * = 7 / (5 + 3 x 5/3) = 0.7, intercept 4 - 0.7 x 2.5 = 2.25. */
static void test_ridge_hand(void **state) {
  (void)state;
  struct pflex_fit_opts o = {.kind = PFLEX_MODEL_RIDGE, .lambda = 3};
  struct pflex_linmodel m;
  assert_int_equal(pflex_linmodel_fit(X1, Y1, 4, 1, &o, &m), 0);
  CLOSE(m.coef[0], 0.7, 1e-12);
  CLOSE(m.intercept, 2.25, 1e-12);
  CLOSE(m.lambda, 3, 0);
  pflex_linmodel_release(&m);
}

/* Ridge LOO at lambda = 3 must standardize inside each fold (no leakage of
 * the held-out row's x into the scale). Raw slope Sxy / (Sxx + lambda sd^2)
 * with the training rows' own sd:
 *   out x=1: x 2,3,4 y 3,5,6: Sxy 3, Sxx 2, sd^2 1: slope 3/5, intercept
 *            14/3 - 9/5, prediction 14/3 - 6/5 = 52/15 (with the global
 *            sd^2 = 5/3 it would be 14/3 - 6/7 = 80/21);
 *   out x=2: x 1,3,4 y 2,5,6: Sxy 19/3, Sxx 14/3, sd^2 7/3: slope 19/35,
 *            intercept 13/3 - 152/105 = 101/35, prediction 139/35;
 *   x=3, x=4 by the symmetry x -> 5 - x, y -> 8 - y: 141/35, 68/15. */
static void test_ridge_loo_no_leak(void **state) {
  (void)state;
  struct pflex_dataset d;
  mkdata(&d, 4, 1, X1, Y1, NULL, NULL);
  struct pflex_fit_opts o = {.kind = PFLEX_MODEL_RIDGE, .lambda = 3};
  int fold[4];
  double yhat[4];
  pflex_folds_loo(4, fold);
  assert_int_equal(pflex_cv_predict(&d, &o, fold, yhat), 0);
  CLOSE(yhat[0], 52.0 / 15.0, 1e-12);
  CLOSE(yhat[1], 139.0 / 35.0, 1e-12);
  CLOSE(yhat[2], 141.0 / 35.0, 1e-12);
  CLOSE(yhat[3], 68.0 / 15.0, 1e-12);
  pflex_dataset_release(&d);
}

static void test_ridge_limits(void **state) {
  (void)state;
  enum { N = 7, P = 2 };
  const double x[N * P] = {0.1, 3, 0.4, 1, 0.35, 2, 0.8, 5, 0.5, 4, 0.9, 1.5, 0.2, 2.5};
  const double y[N] = {1.2, 1.9, 1.6, 2.7, 2.0, 2.4, 1.1};
  struct pflex_fit_opts ols = {.kind = PFLEX_MODEL_OLS};
  struct pflex_fit_opts r0 = {.kind = PFLEX_MODEL_RIDGE, .lambda = 1e-12};
  struct pflex_fit_opts rbig = {.kind = PFLEX_MODEL_RIDGE, .lambda = 1e12};
  struct pflex_linmodel a, b, c;
  assert_int_equal(pflex_linmodel_fit(x, y, N, P, &ols, &a), 0);
  assert_int_equal(pflex_linmodel_fit(x, y, N, P, &r0, &b), 0);
  assert_int_equal(pflex_linmodel_fit(x, y, N, P, &rbig, &c), 0);
  for (int j = 0; j < P; j++)
    CLOSE(a.coef[j], b.coef[j], 1e-9);
  CLOSE(a.intercept, b.intercept, 1e-9);
  double ybar = 0;
  for (int i = 0; i < N; i++)
    ybar += y[i] / N;
  for (int j = 0; j < P; j++)
    CLOSE(c.coef[j], 0.0, 1e-9);
  CLOSE(c.intercept, ybar, 1e-9);
  /* OLS is not trivially the mean here (the test would be vacuous). */
  assert_true(fabs(a.coef[0]) > 0.1);
  pflex_linmodel_release(&a);
  pflex_linmodel_release(&b);
  pflex_linmodel_release(&c);
}

/* Nested-CV selection against brute force: for 1 feature with the
 * standardization fixed on all n rows, a penalty lambda on z is lambda sd^2 on
 * the raw slope; each LOO fit is then slope = Sxy'/(Sxx' + lambda sd^2) on the
 * n-1 kept rows, computed here by that formula. */
static void test_ridge_select_bruteforce(void **state) {
  (void)state;
  enum { N = 8 };
  const double x[N] = {0.3, 1.1, 1.9, 2.2, 3.0, 3.7, 4.1, 5.2};
  const double y[N] = {1.0, 0.7, 1.9, 1.2, 2.2, 1.6, 2.5, 2.1};
  const double grid[] = {0.01, 0.1, 1, 3, 10, 100};
  double mean = 0, var = 0;
  for (int i = 0; i < N; i++)
    mean += x[i] / N;
  for (int i = 0; i < N; i++)
    var += (x[i] - mean) * (x[i] - mean) / (N - 1);
  double best = INFINITY, best_l = -1;
  for (size_t k = 0; k < 6; k++) {
    double sse = 0;
    for (int out = 0; out < N; out++) {
      double mx = 0, my = 0, sxy = 0, sxx = 0;
      for (int i = 0; i < N; i++)
        if (i != out) mx += x[i] / (N - 1), my += y[i] / (N - 1);
      for (int i = 0; i < N; i++)
        if (i != out) sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx);
      double slope = sxy / (sxx + grid[k] * var);
      double e = y[out] - (my + slope * (x[out] - mx));
      sse += e * e;
    }
    if (sse / N < best) best = sse / N, best_l = grid[k];
  }
  /* The winner is inside the grid: LOO MSE 0.2465 0.2442 0.2344 0.2476 0.3154
   * 0.4352 for the six penalties (recomputed by hand in Python), so 1. */
  CLOSE(best_l, 1, 0);
  double l1, l2, mse;
  assert_int_equal(pflex_ridge_select(x, y, N, 1, grid, 6, &l1, &mse), 0);
  CLOSE(l1, best_l, 0);
  CLOSE(mse, best, 1e-10);
  /* Deterministic, and independent of the grid's order. */
  const double rev[] = {100, 10, 3, 1, 0.1, 0.01};
  assert_int_equal(pflex_ridge_select(x, y, N, 1, rev, 6, &l2, NULL), 0);
  CLOSE(l2, l1, 0);
  /* A feature with no information: all penalties tie, the largest wins. */
  const double flat[N] = {2, 2, 2, 2, 2, 2, 2, 2};
  assert_int_equal(pflex_ridge_select(flat, y, N, 1, grid, 6, &l2, NULL), 0);
  CLOSE(l2, 100, 0);
  /* Fit with lambda < 0 uses the selection. */
  struct pflex_fit_opts o = {.kind = PFLEX_MODEL_RIDGE, .lambda = -1, .grid = grid, .ngrid = 6};
  struct pflex_linmodel m;
  assert_int_equal(pflex_linmodel_fit(x, y, N, 1, &o, &m), 0);
  CLOSE(m.lambda, best_l, 0);
  CLOSE(m.inner_mse, best, 1e-10);
  pflex_linmodel_release(&m);
}

/* The whole model fit: in-sample R^2 of the 1-feature example is
 * 1 - SSE/SST with fitted 1.9 3.3 4.7 6.1: residuals 0.1 -0.3 0.3 -0.1,
 * SSE = 0.2, SST = 10, R^2 = 0.98. LOO predictions as in test_loo_hand. The
 * prior: overall mean 4; per cell dense-pt (2, 3) -> 2.5, moe-ft (5, 6) -> 5.5. */
static void test_model_fit_summary(void **state) {
  (void)state;
  const enum pflex_arch a[] = {PFLEX_ARCH_DENSE, PFLEX_ARCH_DENSE, PFLEX_ARCH_MOE, PFLEX_ARCH_MOE};
  const enum pflex_task t[] = {PFLEX_TASK_PT, PFLEX_TASK_PT, PFLEX_TASK_FT, PFLEX_TASK_FT};
  struct pflex_dataset d;
  mkdata(&d, 4, 1, X1, Y1, a, t);
  struct pflex_fit_opts o = {.kind = PFLEX_MODEL_OLS};
  struct pflex_model m;
  assert_int_equal(pflex_model_fit(&d, &o, PFLEX_LOCO_ARCH_TASK, &m), 0);
  CLOSE(m.r2_in, 0.98, 1e-12);
  CLOSE(m.groups[0].loo, 5.0 / 3.0, 1e-12);
  CLOSE(m.groups[1].fitted, 3.3, 1e-12);
  assert_string_equal(m.groups[2].cluster, "moe-ft");
  /* LOCO: the moe-ft rows are predicted from the dense-pt rows, the line
   * through (1,2),(2,3), y = x + 1: predictions 4 and 5. */
  CLOSE(m.groups[2].loco, 4.0, 1e-12);
  CLOSE(m.groups[3].loco, 5.0, 1e-12);
  CLOSE(m.prior_mean, 4.0, 1e-15);
  CLOSE(pflex_model_prior(&m, PFLEX_ARCH_MOE, PFLEX_TASK_FT), 5.5, 1e-15);
  CLOSE(pflex_model_prior(&m, PFLEX_ARCH_MOE, PFLEX_TASK_PT), 4.0, 1e-15);
  pflex_model_release(&m);

  /* The prior as a model: LOO of cell means; out x=1 leaves dense-pt {3}: 3. */
  o.kind = PFLEX_MODEL_PRIOR;
  assert_int_equal(pflex_model_fit(&d, &o, PFLEX_LOCO_ARCH_TASK, &m), 0);
  CLOSE(m.groups[0].loo, 3.0, 1e-15);
  CLOSE(m.groups[0].fitted, 2.5, 1e-15);
  /* LOCO of the prior: a held-out cell falls back to the others' mean. */
  CLOSE(m.groups[0].loco, 5.5, 1e-15);
  pflex_model_release(&m);
  pflex_dataset_release(&d);
}

/* The model file reads back to the same model; a broken one names the field. */
static void test_model_json_roundtrip(void **state) {
  (void)state;
  const enum pflex_arch a[] = {PFLEX_ARCH_DENSE, PFLEX_ARCH_DENSE, PFLEX_ARCH_MOE, PFLEX_ARCH_MOE};
  const enum pflex_task t[] = {PFLEX_TASK_PT, PFLEX_TASK_PT, PFLEX_TASK_FT, PFLEX_TASK_FT};
  struct pflex_dataset d;
  mkdata(&d, 4, 1, X1, Y1, a, t);
  struct pflex_fit_opts o = {.kind = PFLEX_MODEL_RIDGE, .lambda = 3};
  struct pflex_model m, back;
  assert_int_equal(pflex_model_fit(&d, &o, PFLEX_LOCO_POOLED_DENSE, &m), 0);
  m.version = strdup("9.9.9");
  struct pflex_pfi_opts po;
  pflex_pfi_opts_init(&po);
  const double caps[] = {200, 700};
  po.grid = caps;
  po.ngrid = 2;
  po.noise_k = 3;
  assert_int_equal(pflex_model_set_target(&m, &po), 0);
  char *text;
  assert_int_equal(pflex_model_to_json(&m, &text), 0);
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  assert_int_equal(pflex_model_from_json(text, "m.json", &back, &diag), 0);
  assert_int_equal(back.kind, PFLEX_MODEL_RIDGE);
  assert_int_equal(back.feats.n, 1);
  assert_string_equal(back.feats.names[0], "f0");
  CLOSE(back.lin.coef[0], 0.7, 1e-12); /* test_ridge_hand */
  CLOSE(back.lin.intercept, 2.25, 1e-12);
  CLOSE(back.lin.lambda, 3, 0);
  assert_false(back.lambda_chosen);
  assert_int_equal(back.nprior, 2);
  CLOSE(pflex_model_prior(&back, PFLEX_ARCH_MOE, PFLEX_TASK_FT), 5.5, 1e-15);
  assert_int_equal(back.loco_scheme, PFLEX_LOCO_POOLED_DENSE);
  assert_int_equal(back.n, 4);
  CLOSE(back.groups[3].fitted, m.groups[3].fitted, 0);
  CLOSE(back.r2_in, m.r2_in, 0);
  assert_string_equal(back.version, "9.9.9");
  assert_int_equal(back.target.exclude, PFLEX_PFI_EXCLUDE_NOISE);
  CLOSE(back.target.noise_k, 3, 0);
  assert_int_equal(back.target.ngrid, 2);
  CLOSE(back.target.grid[1], 700, 0);
  assert_int_equal(back.target.draws, 0);
  double x = 10;
  CLOSE(pflex_model_predict(&back, &x, PFLEX_ARCH_DENSE, PFLEX_TASK_PT), 9.25, 1e-11);
  pflex_model_release(&back);
  free(text);

  const char *broken =
      "{\"format\": 1, \"kind\": \"ols\", \"features\": [\"a\", \"b\"],"
      " \"intercept\": 1, \"coefficients\": [1], \"prior\": {\"mean\": 1, \"cells\": []}}";
  assert_int_equal(pflex_model_from_json(broken, "b.json", &back, &diag), -PFLEX_E_PARSE);
  assert_string_equal(diag.column, "coefficients");
  assert_int_equal(pflex_model_from_json("{", "c.json", &back, &diag), -PFLEX_E_PARSE);
  /* A model without a target object means the paper's rule. */
  const char *old = "{\"format\": 1, \"kind\": \"prior\", \"features\": [],"
                    " \"prior\": {\"mean\": 1.5, \"cells\": []}}";
  assert_int_equal(pflex_model_from_json(old, "o.json", &back, &diag), 0);
  assert_int_equal(back.target.exclude, PFLEX_PFI_EXCLUDE_PAPER);
  CLOSE(pflex_model_predict(&back, NULL, PFLEX_ARCH_MOE, PFLEX_TASK_FT), 1.5, 0);
  pflex_model_release(&back);
  assert_int_equal(pflex_model_read_json("/nonexistent/m.json", &back, &diag), -ENOENT);
  pflex_model_release(&m);
  pflex_dataset_release(&d);
}

/* Applying a model to a run of a runset: y = 0.5 + 1.4 f0 (the 1-feature
 * example); f0 = 2 gives 3.3; a run without f0 gets the prior (cell moe-ft 5.5)
 * only when allowed. */
static void test_model_predict_run(void **state) {
  (void)state;
  const enum pflex_arch a[] = {PFLEX_ARCH_DENSE, PFLEX_ARCH_DENSE, PFLEX_ARCH_MOE, PFLEX_ARCH_MOE};
  const enum pflex_task t[] = {PFLEX_TASK_PT, PFLEX_TASK_PT, PFLEX_TASK_FT, PFLEX_TASK_FT};
  struct pflex_dataset d;
  mkdata(&d, 4, 1, X1, Y1, a, t);
  struct pflex_fit_opts o = {.kind = PFLEX_MODEL_OLS};
  struct pflex_model m;
  assert_int_equal(pflex_model_fit(&d, &o, PFLEX_LOCO_ARCH_TASK, &m), 0);
  struct pflex_runset set;
  pflex_runset_init(&set);
  struct pflex_run r = {.group = "j",
                        .gpu = "H200",
                        .gpus = 8,
                        .cap_w = 700,
                        .power_w = 5000,
                        .tput = 1,
                        .arch = PFLEX_ARCH_MOE,
                        .task = PFLEX_TASK_FT};
  assert_int_equal(pflex_runset_append(&set, &r), 0);
  assert_int_equal(pflex_runset_append(&set, &r), 0);
  assert_int_equal(pflex_runset_set_extra(&set, 0, "f0", "2"), 0);
  double v = 0;
  bool prior = true;
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  assert_int_equal(pflex_model_predict_run(&m, &set, 0, false, &v, &prior, &diag), 0);
  CLOSE(v, 3.3, 1e-12);
  assert_false(prior);
  assert_int_equal(pflex_model_predict_run(&m, &set, 1, false, &v, &prior, &diag), -ENODATA);
  assert_non_null(strstr(diag.message, "feature 'f0'"));
  assert_int_equal(pflex_model_predict_run(&m, &set, 1, true, &v, &prior, &diag), 0);
  assert_true(prior);
  CLOSE(v, 5.5, 1e-15);
  pflex_runset_release(&set);
  pflex_model_release(&m);
  pflex_dataset_release(&d);
}

static void test_kind_names(void **state) {
  (void)state;
  enum pflex_model_kind k;
  assert_int_equal(pflex_model_kind_parse("ridge", &k), 0);
  assert_int_equal(k, PFLEX_MODEL_RIDGE);
  assert_int_equal(pflex_model_kind_parse("lasso", &k), -EINVAL);
  enum pflex_loco l;
  assert_int_equal(pflex_loco_parse("pooled-dense", &l), 0);
  assert_int_equal(l, PFLEX_LOCO_POOLED_DENSE);
  double g[PFLEX_RIDGE_GRID_N];
  pflex_ridge_default_grid(g);
  CLOSE(g[0], 1e-3, 1e-18);
  CLOSE(g[PFLEX_RIDGE_GRID_N - 1], 1e4, 1e-9);
}

/* xorshift in [0, 1), for the random data sets below. */
static double unit_rand(uint64_t *x) {
  *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
  return (double)(*x >> 11) / 9007199254740992.0;
}

/* Row i's ridge prediction refitted the straightforward way: lambda fixed,
 * on the other rows with their own standardization. */
static double ridge_refit(const double *x, const double *y, size_t n, size_t p, size_t out,
                          double lambda) {
  double xt[64 * 4], yt[64];
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (i == out) continue;
    memcpy(xt + m * p, x + i * p, p * sizeof *xt);
    yt[m++] = y[i];
  }
  struct pflex_fit_opts o = {.kind = PFLEX_MODEL_RIDGE, .lambda = lambda};
  struct pflex_linmodel lm;
  assert_int_equal(pflex_linmodel_fit(xt, yt, m, p, &o, &lm), 0);
  double v = pflex_linmodel_predict(&lm, x + out * p);
  pflex_linmodel_release(&lm);
  return v;
}

/* Ridge LOO at a fixed lambda without refits (the full data's sums with the
 * row taken out) equals the refits up to rounding: random designs of 1-3
 * features, one with a constant column, one row of high leverage. */
static void test_ridge_loo_fixed_equals_refits(void **state) {
  (void)state;
  enum { N = 40 };
  uint64_t r = 0x9E3779B97F4A7C15ull;
  for (size_t p = 1; p <= 3; p++)
    for (int variant = 0; variant < 3; variant++) {
      double x[N * 3], y[N];
      for (size_t i = 0; i < N; i++) {
        for (size_t j = 0; j < p; j++)
          x[i * p + j] = (variant == 1 && j == p - 1 && p > 1) ? 5.0 : unit_rand(&r) * (j + 1);
        y[i] = 1 + x[i * p] * 0.7 + 0.3 * unit_rand(&r);
      }
      if (variant == 2) x[7 * p] = 40; /* far out: leverage near 1 */
      struct pflex_dataset d;
      mkdata(&d, N, p, x, y, NULL, NULL);
      int fold[N];
      double yhat[N];
      pflex_folds_loo(N, fold);
      for (double lambda = 0.01; lambda < 200; lambda *= 7) {
        struct pflex_fit_opts o = {.kind = PFLEX_MODEL_RIDGE, .lambda = lambda};
        assert_int_equal(pflex_cv_predict(&d, &o, fold, yhat), 0);
        for (size_t i = 0; i < N; i++) {
          double want = ridge_refit(x, y, N, p, i, lambda);
          assert_true(fabs(yhat[i] - want) <= 1e-9 * (1 + fabs(want)));
        }
      }
      pflex_dataset_release(&d);
    }
}

/* Ridge LOO with the lambda chosen, against its definition computed the
 * straightforward way (1 feature): every row's closed-form LOO residual on
 * all n rows, r_j = (yc_j - z_j b) / (1 - 1/n - z_j^2 / (Szz + lambda)),
 * b = z'yc / (Szz + lambda) on the standardized z; row i's lambda the grid
 * value with the least mean of the other rows' r_j^2 (ties to the larger);
 * then row i refitted at that lambda on the other rows. */
static void test_ridge_loo_chosen_definition(void **state) {
  (void)state;
  enum { N = 30, NG = PFLEX_RIDGE_GRID_N };
  uint64_t r = 88172645463325252ull;
  double x[N], y[N], grid[NG];
  size_t differs = 0;
  pflex_ridge_default_grid(grid);
  for (int trial = 0; trial < 4; trial++) {
    for (size_t i = 0; i < N; i++) {
      x[i] = unit_rand(&r);
      y[i] = 1 + (trial % 2 ? 0.1 : 2.0) * x[i] + unit_rand(&r);
    }
    y[trial] += 3; /* an outlier, whose own residual weighs on the choice */
    double mx = 0, my = 0, sd = 0;
    for (size_t i = 0; i < N; i++)
      mx += x[i] / N, my += y[i] / N;
    for (size_t i = 0; i < N; i++)
      sd += (x[i] - mx) * (x[i] - mx) / (N - 1);
    sd = sqrt(sd);
    double r2[NG][N];
    for (size_t k = 0; k < NG; k++) {
      double szz = 0, szy = 0;
      for (size_t j = 0; j < N; j++) {
        double z = (x[j] - mx) / sd;
        szz += z * z, szy += z * (y[j] - my);
      }
      double b = szy / (szz + grid[k]);
      for (size_t j = 0; j < N; j++) {
        double z = (x[j] - mx) / sd;
        double e = (y[j] - my - z * b) / (1 - 1.0 / N - z * z / (szz + grid[k]));
        r2[k][j] = e * e;
      }
    }
    struct pflex_dataset d;
    mkdata(&d, N, 1, x, y, NULL, NULL);
    int fold[N];
    double yhat[N];
    pflex_folds_loo(N, fold);
    struct pflex_fit_opts o = {.kind = PFLEX_MODEL_RIDGE, .lambda = -1};
    assert_int_equal(pflex_cv_predict(&d, &o, fold, yhat), 0);
    size_t full = 0; /* the choice on all rows, own terms included */
    double fbest = INFINITY;
    for (size_t k = 0; k < NG; k++) {
      double s = 0;
      for (size_t j = 0; j < N; j++)
        s += r2[k][j];
      if (s / N <= fbest * (1 + 1e-12)) fbest = s / N, full = k;
    }
    for (size_t i = 0; i < N; i++) {
      double best = INFINITY;
      size_t bk = 0;
      for (size_t k = 0; k < NG; k++) {
        double s = 0;
        for (size_t j = 0; j < N; j++)
          s += j == i ? 0 : r2[k][j];
        if (s / (N - 1) <= best * (1 + 1e-12)) best = s / (N - 1), bk = k;
      }
      differs += bk != full;
      double want = ridge_refit(x, y, N, 1, i, grid[bk]);
      assert_true(fabs(yhat[i] - want) <= 1e-9 * (1 + fabs(want)));
    }
    pflex_dataset_release(&d);
  }
  /* Not vacuous: leaving a row's own residual out moves some rows' choice
   * away from the choice on all rows. */
  assert_true(differs > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ols_one_feature),
      cmocka_unit_test(test_ols_intercept_only_and_constant_feature),
      cmocka_unit_test(test_loo_hand),
      cmocka_unit_test(test_loo_hat_identity),
      cmocka_unit_test(test_loo_closed_form_matches_refits),
      cmocka_unit_test(test_loo_prior_matches_refits),
      cmocka_unit_test(test_loco_assignment),
      cmocka_unit_test(test_scores_hand),
      cmocka_unit_test(test_ridge_hand),
      cmocka_unit_test(test_ridge_loo_no_leak),
      cmocka_unit_test(test_ridge_limits),
      cmocka_unit_test(test_ridge_select_bruteforce),
      cmocka_unit_test(test_ridge_loo_fixed_equals_refits),
      cmocka_unit_test(test_ridge_loo_chosen_definition),
      cmocka_unit_test(test_model_fit_summary),
      cmocka_unit_test(test_model_json_roundtrip),
      cmocka_unit_test(test_model_predict_run),
      cmocka_unit_test(test_kind_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
