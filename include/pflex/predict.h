/* PFI predictors: least squares, ridge and a population prior, with
 * leave-one-out and leave-one-cluster-out cross-validation (paper.md
 * section 5, docs/prediction.md).
 *
 * Linear models predict y = intercept + sum_j coef[j] * x[j] on the raw
 * feature scale. Internally features are centred and divided by their
 * standard deviation (n - 1 denominator) on the training rows; a feature that
 * is constant there gets coefficient 0. OLS solves the standardized problem
 * with gsl_multifit_linear; where it is underdetermined (more features than
 * rows minus one, as in some LOCO folds) that gives the minimum-norm solution
 * in standardized coordinates. Ridge minimises
 *   ||y - b0 - Z b||^2 + lambda ||b||^2   (Z standardized, b0 unpenalized)
 * by SVD. */
#ifndef PFLEX_PREDICT_H
#define PFLEX_PREDICT_H

#include <stdbool.h>
#include <stddef.h>

#include "pflex/features.h"
#include "pflex/provenance.h"
#include "pflex/runs.h"

enum pflex_model_kind { PFLEX_MODEL_OLS = 0, PFLEX_MODEL_RIDGE, PFLEX_MODEL_PRIOR };

/* "ols", "ridge", "prior". */
const char *pflex_model_kind_name(enum pflex_model_kind kind);
/* Parses a kind name; -EINVAL if unknown. */
int pflex_model_kind_parse(const char *s, enum pflex_model_kind *ret);

/* The default ridge grid: 10^-3 .. 10^4, four values per decade (29). */
#define PFLEX_RIDGE_GRID_N 29
void pflex_ridge_default_grid(double grid[PFLEX_RIDGE_GRID_N]);

struct pflex_fit_opts {
  enum pflex_model_kind kind;
  double lambda;      /* ridge: the penalty, or < 0 to choose it by inner LOO on the grid */
  const double *grid; /* ridge grid; NULL for the default */
  size_t ngrid;
};

/* A fitted linear model on p features (p may be 0: intercept only). */
struct pflex_linmodel {
  size_t p;
  double intercept;
  double *coef;     /* p, raw feature scale */
  double *mean;     /* p, training means */
  double *sd;       /* p, training standard deviations (1 where constant) */
  double *beta_std; /* p, coefficients on standardized features */
  double lambda;    /* 0 for OLS */
  double inner_mse; /* ridge with chosen lambda: inner LOO mean squared error; else NAN */
};

/* Sets *m to the empty model; release frees its arrays and leaves it empty. */
void pflex_linmodel_init(struct pflex_linmodel *m);
void pflex_linmodel_release(struct pflex_linmodel *m);
/* Fits OLS or ridge (opts->kind; PRIOR is -EINVAL here) on n rows x p
 * features, row-major. -PFLEX_E_NOPOINTS when n < 2. */
int pflex_linmodel_fit(const double *x, const double *y, size_t n, size_t p,
                       const struct pflex_fit_opts *opts, struct pflex_linmodel *ret);
/* The prediction for one row of p features. */
double pflex_linmodel_predict(const struct pflex_linmodel *m, const double *xrow);

/* Chooses the ridge penalty on the grid minimizing the leave-one-out mean
 * squared error over the n rows (closed form e_i / (1 - h_ii), features
 * standardized once on the n rows); ties go to the larger penalty. */
int pflex_ridge_select(const double *x, const double *y, size_t n, size_t p, const double *grid,
                       size_t ngrid, double *ret_lambda, double *ret_mse);

/* How LOCO forms clusters: arch x task (4 clusters), or with dense PT and
 * dense FT pooled (3 clusters, as in the paper's Table 10). */
enum pflex_loco { PFLEX_LOCO_ARCH_TASK = 0, PFLEX_LOCO_POOLED_DENSE };
const char *pflex_loco_name(enum pflex_loco scheme); /* "arch-task", "pooled-dense" */
int pflex_loco_parse(const char *s, enum pflex_loco *ret);
/* The cluster label of a job: "dense-pt", ..., "dense" when pooled, "unknown". */
const char *pflex_cluster_name(enum pflex_arch arch, enum pflex_task task, enum pflex_loco scheme);

/* Scores of out-of-sample (or in-sample) predictions. */
struct pflex_scores {
  double r2;   /* 1 - SSE/SST, SST about the mean of all y */
  double rmse; /* sqrt(SSE / n) */
  double rho;  /* Spearman (average ranks for ties); NAN when either side is constant */
};
/* R^2, RMSE and Spearman rho of predictions yhat of y: -PFLEX_E_NOPOINTS when
 * n is 0, -EINVAL on a non-finite value. */
int pflex_scores_compute(const double *y, const double *yhat, size_t n, struct pflex_scores *ret);
/* The scores of yhat against y over the rows whose y is finite (the jobs with
 * a measured PFI); *ret_n says how many. With fewer than two such rows, or
 * when pflex_scores_compute fails (its error is returned), *ret holds NANs. */
int pflex_scores_measured(const double *y, const double *yhat, size_t n, struct pflex_scores *ret,
                          size_t *ret_n);

/* A fitted PFI model with its names, prior and training summary. */
struct pflex_model_group {
  char *group;
  char *cluster; /* arch-task label */
  double pfi;    /* measured */
  double fitted; /* in-sample prediction */
  double loo;    /* leave-one-out prediction */
  double loco;   /* leave-one-cluster-out prediction (NAN if not computable) */
};

struct pflex_prior_cell {
  enum pflex_arch arch;
  enum pflex_task task;
  size_t n;
  double mean;
};

struct pflex_model {
  enum pflex_model_kind kind;
  struct pflex_featlist feats;
  struct pflex_linmodel lin; /* OLS/ridge; lin.p == feats.n */
  bool lambda_chosen;        /* ridge: lambda chosen by inner CV (else given) */
  /* The population prior, fitted on every model: the mean PFI overall and
   * per arch x task cell seen in training. */
  double prior_mean;
  struct pflex_prior_cell prior[4];
  size_t nprior;
  /* Training summary. */
  size_t n;
  struct pflex_model_group *groups; /* n */
  double r2_in;
  enum pflex_loco loco_scheme;
  struct pflex_scores loo, loco;
  /* How the training targets were computed: pflex_pfi_compute options (no CI;
   * target.grid points into target_grid, owned). Set with pflex_model_set_target. */
  struct pflex_pfi_opts target;
  double *target_grid;
  char *source;     /* runs file, or NULL */
  char *set_filter; /* --set value, or NULL */
  char *version;    /* pflex version that fitted it */
  enum pflex_provenance provenance; /* of the training runs (unknown in older files) */
};

/* Initializes an empty model; its target options are the paper's (ratio,
 * exclude only T == T_max). */
void pflex_model_init(struct pflex_model *m);
void pflex_model_release(struct pflex_model *m);
/* Records the PFI options the targets were computed with (copies the grid). */
int pflex_model_set_target(struct pflex_model *m, const struct pflex_pfi_opts *pfi);

/* Fits a model on a data set with targets (all y finite), and fills the
 * training summary: in-sample fit, LOO and LOCO predictions and scores (for
 * ridge with a chosen lambda, nested: lambda is re-chosen inside every fold).
 * Does not set source, set_filter or version. */
int pflex_model_fit(const struct pflex_dataset *d, const struct pflex_fit_opts *opts,
                    enum pflex_loco loco, struct pflex_model *ret);

/* Predicts one job from its feature values (in model->feats order) and its
 * arch and task (used by the prior only). */
double pflex_model_predict(const struct pflex_model *m, const double *xrow, enum pflex_arch arch,
                           enum pflex_task task);
/* Predicts the job of run i of set (its uncapped run, or a single run of
 * live telemetry): computes the model's features by name and applies the
 * model. When a feature is missing: with allow_prior, the prior's value with
 * *ret_prior = true (diag says which feature was missing); without, the error
 * of pflex_feature_value with diag naming the feature (message) and column.
 * A prior model always gives *ret_prior = true. */
int pflex_model_predict_run(const struct pflex_model *m, const struct pflex_runset *set, size_t i,
                            bool allow_prior, double *ret, bool *ret_prior,
                            struct pflex_diag *diag);
/* The prior's prediction: the arch x task cell mean when that cell was seen in
 * training, else the overall mean. */
double pflex_model_prior(const struct pflex_model *m, enum pflex_arch arch, enum pflex_task task);

/* Cross-validated predictions: rows with fold[i] == f are predicted by a
 * model fitted on the rows with fold[i] != f, for every fold value. Rows whose
 * fold leaves fewer than 2 training rows get NAN. Ridge with opts->lambda < 0
 * re-selects lambda on each training set (nested CV). */
int pflex_cv_predict(const struct pflex_dataset *d, const struct pflex_fit_opts *opts,
                     const int *fold, double *ret_yhat);

/* Fold ids: LOO (fold[i] = i) and LOCO (one fold per cluster). */
void pflex_folds_loo(size_t n, int *fold);
void pflex_folds_loco(const struct pflex_dataset *d, enum pflex_loco scheme, int *fold);

/* The LOCO clusters of d's groups under scheme, numbered as pflex_folds_loco
 * numbers its folds (by first appearance): each label and its group count. */
#define PFLEX_CLUSTERS_MAX 8
struct pflex_clusters {
  size_t n;
  const char *name[PFLEX_CLUSTERS_MAX]; /* pflex_cluster_name's labels (static strings) */
  size_t count[PFLEX_CLUSTERS_MAX];
};
void pflex_clusters_count(const struct pflex_dataset *d, enum pflex_loco scheme,
                          struct pflex_clusters *ret);

#endif
