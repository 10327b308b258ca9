/* Job sets (include/pflex/jobs.h): allocator jobs with the names and curves
 * they point to, and their construction from sweep groups. No I/O here; the
 * JSON reader lives in src/io/jobs.c. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/jobset_internal.h"
#include "pflex/features.h"
#include "pflex/gpu_models.h"
#include "pflex/jobs.h"
#include "pflex/pfi.h"

void pflex_jobset_init(struct pflex_jobset *set) {
  memset(set, 0, sizeof *set);
}

void pflex_jobset_release(struct pflex_jobset *set) {
  if (!set) return;
  for (size_t i = 0; i < set->n; i++) {
    if (set->curves) pflex_curve_free(set->curves[i]);
    if (set->names) free(set->names[i]);
    if (set->gpu) free(set->gpu[i]);
  }
  free(set->jobs);
  free(set->curves);
  free(set->names);
  free(set->gpu);
  free(set->pfi_true);
  pflex_jobset_init(set);
}

int pflex__jobset_alloc(struct pflex_jobset *set, size_t n) {
  size_t m = n ? n : 1;
  set->jobs = calloc(m, sizeof *set->jobs);
  set->curves = calloc(m, sizeof *set->curves);
  set->names = calloc(m, sizeof *set->names);
  set->gpu = calloc(m, sizeof *set->gpu);
  set->pfi_true = calloc(m, sizeof *set->pfi_true);
  if (!set->jobs || !set->curves || !set->names || !set->gpu || !set->pfi_true) {
    pflex_jobset_release(set);
    return -ENOMEM;
  }
  set->n = n;
  for (size_t i = 0; i < n; i++) {
    pflex_alloc_job_init(&set->jobs[i]);
    set->pfi_true[i] = NAN;
  }
  return 0;
}

size_t pflex_jobs_range_grid(double lo_w, double hi_w, int gpus, double p_max, double grid_w[5]) {
  const double *caps;
  size_t nc = pflex_pfi_paper_grid(gpus, &caps) - 1, k = 0; /* the capped runs: not the last */
  for (size_t i = 0; i < nc; i++) {
    double cap = pflex_gpu_cap_relative(caps[i], lo_w, hi_w);
    if (cap * gpus < p_max) grid_w[k++] = cap * gpus;
  }
  return k;
}

size_t pflex_jobs_paper_grid(int gpus, double p_max, double grid_w[5]) {
  return pflex_jobs_range_grid(200.0, 700.0, gpus, p_max, grid_w);
}

size_t pflex_jobs_gpu_grid(const char *gpu, double cap_lo_w, double cap_hi_w, int gpus,
                           double p_max, double grid_w[5]) {
  struct pflex_gpu_limits l;
  if (pflex_gpu_limits_resolve(gpu, cap_lo_w, cap_hi_w, &l)) return 0;
  return pflex_jobs_range_grid(l.min_w, l.default_w, gpus, p_max, grid_w);
}

int pflex_jobs_from_runs(const struct pflex_runset *runs, struct pflex_jobset *ret_set,
                         struct pflex_diag *diag) {
  struct pflex_group *g = NULL;
  size_t ng = 0;
  int err = pflex_runset_groups(runs, &g, &ng);
  if (err) return err;
  struct pflex_jobset set;
  pflex_jobset_init(&set);
  struct pflex_curve_point *pts = NULL;
  if ((err = pflex__jobset_alloc(&set, ng))) goto out;
  set.unit = runs->unit;
  for (size_t k = 0; k < ng; k++) {
    const struct pflex_run *top = &runs->runs[g[k].uncapped];
    struct pflex_alloc_job *j = &set.jobs[k];
    free(pts);
    err = -ENOMEM;
    if (!(pts = malloc(g[k].n * sizeof *pts))) goto out;
    double lowest_cap = INFINITY;
    for (size_t m = 0; m < g[k].n; m++) {
      const struct pflex_run *r = &runs->runs[g[k].runs[m]];
      pts[m] = (struct pflex_curve_point){r->power_w, r->tput, r->cap_w};
      if (r->cap_w < lowest_cap) lowest_cap = r->cap_w;
    }
    if ((err = pflex_curve_new_measured(pts, g[k].n, PFLEX_INTERP_STEFFEN, &set.curves[k]))) {
      pflex_diag_set(diag, err, runs->source ? runs->source : "", top->line, "power_w",
                     "group '%s': cannot build its power-throughput curve", g[k].name);
      goto out;
    }
    err = -ENOMEM;
    if (!(set.names[k] = strdup(g[k].name)) || !(set.gpu[k] = strdup(top->gpu))) goto out;
    j->name = set.names[k];
    j->curve = set.curves[k];
    j->gpus = top->gpus;
    j->arch = top->arch;
    j->task = top->task;
    /* Down to the GPU's lowest limit (the data's lowest cap for a type pflex
     * does not know), up to the reference run's cap. */
    struct pflex_gpu_limits lim;
    if ((err = pflex_gpu_limits_resolve(top->gpu, lowest_cap, top->cap_w, &lim))) goto out;
    j->cap_min_w = fmin(lim.min_w, lowest_cap);
    j->cap_max_w = top->cap_w;
    /* The predictor's definition (features.h): utilizations as fractions. */
    double dram;
    j->dram_copy =
        pflex_feature_value(runs, g[k].uncapped, "dram_copy", &dram, NULL) == 0 ? dram : NAN;
    /* Eq. 1 against the uncapped run, as the paper computes it. */
    double pfi;
    set.pfi_true[k] = pflex_pfi_group(runs, &g[k], NULL, &pfi) == 0 ? pfi : NAN;
    j->pfi = set.pfi_true[k];
  }
  err = 0;
  *ret_set = set;
  pflex_jobset_init(&set);
out:
  free(pts);
  pflex_jobset_release(&set);
  pflex_groups_free(g, ng);
  return err;
}
