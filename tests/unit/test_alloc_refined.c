/* Unit tests of the allocator's context on refined curves (the controller's
 * rounds): pflex_refine_digest as a content digest of the refined curve,
 * and pflex_alloc_ctx keeping the hulls of refined curves given with it
 * (pflex_alloc_job.curve_digest): every round bit for bit a cold solve's,
 * a refinement changed between calls never served from its old hull. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_rng.h>

#include "pflex/alloc.h"
#include "pflex/jobs.h"
#include "pflex/refine.h"

#define GPUS 8
#define NT 9
#define N 60

/* The family's member of a PFI on a range: a true curve, or a template. */
static struct pflex_curve *member(double pfi, double p_min, double p_max, double t_max) {
  struct pflex_refine_job rj = {.pfi = pfi, .p_min = p_min, .p_max = p_max, .t_max = t_max,
                                .gpus = GPUS, .gpu = "H200", .shape = PFLEX_REFINE_FAMILY};
  struct pflex_curve *c;
  assert_int_equal(pflex_refine_predicted_curve(&rj, &c), 0);
  return c;
}

/* N jobs, odd ones template-shaped: each its true curve, prior and refinement. */
struct world {
  struct pflex_curve *tmpl[NT], *truth[N];
  struct pflex_refine_prior *prior[N];
  struct pflex_refine *r[N];
  struct pflex_alloc_job j[N];
  gsl_rng *rng;
};

static struct pflex_refine_job job_for(struct world *w, size_t i) {
  double p_max = 4000 + 200.0 * (double)(i % 9), t_max = 5000 + 300.0 * (double)(i % 7);
  return (struct pflex_refine_job){.pfi = 0.8 + 0.1 * (double)(i % 20),
                                   .p_min = 1600,
                                   .p_max = p_max,
                                   .t_max = t_max,
                                   .gpus = GPUS,
                                   .gpu = "H200",
                                   .shape = i % 2 ? PFLEX_REFINE_DATA : PFLEX_REFINE_FAMILY,
                                   .templates = (const struct pflex_curve *const *)w->tmpl,
                                   .ntemplates = i % 2 ? NT : 0};
}

static void world_init(struct world *w) {
  memset(w, 0, sizeof *w);
  w->rng = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(w->rng, 10);
  for (int t = 0; t < NT; t++)
    w->tmpl[t] = member(0.7 + 0.4 * t, 1600, 5600, 8000);
  for (size_t i = 0; i < N; i++) {
    struct pflex_refine_job rj = job_for(w, i);
    w->truth[i] = member(0.8 + 2.5 * gsl_rng_uniform(w->rng), rj.p_min, rj.p_max, rj.t_max);
    assert_int_equal(pflex_refine_prior_new(&rj, &w->prior[i]), 0);
    assert_int_equal(pflex_refine_new(w->prior[i], NULL, &w->r[i]), 0);
    pflex_alloc_job_init(&w->j[i]);
    w->j[i].gpus = GPUS;
  }
}

static void world_release(struct world *w) {
  for (size_t i = 0; i < N; i++) {
    pflex_refine_free(w->r[i]);
    pflex_refine_prior_free(w->prior[i]);
    pflex_curve_free(w->truth[i]);
  }
  for (int t = 0; t < NT; t++)
    pflex_curve_free(w->tmpl[t]);
  gsl_rng_free(w->rng);
}

/* Job i observes its true curve at a random power, with 0.5% noise. */
static void observe(struct world *w, size_t i) {
  double lo = pflex_curve_p_min(w->truth[i]), hi = pflex_curve_p_max(w->truth[i]);
  double p = lo + (hi - lo) * (0.1 + 0.8 * gsl_rng_uniform(w->rng));
  double t = pflex_curve_eval(w->truth[i], p) * (1 + 0.005 * (2 * gsl_rng_uniform(w->rng) - 1));
  assert_int_equal(pflex_refine_observe(w->r[i], p, t), 0);
}

/* The jobs as the controller hands them over: the current curve and its digest. */
static void world_jobs(struct world *w) {
  for (size_t i = 0; i < N; i++) {
    w->j[i].curve = pflex_refine_curve(w->r[i]);
    w->j[i].curve_digest = pflex_refine_digest(w->r[i]);
  }
}

/* A digest names what the curve computes: equal for two refinements built
 * apart from equal jobs with the same observations (no pointer in it),
 * different after any observation, different for another prior, back to
 * the predicted curve's after a reset. */
static void test_refine_digest(void **state) {
  (void)state;
  struct world w;
  world_init(&w);
  for (size_t i = 0; i < 4; i++) {
    struct pflex_refine_job rj = job_for(&w, i);
    struct pflex_refine_prior *p2;
    struct pflex_refine *r2;
    assert_int_equal(pflex_refine_prior_new(&rj, &p2), 0);
    assert_int_equal(pflex_refine_new(p2, NULL, &r2), 0);
    uint64_t d0 = pflex_refine_digest(w.r[i]);
    assert_true(d0 == pflex_curve_digest(pflex_refine_prior_curve(w.prior[i])));
    assert_true(pflex_refine_digest(r2) == d0);
    uint64_t seen[6] = {d0};
    for (int k = 1; k < 6; k++) {
      double p = 2000 + 300.0 * k, t = 0.7 * pflex_curve_eval(w.truth[i], p) + 10 * k;
      assert_int_equal(pflex_refine_observe(w.r[i], p, t), 0);
      assert_int_equal(pflex_refine_observe(r2, p, t), 0);
      seen[k] = pflex_refine_digest(w.r[i]);
      assert_true(pflex_refine_digest(r2) == seen[k]);
      for (int m = 0; m < k; m++)
        assert_true(seen[k] != seen[m]);
    }
    /* the same observations on another job's prior: another curve */
    assert_int_equal(pflex_refine_reset(r2, w.prior[i + 2]), 0);
    assert_true(pflex_refine_digest(r2) ==
                pflex_curve_digest(pflex_refine_prior_curve(w.prior[i + 2])));
    for (int k = 1; k < 6; k++) {
      double p = 2000 + 300.0 * k, t = 0.7 * pflex_curve_eval(w.truth[i], p) + 10 * k;
      assert_int_equal(pflex_refine_observe(r2, p, t), 0);
    }
    assert_true(pflex_refine_digest(r2) != seen[5]);
    pflex_refine_free(r2);
    pflex_refine_prior_free(p2);
  }
  assert_true(pflex_refine_digest(NULL) == 0);
  world_release(&w);
}

static void solve(const struct pflex_alloc_job *j, double target, struct pflex_alloc_ctx *ctx,
                  struct pflex_alloc_result *res, struct pflex_alloc_summary *sum) {
  struct pflex_alloc_opts o = {.ctx = ctx};
  assert_int_equal(pflex_alloc_run(j, N, PFLEX_ALLOC_OPTIMAL, target, &o, res, sum), 0);
}

/* The controller's rounds on refined curves, with one context: each round
 * some jobs observe (their curves change behind the same pointers), one
 * round exactly one; floors on some jobs and targets that move. Every
 * round's results and summary equal a cold solve's, bit for bit; the
 * oracle's majorants too. And the check can fail: the job that changed,
 * given its old digest, is served its old hull and the answer differs. */
static void test_ctx_refined_warm_equals_cold(void **state) {
  (void)state;
  struct world w;
  world_init(&w);
  struct pflex_alloc_ctx *ctx;
  assert_int_equal(pflex_alloc_ctx_new(&ctx), 0);
  struct pflex_alloc_result warm[N], cold[N];
  struct pflex_alloc_summary sw, sc;
  for (int round = 0; round < 14; round++) {
    for (size_t i = 0; i < N; i++)
      if (round > 0 && (round == 7 ? i == 13 : gsl_rng_uniform(w.rng) < 0.3)) observe(&w, i);
    world_jobs(&w);
    for (size_t i = 0; i < N; i++)
      w.j[i].min_tput = round % 4 == 3 && i % 11 == 0
                            ? 0.4 * pflex_curve_eval(w.j[i].curve, pflex_curve_p_max(w.j[i].curve))
                            : 0;
    double target;
    assert_int_equal(pflex_alloc_target_for_cut(w.j, N, 0.2 + 0.01 * round, &target), 0);
    solve(w.j, target, ctx, warm, &sw);
    solve(w.j, target, NULL, cold, &sc);
    assert_memory_equal(warm, cold, sizeof warm);
    assert_memory_equal(&sw, &sc, sizeof sw);
    struct pflex_alloc_opts ow = {.ctx = ctx}, oc = {0};
    assert_int_equal(pflex_alloc_run(w.j, N, PFLEX_ALLOC_ORACLE, target, &ow, warm, &sw), 0);
    assert_int_equal(pflex_alloc_run(w.j, N, PFLEX_ALLOC_ORACLE, target, &oc, cold, &sc), 0);
    assert_memory_equal(warm, cold, sizeof warm);
  }
  /* A stale digest is served its stale hull: the check above would see it. */
  double target;
  assert_int_equal(pflex_alloc_target_for_cut(w.j, N, 0.3, &target), 0);
  solve(w.j, target, ctx, warm, &sw);
  size_t i = 13;
  uint64_t old = w.j[i].curve_digest;
  for (int k = 0; k < 3; k++) {
    double p = 1700 + 40.0 * k; /* nearly its top: its curve flattens, its cut is cheap */
    assert_int_equal(pflex_refine_observe(w.r[i], p, 0.97 * pflex_curve_t_max(w.truth[i])), 0);
  }
  world_jobs(&w);
  assert_true(w.j[i].curve_digest != old);
  solve(w.j, target, NULL, cold, &sc);
  solve(w.j, target, ctx, warm, &sw); /* with its new digest */
  assert_memory_equal(warm, cold, sizeof warm);
  w.j[i].curve_digest = old;
  solve(w.j, target, ctx, warm, &sw);
  assert_memory_not_equal(warm, cold, sizeof warm);
  pflex_alloc_ctx_free(ctx);
  world_release(&w);
}

int main(void) {
  gsl_set_error_handler_off(); /* as the programs do */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_refine_digest),
      cmocka_unit_test(test_ctx_refined_warm_equals_cold),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
