/* Per-group calibration of the twin to the paper's PFIs (include/pflex/twin.h).
 *
 * Free parameters, all physical:
 *  - compute_share s: share of uncapped step time that scales with 1/f_sm;
 *  - compute_activity a_c: SM switching activity in clock-bound work, which
 *    sets the job's natural draw and so where on the DVFS curve (above or
 *    below the voltage knee) the cap grid lands;
 *  - only where s and a_c cannot meet both targets, one more: first
 *    mem_clock_bound r (memory-bound kernels turn clock-bound below r f_max,
 *    roofline), then phase_split (long latency-bound memory phases that the
 *    power limiter holds at their own clock).
 * Groups with one published PFI solve s alone (Brent), a_c at its class value.
 * Groups with two (the 16 headline 8-GPU groups: Table 6 and Table 9) solve
 * (s, a_c) by nested 1-D root finding (GSL Brent): s meets the own-grid PFI
 * for each a_c, and a_c moves along that curve until the 4-cap PFI is met,
 * taking the root nearest the class values. The PFIs are computed on the
 * noisy points exactly as written to the reference set (noise drawn first
 * from fixed seeds), so the published values hold on the data as written.
 * When nothing meets both targets, the group's own-grid PFI is still met
 * exactly and the miss on the 4-cap grid is reported (met = false), never
 * hidden. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_roots.h>

#include "core/twin_internal.h"
#include "pflex/pfi.h"

static const double grid4[] = {200, 500, 600, 700};

#define MAXCAPS 8

struct ctx {
  const struct pflex_twin_paper_group *g;
  const struct pflex_twin_gpu *gpu;
  struct pflex_twin_job job;
  uint64_t seed;
  /* The noise of each run, drawn once (the runs of the 4-cap grid are runs
   * of the group's own grid where it has them). */
  double caps[MAXCAPS], zp[MAXCAPS], zt[MAXCAPS];
  size_t ncaps;
};

/* Index of the run at cap in the ctx's runs, adding it (and its noise) if new. */
static int run_index(struct ctx *c, double cap, size_t *ret) {
  for (size_t i = 0; i < c->ncaps; i++)
    if (c->caps[i] == cap) {
      *ret = i;
      return 0;
    }
  if (c->ncaps == MAXCAPS) return -ERANGE;
  size_t i = c->ncaps;
  int r = pflex__twin_noise_z(pflex__twin_run_seed(c->seed, c->g->name, cap), &c->zp[i], &c->zt[i]);
  if (r < 0) return r;
  c->caps[i] = cap;
  c->ncaps++;
  *ret = i;
  return 0;
}

/* PFI (Eq. 1, mean over capped runs) of the noisy sweep over caps (ascending,
 * last = uncapped), with each run's power and throughput exactly as
 * pflex_twin_eval_noisy writes them; pts caches the runs' points by index. */
static int sweep_pfi(struct ctx *c, const double *caps, size_t ncaps, double (*pts)[2], bool *have,
                     double *ret) {
  struct pflex_twin_noise noise;
  pflex__twin_reference_noise(&noise);
  double pw[MAXCAPS], tp[MAXCAPS];
  if (ncaps < 2 || ncaps > MAXCAPS) return -EINVAL;
  for (size_t k = 0; k < ncaps; k++) {
    size_t i;
    int r = run_index(c, caps[k], &i);
    if (r < 0) return r;
    if (!have[i]) {
      double p, t;
      r = pflex__twin_power_tput(c->gpu, &c->job, caps[k], &p, &t);
      if (r < 0) return r;
      p *= 1.0 + noise.power_cv * c->zp[i];
      pts[i][0] = p * c->job.gpus;
      pts[i][1] = t * (1.0 + noise.tput_cv * c->zt[i]);
      have[i] = true;
    }
    pw[k] = pts[i][0];
    tp[k] = pts[i][1];
  }
  double sum = 0;
  size_t n = 0;
  for (size_t k = 0; k + 1 < ncaps; k++) {
    double v;
    if (pflex_pfi_index(pw[k], tp[k], pw[ncaps - 1], tp[ncaps - 1], &v) < 0) continue;
    sum += v;
    n++;
  }
  if (!n) return -PFLEX_E_NOPOINTS;
  *ret = sum / (double)n;
  return 0;
}

/* Residuals (own-grid PFI - target, 4-cap PFI - target) at the ctx job. */
static int residuals(struct ctx *c, double *r6, double *r4) {
  double p;
  double pts[MAXCAPS][2];
  bool have[MAXCAPS] = {false};
  /* DRAM use (and so memory power and telemetry) follows the boundness. */
  pflex_twin_job_refresh(&c->job);
  int e = sweep_pfi(c, c->g->caps, (size_t)c->g->ncaps, pts, have, &p);
  if (e < 0) return e;
  *r6 = p - c->g->pfi;
  if (r4) {
    e = sweep_pfi(c, grid4, 4, pts, have, &p);
    if (e < 0) return e;
    *r4 = p - c->g->pfi4;
  }
  return 0;
}

/* The highest capped cap must bind clearly, or its PFI_i is a ratio of noise. */
static bool binds(struct ctx *c) {
  double top = c->g->caps[c->g->ncaps - 2];
  pflex_twin_job_refresh(&c->job);
  return pflex_twin_natural_power(c->gpu, &c->job) > 1.05 * top;
}

#define S_LO 0.05
#define S_HI 1.0
#define A_LO 0.35
#define A_HI 1.8

static double err2(struct ctx *c) {
  double r6, r4;
  if (!binds(c) || residuals(c, &r6, &r4) < 0) return INFINITY;
  return fmax(fabs(r6) / PFLEX_TWIN_TOL_PFI, fabs(r4) / PFLEX_TWIN_TOL_PFI4);
}

static double f1(double s, void *p) {
  struct ctx *c = p;
  c->job.compute_share = s;
  double r6;
  if (residuals(c, &r6, NULL) < 0) return NAN;
  return r6;
}

/* Solves s for the own-grid PFI alone (Brent), in the bracket nearest s0 found
 * by a scan (PFI need not be monotone in s); 0 when bracketed and solved. */
static int solve1(struct ctx *c, double s0) {
  enum { NS = 48 };
  double xs[NS + 1], fs[NS + 1];
  for (int i = 0; i <= NS; i++) {
    xs[i] = S_LO + (S_HI - S_LO) * i / NS;
    fs[i] = f1(xs[i], c);
  }
  double lo = NAN, hi = NAN, bestd = INFINITY;
  for (int i = 0; i < NS; i++) {
    /* A sign change through a pole (|residual| large) is not a root. */
    if (!isfinite(fs[i]) || !isfinite(fs[i + 1]) || fs[i] * fs[i + 1] > 0) continue;
    if (fabs(fs[i]) > 2.0 || fabs(fs[i + 1]) > 2.0) continue;
    double d = fabs(0.5 * (xs[i] + xs[i + 1]) - s0);
    if (d < bestd) bestd = d, lo = xs[i], hi = xs[i + 1];
  }
  if (!isfinite(bestd)) return -ERANGE;
  gsl_function fn = {f1, c};
  gsl_root_fsolver *s = gsl_root_fsolver_alloc(gsl_root_fsolver_brent);
  if (!s) return -ENOMEM;
  int status = gsl_root_fsolver_set(s, &fn, lo, hi) == GSL_SUCCESS ? GSL_CONTINUE : GSL_EINVAL;
  for (int it = 0; it < 100 && status == GSL_CONTINUE; it++) {
    if (gsl_root_fsolver_iterate(s) != GSL_SUCCESS) break;
    status =
        gsl_root_test_interval(gsl_root_fsolver_x_lower(s), gsl_root_fsolver_x_upper(s), 1e-9, 0);
  }
  if (status != GSL_EINVAL) c->job.compute_share = gsl_root_fsolver_root(s); /* EINVAL: unset */
  gsl_root_fsolver_free(s);
  return status == GSL_SUCCESS ? 0 : -ERANGE;
}

struct outer {
  struct ctx *c;
  double s0;
};

/* Residual of the 4-cap PFI on the own-grid contour: s solved for a_c = a. */
static double g4(double a, void *p) {
  struct outer *o = p;
  o->c->job.compute_activity = a;
  if (solve1(o->c, o->s0) < 0 || !binds(o->c)) return NAN;
  double r6, r4;
  if (residuals(o->c, &r6, &r4) < 0) return NAN;
  return r4;
}

/* Nested 1-D root finding: along the curve of (s, a_c) that meets the
 * own-grid PFI, find the a_c where the 4-cap PFI is met too, taking the root
 * nearest the class value of a_c (and s nearest its class value on the
 * curve). Leaves the result, or the closest miss, in c->job; returns the
 * error in tolerances, max(|r6| / 0.01, |r4| / 0.03). */
static double solve2(struct ctx *c) {
  enum { NA = 36 };
  struct outer o = {c, c->job.compute_share};
  double a0 = c->job.compute_activity;
  double as[NA + 1], rs[NA + 1];
  for (int i = 0; i <= NA; i++) {
    as[i] = A_LO + (A_HI - A_LO) * i / NA;
    rs[i] = g4(as[i], &o);
  }
  double lo = NAN, hi = NAN, bestd = INFINITY, bestmiss = INFINITY, amiss = a0;
  for (int i = 0; i <= NA; i++) {
    if (isfinite(rs[i]) && fabs(rs[i]) < bestmiss) bestmiss = fabs(rs[i]), amiss = as[i];
    if (i == NA || !isfinite(rs[i]) || !isfinite(rs[i + 1]) || rs[i] * rs[i + 1] > 0) continue;
    double d = fabs(0.5 * (as[i] + as[i + 1]) - a0);
    if (d < bestd) bestd = d, lo = as[i], hi = as[i + 1];
  }
  double a = amiss;
  if (isfinite(bestd)) {
    gsl_function fn = {g4, &o};
    gsl_root_fsolver *s = gsl_root_fsolver_alloc(gsl_root_fsolver_brent);
    if (s) {
      int status =
          gsl_root_fsolver_set(s, &fn, lo, hi) == GSL_SUCCESS ? GSL_CONTINUE : GSL_EINVAL;
      for (int it = 0; it < 60 && status == GSL_CONTINUE; it++) {
        if (gsl_root_fsolver_iterate(s) != GSL_SUCCESS) break;
        status = gsl_root_test_interval(gsl_root_fsolver_x_lower(s), gsl_root_fsolver_x_upper(s),
                                        1e-7, 0);
      }
      if (status != GSL_EINVAL) a = gsl_root_fsolver_root(s); /* EINVAL: never set */
      gsl_root_fsolver_free(s);
    }
  }
  if (!isfinite(g4(a, &o))) return INFINITY;
  return err2(c);
}

int pflex_twin_calibrate(const struct pflex_twin_paper_group *g, const struct pflex_twin_gpu *gpu,
                         struct pflex_twin_job *job, uint64_t seed, struct pflex_twin_calib *ret) {
  if (!g || !gpu || !job || !ret) return -EINVAL;
  struct ctx c = {.g = g, .gpu = gpu, .job = *job, .seed = seed};
  struct pflex_twin_calib out = {.pfi = NAN, .pfi4 = NAN};
  bool two = !isnan(g->pfi4);
  out.nparams = two ? 2 : 1;
  if (two) {
    /* A third mechanism only when (s, a_c) alone cannot: first the roofline
     * crossover r; then exposed collectives that the limiter sees apart
     * (phase_split 1), with their share of step time k. */
    static const double rs[] = {0.0, 0.3, 0.5, 0.7};
    static const double ks[] = {0.15, 0.3, 0.45, 0.6};
    double best = INFINITY;
    struct pflex_twin_job bestjob = c.job;
    double s0 = c.job.compute_share, ac0 = c.job.compute_activity;
    for (size_t k = 0; k < sizeof rs / sizeof rs[0] + sizeof ks / sizeof ks[0] && best > 1.0; k++) {
      bool split = k >= sizeof rs / sizeof rs[0];
      c.job.mem_clock_bound = split ? 0.0 : rs[k];
      c.job.phase_split = split ? 1.0 : 0.0;
      if (split) c.job.phase_split = ks[k - sizeof rs / sizeof rs[0]] / 0.6;
      c.job.compute_share = s0;
      c.job.compute_activity = ac0;
      double e = solve2(&c);
      if (e < best) best = e, bestjob = c.job;
    }
    c.job = bestjob;
    if (c.job.mem_clock_bound > 0 || c.job.phase_split > 0) out.nparams = 3;
    if (best > 1.0) {
      /* Both cannot be met: keep this shape, meet the own-grid PFI exactly. */
      struct pflex_twin_job keep = c.job;
      if (solve1(&c, keep.compute_share) < 0) c.job = keep;
    }
  } else {
    /* One target: s alone; widen to a_c, then r, only if s cannot bracket it. */
    /* a_c steps away from its class value, both ways, until s can be solved. */
    static const double dacs[] = {0, 0.1, -0.1, 0.2, -0.2, 0.3, -0.3, 0.45, -0.45, 0.6, 0.8};
    static const double rs[] = {0.0, 0.5, 0.9};
    int e = -ERANGE;
    double ac0 = c.job.compute_activity, s0 = c.job.compute_share;
    for (size_t k = 0; e < 0 && k < sizeof rs / sizeof rs[0]; k++)
      for (size_t j = 0; e < 0 && j < sizeof dacs / sizeof dacs[0]; j++) {
        c.job.mem_clock_bound = rs[k];
        c.job.compute_activity = ac0 + dacs[j];
        if (c.job.compute_activity < A_LO || c.job.compute_activity > A_HI) continue;
        e = solve1(&c, s0);
        if (e == 0 && !binds(&c)) e = -ERANGE;
        if (e == 0 && (j > 0 || k > 0)) out.nparams = k > 0 ? 3 : 2;
      }
    if (e < 0) {
      c.job.compute_activity = ac0;
      c.job.mem_clock_bound = 0;
      c.job.compute_share = s0;
    }
  }
  double r6, r4 = NAN;
  int e = residuals(&c, &r6, two ? &r4 : NULL); /* also refreshes the job */
  if (e < 0) return e;
  out.pfi = g->pfi + r6;
  if (two) out.pfi4 = g->pfi4 + r4;
  out.compute_share = c.job.compute_share;
  out.compute_activity = c.job.compute_activity;
  out.mem_clock_bound = c.job.mem_clock_bound;
  out.phase_split = c.job.phase_split;
  /* Published values have two decimals; "met" is judged on the rounded target. */
  out.met = fabs(r6) <= PFLEX_TWIN_TOL_PFI && (!two || fabs(r4) <= PFLEX_TWIN_TOL_PFI4);
  *job = c.job;
  *ret = out;
  return 0;
}
