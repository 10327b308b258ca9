/* Internal pieces of the twin shared by its files (src/core/twin_*.c). */
#ifndef PFLEX_CORE_TWIN_INTERNAL_H
#define PFLEX_CORE_TWIN_INTERNAL_H

#include "pflex/twin.h"

/* The settled state of a job under a per-GPU power target (INFINITY = none):
 * clocks and relative times of block A (compute with interleaved memory work)
 * and block B (long memory/network phases), step time relative to f_max. */
struct pflex__twin_state {
  double f_a, f_b; /* SM clocks of the two blocks */
  double t_a, t_b; /* their times, relative to the step at f_max */
  double t_comp;   /* clock-bound compute time (part of t_a) */
  double t_comm;   /* network-bound time */
  double tau;      /* step time relative to f_max */
  double power;    /* time-averaged per-GPU power */
  double sm_clock; /* time-averaged SM clock */
  bool limited;    /* a clock is below f_max */
};
int pflex__twin_state(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job,
                      double target, struct pflex__twin_state *ret);
/* DRAM bandwidth in use during long (latency-bound) memory phases, relative
 * to peak, against 0.78 in streaming memory-bound phases. */
#define PFLEX__TWIN_DRAM_LONG 0.3
/* SM switching activity during those phases: many small kernels keep the SMs
 * partly busy (between mem_activity's 0.3 and full GEMM activity). */
#define PFLEX__TWIN_ACT_LONG 0.45

/* The job's communication share of step time, at most 60% of what is not compute-bound. */
double pflex__twin_comm(const struct pflex_twin_job *job);
/* Fills the noise-free telemetry of job in state st. */
void pflex__twin_metrics(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job,
                         const struct pflex__twin_state *st, double metrics[PFLEX_TWIN_NMETRICS]);
/* Per-GPU gr_engine_active of job in state st. */
double pflex__twin_util(const struct pflex_twin_job *job, const struct pflex__twin_state *st);

/* Per-GPU power and job throughput of pflex_twin_eval, without telemetry (fast path). */
int pflex__twin_power_tput(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job,
                           double cap_w, double *ret_power, double *ret_tput);

/* The standard normal draws pflex_twin_eval_noisy applies to power and
 * throughput for seed. */
int pflex__twin_noise_z(uint64_t seed, double *ret_zp, double *ret_zt);

/* Seed of the run of group `name` at cap_w, derived from the set seed: the same
 * run gets the same noise whichever grid it is part of. */
uint64_t pflex__twin_run_seed(uint64_t seed, const char *name, double cap_w);

/* Noise of the reference set's points: the paper's within-run standard errors
 * (0.04% power, 0.05% throughput), 3% on telemetry. */
void pflex__twin_reference_noise(struct pflex_twin_noise *noise);

#endif
