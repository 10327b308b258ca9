/* Internal pieces of the twin shared by its files (src/core/twin_*.c). */
#ifndef PFLEX_CORE_TWIN_INTERNAL_H
#define PFLEX_CORE_TWIN_INTERNAL_H

#include "pflex/twin.h"

/* Relative step time at SM clock f: compute share scales with f_max/f, the rest does not. */
double pflex__twin_step_rel(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job,
                            double f_mhz);
/* The job's communication share of step time, at most 60% of what is not compute-bound. */
double pflex__twin_comm(const struct pflex_twin_job *job);
/* Per-GPU board power at SM clock f (no limit applied). */
double pflex__twin_power_at(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job,
                            double f_mhz);
/* Fills the noise-free telemetry of job running at SM clock f. */
void pflex__twin_metrics(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job,
                         double f_mhz, double metrics[PFLEX_TWIN_NMETRICS]);
/* Per-GPU gr_engine_active of job at SM clock f. */
double pflex__twin_util(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job,
                        double f_mhz);

/* Index of a few metrics in the metrics array. */
enum {
  PFLEX__M_GR_ENGINE = 0,
  PFLEX__M_SM_ACTIVE,
  PFLEX__M_SM_OCCUPANCY,
  PFLEX__M_PIPE_TENSOR,
  PFLEX__M_PIPE_FP16,
  PFLEX__M_PIPE_FP32,
  PFLEX__M_DRAM_ACTIVE,
  PFLEX__M_MEM_COPY_UTIL,
  PFLEX__M_NVLINK_TX,
  PFLEX__M_NVLINK_RX,
  PFLEX__M_PCIE_TX,
  PFLEX__M_PCIE_RX,
  PFLEX__M_FB_USED,
};

/* PFI (Eq. 1, mean over capped runs) of the noisy sweep of job over caps
 * (ascending, last = uncapped), each run's noise drawn from its own seed. */
int pflex__twin_sweep_pfi(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job,
                          const char *group, const double *caps, size_t ncaps, uint64_t seed,
                          double *ret);

/* Seed of the run of group `name` at cap_w, derived from the set seed: the same
 * run gets the same noise whichever grid it is part of. */
uint64_t pflex__twin_run_seed(uint64_t seed, const char *name, double cap_w);

/* Noise of the reference set's points: the paper's within-run standard errors
 * (0.04% power, 0.05% throughput), 3% on telemetry. */
void pflex__twin_reference_noise(struct pflex_twin_noise *noise);

#endif
