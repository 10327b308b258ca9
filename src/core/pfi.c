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

/* Scratch space of one computation, n entries each: the kept runs' order,
 * powers and throughputs (measured or drawn), the elasticity's logs. */
struct work {
  size_t *ord, nord;
  double *P, *T, *lx, *ly;
};

static int work_alloc(struct work *w, size_t n) {
  size_t m = n ? n : 1;
  *w = (struct work){.ord = malloc(m * sizeof *w->ord),
                     .P = malloc(m * sizeof *w->P),
                     .T = malloc(m * sizeof *w->T),
                     .lx = malloc(m * sizeof *w->lx),
                     .ly = malloc(m * sizeof *w->ly)};
  return w->ord && w->P && w->T && w->lx && w->ly ? 0 : -ENOMEM;
}

static void work_free(struct work *w) {
  free(w->ord);
  free(w->P);
  free(w->T);
  free(w->lx);
  free(w->ly);
}

/* The runs the rules keep, by cap (the uncapped run, highest cap, ends
 * last), into w->ord; *ret_excluded counts the others. -PFLEX_E_NOPOINTS
 * when fewer than two are kept, or (elasticity) all at one power. */
static int order_kept(const struct pflex_pfi_point *pts, size_t n,
                      const struct pflex_pfi_run_result *runs, enum pflex_pfi_definition def,
                      struct work *w, size_t *ret_excluded) {
  w->nord = 0;
  *ret_excluded = 0;
  for (size_t i = 0; i < n; i++) {
    if (runs[i].role == PFLEX_PFI_EXCLUDED)
      (*ret_excluded)++;
    else
      w->ord[w->nord++] = i;
  }
  int err =
      pflex__sort_index(w->ord, w->nord, pts, sizeof *pts, offsetof(struct pflex_pfi_point, cap_w));
  if (err) return err;
  if (w->nord < 2) return -PFLEX_E_NOPOINTS;
  if (def != PFLEX_PFI_ELASTICITY) return 0;
  for (size_t k = 1; k < w->nord; k++)
    if (pts[w->ord[k]].power_w != pts[w->ord[0]].power_w) return 0;
  return -PFLEX_E_NOPOINTS;
}

/* The 95% CI: opts->draws draws of every run's noise, evaluated like the
 * measured points; *ret_used counts the draws that gave a finite value. */
static int monte_carlo_ci(const struct pflex_pfi_point *pts, size_t n,
                          const struct pflex_pfi_opts *opts, struct work *w,
                          struct pflex_pfi_result *ret, size_t *ret_used) {
  *ret_used = 0;
  if (opts->draws == 0) return 0;
  double *draws = malloc(opts->draws * sizeof *draws);
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  if (!draws || !rng) {
    free(draws);
    gsl_rng_free(rng);
    return -ENOMEM;
  }
  gsl_rng_set(rng, opts->seed);
  size_t used = 0;
  for (size_t d = 0; d < opts->draws; d++) {
    /* Every run gets its two draws, in input order, whatever its role:
     * the stream (and so the CI) does not shift when a rule changes. */
    for (size_t i = 0; i < n; i++) {
      w->P[i] = pts[i].power_w + gsl_ran_gaussian(rng, power_se(&pts[i], opts));
      w->T[i] = pts[i].tput + gsl_ran_gaussian(rng, tput_se(&pts[i], opts));
    }
    bool ok = true;
    for (size_t k = 0; k < w->nord; k++)
      if (!(w->P[w->ord[k]] > 0) || !(w->T[w->ord[k]] > 0)) ok = false;
    double v = ok ? evaluate(opts->definition, w->P, w->T, w->ord, w->nord, w->lx, w->ly) : NAN;
    if (isfinite(v)) draws[used++] = v;
  }
  if (used > 0) {
    gsl_sort(draws, 1, used);
    ret->ci_low = gsl_stats_quantile_from_sorted_data(draws, 1, used, 0.025);
    ret->ci_high = gsl_stats_quantile_from_sorted_data(draws, 1, used, 0.975);
    ret->have_ci = true;
  }
  *ret_used = used;
  free(draws);
  gsl_rng_free(rng);
  return 0;
}

int pflex_pfi_compute(const struct pflex_pfi_point *pts, size_t n,
                      const struct pflex_pfi_opts *opts, struct pflex_pfi_result *ret) {
  if (!ret) return -EINVAL;
  struct pflex_pfi_run_result *runs = calloc(n ? n : 1, sizeof *runs);
  struct work w;
  int err = work_alloc(&w, n);
  if (!runs) err = -ENOMEM;
  if (!err) err = pflex_pfi_classify(pts, n, opts, runs);
  size_t n_excluded = 0;
  if (!err) err = order_kept(pts, n, runs, opts->definition, &w, &n_excluded);
  if (err) goto out;
  for (size_t i = 0; i < n; i++) {
    w.P[i] = pts[i].power_w;
    w.T[i] = pts[i].tput;
  }
  double value = evaluate(opts->definition, w.P, w.T, w.ord, w.nord, w.lx, w.ly);
  err = -EDOM;
  if (!isfinite(value)) goto out;
  if (opts->definition == PFLEX_PFI_RATIO) /* each capped run's own PFI_i */
    for (size_t k = 0; k + 1 < w.nord; k++) {
      size_t i = w.ord[k], top = w.ord[w.nord - 1];
      runs[i].have_pfi_i = pflex_pfi_index(w.P[i], w.T[i], w.P[top], w.T[top], &runs[i].pfi_i) == 0;
    }
  struct pflex_pfi_result res;
  pflex_pfi_result_init(&res);
  size_t used;
  if ((err = monte_carlo_ci(pts, n, opts, &w, &res, &used))) goto out;
  res.definition = opts->definition;
  res.pfi = value;
  res.draws_used = used;
  res.runs_used = w.nord;
  res.n_excluded = n_excluded;
  res.runs = runs;
  res.n = n;
  *ret = res;
  runs = NULL;
  err = 0;
out:
  free(runs);
  work_free(&w);
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
