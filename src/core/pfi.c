/* The Power Flexibility Index (include/pflex/pfi.h, docs/pfi.md).
 *
 * Pure computation on an array of points: classify the runs (used, uncapped,
 * excluded and why), evaluate the chosen definition on the measured values,
 * then evaluate it again on Monte Carlo resamples of every run for the 95%
 * interval. The set of runs used is decided once, on the measured values, and
 * kept fixed across draws: a draw must answer "how uncertain is this number",
 * not silently change which runs the number is made of. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_fit.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "core/sort_index.h"
#include "pflex/error.h"
#include "pflex/pfi.h"
#include "pflex/runs.h"

int pflex_pfi_index(double p, double t, double p_max, double t_max, double *ret) {
  if (!(p > 0) || !(t > 0) || !(p_max > 0) || !(t_max > 0)) return -EINVAL;
  if (t == t_max) return -EDOM;
  *ret = (1.0 - p / p_max) / (1.0 - t / t_max);
  return 0;
}

void pflex_pfi_opts_init(struct pflex_pfi_opts *opts) {
  *opts = (struct pflex_pfi_opts){.definition = PFLEX_PFI_RATIO,
                                  .exclude = PFLEX_PFI_EXCLUDE_NOISE,
                                  .noise_k = 2.0,
                                  .power_cv = 0.004,
                                  .tput_cv = 0.005,
                                  .draws = 10000,
                                  .seed = 1};
}

void pflex_pfi_opts_paper(struct pflex_pfi_opts *opts) {
  pflex_pfi_opts_init(opts);
  opts->exclude = PFLEX_PFI_EXCLUDE_PAPER;
  opts->draws = 0;
}

void pflex_pfi_result_init(struct pflex_pfi_result *res) {
  memset(res, 0, sizeof *res);
}

void pflex_pfi_result_release(struct pflex_pfi_result *res) {
  if (!res) return;
  free(res->runs);
  memset(res, 0, sizeof *res);
}

static double power_se(const struct pflex_pfi_point *pt, const struct pflex_pfi_opts *o) {
  return (pt->have & PFLEX_PFI_HAVE_POWER_SD) && !o->ignore_sd ? pt->power_sd
                                                               : o->power_cv * pt->power_w;
}

static double tput_se(const struct pflex_pfi_point *pt, const struct pflex_pfi_opts *o) {
  return (pt->have & PFLEX_PFI_HAVE_TPUT_SD) && !o->ignore_sd ? pt->tput_sd : o->tput_cv * pt->tput;
}

static int check_inputs(const struct pflex_pfi_point *pts, size_t n, const struct pflex_pfi_opts *o,
                        size_t *ret_uncapped) {
  if (!pts || !o || n < 2) return -EINVAL;
  if (o->definition > PFLEX_PFI_ELASTICITY || o->exclude > PFLEX_PFI_EXCLUDE_PAPER) return -EINVAL;
  if (!(o->noise_k >= 0) || !isfinite(o->noise_k) || !(o->power_cv >= 0) ||
      !isfinite(o->power_cv) || !(o->tput_cv >= 0) || !isfinite(o->tput_cv))
    return -EINVAL;
  if (o->ngrid && !o->grid) return -EINVAL;
  if (o->draws > SIZE_MAX / sizeof(double)) return -EINVAL; /* draws * 8 bytes would wrap */
  size_t u = 0;
  for (size_t i = 0; i < n; i++) {
    const struct pflex_pfi_point *p = &pts[i];
    if (!isfinite(p->cap_w) || !(p->power_w > 0) || !isfinite(p->power_w) || !(p->tput > 0) ||
        !isfinite(p->tput))
      return -EINVAL;
    if ((p->have & PFLEX_PFI_HAVE_POWER_SD) && !(p->power_sd >= 0 && isfinite(p->power_sd)))
      return -EINVAL;
    if ((p->have & PFLEX_PFI_HAVE_TPUT_SD) && !(p->tput_sd >= 0 && isfinite(p->tput_sd)))
      return -EINVAL;
    if (p->cap_w > pts[u].cap_w) u = i;
  }
  for (size_t i = 0; i < n; i++)
    if (i != u && pts[i].cap_w == pts[u].cap_w) return -EINVAL; /* two "uncapped" runs */
  *ret_uncapped = u;
  return 0;
}

static bool in_grid(double cap, const struct pflex_pfi_opts *o) {
  if (!o->grid) return true;
  for (size_t g = 0; g < o->ngrid; g++)
    if (fabs(o->grid[g] - cap) <= PFLEX_PFI_GRID_TOLERANCE_W) return true;
  return false;
}

int pflex_pfi_classify(const struct pflex_pfi_point *pts, size_t n,
                       const struct pflex_pfi_opts *opts, struct pflex_pfi_run_result *ret_runs) {
  size_t u;
  int err = check_inputs(pts, n, opts, &u);
  if (err) return err;
  if (!ret_runs) return -EINVAL;
  const struct pflex_pfi_point *um = &pts[u];
  double tmax_rel = tput_se(um, opts) / um->tput;
  for (size_t i = 0; i < n; i++) {
    struct pflex_pfi_run_result *r = &ret_runs[i];
    *r = (struct pflex_pfi_run_result){.cap_w = pts[i].cap_w};
    if (i == u) {
      r->role = PFLEX_PFI_UNCAPPED;
      continue;
    }
    double ratio = pts[i].tput / um->tput;
    double rel = tput_se(&pts[i], opts) / pts[i].tput;
    /* First-order standard error of T_i/T_max from independent errors. */
    r->drop = 1.0 - ratio;
    r->drop_se = ratio * sqrt(rel * rel + tmax_rel * tmax_rel);
    r->role = PFLEX_PFI_USED;
    if (!in_grid(pts[i].cap_w, opts)) {
      r->role = PFLEX_PFI_EXCLUDED;
      r->reason = PFLEX_PFI_REASON_GRID;
    } else if (opts->definition != PFLEX_PFI_RATIO) {
      /* Area and elasticity do not divide by the throughput drop: a
       * non-binding cap is an ordinary point of the curve for them. */
    } else if (pts[i].tput == um->tput) {
      r->role = PFLEX_PFI_EXCLUDED;
      r->reason = PFLEX_PFI_REASON_TMAX_EQUAL;
    } else if (opts->exclude == PFLEX_PFI_EXCLUDE_NOISE && r->drop < opts->noise_k * r->drop_se) {
      r->role = PFLEX_PFI_EXCLUDED;
      r->reason = PFLEX_PFI_REASON_NOISE;
    }
  }
  return 0;
}

/* The chosen definition on powers P and throughputs T (measured or drawn),
 * over the runs the classification kept. ord lists the kept runs (the
 * uncapped one last) in ascending cap order. NAN when undefined. */
static double evaluate(enum pflex_pfi_definition def, const double *P, const double *T,
                       const size_t *ord, size_t nord, double *lx, double *ly) {
  size_t u = ord[nord - 1];
  double pm = P[u], tm = T[u];
  switch (def) {
  case PFLEX_PFI_RATIO: {
    double sum = 0;
    for (size_t k = 0; k + 1 < nord; k++) {
      double v;
      if (pflex_pfi_index(P[ord[k]], T[ord[k]], pm, tm, &v)) return NAN;
      sum += v;
    }
    return sum / (double)(nord - 1);
  }
  case PFLEX_PFI_AREA: {
    /* Trapezoids from the boundary point (0, 0), Appendix A. */
    double sum = 0, pp = 0, tp = 0;
    for (size_t k = 0; k < nord; k++) {
      sum += (T[ord[k]] + tp) * (P[ord[k]] - pp);
      pp = P[ord[k]];
      tp = T[ord[k]];
    }
    return sum / (2.0 * tm * pm) - 0.5;
  }
  case PFLEX_PFI_ELASTICITY: {
    for (size_t k = 0; k < nord; k++) {
      if (!(P[ord[k]] > 0) || !(T[ord[k]] > 0)) return NAN;
      lx[k] = log(P[ord[k]]);
      ly[k] = log(T[ord[k]]);
    }
    double c0, c1, cov00, cov01, cov11, sumsq;
    if (gsl_fit_linear(lx, 1, ly, 1, nord, &c0, &c1, &cov00, &cov01, &cov11, &sumsq)) return NAN;
    return 1.0 - c1;
  }
  }
  return NAN;
}

int pflex_pfi_compute(const struct pflex_pfi_point *pts, size_t n,
                      const struct pflex_pfi_opts *opts, struct pflex_pfi_result *ret) {
  if (!ret) return -EINVAL;
  struct pflex_pfi_run_result *runs = calloc(n ? n : 1, sizeof *runs);
  size_t *ord = malloc((n ? n : 1) * sizeof *ord);
  double *P = malloc((n ? n : 1) * sizeof *P), *T = malloc((n ? n : 1) * sizeof *T);
  double *lx = malloc((n ? n : 1) * sizeof *lx), *ly = malloc((n ? n : 1) * sizeof *ly);
  double *draws = NULL;
  gsl_rng *rng = NULL;
  int err = -ENOMEM;
  if (!runs || !ord || !P || !T || !lx || !ly) goto out;
  err = pflex_pfi_classify(pts, n, opts, runs);
  if (err) goto out;

  size_t nord = 0, n_excluded = 0;
  for (size_t i = 0; i < n; i++) {
    if (runs[i].role == PFLEX_PFI_EXCLUDED)
      n_excluded++;
    else
      ord[nord++] = i;
  }
  /* By cap: the uncapped run (highest cap) ends last. */
  err = pflex__sort_index(ord, nord, pts, sizeof *pts, offsetof(struct pflex_pfi_point, cap_w));
  if (err) goto out;
  err = -PFLEX_E_NOPOINTS;
  if (nord < 2) goto out;
  if (opts->definition == PFLEX_PFI_ELASTICITY) {
    bool distinct = false;
    for (size_t k = 1; k < nord; k++)
      if (pts[ord[k]].power_w != pts[ord[0]].power_w) distinct = true;
    if (!distinct) goto out;
  }

  for (size_t i = 0; i < n; i++) {
    P[i] = pts[i].power_w;
    T[i] = pts[i].tput;
  }
  double value = evaluate(opts->definition, P, T, ord, nord, lx, ly);
  err = -EDOM;
  if (!isfinite(value)) goto out;
  if (opts->definition == PFLEX_PFI_RATIO)
    for (size_t k = 0; k + 1 < nord; k++) {
      size_t i = ord[k];
      runs[i].have_pfi_i =
          pflex_pfi_index(P[i], T[i], P[ord[nord - 1]], T[ord[nord - 1]], &runs[i].pfi_i) == 0;
    }

  size_t used = 0;
  if (opts->draws > 0) {
    err = -ENOMEM;
    draws = malloc(opts->draws * sizeof *draws);
    rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!draws || !rng) goto out;
    gsl_rng_set(rng, opts->seed);
    for (size_t d = 0; d < opts->draws; d++) {
      /* Every run gets its two draws, in input order, whatever its role:
       * the stream (and so the CI) does not shift when a rule changes. */
      for (size_t i = 0; i < n; i++) {
        P[i] = pts[i].power_w + gsl_ran_gaussian(rng, power_se(&pts[i], opts));
        T[i] = pts[i].tput + gsl_ran_gaussian(rng, tput_se(&pts[i], opts));
      }
      bool ok = true;
      for (size_t k = 0; k < nord; k++)
        if (!(P[ord[k]] > 0) || !(T[ord[k]] > 0)) ok = false;
      double v = ok ? evaluate(opts->definition, P, T, ord, nord, lx, ly) : NAN;
      if (isfinite(v)) draws[used++] = v;
    }
  }

  pflex_pfi_result_init(ret);
  ret->definition = opts->definition;
  ret->pfi = value;
  if (used > 0) {
    gsl_sort(draws, 1, used);
    ret->ci_low = gsl_stats_quantile_from_sorted_data(draws, 1, used, 0.025);
    ret->ci_high = gsl_stats_quantile_from_sorted_data(draws, 1, used, 0.975);
    ret->have_ci = true;
  }
  ret->draws_used = used;
  ret->runs_used = nord;
  ret->n_excluded = n_excluded;
  ret->runs = runs;
  ret->n = n;
  runs = NULL;
  err = 0;
out:
  gsl_rng_free(rng);
  free(draws);
  free(runs);
  free(ord);
  free(P);
  free(T);
  free(lx);
  free(ly);
  return err;
}

int pflex_pfi_group_points(const struct pflex_runset *set, const struct pflex_group *g,
                           struct pflex_pfi_point **ret_pts) {
  if (!set || !g || g->n == 0 || !ret_pts) return -EINVAL;
  struct pflex_pfi_point *pts = calloc(g->n, sizeof *pts);
  if (!pts) return -ENOMEM;
  for (size_t k = 0; k < g->n; k++) {
    const struct pflex_run *r = &set->runs[g->runs[k]];
    pts[k] = (struct pflex_pfi_point){.cap_w = r->cap_w,
                                      .power_w = r->power_w,
                                      .tput = r->tput,
                                      .power_sd = r->power_sd,
                                      .tput_sd = r->tput_sd};
    if (r->have & PFLEX_RUN_POWER_SD) pts[k].have |= PFLEX_PFI_HAVE_POWER_SD;
    if (r->have & PFLEX_RUN_TPUT_SD) pts[k].have |= PFLEX_PFI_HAVE_TPUT_SD;
  }
  *ret_pts = pts;
  return 0;
}

size_t pflex_pfi_paper_grid(int gpus, const double **ret_caps) {
  static const double caps6[] = {PFLEX_PFI_PAPER_CAPS6}, caps4[] = {PFLEX_PFI_PAPER_CAPS4};
  *ret_caps = gpus <= 8 ? caps6 : caps4;
  return gpus <= 8 ? sizeof caps6 / sizeof *caps6 : sizeof caps4 / sizeof *caps4;
}

const char *pflex_pfi_definition_name(enum pflex_pfi_definition d) {
  switch (d) {
  case PFLEX_PFI_RATIO: return "ratio";
  case PFLEX_PFI_AREA: return "area";
  case PFLEX_PFI_ELASTICITY: return "elasticity";
  }
  return "unknown";
}

const char *pflex_pfi_exclude_name(enum pflex_pfi_exclude e) {
  switch (e) {
  case PFLEX_PFI_EXCLUDE_NOISE: return "noise";
  case PFLEX_PFI_EXCLUDE_PAPER: return "paper";
  }
  return "unknown";
}

const char *pflex_pfi_reason_name(enum pflex_pfi_reason r) {
  switch (r) {
  case PFLEX_PFI_REASON_NONE: return "none";
  case PFLEX_PFI_REASON_TMAX_EQUAL: return "t-equals-tmax";
  case PFLEX_PFI_REASON_NOISE: return "within-noise";
  case PFLEX_PFI_REASON_GRID: return "not-in-grid";
  }
  return "unknown";
}

int pflex_pfi_definition_parse(const char *s, enum pflex_pfi_definition *ret) {
  for (int d = PFLEX_PFI_RATIO; d <= PFLEX_PFI_ELASTICITY; d++)
    if (s && strcmp(s, pflex_pfi_definition_name((enum pflex_pfi_definition)d)) == 0) {
      *ret = (enum pflex_pfi_definition)d;
      return 0;
    }
  return -EINVAL;
}

int pflex_pfi_exclude_parse(const char *s, enum pflex_pfi_exclude *ret) {
  for (int e = PFLEX_PFI_EXCLUDE_NOISE; e <= PFLEX_PFI_EXCLUDE_PAPER; e++)
    if (s && strcmp(s, pflex_pfi_exclude_name((enum pflex_pfi_exclude)e)) == 0) {
      *ret = (enum pflex_pfi_exclude)e;
      return 0;
    }
  return -EINVAL;
}

int pflex_pfi_group(const struct pflex_runset *set, const struct pflex_group *g,
                    const struct pflex_pfi_opts *opts, double *ret_pfi) {
  if (!set || !g || !ret_pfi) return -EINVAL;
  if (g->n < 2) return -PFLEX_E_NOPOINTS;
  struct pflex_pfi_opts o;
  if (opts)
    o = *opts;
  else
    pflex_pfi_opts_paper(&o);
  o.draws = 0;
  struct pflex_pfi_point *pts;
  int err = pflex_pfi_group_points(set, g, &pts);
  if (err) return err;
  struct pflex_pfi_result res;
  err = pflex_pfi_compute(pts, g->n, &o, &res);
  free(pts);
  if (err) return err;
  *ret_pfi = res.pfi;
  pflex_pfi_result_release(&res);
  return 0;
}
