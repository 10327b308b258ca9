/* Unit tests of the closed-loop refinement (include/pflex/refine.h): a job's
 * curve learnt from (power, throughput) observations of a known true curve. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "core/refine_internal.h"
#include "pflex/error.h"
#include "pflex/jobs.h"
#include "pflex/refine.h"

#define NEAR(a, b, tol) assert_true(fabs((a) - (b)) <= (tol))

/* An 8-GPU job on 1600..5600 W, T_max 8000. */
#define GPUS 8
#define P_MIN 1600.0
#define P_MAX 5600.0
#define T_MAX 8000.0
#define NT 9

static struct pflex_curve *family(double c) {
  struct pflex_curve_params q;
  pflex_curve_params_default("H200", GPUS, P_MAX, &q);
  q.c = c;
  struct pflex_curve *curve;
  assert_int_equal(pflex_curve_new_parametric(&q, P_MIN, P_MAX, T_MAX, &curve), 0);
  return curve;
}

static double pfi_of(const struct pflex_curve *c) {
  double grid[5], v;
  size_t n = pflex_jobs_paper_grid(GPUS, P_MAX, grid);
  assert_int_equal(pflex_curve_pfi(c, grid, n, &v), 0);
  return v;
}

/* Largest |refined - true| / T_max over [lo, hi]. */
static double max_err(const struct pflex_curve *a, const struct pflex_curve *b, double lo,
                      double hi) {
  double e = 0;
  for (int k = 0; k <= 40; k++) {
    double p = lo + (hi - lo) * k / 40;
    e = fmax(e, fabs(pflex_curve_eval(a, p) - pflex_curve_eval(b, p)) / T_MAX);
  }
  return e;
}

struct fixture {
  struct pflex_curve *tmpl[NT]; /* other jobs' curves: family members of c 0.1 .. 0.9 */
  struct pflex_curve *truth;    /* the job: c = 0.35 */
};

static int setup(void **state) {
  struct fixture *f = calloc(1, sizeof *f);
  for (int j = 0; j < NT; j++)
    f->tmpl[j] = family(0.1 * (j + 1));
  f->truth = family(0.35);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fixture *f = *state;
  for (int j = 0; j < NT; j++)
    pflex_curve_free(f->tmpl[j]);
  pflex_curve_free(f->truth);
  free(f);
  return 0;
}

/* The job as a controller knows it: a prediction that is well off (the
 * PFI of a c = 0.8 job). */
static struct pflex_refine_job job_of(const struct fixture *f, enum pflex_refine_shape shape) {
  struct pflex_curve *pred = family(0.8);
  double pfi = pfi_of(pred);
  pflex_curve_free(pred);
  return (struct pflex_refine_job){.pfi = pfi,
                                   .p_min = P_MIN,
                                   .p_max = P_MAX,
                                   .t_max = T_MAX,
                                   .gpus = GPUS,
                                   .gpu = "H200",
                                   .shape = shape,
                                   .templates = (const struct pflex_curve *const *)f->tmpl,
                                   .ntemplates = shape == PFLEX_REFINE_DATA ? NT : 0};
}

/* Exact observations at the caps an allocator would try bring the refined
 * curve onto the true one, for both shapes; the confidence rises. */
static void converges(struct fixture *f, enum pflex_refine_shape shape) {
  struct pflex_refine_job job = job_of(f, shape);
  struct pflex_refine_prior *prior;
  assert_int_equal(pflex_refine_prior_new(&job, &prior), 0);
  struct pflex_refine *r;
  assert_int_equal(pflex_refine_new(prior, NULL, &r), 0);
  const struct pflex_curve *c0 = pflex_refine_curve(r);
  assert_ptr_equal(c0, pflex_refine_prior_curve(prior));
  double before = max_err(c0, f->truth, 2400, P_MAX);
  assert_true(before > 0.05); /* the prediction is really off */
  assert_true(pflex_refine_confidence(r) == 0);
  static const double pw[] = {4400, 3600, 2800, 4000, 3200};
  double conf_first = 0, conf_prev = 0;
  for (size_t k = 0; k < sizeof pw / sizeof pw[0]; k++) {
    assert_int_equal(pflex_refine_observe(r, pw[k], pflex_curve_eval(f->truth, pw[k])), 0);
    /* Not monotone in general: where no candidate fits exactly, one more
     * observation may widen the posterior a little. */
    conf_prev = pflex_refine_confidence(r);
    assert_true(conf_prev > 0 && conf_prev <= 1);
    if (k == 0) conf_first = conf_prev;
  }
  assert_true(conf_prev > conf_first);
  assert_int_equal(pflex_refine_count(r), 5);
  const struct pflex_curve *c = pflex_refine_curve(r);
  NEAR(pflex_curve_p_min(c), P_MIN, 1e-9);
  NEAR(pflex_curve_p_max(c), P_MAX, 1e-9);
  /* Through the observations, and close between them. */
  for (size_t k = 0; k < sizeof pw / sizeof pw[0]; k++)
    NEAR(pflex_curve_eval(c, pw[k]), pflex_curve_eval(f->truth, pw[k]), 0.003 * T_MAX);
  assert_true(max_err(c, f->truth, 2800, P_MAX) < 0.01);
  assert_true(max_err(c, f->truth, 2800, P_MAX) < before / 5);
  assert_true(conf_prev > 0.5);
  pflex_refine_free(r);
  pflex_refine_prior_free(prior);
}

static void test_data_converges(void **state) {
  converges(*state, PFLEX_REFINE_DATA);
}

static void test_family_converges(void **state) {
  converges(*state, PFLEX_REFINE_FAMILY);
}

/* 2% noise: one observation is off by about that much; many observations
 * at a few caps average it out, far below the noise of any one. */
static void test_noise(void **state) {
  struct fixture *f = *state;
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(rng, 7);
  for (int shape = PFLEX_REFINE_DATA; shape <= PFLEX_REFINE_FAMILY; shape++) {
    struct pflex_refine_job job = job_of(f, (enum pflex_refine_shape)shape);
    struct pflex_refine_prior *prior;
    assert_int_equal(pflex_refine_prior_new(&job, &prior), 0);
    struct pflex_refine_opts o;
    pflex_refine_opts_init(&o);
    o.noise = 0.02;
    struct pflex_refine *r;
    assert_int_equal(pflex_refine_new(prior, &o, &r), 0);
    static const double pw[] = {2800, 3600, 4400};
    double worst_obs = 0;
    for (int k = 0; k < 90; k++) {
      double p = pw[k % 3], t = pflex_curve_eval(f->truth, p);
      double obs = t * (1 + gsl_ran_gaussian(rng, o.noise));
      worst_obs = fmax(worst_obs, fabs(obs - t) / T_MAX);
      assert_int_equal(pflex_refine_observe(r, p, obs), 0);
    }
    assert_true(worst_obs > 0.02); /* the noise is real */
    double e = max_err(pflex_refine_curve(r), f->truth, 2800, P_MAX);
    assert_true(e < 0.008);
    assert_true(pflex_refine_confidence(r) > 0.5);
    pflex_refine_free(r);
    pflex_refine_prior_free(prior);
  }
  gsl_rng_free(rng);
}

/* One observation: the curve passes through it, and the PFI moves towards
 * the truth (the curve improves elsewhere too). One at P_max says nothing:
 * the curve stays the prediction, the confidence 0. */
static void test_single_observation(void **state) {
  struct fixture *f = *state;
  for (int shape = PFLEX_REFINE_DATA; shape <= PFLEX_REFINE_FAMILY; shape++) {
    struct pflex_refine_job job = job_of(f, (enum pflex_refine_shape)shape);
    struct pflex_refine_prior *prior;
    assert_int_equal(pflex_refine_prior_new(&job, &prior), 0);
    const struct pflex_curve *pc = pflex_refine_prior_curve(prior);
    struct pflex_refine *r, *top;
    assert_int_equal(pflex_refine_new(prior, NULL, &r), 0);
    assert_int_equal(pflex_refine_new(prior, NULL, &top), 0);
    double t = pflex_curve_eval(f->truth, 4000);
    assert_int_equal(pflex_refine_observe(r, 4000, t), 0);
    const struct pflex_curve *c = pflex_refine_curve(r);
    NEAR(pflex_curve_eval(c, 4000), t, 0.002 * T_MAX);
    assert_true(max_err(c, f->truth, 2400, P_MAX) < max_err(pc, f->truth, 2400, P_MAX) / 2);
    assert_true(pflex_refine_confidence(r) > 0);
    assert_int_equal(pflex_refine_observe(top, P_MAX, T_MAX), 0);
    assert_int_equal(pflex_refine_count(top), 1);
    NEAR(max_err(pflex_refine_curve(top), pc, P_MIN, P_MAX), 0, 1e-3);
    NEAR(pflex_refine_confidence(top), 0, 1e-6);
    pflex_refine_free(r);
    pflex_refine_free(top);
    pflex_refine_prior_free(prior);
  }
}

/* The data shape's refined curve passes through every observation, rises
 * monotonically and has no kink there (C1): with a kink the optimizer parks
 * a job where it was observed, and the next round learns nothing new. The
 * true curve is linear, unlike every template, so the predicted slopes are
 * wrong on both sides of each observation. */
static void test_smooth_knots(void **state) {
  struct fixture *f = *state;
  struct pflex_curve_point pts[] = {{.power_w = P_MIN, .tput = 0.25 * T_MAX},
                                    {.power_w = P_MAX, .tput = T_MAX}};
  struct pflex_curve *lin;
  assert_int_equal(pflex_curve_new_measured(pts, 2, PFLEX_INTERP_LINEAR, &lin), 0);
  struct pflex_refine_job job = job_of(f, PFLEX_REFINE_DATA);
  struct pflex_refine_prior *prior;
  assert_int_equal(pflex_refine_prior_new(&job, &prior), 0);
  struct pflex_refine *r;
  assert_int_equal(pflex_refine_new(prior, NULL, &r), 0);
  static const double pw[] = {3000, 4400};
  for (size_t k = 0; k < 2; k++) {
    assert_int_equal(pflex_refine_observe(r, pw[k], pflex_curve_eval(lin, pw[k])), 0);
    const struct pflex_curve *c = pflex_refine_curve(r);
    for (size_t i = 0; i <= k; i++) {
      double p = pw[i], h = 2.0;
      NEAR(pflex_curve_eval(c, p), pflex_curve_eval(lin, p), 1e-9 * T_MAX);
      double left = (pflex_curve_eval(c, p) - pflex_curve_eval(c, p - h)) / h;
      double right = (pflex_curve_eval(c, p + h) - pflex_curve_eval(c, p)) / h;
      assert_true(left > 0 && right > 0);
      assert_true(fabs(left - right) < 0.02 * fmax(left, right));
    }
    for (double p = P_MIN; p < P_MAX; p += 10)
      assert_true(pflex_curve_eval(c, p + 10) >= pflex_curve_eval(c, p) - 1e-9 * T_MAX);
  }
  pflex_refine_free(r);
  pflex_refine_prior_free(prior);
  pflex_curve_free(lin);
}

/* opts.knot_merge: two observations 0.03 P_max apart on a linear curve
 * (unlike every template) are averaged into one knot by default (0.05), so
 * the refined chord between them is the templates' slope; with 0.02 both
 * are knots and the chord is the measured one. 0 is the default. */
static double chord_after(const struct fixture *f, const struct pflex_curve *lin, double merge,
                          uint64_t *ret_digest) {
  struct pflex_refine_job job = job_of(f, PFLEX_REFINE_DATA);
  struct pflex_refine_prior *prior;
  assert_int_equal(pflex_refine_prior_new(&job, &prior), 0);
  struct pflex_refine_opts o;
  pflex_refine_opts_init(&o);
  o.knot_merge = merge;
  struct pflex_refine *r;
  assert_int_equal(pflex_refine_new(prior, &o, &r), 0);
  const double p0 = 4000, p1 = 4000 + 0.03 * P_MAX;
  assert_int_equal(pflex_refine_observe(r, p0, pflex_curve_eval(lin, p0)), 0);
  assert_int_equal(pflex_refine_observe(r, p1, pflex_curve_eval(lin, p1)), 0);
  const struct pflex_curve *c = pflex_refine_curve(r);
  double chord = (pflex_curve_eval(c, p1) - pflex_curve_eval(c, p0)) / (p1 - p0);
  *ret_digest = pflex_refine_digest(r);
  pflex_refine_free(r);
  pflex_refine_prior_free(prior);
  return chord;
}

static void test_knot_merge(void **state) {
  struct fixture *f = *state;
  struct pflex_curve_point pts[] = {{.power_w = P_MIN, .tput = 0.25 * T_MAX},
                                    {.power_w = P_MAX, .tput = T_MAX}};
  struct pflex_curve *lin;
  assert_int_equal(pflex_curve_new_measured(pts, 2, PFLEX_INTERP_LINEAR, &lin), 0);
  double slope = 0.75 * T_MAX / (P_MAX - P_MIN);
  uint64_t d_def, d_zero, d_near;
  double merged = chord_after(f, lin, PFLEX_REFINE_KNOT_MERGE, &d_def);
  double unset = chord_after(f, lin, 0, &d_zero);
  double kept = chord_after(f, lin, 0.02, &d_near);
  NEAR(kept, slope, 1e-9 * slope);
  assert_true(fabs(merged - slope) > 0.05 * slope);
  NEAR(unset, merged, 0);
  assert_true(d_def == d_zero && d_def != d_near);
  struct pflex_refine_job job = job_of(f, PFLEX_REFINE_DATA);
  struct pflex_refine_prior *prior;
  assert_int_equal(pflex_refine_prior_new(&job, &prior), 0);
  struct pflex_refine_opts o;
  struct pflex_refine *r;
  static const double bad[] = {-0.01, 0.51, NAN, INFINITY};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    pflex_refine_opts_init(&o);
    o.knot_merge = bad[k];
    assert_int_equal(pflex_refine_new(prior, &o, &r), -EINVAL);
  }
  pflex_refine_prior_free(prior);
  pflex_curve_free(lin);
}

/* pflex_refine_spread: how much the templates the refined shape averages
 * disagree about a change. Nothing before an observation, for the family
 * shape, or for an empty interval; positive where the templates differ
 * (family members of c 0.1 .. 0.9); none where they are one curve. */
static void test_spread(void **state) {
  struct fixture *f = *state;
  struct pflex_refine_job job = job_of(f, PFLEX_REFINE_DATA);
  struct pflex_refine_prior *prior, *fam, *same;
  assert_int_equal(pflex_refine_prior_new(&job, &prior), 0);
  struct pflex_refine_job fj = job_of(f, PFLEX_REFINE_FAMILY);
  assert_int_equal(pflex_refine_prior_new(&fj, &fam), 0);
  const struct pflex_curve *one[NT];
  for (int j = 0; j < NT; j++)
    one[j] = f->tmpl[4];
  struct pflex_refine_job sj = job;
  sj.templates = one;
  assert_int_equal(pflex_refine_prior_new(&sj, &same), 0);
  struct pflex_refine *r, *rf, *rs;
  assert_int_equal(pflex_refine_new(prior, NULL, &r), 0);
  assert_int_equal(pflex_refine_new(fam, NULL, &rf), 0);
  assert_int_equal(pflex_refine_new(same, NULL, &rs), 0);
  assert_true(isnan(pflex_refine_spread(r, 4000, 4400)));
  double t = pflex_curve_eval(f->truth, 4000);
  assert_int_equal(pflex_refine_observe(r, 4000, t), 0);
  assert_int_equal(pflex_refine_observe(rf, 4000, t), 0);
  assert_int_equal(pflex_refine_observe(rs, 4000, t), 0);
  double sp = pflex_refine_spread(r, 4000, 4400);
  assert_true(sp > 1e-3 && sp < 1);
  assert_true(isnan(pflex_refine_spread(r, 4400, 4000)));
  assert_true(isnan(pflex_refine_spread(rf, 4000, 4400)));
  NEAR(pflex_refine_spread(rs, 4000, 4400), 0, 1e-6);
  assert_true(isnan(pflex_refine_spread(NULL, 4000, 4400)));
  pflex_refine_free(r);
  pflex_refine_free(rf);
  pflex_refine_free(rs);
  pflex_refine_prior_free(prior);
  pflex_refine_prior_free(fam);
  pflex_refine_prior_free(same);
}

/* Bad observations are refused and change nothing; bad jobs and options too. */
static void test_bad_input(void **state) {
  struct fixture *f = *state;
  struct pflex_refine_job job = job_of(f, PFLEX_REFINE_DATA);
  struct pflex_refine_prior *prior;
  assert_int_equal(pflex_refine_prior_new(&job, &prior), 0);
  struct pflex_refine *r;
  assert_int_equal(pflex_refine_new(prior, NULL, &r), 0);
  assert_int_equal(pflex_refine_observe(r, 3000, pflex_curve_eval(f->truth, 3000)), 0);
  double before = pflex_curve_eval(pflex_refine_curve(r), 3500);
  static const double bad[][2] = {{NAN, 5000}, {3000, NAN}, {-3000, 5000}, {0, 5000},
                                  {3000, 0},   {3000, -1},  {INFINITY, 5000}, {3000, INFINITY}};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
    assert_int_equal(pflex_refine_observe(r, bad[k][0], bad[k][1]), -EINVAL);
  assert_int_equal(pflex_refine_observe(NULL, 3000, 5000), -EINVAL);
  assert_int_equal(pflex_refine_count(r), 1);
  NEAR(pflex_curve_eval(pflex_refine_curve(r), 3500), before, 0);
  pflex_refine_free(r);

  struct pflex_refine_opts o;
  pflex_refine_opts_init(&o);
  o.noise = -0.1;
  assert_int_equal(pflex_refine_new(prior, &o, &r), -EINVAL);
  pflex_refine_opts_init(&o);
  o.prior_sd = 0;
  assert_int_equal(pflex_refine_new(prior, &o, &r), -EINVAL);
  pflex_refine_opts_init(&o);
  o.max_obs = 0;
  assert_int_equal(pflex_refine_new(prior, &o, &r), -EINVAL);
  assert_int_equal(pflex_refine_new(NULL, NULL, &r), -EINVAL);
  pflex_refine_prior_free(prior);

  struct pflex_refine_job b = job;
  b.pfi = NAN;
  assert_int_equal(pflex_refine_prior_new(&b, &prior), -EINVAL);
  b = job;
  b.p_min = -1;
  assert_int_equal(pflex_refine_prior_new(&b, &prior), -EINVAL);
  b = job;
  b.p_min = 2 * P_MAX;
  assert_int_equal(pflex_refine_prior_new(&b, &prior), -EINVAL);
  b = job;
  b.t_max = NAN;
  assert_int_equal(pflex_refine_prior_new(&b, &prior), -EINVAL);
  b = job;
  b.gpus = 0;
  assert_int_equal(pflex_refine_prior_new(&b, &prior), -EINVAL);
  b = job;
  b.templates = NULL;
  assert_int_equal(pflex_refine_prior_new(&b, &prior), -EINVAL);
  struct pflex_curve *pc;
  b = job;
  b.pfi = INFINITY;
  assert_int_equal(pflex_refine_predicted_curve(&b, &pc), -EINVAL);
}

/* The fixture's prior of a shape, and options keeping 3 observations. */
static struct pflex_refine_prior *windowed(const struct fixture *f, enum pflex_refine_shape shape,
                                           struct pflex_refine_opts *o) {
  struct pflex_refine_job job = job_of(f, shape);
  struct pflex_refine_prior *prior;
  assert_int_equal(pflex_refine_prior_new(&job, &prior), 0);
  pflex_refine_opts_init(o);
  o->max_obs = 3;
  return prior;
}

/* The window: only the most recent max_obs observations count. Old
 * observations of a job whose curve changed (a new phase) drop out. */
static void test_window(void **state) {
  struct fixture *f = *state;
  struct pflex_refine_opts o;
  struct pflex_refine_prior *prior = windowed(f, PFLEX_REFINE_FAMILY, &o);
  struct pflex_refine *r;
  assert_int_equal(pflex_refine_new(prior, &o, &r), 0);
  struct pflex_curve *other = family(0.9);
  for (int k = 0; k < 3; k++)
    assert_int_equal(pflex_refine_observe(r, 3000 + 400 * k, pflex_curve_eval(other, 3000 + 400 * k)),
                     0);
  for (int k = 0; k < 3; k++)
    assert_int_equal(
        pflex_refine_observe(r, 3000 + 400 * k, pflex_curve_eval(f->truth, 3000 + 400 * k)), 0);
  assert_int_equal(pflex_refine_count(r), 3);
  for (int k = 0; k < 3; k++)
    NEAR(pflex_curve_eval(pflex_refine_curve(r), 3000 + 400 * k),
         pflex_curve_eval(f->truth, 3000 + 400 * k), 0.002 * T_MAX);
  pflex_curve_free(other);
  pflex_refine_free(r);
  pflex_refine_prior_free(prior);
}

/* The data shape's posterior sums each observation's cost once, as it
 * comes: once the window moves, the curve and the confidence are bit for
 * bit those of a refinement that saw only the observations held. */
static void test_window_data(void **state) {
  struct fixture *f = *state;
  struct pflex_refine_opts o;
  struct pflex_refine_prior *prior = windowed(f, PFLEX_REFINE_DATA, &o);
  o.prior_sd = 0.45; /* off the default: the prior's spread not the one the prior keeps */
  struct pflex_refine *r, *last;
  assert_int_equal(pflex_refine_new(prior, &o, &r), 0);
  assert_int_equal(pflex_refine_new(prior, &o, &last), 0);
  struct pflex_curve *other = family(0.9);
  for (int k = 0; k < 6; k++) {
    double p = 2800 + 300 * k, t = pflex_curve_eval(k < 3 ? other : f->truth, p);
    assert_int_equal(pflex_refine_observe(r, p, t), 0);
    if (k >= 3) assert_int_equal(pflex_refine_observe(last, p, t), 0);
  }
  double c = pflex_refine_confidence(r);
  assert_true(c > 0);
  assert_true(c == pflex_refine_confidence(last));
  for (double p = P_MIN; p <= P_MAX; p += 50)
    assert_true(pflex_curve_eval(pflex_refine_curve(r), p) ==
                pflex_curve_eval(pflex_refine_curve(last), p));
  pflex_curve_free(other);
  pflex_refine_free(r);
  pflex_refine_free(last);
  pflex_refine_prior_free(prior);
}

/* Without templates the data shape is the family's member; the predicted
 * curve has the predicted PFI. */
static void test_predicted_curve(void **state) {
  struct fixture *f = *state;
  struct pflex_refine_job job = job_of(f, PFLEX_REFINE_FAMILY);
  struct pflex_curve *a, *b;
  assert_int_equal(pflex_refine_predicted_curve(&job, &a), 0);
  NEAR(pfi_of(a), job.pfi, 1e-6);
  job.shape = PFLEX_REFINE_DATA;
  assert_int_equal(pflex_refine_predicted_curve(&job, &b), 0);
  NEAR(max_err(a, b, P_MIN, P_MAX), 0, 1e-12);
  pflex_curve_free(b);
  job.ntemplates = NT;
  assert_int_equal(pflex_refine_predicted_curve(&job, &b), 0);
  NEAR(pfi_of(b), job.pfi, 1e-3 * job.pfi);
  pflex_curve_free(a);
  pflex_curve_free(b);
}

/* Refit: exact observations of a member of the path pin it down when the
 * noise is small against the prior; an observation at P_max keeps the
 * prediction; a more elastic job than c = 1 allows lowers vratio. */
static void test_family_fit(void **state) {
  (void)state;
  struct pflex_curve_params base;
  pflex_curve_params_default("H200", 8, 5000, &base);
  struct pflex_curve_params truth = base, pred = base;
  truth.c = 0.4;
  pred.c = 0.7;
  double pw[3] = {2500, 4000, 5000}, t[3];
  for (int k = 0; k < 3; k++)
    t[k] = 1000 * pflex_curve_family_tput(&truth, pw[k] / 5000);
  struct pflex_curve_params q;
  assert_int_equal(pflex_refine_family_fit(&base, &pred, 0.3, 1e-6, 5000, 1000, pw, t, 1, &q), 0);
  NEAR(q.c, 0.4, 1e-4);
  assert_int_equal(pflex_refine_family_fit(&base, &pred, 0.3, 1e-6, 5000, 1000, pw, t, 2, &q), 0);
  NEAR(q.c, 0.4, 1e-4);
  /* Only the uncapped point: nothing learnt, the prediction stays. */
  assert_int_equal(pflex_refine_family_fit(&base, &pred, 0.3, 0.005, 5000, 1000, pw + 2, t + 2, 1, &q),
                   0);
  NEAR(q.c, 0.7, 1e-6);
  /* No observation: the prediction. */
  assert_int_equal(pflex_refine_family_fit(&base, &pred, 0.3, 0.005, 5000, 1000, pw, t, 0, &q), 0);
  NEAR(q.c, 0.7, 1e-12);
  struct pflex_curve_params el = base;
  el.vratio = 1.1;
  t[0] = 1000 * pflex_curve_family_tput(&el, pw[0] / 5000);
  assert_int_equal(pflex_refine_family_fit(&base, &pred, 0.3, 1e-6, 5000, 1000, pw, t, 1, &q), 0);
  NEAR(q.c, 1, 1e-12);
  NEAR(q.vratio, 1.1, 1e-4);
}


/* Reset: the same state started over on another prior gives what a fresh
 * one gives; a prior of the other shape is refused. */
static void test_reset(void **state) {
  struct fixture *f = *state;
  struct pflex_refine_job job = job_of(f, PFLEX_REFINE_DATA);
  struct pflex_refine_prior *p1, *p2, *fam;
  assert_int_equal(pflex_refine_prior_new(&job, &p1), 0);
  job.p_max = 5200; /* other bounds */
  job.t_max = 7600;
  assert_int_equal(pflex_refine_prior_new(&job, &p2), 0);
  struct pflex_refine_job fj = job_of(f, PFLEX_REFINE_FAMILY);
  assert_int_equal(pflex_refine_prior_new(&fj, &fam), 0);
  struct pflex_refine *r, *fresh;
  assert_int_equal(pflex_refine_new(p1, NULL, &r), 0);
  assert_int_equal(pflex_refine_new(p2, NULL, &fresh), 0);
  assert_int_equal(pflex_refine_observe(r, 3000, 5000), 0);
  assert_int_equal(pflex_refine_reset(r, fam), -EINVAL);
  assert_int_equal(pflex_refine_count(r), 1);
  assert_int_equal(pflex_refine_reset(r, p2), 0);
  assert_int_equal(pflex_refine_count(r), 0);
  assert_ptr_equal(pflex_refine_curve(r), pflex_refine_prior_curve(p2));
  assert_int_equal(pflex_refine_observe(r, 3400, 5600), 0);
  assert_int_equal(pflex_refine_observe(fresh, 3400, 5600), 0);
  NEAR(pflex_curve_p_max(pflex_refine_curve(r)), 5200, 0);
  for (double p = P_MIN; p <= 5200; p += 100)
    NEAR(pflex_curve_eval(pflex_refine_curve(r), p), pflex_curve_eval(pflex_refine_curve(fresh), p),
         0);
  NEAR(pflex_refine_confidence(r), pflex_refine_confidence(fresh), 0);
  pflex_refine_free(r);
  pflex_refine_free(fresh);
  pflex_refine_prior_free(p1);
  pflex_refine_prior_free(p2);
  pflex_refine_prior_free(fam);
}

/* A job's templates read once (pflex_refine_templates_new) and a mask give
 * the same prior, bit for bit, as the templates the mask keeps given as a
 * list: the predicted curve, and the refined curve after observations (it
 * reads the candidates); a table read for another job is refused. */
static void test_table(void **state) {
  struct fixture *f = *state;
  struct pflex_refine_job job = job_of(f, PFLEX_REFINE_DATA), listed = job, fam = job;
  struct pflex_curve_templates *t = NULL;
  assert_int_equal(pflex_refine_templates_new(&job, &t), 0);
  assert_int_equal(pflex_curve_templates_count(t), NT);
  unsigned char use[NT];
  const struct pflex_curve *sub[NT];
  size_t nsub = 0;
  for (size_t j = 0; j < NT; j++)
    if ((use[j] = j != 2 && j != 5)) sub[nsub++] = f->tmpl[j];
  listed.templates = sub;
  listed.ntemplates = nsub;
  job.table = t;
  job.use = use;
  struct pflex_refine_prior *a, *b;
  assert_int_equal(pflex_refine_prior_new(&job, &a), 0);
  assert_int_equal(pflex_refine_prior_new(&listed, &b), 0);
  assert_true(pflex_curve_digest(pflex_refine_prior_curve(a)) ==
              pflex_curve_digest(pflex_refine_prior_curve(b)));
  struct pflex_refine *ra, *rb;
  assert_int_equal(pflex_refine_new(a, NULL, &ra), 0);
  assert_int_equal(pflex_refine_new(b, NULL, &rb), 0);
  const double obs[][2] = {{3000, 5100}, {4200, 6900}};
  for (size_t k = 0; k < 2; k++) {
    assert_int_equal(pflex_refine_observe(ra, obs[k][0], obs[k][1]), 0);
    assert_int_equal(pflex_refine_observe(rb, obs[k][0], obs[k][1]), 0);
    for (double p = P_MIN; p <= P_MAX; p += 50)
      assert_true(pflex_curve_eval(pflex_refine_curve(ra), p) ==
                  pflex_curve_eval(pflex_refine_curve(rb), p));
    assert_true(pflex_refine_confidence(ra) == pflex_refine_confidence(rb));
  }
  pflex_refine_free(ra);
  pflex_refine_free(rb);
  pflex_refine_prior_free(a);
  pflex_refine_prior_free(b);
  struct pflex_curve *c = NULL;
  job.p_max = 5200; /* another job's range */
  assert_int_equal(pflex_refine_predicted_curve(&job, &c), -EINVAL);
  assert_int_equal(pflex_refine_prior_new(&job, &a), -EINVAL);
  fam.ntemplates = 0;
  struct pflex_curve_templates *none = NULL;
  assert_int_equal(pflex_refine_templates_new(&fam, &none), -EINVAL);
  assert_null(none);
  assert_null(c);
  pflex_curve_templates_free(t);
}


/* After one observation the data shape takes its shape from the templates
 * nearest the observation: with templates of two kinds (the fixture's,
 * knee 0.6, and as many with knee 0.2) and the job's PFI known, the refined
 * curve stays within 0.5% of T_max of the truth within 0.1 P_max of the
 * observed power (0.08% measured). (Not a test that tells the former
 * candidates' shape apart: on these family curves it does as well, 0.02%;
 * the difference shows on the twin's mixed clusters, study_fair.sh.) */
static struct pflex_curve *family_knee(double c, double knee) {
  struct pflex_curve_params q;
  pflex_curve_params_default("H200", GPUS, P_MAX, &q);
  q.c = c;
  q.knee = knee;
  struct pflex_curve *curve;
  assert_int_equal(pflex_curve_new_parametric(&q, P_MIN, P_MAX, T_MAX, &curve), 0);
  return curve;
}

static void test_nearest_templates(void **state) {
  struct fixture *f = *state;
  const struct pflex_curve *tmpl[2 * NT];
  struct pflex_curve *other[NT];
  for (int j = 0; j < NT; j++) {
    tmpl[j] = f->tmpl[j];
    tmpl[NT + j] = other[j] = family_knee(0.1 * (j + 1), 0.2);
  }
  struct pflex_refine_job job = job_of(f, PFLEX_REFINE_DATA);
  job.pfi = pfi_of(f->truth); /* the PFI known: only the shape is learnt */
  job.templates = tmpl;
  job.ntemplates = 2 * NT;
  struct pflex_refine_prior *prior;
  assert_int_equal(pflex_refine_prior_new(&job, &prior), 0);
  struct pflex_refine *r;
  assert_int_equal(pflex_refine_new(prior, NULL, &r), 0);
  const double pw = 4000, span = 0.1 * P_MAX;
  assert_int_equal(pflex_refine_observe(r, pw, pflex_curve_eval(f->truth, pw)), 0);
  double e = max_err(pflex_refine_curve(r), f->truth, pw - span, pw + span);
  assert_true(e < 0.005);
  pflex_refine_free(r);
  pflex_refine_prior_free(prior);
  for (int j = 0; j < NT; j++)
    pflex_curve_free(other[j]);
}


/* The nearest-templates table and fit (core/refine_internal.h): the table
 * holds the used templates only, a systematic sample past REFINE_NEAR_MAX,
 * none at all when none is used; the fit through a knot on one template's
 * curve is a kernel mean of the templates nearest it (the two neighbours of
 * the one hit, not the far ones), non-decreasing, T_max at P_max; with all
 * templates alike the floor width gives their plain mean. */
static void test_near_table(void **state) {
  struct fixture *f = *state;
  const struct pflex_curve *many[REFINE_NEAR_MAX + 10];
  unsigned char use[NT] = {1, 0, 1, 0, 1, 0, 1, 0, 1}, none[NT] = {0};
  for (size_t j = 0; j < REFINE_NEAR_MAX + 10; j++)
    many[j] = f->tmpl[j % NT];
  struct refine_near *nb;
  assert_int_equal(pflex__refine_near_new(P_MIN, P_MAX, many, REFINE_NEAR_MAX + 10, NULL, &nb), 0);
  assert_int_equal(nb->n, (REFINE_NEAR_MAX + 10 + 1) / 2); /* every 2nd */
  pflex__refine_near_free(nb);
  assert_int_equal(pflex__refine_near_new(P_MIN, P_MAX, many, NT, none, &nb), 0);
  assert_null(nb);
  assert_int_equal(pflex__refine_near_new(P_MIN, P_MAX, many, NT, use, &nb), 0);
  assert_int_equal(nb->n, 5);
  NEAR(nb->pw[0], P_MIN, 1e-9);
  NEAR(nb->pw[REFINE_NEAR_K - 1], P_MAX, 1e-9);
  /* Row 2 is template 4 (c = 0.5), read in relative units. */
  NEAR(nb->rel[2 * REFINE_NEAR_K + 10] * T_MAX, pflex_curve_eval(f->tmpl[4], nb->pw[10]), 1e-9);
  pflex__refine_near_free(nb);
}

static void test_near_fit(void **state) {
  struct fixture *f = *state;
  struct refine_near *nb;
  assert_int_equal(
      pflex__refine_near_new(P_MIN, P_MAX, (const struct pflex_curve *const *)f->tmpl, NT, NULL, &nb),
      0);
  double ap = 4000, ar = pflex_curve_eval(f->tmpl[4], ap), d[2 * NT], q[REFINE_NEAR_K];
  pflex__refine_near_fit(nb, &ap, &ar, 1, T_MAX, 1e-3, d, q);
  NEAR(q[REFINE_NEAR_K - 1], T_MAX, 1e-9);
  for (size_t m = 1; m < REFINE_NEAR_K; m++)
    assert_true(q[m] >= q[m - 1]);
  /* Between the hit template's neighbours (c = 0.4, 0.6) everywhere, and
   * nearer the hit one than the next ones out (c = 0.3, 0.7) are. */
  for (size_t m = 0; m + 1 < REFINE_NEAR_K; m++) {
    double lo = fmin(nb->rel[3 * REFINE_NEAR_K + m], nb->rel[5 * REFINE_NEAR_K + m]) * T_MAX;
    double hi = fmax(nb->rel[3 * REFINE_NEAR_K + m], nb->rel[5 * REFINE_NEAR_K + m]) * T_MAX;
    assert_true(q[m] >= lo - 1e-9 && q[m] <= hi + 1e-9);
    double mid = nb->rel[4 * REFINE_NEAR_K + m] * T_MAX;
    assert_true(fabs(q[m] - mid) <= fabs(nb->rel[2 * REFINE_NEAR_K + m] * T_MAX - mid) + 1e-9);
  }
  pflex__refine_near_free(nb);
  /* All alike: the floor width, every template the same weight. */
  const struct pflex_curve *same[4] = {f->tmpl[2], f->tmpl[2], f->tmpl[6], f->tmpl[6]};
  assert_int_equal(pflex__refine_near_new(P_MIN, P_MAX, same, 4, NULL, &nb), 0);
  ar = 0.5 * (pflex_curve_eval(f->tmpl[2], ap) + pflex_curve_eval(f->tmpl[6], ap));
  pflex__refine_near_fit(nb, &ap, &ar, 1, T_MAX, 10, d, q);
  for (size_t m = 0; m + 1 < REFINE_NEAR_K; m++)
    NEAR(q[m], fmax(0.5 * (nb->rel[m] + nb->rel[2 * REFINE_NEAR_K + m]) * T_MAX, 1e-3 * T_MAX),
         1e-6 * T_MAX);
  pflex__refine_near_free(nb);
}

int main(void) {
  gsl_set_error_handler_off(); /* as the programs do */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_data_converges),    cmocka_unit_test(test_family_converges),
      cmocka_unit_test(test_noise),             cmocka_unit_test(test_single_observation),
      cmocka_unit_test(test_bad_input),         cmocka_unit_test(test_window),
      cmocka_unit_test(test_predicted_curve),   cmocka_unit_test(test_family_fit),
      cmocka_unit_test(test_reset),             cmocka_unit_test(test_table),
      cmocka_unit_test(test_smooth_knots),      cmocka_unit_test(test_knot_merge), cmocka_unit_test(test_spread),      cmocka_unit_test(test_nearest_templates), cmocka_unit_test(test_near_table), cmocka_unit_test(test_near_fit),      cmocka_unit_test(test_window_data),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
