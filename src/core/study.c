/* The allocation study engine (include/pflex/study.h): sample workloads from
 * sweep groups, allocate under each cut with each strategy, score on the true
 * curves, aggregate; optionally the simulated closed loop. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_min.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "pflex/error.h"
#include "pflex/jobs.h"
#include "pflex/study.h"

static const double default_cuts[] = {0, 0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40};

void pflex_study_opts_init(struct pflex_study_opts *o) {
  memset(o, 0, sizeof *o);
  o->workloads = 500;
  o->jobs = 100;
  o->cuts = default_cuts;
  o->ncuts = sizeof default_cuts / sizeof default_cuts[0];
  o->scenarios = (1u << PFLEX_SCENARIO_N) - 1;
  o->strategies = (1u << PFLEX_ALLOC_NSTRATEGIES) - 1;
  o->noise = 0.005;
  o->prior_sd = 0.3;
  o->seed = 1;
  o->knots = 17;
  o->shape = PFLEX_STUDY_SHAPE_DATA;
  o->bandwidth = 0.25;
}

const char *pflex_study_scenario_name(enum pflex_study_scenario s) {
  static const char *const n[] = {"random", "production"};
  return (unsigned)s < PFLEX_SCENARIO_N ? n[s] : "unknown";
}

const char *pflex_study_pred_name(enum pflex_study_pred p) {
  static const char *const n[] = {"true", "in-sample", "loo", "loco", "prior", "unseen"};
  return (unsigned)p < PFLEX_PRED_N ? n[p] : "unknown";
}

int pflex_study_groups_from_jobs(const struct pflex_jobset *set,
                                 struct pflex_study_group **ret_groups, size_t *ret_n) {
  struct pflex_study_group *g = calloc(set->n ? set->n : 1, sizeof *g);
  if (!g) return -ENOMEM;
  size_t n = 0;
  for (size_t i = 0; i < set->n; i++) {
    const struct pflex_alloc_job *j = &set->jobs[i];
    if (!j->curve) continue;
    g[n++] = (struct pflex_study_group){.name = j->name,
                                        .gpu = set->gpu ? set->gpu[i] : NULL,
                                        .curve = j->curve,
                                        .gpus = j->gpus,
                                        .arch = j->arch,
                                        .task = j->task,
                                        .dram_copy = j->dram_copy};
  }
  if (n == 0) {
    free(g);
    return -PFLEX_E_NOPOINTS;
  }
  *ret_groups = g;
  *ret_n = n;
  return 0;
}

/* ---- closed-loop refit ---------------------------------------------------- */

/* The one-parameter path of pflex_curve_from_pfi: u in (0, 1] is c, u in
 * (1, 2] lowers vratio from its base value to 1 with c = 1. */
static struct pflex_curve_params on_path(const struct pflex_curve_params *base, double u) {
  struct pflex_curve_params q = *base;
  if (u <= 1) {
    q.c = u;
  } else {
    q.c = 1;
    q.vratio = base->vratio - (u - 1) * (base->vratio - 1);
    if (q.vratio < 1) q.vratio = 1;
  }
  return q;
}

struct refit {
  const struct pflex_curve_params *base;
  double p_max, t_max, u0, prior_sd, noise;
  const double *w, *t;
  const double *x; /* clock of each observation on the c-part of the path */
  size_t n;
};

/* Negative log posterior (up to a constant): squared standardized residuals. */
static double cost(double u, void *data) {
  const struct refit *r = data;
  struct pflex_curve_params q = on_path(r->base, u);
  double s = (u - r->u0) / r->prior_sd;
  s *= s;
  for (size_t k = 0; k < r->n; k++) {
    /* For u <= 1 only c varies, and the clock at a given power does not
     * depend on c: T/T_max = 1 / (c/x + 1 - c) without solving for x. */
    double model = u <= 1 ? (r->x[k] > 0 ? 1.0 / (u / r->x[k] + 1.0 - u) : 0.0)
                          : pflex_curve_family_tput(&q, r->w[k] / r->p_max);
    double e = (model - r->t[k] / r->t_max) / r->noise;
    s += e * e;
  }
  return s;
}

/* Where a member lies on the path from base (inverse of on_path). */
static double path_position(const struct pflex_curve_params *base,
                            const struct pflex_curve_params *q) {
  if (q->c < 1 || !(base->vratio > 1)) return q->c;
  double u = 1 + (base->vratio - q->vratio) / (base->vratio - 1);
  return u < 1 ? 1 : u > 2 ? 2 : u;
}

int pflex_study_refit(const struct pflex_curve_params *base, const struct pflex_curve_params *pred,
                      double prior_sd, double noise, double p_max, double t_max,
                      const double *obs_w, const double *obs_t, size_t nobs,
                      struct pflex_curve_params *ret) {
  if (!base || !pred || !(prior_sd > 0) || !(noise >= 0) || !(p_max > 0) || !(t_max > 0) ||
      (nobs && (!obs_w || !obs_t)))
    return -EINVAL;
  struct pflex_curve_params b = *base;
  b.c = 1;
  b.knee = pred->knee;
  b.idle_frac = pred->idle_frac;
  struct refit r = {.base = &b,
                    .p_max = p_max,
                    .t_max = t_max,
                    .u0 = path_position(&b, pred),
                    .prior_sd = prior_sd,
                    .noise = noise > 1e-6 ? noise : 1e-6,
                    .w = obs_w,
                    .t = obs_t,
                    .n = nobs};
  if (nobs == 0) {
    *ret = on_path(&b, r.u0);
    return 0;
  }
  double *x = malloc(nobs * sizeof *x);
  if (!x) return -ENOMEM;
  /* The clock at each observed power (the same for every c). */
  for (size_t k = 0; k < nobs; k++)
    x[k] = pflex_curve_family_clock(&b, obs_w[k] / p_max);
  r.x = x;
  /* A scan brackets the minimum (dense on the cheap c-part of the path);
   * Brent polishes it. */
  enum { NSCAN = 33 };
  const double lo = 1e-4;
  double best_u = lo, best = INFINITY, us[NSCAN], fs[NSCAN];
  size_t bi = 0, nscan = 25;
  for (size_t k = 0; k < nscan; k++) {
    us[k] = k < 25 ? lo + (1 - lo) * (double)k / 24 : 1 + (double)(k - 24) / 8;
    fs[k] = cost(us[k], &r);
    if (fs[k] < best) {
      best = fs[k];
      best_u = us[k];
      bi = k;
    }
    /* The costlier vratio part of the path only when the data push past c = 1. */
    if (k == 24 && bi == 24) nscan = NSCAN;
  }
  if (bi > 0 && bi + 1 < nscan && fs[bi] < fs[bi - 1] && fs[bi] < fs[bi + 1]) {
    gsl_min_fminimizer *m = gsl_min_fminimizer_alloc(gsl_min_fminimizer_brent);
    if (!m) {
      free(x);
      return -ENOMEM;
    }
    gsl_function F = {.function = cost, .params = &r};
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    if (gsl_min_fminimizer_set_with_values(m, &F, us[bi], fs[bi], us[bi - 1], fs[bi - 1],
                                           us[bi + 1], fs[bi + 1]) == GSL_SUCCESS) {
      for (int it = 0; it < 100; it++) {
        if (gsl_min_fminimizer_iterate(m) != GSL_SUCCESS) break;
        double a = gsl_min_fminimizer_x_lower(m), z = gsl_min_fminimizer_x_upper(m);
        if (gsl_min_test_interval(a, z, 1e-7, 0) == GSL_SUCCESS) break;
      }
      double u = gsl_min_fminimizer_x_minimum(m), f = gsl_min_fminimizer_f_minimum(m);
      if (f < best) best_u = u;
    }
    gsl_set_error_handler(old);
    gsl_min_fminimizer_free(m);
  }
  free(x);
  *ret = on_path(&b, best_u);
  return 0;
}

/* ---- the study --------------------------------------------------------------- */

/* The closed loop of the data shape re-estimates a job's PFI from what it
 * observed (below): its candidate curves are the same templates' curves at
 * NPFI PFI values, log-spaced from PFI_LO to PFI_HI. */
#define NPFI 48
#define PFI_LO 0.6
#define PFI_HI 6.0

static double pfi_at(double u) {
  /* exp, not pow: this runs in the closed loop's inner search. */
  return PFI_LO * exp(u * (2.302585092994046 / (NPFI - 1))); /* ln(PFI_HI / PFI_LO) = ln 10 */
}

/* One output line per scenario and cut. */
struct line {
  enum pflex_alloc_strategy st;
  size_t pred; /* index into preds; (size_t)-1 for none */
  unsigned round;
};

struct acc {
  double sum_t;
  size_t above;
};

struct study {
  const struct pflex_study_group *g;
  size_t ng;
  const struct pflex_study_predset *preds;
  size_t np;
  const struct pflex_study_opts *o;
  struct pflex_curve **pcurve;       /* np * ng predicted curves */
  struct pflex_curve_params *pparam; /* np * ng: their params */
  struct pflex_curve **pgrid;        /* data shape, closed loop: np * ng * NPFI curves, the
                                        same templates at the PFI values pfi_grid[] */
  struct pflex_curve_params *base;   /* ng: family defaults per group */
  size_t *pt, *ft, npt, nft;         /* groups by task */
  bool have_dram;
};

static void study_release(struct study *s) {
  if (s->pcurve)
    for (size_t i = 0; i < s->np * s->ng; i++)
      pflex_curve_free(s->pcurve[i]);
  free(s->pcurve);
  free(s->pparam);
  if (s->pgrid)
    for (size_t i = 0; i < s->np * s->ng * NPFI; i++)
      pflex_curve_free(s->pgrid[i]);
  free(s->pgrid);
  free(s->base);
  free(s->pt);
  free(s->ft);
}

/* The predicted curve of group gi under a PFI: the family member with that PFI
 * on the paper's grid; outside the family's range, its nearest end. */
static int predicted_curve(const struct study *s, size_t gi, double pfi, struct pflex_curve **ret,
                           struct pflex_curve_params *ret_q) {
  const struct pflex_study_group *g = &s->g[gi];
  double p_min = pflex_curve_p_min(g->curve), p_max = pflex_curve_p_max(g->curve);
  double t_max = pflex_curve_t_max(g->curve), grid[5];
  size_t n = pflex_jobs_paper_grid(g->gpus, p_max, grid);
  int err = n ? pflex_curve_from_pfi(pfi, p_min, p_max, t_max, grid, n, &s->base[gi], ret)
              : -PFLEX_E_NOPOINTS;
  if (err == 0) return pflex_curve_get_params(*ret, ret_q);
  if (err != -ERANGE && err != -PFLEX_E_NOPOINTS) return err;
  struct pflex_curve_params q = s->base[gi];
  if (err == -PFLEX_E_NOPOINTS) {
    q.c = 1; /* no grid point below P_max: nothing to match, the default member */
  } else if (pfi < 1.0) {
    q.c = 1; /* the least PFI the family reaches */
    q.vratio = 1;
  } else {
    q.c = 1e-4; /* the most */
  }
  *ret_q = q;
  return pflex_curve_new_parametric(&q, p_min, p_max, t_max, ret);
}

/* The most template curves one predicted data-shape curve averages over. */
#define STUDY_MAX_TEMPLATES 512

/* The predicted curve of group gi under prediction set k, shaped by the
 * curves the set's fold allows (pflex_study_predset). */
static int predicted_curve_data(const struct study *s, size_t k, size_t gi, double pfi,
                                const struct pflex_curve **tmpl, struct pflex_curve **ret) {
  const struct pflex_study_predset *ps = &s->preds[k];
  const struct pflex_study_group *g = &s->g[gi];
  double p_min = pflex_curve_p_min(g->curve), p_max = pflex_curve_p_max(g->curve);
  double t_max = pflex_curve_t_max(g->curve), grid[5];
  size_t nt = 0;
  /* Past STUDY_MAX_TEMPLATES candidates, every k-th (a systematic sample
   * across the file) so that the shapes cost linear time in groups, not
   * quadratic; up to that many all are used, as always. */
  size_t nall = ps->templates ? ps->ntemplates : s->ng;
  size_t stride =
      nall > STUDY_MAX_TEMPLATES ? (nall + STUDY_MAX_TEMPLATES - 1) / STUDY_MAX_TEMPLATES : 1;
  if (ps->templates) {
    for (size_t j = 0; j < ps->ntemplates; j += stride)
      tmpl[nt++] = ps->templates[j];
  } else {
    for (size_t j = 0; j < s->ng; j += stride)
      if (!ps->fold || ps->fold[j] != ps->fold[gi]) tmpl[nt++] = s->g[j].curve;
  }
  if (nt == 0) {
    /* Nothing to learn a shape from (one group, or one cluster left out):
     * the family's member, as with --shape family. */
    struct pflex_curve_params q;
    return predicted_curve(s, gi, pfi, ret, &q);
  }
  size_t n = pflex_jobs_paper_grid(g->gpus, p_max, grid);
  /* A PFI the model predicts at or below 0 says "cut last": the least
   * elastic shape the templates give. */
  double v = pfi > 0.05 ? pfi : 0.05;
  int err = n ? pflex_curve_from_pfi_templates(v, p_min, p_max, t_max, grid, n, tmpl, nt,
                                               s->o->bandwidth, ret)
              : -PFLEX_E_NOPOINTS;
  if (err != -PFLEX_E_NOPOINTS) return err;
  /* No grid point below P_max: nothing to match; the family's default member. */
  struct pflex_curve_params q = s->base[gi];
  return pflex_curve_new_parametric(&q, p_min, p_max, t_max, ret);
}

static int study_prepare(struct study *s) {
  size_t ng = s->ng, np = s->np;
  size_t npg = np * ng > 0 ? np * ng : 1;
  s->pcurve = calloc(npg, sizeof *s->pcurve);
  s->pparam = calloc(npg, sizeof *s->pparam);
  s->base = calloc(ng ? ng : 1, sizeof *s->base);
  s->pt = calloc(ng ? ng : 1, sizeof *s->pt);
  s->ft = calloc(ng ? ng : 1, sizeof *s->ft);
  if (!s->pcurve || !s->pparam || !s->base || !s->pt || !s->ft) return -ENOMEM;
  s->have_dram = true;
  for (size_t i = 0; i < ng; i++) {
    const struct pflex_study_group *g = &s->g[i];
    if (!g->curve || g->gpus <= 0) return -EINVAL;
    pflex_curve_params_default(g->gpu, g->gpus, pflex_curve_p_max(g->curve), &s->base[i]);
    if (g->task == PFLEX_TASK_PT) s->pt[s->npt++] = i;
    if (g->task == PFLEX_TASK_FT) s->ft[s->nft++] = i;
    if (!(g->dram_copy >= 0) || !isfinite(g->dram_copy)) s->have_dram = false;
  }
  size_t maxt = ng;
  for (size_t k = 0; k < np; k++)
    if (s->preds[k].templates && s->preds[k].ntemplates > maxt) maxt = s->preds[k].ntemplates;
  const struct pflex_curve **tmpl = calloc(maxt ? maxt : 1, sizeof *tmpl);
  if (!tmpl) return -ENOMEM;
  int err = 0;
  for (size_t k = 0; k < np && !err; k++)
    for (size_t i = 0; i < ng && !err; i++) {
      double v = s->preds[k].pfi[i];
      if (!isfinite(v)) err = -EINVAL;
      else if (s->o->shape == PFLEX_STUDY_SHAPE_FAMILY)
        err = predicted_curve(s, i, v, &s->pcurve[k * ng + i], &s->pparam[k * ng + i]);
      else
        err = predicted_curve_data(s, k, i, v, tmpl, &s->pcurve[k * ng + i]);
    }
  if (!err && s->o->rounds && s->o->shape == PFLEX_STUDY_SHAPE_DATA) {
    if (!(s->pgrid = calloc(np * ng * NPFI, sizeof *s->pgrid))) err = -ENOMEM;
    for (size_t k = 0; k < np && !err; k++)
      for (size_t i = 0; i < ng && !err; i++)
        for (size_t m = 0; m < NPFI && !err; m++)
          err = predicted_curve_data(s, k, i, pfi_at((double)m), tmpl,
                                     &s->pgrid[(k * ng + i) * NPFI + m]);
  }
  free(tmpl);
  return err;
}

/* Sum of true throughput of an allocation. */
static double true_tput(const struct study *s, const size_t *gi, const struct pflex_alloc_result *r,
                        size_t n) {
  double t = 0;
  for (size_t j = 0; j < n; j++)
    t += pflex_curve_eval(s->g[gi[j]].curve, r[j].power_w);
  return t;
}

/* Workload scratch space. */
/* A refitted family member times a residual correction: the ratio of each
 * observed throughput to the member's, interpolated linearly in power between
 * the observed powers and 1 at P_max, constant below the lowest observation.
 * The family cannot bend to every real curve; this makes the curve pass
 * through what was seen (to the measurement noise), where the next allocation
 * is likely to land. */
struct corr {
  struct pflex_curve_params q;       /* family shape: the refitted member */
  const struct pflex_curve *prior, *prior2; /* data shape (knot_eval): the curve re-predicted */
  double blend;                             /* from the observations, (1 - blend) prior +
                                               blend prior2 */
  double aq[101];                           /* that curve at the knots ap[] (rounds <= 100) */
  double p_min, p_max, t_max;
  size_t n;
  double *ap, *ar; /* anchors: power, ratio (sorted, merged within 1% of P_max) */
  double *tp, *tt; /* CORR_TABLE samples of the corrected curve, uniform in clock */
};

#define CORR_TABLE 65

/* The residual ratio at power p. */
static double corr_ratio(const struct corr *c, double p) {
  if (c->n == 0 || p >= c->p_max) return 1.0;
  if (p <= c->ap[0]) return c->ar[0];
  size_t k = 1;
  while (k < c->n && c->ap[k] < p)
    k++;
  double p1 = k < c->n ? c->ap[k] : c->p_max, r1 = k < c->n ? c->ar[k] : 1.0;
  return c->ar[k - 1] + (r1 - c->ar[k - 1]) * (p - c->ap[k - 1]) / (p1 - c->ap[k - 1]);
}

/* Throughput of the refitted curve before the residual correction. */
static double corr_base(const struct corr *c, double p) {
  return c->t_max * pflex_curve_family_tput(&c->q, p / c->p_max);
}

/* Tabulates the corrected curve: CORR_TABLE points uniform in clock from
 * P_min to P_max, so that evaluating it needs no root finding. */
static void corr_tabulate(struct corr *c) {
  double xl = pflex_curve_family_clock(&c->q, c->p_min / c->p_max);
  for (size_t k = 0; k < CORR_TABLE; k++) {
    double x = k + 1 == CORR_TABLE ? 1.0 : xl + (1 - xl) * (double)k / (CORR_TABLE - 1);
    c->tp[k] = k == 0                ? c->p_min
               : k + 1 == CORR_TABLE ? c->p_max
                                     : c->p_max * pflex_curve_family_power(&c->q, x);
    if (k > 0 && c->tp[k] <= c->tp[k - 1]) c->tp[k] = nextafter(c->tp[k - 1], INFINITY);
    /* Throughput at clock x directly: no root finding. */
    double base = x > 0 ? c->t_max / (c->q.c / x + 1 - c->q.c) : 0;
    c->tt[k] = base * corr_ratio(c, c->tp[k]);
  }
}

static double corr_eval(void *ctx, double p) {
  const struct corr *c = ctx;
  if (p <= c->tp[0]) return c->tt[0];
  if (p >= c->tp[CORR_TABLE - 1]) return c->tt[CORR_TABLE - 1];
  size_t lo = 0, hi = CORR_TABLE - 1;
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (c->tp[mid] <= p)
      lo = mid;
    else
      hi = mid;
  }
  return c->tt[lo] + (c->tt[hi] - c->tt[lo]) * (p - c->tp[lo]) / (c->tp[hi] - c->tp[lo]);
}

static int cmp_pair(const void *a, const void *b) {
  const double *x = a, *y = b;
  return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Sorts m (power, value) pairs by power and sets the anchors c->ap, c->ar to
 * the means of each run of pairs within tol W of the run's first. */
static void anchors_merge(struct corr *c, double *pairs, size_t m, double tol) {
  qsort(pairs, m, 2 * sizeof *pairs, cmp_pair);
  c->n = 0;
  for (size_t k = 0; k < m;) {
    size_t e = k;
    double sp = 0, sv = 0;
    while (e < m && pairs[2 * e] - pairs[2 * k] <= tol) {
      sp += pairs[2 * e];
      sv += pairs[2 * e + 1];
      e++;
    }
    c->ap[c->n] = sp / (double)(e - k);
    c->ar[c->n] = sv / (double)(e - k);
    c->n++;
    k = e;
  }
}

/* Sets the anchors from observations (pairs buffer of 2 * nobs doubles). */
static void corr_set(struct corr *c, const double *w, const double *t, size_t nobs, double *pairs) {
  size_t m = 0;
  for (size_t k = 0; k < nobs; k++) {
    if (!(w[k] < c->p_max * (1 - 1e-3))) continue; /* at P_max: no shape information */
    double f = corr_base(c, w[k]);
    pairs[2 * m] = w[k];
    pairs[2 * m + 1] = t[k] / f;
    m++;
  }
  /* Nearby observations are averaged: their difference is noise, and a
   * steep ratio between them would be an artefact. */
  anchors_merge(c, pairs, m, 0.01 * c->p_max);
}

struct work {
  size_t *gi;
  struct corr *corr;               /* per job (closed loop) */
  double *anchors;                 /* jobs x 2 x rounds: corr anchor storage */
  double *table;                   /* jobs x 2 x CORR_TABLE: corr tables */
  double *pairs;                   /* 2 x rounds scratch */
  struct pflex_alloc_job *jt, *jp; /* on true curves, on predicted/refined curves */
  struct pflex_alloc_result *r;
  struct pflex_curve **own; /* refined curves of this round */
  double *obs_w, *obs_t;    /* jobs x (rounds) observations */
  double *tl;               /* per line: this workload's throughput */
  double *gtab;             /* jobs x rounds x NPFI: candidate curves at the observations */
};

static void work_free(struct work *w, size_t n) {
  if (w->own)
    for (size_t j = 0; j < n; j++)
      pflex_curve_free(w->own[j]);
  free(w->gi);
  free(w->corr);
  free(w->anchors);
  free(w->table);
  free(w->pairs);
  free(w->jt);
  free(w->jp);
  free(w->r);
  free(w->own);
  free(w->obs_w);
  free(w->obs_t);
  free(w->tl);
  free(w->gtab);
}

/* The data shape's update: every observation becomes an exact knot of a
 * monotone curve that follows the predicted curve's shape between knots.
 * Observations within KNOT_MERGE of P_max of each other are averaged (their
 * difference is mostly noise, and a slope between them would be noise over a
 * short distance); knots are made non-decreasing by isotonic regression and
 * capped at T_max; (P_max, T_max) is the last knot. Between two knots the
 * predicted curve is mapped affinely onto the segment between them; below the
 * lowest knot it is shifted to pass through it (the predicted slopes kept),
 * floored at 1e-3 T_max. */
#define KNOT_MERGE 0.05

static void knot_set(struct corr *c, const double *w, const double *t, size_t nobs,
                     double *pairs) {
  size_t m = 0;
  for (size_t k = 0; k < nobs; k++) {
    if (!(w[k] < c->p_max * (1 - 1e-3))) continue; /* at P_max: nothing new */
    pairs[2 * m] = w[k];
    pairs[2 * m + 1] = t[k];
    m++;
  }
  anchors_merge(c, pairs, m, KNOT_MERGE * c->p_max);
  for (size_t k = 0; k < c->n; k++)
    c->ar[k] = fmin(c->ar[k], c->t_max);
  /* Pool adjacent violators (equal weights): noisy knots made monotone. */
  for (size_t k = 1; k < c->n; k++)
    if (c->ar[k] < c->ar[k - 1]) {
      size_t b = k;
      double sum = c->ar[k], cnt = 1;
      while (b > 0 && sum / cnt < c->ar[b - 1]) {
        b--;
        sum += c->ar[b];
        cnt++;
      }
      for (size_t i = b; i <= k; i++)
        c->ar[i] = sum / cnt;
    }
}

static double prior_eval(const struct corr *c, double p) {
  double t = pflex_curve_eval(c->prior, p);
  return c->blend > 0 ? t + c->blend * (pflex_curve_eval(c->prior2, p) - t) : t;
}

/* The re-predicted curve at the knots and at P_max, once per round. */
static void knot_cache(struct corr *c) {
  for (size_t k = 0; k < c->n; k++)
    c->aq[k] = prior_eval(c, c->ap[k]);
  c->aq[c->n] = prior_eval(c, c->p_max);
}

static double knot_eval(void *ctx, double p) {
  const struct corr *c = ctx;
  if (p >= c->p_max) return c->t_max;
  if (c->n == 0) return prior_eval(c, p);
  if (p <= c->ap[0]) {
    double t = prior_eval(c, p) + c->ar[0] - c->aq[0];
    return t > 1e-3 * c->t_max ? t : 1e-3 * c->t_max;
  }
  size_t k = 1;
  while (k < c->n && c->ap[k] < p)
    k++;
  double p0 = c->ap[k - 1], t0 = c->ar[k - 1];
  double p1 = k < c->n ? c->ap[k] : c->p_max, t1 = k < c->n ? c->ar[k] : c->t_max;
  double q0 = c->aq[k - 1], q1 = c->aq[k];
  if (q1 - q0 > 1e-12 * c->t_max) return t0 + (t1 - t0) * (prior_eval(c, p) - q0) / (q1 - q0);
  return t0 + (t1 - t0) * (p - p0) / (p1 - p0);
}

/* Negative log posterior of the job's PFI at grid position u (fractional:
 * its curve the blend of the two neighbouring grid curves): Gaussian prior
 * on the PFI around the prediction (SD prior_sd), Gaussian relative noise on
 * each observed throughput. */
struct pfi_post {
  struct pflex_curve *const *grid; /* NPFI curves */
  double pfi0, sd, noise;
  const double *tab; /* n x NPFI: grid curve m at observation k, tab[k * NPFI + m] */
  const double *t;
  size_t n;
};

static double post_cost(const struct pfi_post *q, double u) {
  size_t m = (size_t)u;
  if (m >= NPFI - 1) m = NPFI - 2;
  double a = u - (double)m, z = (pfi_at(u) - q->pfi0) / q->sd, s = z * z;
  for (size_t k = 0; k < q->n; k++) {
    const double *row = &q->tab[k * NPFI];
    double t = row[m] + a * (row[m + 1] - row[m]);
    double e = (t - q->t[k]) / (q->noise * q->t[k]);
    s += e * e;
  }
  return s;
}

/* The posterior mode of the PFI on the grid: a scan, then golden-section
 * search between the best point's neighbours. Sets c->prior, prior2, blend. */
static void repredict(struct corr *c, const struct pfi_post *q) {
  size_t best = 0;
  double fb = INFINITY;
  for (size_t m = 0; m < NPFI; m++) {
    /* The prior term alone bounds the cost from below: a point whose prior
     * term already reaches the best cost cannot win (same result, less work). */
    double z = (pfi_at((double)m) - q->pfi0) / q->sd;
    if (z * z >= fb) continue;
    double f = post_cost(q, (double)m);
    if (f < fb) {
      fb = f;
      best = m;
    }
  }
  double lo = best > 0 ? (double)best - 1 : 0, hi = best + 1 < NPFI ? (double)best + 1 : NPFI - 1;
  const double g = 0.6180339887498949;
  double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo);
  double f1 = post_cost(q, x1), f2 = post_cost(q, x2);
  for (int it = 0; it < 20; it++) { /* bracket 2 -> 2 * 0.618^20, about 1e-4 of a step */
    if (f1 < f2) {
      hi = x2;
      x2 = x1;
      f2 = f1;
      x1 = hi - g * (hi - lo);
      f1 = post_cost(q, x1);
    } else {
      lo = x1;
      x1 = x2;
      f1 = f2;
      x2 = lo + g * (hi - lo);
      f2 = post_cost(q, x2);
    }
  }
  double u = f1 < f2 ? x1 : x2;
  if (fb <= (f1 < f2 ? f1 : f2)) u = (double)best;
  size_t m = (size_t)u;
  if (m >= NPFI - 1) m = NPFI - 2;
  c->prior = q->grid[m];
  c->prior2 = q->grid[m + 1];
  c->blend = u - (double)m;
}

/* optimal with prediction set k on one workload and cut, with the closed loop:
 * writes the true throughput after each round into t[0..rounds]. */
static int run_optimal(const struct study *s, struct work *w, size_t k, double target,
                       const struct pflex_alloc_opts *ao_in, gsl_rng *noise, double *t) {
  size_t n = s->o->jobs, R = s->o->rounds;
  /* Only the powers are used (their throughput is read on the true curves). */
  struct pflex_alloc_opts aos = *ao_in;
  aos.skip_tput = true;
  const struct pflex_alloc_opts *ao = &aos;
  for (size_t j = 0; j < n; j++) {
    w->jp[j] = w->jt[j];
    w->jp[j].curve = s->pcurve[k * s->ng + w->gi[j]];
  }
  struct pflex_alloc_summary sum;
  int err = pflex_alloc_run(w->jp, n, PFLEX_ALLOC_OPTIMAL, target, ao, w->r, &sum);
  if (err) return err;
  t[0] = true_tput(s, w->gi, w->r, n);
  for (size_t round = 1; round <= R; round++) {
    for (size_t j = 0; j < n; j++) {
      const struct pflex_curve *tc = s->g[w->gi[j]].curve;
      double pw = w->r[j].power_w;
      w->obs_w[j * R + round - 1] = pw;
      w->obs_t[j * R + round - 1] =
          pflex_curve_eval(tc, pw) * (1 + gsl_ran_gaussian(noise, s->o->noise));
      struct corr *c = &w->corr[j];
      c->p_min = pflex_curve_p_min(tc);
      c->p_max = pflex_curve_p_max(tc);
      c->t_max = pflex_curve_t_max(tc);
      c->tp = &w->table[2 * j * CORR_TABLE];
      c->tt = c->tp + CORR_TABLE;
      c->ap = &w->anchors[2 * j * R];
      c->ar = c->ap + R;
      struct pflex_curve_fn fn = {.eval = corr_eval, .ctx = c};
      if (s->o->shape == PFLEX_STUDY_SHAPE_DATA) {
        struct pfi_post q = {.grid = &s->pgrid[(k * s->ng + w->gi[j]) * NPFI],
                             .pfi0 = s->preds[k].pfi[w->gi[j]],
                             .sd = s->o->prior_sd,
                             .noise = s->o->noise > 1e-4 ? s->o->noise : 1e-4,
                             .tab = &w->gtab[j * R * NPFI],
                             .t = &w->obs_t[j * R],
                             .n = round};
        /* The candidate curves at the new observation, once. */
        for (size_t m = 0; m < NPFI; m++)
          w->gtab[(j * R + round - 1) * NPFI + m] = pflex_curve_eval(q.grid[m], pw);
        repredict(c, &q);
        knot_set(c, &w->obs_w[j * R], &w->obs_t[j * R], round, w->pairs);
        knot_cache(c);
        fn.eval = knot_eval;
      } else {
        c->prior = NULL;
        if ((err = pflex_study_refit(&s->base[w->gi[j]], &s->pparam[k * s->ng + w->gi[j]],
                                     s->o->prior_sd, s->o->noise, c->p_max, c->t_max,
                                     &w->obs_w[j * R], &w->obs_t[j * R], round, &c->q)))
          return err;
        corr_set(c, &w->obs_w[j * R], &w->obs_t[j * R], round, w->pairs);
        corr_tabulate(c);
      }
      pflex_curve_free(w->own[j]);
      w->own[j] = NULL;
      if ((err = pflex_curve_new_callback(&fn, pflex_curve_p_min(tc), c->p_max, &w->own[j])))
        return err;
      w->jp[j].curve = w->own[j];
    }
    if ((err = pflex_alloc_run(w->jp, n, PFLEX_ALLOC_OPTIMAL, target, ao, w->r, &sum))) return err;
    t[round] = true_tput(s, w->gi, w->r, n);
  }
  return 0;
}

int pflex_study_run(const struct pflex_study_group *groups, size_t ngroups,
                    const struct pflex_study_predset *preds, size_t npreds,
                    const struct pflex_study_opts *opts, struct pflex_study_result **ret_results,
                    size_t *ret_n) {
  struct pflex_study_opts def;
  if (!opts) {
    pflex_study_opts_init(&def);
    opts = &def;
  }
  if (!groups || ngroups == 0 || (npreds && !preds) || opts->jobs == 0 || opts->workloads == 0 ||
      !(opts->noise >= 0) || !(opts->prior_sd > 0) || (opts->ncuts && !opts->cuts) ||
      opts->rounds > 100)
    return -EINVAL;
  const double *cuts = opts->cuts ? opts->cuts : default_cuts;
  size_t ncuts = opts->cuts ? opts->ncuts : sizeof default_cuts / sizeof default_cuts[0];
  for (size_t c = 0; c < ncuts; c++)
    if (!(cuts[c] >= 0 && cuts[c] <= 1)) return -EINVAL;
  for (size_t k = 0; k < npreds; k++)
    if (!preds[k].pfi || (unsigned)preds[k].mode >= PFLEX_PRED_N) return -EINVAL;

  struct study s = {.g = groups, .ng = ngroups, .preds = preds, .np = npreds, .o = opts};
  struct line *lines = NULL;
  struct acc *acc = NULL;
  double *sum_or = NULL, *sum_eq = NULL;
  size_t *count = NULL;
  struct pflex_study_result *res = NULL;
  struct work w = {0};
  gsl_rng *rng = NULL, *noise = NULL;
  struct pflex_alloc_ctx *actx = NULL;
  size_t n = opts->jobs, nlines = 0, nres = 0;
  int err = study_prepare(&s);
  if (err) goto out;
  if ((opts->scenarios & (1u << PFLEX_SCENARIO_PRODUCTION)) && (s.npt == 0 || s.nft == 0)) {
    err = -PFLEX_E_DATA;
    goto out;
  }
  /* The output lines, in strategy order. */
  err = -ENOMEM;
  size_t maxlines = PFLEX_ALLOC_NSTRATEGIES + npreds * (2 + opts->rounds);
  if (!(lines = calloc(maxlines, sizeof *lines))) goto out;
  for (int st = 0; st < PFLEX_ALLOC_NSTRATEGIES; st++) {
    if (!(opts->strategies & (1u << st))) continue;
    if (st == PFLEX_ALLOC_DRAM && !s.have_dram) continue;
    if (st == PFLEX_ALLOC_PFI || st == PFLEX_ALLOC_OPTIMAL) {
      for (size_t k = 0; k < npreds; k++)
        for (unsigned r = 0; r <= (st == PFLEX_ALLOC_OPTIMAL ? opts->rounds : 0); r++)
          lines[nlines++] = (struct line){st, k, r};
    } else {
      lines[nlines++] = (struct line){st, (size_t)-1, 0};
    }
  }
  size_t ncell = PFLEX_SCENARIO_N * ncuts;
  acc = calloc(ncell * (nlines ? nlines : 1), sizeof *acc);
  sum_or = calloc(ncell, sizeof *sum_or);
  sum_eq = calloc(ncell, sizeof *sum_eq);
  count = calloc(ncell, sizeof *count);
  w.gi = calloc(n, sizeof *w.gi);
  w.corr = calloc(n, sizeof *w.corr);
  w.anchors = calloc(2 * n * (opts->rounds ? opts->rounds : 1), sizeof *w.anchors);
  w.table = calloc(2 * n * CORR_TABLE, sizeof *w.table);
  w.pairs = calloc(2 * (opts->rounds ? opts->rounds : 1), sizeof *w.pairs);
  w.jt = calloc(n, sizeof *w.jt);
  w.jp = calloc(n, sizeof *w.jp);
  w.r = calloc(n, sizeof *w.r);
  w.own = calloc(n, sizeof *w.own);
  w.obs_w = calloc(n * (opts->rounds ? opts->rounds : 1), sizeof *w.obs_w);
  w.obs_t = calloc(n * (opts->rounds ? opts->rounds : 1), sizeof *w.obs_t);
  w.tl = calloc((nlines ? nlines : 1) + opts->rounds + 1, sizeof *w.tl);
  w.gtab = calloc(n * (opts->rounds ? opts->rounds : 1) * NPFI, sizeof *w.gtab);
  rng = gsl_rng_alloc(gsl_rng_mt19937);
  noise = gsl_rng_alloc(gsl_rng_mt19937);
  if (!acc || !sum_or || !sum_eq || !count || !w.gi || !w.corr || !w.anchors || !w.table ||
      !w.pairs || !w.jt || !w.jp || !w.r || !w.own || !w.obs_w || !w.obs_t || !w.tl || !w.gtab || !rng ||
      !noise)
    goto out;
  /* One allocator context for the whole run: the same curves come back in
   * every workload and cut, their hulls are sampled once (same results). */
  if ((err = pflex_alloc_ctx_new(&actx))) goto out;
  struct pflex_alloc_opts ao = {.knots = opts->knots, .ctx = actx};
  double *tround = w.tl + nlines; /* rounds + 1 scratch values */
  for (int sc = 0; sc < PFLEX_SCENARIO_N; sc++) {
    if (!(opts->scenarios & (1u << sc))) continue;
    /* Streams per scenario, so that one scenario's results do not depend on
     * whether the other ran. */
    gsl_rng_set(rng, opts->seed * 1000003ul + (unsigned long)sc);
    gsl_rng_set(noise, opts->seed * 7919ul + 104729ul + (unsigned long)sc);
    const double p_pt =
        (double)PFLEX_ACME_PRETRAIN_JOBS / (PFLEX_ACME_PRETRAIN_JOBS + PFLEX_ACME_SFT_JOBS);
    for (size_t wl = 0; wl < opts->workloads; wl++) {
      for (size_t j = 0; j < n; j++) {
        size_t gi;
        if (sc == PFLEX_SCENARIO_RANDOM)
          gi = gsl_rng_uniform_int(rng, ngroups);
        else if (gsl_rng_uniform(rng) < p_pt)
          gi = s.pt[gsl_rng_uniform_int(rng, s.npt)];
        else
          gi = s.ft[gsl_rng_uniform_int(rng, s.nft)];
        const struct pflex_study_group *g = &groups[gi];
        w.gi[j] = gi;
        pflex_alloc_job_init(&w.jt[j]);
        w.jt[j].name = g->name;
        w.jt[j].curve = g->curve;
        w.jt[j].gpus = g->gpus;
        w.jt[j].arch = g->arch;
        w.jt[j].task = g->task;
        w.jt[j].dram_copy = s.have_dram ? g->dram_copy : 0;
        w.jt[j].pfi = 0;
      }
      for (size_t c = 0; c < ncuts; c++) {
        double target;
        struct pflex_alloc_summary sum;
        if ((err = pflex_alloc_target_for_cut(w.jt, n, cuts[c], &target))) goto out;
        err = pflex_alloc_run(w.jt, n, PFLEX_ALLOC_ORACLE, target, &ao, w.r, &sum);
        if (err == -PFLEX_E_INFEASIBLE) continue; /* this workload cannot take this cut */
        if (err) goto out;
        double t_or = sum.total_tput;
        if ((err = pflex_alloc_run(w.jt, n, PFLEX_ALLOC_EQUAL, target, &ao, w.r, &sum))) goto out;
        double t_eq = sum.total_tput;
        for (size_t l = 0; l < nlines; l++) {
          const struct line *ln = &lines[l];
          switch (ln->st) {
          case PFLEX_ALLOC_EQUAL: w.tl[l] = t_eq; break;
          case PFLEX_ALLOC_ORACLE: w.tl[l] = t_or; break;
          case PFLEX_ALLOC_MOE_FT:
          case PFLEX_ALLOC_DRAM:
            if ((err = pflex_alloc_run(w.jt, n, ln->st, target, &ao, w.r, &sum))) goto out;
            w.tl[l] = sum.total_tput;
            break;
          case PFLEX_ALLOC_PFI:
            for (size_t j = 0; j < n; j++)
              w.jt[j].pfi = preds[ln->pred].pfi[w.gi[j]];
            if ((err = pflex_alloc_run(w.jt, n, PFLEX_ALLOC_PFI, target, &ao, w.r, &sum))) goto out;
            w.tl[l] = sum.total_tput;
            break;
          case PFLEX_ALLOC_OPTIMAL:
            /* All rounds of one prediction set come from one closed loop. */
            if (ln->round == 0 && (err = run_optimal(&s, &w, ln->pred, target, &ao, noise, tround)))
              goto out;
            w.tl[l] = tround[ln->round];
            break;
          default: break;
          }
        }
        size_t cell = (size_t)sc * ncuts + c;
        sum_or[cell] += t_or;
        sum_eq[cell] += t_eq;
        count[cell]++;
        for (size_t l = 0; l < nlines; l++) {
          acc[cell * nlines + l].sum_t += w.tl[l];
          if (w.tl[l] > t_or * (1 + PFLEX_STUDY_ORACLE_TOL)) acc[cell * nlines + l].above++;
        }
      }
    }
  }
  err = -ENOMEM;
  if (!(res = calloc(ncell * (nlines ? nlines : 1), sizeof *res))) goto out;
  for (int sc = 0; sc < PFLEX_SCENARIO_N; sc++) {
    if (!(opts->scenarios & (1u << sc))) continue;
    for (size_t c = 0; c < ncuts; c++) {
      size_t cell = (size_t)sc * ncuts + c;
      for (size_t l = 0; l < nlines; l++) {
        const struct acc *a = &acc[cell * nlines + l];
        struct pflex_study_result *r = &res[nres++];
        size_t cnt = count[cell];
        double gap = sum_or[cell] - sum_eq[cell];
        *r = (struct pflex_study_result){
            .scenario = (enum pflex_study_scenario)sc,
            .strategy = lines[l].st,
            .prediction = lines[l].pred == (size_t)-1 ? PFLEX_PRED_TRUE : preds[lines[l].pred].mode,
            .round = lines[l].round,
            .cut = cuts[c],
            .workloads = cnt,
            .tokens_per_s = cnt ? a->sum_t / (double)cnt : NAN,
            .loss_vs_oracle = sum_or[cell] > 0 ? 1 - a->sum_t / sum_or[cell] : NAN,
            /* Relative to the gap's size: no gap at a 0% cut, or where the
             * oracle and equal agree to rounding. */
            .gap_recovered =
                cnt && gap > 1e-12 * sum_or[cell] ? (a->sum_t - sum_eq[cell]) / gap : NAN,
            .gain_per_job = cnt ? (a->sum_t - sum_eq[cell]) / ((double)cnt * (double)n) : NAN,
            .above_oracle = a->above,
        };
      }
    }
  }
  *ret_results = res;
  *ret_n = nres;
  res = NULL;
  err = 0;
out:
  free(res);
  free(lines);
  free(acc);
  free(sum_or);
  free(sum_eq);
  free(count);
  work_free(&w, n);
  gsl_rng_free(rng);
  pflex_alloc_ctx_free(actx);
  gsl_rng_free(noise);
  study_release(&s);
  return err;
}
