/* Unit tests of the templates read once (pflex_curve_templates_new,
 * pflex_curve_from_templates; src/core/curve.c): on random templates,
 * subsets and grids, every curve is bit for bit the one the definition in
 * curve.h gives, computed here the straightforward way (each template
 * evaluated with pflex_curve_eval at every point, for every curve: the
 * algorithm before the table), and the one pflex_curve_from_pfi_templates
 * gives on the subset. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "pflex/curve.h"
#include "pflex/error.h"

enum { NT = 40, K = PFLEX_CURVE_TEMPLATE_POINTS };

/* A small deterministic generator (the test needs no statistics). */
static double uni(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(*s >> 11) / 9007199254740992.0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* ---- the definition, straightforwardly ------------------------------------- */

static double ref_rel(const struct pflex_curve *c, double p) {
  double pm = pflex_curve_p_min(c) / pflex_curve_p_max(c), tm = pflex_curve_t_max(c);
  if (p >= pm) return pflex_curve_eval(c, p * pflex_curve_p_max(c)) / tm;
  double r0 = pflex_curve_eval(c, pflex_curve_p_min(c)) / tm;
  double r1 = pflex_curve_eval(c, (pm + 0.05) * pflex_curve_p_max(c)) / tm;
  double r = r0 - (r1 - r0) / 0.05 * (pm - p);
  return r > 0 ? r : 0;
}

struct ref_job {
  double p_min, p_max, t_max, gp[16], ge[16], knots[K + 16];
  size_t ng, np;
};

static double ref_grid_pfi(const struct ref_job *j, const double *def) {
  double s = 0;
  size_t k = 0;
  for (size_t i = 0; i < j->ng; i++)
    if (def[i] > 0) s += (1 - j->gp[i]) / def[i], k++;
  return k ? s / (double)k : NAN;
}

static void ref_job_init(struct ref_job *j, double p_min, double p_max, double t_max,
                         const double *grid, size_t n) {
  *j = (struct ref_job){.p_min = p_min, .p_max = p_max, .t_max = t_max};
  for (size_t i = 0; i < n && j->ng < 16; i++)
    if (grid[i] < p_max) {
      j->gp[j->ng] = grid[i] / p_max;
      j->ge[j->ng++] = (grid[i] < p_min ? p_min : grid[i]) / p_max;
    }
  for (size_t m = 0; m < K; m++)
    j->knots[j->np++] = m + 1 == K ? p_max : p_min + (p_max - p_min) * (double)m / (K - 1);
  for (size_t i = 0; i < n; i++)
    if (grid[i] > p_min && grid[i] < p_max) j->knots[j->np++] = grid[i];
  qsort(j->knots, j->np, sizeof *j->knots, cmp_double);
}

/* The curve with PFI pfi from templates t[0 .. nt) as curve.h defines it. */
static int ref_curve(const struct ref_job *j, double pfi, const struct pflex_curve *const *t,
                     size_t nt, double bw, struct pflex_curve **ret) {
  double w[NT], gd[NT][16], dmin = INFINITY, wsum = 0, def[K + 16] = {0}, gdef[16] = {0};
  for (size_t a = 0; a < nt; a++) {
    for (size_t i = 0; i < j->ng; i++)
      gd[a][i] = 1 - ref_rel(t[a], j->ge[i]);
    double v = ref_grid_pfi(j, gd[a]);
    w[a] = isnan(v) ? INFINITY : (v - pfi) / bw;
    if (fabs(w[a]) < dmin) dmin = fabs(w[a]);
  }
  if (!isfinite(dmin)) return -ERANGE;
  for (size_t a = 0; a < nt; a++)
    wsum += w[a] = isfinite(w[a]) ? exp(-0.5 * (w[a] * w[a] - dmin * dmin)) : 0;
  for (size_t a = 0; a < nt; a++) {
    if (w[a] == 0) continue;
    double f = w[a] / wsum;
    for (size_t m = 0; m < j->np; m++)
      def[m] += f * (1 - ref_rel(t[a], j->knots[m] / j->p_max));
    for (size_t i = 0; i < j->ng; i++)
      gdef[i] += f * gd[a][i];
  }
  double lambda = ref_grid_pfi(j, gdef) / pfi;
  struct pflex_curve_point pts[K + 16];
  for (size_t m = 0; m < j->np; m++) {
    double v = 1 - lambda * (def[m] > 0 ? def[m] : 0);
    pts[m] = (struct pflex_curve_point){j->knots[m], (v < 1e-3 ? 1e-3 : v) * j->t_max, 0};
  }
  pts[j->np - 1] = (struct pflex_curve_point){j->p_max, j->t_max, 0};
  return pflex_curve_new_measured(pts, j->np, PFLEX_INTERP_STEFFEN, ret);
}

/* ---- the tests -------------------------------------------------------------- */

/* A random rising template: 2-7 measured points (Steffen from 3), a few
 * linear ones, one parametric; its range anywhere in 0.2-0.7 of P_max. */
static struct pflex_curve *random_template(uint64_t *s, size_t a) {
  struct pflex_curve *c = NULL;
  double p_max = 300 + 5000 * uni(s), t_max = 10 + 1000 * uni(s);
  if (a == 0) {
    struct pflex_curve_params q;
    pflex_curve_params_default(NULL, 8, p_max, &q);
    q.c = 0.2 + 0.7 * uni(s);
    assert_int_equal(pflex_curve_new_parametric(&q, 0.4 * p_max, p_max, t_max, &c), 0);
    return c;
  }
  struct pflex_curve_point p[7];
  size_t n = 2 + (size_t)(uni(s) * 6);
  double lo = 0.2 + 0.5 * uni(s), t = 0.2 + 0.5 * uni(s);
  for (size_t i = 0; i < n; i++) {
    double x = lo + (1 - lo) * (double)i / (double)(n - 1);
    t = i + 1 == n ? 1 : t + (1 - t) * uni(s) * 0.7;
    p[i] = (struct pflex_curve_point){x * p_max, t * t_max, 0};
  }
  assert_int_equal(
      pflex_curve_new_measured(p, n, a % 5 == 1 ? PFLEX_INTERP_LINEAR : PFLEX_INTERP_STEFFEN, &c),
      0);
  return c;
}

/* Random jobs (grids unsorted, some points outside the range, every third
 * with grid points exactly on P_min and on a uniform knot, whose deficits
 * the table copies from the knot's), random subsets and PFIs: the table's
 * curve, the wrapper's on the subset and the definition's are the same
 * curve, bit for bit (same digest, same values). */
static void test_table_is_the_definition(void **state) {
  (void)state;
  uint64_t s = 12345;
  struct pflex_curve *tm[NT];
  for (size_t a = 0; a < NT; a++)
    tm[a] = random_template(&s, a);
  const struct pflex_curve *const *tc = (const struct pflex_curve *const *)tm;
  size_t compared = 0;
  for (int job = 0; job < 60; job++) {
    double p_max = 500 + 8000 * uni(&s), p_min = p_max * (0.15 + 0.6 * uni(&s)), grid[9];
    for (size_t i = 0; i < 9; i++) /* from below P_min to above P_max, in random order */
      grid[i] = p_max * (0.1 + 1.0 * uni(&s));
    if (job % 3 == 0) { /* grid points on P_min and on a uniform knot: read as that knot */
      grid[0] = p_min;
      grid[1] = p_min + (p_max - p_min) * 5.0 / (K - 1);
    }
    struct ref_job rj;
    ref_job_init(&rj, p_min, p_max, 100, grid, 9);
    struct pflex_curve_templates *t = NULL;
    int err = pflex_curve_templates_new(p_min, p_max, 100, grid, 9, tc, NT, &t);
    if (rj.ng == 0) {
      assert_int_equal(err, -PFLEX_E_NOPOINTS);
      continue;
    }
    assert_int_equal(err, 0);
    assert_int_equal(pflex_curve_templates_count(t), NT);
    assert_true(pflex_curve_templates_match(t, p_min, p_max, 100, grid, 9));
    assert_false(pflex_curve_templates_match(t, p_min, p_max, 100, grid, 8));
    assert_false(pflex_curve_templates_match(t, p_min * (1 + 1e-15), p_max, 100, grid, 9));
    for (int trial = 0; trial < 8; trial++) {
      unsigned char use[NT];
      const struct pflex_curve *sub[NT];
      size_t nsub = 0;
      for (size_t a = 0; a < NT; a++)
        if ((use[a] = trial == 0 || uni(&s) < 0.6)) sub[nsub++] = tc[a];
      double pfi = 0.3 + 5 * uni(&s), bw = trial % 2 ? 0.25 : 0.05 + uni(&s);
      struct pflex_curve *a = NULL, *b = NULL, *r = NULL;
      int ea = pflex_curve_from_templates(t, pfi, trial == 0 ? NULL : use, bw, &a);
      int eb = nsub ? pflex_curve_from_pfi_templates(pfi, p_min, p_max, 100, grid, 9, sub, nsub, bw,
                                                     &b)
                    : -ERANGE;
      int er = nsub ? ref_curve(&rj, pfi, sub, nsub, bw, &r) : -ERANGE;
      assert_int_equal(ea, er);
      assert_int_equal(eb, er);
      if (er == 0) {
        assert_true(pflex_curve_digest(a) == pflex_curve_digest(r));
        assert_true(pflex_curve_digest(b) == pflex_curve_digest(r));
        for (double p = p_min; p <= p_max; p += (p_max - p_min) / 37)
          assert_true(pflex_curve_eval(a, p) == pflex_curve_eval(r, p));
        compared++;
      }
      pflex_curve_free(a);
      pflex_curve_free(b);
      pflex_curve_free(r);
    }
    pflex_curve_templates_free(t);
  }
  assert_true(compared > 300); /* the comparisons happened */
  for (size_t a = 0; a < NT; a++)
    pflex_curve_free(tm[a]);
}

/* Bad input: no template used is -ERANGE, bad arguments -EINVAL, a template
 * that is NULL -EINVAL, no grid point below P_max -PFLEX_E_NOPOINTS. */
static void test_table_errors(void **state) {
  (void)state;
  struct pflex_curve_point pa[] = {{1000, 25, 0}, {4000, 100, 0}};
  struct pflex_curve *c = NULL, *out = NULL;
  assert_int_equal(pflex_curve_new_measured(pa, 2, PFLEX_INTERP_LINEAR, &c), 0);
  const struct pflex_curve *one[] = {c}, *none[] = {NULL};
  const double grid[] = {2000, 3000};
  struct pflex_curve_templates *t = NULL;
  assert_int_equal(pflex_curve_templates_new(1000, 4000, 100, grid, 2, one, 1, &t), 0);
  unsigned char off[] = {0}, on[] = {1};
  assert_int_equal(pflex_curve_from_templates(t, 2, off, 0.25, &out), -ERANGE);
  assert_int_equal(pflex_curve_from_templates(t, 0, on, 0.25, &out), -EINVAL);
  assert_int_equal(pflex_curve_from_templates(t, 2, on, 0, &out), -EINVAL);
  assert_int_equal(pflex_curve_from_templates(NULL, 2, on, 0.25, &out), -EINVAL);
  assert_null(out);
  assert_int_equal(pflex_curve_from_templates(t, 2, on, 0.25, &out), 0);
  double v;
  assert_int_equal(pflex_curve_pfi(out, grid, 2, &v), 0);
  assert_true(fabs(v - 2) < 1e-12);
  pflex_curve_free(out);
  pflex_curve_templates_free(t);
  t = NULL;
  assert_int_equal(pflex_curve_templates_new(1000, 4000, 100, grid, 2, none, 1, &t), -EINVAL);
  assert_int_equal(pflex_curve_templates_new(1000, 4000, 100, grid, 2, one, 0, &t), -EINVAL);
  assert_int_equal(pflex_curve_templates_new(0, 4000, 100, grid, 2, one, 1, &t), -EINVAL);
  assert_int_equal(pflex_curve_templates_new(1000, 4000, 100, grid + 1, 0, one, 1, &t),
                   -PFLEX_E_NOPOINTS);
  assert_null(t);
  assert_int_equal(pflex_curve_templates_count(NULL), 0);
  assert_false(pflex_curve_templates_match(NULL, 1000, 4000, 100, grid, 2));
  pflex_curve_templates_free(NULL);
  pflex_curve_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table_is_the_definition),
      cmocka_unit_test(test_table_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
