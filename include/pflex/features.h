/* Named predictor features of a run, and the per-group data set a PFI
 * predictor is fitted on (docs/prediction.md).
 *
 * A feature is named. Derived names:
 *   dram_copy        dram_active x mem_copy_util (the paper's DRAM copy product)
 *   arith_intensity  pipe_tensor_active / dram_active
 *   arch_moe         1 for a MoE job, 0 for dense
 *   task_ft          1 for fine-tuning, 0 for pretraining
 *   log_gpus         natural log of the job's GPU count
 * Any other name is a numeric extra (telemetry) column of the runs file, read
 * verbatim. Utilization-like columns used by the derived features are read as
 * fractions: a column whose values in the runset all lie in [0, 1] is taken as
 * a fraction, one with any value in (1, 100] as a percent and divided by 100.
 *
 * Two names expand to lists when a feature list is parsed: `dcgm` (every
 * numeric telemetry column, see pflex_features_dcgm) and `meta`
 * (arch_moe, task_ft, log_gpus). */
#ifndef PFLEX_FEATURES_H
#define PFLEX_FEATURES_H

#include <stdbool.h>
#include <stddef.h>

#include "pflex/error.h"
#include "pflex/pfi.h"
#include "pflex/runs.h"

/* An ordered list of distinct feature names (owned copies). */
struct pflex_featlist {
  char **names;
  size_t n;
};

/* Sets *f to the empty list; release frees the names and leaves it empty. */
void pflex_featlist_init(struct pflex_featlist *f);
void pflex_featlist_release(struct pflex_featlist *f);
/* Appends name unless already present. 0 or -ENOMEM. */
int pflex_featlist_add(struct pflex_featlist *f, const char *name);
/* Deep copy into *ret (initialised by the call). */
int pflex_featlist_copy(const struct pflex_featlist *src, struct pflex_featlist *ret);

/* Parses a comma-separated list of names, expanding `meta` and `dcgm` (the
 * latter over the runs `runs[0..nruns)` of set). -EINVAL (diag says why) on an
 * empty list or empty name. */
int pflex_featlist_parse(const char *spec, const struct pflex_runset *set, const size_t *runs,
                         size_t nruns, struct pflex_featlist *ret, struct pflex_diag *diag);

/* The numeric DCGM telemetry columns of set: every extra column that holds a
 * finite number on each of runs[0..nruns), except columns known not to be GPU
 * telemetry (provenance, *_sd, mfu, tflops, pfi*, run/seed/repeat ids; see
 * docs/prediction.md). Appended to *f in the runset's column order. */
int pflex_features_dcgm(const struct pflex_runset *set, const size_t *runs, size_t nruns,
                        struct pflex_featlist *f);

/* The value of feature `name` on run i of set. -ENOENT: a column it needs is
 * absent; -ENODATA: the cell is empty (or arch/task unknown for metadata);
 * -EINVAL: not a number; -ERANGE: a utilization outside [0, 100]; -EDOM:
 * arith_intensity with dram_active == 0. When diag is not NULL its column
 * names the column at fault. */
int pflex_feature_value(const struct pflex_runset *set, size_t i, const char *name, double *ret,
                        struct pflex_diag *diag);

/* The per-group rows a predictor is fitted on or applied to. */
struct pflex_dataset {
  size_t n; /* groups (rows) */
  struct pflex_featlist feats;
  char **groups; /* group names */
  enum pflex_arch *arch;
  enum pflex_task *task;
  double *x;        /* n x feats.n, row-major: features of the group's uncapped run */
  double *y;        /* the group's PFI; NAN when it has no usable capped run */
  size_t *nruns;    /* runs in the group (after the set filter) */
  size_t *uncapped; /* index into the runset of the group's uncapped run */
};

/* Sets *d to the empty data set; release frees its arrays and leaves it empty. */
void pflex_dataset_init(struct pflex_dataset *d);
void pflex_dataset_release(struct pflex_dataset *d);

/* Builds one row per sweep group of set, restricted to runs whose `set` value
 * equals set_filter (all runs when NULL); groups left empty are dropped. The
 * target y is the group's PFI computed by pflex_pfi_compute with the options
 * pfi (its draws ignored: no CI); pfi NULL means the paper's Eq. 1 and 3: the
 * mean per-cap index over the capped runs, excluding only those with
 * T == T_max. Features come from the group's uncapped run. With need_target, a group without a
 * usable capped run fails with -PFLEX_E_NOPOINTS. A missing feature fails with the error of
 * pflex_feature_value and a diag naming the group and the feature. */
int pflex_dataset_build(const struct pflex_runset *set, const char *set_filter,
                        const struct pflex_featlist *feats, const struct pflex_pfi_opts *pfi,
                        bool need_target, struct pflex_dataset *ret, struct pflex_diag *diag);

#endif
