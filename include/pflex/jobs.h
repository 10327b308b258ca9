/* Job sets: the allocator's input with the memory it points to (names,
 * curves), built from a runs set (each sweep group one job with its measured
 * curve) or read from a jobs JSON file (docs/allocation.md). */
#ifndef PFLEX_JOBS_H
#define PFLEX_JOBS_H

#include <stddef.h>

#include "pflex/alloc.h"
#include "pflex/error.h"
#include "pflex/runs.h"

struct pflex_jobset {
  struct pflex_alloc_job *jobs; /* n jobs; their name and curve point into the fields below */
  struct pflex_curve **curves;  /* owned, n entries (NULL for a job without a curve) */
  char **names;                 /* owned, n entries */
  char **gpu;                   /* owned GPU type per job, n entries */
  double *pfi_true;             /* PFI (Eq. 1) of a measured curve's own points, NAN if none */
  size_t n;
  enum pflex_tput_unit unit; /* throughput unit of the curves */
};

/* Sets *set to the empty job set; release frees jobs, names and curves and leaves it empty. */
void pflex_jobset_init(struct pflex_jobset *set);
void pflex_jobset_release(struct pflex_jobset *set);

/* One job per sweep group of runs: a measured (Steffen) curve through the
 * group's (power_w, tput, cap_w) runs; gpus, GPU type, arch and task from the
 * group; dram_copy = the DRAM copy product of the uncapped run (feature
 * `dram_copy` of features.h) when its columns are there (NAN otherwise);
 * pfi = the group's Eq. 1 PFI against its uncapped run (the true value, for
 * the pfi strategy with perfect knowledge). Cap limits: [min(the GPU's
 * lowest limit, lowest cap), the reference run's cap]; for a GPU type pflex
 * does not know, [lowest cap, highest cap]. */
int pflex_jobs_from_runs(const struct pflex_runset *runs, struct pflex_jobset *ret_set,
                         struct pflex_diag *diag);

/* The aggregate powers of the paper's cap grid for a job (paper.md section 2):
 * per-GPU caps 200-600 W by 100 for jobs of up to 8 GPUs, 200, 500, 600 W for
 * larger ones, times gpus, keeping those below p_max. Returns the count
 * (at most 5) written to grid_w. That is the grid of a GPU whose limits are
 * 200-700 W (H100, H200); pflex_jobs_range_grid places it in another range. */
size_t pflex_jobs_paper_grid(int gpus, double p_max, double grid_w[5]);

/* The paper's grid placed in the per-GPU limit range [lo_w, hi_w]
 * (pflex_gpu_cap_relative: 200 W -> lo_w, 700 W -> hi_w), times gpus, keeping
 * those below p_max; the count (at most 5). */
size_t pflex_jobs_range_grid(double lo_w, double hi_w, int gpus, double p_max, double grid_w[5]);

/* The grid in GPU type gpu's own range: its lowest and default limits from
 * the GPU table, or for a type pflex does not know the job's cap range
 * [cap_lo_w, cap_hi_w]; 0 when neither is known. */
size_t pflex_jobs_gpu_grid(const char *gpu, double cap_lo_w, double cap_hi_w, int gpus,
                           double p_max, double grid_w[5]);

#endif
