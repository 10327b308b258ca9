/* Closed-loop curve refinement (include/pflex/refine.h): a job's prior
 * (predicted curve, candidate curves), its observations, and the refined
 * curve. The data shape's update lives here; the family shape's in
 * refine_family.c. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_min.h>

#include "base/fnv.h"
#include "core/refine_internal.h"
#include "core/steffen.h"
#include "pflex/error.h"
#include "pflex/jobs.h"
#include "pflex/refine.h"

#define NPFI PFLEX_REFINE_NPFI
#define PFI_LO 0.6 /* candidate PFIs: PFI_LO .. 10 PFI_LO, log-spaced */

double pflex_refine_candidate_pfi(double u) {
  /* exp, not pow: this runs in the posterior's inner search. */
  return PFI_LO * exp(u * (2.302585092994046 / (NPFI - 1))); /* ln(PFI_HI / PFI_LO) = ln 10 */
}

struct pflex_refine_prior {
  enum pflex_refine_shape shape;
  double pfi, p_min, p_max, t_max;
  struct pflex_curve_params base, pred; /* family defaults; the predicted member (family) */
  struct pflex_curve *curve;            /* the predicted curve */
  struct pflex_curve *cand[NPFI];       /* data shape: the candidates */
  double cpfi[NPFI];                    /* their PFIs, pflex_refine_candidate_pfi(m) */
  double spread_sd, spread;             /* data shape: prior_spread at the default prior_sd */
  struct refine_near *near;             /* data shape with templates: refine_near.c; or NULL */
  uint64_t digest;                      /* of everything above (prior_digest) */
};

struct pflex_refine {
  const struct pflex_refine_prior *prior;
  struct pflex_refine_opts o;
  size_t n;                  /* observations held, oldest first */
  double *w, *t;             /* max_obs each */
  double *gtab;              /* data shape: max_obs x NPFI, candidate m at observation k */
  double *pairs;             /* scratch: 2 max_obs */
  double *x;                 /* family shape: the observations' clocks (pflex__refine_family_fit) */
  double *anchors;           /* 2 max_obs + (max_obs + 1) + 2 (max_obs + 2): corr.ap, ar, aq, sx, sy */
  double u;                  /* data shape: the PFI's posterior mode on the candidate grid */
  double prior_spread;       /* data shape: prior_spread's, set at the first observation */
  double cost[NPFI];         /* data shape: post_cost at each candidate, the observations held */
  double nq[REFINE_NEAR_K];  /* data shape: the nearest templates' curve (corr.nq) */
  double *nd;                /* data shape: 2 REFINE_NEAR_MAX scratch (pflex__refine_near_fit) */
  gsl_min_fminimizer *min;   /* family shape */
  struct refine_corr corr;   /* the refined curve's state */
  struct pflex_curve *curve; /* callback curve on corr */
  uint64_t digest;           /* pflex_refine_digest: the prior's, the options, every
                                observation since the last reset, in order */
};

/* ---- content digests (pflex_refine_digest) ----------------------------------------- */

static uint64_t fnv_doubles(uint64_t h, const double *x, size_t n) {
  return pflex__fnv1a(h, x, n * sizeof *x);
}

static uint64_t fnv_params(uint64_t h, const struct pflex_curve_params *q) {
  const double v[4] = {q->c, q->knee, q->idle_frac, q->vratio}; /* no padding hashed */
  return fnv_doubles(h, v, 4);
}

/* Everything of the prior that the refined curve is computed from: its
 * scalars and parameters, its curves' content digests and the nearest
 * templates' table (the templates themselves are not kept). */
static uint64_t prior_digest(const struct pflex_refine_prior *p) {
  uint64_t h = pflex__fnv1a(PFLEX__FNV1A_INIT, &p->shape, sizeof p->shape);
  const double v[6] = {p->pfi, p->p_min, p->p_max, p->t_max, p->spread_sd, p->spread};
  h = fnv_doubles(h, v, 6);
  h = fnv_params(fnv_params(h, &p->base), &p->pred);
  h = fnv_doubles(h, p->cpfi, NPFI);
  uint64_t d[NPFI + 1];
  d[0] = pflex_curve_digest(p->curve);
  for (size_t m = 0; m < NPFI; m++)
    d[m + 1] = p->cand[m] ? pflex_curve_digest(p->cand[m]) : 0;
  h = pflex__fnv1a(h, d, sizeof d);
  if (p->near) {
    h = pflex__fnv1a(h, &p->near->n, sizeof p->near->n);
    h = fnv_doubles(h, p->near->pw, REFINE_NEAR_K);
    h = fnv_doubles(h, p->near->rel, p->near->n * REFINE_NEAR_K);
  }
  return h;
}

/* r's digest with no observation: its prior's and its options. */
static uint64_t start_digest(const struct pflex_refine *r) {
  const double o[3] = {r->o.noise, r->o.prior_sd, r->o.knot_merge};
  uint64_t h = pflex__fnv1a(0x84222325cbf29ce4ull, &r->prior->digest, sizeof r->prior->digest);
  h = fnv_doubles(h, o, 3);
  return pflex__fnv1a(h, &r->o.max_obs, sizeof r->o.max_obs);
}

/* ---- the predicted curve ---------------------------------------------------------- */

static int job_check(const struct pflex_refine_job *j) {
  if (!j || !isfinite(j->pfi) || !(j->p_min > 0) || !(j->p_min <= j->p_max) ||
      !isfinite(j->p_max) || !(j->t_max > 0) || !isfinite(j->t_max) || j->gpus <= 0 ||
      (j->ngrid && !j->grid) || (j->ntemplates && !j->templates) || !(j->bandwidth >= 0) ||
      (j->shape != PFLEX_REFINE_DATA && j->shape != PFLEX_REFINE_FAMILY))
    return -EINVAL;
  return 0;
}

/* The job's Eq. 1 grid: its own, or the paper's placed in its GPU's limit
 * range (for a type pflex does not know, the per-GPU range of its powers);
 * returns its size. */
static size_t job_grid(const struct pflex_refine_job *j, double *grid, size_t cap) {
  if (!j->grid)
    return pflex_jobs_gpu_grid(j->gpu ? j->gpu : "H200", j->p_min / j->gpus, j->p_max / j->gpus,
                               j->gpus, j->p_max, grid);
  size_t n = j->ngrid < cap ? j->ngrid : cap;
  memcpy(grid, j->grid, n * sizeof *grid);
  return n;
}

/* The family member with a PFI on the grid; outside the family's range, its
 * nearest end. */
static int family_curve(const struct pflex_refine_job *j, const struct pflex_curve_params *base,
                        double pfi, struct pflex_curve **ret) {
  double grid[16];
  size_t n = job_grid(j, grid, 16);
  int err = n ? pflex_curve_from_pfi(pfi, j->p_min, j->p_max, j->t_max, grid, n, base, ret)
              : -PFLEX_E_NOPOINTS;
  if (err != -ERANGE && err != -PFLEX_E_NOPOINTS) return err;
  struct pflex_curve_params q = *base;
  if (err == -PFLEX_E_NOPOINTS) {
    q.c = 1; /* no grid point below P_max: nothing to match, the default member */
  } else if (pfi < 1.0) {
    q.c = 1; /* the least PFI the family reaches */
    q.vratio = 1;
  } else {
    q.c = 1e-4; /* the most */
  }
  return pflex_curve_new_parametric(&q, j->p_min, j->p_max, j->t_max, ret);
}

int pflex_refine_templates_new(const struct pflex_refine_job *job,
                               struct pflex_curve_templates **ret) {
  if (job_check(job) || !job->ntemplates || !ret) return -EINVAL;
  double grid[16];
  size_t n = job_grid(job, grid, 16);
  return n ? pflex_curve_templates_new(job->p_min, job->p_max, job->t_max, grid, n, job->templates,
                                       job->ntemplates, ret)
           : -PFLEX_E_NOPOINTS;
}

/* The templates' curve with PFI v on the job's grid (n points): from its
 * table where it has one, else from its templates. */
static int template_curve(const struct pflex_refine_job *j, const double *grid, size_t n, double v,
                          struct pflex_curve **ret) {
  double bw = j->bandwidth > 0 ? j->bandwidth : 0.25;
  if (!j->table)
    return pflex_curve_from_pfi_templates(v, j->p_min, j->p_max, j->t_max, grid, n, j->templates,
                                          j->ntemplates, bw, ret);
  if (!pflex_curve_templates_match(j->table, j->p_min, j->p_max, j->t_max, grid, n)) return -EINVAL;
  return pflex_curve_from_templates(j->table, v, j->use, bw, ret);
}

/* The data shape's curve with a PFI: the templates' shape, or without
 * templates the family's member. */
static int data_curve(const struct pflex_refine_job *j, const struct pflex_curve_params *base,
                      double pfi, struct pflex_curve **ret) {
  if (j->ntemplates == 0 && !j->table) return family_curve(j, base, pfi, ret);
  double grid[16];
  size_t n = job_grid(j, grid, 16);
  /* A PFI the model predicts at or below 0 says "cut last": the least
   * elastic shape the templates give. */
  double v = pfi > 0.05 ? pfi : 0.05;
  int err = n ? template_curve(j, grid, n, v, ret) : -PFLEX_E_NOPOINTS;
  if (err != -PFLEX_E_NOPOINTS) return err;
  /* No grid point below P_max: nothing to match; the family's default member. */
  return pflex_curve_new_parametric(base, j->p_min, j->p_max, j->t_max, ret);
}

static int shaped_curve(const struct pflex_refine_job *j, const struct pflex_curve_params *base,
                        double pfi, struct pflex_curve **ret) {
  return j->shape == PFLEX_REFINE_FAMILY ? family_curve(j, base, pfi, ret)
                                         : data_curve(j, base, pfi, ret);
}

int pflex_refine_predicted_curve(const struct pflex_refine_job *job,
                                 struct pflex_curve **ret_curve) {
  int err = job_check(job);
  if (err || !ret_curve) return err ? err : -EINVAL;
  struct pflex_curve_params base;
  pflex_curve_params_default(job->gpu, job->gpus, job->p_max, &base);
  return shaped_curve(job, &base, job->pfi, ret_curve);
}

/* ---- the prior -------------------------------------------------------------------- */

static double prior_spread(const double *cpfi, double pfi0, double sd);

/* The prior's curves: the predicted one and, for the data shape, the
 * candidates, all from one reading of the templates. */
static int prior_curves(const struct pflex_refine_job *job, struct pflex_refine_prior *p) {
  struct pflex_refine_job j = *job;
  struct pflex_curve_templates *own = NULL;
  if (j.shape == PFLEX_REFINE_DATA && !j.table && j.ntemplates) {
    int err = pflex_refine_templates_new(&j, &own);
    if (err && err != -PFLEX_E_NOPOINTS) return err; /* none below P_max: data_curve's fallback */
    j.table = own;
  }
  int err = shaped_curve(&j, &p->base, j.pfi, &p->curve);
  if (!err && j.shape == PFLEX_REFINE_FAMILY) err = pflex_curve_get_params(p->curve, &p->pred);
  for (size_t m = 0; !err && j.shape == PFLEX_REFINE_DATA && m < NPFI; m++)
    err = data_curve(&j, &p->base, pflex_refine_candidate_pfi((double)m), &p->cand[m]);
  /* The nearest templates' shape needs the templates themselves and a range
   * wide enough for its REFINE_NEAR_K powers to increase. */
  if (!err && j.shape == PFLEX_REFINE_DATA && j.table && j.ntemplates &&
      j.p_max - j.p_min > 1e-6 * j.p_max)
    err = pflex__refine_near_new(j.p_min, j.p_max, j.templates, j.ntemplates, j.use, &p->near);
  pflex_curve_templates_free(own);
  return err;
}

int pflex_refine_prior_new(const struct pflex_refine_job *job,
                           struct pflex_refine_prior **ret_prior) {
  int err = job_check(job);
  if (err || !ret_prior) return err ? err : -EINVAL;
  struct pflex_refine_prior *p = calloc(1, sizeof *p);
  if (!p) return -ENOMEM;
  *p = (struct pflex_refine_prior){.shape = job->shape,
                                   .pfi = job->pfi,
                                   .p_min = job->p_min,
                                   .p_max = job->p_max,
                                   .t_max = job->t_max};
  for (size_t m = 0; m < NPFI; m++)
    p->cpfi[m] = pflex_refine_candidate_pfi((double)m);
  /* The prior's spread depends on the PFI and prior_sd alone: once per
   * prior at the default prior_sd, not at every job's first observation. */
  struct pflex_refine_opts def;
  pflex_refine_opts_init(&def);
  p->spread_sd = def.prior_sd;
  p->spread = prior_spread(p->cpfi, p->pfi, p->spread_sd);
  pflex_curve_params_default(job->gpu, job->gpus, job->p_max, &p->base);
  if ((err = prior_curves(job, p))) {
    pflex_refine_prior_free(p);
    return err;
  }
  p->digest = prior_digest(p);
  *ret_prior = p;
  return 0;
}

void pflex_refine_prior_free(struct pflex_refine_prior *p) {
  if (!p) return;
  pflex_curve_free(p->curve);
  for (size_t m = 0; m < NPFI; m++)
    pflex_curve_free(p->cand[m]);
  pflex__refine_near_free(p->near);
  free(p);
}

const struct pflex_curve *pflex_refine_prior_curve(const struct pflex_refine_prior *p) {
  return p ? p->curve : NULL;
}

/* ---- the data shape's update ------------------------------------------------------- */

/* Every observation becomes an exact knot of a monotone curve that follows
 * the re-predicted curve's shape between knots. Observations within
 * opts.knot_merge of P_max of each other are averaged (their difference is
 * mostly noise, and a slope between them would be noise over a short
 * distance: at 0.5% noise a chord over 0.02 P_max errs by about a third of
 * a typical slope; an unshrunk loop acts on that in full, a shrunk one only
 * within its band, and there the chords of the small moves it makes gained,
 * docs/study.md "Eighth wave");
 * knots are made non-decreasing by isotonic regression and capped at T_max;
 * (P_max, T_max) is the last knot. Between two knots the re-predicted curve
 * is mapped affinely onto the segment between them; below the lowest knot it
 * is shifted to pass through it (its slopes kept), floored at 1e-3 T_max. */
static void knot_set(struct refine_corr *c, const double *w, const double *t, size_t nobs,
                     double *pairs, double merge) {
  size_t m = 0;
  for (size_t k = 0; k < nobs; k++) {
    if (!(w[k] < c->p_max * (1 - 1e-3))) continue; /* at P_max: nothing new */
    pairs[2 * m] = w[k];
    pairs[2 * m + 1] = t[k];
    m++;
  }
  pflex__refine_anchors_merge(c, pairs, m, merge * c->p_max);
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

static double prior_eval(const struct refine_corr *c, double p) {
  if (c->near) {
    double lo = c->npw[0], hi = c->npw[REFINE_NEAR_K - 1];
    double x = p < lo ? lo : p > hi ? hi : p;
    size_t i = pflex__steffen_interval(c->npw, REFINE_NEAR_K, x);
    return pflex__steffen_at(c->npw, c->npoly, i, x);
  }
  double t = pflex_curve_eval(c->prior, p);
  return c->blend > 0 ? t + c->blend * (pflex_curve_eval(c->prior2, p) - t) : t;
}

/* The knots as a map from the re-predicted curve's throughput to the
 * refined one, through (q(P_min), its shift to the lowest knot), each
 * (q(knot), observed) and (q(P_max), T_max): a Steffen interpolant, monotone
 * and C1. The segments' affine maps it replaces put a kink at every observed
 * power, where the optimizer then parked the job (its marginal value jumps
 * there), so that the next round observed it where it was and learned
 * nothing new: two noiseless rounds left 80% of the jobs where they had
 * been observed (measured on the mixed clusters of
 * tests/integration/study_fair.sh, docs/study.md). Where the re-predicted
 * curve is flat between nodes, or with fewer than 3 nodes, the segments
 * stay (smooth false). */
static void knot_map(struct refine_corr *c) {
  size_t m = 0;
  double q0 = prior_eval(c, c->p_min);
  if (c->ap[0] > c->p_min * (1 + 1e-9) && q0 < c->aq[0]) {
    double y = q0 + c->ar[0] - c->aq[0];
    c->sx[m] = q0;
    c->sy[m++] = fmin(fmax(y, 1e-3 * c->t_max), c->ar[0]);
  }
  for (size_t k = 0; k <= c->n; k++) {
    c->sx[m] = c->aq[k];
    c->sy[m++] = k < c->n ? c->ar[k] : c->t_max;
  }
  bool increasing = m >= 3;
  for (size_t i = 1; i < m && increasing; i++)
    increasing = c->sx[i] > c->sx[i - 1] + 1e-12 * c->t_max;
  c->sn = m;
  c->smooth = increasing;
  if (increasing) pflex__steffen_poly(c->sx, c->sy, m, c->spoly);
}

/* The re-predicted curve at the knots and at P_max, once per update; then
 * the map through them. */
static void knot_cache(struct refine_corr *c) {
  for (size_t k = 0; k < c->n; k++)
    c->aq[k] = prior_eval(c, c->ap[k]);
  c->aq[c->n] = prior_eval(c, c->p_max);
  if (c->n) knot_map(c);
}

/* The refined curve through the smooth map (knot_map). */
static double knot_map_eval(const struct refine_corr *c, double p) {
  double x = prior_eval(c, p), lo = c->sx[0], hi = c->sx[c->sn - 1];
  x = x < lo ? lo : x > hi ? hi : x;
  double t = pflex__steffen_at(c->sx, c->spoly, pflex__steffen_interval(c->sx, c->sn, x), x);
  return t > 1e-3 * c->t_max ? t : 1e-3 * c->t_max;
}

static double knot_eval(void *ctx, double p) {
  const struct refine_corr *c = ctx;
  if (p >= c->p_max) return c->t_max;
  if (c->n == 0) return prior_eval(c, p);
  if (c->smooth) return knot_map_eval(c, p);
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

/* Negative log posterior of the job's PFI at candidate position u
 * (fractional: its curve the blend of the two neighbouring candidates):
 * Gaussian prior on the PFI around the prediction, Gaussian relative noise on
 * each observed throughput. */
struct pfi_post {
  double pfi0, sd, noise;
  const double *cpfi; /* NPFI: the candidates' PFIs */
  const double *cost; /* NPFI: the cost at each candidate (post_cost at u = m) */
  const double *tab;  /* n x NPFI: candidate m at observation k, tab[k * NPFI + m] */
  const double *t;
  size_t n;
};

/* The prior term at PFI v. */
static double prior_cost(const struct pfi_post *q, double v) {
  double z = (v - q->pfi0) / q->sd;
  return z * z;
}

/* Observation k's term at u = m + a (m <= NPFI - 2). */
static double obs_cost(const struct pfi_post *q, size_t k, size_t m, double a) {
  const double *row = &q->tab[k * NPFI];
  double t = row[m] + a * (row[m + 1] - row[m]);
  double e = (t - q->t[k]) / (q->noise * q->t[k]);
  return e * e;
}

/* u's segment: its left candidate m and the fraction a past it. */
static size_t post_segment(double u, double *ret_a) {
  size_t m = (size_t)u;
  if (m >= NPFI - 1) m = NPFI - 2;
  *ret_a = u - (double)m;
  return m;
}

static double post_cost(const struct pfi_post *q, double u) {
  double a, s = prior_cost(q, pflex_refine_candidate_pfi(u));
  size_t m = post_segment(u, &a);
  for (size_t k = 0; k < q->n; k++)
    s += obs_cost(q, k, m, a);
  return s;
}

/* The costs at the candidates, each sum in post_cost's order: from the
 * first observation on (from), or the newest one added (!from). */
static void post_costs(const struct pfi_post *q, bool from, double *cost) {
  for (size_t i = 0; i < NPFI; i++) {
    double a;
    size_t m = post_segment((double)i, &a);
    if (from) cost[i] = prior_cost(q, q->cpfi[i]);
    for (size_t k = from ? 0 : q->n - 1; k < q->n; k++)
      cost[i] += obs_cost(q, k, m, a);
  }
}

/* The posterior mode of the PFI on the candidates: the best candidate, then
 * golden-section search between its neighbours. */
static double pfi_mode(const struct pfi_post *q) {
  size_t best = 0;
  double fb = INFINITY;
  for (size_t m = 0; m < NPFI; m++)
    if (q->cost[m] < fb) {
      fb = q->cost[m];
      best = m;
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
  return fb <= (f1 < f2 ? f1 : f2) ? (double)best : u;
}

static struct pfi_post data_post(const struct pflex_refine *r) {
  return (struct pfi_post){.pfi0 = r->prior->pfi,
                           .sd = r->o.prior_sd,
                           .noise = r->o.noise > 1e-4 ? r->o.noise : 1e-4,
                           .cpfi = r->prior->cpfi,
                           .cost = r->cost,
                           .tab = r->gtab,
                           .t = r->t,
                           .n = r->n};
}

/* SD of the PFI over the candidates under posterior weights exp(-f / 2)
 * (each candidate weighted by its PFI, the log grid's spacing). */
static double post_spread(const double *cpfi, const double *f) {
  double fmin = INFINITY;
  for (size_t m = 0; m < NPFI; m++)
    if (f[m] < fmin) fmin = f[m];
  double sw = 0, s1 = 0, s2 = 0;
  for (size_t m = 0; m < NPFI; m++) {
    /* Below -746 exp is 0 in doubles: the weight without the call. */
    double v = cpfi[m], x = -0.5 * (f[m] - fmin), w = !(x <= -746) ? v * exp(x) : 0;
    sw += w, s1 += w * v, s2 += w * v * v;
  }
  double mean = s1 / sw, var = s2 / sw - mean * mean;
  return var > 0 ? sqrt(var) : 0;
}

/* The prior's spread around pfi0 with SD sd: post_spread on the prior
 * terms alone. */
static double prior_spread(const double *cpfi, double pfi0, double sd) {
  struct pfi_post q = {.pfi0 = pfi0, .sd = sd};
  double f[NPFI];
  for (size_t m = 0; m < NPFI; m++)
    f[m] = prior_cost(&q, cpfi[m]);
  return post_spread(cpfi, f);
}

/* With the prior's nearest-templates table, the re-predicted curve is the
 * mean of the templates nearest the knots (refine_near.c), at least twice
 * the observation noise wide; else the candidates' blend. */
static void near_shape(struct pflex_refine *r) {
  struct refine_corr *c = &r->corr;
  const struct refine_near *nb = r->prior->near;
  c->near = false;
  if (!nb || !c->npoly || c->n == 0) return;
  pflex__refine_near_fit(nb, c->ap, c->ar, c->n, c->t_max, 2 * r->o.noise, r->nd, r->nq);
  c->npw = nb->pw;
  c->nq = r->nq;
  c->near = pflex__steffen_ok(c->npw, REFINE_NEAR_K);
  if (c->near) pflex__steffen_poly(c->npw, c->nq, REFINE_NEAR_K, c->npoly);
}

/* fresh: the costs from all observations (the first, or the window
 * moved), else the newest one added to them. */
static void data_update(struct pflex_refine *r, bool fresh) {
  struct refine_corr *c = &r->corr;
  /* The candidates at the new observation, once. */
  for (size_t m = 0; m < NPFI; m++)
    r->gtab[(r->n - 1) * NPFI + m] = pflex_curve_eval(r->prior->cand[m], r->w[r->n - 1]);
  struct pfi_post q = data_post(r);
  post_costs(&q, fresh, r->cost);
  r->u = pfi_mode(&q);
  size_t m = (size_t)r->u;
  if (m >= NPFI - 1) m = NPFI - 2;
  c->prior = r->prior->cand[m];
  c->prior2 = r->prior->cand[m + 1];
  c->blend = r->u - (double)m;
  knot_set(c, r->w, r->t, r->n, r->pairs, r->o.knot_merge);
  near_shape(r);
  knot_cache(c);
}

/* ---- per-job state ---------------------------------------------------------------- */

void pflex_refine_opts_init(struct pflex_refine_opts *o) {
  *o = (struct pflex_refine_opts){
      .noise = 0.005, .prior_sd = 0.3, .max_obs = 100, .knot_merge = PFLEX_REFINE_KNOT_MERGE};
}

int pflex_refine_new(const struct pflex_refine_prior *prior, const struct pflex_refine_opts *opts,
                     struct pflex_refine **ret) {
  struct pflex_refine_opts def;
  if (!opts) {
    pflex_refine_opts_init(&def);
    opts = &def;
  }
  if (!prior || !ret || !(opts->noise >= 0) || !isfinite(opts->noise) || !(opts->prior_sd > 0) ||
      !isfinite(opts->prior_sd) || opts->max_obs == 0 || opts->max_obs > ((size_t)1 << 24) ||
      !(opts->knot_merge >= 0 && opts->knot_merge <= 0.5))
    return -EINVAL;
  struct pflex_refine *r = calloc(1, sizeof *r);
  if (!r) return -ENOMEM;
  size_t k = opts->max_obs;
  r->prior = prior;
  r->o = *opts;
  if (r->o.knot_merge == 0) r->o.knot_merge = PFLEX_REFINE_KNOT_MERGE; /* unset: the default */
  r->w = calloc(k, sizeof *r->w);
  r->t = calloc(k, sizeof *r->t);
  r->pairs = calloc(2 * k, sizeof *r->pairs);
  r->x = calloc(k, sizeof *r->x);
  r->anchors = calloc(3 * k + 1 + 2 * (k + 2) + 4 * (k + 1), sizeof *r->anchors);
  if (prior->shape == PFLEX_REFINE_DATA) {
    r->gtab = calloc(k * NPFI, sizeof *r->gtab);
    r->nd = calloc(2 * REFINE_NEAR_MAX, sizeof *r->nd);
    r->corr.npoly = malloc(4 * (REFINE_NEAR_K - 1) * sizeof *r->corr.npoly);
  } else {
    r->min = gsl_min_fminimizer_alloc(gsl_min_fminimizer_brent);
  }
  struct refine_corr *c = &r->corr;
  c->p_min = prior->p_min;
  c->p_max = prior->p_max;
  c->t_max = prior->t_max;
  c->ap = r->anchors;
  c->ar = c->ap + k;
  c->aq = c->ar + k;
  c->sx = c->aq + k + 1;
  c->sy = c->sx + k + 2;
  c->spoly = c->sy + k + 2;
  struct pflex_curve_fn fn = {
      .eval = prior->shape == PFLEX_REFINE_DATA ? knot_eval : pflex__refine_corr_eval, .ctx = c};
  int err = -ENOMEM;
  if (r->w && r->t && r->pairs && r->x && r->anchors && ((r->gtab && r->nd && c->npoly) || r->min))
    err = pflex_curve_new_callback(&fn, prior->p_min, prior->p_max, &r->curve);
  if (err) {
    pflex_refine_free(r);
    return err;
  }
  r->digest = start_digest(r);
  *ret = r;
  return 0;
}

void pflex_refine_free(struct pflex_refine *r) {
  if (!r) return;
  pflex_curve_free(r->curve);
  if (r->min) gsl_min_fminimizer_free(r->min);
  free(r->corr.npoly);
  free(r->nd);
  free(r->w);
  free(r->t);
  free(r->gtab);
  free(r->pairs);
  free(r->x);
  free(r->anchors);
  free(r);
}

int pflex_refine_reset(struct pflex_refine *r, const struct pflex_refine_prior *prior) {
  if (!r || !prior || prior->shape != r->prior->shape) return -EINVAL;
  struct refine_corr *c = &r->corr;
  if (prior->p_min != c->p_min || prior->p_max != c->p_max) {
    struct pflex_curve_fn fn = {
        .eval = prior->shape == PFLEX_REFINE_DATA ? knot_eval : pflex__refine_corr_eval, .ctx = c};
    struct pflex_curve *curve;
    int err = pflex_curve_new_callback(&fn, prior->p_min, prior->p_max, &curve);
    if (err) return err;
    pflex_curve_free(r->curve);
    r->curve = curve;
  }
  r->prior = prior;
  r->n = 0;
  r->digest = start_digest(r);
  c->near = false;
  c->p_min = prior->p_min;
  c->p_max = prior->p_max;
  c->t_max = prior->t_max;
  return 0;
}

/* Makes room for one more observation: the oldest goes when the window is full. */
static void drop_oldest(struct pflex_refine *r) {
  size_t n = r->n - 1;
  memmove(r->w, r->w + 1, n * sizeof *r->w);
  memmove(r->t, r->t + 1, n * sizeof *r->t);
  if (r->gtab) memmove(r->gtab, r->gtab + NPFI, n * NPFI * sizeof *r->gtab);
  r->n = n;
}

int pflex_refine_observe(struct pflex_refine *r, double power_w, double tput) {
  if (!r || !(power_w > 0) || !isfinite(power_w) || !(tput > 0) || !isfinite(tput))
    return -EINVAL;
  bool fresh = r->n == 0 || r->n == r->o.max_obs;
  if (r->n == r->o.max_obs) drop_oldest(r);
  r->w[r->n] = power_w;
  r->t[r->n] = tput;
  r->n++;
  const double obs[2] = {power_w, tput};
  r->digest = fnv_doubles(r->digest, obs, 2);
  const struct pflex_refine_prior *p = r->prior;
  if (p->shape == PFLEX_REFINE_DATA) {
    /* The prior's spread depends on the prior alone: once per job, not at
     * every confidence query (once per prior at the default prior_sd). */
    if (r->n == 1)
      r->prior_spread = r->o.prior_sd == p->spread_sd ? p->spread
                                                      : prior_spread(p->cpfi, p->pfi, r->o.prior_sd);
    data_update(r, fresh);
    return 0;
  }
  double u;
  /* Cannot fail: the inputs are checked and the scratch is r's. */
  pflex__refine_family_fit(&p->base, &p->pred, r->o.prior_sd, r->o.noise, p->p_max, p->t_max, r->w, r->t,
                    r->n, r->x, r->min, &r->corr.q, &u);
  pflex__refine_corr_set(&r->corr, r->w, r->t, r->n, r->pairs);
  pflex__refine_corr_tabulate(&r->corr);
  return 0;
}

double pflex_refine_spread(const struct pflex_refine *r, double p0_w, double p1_w) {
  if (!r || r->n == 0 || !r->corr.near || !(p1_w > p0_w)) return NAN;
  return pflex__refine_near_spread(r->prior->near, r->nd, p0_w, p1_w);
}

size_t pflex_refine_count(const struct pflex_refine *r) {
  return r ? r->n : 0;
}

const struct pflex_curve *pflex_refine_curve(const struct pflex_refine *r) {
  if (!r) return NULL;
  return r->n ? r->curve : r->prior->curve;
}

uint64_t pflex_refine_digest(const struct pflex_refine *r) {
  if (!r) return 0;
  return r->n ? r->digest : pflex_curve_digest(r->prior->curve);
}

double pflex_refine_confidence(const struct pflex_refine *r) {
  if (!r || r->n == 0) return 0;
  double post, prior;
  if (r->prior->shape == PFLEX_REFINE_DATA) {
    post = post_spread(r->prior->cpfi, r->cost);
    prior = r->prior_spread;
  } else {
    const struct pflex_refine_prior *p = r->prior;
    pflex__refine_family_spread(&p->base, &p->pred, r->o.prior_sd, r->o.noise, p->p_max, p->t_max, r->w,
                         r->t, r->n, r->x, &post, &prior);
  }
  if (!(prior > 0)) return 0;
  double c = 1 - post / prior;
  return c < 0 ? 0 : c > 1 ? 1 : c;
}
