/* Unit tests of jobs prepared once for many allocator runs
 * (src/core/alloc_prepared.c, pflex_alloc_prepare): every strategy at
 * several cuts gives bit for bit the results of runs without it, also with
 * other weights and PFIs than it was made with, with floors (feasible and
 * not), with a context; a job with another curve, or another count, is
 * prepared afresh; bad weights give pflex_alloc_run's errors; optimal's
 * first pass kept in it but not for a callback curve. And the
 * allocator's inline fmin and fmax (alloc_internal.h) against glibc's. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_rng.h>

#include "core/alloc_internal.h"
#include "pflex/alloc.h"
#include "pflex/error.h"

/* A measured curve of np points on a random range; non-concave unless
 * concave (the local search runs then). */
static struct pflex_curve *random_curve(gsl_rng *rng, bool concave, size_t np) {
  struct pflex_curve_point p[8];
  double lo = 800 + 1500 * gsl_rng_uniform(rng), hi = lo + 500 + 4000 * gsl_rng_uniform(rng);
  double t = 50 + 100 * gsl_rng_uniform(rng), slope = 0.02 + 0.1 * gsl_rng_uniform(rng);
  for (size_t i = 0; i < np; i++) {
    double x = lo + (hi - lo) * (double)i / (double)(np - 1);
    if (i) t += slope * (hi - lo) / (double)(np - 1);
    p[i] = (struct pflex_curve_point){x, t, 0};
    slope = concave ? slope * (0.2 + 0.8 * gsl_rng_uniform(rng)) : 0.1 * gsl_rng_uniform(rng);
  }
  struct pflex_curve *c = NULL;
  assert_int_equal(pflex_curve_new_measured(p, np, PFLEX_INTERP_STEFFEN, &c), 0);
  return c;
}

enum { NC = 7, N = 60 };

/* N jobs drawn from NC curves (many share one, as a study's workload). */
static void jobs_of(gsl_rng *rng, struct pflex_curve **c, struct pflex_alloc_job *j) {
  for (int i = 0; i < N; i++) {
    pflex_alloc_job_init(&j[i]);
    j[i].curve = c[gsl_rng_uniform_int(rng, NC)];
    j[i].gpus = 1 + (int)gsl_rng_uniform_int(rng, 8);
    j[i].weight = 0.5 + gsl_rng_uniform(rng);
    j[i].pfi = gsl_rng_uniform(rng);
    j[i].dram_copy = gsl_rng_uniform(rng);
    j[i].arch = i % 2 ? PFLEX_ARCH_MOE : PFLEX_ARCH_DENSE;
    j[i].task = i % 3 ? PFLEX_TASK_FT : PFLEX_TASK_PT;
  }
}

/* Every strategy at cuts 0-40%: with pp (and a context) as without. */
static void assert_same_runs(const struct pflex_alloc_job *j, struct pflex_alloc_prepared *pp,
                             struct pflex_alloc_ctx *ctx) {
  struct pflex_alloc_result a[N], b[N];
  for (int cut = 0; cut <= 40; cut += 8) {
    double target;
    assert_int_equal(pflex_alloc_target_for_cut(j, N, cut / 100.0, &target), 0);
    for (int st = 0; st < PFLEX_ALLOC_NSTRATEGIES; st++) {
      struct pflex_alloc_opts with = {.ctx = ctx, .prepared = pp}, without = {.ctx = ctx};
      struct pflex_alloc_summary sa, sb;
      memset(a, 0, sizeof a), memset(b, 0, sizeof b);
      memset(&sa, 0, sizeof sa), memset(&sb, 0, sizeof sb);
      int ea = pflex_alloc_run(j, N, st, target, &with, a, &sa);
      int eb = pflex_alloc_run(j, N, st, target, &without, b, &sb);
      assert_int_equal(ea, eb);
      assert_memory_equal(a, b, sizeof a);
      assert_memory_equal(&sa, &sb, sizeof sa);
    }
  }
}

static void test_prepared_equals_unprepared(void **state) {
  (void)state;
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(rng, 7);
  struct pflex_curve *c[NC];
  for (int k = 0; k < NC; k++)
    c[k] = random_curve(rng, k % 3 == 0, 4 + (size_t)(k % 4));
  struct pflex_alloc_ctx *ctx;
  assert_int_equal(pflex_alloc_ctx_new(&ctx), 0);
  struct pflex_alloc_job j[N];
  for (int rep = 0; rep < 4; rep++) {
    jobs_of(rng, c, j);
    if (rep == 2) j[3].min_tput = 0.7 * pflex_curve_t_max(j[3].curve);    /* a floor */
    if (rep == 3) j[5].min_tput = 1.5 * pflex_curve_t_max(j[5].curve);    /* above T_max */
    struct pflex_alloc_prepared *pp = NULL;
    assert_int_equal(pflex_alloc_prepare(j, N, &pp), 0);
    assert_same_runs(j, pp, rep % 2 ? ctx : NULL);
    /* other weights and PFIs than it was made with (the study's oracles) */
    for (int i = 0; i < N; i++)
      j[i].weight *= 1 + (double)(i % 5), j[i].pfi = 1 - j[i].pfi;
    assert_same_runs(j, pp, ctx);
    /* another curve for one job: prepared afresh, the same results */
    j[N / 2].curve = c[(rep + 1) % NC] == j[N / 2].curve ? c[(rep + 2) % NC] : c[(rep + 1) % NC];
    assert_same_runs(j, pp, NULL);
    pflex_alloc_prepared_free(pp);
  }
  pflex_alloc_prepared_free(NULL);
  pflex_alloc_ctx_free(ctx);
  for (int k = 0; k < NC; k++)
    pflex_curve_free(c[k]);
  gsl_rng_free(rng);
}

static double scaled_eval(void *ctx, double p) {
  return *(const double *)ctx * sqrt(p);
}

/* A callback curve that computes otherwise behind the same pointer between
 * runs: optimal keeps no first pass of jobs with one (its hull would be
 * stale), so each run on the prepared jobs is still the run without. */
static void test_prepared_callback_not_kept(void **state) {
  (void)state;
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(rng, 9);
  struct pflex_curve *c[NC];
  for (int k = 0; k < NC; k++)
    c[k] = random_curve(rng, false, 5);
  double scale = 1.0;
  struct pflex_curve_fn fn = {.eval = scaled_eval, .ctx = &scale};
  struct pflex_curve *cb;
  assert_int_equal(pflex_curve_new_callback(&fn, 1000, 4000, &cb), 0);
  struct pflex_alloc_job j[N];
  jobs_of(rng, c, j);
  for (int i = 0; i < N; i += 4)
    j[i].curve = cb;
  struct pflex_alloc_prepared *pp = NULL;
  assert_int_equal(pflex_alloc_prepare(j, N, &pp), 0);
  struct pflex_alloc_result a[N], b[N];
  for (int round = 0; round < 4; round++) {
    scale = 1.0 + 3.0 * round; /* slopes from below the others' to among them */
    double target;
    assert_int_equal(pflex_alloc_target_for_cut(j, N, 0.25, &target), 0);
    struct pflex_alloc_opts with = {.prepared = pp}, without = {0};
    assert_int_equal(pflex_alloc_run(j, N, PFLEX_ALLOC_OPTIMAL, target, &with, a, NULL), 0);
    assert_int_equal(pflex_alloc_run(j, N, PFLEX_ALLOC_OPTIMAL, target, &without, b, NULL), 0);
    assert_memory_equal(a, b, sizeof a);
  }
  pflex_alloc_prepared_free(pp);
  pflex_curve_free(cb);
  for (int k = 0; k < NC; k++)
    pflex_curve_free(c[k]);
  gsl_rng_free(rng);
}

/* Another count than it was made with; bad weights: pflex_alloc_run's
 * errors; bad arguments. */
static void test_prepared_errors(void **state) {
  (void)state;
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(rng, 8);
  struct pflex_curve *c[NC];
  for (int k = 0; k < NC; k++)
    c[k] = random_curve(rng, false, 5);
  struct pflex_alloc_job j[N];
  jobs_of(rng, c, j);
  struct pflex_alloc_prepared *pp = NULL;
  assert_int_equal(pflex_alloc_prepare(NULL, 3, &pp), -EINVAL);
  assert_int_equal(pflex_alloc_prepare(j, N, NULL), -EINVAL);
  assert_int_equal(pflex_alloc_prepare(j, N - 1, &pp), 0);
  assert_same_runs(j, pp, NULL); /* made from N - 1 jobs: all N prepared afresh */
  pflex_alloc_prepared_free(pp);
  assert_int_equal(pflex_alloc_prepare(j, N, &pp), 0);
  struct pflex_alloc_opts o = {.prepared = pp};
  struct pflex_alloc_result r[N];
  double target;
  assert_int_equal(pflex_alloc_target_for_cut(j, N, 0.2, &target), 0);
  static const struct {
    double w;
    int err;
  } bad[] = {{-1, -EINVAL}, {NAN, -EINVAL}, {INFINITY, -EINVAL}, {2e12, -ERANGE}};
  for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
    double keep = j[9].weight;
    j[9].weight = bad[b].w;
    assert_int_equal(pflex_alloc_run(j, N, PFLEX_ALLOC_OPTIMAL, target, &o, r, NULL), bad[b].err);
    assert_int_equal(pflex_alloc_run(j, N, PFLEX_ALLOC_OPTIMAL, target, NULL, r, NULL), bad[b].err);
    j[9].weight = keep;
  }
  j[4].gpus = 0; /* bad bounds: no object */
  struct pflex_alloc_prepared *none = NULL;
  assert_int_equal(pflex_alloc_prepare(j, N, &none), -EINVAL);
  assert_null(none);
  pflex_alloc_prepared_free(pp);
  for (int k = 0; k < NC; k++)
    pflex_curve_free(c[k]);
  gsl_rng_free(rng);
}

/* pflex__fmin and pflex__fmax give glibc's fmin and fmax bit for bit on
 * zeros of both signs, NaNs of both signs, infinities, subnormals. */
static void test_fmin_fmax_as_glibc(void **state) {
  (void)state;
  static const double v[] = {0.0, -0.0, 1, -1, INFINITY, -INFINITY, NAN, -NAN, 1e-310, 2.5};
  size_t nv = sizeof v / sizeof *v;
  for (size_t a = 0; a < nv; a++)
    for (size_t b = 0; b < nv; b++) {
      volatile double x = v[a], y = v[b];
      double lib[2] = {fmin(x, y), fmax(x, y)}, own[2] = {pflex__fmin(x, y), pflex__fmax(x, y)};
      assert_memory_equal(lib, own, sizeof lib);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_prepared_equals_unprepared),
      cmocka_unit_test(test_prepared_errors),
      cmocka_unit_test(test_prepared_callback_not_kept),
      cmocka_unit_test(test_fmin_fmax_as_glibc),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
