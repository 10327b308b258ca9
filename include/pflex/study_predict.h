/* The study's input pipeline (core): from runs to what pflex_study_run takes.
 *
 * The runs of one set become sweep groups with their measured curves
 * (pflex_jobs_from_runs, pflex_study_groups_from_jobs); the section-5 PFI
 * model predicts every group's PFI in sample, leave-one-out and
 * leave-one-cluster-out (pflex_model_fit); and the prediction sets carry the
 * folds that shape the predicted curves, the same folds as the model's cross
 * validation (pflex_folds_loo, pflex_folds_loco): a job's curve is shaped
 * only by the curves of groups its prediction was fitted on. `true` (the PFI
 * known, the shape not) uses the LOO folds.
 *
 * Without the features' telemetry the predictions are the population prior's
 * leave-one-out values (marked `prior`). With training runs (a model fitted
 * on other data) every job is predicted from its uncapped run, unseen in
 * fitting (`unseen`), its curve shaped by the training groups' curves.
 *
 * No files, no printing: errors come back as -errno with diag saying what
 * (group, set, feature), the notes a program prints as fields. */
#ifndef PFLEX_STUDY_PREDICT_H
#define PFLEX_STUDY_PREDICT_H

#include <stdbool.h>
#include <stddef.h>

#include "pflex/error.h"
#include "pflex/jobs.h"
#include "pflex/predict.h"
#include "pflex/runs.h"
#include "pflex/study.h"

struct pflex_study_pred_opts {
  const char *features;      /* feature list (pflex_featlist_parse), default "dram_copy" */
  enum pflex_model_kind kind; /* default PFLEX_MODEL_OLS */
  enum pflex_loco loco;       /* default PFLEX_LOCO_ARCH_TASK */
};
void pflex_study_pred_opts_init(struct pflex_study_pred_opts *opts);

/* Predicted PFI per group (in group order); NULL where not made; NAN for a
 * group whose fold could not be fitted (pflex_study_predset). Exactly one
 * family is set: in + loo + loco (the model was fitted), prior (the runs lack
 * the features), or unseen (training runs given). */
struct pflex_study_predictions {
  double *in, *loo, *loco, *prior, *unseen;
  /* Per mode, each group's prediction error SD for the shrinkage toward an
   * equal cut (pflex_shrink_fold_sd over the other folds' errors; unseen:
   * the training model's larger of its LOO and LOCO RMSE); NULL for true. */
  double *sd[PFLEX_PRED_N];
  size_t loco_unfitted; /* groups whose LOCO fold could not be fitted (a cluster too small to
                           leave out, e.g. no arch/task columns): their LOCO prediction is NAN,
                           never filled from a model that saw their cluster */
  size_t unseen_prior;  /* unseen jobs lacking a feature: the prior's value */
  bool fell_back;       /* the runs lack the features: the population prior */
  char missing[64];     /* then: the first column missing */
  struct pflex_model model;
  bool fitted;
  int *loo_fold, *loco_fold; /* per group */
  struct pflex_jobset train; /* training runs' groups, whose curves shape unseen jobs */
  const struct pflex_curve **train_curves;
  size_t ntrain;
};

/* Everything the study runs on. */
struct pflex_study_data {
  const char *set;          /* the set used (borrowed from the options or "headline"), or NULL */
  struct pflex_runset runs; /* the runs of that set */
  struct pflex_jobset jobs; /* one per group */
  struct pflex_study_group *groups;
  size_t ngroups;           /* == jobs.n */
  struct pflex_study_predictions pred;
  struct pflex_study_predset sets[4]; /* for pflex_study_run, pointing into the above */
  size_t nsets;
};

/* Builds the study's data from all runs: the runs of set `set` (NULL: the
 * set "headline" when present, else every run), their groups and curves, the
 * predictions (with train NULL: the model fitted on these groups; else fitted
 * on train's headline set when it has one, else all of train). Errors:
 * -ENOENT (no runs of the set named), -PFLEX_E_NOPOINTS (no group with a
 * curve, or a group without a PFI), a feature, data set or fitting error,
 * each with diag naming what; -ENOMEM. On error *ret is left released. */
int pflex_study_data_build(const struct pflex_runset *all, const char *set,
                           const struct pflex_runset *train,
                           const struct pflex_study_pred_opts *opts, struct pflex_study_data *ret,
                           struct pflex_diag *diag);
void pflex_study_data_release(struct pflex_study_data *d);

/* The prediction mode of the paper's headline line (pfi at 30% on the
 * production mix: in-sample, or unseen, or prior) and of optimal's line
 * (loo, or unseen, or prior). */
enum pflex_study_pred pflex_study_headline_pred(const struct pflex_study_data *d);
enum pflex_study_pred pflex_study_optimal_pred(const struct pflex_study_data *d);

/* The runs of one set (all columns kept); name NULL: every run. */
int pflex_study_runs_of_set(const struct pflex_runset *in, const char *name,
                            struct pflex_runset *out);
bool pflex_study_has_set(const struct pflex_runset *runs, const char *name);

#endif
