/* Objectives as allocator weights (include/pflex/objective.h). */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "pflex/objective.h"

static const char *const names[PFLEX_OBJECTIVE_N] = {"tokens", "progress"};

const char *pflex_objective_name(enum pflex_objective o) {
  return (unsigned)o < PFLEX_OBJECTIVE_N ? names[o] : "unknown";
}

int pflex_objective_parse(const char *name, enum pflex_objective *ret) {
  for (unsigned i = 0; name && i < PFLEX_OBJECTIVE_N; i++)
    if (strcmp(name, names[i]) == 0) {
      *ret = (enum pflex_objective)i;
      return 0;
    }
  return -EINVAL;
}

int pflex_objective_scale(enum pflex_objective o, int gpus, double t_max, double *ret_scale) {
  switch (o) {
  case PFLEX_OBJECTIVE_TOKENS: *ret_scale = 1; return 0;
  case PFLEX_OBJECTIVE_PROGRESS:
    if (gpus <= 0 || !(t_max > 0) || !isfinite(t_max)) return -EINVAL;
    *ret_scale = gpus / t_max; /* GPUs x T / T_max summed: effective GPUs */
    return 0;
  default: return -EINVAL;
  }
}

static double job_t_max(const struct pflex_alloc_job *j) {
  return j->t_max > 0 ? j->t_max : j->curve ? pflex_curve_t_max(j->curve) : 0;
}

int pflex_objective_apply(enum pflex_objective o, struct pflex_alloc_job *jobs, size_t n,
                          size_t *ret_bad) {
  double s;
  for (size_t i = 0; i < n; i++) /* check all first: nothing half-applied */
    if (pflex_objective_scale(o, jobs[i].gpus, job_t_max(&jobs[i]), &s)) {
      if (ret_bad) *ret_bad = i;
      return -EINVAL;
    }
  for (size_t i = 0; i < n; i++) {
    pflex_objective_scale(o, jobs[i].gpus, job_t_max(&jobs[i]), &s);
    jobs[i].weight *= s;
  }
  return 0;
}
