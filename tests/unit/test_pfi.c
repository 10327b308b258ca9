/* Unit tests of the PFI engine (src/core/pfi.c). Every expected value below is
 * worked out by hand in the comment next to it, from paper.md's formulas. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "assert_near.h"

#include "pflex/error.h"
#include "pflex/jobs.h"
#include "pflex/pfi.h"
#include "pflex/runs.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static struct pflex_pfi_point pt(double cap, double p, double t) {
  return (struct pflex_pfi_point){.cap_w = cap, .power_w = p, .tput = t};
}

static struct pflex_pfi_opts opts_nodraws(void) {
  struct pflex_pfi_opts o;
  pflex_pfi_opts_init(&o);
  o.draws = 0;
  return o;
}

/* Curve A, 8 GPUs, 6 caps, clean and monotone. P_max = 5000, T_max = 1000.
 *   cap  P     T     p=P/Pmax t=T/Tmax  PFI_i = (1-p)/(1-t)
 *   200  1600  550   0.32     0.55      0.68/0.45 = 1.511111
 *   300  2400  700   0.48     0.70      0.52/0.30 = 1.733333
 *   400  3200  820   0.64     0.82      0.36/0.18 = 2.000000
 *   500  4000  910   0.80     0.91      0.20/0.09 = 2.222222
 *   600  4600  960   0.92     0.96      0.08/0.04 = 2.000000
 *   700  5000  1000  (uncapped)
 * PFI = 9.466667 / 5 = 1.893333. (Input deliberately not in cap order.) */
static const struct pflex_pfi_point curve_a[] = {
    {700, 5000, 1000, 0, 0, 0}, {200, 1600, 550, 0, 0, 0}, {300, 2400, 700, 0, 0, 0},
    {500, 4000, 910, 0, 0, 0},  {400, 3200, 820, 0, 0, 0}, {600, 4600, 960, 0, 0, 0}};

static void test_eq1_index(void **state) {
  (void)state;
  double v;
  /* (1 - 3000/5000) / (1 - 800/1000) = 0.4 / 0.2 = 2 */
  assert_int_equal(pflex_pfi_index(3000, 800, 5000, 1000, &v), 0);
  assert_near(v, 2.0, 1e-12);
  assert_int_equal(pflex_pfi_index(3000, 1000, 5000, 1000, &v), -EDOM);
  assert_int_equal(pflex_pfi_index(0, 800, 5000, 1000, &v), -EINVAL);
}

static void test_ratio_curve_a(void **state) {
  (void)state;
  struct pflex_pfi_opts o = opts_nodraws();
  struct pflex_pfi_result r;
  assert_int_equal(pflex_pfi_compute(curve_a, N_OF(curve_a), &o, &r), 0);
  assert_near(r.pfi, 1.893333, 1e-6);
  assert_int_equal(r.runs_used, 6);
  assert_int_equal(r.n_excluded, 0);
  assert_false(r.have_ci);
  assert_int_equal(r.runs[0].role, PFLEX_PFI_UNCAPPED);
  assert_true(r.runs[1].have_pfi_i);
  assert_near(r.runs[1].pfi_i, 1.511111, 1e-6); /* 200 W */
  assert_near(r.runs[3].pfi_i, 2.222222, 1e-6); /* 500 W */
  /* 600 W: drop 0.04, SE = 0.96 * sqrt(0.005^2 + 0.005^2) = 0.0067882 */
  assert_near(r.runs[5].drop, 0.04, 1e-12);
  assert_near(r.runs[5].drop_se, 0.0067882, 1e-6);
  pflex_pfi_result_release(&r);
}

/* Sub-grid 200/500/600(/700): PFI = (1.511111 + 2.222222 + 2.0) / 3 = 1.911111;
 * 300 and 400 W are reported as not in the grid. */
static void test_subgrid(void **state) {
  (void)state;
  static const double grid[] = {200, 500, 600, 700};
  struct pflex_pfi_opts o = opts_nodraws();
  o.grid = grid;
  o.ngrid = N_OF(grid);
  struct pflex_pfi_result r;
  assert_int_equal(pflex_pfi_compute(curve_a, N_OF(curve_a), &o, &r), 0);
  assert_near(r.pfi, 1.911111, 1e-6);
  assert_int_equal(r.runs_used, 4);
  assert_int_equal(r.n_excluded, 2);
  assert_int_equal(r.runs[2].reason, PFLEX_PFI_REASON_GRID); /* 300 W */
  assert_int_equal(r.runs[4].reason, PFLEX_PFI_REASON_GRID); /* 400 W */
  pflex_pfi_result_release(&r);

  /* The uncapped run stays even when the grid omits it: 200 and 500 W only,
   * (1.511111 + 2.222222) / 2 = 1.866667. Grid values match within 0.5 W. */
  static const double grid2[] = {200.2, 500};
  o.grid = grid2;
  o.ngrid = N_OF(grid2);
  assert_int_equal(pflex_pfi_compute(curve_a, N_OF(curve_a), &o, &r), 0);
  assert_near(r.pfi, 1.866667, 1e-6);
  pflex_pfi_result_release(&r);

  /* A grid naming no capped run leaves nothing to average. */
  static const double grid3[] = {250};
  o.grid = grid3;
  o.ngrid = 1;
  assert_int_equal(pflex_pfi_compute(curve_a, N_OF(curve_a), &o, &r), -PFLEX_E_NOPOINTS);
}

/* Area (Appendix A), cap order, boundary (0, 0), denominator 2 * 1000 * 5000 = 1e7:
 *   (550+0)(1600-0)     =   880,000
 *   (700+550)(2400-1600)= 1,000,000
 *   (820+700)(3200-2400)= 1,216,000
 *   (910+820)(4000-3200)= 1,384,000
 *   (960+910)(4600-4000)= 1,122,000
 *   (1000+960)(5000-4600)=  784,000   sum 6,386,000 -> 0.6386 - 0.5 = 0.1386
 * Sub-grid 200/500/600/700: 880,000 + (910+550)(2400) = 3,504,000 + 1,122,000 +
 *   784,000 = 6,290,000 -> 0.129. */
static void test_area(void **state) {
  (void)state;
  struct pflex_pfi_opts o = opts_nodraws();
  o.definition = PFLEX_PFI_AREA;
  struct pflex_pfi_result r;
  assert_int_equal(pflex_pfi_compute(curve_a, N_OF(curve_a), &o, &r), 0);
  assert_near(r.pfi, 0.1386, 1e-12);
  assert_false(r.runs[1].have_pfi_i);
  pflex_pfi_result_release(&r);
  static const double grid[] = {200, 500, 600, 700};
  o.grid = grid;
  o.ngrid = N_OF(grid);
  assert_int_equal(pflex_pfi_compute(curve_a, N_OF(curve_a), &o, &r), 0);
  assert_near(r.pfi, 0.129, 1e-12);
  pflex_pfi_result_release(&r);

  /* Throughput proportional to power: the curve is the diagonal, area 1/2,
   * PFI_area = 0: (1+0)(1) + (2+1)(1) + (3+2)(1) = 9 over 2*3*3 = 18 -> 0. */
  const struct pflex_pfi_point diag[] = {pt(300, 1, 1), pt(500, 2, 2), pt(700, 3, 3)};
  o = opts_nodraws();
  o.definition = PFLEX_PFI_AREA;
  assert_int_equal(pflex_pfi_compute(diag, 3, &o, &r), 0);
  assert_near(r.pfi, 0.0, 1e-12);
  pflex_pfi_result_release(&r);
}

/* Elasticity: fit log T = a log P + log k, PFI_ce = 1 - a.
 * (1) Exact power law T = P^0.5 / 10: P = 400, 900, 1600, 2500 -> T = 2, 3, 4, 5;
 *     a = 0.5, PFI_ce = 0.5. On the same curve Eq. 1 gives PFI_i = (1 - x^2)/(1 - x)
 *     = 1 + x for x = T/T_max = 0.4, 0.6, 0.8: mean (1.4 + 1.6 + 1.8)/3 = 1.6.
 * (2) Three points with log P = ln1000 + {0, 1, 2}, log T = ln100 + {0, 0.4, 0.6}:
 *     x - xbar = {-1, 0, 1}, y - ybar = {-1/3, 1/15, 4/15};
 *     a = (1/3 + 0 + 4/15) / 2 = (9/15) / 2 = 0.3, PFI_ce = 0.7. */
static void test_elasticity(void **state) {
  (void)state;
  const struct pflex_pfi_point law[] = {pt(200, 400, 2), pt(300, 900, 3), pt(400, 1600, 4),
                                        pt(500, 2500, 5)};
  struct pflex_pfi_opts o = opts_nodraws();
  o.definition = PFLEX_PFI_ELASTICITY;
  struct pflex_pfi_result r;
  assert_int_equal(pflex_pfi_compute(law, 4, &o, &r), 0);
  assert_near(r.pfi, 0.5, 1e-12);
  pflex_pfi_result_release(&r);
  o.definition = PFLEX_PFI_RATIO;
  assert_int_equal(pflex_pfi_compute(law, 4, &o, &r), 0);
  assert_near(r.pfi, 1.6, 1e-12);
  pflex_pfi_result_release(&r);

  const struct pflex_pfi_point three[] = {pt(200, 1000, 100),
                                          pt(400, 1000 * exp(1), 100 * exp(0.4)),
                                          pt(700, 1000 * exp(2), 100 * exp(0.6))};
  o.definition = PFLEX_PFI_ELASTICITY;
  assert_int_equal(pflex_pfi_compute(three, 3, &o, &r), 0);
  assert_near(r.pfi, 0.7, 1e-12);
  pflex_pfi_result_release(&r);

  /* All powers equal: no slope to fit. */
  const struct pflex_pfi_point flat[] = {pt(200, 1000, 90), pt(700, 1000, 100)};
  assert_int_equal(pflex_pfi_compute(flat, 2, &o, &r), -PFLEX_E_NOPOINTS);
}

/* Curve B, 16 GPUs, 4 caps, the 600 W cap does not bind. P_max = 9500, T_max = 2000.
 *   200: (1 - 3600/9500)/(1 - 1200/2000) = 0.6210526/0.40 = 1.5526316
 *   500: (1 - 8000/9500)/(1 - 1900/2000) = 0.1578947/0.05 = 3.1578947
 *   600: (1 - 9300/9500)/(1 - 1995/2000) = 0.0210526/0.0025 = 8.4210526
 * Noise rule (default CV 0.5%, k = 2): SE of T_600/T_max = 0.9975 * sqrt(2) * 0.005
 *   = 0.0070534, 2 SE = 0.014107 > drop 0.0025: excluded.
 *   PFI = (1.5526316 + 3.1578947)/2 = 2.3552632 on 3 runs.
 * Paper rule: kept, PFI = (1.5526316 + 3.1578947 + 8.4210526)/3 = 4.3771930:
 *   one run of noise nearly doubles the index. */
static const struct pflex_pfi_point curve_b[] = {{200, 3600, 1200, 0, 0, 0},
                                                 {500, 8000, 1900, 0, 0, 0},
                                                 {600, 9300, 1995, 0, 0, 0},
                                                 {700, 9500, 2000, 0, 0, 0}};

static void test_nonbinding_cap(void **state) {
  (void)state;
  struct pflex_pfi_opts o = opts_nodraws();
  struct pflex_pfi_result r;
  assert_int_equal(pflex_pfi_compute(curve_b, 4, &o, &r), 0);
  assert_near(r.pfi, 2.3552632, 1e-6);
  assert_int_equal(r.runs_used, 3);
  assert_int_equal(r.n_excluded, 1);
  assert_int_equal(r.runs[2].role, PFLEX_PFI_EXCLUDED);
  assert_int_equal(r.runs[2].reason, PFLEX_PFI_REASON_NOISE);
  assert_false(r.runs[2].have_pfi_i);
  assert_near(r.runs[2].drop, 0.0025, 1e-12);
  assert_near(r.runs[2].drop_se, 0.0070534, 1e-6);
  assert_string_equal(pflex_pfi_reason_name(r.runs[2].reason), "within-noise");
  pflex_pfi_result_release(&r);

  o.exclude = PFLEX_PFI_EXCLUDE_PAPER;
  assert_int_equal(pflex_pfi_compute(curve_b, 4, &o, &r), 0);
  assert_near(r.pfi, 4.3771930, 1e-6);
  assert_int_equal(r.runs_used, 4);
  assert_int_equal(r.n_excluded, 0);
  assert_near(r.runs[2].pfi_i, 8.4210526, 1e-6);
  pflex_pfi_result_release(&r);

  /* T_i == T_max is excluded by both rules, with its own reason:
   * (1.5526316 + 3.1578947)/2 = 2.3552632 again. */
  struct pflex_pfi_point eq[4];
  memcpy(eq, curve_b, sizeof eq);
  eq[2].tput = 2000;
  assert_int_equal(pflex_pfi_compute(eq, 4, &o, &r), 0);
  assert_near(r.pfi, 2.3552632, 1e-6);
  assert_int_equal(r.runs[2].reason, PFLEX_PFI_REASON_TMAX_EQUAL);
  pflex_pfi_result_release(&r);

  /* Every capped run within noise: an error, no number; classify says why. */
  const struct pflex_pfi_point flat[] = {pt(500, 4000, 998), pt(600, 4500, 1001),
                                         pt(700, 5000, 1000)};
  o.exclude = PFLEX_PFI_EXCLUDE_NOISE;
  assert_int_equal(pflex_pfi_compute(flat, 3, &o, &r), -PFLEX_E_NOPOINTS);
  struct pflex_pfi_run_result rr[3];
  assert_int_equal(pflex_pfi_classify(flat, 3, &o, rr), 0);
  assert_int_equal(rr[0].reason, PFLEX_PFI_REASON_NOISE);
  assert_int_equal(rr[1].reason, PFLEX_PFI_REASON_NOISE); /* faster than uncapped */
  assert_int_equal(rr[2].role, PFLEX_PFI_UNCAPPED);
}

/* Curve D, noisy and non-monotone (400 W slower than 300 W), per-run SDs given:
 * power_sd 20, tput_sd 10 on every run. P_max = 5000, T_max = 1000.
 *   200: (1 - 0.30)/(1 - 0.60) = 0.70/0.40 = 1.75
 *   300: (1 - 0.44)/(1 - 0.78) = 0.56/0.22 = 2.5454545
 *   400: (1 - 0.58)/(1 - 0.76) = 0.42/0.24 = 1.75
 *   500: (1 - 0.74)/(1 - 0.90) = 0.26/0.10 = 2.6
 *   600: (1 - 0.88)/(1 - 0.99) = 0.12/0.01 = 12.0
 * 600 W: SE = 0.99 * sqrt((10/990)^2 + (10/1000)^2) = 0.99 * 0.0142132 = 0.0140711;
 *   2 SE = 0.028142 > 0.01: excluded. PFI = (1.75 + 2.5454545 + 1.75 + 2.6)/4 = 2.1613636.
 * With k = 0.5 (0.5 SE = 0.0070356 < 0.01) it is kept:
 *   PFI = (8.6454545 + 12)/5 = 4.1290909. */
static void test_noisy_nonmonotone(void **state) {
  (void)state;
  struct pflex_pfi_point d[] = {pt(200, 1500, 600), pt(300, 2200, 780), pt(400, 2900, 760),
                                pt(500, 3700, 900), pt(600, 4400, 990), pt(700, 5000, 1000)};
  for (size_t i = 0; i < N_OF(d); i++) {
    d[i].power_sd = 20;
    d[i].tput_sd = 10;
    d[i].have = PFLEX_PFI_HAVE_POWER_SD | PFLEX_PFI_HAVE_TPUT_SD;
  }
  struct pflex_pfi_opts o = opts_nodraws();
  struct pflex_pfi_result r;
  assert_int_equal(pflex_pfi_compute(d, N_OF(d), &o, &r), 0);
  assert_near(r.pfi, 2.1613636, 1e-6);
  assert_near(r.runs[4].drop_se, 0.0140711, 1e-6);
  assert_int_equal(r.runs[4].reason, PFLEX_PFI_REASON_NOISE);
  assert_near(r.runs[1].pfi_i, 2.5454545, 1e-6);
  assert_near(r.runs[2].pfi_i, 1.75, 1e-12);
  pflex_pfi_result_release(&r);
  o.noise_k = 0.5;
  assert_int_equal(pflex_pfi_compute(d, N_OF(d), &o, &r), 0);
  assert_near(r.pfi, 4.1290909, 1e-6);
  assert_int_equal(r.n_excluded, 0);
  pflex_pfi_result_release(&r);
}

/* CI (1): only the capped run's power is noisy (power_sd 50, every other SD 0).
 * PFI = (1 - P/5000)/(1 - 800/1000) is linear in P: normal with mean 2 and
 * SD 50/5000/0.2 = 0.05, so the 95% CI is 2 -/+ 1.959964 * 0.05 = [1.902002, 2.097998].
 * The 2.5% quantile of 10,000 draws has SD about sqrt(.025*.975/1e4)/phi(1.96)
 * = 0.00156/0.0584 = 0.027 SD = 0.0013: tolerance 0.006 is over 4 sigma. */
static void test_ci_linear(void **state) {
  (void)state;
  struct pflex_pfi_point two[] = {pt(300, 3000, 800), pt(700, 5000, 1000)};
  for (size_t i = 0; i < 2; i++)
    two[i].have = PFLEX_PFI_HAVE_POWER_SD | PFLEX_PFI_HAVE_TPUT_SD;
  two[0].power_sd = 50;
  struct pflex_pfi_opts o;
  pflex_pfi_opts_init(&o);
  assert_int_equal(o.draws, 10000);
  struct pflex_pfi_result r;
  assert_int_equal(pflex_pfi_compute(two, 2, &o, &r), 0);
  assert_true(r.have_ci);
  assert_int_equal(r.draws_used, 10000);
  assert_near(r.pfi, 2.0, 1e-12);
  assert_near(r.ci_low, 1.902002, 0.006);
  assert_near(r.ci_high, 2.097998, 0.006);
  pflex_pfi_result_release(&r);
}

/* CI (2): default CVs 0.4% (power) and 0.5% (throughput) on all four values,
 * uncapped run included. a = 1 - P/Pmax = 0.4 with SD 0.6 * sqrt(2) * 0.004 =
 * 0.0033941 (0.8485% of a); b = 1 - T/Tmax = 0.2 with SD 0.8 * sqrt(2) * 0.005
 * = 0.0056569 (2.828% of b). 1/b at b's 2.5% / 97.5% points: 1/(1 - 1.96*0.02828)
 * = 1.05868 and 1/(1 + 0.05543) = 0.94748, i.e. +5.868% / -5.252%; a adds
 * 1.96 * 0.8485% = 1.663% in quadrature: +6.099% / -5.509%, so
 * CI ~ [2 * 0.94491, 2 * 1.06099] = [1.8898, 2.1220]. Tolerance 0.006. */
static void test_ci_default_cv(void **state) {
  (void)state;
  const struct pflex_pfi_point two[] = {pt(300, 3000, 800), pt(700, 5000, 1000)};
  struct pflex_pfi_opts o;
  pflex_pfi_opts_init(&o);
  struct pflex_pfi_result r, r2;
  assert_int_equal(pflex_pfi_compute(two, 2, &o, &r), 0);
  assert_near(r.ci_low, 1.8898, 0.006);
  assert_near(r.ci_high, 2.1220, 0.006);
  /* Same seed, same interval, bit for bit; another seed, another interval. */
  assert_int_equal(pflex_pfi_compute(two, 2, &o, &r2), 0);
  assert_true(r.ci_low == r2.ci_low && r.ci_high == r2.ci_high);
  pflex_pfi_result_release(&r2);
  o.seed = 7;
  assert_int_equal(pflex_pfi_compute(two, 2, &o, &r2), 0);
  assert_true(r.ci_low != r2.ci_low);
  assert_near(r2.ci_low, 1.8898, 0.006);
  pflex_pfi_result_release(&r2);
  pflex_pfi_result_release(&r);

  /* Wider noise, wider interval: CVs doubled roughly double the half-width. */
  o.seed = 1;
  o.power_cv = 0.008;
  o.tput_cv = 0.010;
  assert_int_equal(pflex_pfi_compute(two, 2, &o, &r2), 0);
  assert_in_range((r2.ci_high - r2.ci_low) * 1000, 2 * 0.2322 * 1000 * 0.9,
                  2 * 0.2322 * 1000 * 1.15);
  pflex_pfi_result_release(&r2);
}

/* ignore_sd (--noise repeat): runs that carry tiny standard errors get the CVs
 * instead, so the interval is the default-CV one worked out above,
 * [1.8898, 2.1220]; with their own SEs (0.1% of the default CVs) it is ~1000x
 * narrower. */
static void test_ci_ignore_sd(void **state) {
  (void)state;
  struct pflex_pfi_point two[] = {pt(300, 3000, 800), pt(700, 5000, 1000)};
  for (size_t i = 0; i < 2; i++) {
    two[i].power_sd = two[i].power_w * 0.000004;
    two[i].tput_sd = two[i].tput * 0.000005;
    two[i].have = PFLEX_PFI_HAVE_POWER_SD | PFLEX_PFI_HAVE_TPUT_SD;
  }
  struct pflex_pfi_opts o;
  pflex_pfi_opts_init(&o);
  struct pflex_pfi_result r;
  assert_int_equal(pflex_pfi_compute(two, 2, &o, &r), 0);
  assert_true(r.ci_high - r.ci_low < 0.001);
  pflex_pfi_result_release(&r);
  o.ignore_sd = true;
  assert_int_equal(pflex_pfi_compute(two, 2, &o, &r), 0);
  assert_near(r.ci_low, 1.8898, 0.006);
  assert_near(r.ci_high, 2.1220, 0.006);
  pflex_pfi_result_release(&r);
}

/* CI of the sub-grid value and of the curve: the interval holds the estimate,
 * and the noise rule's exclusions stay fixed across draws (curve B keeps 3 runs). */
static void test_ci_curves(void **state) {
  (void)state;
  struct pflex_pfi_opts o;
  pflex_pfi_opts_init(&o);
  o.draws = 2000;
  struct pflex_pfi_result r;
  assert_int_equal(pflex_pfi_compute(curve_b, 4, &o, &r), 0);
  assert_true(r.ci_low < r.pfi && r.pfi < r.ci_high);
  assert_int_equal(r.runs_used, 3);
  pflex_pfi_result_release(&r);
  o.definition = PFLEX_PFI_AREA;
  assert_int_equal(pflex_pfi_compute(curve_a, N_OF(curve_a), &o, &r), 0);
  assert_true(r.ci_low < 0.1386 && 0.1386 < r.ci_high);
  assert_true(r.ci_high - r.ci_low < 0.02);
  pflex_pfi_result_release(&r);
}

static void test_bad_input(void **state) {
  (void)state;
  struct pflex_pfi_opts o = opts_nodraws();
  struct pflex_pfi_result r;
  const struct pflex_pfi_point one[] = {pt(700, 5000, 1000)};
  assert_int_equal(pflex_pfi_compute(one, 1, &o, &r), -EINVAL);
  const struct pflex_pfi_point neg[] = {pt(200, -1, 500), pt(700, 5000, 1000)};
  assert_int_equal(pflex_pfi_compute(neg, 2, &o, &r), -EINVAL);
  const struct pflex_pfi_point nan_t[] = {pt(200, 100, NAN), pt(700, 5000, 1000)};
  assert_int_equal(pflex_pfi_compute(nan_t, 2, &o, &r), -EINVAL);
  const struct pflex_pfi_point two_max[] = {pt(200, 100, 50), pt(700, 5000, 1000),
                                            pt(700, 4900, 990)};
  assert_int_equal(pflex_pfi_compute(two_max, 3, &o, &r), -EINVAL);
  o.noise_k = -1;
  assert_int_equal(pflex_pfi_compute(curve_a, N_OF(curve_a), &o, &r), -EINVAL);
  /* A draw count whose buffer size (draws * 8 bytes) wraps around to 16 bytes
   * is refused, not allocated small and overrun. */
  o = opts_nodraws();
  o.draws = SIZE_MAX / sizeof(double) + 3;
  assert_int_equal(pflex_pfi_compute(curve_a, N_OF(curve_a), &o, &r), -EINVAL);
}

static void test_names(void **state) {
  (void)state;
  enum pflex_pfi_definition d;
  enum pflex_pfi_exclude e;
  assert_int_equal(pflex_pfi_definition_parse("elasticity", &d), 0);
  assert_int_equal(d, PFLEX_PFI_ELASTICITY);
  assert_int_equal(pflex_pfi_definition_parse("foo", &d), -EINVAL);
  assert_int_equal(pflex_pfi_exclude_parse("paper", &e), 0);
  assert_int_equal(e, PFLEX_PFI_EXCLUDE_PAPER);
  assert_string_equal(pflex_pfi_reason_name(PFLEX_PFI_REASON_GRID), "not-in-grid");
}

/* The paper's cap grid, said once (paper.md section 2), and the job grid built on it. */
static void test_paper_grid(void **state) {
  (void)state;
  const double *c;
  assert_int_equal(pflex_pfi_paper_grid(8, &c), 6);
  const double six[] = {200, 300, 400, 500, 600, 700};
  for (size_t i = 0; i < 6; i++)
    assert_true(c[i] == six[i]);
  assert_int_equal(pflex_pfi_paper_grid(1, &c), 6);
  assert_int_equal(pflex_pfi_paper_grid(16, &c), 4);
  assert_true(c[0] == 200 && c[1] == 500 && c[2] == 600 && c[3] == 700);
  double g[5];
  /* The capped runs' aggregate powers below P_max; never the uncapped 700 W. */
  assert_int_equal(pflex_jobs_paper_grid(8, 5000, g), 5);
  assert_true(g[0] == 1600 && g[4] == 4800);
  assert_int_equal(pflex_jobs_paper_grid(8, 3000, g), 2);
  assert_int_equal(pflex_jobs_paper_grid(32, 1e6, g), 3);
  assert_true(g[0] == 6400 && g[1] == 16000 && g[2] == 19200);
  /* In another GPU's range: an A100 (100-400 W) gets 100, 160, ..., 340 W per
   * GPU, an 8-GPU job measured up to 2,800 W all five; the paper's grid
   * (200 W and up) would leave it only the 200 W point (issue 12). */
  assert_int_equal(pflex_jobs_range_grid(100, 400, 8, 2800, g), 5);
  const double a100[] = {800, 1280, 1760, 2240, 2720};
  for (size_t i = 0; i < 5; i++)
    assert_float_equal(g[i], a100[i], 1e-9);
  assert_int_equal(pflex_jobs_paper_grid(8, 2800, g), 2);
  assert_int_equal(pflex_jobs_gpu_grid("A100", 0, 0, 8, 2800, g), 5);
  assert_float_equal(g[0], 800, 1e-9);
  /* H200 and H100: the paper's grid to the bit */
  double h[5];
  assert_int_equal(pflex_jobs_gpu_grid("H200", 0, 0, 8, 5000, h), 5);
  assert_int_equal(pflex_jobs_paper_grid(8, 5000, g), 5);
  for (size_t i = 0; i < 5; i++)
    assert_true(g[i] == h[i]);
  /* a type pflex does not know: the job's own cap range (300-750 W) */
  assert_int_equal(pflex_jobs_gpu_grid("MI300X", 300, 750, 1, 800, g), 5);
  assert_float_equal(g[0], 300, 1e-9);
  assert_float_equal(g[4], 660, 1e-9);
  assert_int_equal(pflex_jobs_gpu_grid("MI300X", 0, 0, 1, 800, g), 0);
}

/* The one group PFI: the paper's mean of Eq. 1 over the capped runs by default
 * (a run with T_i == T_max left out), on a sub-grid when asked, and the
 * options' rules otherwise; no value without a capped run. */
static void test_group(void **state) {
  (void)state;
  struct pflex_runset set;
  pflex_runset_init(&set);
  const double cap[] = {200, 400, 500, 700}, p[] = {2000, 3000, 4500, 5000},
               t[] = {60, 80, 100, 100};
  for (size_t i = 0; i < 4; i++) {
    struct pflex_run r = {
        .group = "g", .gpu = "H200", .gpus = 8, .cap_w = cap[i], .power_w = p[i], .tput = t[i]};
    assert_int_equal(pflex_runset_append(&set, &r), 0);
  }
  struct pflex_group *g;
  size_t ng;
  assert_int_equal(pflex_runset_groups(&set, &g, &ng), 0);
  assert_int_equal(ng, 1);
  double v, want = ((1 - 2000.0 / 5000) / (1 - 0.6) + (1 - 3000.0 / 5000) / (1 - 0.8)) / 2;
  assert_int_equal(pflex_pfi_group(&set, &g[0], NULL, &v), 0);
  assert_true(v == want); /* bit for bit: the golden outputs rest on it */
  struct pflex_pfi_opts o;
  pflex_pfi_opts_paper(&o);
  const double grid[] = {200, 700};
  o.grid = grid;
  o.ngrid = 2;
  assert_int_equal(pflex_pfi_group(&set, &g[0], &o, &v), 0);
  assert_near(v, (1 - 2000.0 / 5000) / (1 - 0.6), 1e-12);
  o.grid = NULL;
  o.ngrid = 0;
  o.definition = PFLEX_PFI_AREA; /* the options' definition, not a fixed one */
  assert_int_equal(pflex_pfi_group(&set, &g[0], &o, &v), 0);
  assert_true(fabs(v - want) > 0.01);
  struct pflex_group one = g[0];
  one.n = 1;
  assert_int_equal(pflex_pfi_group(&set, &one, NULL, &v), -PFLEX_E_NOPOINTS);
  pflex_groups_free(g, ng);
  pflex_runset_release(&set);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_eq1_index),
      cmocka_unit_test(test_ratio_curve_a),
      cmocka_unit_test(test_subgrid),
      cmocka_unit_test(test_area),
      cmocka_unit_test(test_elasticity),
      cmocka_unit_test(test_nonbinding_cap),
      cmocka_unit_test(test_noisy_nonmonotone),
      cmocka_unit_test(test_ci_linear),
      cmocka_unit_test(test_ci_default_cv),
      cmocka_unit_test(test_ci_ignore_sd),
      cmocka_unit_test(test_ci_curves),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_paper_grid),
      cmocka_unit_test(test_group),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
