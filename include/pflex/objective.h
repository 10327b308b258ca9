/* What an allocation maximizes (docs/study.md, "Objective"; issue 12 item 3).
 *
 * - PFLEX_OBJECTIVE_TOKENS: the total throughput, sum of T_i (the paper's
 *   objective). Meaningful only when every job's throughput is in one unit
 *   and the units are comparable (tokens/s of similar models).
 * - PFLEX_OBJECTIVE_PROGRESS: sum over jobs of GPUs_i x T_i / T_max_i, the
 *   GPUs still turned into training progress ("effective GPUs"): each job's
 *   kept fraction of its own speed, weighted by its size. Needs no common
 *   unit.
 *
 * The one place where an objective becomes the allocator's per-job weight:
 * `pflex allocate --objective`, the controller's `objective` and `pflex
 * study --objective` all go through pflex_objective_scale. */
#ifndef PFLEX_OBJECTIVE_H
#define PFLEX_OBJECTIVE_H

#include <stddef.h>

#include "pflex/alloc.h"

enum pflex_objective {
  PFLEX_OBJECTIVE_TOKENS = 0,
  PFLEX_OBJECTIVE_PROGRESS,
  PFLEX_OBJECTIVE_N
};

/* "tokens", "progress"; "unknown" out of range. */
const char *pflex_objective_name(enum pflex_objective o);
/* The name's objective; -EINVAL for any other name. */
int pflex_objective_parse(const char *name, enum pflex_objective *ret);

/* The factor a job's throughput counts with in the objective: 1 for tokens,
 * gpus / t_max for progress. -EINVAL (nothing written) for progress when
 * gpus <= 0 or t_max is not finite and positive, or an unknown objective. */
int pflex_objective_scale(enum pflex_objective o, int gpus, double t_max, double *ret_scale);

/* Multiplies every job's weight by its scale (t_max from the job, or from
 * its curve when 0). On -EINVAL *ret_bad (may be NULL) is the first job
 * without an uncapped throughput, and no weight has changed. */
int pflex_objective_apply(enum pflex_objective o, struct pflex_alloc_job *jobs, size_t n,
                          size_t *ret_bad);

#endif
