/* The study's input pipeline (include/pflex/study_predict.h): runs of a set,
 * groups and curves, the section-5 model's predictions and their folds, and
 * the prediction sets of pflex_study_run. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pflex/features.h"
#include "pflex/shrink.h"
#include "pflex/study_predict.h"

void pflex_study_pred_opts_init(struct pflex_study_pred_opts *o) {
  *o = (struct pflex_study_pred_opts){
      .features = "dram_copy", .kind = PFLEX_MODEL_OLS, .loco = PFLEX_LOCO_ARCH_TASK};
}

bool pflex_study_has_set(const struct pflex_runset *s, const char *name) {
  for (size_t i = 0; i < s->n; i++)
    if (s->runs[i].set && strcmp(s->runs[i].set, name) == 0) return true;
  return false;
}

int pflex_study_runs_of_set(const struct pflex_runset *in, const char *name,
                            struct pflex_runset *out) {
  pflex_runset_init(out);
  int err = 0;
  for (size_t k = 0; !err && k < in->nextra; k++)
    err = pflex_runset_add_column(out, in->extra_names[k], NULL);
  for (size_t i = 0; !err && i < in->n; i++)
    if (!name || (in->runs[i].set && strcmp(in->runs[i].set, name) == 0))
      err = pflex_runset_append(out, &in->runs[i]);
  out->unit = in->unit;
  if (err) pflex_runset_release(out);
  return err;
}

/* Puts `what: ` before diag's message (or before err's text when it has
 * none) and returns err. */
static int context(struct pflex_diag *diag, int err, const char *what) {
  if (!diag) return err;
  char msg[sizeof diag->message];
  int n = snprintf(msg, sizeof msg, "%s: %s", what,
                   diag->message[0] ? diag->message : pflex_strerror(err));
  if (n >= 0) memcpy(diag->message, msg, sizeof msg); /* truncated if need be */
  return err;
}

static void predictions_release(struct pflex_study_predictions *p) {
  free(p->train_curves);
  pflex_jobset_release(&p->train);
  free(p->unseen);
  free(p->in);
  free(p->loo);
  free(p->loco);
  free(p->prior);
  free(p->loo_fold);
  free(p->loco_fold);
  for (int m = 0; m < PFLEX_PRED_N; m++)
    free(p->sd[m]);
  if (p->fitted) pflex_model_release(&p->model);
  memset(p, 0, sizeof *p);
}

/* The data set of the model: the groups' features, or with none of the
 * features' columns there (or spec NULL: the prior asked for), no features
 * (the prior, *ret_prior). */
static int model_dataset(const struct pflex_runset *runs, const char *filter, const char *spec,
                         struct pflex_dataset *d, bool *ret_prior, char *missing, size_t nmissing,
                         struct pflex_diag *diag) {
  struct pflex_featlist none, feats;
  pflex_featlist_init(&none);
  pflex_featlist_init(&feats);
  struct pflex_dataset groups;
  pflex_dataset_init(d);
  int err = pflex_dataset_build(runs, filter, &none, NULL, true, &groups, diag);
  if (err) return context(diag, err, "cannot compute the groups' PFI");
  if (!spec && ret_prior) {
    *ret_prior = true;
    *d = groups;
    return 0;
  }
  err = pflex_featlist_parse(spec, runs, groups.uncapped, groups.n, &feats, diag);
  if (!err) err = pflex_dataset_build(runs, filter, &feats, NULL, true, d, diag);
  /* A name that is itself the missing column is not a feature of these runs
   * at all (a typo, as `pflex fit` says): only the telemetry behind a known
   * feature may be missing, and then the prior stands in. */
  bool named = false;
  for (size_t k = 0; err == -ENOENT && diag && k < feats.n; k++)
    named |= strcmp(feats.names[k], diag->column) == 0;
  pflex_featlist_release(&feats);
  pflex_dataset_release(&groups);
  if (ret_prior) *ret_prior = false;
  if (ret_prior && missing && !named && (err == -ENOENT || err == -ENODATA)) {
    /* No telemetry for the features: the population prior. */
    snprintf(missing, nmissing, "%s", diag ? diag->column : "");
    pflex_dataset_release(d);
    pflex_diag_clear(diag);
    *ret_prior = true;
    err = pflex_dataset_build(runs, filter, &none, NULL, true, d, diag);
  }
  if (err) pflex_dataset_release(d);
  return err ? context(diag, err, "cannot build the predictor's data set") : 0;
}

/* Names sorted for lookup (ties in index order), so that finding every job's
 * group costs O(n log n), not O(n^2). */
struct name_at {
  const char *name;
  size_t at;
};

static int cmp_name_at(const void *a, const void *b) {
  const struct name_at *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* The smallest index with this name in the sorted ix[0..n) (what a linear
 * search from the start finds), or SIZE_MAX when absent. */
static size_t name_find(const struct name_at *ix, size_t n, const char *name) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp(ix[mid].name, name) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && strcmp(ix[lo].name, name) == 0 ? ix[lo].at : SIZE_MAX;
}

/* Row of the model's training groups for each job; -PFLEX_E_NOPOINTS names
 * a job the model has no PFI for. */
static int job_rows(const struct pflex_model *m, const struct pflex_jobset *js, size_t *rows,
                    struct pflex_diag *diag) {
  struct name_at *ix = malloc((m->n ? m->n : 1) * sizeof *ix);
  if (!ix) return -ENOMEM;
  for (size_t k = 0; k < m->n; k++)
    ix[k] = (struct name_at){m->groups[k].group, k};
  qsort(ix, m->n, sizeof *ix, cmp_name_at);
  int err = 0;
  for (size_t i = 0; !err && i < js->n; i++)
    if ((rows[i] = name_find(ix, m->n, js->names[i])) == SIZE_MAX)
      err = pflex_diag_set(diag, -PFLEX_E_NOPOINTS, NULL, 0, NULL,
                           "group '%s' has no PFI (no usable capped run)", js->names[i]);
  free(ix);
  return err;
}

/* One SD per group: pflex_shrink_fold_sd of the predictions against the
 * measured PFIs over the other folds (all at once: pflex_shrink_fold_sds). */
static double *fold_sds(const double *pred, const struct pflex_jobset *js, const int *fold) {
  double *sd = calloc(js->n ? js->n : 1, sizeof *sd);
  if (sd && pflex_shrink_fold_sds(pred, js->pfi_true, fold, js->n, sd)) {
    free(sd);
    sd = NULL;
  }
  return sd;
}

/* The SDs of the fitted model's predictions: in-sample values take the LOO
 * errors' (an in-sample residual understates the error on a new job). */
static int fitted_sds(const struct pflex_jobset *js, struct pflex_study_predictions *p) {
  if (p->fell_back) {
    p->sd[PFLEX_PRED_PRIOR] = fold_sds(p->prior, js, p->loo_fold);
    return p->sd[PFLEX_PRED_PRIOR] ? 0 : -ENOMEM;
  }
  p->sd[PFLEX_PRED_IN_SAMPLE] = fold_sds(p->loo, js, p->loo_fold);
  p->sd[PFLEX_PRED_LOO] = fold_sds(p->loo, js, p->loo_fold);
  p->sd[PFLEX_PRED_LOCO] = fold_sds(p->loco, js, p->loco_fold);
  return p->sd[PFLEX_PRED_IN_SAMPLE] && p->sd[PFLEX_PRED_LOO] && p->sd[PFLEX_PRED_LOCO] ? 0
                                                                                      : -ENOMEM;
}

/* The model fitted on these groups: in-sample, LOO and LOCO predictions (or
 * the prior's LOO values), and the folds, from the data set's own fold
 * builder mapped to the groups. */
static int predict_fitted(const struct pflex_runset *runs, const struct pflex_jobset *js,
                          const struct pflex_study_pred_opts *o, struct pflex_study_predictions *p,
                          struct pflex_diag *diag) {
  struct pflex_dataset d;
  bool prior_only = o->kind == PFLEX_MODEL_PRIOR;
  int err = model_dataset(runs, NULL, prior_only ? NULL : o->features, &d, &p->fell_back,
                          p->missing, sizeof p->missing, diag);
  if (err) return err;
  struct pflex_fit_opts fo = {.kind = p->fell_back ? PFLEX_MODEL_PRIOR : o->kind, .lambda = -1};
  pflex_model_init(&p->model);
  p->fitted = true;
  size_t n = js->n, m = d.n ? d.n : 1;
  size_t *rows = calloc(n ? n : 1, sizeof *rows);
  int *dfold = calloc(m, sizeof *dfold);
  double *a = calloc(n ? n : 1, sizeof *a), *b = calloc(n ? n : 1, sizeof *b);
  double *c = calloc(n ? n : 1, sizeof *c);
  p->loo_fold = calloc(n ? n : 1, sizeof *p->loo_fold);
  p->loco_fold = calloc(n ? n : 1, sizeof *p->loco_fold);
  err = rows && dfold && a && b && c && p->loo_fold && p->loco_fold ? 0 : -ENOMEM;
  if (!err && (err = pflex_model_fit(&d, &fo, o->loco, &p->model)))
    context(diag, err, "cannot fit the PFI model");
  if (!err) err = job_rows(&p->model, js, rows, diag);
  if (!err) pflex_folds_loco(&d, o->loco, dfold); /* model groups are d's rows */
  for (size_t i = 0; !err && i < n; i++) {
    const struct pflex_model_group *g = &p->model.groups[rows[i]];
    double pr = pflex_model_prior(&p->model, js->jobs[i].arch, js->jobs[i].task);
    /* Out of sample, a fold that could not be fitted stays without a
     * prediction: the prior here was fitted on every group, the held-out
     * one included. */
    a[i] = isfinite(g->fitted) ? g->fitted : pr;
    b[i] = isfinite(g->loo) ? g->loo : NAN;
    c[i] = isfinite(g->loco) ? g->loco : NAN;
    p->loco_unfitted += !isfinite(g->loco);
    p->loco_fold[i] = dfold[rows[i]];
  }
  if (!err) pflex_folds_loo(n, p->loo_fold);
  if (!err && p->fell_back) {
    p->prior = b, b = NULL;
    p->loco_unfitted = 0;
  } else if (!err) {
    p->in = a, p->loo = b, p->loco = c;
    a = b = c = NULL;
  }
  free(a);
  free(b);
  free(c);
  free(rows);
  free(dfold);
  pflex_dataset_release(&d);
  return err ? err : fitted_sds(js, p);
}

/* The training groups' measured curves, which shape the unseen jobs'. */
static int train_curves(const struct pflex_runset *train, const char *filter,
                        struct pflex_study_predictions *p, struct pflex_diag *diag) {
  struct pflex_runset tr;
  int err = pflex_study_runs_of_set(train, filter, &tr);
  if (err) return err;
  err = pflex_jobs_from_runs(&tr, &p->train, diag);
  pflex_runset_release(&tr);
  if (err) return context(diag, err, "cannot use the training runs");
  if (!(p->train_curves = calloc(p->train.n ? p->train.n : 1, sizeof *p->train_curves)))
    return -ENOMEM;
  for (size_t i = 0; i < p->train.n; i++)
    if (p->train.curves[i]) p->train_curves[p->ntrain++] = p->train.curves[i];
  return 0;
}

/* A model fitted on other runs (their headline set when they have one)
 * predicts every job from its uncapped run; a job whose run lacks a feature
 * gets the prior's value. */
static int predict_unseen(const struct pflex_runset *train, const struct pflex_runset *runs,
                          const struct pflex_jobset *js, const struct pflex_study_pred_opts *o,
                          struct pflex_study_predictions *p, struct pflex_diag *diag) {
  const char *filter = pflex_study_has_set(train, "headline") ? "headline" : NULL;
  struct pflex_dataset d;
  int err = model_dataset(train, filter, o->features, &d, NULL, NULL, 0, diag);
  if (err) return context(diag, err, "training runs");
  struct pflex_fit_opts fo = {.kind = o->kind, .lambda = -1};
  pflex_model_init(&p->model);
  p->fitted = true;
  err = pflex_model_fit(&d, &fo, o->loco, &p->model);
  pflex_dataset_release(&d);
  if (err) return context(diag, err, "cannot fit the PFI model on the training runs");
  if ((err = train_curves(train, filter, p, diag))) return err;
  struct pflex_group *g = NULL;
  size_t ng = 0;
  if (!(p->unseen = calloc(js->n ? js->n : 1, sizeof *p->unseen))) return -ENOMEM;
  if ((err = pflex_runset_groups(runs, &g, &ng))) return err;
  struct name_at *ix = malloc((ng ? ng : 1) * sizeof *ix);
  if (!ix) err = -ENOMEM;
  for (size_t k = 0; !err && k < ng; k++)
    ix[k] = (struct name_at){g[k].name, k};
  if (!err) qsort(ix, ng, sizeof *ix, cmp_name_at);
  for (size_t i = 0; !err && i < js->n; i++) {
    size_t k = name_find(ix, ng, js->names[i]);
    bool was_prior = false;
    err = k < ng ? pflex_model_predict_run(&p->model, runs, g[k].uncapped, true, &p->unseen[i],
                                           &was_prior, diag)
                 : -ENOENT;
    if (err)
      pflex_diag_set(diag, err, NULL, 0, NULL, "cannot predict group '%s': %s", js->names[i],
                     pflex_strerror(err));
    p->unseen_prior += was_prior;
  }
  free(ix);
  pflex_groups_free(g, ng);
  /* Jobs never seen: the model's larger out-of-sample error, as they may
   * come from a cluster (or GPU) it never saw. */
  double e = fmax(p->model.loo.rmse, p->model.loco.rmse);
  if (!err && !(p->sd[PFLEX_PRED_UNSEEN] = calloc(js->n ? js->n : 1, sizeof(double))))
    err = -ENOMEM;
  for (size_t i = 0; !err && i < js->n; i++)
    p->sd[PFLEX_PRED_UNSEEN][i] = isfinite(e) ? e : NAN;
  return err;
}

/* The prediction sets of pflex_study_run (pflex_study_predset). */
static void prediction_sets(struct pflex_study_data *d) {
  struct pflex_study_predictions *p = &d->pred;
  struct pflex_study_predset *ps = d->sets;
  size_t n = 0;
  ps[n++] = (struct pflex_study_predset){.mode = PFLEX_PRED_TRUE,
                                         .pfi = d->jobs.pfi_true,
                                         .fold = p->unseen ? NULL : p->loo_fold,
                                         .templates = p->unseen ? p->train_curves : NULL,
                                         .ntemplates = p->ntrain};
  if (p->unseen) {
    ps[n++] = (struct pflex_study_predset){.mode = PFLEX_PRED_UNSEEN,
                                           .pfi = p->unseen,
                                           .templates = p->train_curves,
                                           .ntemplates = p->ntrain};
  } else if (p->in) {
    ps[n++] = (struct pflex_study_predset){.mode = PFLEX_PRED_IN_SAMPLE, .pfi = p->in};
    ps[n++] = (struct pflex_study_predset){.mode = PFLEX_PRED_LOO, .pfi = p->loo,
                                           .fold = p->loo_fold};
    ps[n++] = (struct pflex_study_predset){.mode = PFLEX_PRED_LOCO, .pfi = p->loco,
                                           .fold = p->loco_fold};
  } else {
    ps[n++] = (struct pflex_study_predset){.mode = PFLEX_PRED_PRIOR, .pfi = p->prior,
                                           .fold = p->loo_fold};
  }
  for (size_t k = 0; k < n; k++)
    ps[k].sd = p->sd[ps[k].mode]; /* NULL for true: the PFI is known */
  d->nsets = n;
}

/* The runs of the set, their groups and curves; every group has a curve and
 * a PFI. */
static int study_groups(const struct pflex_runset *all, const char *set, struct pflex_study_data *d,
                        struct pflex_diag *diag) {
  if (!set && pflex_study_has_set(all, "headline")) set = "headline";
  d->set = set;
  if (set && !pflex_study_has_set(all, set))
    return pflex_diag_set(diag, -ENOENT, all->source ? all->source : "", 0, NULL,
                          "no runs of set '%s'", set);
  int err = pflex_study_runs_of_set(all, set, &d->runs);
  if (!err && (err = pflex_jobs_from_runs(&d->runs, &d->jobs, diag))) return err;
  if (!err && (err = pflex_study_groups_from_jobs(&d->jobs, &d->groups, &d->ngroups)))
    return pflex_diag_set(diag, err, all->source ? all->source : "", 0, NULL,
                          "no sweep group with a curve");
  for (size_t i = 0; !err && i < d->jobs.n; i++) {
    if (!d->jobs.curves[i])
      return pflex_diag_set(diag, -PFLEX_E_NOPOINTS, NULL, 0, NULL, "group '%s' has no curve",
                            d->jobs.names[i]);
    if (!isfinite(d->jobs.pfi_true[i]))
      return pflex_diag_set(diag, -PFLEX_E_NOPOINTS, NULL, 0, NULL,
                            "group '%s' has no PFI (no capped run below its throughput)",
                            d->jobs.names[i]);
  }
  return err;
}

int pflex_study_data_build(const struct pflex_runset *all, const char *set,
                           const struct pflex_runset *train,
                           const struct pflex_study_pred_opts *opts, struct pflex_study_data *ret,
                           struct pflex_diag *diag) {
  struct pflex_study_pred_opts def;
  if (!opts) {
    pflex_study_pred_opts_init(&def);
    opts = &def;
  }
  memset(ret, 0, sizeof *ret);
  pflex_runset_init(&ret->runs);
  pflex_jobset_init(&ret->jobs);
  pflex_jobset_init(&ret->pred.train);
  if (!all || !opts->features) return -EINVAL;
  int err = study_groups(all, set, ret, diag);
  if (!err)
    err = train ? predict_unseen(train, &ret->runs, &ret->jobs, opts, &ret->pred, diag)
                : predict_fitted(&ret->runs, &ret->jobs, opts, &ret->pred, diag);
  if (err) {
    pflex_study_data_release(ret);
    return err;
  }
  prediction_sets(ret);
  return 0;
}

void pflex_study_data_release(struct pflex_study_data *d) {
  predictions_release(&d->pred);
  free(d->groups);
  pflex_jobset_release(&d->jobs);
  pflex_runset_release(&d->runs);
  d->groups = NULL;
  d->ngroups = d->nsets = 0;
}

enum pflex_study_pred pflex_study_headline_pred(const struct pflex_study_data *d) {
  return d->pred.unseen ? PFLEX_PRED_UNSEEN : d->pred.in ? PFLEX_PRED_IN_SAMPLE : PFLEX_PRED_PRIOR;
}

enum pflex_study_pred pflex_study_optimal_pred(const struct pflex_study_data *d) {
  return d->pred.unseen ? PFLEX_PRED_UNSEEN : d->pred.in ? PFLEX_PRED_LOO : PFLEX_PRED_PRIOR;
}
