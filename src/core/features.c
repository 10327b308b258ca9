/* Named predictor features and the per-group PFI data set
 * (include/pflex/features.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pflex/features.h"
#include "pflex/pfi.h"

void pflex_featlist_init(struct pflex_featlist *f) {
  memset(f, 0, sizeof *f);
}

void pflex_featlist_release(struct pflex_featlist *f) {
  if (!f) return;
  for (size_t k = 0; k < f->n; k++)
    free(f->names[k]);
  free(f->names);
  pflex_featlist_init(f);
}

int pflex_featlist_add(struct pflex_featlist *f, const char *name) {
  for (size_t k = 0; k < f->n; k++)
    if (strcmp(f->names[k], name) == 0) return 0;
  char **names = realloc(f->names, (f->n + 1) * sizeof *names);
  if (!names) return -ENOMEM;
  f->names = names;
  names[f->n] = strdup(name);
  if (!names[f->n]) return -ENOMEM;
  f->n++;
  return 0;
}

int pflex_featlist_copy(const struct pflex_featlist *src, struct pflex_featlist *ret) {
  struct pflex_featlist f;
  pflex_featlist_init(&f);
  for (size_t k = 0; k < src->n; k++) {
    int err = pflex_featlist_add(&f, src->names[k]);
    if (err) {
      pflex_featlist_release(&f);
      return err;
    }
  }
  *ret = f;
  return 0;
}

/* Extra columns that are not GPU telemetry even when numeric. */
static bool not_telemetry(const char *name) {
  static const char *const exact[] = {"provenance", "mfu", "tflops", "seed", "run",  "run_id",
                                      "repeat",     "rep", "line",   "id",   "step", "steps"};
  for (size_t k = 0; k < sizeof exact / sizeof exact[0]; k++)
    if (strcmp(name, exact[k]) == 0) return true;
  size_t len = strlen(name);
  if (len >= 3 && strcmp(name + len - 3, "_sd") == 0) return true;
  if (strncmp(name, "pfi", 3) == 0) return true;
  if (strstr(name, "tflops") || strstr(name, "mfu")) return true;
  return false;
}

int pflex_features_dcgm(const struct pflex_runset *set, const size_t *runs, size_t nruns,
                        struct pflex_featlist *f) {
  for (size_t k = 0; k < set->nextra; k++) {
    const char *name = set->extra_names[k];
    if (not_telemetry(name)) continue;
    bool numeric = nruns > 0;
    for (size_t r = 0; numeric && r < nruns; r++) {
      double v;
      numeric = pflex_runset_metric(set, runs[r], name, &v) == 0;
    }
    if (!numeric) continue;
    int err = pflex_featlist_add(f, name);
    if (err) return err;
  }
  return 0;
}

int pflex_featlist_parse(const char *spec, const struct pflex_runset *set, const size_t *runs,
                         size_t nruns, struct pflex_featlist *ret, struct pflex_diag *diag) {
  struct pflex_featlist f;
  pflex_featlist_init(&f);
  int err = 0;
  const char *p = spec;
  do {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char name[128];
    if (len == 0 || len >= sizeof name) {
      err =
          pflex_diag_set(diag, -EINVAL, "", 0, "", "empty or overlong feature name in '%s'", spec);
      goto fail;
    }
    memcpy(name, p, len);
    name[len] = '\0';
    if (strcmp(name, "meta") == 0) {
      err = pflex_featlist_add(&f, "arch_moe");
      if (!err) err = pflex_featlist_add(&f, "task_ft");
      if (!err) err = pflex_featlist_add(&f, "log_gpus");
    } else if (strcmp(name, "dcgm") == 0) {
      size_t before = f.n;
      err = pflex_features_dcgm(set, runs, nruns, &f);
      if (!err && f.n == before) {
        err = pflex_diag_set(diag, -PFLEX_E_DATA, "", 0, "",
                             "'dcgm' found no numeric telemetry column");
        goto fail;
      }
    } else {
      err = pflex_featlist_add(&f, name);
    }
    if (err) goto fail;
    p = comma ? comma + 1 : NULL;
  } while (p);
  *ret = f;
  return 0;
fail:
  pflex_featlist_release(&f);
  return err;
}

/* Reads a utilization column as a fraction: the scale (fraction or percent) is
 * decided once per column from all its values in the runset, so that a single
 * low percent value is not mistaken for a fraction within one file. */
static int util_fraction(const struct pflex_runset *set, size_t i, const char *name, double *ret,
                         struct pflex_diag *diag) {
  double v;
  int err = pflex_runset_metric(set, i, name, &v);
  if (err) /* a missing column is the file's, not one line's */
    return pflex_diag_set(diag, err, "", err == -ENOENT ? 0 : set->runs[i].line, name, "%s",
                          err == -ENOENT ? "no such column (this feature is computed from GPU "
                                           "telemetry; the 'prior' model needs none)"
                          : err == -ENODATA ? "empty"
                                            : "not a number");
  if (v < 0 || v > 100)
    return pflex_diag_set(diag, -ERANGE, "", set->runs[i].line, name,
                          "%g is not a utilization (0-1 or 0-100)", v);
  size_t k;
  bool percent =
      pflex_runset_find_column(set, name, &k) == 0 && pflex_runset_column_over_one(set, k);
  *ret = percent ? v / 100.0 : v;
  return 0;
}

int pflex_feature_value(const struct pflex_runset *set, size_t i, const char *name, double *ret,
                        struct pflex_diag *diag) {
  if (i >= set->n) return -EINVAL;
  const struct pflex_run *r = &set->runs[i];
  double a, b;
  int err;
  if (strcmp(name, "dram_copy") == 0) {
    err = util_fraction(set, i, "dram_active", &a, diag);
    if (!err) err = util_fraction(set, i, "mem_copy_util", &b, diag);
    if (err) return err;
    *ret = a * b;
    return 0;
  }
  if (strcmp(name, "arith_intensity") == 0) {
    err = util_fraction(set, i, "pipe_tensor_active", &a, diag);
    if (!err) err = util_fraction(set, i, "dram_active", &b, diag);
    if (err) return err;
    if (b == 0)
      return pflex_diag_set(diag, -EDOM, "", r->line, "dram_active",
                            "is 0: arithmetic intensity undefined");
    *ret = a / b;
    return 0;
  }
  if (strcmp(name, "arch_moe") == 0) {
    if (r->arch == PFLEX_ARCH_UNKNOWN)
      return pflex_diag_set(diag, -ENODATA, "", r->line, "arch", "unknown (dense or moe needed)");
    *ret = r->arch == PFLEX_ARCH_MOE;
    return 0;
  }
  if (strcmp(name, "task_ft") == 0) {
    if (r->task == PFLEX_TASK_UNKNOWN)
      return pflex_diag_set(diag, -ENODATA, "", r->line, "task", "unknown (pt or ft needed)");
    *ret = r->task == PFLEX_TASK_FT;
    return 0;
  }
  if (strcmp(name, "log_gpus") == 0) {
    if (r->gpus <= 0) return pflex_diag_set(diag, -EINVAL, "", r->line, "gpus", "not positive");
    *ret = log((double)r->gpus);
    return 0;
  }
  err = pflex_runset_metric(set, i, name, ret);
  if (err) /* a missing column is the file's, not one line's */
    return pflex_diag_set(diag, err, "", err == -ENOENT ? 0 : r->line, name, "%s",
                          err == -ENOENT ? "no such column (features: dram_copy, arith_intensity, "
                                           "arch_moe, task_ft, log_gpus, or a telemetry column)"
                          : err == -ENODATA ? "empty"
                                            : "not a number");
  return 0;
}

void pflex_dataset_init(struct pflex_dataset *d) {
  memset(d, 0, sizeof *d);
}

void pflex_dataset_release(struct pflex_dataset *d) {
  if (!d) return;
  pflex_featlist_release(&d->feats);
  if (d->groups)
    for (size_t j = 0; j < d->n; j++)
      free(d->groups[j]);
  free(d->groups);
  free(d->arch);
  free(d->task);
  free(d->x);
  free(d->y);
  free(d->nruns);
  free(d->uncapped);
  pflex_dataset_init(d);
}

/* The PFI of the runs idx[0..n) of group name (sorted by cap, the last the
 * uncapped one) by the shared PFI engine; no confidence interval is drawn. */
static int group_pfi(const struct pflex_runset *set, const char *name, size_t *idx, size_t n,
                     const struct pflex_pfi_opts *pfi, double *ret) {
  struct pflex_group g = {.name = name, .runs = idx, .n = n, .uncapped = idx[n - 1]};
  return pflex_pfi_group(set, &g, pfi, ret);
}

static bool set_matches(const struct pflex_run *r, const char *filter) {
  return !filter || (r->set && strcmp(r->set, filter) == 0);
}

int pflex_dataset_build(const struct pflex_runset *set, const char *set_filter,
                        const struct pflex_featlist *feats, const struct pflex_pfi_opts *pfi,
                        bool need_target, struct pflex_dataset *ret, struct pflex_diag *diag) {
  struct pflex_group *g = NULL;
  size_t ng = 0;
  struct pflex_dataset d;
  pflex_dataset_init(&d);
  size_t *idx = malloc((set->n ? set->n : 1) * sizeof *idx);
  int err = idx ? pflex_runset_groups(set, &g, &ng) : -ENOMEM;
  if (err) goto out;
  err = pflex_featlist_copy(feats, &d.feats);
  if (err) goto out;
  size_t p = feats->n, cap = ng ? ng : 1;
  d.groups = calloc(cap, sizeof *d.groups);
  d.arch = calloc(cap, sizeof *d.arch);
  d.task = calloc(cap, sizeof *d.task);
  d.x = calloc(cap * (p ? p : 1), sizeof *d.x);
  d.y = calloc(cap, sizeof *d.y);
  d.nruns = calloc(cap, sizeof *d.nruns);
  d.uncapped = calloc(cap, sizeof *d.uncapped);
  err = -ENOMEM;
  if (!d.groups || !d.arch || !d.task || !d.x || !d.y || !d.nruns || !d.uncapped) goto out;
  for (size_t j = 0; j < ng; j++) {
    size_t n = 0;
    for (size_t k = 0; k < g[j].n; k++)
      if (set_matches(&set->runs[g[j].runs[k]], set_filter)) idx[n++] = g[j].runs[k];
    if (n == 0) continue;
    size_t row = d.n, top = idx[n - 1];
    d.groups[row] = strdup(g[j].name);
    err = -ENOMEM;
    if (!d.groups[row]) goto out;
    d.n++;
    d.arch[row] = set->runs[top].arch;
    d.task[row] = set->runs[top].task;
    d.nruns[row] = n;
    d.uncapped[row] = top;
    double y = NAN;
    err = n > 1 ? group_pfi(set, g[j].name, idx, n, pfi, &y) : -PFLEX_E_NOPOINTS;
    if (err == -PFLEX_E_NOPOINTS && !need_target) err = 0;
    if (err) {
      pflex_diag_set(diag, err, set->source ? set->source : "", 0, "", "group '%s': %s", g[j].name,
                     err == -PFLEX_E_NOPOINTS
                         ? "no usable capped run (every one excluded, or none): PFI undefined"
                         : pflex_strerror(err));
      goto out;
    }
    d.y[row] = y;
    for (size_t f = 0; f < p; f++) {
      struct pflex_diag fd;
      pflex_diag_clear(&fd);
      err = pflex_feature_value(set, top, feats->names[f], &d.x[row * p + f], &fd);
      if (err) {
        pflex_diag_set(diag, err, set->source ? set->source : "", fd.line, fd.column,
                       "group '%s', feature '%s': %s", g[j].name, feats->names[f],
                       fd.message[0] ? fd.message : pflex_strerror(err));
        goto out;
      }
    }
  }
  if (d.n == 0) {
    err = pflex_diag_set(diag, -PFLEX_E_NOPOINTS, set->source ? set->source : "", 0, "",
                         set_filter ? "no run with set '%s'" : "no runs%s",
                         set_filter ? set_filter : "");
    goto out;
  }
  err = 0;
  *ret = d;
out:
  if (err) pflex_dataset_release(&d);
  pflex_groups_free(g, ng);
  free(idx);
  return err;
}
