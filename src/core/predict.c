/* PFI predictors and their cross-validation (include/pflex/predict.h). */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_multifit.h>
#include <gsl/gsl_statistics_double.h>

#include "pflex/predict.h"

/* Singular values below this share of the largest are treated as zero, so an
 * underdetermined or collinear design gets the minimum-norm solution. */
#define SV_RTOL 1e-10

const char *pflex_model_kind_name(enum pflex_model_kind kind) {
  switch (kind) {
  case PFLEX_MODEL_OLS: return "ols";
  case PFLEX_MODEL_RIDGE: return "ridge";
  case PFLEX_MODEL_PRIOR: return "prior";
  }
  return "unknown";
}

int pflex_model_kind_parse(const char *s, enum pflex_model_kind *ret) {
  static const enum pflex_model_kind kinds[] = {PFLEX_MODEL_OLS, PFLEX_MODEL_RIDGE,
                                                PFLEX_MODEL_PRIOR};
  for (size_t k = 0; k < 3; k++)
    if (strcmp(s, pflex_model_kind_name(kinds[k])) == 0) {
      *ret = kinds[k];
      return 0;
    }
  return -EINVAL;
}

void pflex_ridge_default_grid(double grid[PFLEX_RIDGE_GRID_N]) {
  for (int k = 0; k < PFLEX_RIDGE_GRID_N; k++)
    grid[k] = pow(10.0, -3.0 + k / 4.0);
}

void pflex_linmodel_init(struct pflex_linmodel *m) {
  memset(m, 0, sizeof *m);
  m->inner_mse = NAN;
}

void pflex_linmodel_release(struct pflex_linmodel *m) {
  if (!m) return;
  free(m->coef);
  free(m->mean);
  free(m->sd);
  free(m->beta_std);
  pflex_linmodel_init(m);
}

/* A column whose SD is at most this share of its mean's size is constant. */
#define CONST_RTOL 1e-12

static bool relative_sd_above(double sd, double mean, double rtol) {
  return sd > rtol * (fabs(mean) + 1e-300);
}

/* Standardizes n rows into an m x p matrix (m >= n; rows past n stay zero,
 * which leaves least-squares solutions unchanged and lets GSL's SVD, which
 * wants at least as many rows as columns, handle p > n). Also centres y. */
struct stdz {
  gsl_matrix *z;
  gsl_vector *yc;
  double *mean, *sd, ybar;
  bool *constant; /* column j left as zeros */
};

static void stdz_free(struct stdz *s) {
  gsl_matrix_free(s->z);
  gsl_vector_free(s->yc);
  free(s->mean);
  free(s->sd);
  free(s->constant);
}

static int stdz_make(const double *x, const double *y, size_t n, size_t p, struct stdz *s) {
  memset(s, 0, sizeof *s);
  size_t m = n > p ? n : p;
  s->z = gsl_matrix_calloc(m, p ? p : 1);
  s->yc = gsl_vector_calloc(m);
  s->mean = calloc(p ? p : 1, sizeof *s->mean);
  s->sd = calloc(p ? p : 1, sizeof *s->sd);
  s->constant = calloc(p ? p : 1, sizeof *s->constant);
  if (!s->z || !s->yc || !s->mean || !s->sd || !s->constant) {
    stdz_free(s);
    return -ENOMEM;
  }
  s->ybar = gsl_stats_mean(y, 1, n);
  for (size_t i = 0; i < n; i++)
    gsl_vector_set(s->yc, i, y[i] - s->ybar);
  for (size_t j = 0; j < p; j++) {
    s->mean[j] = gsl_stats_mean(x + j, p, n);
    double sd = n > 1 ? gsl_stats_sd_m(x + j, p, n, s->mean[j]) : 0;
    /* A constant column (relative to its size) carries no information on
     * these rows: leave it as zeros so that it gets coefficient 0. */
    bool constant = !relative_sd_above(sd, s->mean[j], CONST_RTOL);
    s->sd[j] = constant ? 1.0 : sd;
    s->constant[j] = constant;
    for (size_t i = 0; i < n; i++)
      gsl_matrix_set(s->z, i, j, constant ? 0.0 : (x[i * p + j] - s->mean[j]) / sd);
  }
  return 0;
}

/* SVD of the standardized matrix: z = U diag(S) V^T, U overwrites a copy. */
struct svd {
  gsl_matrix *u, *v;
  gsl_vector *s;
};

static void svd_free(struct svd *d) {
  gsl_matrix_free(d->u);
  gsl_matrix_free(d->v);
  gsl_vector_free(d->s);
}

static int svd_make(const gsl_matrix *z, struct svd *d) {
  memset(d, 0, sizeof *d);
  size_t p = z->size2;
  d->u = gsl_matrix_alloc(z->size1, p);
  d->v = gsl_matrix_alloc(p, p);
  d->s = gsl_vector_alloc(p);
  gsl_vector *work = gsl_vector_alloc(p);
  int err = -ENOMEM;
  if (d->u && d->v && d->s && work) {
    gsl_matrix_memcpy(d->u, z);
    err = gsl_linalg_SV_decomp(d->u, d->v, d->s, work) ? -PFLEX_E_DATA : 0;
  }
  gsl_vector_free(work);
  if (err) svd_free(d);
  return err;
}

/* Ridge coefficients on standardized features: b = V diag(s/(s^2+l)) U^T yc. */
static void svd_ridge(const struct svd *d, const gsl_vector *yc, double lambda, double *b) {
  size_t p = d->v->size1, m = d->u->size1;
  double s0 = gsl_vector_get(d->s, 0);
  for (size_t j = 0; j < p; j++)
    b[j] = 0;
  for (size_t k = 0; k < p; k++) {
    double sk = gsl_vector_get(d->s, k);
    if (!(sk > SV_RTOL * s0)) continue;
    double uty = 0;
    for (size_t i = 0; i < m; i++)
      uty += gsl_matrix_get(d->u, i, k) * gsl_vector_get(yc, i);
    double f = sk / (sk * sk + lambda) * uty;
    for (size_t j = 0; j < p; j++)
      b[j] += gsl_matrix_get(d->v, j, k) * f;
  }
}

/* Leave-one-out MSE of ridge at one penalty, in closed form: for a linear
 * smoother with fixed design the LOO residual is e_i / (1 - h_ii), with
 * h_ii = 1/n + sum_k U_ik^2 s_k^2 / (s_k^2 + lambda) (the 1/n is the
 * unpenalized intercept; Z's columns are centred, so they are orthogonal to it).
 * With r2, each row's squared LOO residual too (INFINITY where 1 - h_ii is
 * below 1e-10, which makes the MSE infinite). */
static double ridge_loo_mse(const struct svd *d, const struct stdz *s, size_t n, double lambda,
                            double *b, double *r2) {
  size_t p = d->v->size1;
  double s0 = gsl_vector_get(d->s, 0);
  svd_ridge(d, s->yc, lambda, b);
  double sse = 0;
  for (size_t i = 0; i < n; i++) {
    double fit = 0, h = 1.0 / (double)n;
    for (size_t j = 0; j < p; j++)
      fit += gsl_matrix_get(s->z, i, j) * b[j];
    for (size_t k = 0; k < p; k++) {
      double sk = gsl_vector_get(d->s, k);
      if (!(sk > SV_RTOL * s0)) continue;
      double u = gsl_matrix_get(d->u, i, k);
      h += u * u * sk * sk / (sk * sk + lambda);
    }
    double e = (gsl_vector_get(s->yc, i) - fit) / (1.0 - h);
    double e2 = 1.0 - h < 1e-10 ? INFINITY : e * e;
    if (r2) r2[i] = e2;
    if (!r2 && isinf(e2)) return INFINITY;
    sse += e2;
  }
  return sse / (double)n;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The ridge grid (NULL: the default) checked and sorted ascending, in
 * *ret (freed by the caller). */
static int ridge_grid(const double *grid, size_t ngrid, double **ret, size_t *ret_n) {
  double dgrid[PFLEX_RIDGE_GRID_N];
  if (!grid) {
    pflex_ridge_default_grid(dgrid);
    grid = dgrid;
    ngrid = PFLEX_RIDGE_GRID_N;
  }
  if (ngrid == 0) return -EINVAL;
  for (size_t k = 0; k < ngrid; k++)
    if (!(grid[k] >= 0) || !isfinite(grid[k])) return -EINVAL;
  if (!(*ret = malloc(ngrid * sizeof **ret))) return -ENOMEM;
  memcpy(*ret, grid, ngrid * sizeof **ret);
  qsort(*ret, ngrid, sizeof **ret, cmp_double);
  *ret_n = ngrid;
  return 0;
}

int pflex_ridge_select(const double *x, const double *y, size_t n, size_t p, const double *grid,
                       size_t ngrid, double *ret_lambda, double *ret_mse) {
  double *sorted = NULL;
  int err = ridge_grid(grid, ngrid, &sorted, &ngrid);
  if (err) return err;
  if (n < 3) {
    free(sorted);
    return -PFLEX_E_NOPOINTS;
  }
  double *b = malloc((p ? p : 1) * sizeof *b);
  struct stdz s;
  struct svd d;
  if (!b) err = -ENOMEM;
  if (err) goto out;
  if (p == 0) { /* nothing to penalize */
    *ret_lambda = sorted[ngrid - 1];
    if (ret_mse) {
      double ybar = gsl_stats_mean(y, 1, n), sse = 0;
      for (size_t i = 0; i < n; i++) {
        double e = (y[i] - ybar) * (double)n / (double)(n - 1);
        sse += e * e;
      }
      *ret_mse = sse / (double)n;
    }
    goto out;
  }
  err = stdz_make(x, y, n, p, &s);
  if (err) goto out;
  err = svd_make(s.z, &d);
  if (err) {
    stdz_free(&s);
    goto out;
  }
  double best = INFINITY, best_l = sorted[ngrid - 1];
  for (size_t k = 0; k < ngrid; k++) {
    double mse = ridge_loo_mse(&d, &s, n, sorted[k], b, NULL);
    /* Ascending grid and <=: an exact tie goes to the larger penalty. */
    if (mse <= best * (1 + 1e-12)) {
      best = mse;
      best_l = sorted[k];
    }
  }
  svd_free(&d);
  stdz_free(&s);
  *ret_lambda = best_l;
  if (ret_mse) *ret_mse = best;
out:
  free(sorted);
  free(b);
  return err;
}

int pflex_linmodel_fit(const double *x, const double *y, size_t n, size_t p,
                       const struct pflex_fit_opts *opts, struct pflex_linmodel *ret) {
  if (opts->kind != PFLEX_MODEL_OLS && opts->kind != PFLEX_MODEL_RIDGE) return -EINVAL;
  if (n < 2) return -PFLEX_E_NOPOINTS;
  struct pflex_linmodel m;
  pflex_linmodel_init(&m);
  m.p = p;
  size_t pa = p ? p : 1;
  m.coef = calloc(pa, sizeof *m.coef);
  m.mean = calloc(pa, sizeof *m.mean);
  m.sd = calloc(pa, sizeof *m.sd);
  m.beta_std = calloc(pa, sizeof *m.beta_std);
  if (!m.coef || !m.mean || !m.sd || !m.beta_std) {
    pflex_linmodel_release(&m);
    return -ENOMEM;
  }
  struct stdz s;
  int err = stdz_make(x, y, n, p, &s);
  if (err) {
    pflex_linmodel_release(&m);
    return err;
  }
  if (opts->kind == PFLEX_MODEL_RIDGE) {
    m.lambda = opts->lambda;
    if (opts->lambda < 0)
      err = pflex_ridge_select(x, y, n, p, opts->grid, opts->ngrid, &m.lambda, &m.inner_mse);
    if (!err && p > 0) {
      struct svd d;
      err = svd_make(s.z, &d);
      if (!err) {
        svd_ridge(&d, s.yc, m.lambda, m.beta_std);
        svd_free(&d);
      }
    }
  } else if (p > 0) {
    gsl_multifit_linear_workspace *w = gsl_multifit_linear_alloc(s.z->size1, p);
    gsl_vector *c = gsl_vector_alloc(p);
    gsl_matrix *cov = gsl_matrix_alloc(p, p);
    err = -ENOMEM;
    if (w && c && cov) {
      double chisq;
      err = gsl_multifit_linear(s.z, s.yc, c, cov, &chisq, w) ? -PFLEX_E_DATA : 0;
      for (size_t j = 0; !err && j < p; j++)
        m.beta_std[j] = gsl_vector_get(c, j);
    }
    gsl_multifit_linear_free(w);
    gsl_vector_free(c);
    gsl_matrix_free(cov);
  }
  if (!err) {
    m.intercept = s.ybar;
    for (size_t j = 0; j < p; j++) {
      m.mean[j] = s.mean[j];
      m.sd[j] = s.sd[j];
      m.coef[j] = m.beta_std[j] / s.sd[j];
      m.intercept -= m.coef[j] * s.mean[j];
      if (!isfinite(m.coef[j])) err = -PFLEX_E_DATA;
    }
  }
  stdz_free(&s);
  if (err) {
    pflex_linmodel_release(&m);
    return err;
  }
  *ret = m;
  return 0;
}

double pflex_linmodel_predict(const struct pflex_linmodel *m, const double *xrow) {
  double v = m->intercept;
  for (size_t j = 0; j < m->p; j++)
    v += m->coef[j] * xrow[j];
  return v;
}

const char *pflex_loco_name(enum pflex_loco scheme) {
  return scheme == PFLEX_LOCO_POOLED_DENSE ? "pooled-dense" : "arch-task";
}

int pflex_loco_parse(const char *s, enum pflex_loco *ret) {
  if (strcmp(s, "arch-task") == 0)
    *ret = PFLEX_LOCO_ARCH_TASK;
  else if (strcmp(s, "pooled-dense") == 0)
    *ret = PFLEX_LOCO_POOLED_DENSE;
  else
    return -EINVAL;
  return 0;
}

const char *pflex_cluster_name(enum pflex_arch arch, enum pflex_task task, enum pflex_loco scheme) {
  if (arch == PFLEX_ARCH_DENSE && scheme == PFLEX_LOCO_POOLED_DENSE) return "dense";
  if (arch == PFLEX_ARCH_UNKNOWN || task == PFLEX_TASK_UNKNOWN) return "unknown";
  if (arch == PFLEX_ARCH_DENSE) return task == PFLEX_TASK_PT ? "dense-pt" : "dense-ft";
  return task == PFLEX_TASK_PT ? "moe-pt" : "moe-ft";
}

int pflex_scores_compute(const double *y, const double *yhat, size_t n, struct pflex_scores *ret) {
  if (n == 0) return -PFLEX_E_NOPOINTS;
  double ybar = gsl_stats_mean(y, 1, n), sse = 0, sst = 0;
  bool yconst = true, hconst = true;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(yhat[i]) || !isfinite(y[i])) return -EINVAL;
    sse += (y[i] - yhat[i]) * (y[i] - yhat[i]);
    sst += (y[i] - ybar) * (y[i] - ybar);
    yconst = yconst && y[i] == y[0];
    hconst = hconst && yhat[i] == yhat[0];
  }
  struct pflex_scores s = {
      .r2 = sst > 0 ? 1.0 - sse / sst : NAN, .rmse = sqrt(sse / (double)n), .rho = NAN};
  if (!yconst && !hconst && n > 1) {
    double *work = malloc(2 * n * sizeof *work);
    if (!work) return -ENOMEM;
    s.rho = gsl_stats_spearman(y, 1, yhat, 1, n, work);
    free(work);
  }
  *ret = s;
  return 0;
}

int pflex_scores_measured(const double *y, const double *yhat, size_t n, struct pflex_scores *ret,
                          size_t *ret_n) {
  *ret = (struct pflex_scores){NAN, NAN, NAN};
  *ret_n = 0;
  double *ym = malloc((n ? n : 1) * sizeof *ym), *hm = malloc((n ? n : 1) * sizeof *hm);
  int err = -ENOMEM;
  if (ym && hm) {
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
      if (isfinite(y[i])) {
        ym[m] = y[i];
        hm[m++] = yhat[i];
      }
    *ret_n = m;
    err = m >= 2 ? pflex_scores_compute(ym, hm, m, ret) : 0;
  }
  free(ym);
  free(hm);
  return err;
}

void pflex_folds_loo(size_t n, int *fold) {
  for (size_t i = 0; i < n; i++)
    fold[i] = (int)i;
}

/* The index of cluster label c in names[0..*n), appended when new. */
static size_t cluster_index(const char **names, size_t *n, const char *c) {
  size_t k;
  for (k = 0; k < *n; k++)
    if (strcmp(names[k], c) == 0) return k;
  names[(*n)++] = c;
  return k;
}

void pflex_folds_loco(const struct pflex_dataset *d, enum pflex_loco scheme, int *fold) {
  /* Fold ids numbered by first appearance of each cluster label. */
  const char *seen[PFLEX_CLUSTERS_MAX];
  size_t nseen = 0;
  for (size_t i = 0; i < d->n; i++)
    fold[i] = (int)cluster_index(seen, &nseen, pflex_cluster_name(d->arch[i], d->task[i], scheme));
}

void pflex_clusters_count(const struct pflex_dataset *d, enum pflex_loco scheme,
                          struct pflex_clusters *ret) {
  memset(ret, 0, sizeof *ret);
  for (size_t i = 0; i < d->n; i++)
    ret->count[cluster_index(ret->name, &ret->n,
                             pflex_cluster_name(d->arch[i], d->task[i], scheme))]++;
}

void pflex_model_init(struct pflex_model *m) {
  memset(m, 0, sizeof *m);
  pflex_featlist_init(&m->feats);
  pflex_linmodel_init(&m->lin);
  m->r2_in = NAN;
  m->loo = m->loco = (struct pflex_scores){NAN, NAN, NAN};
  pflex_pfi_opts_init(&m->target);
  m->target.exclude = PFLEX_PFI_EXCLUDE_PAPER;
  m->target.draws = 0;
}

int pflex_model_set_target(struct pflex_model *m, const struct pflex_pfi_opts *pfi) {
  double *grid = NULL;
  if (pfi->grid && pfi->ngrid) {
    grid = malloc(pfi->ngrid * sizeof *grid);
    if (!grid) return -ENOMEM;
    memcpy(grid, pfi->grid, pfi->ngrid * sizeof *grid);
  }
  free(m->target_grid);
  m->target = *pfi;
  m->target.draws = 0;
  m->target.grid = grid;
  m->target.ngrid = grid ? pfi->ngrid : 0;
  m->target_grid = grid;
  return 0;
}

void pflex_model_release(struct pflex_model *m) {
  if (!m) return;
  pflex_featlist_release(&m->feats);
  pflex_linmodel_release(&m->lin);
  if (m->groups)
    for (size_t i = 0; i < m->n; i++) {
      free(m->groups[i].group);
      free(m->groups[i].cluster);
    }
  free(m->groups);
  free(m->target_grid);
  free(m->source);
  free(m->set_filter);
  free(m->version);
  pflex_model_init(m);
}

/* The index of an arch x task cell (0-3), or -1 when either is unknown. */
static int prior_cell(enum pflex_arch arch, enum pflex_task task) {
  if (arch == PFLEX_ARCH_UNKNOWN || task == PFLEX_TASK_UNKNOWN) return -1;
  return (arch == PFLEX_ARCH_MOE) * 2 + (task == PFLEX_TASK_FT);
}

/* Fits the prior on the rows where use[i] (all rows when use is NULL). */
static void prior_fit(const struct pflex_dataset *d, const bool *use, struct pflex_model *m) {
  double sum = 0;
  size_t n = 0;
  m->nprior = 0;
  for (size_t i = 0; i < d->n; i++) {
    if (use && !use[i]) continue;
    sum += d->y[i];
    n++;
    if (d->arch[i] == PFLEX_ARCH_UNKNOWN || d->task[i] == PFLEX_TASK_UNKNOWN) continue;
    size_t k;
    for (k = 0; k < m->nprior; k++)
      if (m->prior[k].arch == d->arch[i] && m->prior[k].task == d->task[i]) break;
    if (k == m->nprior)
      m->prior[m->nprior++] = (struct pflex_prior_cell){d->arch[i], d->task[i], 0, 0};
    m->prior[k].n++;
    m->prior[k].mean += d->y[i];
  }
  for (size_t k = 0; k < m->nprior; k++)
    m->prior[k].mean /= (double)m->prior[k].n;
  m->prior_mean = n ? sum / (double)n : NAN;
}

double pflex_model_prior(const struct pflex_model *m, enum pflex_arch arch, enum pflex_task task) {
  for (size_t k = 0; k < m->nprior; k++)
    if (m->prior[k].arch == arch && m->prior[k].task == task) return m->prior[k].mean;
  return m->prior_mean;
}

double pflex_model_predict(const struct pflex_model *m, const double *xrow, enum pflex_arch arch,
                           enum pflex_task task) {
  if (m->kind == PFLEX_MODEL_PRIOR) return pflex_model_prior(m, arch, task);
  return pflex_linmodel_predict(&m->lin, xrow);
}

int pflex_model_predict_run(const struct pflex_model *m, const struct pflex_runset *set, size_t i,
                            bool allow_prior, double *ret, bool *ret_prior,
                            struct pflex_diag *diag) {
  if (i >= set->n) return -EINVAL;
  const struct pflex_run *r = &set->runs[i];
  if (m->kind == PFLEX_MODEL_PRIOR) {
    *ret = pflex_model_prior(m, r->arch, r->task);
    *ret_prior = true;
    return 0;
  }
  size_t p = m->feats.n;
  double *x = malloc((p ? p : 1) * sizeof *x);
  if (!x) return -ENOMEM;
  int err = 0;
  for (size_t j = 0; !err && j < p; j++) {
    struct pflex_diag fd;
    pflex_diag_clear(&fd);
    err = pflex_feature_value(set, i, m->feats.names[j], &x[j], &fd);
    if (err)
      pflex_diag_set(diag, err, set->source ? set->source : "", fd.line, fd.column,
                     "feature '%s': %s", m->feats.names[j],
                     fd.message[0] ? fd.message : pflex_strerror(err));
  }
  if (err && allow_prior) {
    *ret = pflex_model_prior(m, r->arch, r->task);
    *ret_prior = true;
    err = 0;
  } else if (!err) {
    *ret = pflex_linmodel_predict(&m->lin, x);
    *ret_prior = false;
  }
  free(x);
  return err;
}

/* The closed form of OLS leave-one-out takes a design whose condition
 * number is below 1/LOO_RCOND, and rows whose leverage leaves 1 - h_ii above
 * LOO_MIN_RESID and whose removal keeps every column's constancy clear of
 * CONST_RTOL by a factor LOO_CONST_MARGIN; the others are refitted. */
#define LOO_RCOND 1e-8
#define LOO_MIN_RESID 1e-8
#define LOO_CONST_MARGIN 100.0

/* Whether the columns stay on the same side of the constancy threshold
 * without row i (mean and sum of squares downdated) as with it, by a margin.
 * ss[j] is column j's sum of squared deviations over all n rows. */
static bool loo_columns_clear(const struct pflex_dataset *d, const struct stdz *s,
                              const double *ss, size_t i) {
  size_t n = d->n, p = d->feats.n;
  for (size_t j = 0; j < p; j++) {
    double dx = d->x[i * p + j] - s->mean[j];
    double mean = ((double)n * s->mean[j] - d->x[i * p + j]) / (double)(n - 1);
    double rest = ss[j] - (double)n / (double)(n - 1) * dx * dx;
    double sd = sqrt(rest > 0 ? rest / (double)(n - 2) : 0);
    bool clear = s->constant[j] ? !relative_sd_above(sd, mean, CONST_RTOL / LOO_CONST_MARGIN)
                              : relative_sd_above(sd, mean, CONST_RTOL * LOO_CONST_MARGIN);
    if (!clear) return false;
  }
  return true;
}

/* The OLS leave-one-out predictions from one fit on all rows: the LOO
 * residual is e_i / (1 - h_ii), with h_ii = 1/n + sum_k U_ik^2 over the
 * standardized design's nonzero singular directions (the intercept is
 * orthogonal to the centred columns). The refit that this replaces gives the
 * same values up to rounding (tests/unit/test_predict.c). Sets done[i] for
 * the rows it predicts and leaves the rest (see LOO_RCOND) to refits. */
static void ols_loo_rows(const struct pflex_dataset *d, const struct stdz *s,
                         const struct svd *v, double *ss, double *uty, double *yhat, bool *done) {
  size_t n = d->n, p = d->feats.n, live = 0, kept = 0;
  for (size_t j = 0; j < p; j++) {
    for (size_t i = 0; i < n; i++) {
      double dx = d->x[i * p + j] - s->mean[j];
      ss[j] += dx * dx;
    }
    live += !s->constant[j];
  }
  for (size_t k = 0; k < p && kept < live; k++)
    kept += gsl_vector_get(v->s, k) > LOO_RCOND * gsl_vector_get(v->s, 0);
  if (kept < live) return; /* ill-conditioned: every row refitted */
  for (size_t k = 0; k < kept; k++)
    for (size_t i = 0; i < n; i++)
      uty[k] += gsl_matrix_get(v->u, i, k) * gsl_vector_get(s->yc, i);
  for (size_t i = 0; i < n; i++) {
    double h = 1.0 / (double)n, fit = 0;
    for (size_t k = 0; k < kept; k++) {
      double u = gsl_matrix_get(v->u, i, k);
      h += u * u;
      fit += u * uty[k];
    }
    if (!(1.0 - h > LOO_MIN_RESID) || !loo_columns_clear(d, s, ss, i)) continue;
    yhat[i] = d->y[i] - (gsl_vector_get(s->yc, i) - fit) / (1.0 - h);
    done[i] = true;
  }
}

static int ols_loo(const struct pflex_dataset *d, double *yhat, bool *done) {
  size_t n = d->n, p = d->feats.n;
  if (n < 3 || n < p + 2) return 0;
  double *ss = calloc(p + 1, sizeof *ss), *uty = calloc(p + 1, sizeof *uty);
  struct stdz s;
  struct svd v = {0};
  int err = ss && uty ? stdz_make(d->x, d->y, n, p, &s) : -ENOMEM;
  if (!err) {
    /* An SVD that fails to converge leaves every row to the refits. */
    int e = p > 0 ? svd_make(s.z, &v) : 0;
    if (!e) ols_loo_rows(d, &s, &v, ss, uty, yhat, done);
    if (!e && p > 0) svd_free(&v);
    if (e == -ENOMEM) err = e;
    stdz_free(&s);
  }
  free(ss);
  free(uty);
  return err;
}

/* The prior's leave-one-out predictions from sums over all rows (in long
 * double, so that taking row i out loses nothing to cancellation): row i's
 * arch x task cell mean without it when the cell has other rows, else the
 * mean of the other rows, as a refit of the prior without row i gives. */
static void prior_loo(const struct pflex_dataset *d, double *yhat, bool *done) {
  size_t n = d->n, count[4] = {0};
  if (n < 3) return;
  long double all = 0, sum[4] = {0};
  for (size_t i = 0; i < n; i++) {
    all += d->y[i];
    int c = prior_cell(d->arch[i], d->task[i]);
    if (c >= 0) sum[c] += d->y[i], count[c]++;
  }
  for (size_t i = 0; i < n; i++) {
    int c = prior_cell(d->arch[i], d->task[i]);
    yhat[i] = c >= 0 && count[c] > 1 ? (double)((sum[c] - d->y[i]) / (long double)(count[c] - 1))
                                     : (double)((all - d->y[i]) / (long double)(n - 1));
    done[i] = true;
  }
}

/* ---- ridge leave-one-out without a refit per row ----
 *
 * Each held-out row i gets a model fitted on the other n - 1 rows with their
 * own standardization, as a refit would, from the full data's sums with row
 * i taken out (mean, centred cross-products: rank-one downdates), in
 * O(p^3) per row. The penalty of row i, when chosen (lambda < 0), is the
 * grid value with the least mean of the other rows' squared LOO residuals,
 * those residuals taken from the closed form on all n rows (the one the
 * model's own lambda is chosen by): row i's own residual is left out of its
 * criterion, but row i still takes part in the fits that predict the others.
 * Exact nesting (every other row's residual recomputed without row i) costs
 * O(n) per row and O(n^2) in all; this is O(n (grid + p^3)). */

/* Row i's penalty in lam[i]: per grid value (ascending, ties to the larger
 * as in pflex_ridge_select) the other rows' squared residuals summed as the
 * rows before i plus those after (no subtraction, so no cancellation). */
static int ridge_loo_lambdas(const struct pflex_dataset *d, const struct stdz *s,
                             const struct svd *v, const double *grid, size_t ngrid, double *lam) {
  size_t n = d->n, p = d->feats.n;
  double *r2 = malloc(n * sizeof *r2), *after = malloc((n + 1) * sizeof *after);
  double *best = malloc(n * sizeof *best), *b = malloc((p ? p : 1) * sizeof *b);
  int err = r2 && after && best && b ? 0 : -ENOMEM;
  for (size_t i = 0; !err && i < n; i++)
    best[i] = INFINITY, lam[i] = grid[ngrid - 1];
  for (size_t k = 0; !err && k < ngrid && p > 0; k++) {
    ridge_loo_mse(v, s, n, grid[k], b, r2);
    after[n] = 0;
    for (size_t i = n; i-- > 0;)
      after[i] = after[i + 1] + r2[i];
    double before = 0;
    for (size_t i = 0; i < n; i++) {
      double mse = (before + after[i + 1]) / (double)(n - 1);
      if (mse <= best[i] * (1 + 1e-12)) best[i] = mse, lam[i] = grid[k];
      before += r2[i];
    }
  }
  free(r2);
  free(after);
  free(best);
  free(b);
  return err;
}

/* The fold without row i, standardized on its own rows: its means (mu), SDs
 * (sd), the standardized cross-products of the live columns (c, p x p, and
 * cy with y), from the full data's means, cross-products sxx (p x p) and sxy.
 * False where the closed form is not trusted: a column whose spread is
 * mostly row i's (a downdate that cancels) or whose constancy is near the
 * threshold (loo_columns_clear). */
static bool ridge_fold(const struct pflex_dataset *d, const struct stdz *s, const double *sxx,
                       const double *sxy, size_t i, double *mu, double *sd, double *c, double *cy) {
  size_t n = d->n, p = d->feats.n;
  const double *xi = d->x + i * p;
  double k = (double)n / (double)(n - 1);
  double ey = d->y[i] - s->ybar;
  for (size_t j = 0; j < p; j++) {
    double dj = xi[j] - s->mean[j];
    mu[j] = ((double)n * s->mean[j] - xi[j]) / (double)(n - 1);
    double rest = sxx[j * p + j] - k * dj * dj;
    if (!s->constant[j] && !(rest > 1e-6 * sxx[j * p + j])) return false;
    sd[j] = s->constant[j] ? 1.0 : sqrt(rest / (double)(n - 2));
    cy[j] = s->constant[j] ? 0 : (sxy[j] - k * dj * ey) / sd[j];
  }
  for (size_t j = 0; j < p; j++)
    for (size_t l = 0; l < p; l++) {
      bool live = !s->constant[j] && !s->constant[l];
      double djl = (sxx[j * p + l] - k * (xi[j] - s->mean[j]) * (xi[l] - s->mean[l]));
      c[j * p + l] = live ? djl / (sd[j] * sd[l]) : (j == l);
    }
  return true;
}

/* Row i's prediction by ridge at lambda on the fold without it (ridge_fold's
 * system solved by Cholesky); false where the closed form is not trusted. */
static bool ridge_row(const struct pflex_dataset *d, const struct stdz *s, const double *sxx,
                      const double *sxy, size_t i, double lambda, double *w, double *ret) {
  size_t p = d->feats.n;
  double *mu = w, *sd = w + p, *cy = w + 2 * p, *c = w + 3 * p;
  if (!(lambda >= 0) || !ridge_fold(d, s, sxx, sxy, i, mu, sd, c, cy)) return false;
  for (size_t j = 0; j < p; j++)
    c[j * p + j] += s->constant[j] ? 0 : lambda;
  if (p > 0) {
    gsl_matrix_view a = gsl_matrix_view_array(c, p, p);
    gsl_vector_view bv = gsl_vector_view_array(cy, p);
    /* A matrix that rounding leaves not positive definite is a refit, not
     * GSL's abort (the default handler, where a program has not set one). */
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    int bad = gsl_linalg_cholesky_decomp1(&a.matrix) ||
              gsl_linalg_cholesky_svx(&a.matrix, &bv.vector);
    gsl_set_error_handler(old);
    if (bad) return false;
  }
  double n = (double)d->n, v = (n * s->ybar - d->y[i]) / (n - 1);
  for (size_t j = 0; j < p; j++)
    v += s->constant[j] ? 0 : cy[j] * (d->x[i * p + j] - mu[j]) / sd[j];
  *ret = v;
  return isfinite(v);
}

/* The full data's centred cross-products of the columns (sxx, p x p) and
 * with y (sxy). */
static void ridge_sums(const struct pflex_dataset *d, const struct stdz *s, double *sxx,
                       double *sxy) {
  size_t n = d->n, p = d->feats.n;
  for (size_t i = 0; i < n; i++) {
    const double *x = d->x + i * p;
    double ey = d->y[i] - s->ybar;
    for (size_t j = 0; j < p; j++) {
      double dj = x[j] - s->mean[j];
      sxy[j] += dj * ey;
      for (size_t l = 0; l < p; l++)
        sxx[j * p + l] += dj * (x[l] - s->mean[l]);
    }
  }
}

/* Ridge leave-one-out (see above): lam[i] each row's penalty (given or
 * chosen), yhat[i] and done[i] for the rows predicted here; the others are
 * left to refits at lam[i]. grid: the sorted penalties (chosen lambda). */
static int ridge_loo(const struct pflex_dataset *d, const struct pflex_fit_opts *opts,
                     const double *grid, size_t ngrid, double *lam, double *yhat, bool *done) {
  size_t n = d->n, p = d->feats.n, live = 0, kept = 0;
  for (size_t i = 0; i < n; i++)
    lam[i] = opts->lambda;
  if (n < 4) return 0; /* a fold of 2 rows: no penalty can be chosen (the refits say so) */
  struct stdz s;
  struct svd v = {0};
  bool have_svd = false;
  double *sxx = calloc(p * p + 1, sizeof *sxx), *sxy = calloc(p + 1, sizeof *sxy);
  double *ss = calloc(p + 1, sizeof *ss), *w = malloc((3 * p + p * p + 1) * sizeof *w);
  int err = sxx && sxy && ss && w ? stdz_make(d->x, d->y, n, p, &s) : -ENOMEM;
  if (err) goto out;
  if (p > 0) have_svd = !(err = svd_make(s.z, &v));
  if (!err && opts->lambda < 0) err = ridge_loo_lambdas(d, &s, &v, grid, ngrid, lam);
  for (size_t j = 0; j < p; j++)
    live += !s.constant[j];
  for (size_t k = 0; have_svd && k < p && kept < live; k++)
    kept += gsl_vector_get(v.s, k) > LOO_RCOND * gsl_vector_get(v.s, 0);
  if (!err) ridge_sums(d, &s, sxx, sxy);
  for (size_t j = 0; j < p; j++)
    ss[j] = sxx[j * p + j];
  for (size_t i = 0; !err && kept == live && i < n; i++) /* ill-conditioned: all refitted */
    done[i] = loo_columns_clear(d, &s, ss, i) && ridge_row(d, &s, sxx, sxy, i, lam[i], w, &yhat[i]);
  if (have_svd) svd_free(&v);
  stdz_free(&s);
out:
  free(sxx);
  free(sxy);
  free(ss);
  free(w);
  return err;
}

/* Buffers of one fold's training set. */
struct cv_work {
  double *xt, *yt;
  bool *use;
};

/* Predicts the rows of fold f (setting done[i] for them) from a model
 * fitted on the other rows; NAN when fewer than 2 remain. */
static int fold_predict(const struct pflex_dataset *d, const struct pflex_fit_opts *opts,
                        const int *fold, int f, struct cv_work *w, bool *done, double *yhat) {
  size_t n = d->n, p = d->feats.n, nt = 0;
  for (size_t i = 0; i < n; i++) {
    w->use[i] = fold[i] != f;
    if (!w->use[i]) continue;
    memcpy(w->xt + nt * p, d->x + i * p, p * sizeof *w->xt);
    w->yt[nt++] = d->y[i];
  }
  struct pflex_model pm;
  pflex_model_init(&pm);
  bool ok = nt >= 2;
  int err = 0;
  if (ok && opts->kind == PFLEX_MODEL_PRIOR) {
    prior_fit(d, w->use, &pm);
    pm.kind = PFLEX_MODEL_PRIOR;
  } else if (ok) {
    pm.kind = opts->kind;
    int e = pflex_linmodel_fit(w->xt, w->yt, nt, p, opts, &pm.lin);
    if (e == -PFLEX_E_NOPOINTS)
      ok = false;
    else if (e)
      err = e;
  }
  for (size_t i = 0; i < n; i++) {
    if (fold[i] != f) continue;
    done[i] = true;
    yhat[i] = ok && !err ? pflex_model_predict(&pm, d->x + i * p, d->arch[i], d->task[i]) : NAN;
  }
  pflex_model_release(&pm);
  return err;
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Whether every row is a fold of its own (leave-one-out). */
static int folds_singletons(const int *fold, size_t n, bool *ret) {
  int *s = malloc((n ? n : 1) * sizeof *s);
  if (!s) return -ENOMEM;
  memcpy(s, fold, n * sizeof *s);
  qsort(s, n, sizeof *s, cmp_int);
  *ret = true;
  for (size_t i = 1; i < n && *ret; i++)
    *ret = s[i] != s[i - 1];
  free(s);
  return 0;
}

int pflex_cv_predict(const struct pflex_dataset *d, const struct pflex_fit_opts *opts,
                     const int *fold, double *ret_yhat) {
  size_t n = d->n, p = d->feats.n;
  struct cv_work w = {.xt = malloc((n * p > 0 ? n * p : 1) * sizeof *w.xt),
                      .yt = malloc((n ? n : 1) * sizeof *w.yt),
                      .use = malloc((n ? n : 1) * sizeof *w.use)};
  bool *done = calloc(n ? n : 1, sizeof *done), loo = false;
  double *yhat = malloc((n ? n : 1) * sizeof *yhat), *lam = malloc((n ? n : 1) * sizeof *lam);
  double *grid = NULL;
  size_t ngrid = 0;
  int err = w.xt && w.yt && w.use && done && yhat && lam ? 0 : -ENOMEM;
  bool ridge = opts->kind == PFLEX_MODEL_RIDGE;
  /* Leave-one-out in closed form; the rows it cannot take are refitted (a
   * ridge row at the penalty chosen for it). */
  if (!err) err = folds_singletons(fold, n, &loo);
  if (!err && loo && ridge && opts->lambda < 0)
    err = ridge_grid(opts->grid, opts->ngrid, &grid, &ngrid);
  if (!err && loo && ridge) err = ridge_loo(d, opts, grid, ngrid, lam, yhat, done);
  if (!err && loo && opts->kind == PFLEX_MODEL_OLS) err = ols_loo(d, yhat, done);
  if (!err && loo && opts->kind == PFLEX_MODEL_PRIOR) prior_loo(d, yhat, done);
  for (size_t i0 = 0; !err && i0 < n; i0++) {
    struct pflex_fit_opts o = *opts;
    if (loo && ridge) o.lambda = lam[i0];
    if (!done[i0]) err = fold_predict(d, &o, fold, fold[i0], &w, done, yhat);
  }
  if (!err) memcpy(ret_yhat, yhat, n * sizeof *yhat);
  free(lam);
  free(grid);
  free(w.xt);
  free(w.yt);
  free(w.use);
  free(done);
  free(yhat);
  return err;
}

/* Scores over the rows with a finite prediction (LOCO cannot predict a
 * cluster that is the whole data set). */
static int scores_finite(const double *y, const double *yhat, size_t n, struct pflex_scores *ret) {
  double *a = malloc((n ? n : 1) * sizeof *a), *b = malloc((n ? n : 1) * sizeof *b);
  int err = a && b ? 0 : -ENOMEM;
  size_t m = 0;
  for (size_t i = 0; !err && i < n; i++)
    if (isfinite(yhat[i])) {
      a[m] = y[i];
      b[m++] = yhat[i];
    }
  if (!err) err = pflex_scores_compute(a, b, m, ret);
  free(a);
  free(b);
  return err;
}

int pflex_model_fit(const struct pflex_dataset *d, const struct pflex_fit_opts *opts,
                    enum pflex_loco loco, struct pflex_model *ret) {
  size_t n = d->n, p = d->feats.n;
  for (size_t i = 0; i < n; i++)
    if (!isfinite(d->y[i])) return -PFLEX_E_NOPOINTS;
  if (n < 3) return -PFLEX_E_NOPOINTS;
  struct pflex_model m;
  pflex_model_init(&m);
  m.kind = opts->kind;
  m.loco_scheme = loco;
  m.n = n;
  m.lambda_chosen = opts->kind == PFLEX_MODEL_RIDGE && opts->lambda < 0;
  int *fold = malloc(n * sizeof *fold);
  double *fit = malloc(n * sizeof *fit), *loo = malloc(n * sizeof *loo),
         *lc = malloc(n * sizeof *lc);
  m.groups = calloc(n, sizeof *m.groups);
  int err = fold && fit && loo && lc && m.groups ? 0 : -ENOMEM;
  if (!err) err = pflex_featlist_copy(&d->feats, &m.feats);
  prior_fit(d, NULL, &m);
  if (!err && opts->kind != PFLEX_MODEL_PRIOR)
    err = pflex_linmodel_fit(d->x, d->y, n, p, opts, &m.lin);
  if (!err) {
    for (size_t i = 0; i < n; i++)
      fit[i] = pflex_model_predict(&m, d->x + i * p, d->arch[i], d->task[i]);
    pflex_folds_loo(n, fold);
    err = pflex_cv_predict(d, opts, fold, loo);
  }
  if (!err) {
    pflex_folds_loco(d, loco, fold);
    err = pflex_cv_predict(d, opts, fold, lc);
  }
  struct pflex_scores in;
  if (!err) err = pflex_scores_compute(d->y, fit, n, &in);
  if (!err) err = scores_finite(d->y, loo, n, &m.loo);
  if (!err) {
    m.r2_in = in.r2;
    if (scores_finite(d->y, lc, n, &m.loco)) m.loco = (struct pflex_scores){NAN, NAN, NAN};
  }
  for (size_t i = 0; !err && i < n; i++) {
    struct pflex_model_group *g = &m.groups[i];
    g->group = strdup(d->groups[i]);
    g->cluster = strdup(pflex_cluster_name(d->arch[i], d->task[i], loco));
    if (!g->group || !g->cluster) err = -ENOMEM;
    g->pfi = d->y[i];
    g->fitted = fit[i];
    g->loo = loo[i];
    g->loco = lc[i];
  }
  free(fold);
  free(fit);
  free(loo);
  free(lc);
  if (err) {
    pflex_model_release(&m);
    return err;
  }
  *ret = m;
  return 0;
}
