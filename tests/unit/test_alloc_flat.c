/* Unit tests of the flat proportional path (src/core/alloc_flat.c,
 * pflex_alloc_flat_*): on random workloads of mixed curves (measured with
 * and without caps, parametric, none), floors, zero weights and ties, its
 * powers are pflex_alloc_run's up to rounding (1e-9 of the total cut) and
 * its caps the same function of the power, bit for bit; replacing jobs
 * gives what a flat filled afresh gives; errors leave the flat as it was. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "pflex/alloc.h"
#include "pflex/error.h"

#define MAXJ 600

/* Jobs the comparisons saw at their floor (below P_max), and strictly between. */
static size_t n_clipped, n_between;
/* Caps compared bit for bit (where the powers are the same bits). */
static size_t n_caps;

struct wl {
  struct pflex_alloc_job j[MAXJ];
  struct pflex_curve *c[MAXJ];
  size_t n;
};

/* A measured curve of 2-6 points on the cap grid, with caps or without;
 * one in four on a finer grid (up to 18 points: the caps' longer knot
 * search). */
static struct pflex_curve *measured(gsl_rng *r, int g, double pmax, bool caps) {
  struct pflex_curve_point pt[18];
  size_t np = 0;
  double t = 100;
  int step = gsl_rng_uniform(r) < 0.25 ? 25 : 100;
  for (int cap = 200; cap <= 600; cap += step)
    if (cap * g < pmax && gsl_rng_uniform(r) < 0.8) {
      t += 50 * gsl_rng_uniform(r) * step / 100;
      pt[np++] = (struct pflex_curve_point){cap * g, t, caps ? cap : 0};
    }
  pt[np++] = (struct pflex_curve_point){pmax, t + 30, caps ? 700 : 0};
  struct pflex_curve *c = NULL;
  enum pflex_curve_interp in =
      gsl_rng_uniform(r) < 0.5 ? PFLEX_INTERP_STEFFEN : PFLEX_INTERP_LINEAR;
  assert_int_equal(pflex_curve_new_measured(pt, np, in, &c), 0);
  return c;
}

static struct pflex_curve *parametric(gsl_rng *r, int g, double pmax) {
  struct pflex_curve_params q;
  pflex_curve_params_default("H200", g, pmax, &q);
  q.c = 0.2 + 0.8 * gsl_rng_uniform(r);
  struct pflex_curve *c = NULL;
  assert_int_equal(pflex_curve_new_parametric(&q, 200.0 * g, pmax, 1000.0 * g, &c), 0);
  return c;
}

/* Job i of a random workload; every `tie`-th job copies job 0's features. */
static void make_job(gsl_rng *r, struct wl *w, size_t i, bool ties) {
  struct pflex_alloc_job *j = &w->j[i];
  static const int gpus[] = {1, 8, 16};
  int g = gpus[gsl_rng_uniform_int(r, 3)];
  double pmax = g * (450 + 250 * gsl_rng_uniform(r));
  unsigned kind = (unsigned)gsl_rng_uniform_int(r, 4);
  pflex_alloc_job_init(j);
  j->gpus = g;
  w->c[i] = kind == 0   ? measured(r, g, pmax, true)
            : kind == 1 ? measured(r, g, pmax, false)
            : kind == 2 ? parametric(r, g, pmax)
                        : NULL;
  j->curve = w->c[i];
  if (!j->curve) { /* bounds given */
    j->p_max = pmax;
    j->p_min = gsl_rng_uniform(r) < 0.5 ? 0 : pmax * (0.3 + 0.5 * gsl_rng_uniform(r));
    j->t_max = 1000.0 * g;
  } else if (gsl_rng_uniform(r) < 0.2) {
    j->min_tput = 0.9 * pflex_curve_t_max(j->curve); /* a floor */
  }
  if (gsl_rng_uniform(r) < 0.1) j->cap_min_w = 150, j->cap_max_w = 650;
  j->pfi = gsl_rng_uniform(r) < 0.1 ? 0 : 1 + 1.5 * gsl_rng_uniform(r);
  j->dram_copy = gsl_rng_uniform(r) < 0.2 ? 0 : gsl_rng_uniform(r);
  j->arch = gsl_rng_uniform(r) < 0.5 ? PFLEX_ARCH_MOE : PFLEX_ARCH_DENSE;
  j->task = gsl_rng_uniform(r) < 0.5 ? PFLEX_TASK_FT : PFLEX_TASK_PT;
  if (ties && i > 0 && gsl_rng_uniform(r) < 0.3) { /* the same bounds and weight as job 0 */
    pflex_curve_free(w->c[i]);
    w->c[i] = NULL;
    *j = w->j[0];
    j->curve = NULL;
    j->p_min = 0.5 * (j->p_max = 4000);
    j->t_max = 1000;
    j->min_tput = 0;
  }
}

static void make(gsl_rng *r, struct wl *w, size_t n, bool ties) {
  w->n = n;
  for (size_t i = 0; i < n; i++)
    make_job(r, w, i, ties);
  if (ties) { /* job 0 as the tied ones */
    pflex_curve_free(w->c[0]);
    w->c[0] = NULL;
    w->j[0].curve = NULL;
    w->j[0].p_min = 0.5 * (w->j[0].p_max = 4000);
    w->j[0].t_max = 1000;
    w->j[0].min_tput = 0;
  }
}

static void release(struct wl *w) {
  for (size_t i = 0; i < w->n; i++)
    pflex_curve_free(w->c[i]);
}

/* Flat against pflex_alloc_run for one strategy and target; the flat's
 * powers into pw when asked. Returns pflex_alloc_run's error. */
static int compare(const struct wl *w, struct pflex_alloc_flat *f, enum pflex_alloc_strategy s,
                   double target, double *pw_out) {
  struct pflex_alloc_result r[MAXJ];
  struct pflex_alloc_summary sr, sf;
  double pw[MAXJ], cw[MAXJ];
  struct pflex_alloc_opts o = {.skip_tput = true};
  int er = pflex_alloc_run(w->j, w->n, s, target, &o, r, &sr);
  int ef = pflex_alloc_flat_run(f, target, pw, cw, &sf);
  assert_int_equal(ef, er);
  if (er && er != -PFLEX_E_INFEASIBLE) return er;
  assert_true(sf.min_w == sr.min_w && sf.max_w == sr.max_w && sf.deepest_cut == sr.deepest_cut);
  if (er) return er;
  double cut = fmax(sr.max_w - target, 0), total = 0;
  for (size_t i = 0; i < w->n; i++) {
    assert_true(fabs(pw[i] - r[i].power_w) <= 1e-9 * cut);
    assert_true(pw[i] >= r[i].floor_w && pw[i] <= sr.max_w);
    if (pw[i] == r[i].power_w) assert_true(cw[i] == r[i].cap_w), n_caps++;
    n_clipped += pw[i] == r[i].floor_w && cut > 0;
    n_between += pw[i] > r[i].floor_w && cut > 0 && r[i].power_w < w->j[i].p_max;
    total += pw[i];
  }
  assert_true(total <= target && sf.total_w == total && isnan(sf.total_tput));
  if (pw_out) memcpy(pw_out, pw, w->n * sizeof *pw);
  return 0;
}

static void test_flat_vs_run(void **state) {
  (void)state;
  gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(r, 7);
  static struct wl w;
  size_t runs = 0;
  for (int rep = 0; rep < 60; rep++) {
    size_t n =
        rep % 3 == 0 ? 1 + gsl_rng_uniform_int(r, 8) : 50 + gsl_rng_uniform_int(r, MAXJ - 50);
    make(r, &w, n, rep % 4 == 1);
    for (int s = 0; s <= PFLEX_ALLOC_PFI; s++) {
      struct pflex_alloc_flat *f = NULL;
      assert_int_equal(pflex_alloc_flat_new(w.j, n, (enum pflex_alloc_strategy)s, NULL, &f), 0);
      for (double cut = 0; cut <= 0.75; cut += 0.05) {
        double target, pw[MAXJ];
        assert_int_equal(pflex_alloc_target_for_cut(w.j, n, cut, &target), 0);
        if (compare(&w, f, (enum pflex_alloc_strategy)s, target, pw) == 0) runs++;
      }
      pflex_alloc_flat_free(f);
    }
    release(&w);
  }
  /* Most targets feasible, and many jobs clipped to their floor with others
   * not: the comparison ran and the level search had work to do. */
  print_message("%zu runs, %zu clipped, %zu between, %zu caps\n", runs, n_clipped, n_between,
                n_caps);
  assert_true(runs > 2000 && n_clipped > 10000 && n_between > 10000 && n_caps > 100000);
  gsl_rng_free(r);
}

/* pflex_alloc_flat_set: jobs replaced one by one give, bit for bit, what a
 * flat filled afresh with the new jobs gives (the knot pool reused, grown
 * and compacted on the way); a refused job leaves the flat as it was. */
static void test_flat_set(void **state) {
  (void)state;
  gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(r, 11);
  static struct wl a, b;
  make(r, &a, 400, false);
  make(r, &b, 400, false);
  struct pflex_alloc_flat *f = NULL, *g = NULL;
  assert_int_equal(pflex_alloc_flat_new(a.j, a.n, PFLEX_ALLOC_EQUAL, NULL, &f), 0);
  for (int round = 0; round < 5; round++)
    for (size_t i = 0; i < a.n; i++) /* every job to b's and back, then to b's */
      assert_int_equal(pflex_alloc_flat_set(f, i, round % 2 ? &a.j[i] : &b.j[i]), 0);
  assert_int_equal(pflex_alloc_flat_new(b.j, b.n, PFLEX_ALLOC_EQUAL, NULL, &g), 0);
  struct pflex_alloc_job bad = b.j[3];
  bad.gpus = 0;
  assert_int_equal(pflex_alloc_flat_set(f, 3, &bad), -EINVAL);
  assert_int_equal(pflex_alloc_flat_set(f, b.n, &b.j[0]), -EINVAL);
  double target, p1[MAXJ], p2[MAXJ], c1[MAXJ], c2[MAXJ];
  struct pflex_alloc_summary s1, s2;
  for (double cut = 0.05; cut < 0.5; cut += 0.1) {
    assert_int_equal(pflex_alloc_target_for_cut(b.j, b.n, cut, &target), 0);
    int e1 = pflex_alloc_flat_run(f, target, p1, c1, &s1);
    assert_int_equal(e1, pflex_alloc_flat_run(g, target, p2, c2, &s2));
    assert_true(s1.min_w == s2.min_w && s1.max_w == s2.max_w);
    if (e1) continue;
    assert_memory_equal(p1, p2, b.n * sizeof *p1);
    assert_memory_equal(c1, c2, b.n * sizeof *c1);
    assert_int_equal(compare(&b, f, PFLEX_ALLOC_EQUAL, target, NULL), 0);
  }
  pflex_alloc_flat_free(f);
  pflex_alloc_flat_free(g);
  release(&a);
  release(&b);
  gsl_rng_free(r);
}

/* Errors as pflex_alloc_run's: a strategy that is not proportional, a NaN
 * PFI, a job without bounds; an infeasible floor makes runs infeasible
 * until the job is replaced. */
static void test_flat_errors(void **state) {
  (void)state;
  struct pflex_curve_point pt[] = {{1000, 50, 200}, {4000, 100, 700}};
  struct pflex_curve *c = NULL;
  assert_int_equal(pflex_curve_new_measured(pt, 2, PFLEX_INTERP_LINEAR, &c), 0);
  struct pflex_alloc_job j[2];
  pflex_alloc_job_init(&j[0]);
  pflex_alloc_job_init(&j[1]);
  j[0].curve = j[1].curve = c;
  j[0].gpus = j[1].gpus = 4;
  j[0].pfi = j[1].pfi = 1.5;
  struct pflex_alloc_flat *f = NULL;
  assert_int_equal(pflex_alloc_flat_new(j, 2, PFLEX_ALLOC_ORACLE, NULL, &f), -EINVAL);
  j[1].pfi = NAN;
  assert_int_equal(pflex_alloc_flat_new(j, 2, PFLEX_ALLOC_PFI, NULL, &f), -EINVAL);
  j[1].pfi = 1.5;
  j[1].min_tput = 200; /* above T_max */
  assert_int_equal(pflex_alloc_flat_new(j, 2, PFLEX_ALLOC_PFI, NULL, &f), 0);
  double p[2] = {-1, -1}, cap[2];
  struct pflex_alloc_summary s;
  assert_int_equal(pflex_alloc_flat_run(f, 6000, p, cap, &s), -PFLEX_E_INFEASIBLE);
  assert_true(p[0] == -1 && s.max_w == 8000);
  j[1].min_tput = 75; /* reached at 2500 W */
  assert_int_equal(pflex_alloc_flat_set(f, 1, &j[1]), 0);
  assert_int_equal(pflex_alloc_flat_run(f, 4500, p, cap, &s), 0);
  /* Equal PFI and T_max: cut 3500 by P_max, 1750 each; job 1's floor 2500
   * clips it at 1500 of cut, job 0 takes the other 2000: 2000 and 2500. */
  assert_true(fabs(p[0] - 2000) < 1e-9 && fabs(p[1] - 2500) < 1e-9);
  assert_true(fabs(cap[0] - pflex_curve_cap_for_power(c, 2000, 4, 200, 700)) < 1e-12);
  assert_int_equal(pflex_alloc_flat_run(f, 1000, p, cap, &s), -PFLEX_E_INFEASIBLE);
  assert_true(fabs(s.min_w - 3500) < 1e-9);
  struct pflex_alloc_job none;
  pflex_alloc_job_init(&none);
  assert_int_equal(pflex_alloc_flat_set(f, 0, &none), -EINVAL);   /* no curve, no P_max */
  assert_int_equal(pflex_alloc_flat_run(f, 4500, p, cap, &s), 0); /* unchanged */
  assert_true(fabs(p[0] - 2000) < 1e-9);
  pflex_alloc_flat_free(f);
  pflex_alloc_flat_free(NULL);
  pflex_curve_free(c);
}

/* A concave piecewise-linear curve: 2-5 points, falling secant slopes. */
static struct pflex_curve *concave(gsl_rng *r, double lo, double hi) {
  struct pflex_curve_point pt[5];
  size_t np = 2 + gsl_rng_uniform_int(r, 4);
  double slope = 0.05 + 0.1 * gsl_rng_uniform(r), t = 100 + 100 * gsl_rng_uniform(r);
  for (size_t m = 0; m < np; m++) {
    double x = lo + (hi - lo) * (double)m / (double)(np - 1);
    if (m > 0) t += slope * (x - pt[m - 1].power_w), slope *= 0.2 + 0.7 * gsl_rng_uniform(r);
    pt[m] = (struct pflex_curve_point){x, t, 0};
  }
  struct pflex_curve *c = NULL;
  assert_int_equal(pflex_curve_new_measured(pt, np, PFLEX_INTERP_LINEAR, &c), 0);
  return c;
}

/* optimal on a flat: on concave piecewise-linear curves, where
 * pflex_alloc_run's first pass is exact and it does nothing more, the same
 * powers up to rounding; on smooth curves (Steffen, parametric) within
 * 1e-3 of pflex_alloc_run's weighted throughput, never above its target;
 * replaced jobs as a flat filled afresh, bit for bit. */
static void test_flat_optimal(void **state) {
  (void)state;
  gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(r, 5);
  static struct wl w;
  size_t same = 0, all = 0;
  double worst = 0; /* the largest shortfall on smooth curves */
  for (int rep = 0; rep < 80; rep++) {
    bool smooth = rep % 2;
    w.n = 2 + gsl_rng_uniform_int(r, 300);
    for (size_t i = 0; i < w.n; i++) {
      make_job(r, &w, i, false);
      pflex_curve_free(w.c[i]);
      double pmax = 8 * (450 + 250 * gsl_rng_uniform(r));
      w.c[i] = smooth ? (i % 2 ? measured(r, 8, pmax, true) : parametric(r, 8, pmax))
                      : concave(r, 0.4 * pmax, pmax);
      w.j[i].curve = w.c[i];
      w.j[i].gpus = 8;
      w.j[i].p_min = w.j[i].p_max = w.j[i].t_max = w.j[i].min_tput = 0;
      w.j[i].weight = gsl_rng_uniform(r) < 0.3 ? 0.5 + gsl_rng_uniform(r) : 1;
    }
    struct pflex_alloc_flat *f = NULL;
    assert_int_equal(pflex_alloc_flat_new(w.j, w.n, PFLEX_ALLOC_OPTIMAL, NULL, &f), 0);
    for (double cut = 0.05; cut < 0.5; cut += 0.1) {
      struct pflex_alloc_result res[MAXJ];
      struct pflex_alloc_summary sr, sf;
      double target, pw[MAXJ], cw[MAXJ], vf = 0, vr = 0, total = 0;
      assert_int_equal(pflex_alloc_target_for_cut(w.j, w.n, cut, &target), 0);
      assert_int_equal(pflex_alloc_run(w.j, w.n, PFLEX_ALLOC_OPTIMAL, target, NULL, res, &sr), 0);
      assert_int_equal(pflex_alloc_flat_run(f, target, pw, cw, &sf), 0);
      for (size_t i = 0; i < w.n; i++) {
        assert_true(pw[i] >= res[i].floor_w && pw[i] <= pflex_curve_p_max(w.c[i]));
        vf += w.j[i].weight * pflex_curve_eval(w.c[i], pw[i]);
        vr += w.j[i].weight * res[i].tput;
        total += pw[i];
        if (!smooth) assert_true(fabs(pw[i] - res[i].power_w) <= 1e-9 * target);
        if (!smooth) same += pw[i] == res[i].power_w, all++;
        if (pw[i] == res[i].power_w) assert_true(cw[i] == res[i].cap_w);
      }
      assert_true(total <= target && isnan(sf.gap_bound));
      assert_true(vf >= vr * (1 - (smooth ? 1e-3 : 1e-12)));
      if (smooth) worst = fmax(worst, 1 - vf / vr);
    }
    pflex_alloc_flat_free(f);
    release(&w);
  }
  print_message("concave: %zu of %zu powers bit for bit; smooth: shortfall at most %.3g\n", same,
                all, worst);
  gsl_rng_free(r);
}

/* optimal on a flat of 20,000 jobs (from 16,384 on, the threshold slope is
 * searched in a bracket found from a sample of the jobs): on concave
 * piecewise-linear curves the powers of pflex_alloc_run up to rounding,
 * for random jobs (the bracket holds the level) and for jobs whose weights
 * alternate between 100 and 0.01 (the sample, every other job, sees only
 * the heavy ones and places the level wrongly: the search over every
 * segment), never above the target. */
static void test_flat_optimal_sampled(void **state) {
  (void)state;
  enum { N = 20000 };
  gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(r, 17);
  struct pflex_alloc_job *j = calloc(N, sizeof *j);
  struct pflex_curve **c = calloc(N, sizeof *c);
  struct pflex_alloc_result *res = calloc(N, sizeof *res);
  double *pw = calloc(N, sizeof *pw);
  assert_true(j && c && res && pw);
  for (int alt = 0; alt < 2; alt++) {
    for (size_t i = 0; i < N; i++) {
      double pmax = 8 * (450 + 250 * gsl_rng_uniform(r));
      pflex_alloc_job_init(&j[i]);
      j[i].curve = c[i] = concave(r, 0.4 * pmax, pmax);
      j[i].gpus = 8;
      j[i].weight = alt ? (i % 2 ? 0.01 : 100) : 0.5 + gsl_rng_uniform(r);
    }
    struct pflex_alloc_flat *f = NULL;
    assert_int_equal(pflex_alloc_flat_new(j, N, PFLEX_ALLOC_OPTIMAL, NULL, &f), 0);
    for (double cut = 0.05; cut < 0.5; cut += 0.15) {
      double target, total = 0, vf = 0, vr = 0;
      assert_int_equal(pflex_alloc_target_for_cut(j, N, cut, &target), 0);
      assert_int_equal(pflex_alloc_run(j, N, PFLEX_ALLOC_OPTIMAL, target, NULL, res, NULL), 0);
      assert_int_equal(pflex_alloc_flat_run(f, target, pw, NULL, NULL), 0);
      for (size_t i = 0; i < N; i++) {
        assert_true(fabs(pw[i] - res[i].power_w) <= 1e-9 * target);
        total += pw[i];
        vf += j[i].weight * pflex_curve_eval(c[i], pw[i]);
        vr += j[i].weight * res[i].tput;
      }
      assert_true(total <= target && vf >= vr * (1 - 1e-12));
    }
    pflex_alloc_flat_free(f);
    for (size_t i = 0; i < N; i++)
      pflex_curve_free(c[i]);
  }
  free(j), free(c), free(res), free(pw);
  gsl_rng_free(r);
}

/* pflex_alloc_flat_set for optimal: as a flat filled afresh, bit for bit. */
static void test_flat_optimal_set(void **state) {
  (void)state;
  gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(r, 9);
  static struct wl a, b;
  make(r, &a, 300, false);
  make(r, &b, 300, false);
  for (size_t i = 0; i < a.n; i++) /* optimal needs curves */
    if (!a.c[i] || !b.c[i]) {
      pflex_curve_free(a.c[i]), pflex_curve_free(b.c[i]);
      a.j[i].curve = a.c[i] = parametric(r, 8, 5000);
      b.j[i].curve = b.c[i] = measured(r, 8, 5000, true);
      a.j[i].gpus = b.j[i].gpus = 8;
      a.j[i].p_min = a.j[i].p_max = b.j[i].p_min = b.j[i].p_max = 0;
    }
  struct pflex_alloc_opts o = {.knots = 9};
  struct pflex_alloc_flat *f = NULL, *g = NULL;
  assert_int_equal(pflex_alloc_flat_new(a.j, a.n, PFLEX_ALLOC_OPTIMAL, &o, &f), 0);
  /* Every job to b's, the odd ones back to a's, every third to b's again. */
  struct pflex_alloc_job mix[MAXJ];
  for (size_t i = 0; i < a.n; i++)
    assert_int_equal(pflex_alloc_flat_set(f, i, &b.j[i]), 0);
  for (size_t i = 1; i < a.n; i += 2)
    assert_int_equal(pflex_alloc_flat_set(f, i, &a.j[i]), 0);
  for (size_t i = 0; i < a.n; i += 3)
    assert_int_equal(pflex_alloc_flat_set(f, i, &b.j[i]), 0);
  for (size_t i = 0; i < a.n; i++)
    mix[i] = i % 3 != 0 && i % 2 ? a.j[i] : b.j[i];
  assert_int_equal(pflex_alloc_flat_new(mix, a.n, PFLEX_ALLOC_OPTIMAL, &o, &g), 0);
  double target, p1[MAXJ], p2[MAXJ], c1[MAXJ], c2[MAXJ];
  assert_int_equal(pflex_alloc_target_for_cut(mix, a.n, 0.3, &target), 0);
  int e = pflex_alloc_flat_run(f, target, p1, c1, NULL);
  assert_int_equal(e, pflex_alloc_flat_run(g, target, p2, c2, NULL));
  if (!e) {
    assert_memory_equal(p1, p2, a.n * sizeof *p1);
    assert_memory_equal(c1, c2, a.n * sizeof *c1);
  }
  pflex_alloc_flat_free(f);
  pflex_alloc_flat_free(g);
  release(&a);
  release(&b);
  gsl_rng_free(r);
}

/* A measured curve as bench_alloc draws them: the parametric family's
 * values at the cap grid with 0.5% noise, interpolated with Steffen's
 * method (not concave everywhere). */
static struct pflex_curve *noisy(gsl_rng *r, int g, double pmax, double noise) {
  struct pflex_curve *truth = parametric(r, g, pmax), *c = NULL;
  struct pflex_curve_point pt[6];
  size_t np = 0;
  for (int cap = 200; cap <= 600; cap += 100)
    if (cap * g < pmax)
      pt[np++] = (struct pflex_curve_point){
          cap * g, pflex_curve_eval(truth, cap * g) * (1 + noise * gsl_ran_gaussian(r, 1)), cap};
  pt[np++] = (struct pflex_curve_point){pmax, pflex_curve_t_max(truth), 700};
  pflex_curve_free(truth);
  assert_int_equal(pflex_curve_new_measured(pt, np, PFLEX_INTERP_STEFFEN, &c), 0);
  return c;
}

/* A workload of n jobs on measured curves (noisy or random ones), weights
 * in [0.5, 1.5] for a third of them. */
static void make_measured(gsl_rng *r, struct wl *w, size_t n, double noise) {
  static const int gpus[] = {1, 8, 16};
  w->n = n;
  for (size_t i = 0; i < n; i++) {
    struct pflex_alloc_job *j = &w->j[i];
    int g = gpus[gsl_rng_uniform_int(r, 3)];
    double pmax = g * (450 + 250 * gsl_rng_uniform(r));
    pflex_alloc_job_init(j);
    j->gpus = g;
    j->curve = w->c[i] = noisy(r, g, pmax, noise);
    j->weight = gsl_rng_uniform(r) < 0.3 ? 0.5 + gsl_rng_uniform(r) : 1;
  }
}

static double weighted(const struct wl *w, const double *p) {
  double v = 0;
  for (size_t i = 0; i < w->n; i++)
    v += w->j[i].weight * pflex_curve_eval(w->c[i], p[i]);
  return v;
}

/* The flat optimal on measured curves (bench_alloc's kind, 0.5% noise), on
 * random workloads and cuts from several seeds: on PFLEX_ALLOC_FLAT_OPT_TOL_JOBS
 * jobs or more never more than PFLEX_ALLOC_FLAT_OPT_TOL below
 * pflex_alloc_run's optimal, and within PFLEX_ALLOC_FLAT_OPT_CLOSE of it in
 * at least 90% of the runs (20-420 jobs); on 2-8 jobs never more than
 * PFLEX_ALLOC_FLAT_OPT_TOL_SMALL below the better of optimal and the exact
 * oracle (the pair moves' bound: 1.1e-2 with seed 20 without them); never
 * below the hull greedy alone (no_local_search); within the target and
 * bounds. */
struct tol_stats {
  double worst_small, worst_large;
  size_t runs, large, close;
};

static void tol_cut(const struct wl *w, struct pflex_alloc_flat *f, struct pflex_alloc_flat *h,
                    double cut, bool small, struct tol_stats *t) {
  struct pflex_alloc_result res[MAXJ];
  double target, pw[MAXJ], po[MAXJ], ph[MAXJ], total = 0;
  assert_int_equal(pflex_alloc_target_for_cut(w->j, w->n, cut, &target), 0);
  if (pflex_alloc_flat_run(f, target, pw, NULL, NULL) != 0) return;
  for (size_t i = 0; i < w->n; i++) {
    assert_true(pw[i] >= pflex_curve_p_min(w->c[i]) && pw[i] <= pflex_curve_p_max(w->c[i]));
    total += pw[i];
  }
  assert_true(total <= target);
  double vf = weighted(w, pw);
  /* Never below the hull greedy alone (no polish), up to the rounding of
   * the pieces' fit (1e-9). */
  assert_int_equal(pflex_alloc_flat_run(h, target, ph, NULL, NULL), 0);
  assert_true(vf >= weighted(w, ph) * (1 - 1e-9));
  for (int s = 0; s < (small ? 2 : 1); s++) {
    enum pflex_alloc_strategy st = s ? PFLEX_ALLOC_ORACLE : PFLEX_ALLOC_OPTIMAL;
    assert_int_equal(pflex_alloc_run(w->j, w->n, st, target, NULL, res, NULL), 0);
    for (size_t i = 0; i < w->n; i++)
      po[i] = res[i].power_w;
    double short_by = 1 - vf / weighted(w, po);
    if (small) {
      assert_true(short_by <= PFLEX_ALLOC_FLAT_OPT_TOL_SMALL);
      t->worst_small = fmax(t->worst_small, short_by);
      continue;
    }
    assert_true(w->n >= PFLEX_ALLOC_FLAT_OPT_TOL_JOBS && short_by <= PFLEX_ALLOC_FLAT_OPT_TOL);
    t->worst_large = fmax(t->worst_large, short_by);
    t->large++, t->close += short_by <= PFLEX_ALLOC_FLAT_OPT_CLOSE;
  }
  t->runs++;
}

static void test_flat_optimal_tol(void **state) {
  (void)state;
  static const unsigned long seeds[] = {13, 15, 17, 20};
  struct tol_stats t = {-1, -1, 0, 0, 0};
  gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
  static struct wl w;
  for (size_t k = 0; k < sizeof seeds / sizeof *seeds; k++) {
    gsl_rng_set(r, seeds[k]);
    for (int rep = 0; rep < 240; rep++) {
      bool small = rep % 2 == 0;
      make_measured(r, &w, small ? 2 + gsl_rng_uniform_int(r, 7) : 20 + gsl_rng_uniform_int(r, 400),
                    0.005);
      struct pflex_alloc_flat *f = NULL, *h = NULL;
      struct pflex_alloc_opts hull = {.no_local_search = true};
      assert_int_equal(pflex_alloc_flat_new(w.j, w.n, PFLEX_ALLOC_OPTIMAL, NULL, &f), 0);
      assert_int_equal(pflex_alloc_flat_new(w.j, w.n, PFLEX_ALLOC_OPTIMAL, &hull, &h), 0);
      for (double cut = 0.05; cut < 0.6; cut += 0.1)
        tol_cut(&w, f, h, cut, small, &t);
      pflex_alloc_flat_free(f);
      pflex_alloc_flat_free(h);
      release(&w);
    }
  }
  print_message("%zu runs: worst shortfall on >= 20 jobs %.3g against optimal (%zu of %zu within "
                "%g); on 2-8 jobs %.3g against optimal or the oracle\n",
                t.runs, t.worst_large, t.close, t.large, PFLEX_ALLOC_FLAT_OPT_CLOSE, t.worst_small);
  assert_true(t.runs > 4000 && t.close >= 0.9 * (double)t.large);
  gsl_rng_free(r);
}

/* A run keeps its scratch in the flat for the next one (bucket sums,
 * optimal's greedy powers, brackets, pieces and bracket segments): runs
 * one after another on one flat, at targets up and down (a bracket larger
 * or smaller than the last run's), give bit for bit what a fresh flat's
 * first run gives, for optimal (20,000 measured jobs: the sampled bracket
 * and the polish) and equal. */
static void test_flat_scratch_reuse(void **state) {
  (void)state;
  enum { N = 20000 };
  static const double cuts[] = {0.35, 0.05, 0.2, 0.5, 0.35, 0.0};
  static const enum pflex_alloc_strategy st[] = {PFLEX_ALLOC_OPTIMAL, PFLEX_ALLOC_EQUAL};
  gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(r, 23);
  struct pflex_alloc_job *j = calloc(N, sizeof *j);
  struct pflex_curve **c = calloc(N, sizeof *c);
  double *p1 = calloc(N, sizeof *p1), *p2 = calloc(N, sizeof *p2), *c1 = calloc(N, sizeof *c1),
         *c2 = calloc(N, sizeof *c2);
  assert_true(j && c && p1 && p2 && c1 && c2);
  for (size_t i = 0; i < N; i++) {
    int g = i % 3 ? 8 : 16;
    pflex_alloc_job_init(&j[i]);
    j[i].gpus = g;
    j[i].curve = c[i] = noisy(r, g, g * (450 + 250 * gsl_rng_uniform(r)), 0.005);
    j[i].weight = i % 4 ? 1 : 0.5 + gsl_rng_uniform(r);
  }
  for (size_t s = 0; s < sizeof st / sizeof *st; s++) {
    struct pflex_alloc_flat *f = NULL;
    assert_int_equal(pflex_alloc_flat_new(j, N, st[s], NULL, &f), 0);
    for (size_t k = 0; k < sizeof cuts / sizeof *cuts; k++) {
      struct pflex_alloc_flat *g = NULL;
      double target;
      assert_int_equal(pflex_alloc_target_for_cut(j, N, cuts[k], &target), 0);
      assert_int_equal(pflex_alloc_flat_new(j, N, st[s], NULL, &g), 0);
      assert_int_equal(pflex_alloc_flat_run(f, target, p1, c1, NULL), 0);
      assert_int_equal(pflex_alloc_flat_run(g, target, p2, c2, NULL), 0);
      assert_memory_equal(p1, p2, N * sizeof *p1);
      assert_memory_equal(c1, c2, N * sizeof *c1);
      pflex_alloc_flat_free(g);
    }
    pflex_alloc_flat_free(f);
  }
  for (size_t i = 0; i < N; i++)
    pflex_curve_free(c[i]);
  free(j), free(c), free(p1), free(p2), free(c1), free(c2);
  gsl_rng_free(r);
}

struct flat_runner {
  const struct pflex_alloc_flat *flat;
  double target;
  const double *want_p, *want_c; /* the answer of a run alone */
  double *p, *c;
  size_t n;
  int runs, mismatches, errors;
};

static void *run_repeatedly(void *arg) {
  struct flat_runner *r = arg;
  for (int k = 0; k < r->runs; k++) {
    if (pflex_alloc_flat_run(r->flat, r->target, r->p, r->c, NULL) != 0)
      r->errors++;
    else if (memcmp(r->p, r->want_p, r->n * sizeof *r->p) ||
             memcmp(r->c, r->want_c, r->n * sizeof *r->c))
      r->mismatches++;
  }
  return NULL;
}

/* Two threads running one flat at two targets at once (alloc.h: concurrent
 * runs take the kept scratch or allocate their own): every run gives the
 * answer a run alone gives, and nothing leaks (valgrind, ASan). */
static void test_flat_concurrent_runs(void **state) {
  (void)state;
  enum { N = 2000, RUNS = 25 };
  gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(r, 29);
  struct pflex_alloc_job *j = calloc(N, sizeof *j);
  struct pflex_curve **c = calloc(N, sizeof *c);
  double *buf = calloc(8 * (size_t)N, sizeof *buf);
  assert_true(j && c && buf);
  for (size_t i = 0; i < N; i++) {
    int g = i % 3 ? 8 : 16;
    pflex_alloc_job_init(&j[i]);
    j[i].gpus = g;
    j[i].curve = c[i] = noisy(r, g, g * (450 + 250 * gsl_rng_uniform(r)), 0.005);
  }
  struct pflex_alloc_flat *f = NULL;
  assert_int_equal(pflex_alloc_flat_new(j, N, PFLEX_ALLOC_OPTIMAL, NULL, &f), 0);
  struct flat_runner run[2];
  static const double cuts[2] = {0.3, 0.1};
  for (int t = 0; t < 2; t++) {
    double *b = buf + 4 * (size_t)t * N;
    run[t] = (struct flat_runner){.flat = f,
                                  .want_p = b,
                                  .want_c = b + N,
                                  .p = b + 2 * N,
                                  .c = b + 3 * N,
                                  .n = N,
                                  .runs = RUNS};
    assert_int_equal(pflex_alloc_target_for_cut(j, N, cuts[t], &run[t].target), 0);
    assert_int_equal(pflex_alloc_flat_run(f, run[t].target, b, b + N, NULL), 0);
  }
  pthread_t th[2];
  for (int t = 0; t < 2; t++)
    assert_int_equal(pthread_create(&th[t], NULL, run_repeatedly, &run[t]), 0);
  for (int t = 0; t < 2; t++) {
    assert_int_equal(pthread_join(th[t], NULL), 0);
    assert_int_equal(run[t].errors, 0);
    assert_int_equal(run[t].mismatches, 0);
  }
  assert_true(memcmp(run[0].want_p, run[1].want_p, N * sizeof *buf) != 0); /* two answers */
  pflex_alloc_flat_free(f);
  for (size_t i = 0; i < N; i++)
    pflex_curve_free(c[i]);
  free(j), free(c), free(buf);
  gsl_rng_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flat_vs_run),          cmocka_unit_test(test_flat_set),
      cmocka_unit_test(test_flat_errors),          cmocka_unit_test(test_flat_optimal),
      cmocka_unit_test(test_flat_optimal_set),     cmocka_unit_test(test_flat_optimal_tol),
      cmocka_unit_test(test_flat_optimal_sampled), cmocka_unit_test(test_flat_scratch_reuse),
      cmocka_unit_test(test_flat_concurrent_runs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
