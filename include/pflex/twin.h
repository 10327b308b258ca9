/* The twin: a physical model of a GPU under a power cap running a training job.
 *
 * It has three parts (docs/twin.md):
 *  - GPU types (a table: H100 SXM, H200 SXM, A100 SXM): idle power, settable cap
 *    range, SM clock range, a DVFS curve with a voltage knee, a fixed memory clock;
 *  - a job model: T_max from FLOPs per token and a documented MFU per class, the
 *    compute-bound share of step time, SM activity, DRAM use, and the 13 DCGM
 *    metrics that follow from them;
 *  - the settled operating point under a cap: the SM clock at which board power
 *    meets the cap (GSL Brent root finding), the resulting power and throughput.
 *
 * On top sit the paper's published numbers (twin_paper.c), per-group calibration
 * (twin_calibrate.c), the reconstructed reference set (twin_reference.c) and a
 * population of unseen simulated jobs (twin_population.c). Everything the twin
 * produces is modelled, not measured; the reference set is labelled
 * "reconstructed" and population jobs "simulated". */
#ifndef PFLEX_TWIN_H
#define PFLEX_TWIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pflex/runs.h"

/* ---- GPU types ------------------------------------------------------------ */

struct pflex_twin_gpu {
  const char *name;      /* short name used in runs CSVs: "H100", "H200", "A100" */
  const char *long_name; /* "NVIDIA H200 SXM 141GB" */
  double tdp_w;          /* default (and maximum) power limit */
  double cap_min_w;      /* lowest settable limit */
  double idle_w;         /* board power with the GPU idle at its base clock */
  double f_max_mhz;      /* maximum SM clock */
  double f_min_mhz;      /* lowest SM clock the DVFS governor uses (below it: duty-cycling) */
  double f_knee_mhz;     /* voltage knee: below it the core voltage sits at its floor */
  double v_floor;        /* core voltage below the knee, relative to the voltage at f_max */
  double sm_dyn_w;       /* SM dynamic power at f_max, full voltage, activity 1 */
  double mem_clock_mhz;  /* memory clock (not changed by power capping) */
  double mem_dyn_w;      /* HBM and memory-system power at full DRAM bandwidth */
  double mem_bw_gbs;     /* peak DRAM bandwidth, GB/s */
  double peak_tflops;    /* dense BF16 tensor peak at f_max, TFLOPS */
  double hbm_gib;        /* frame-buffer size, GiB */
  double nvlink_gbs;     /* NVLink bandwidth per direction, GB/s */
};

/* Number of GPU types in the table. */
size_t pflex_twin_gpu_count(void);
/* The i-th GPU type (i < pflex_twin_gpu_count()), or NULL. */
const struct pflex_twin_gpu *pflex_twin_gpu_get(size_t i);
/* The GPU type whose short or long name matches (case-insensitive), or NULL. */
const struct pflex_twin_gpu *pflex_twin_gpu_find(const char *name);

/* ---- Jobs ----------------------------------------------------------------- */

struct pflex_twin_job {
  char model[64];       /* model name, e.g. "Qwen3-32B" */
  enum pflex_arch arch; /* dense or MoE */
  enum pflex_task task; /* pretraining or LoRA fine-tuning */
  double params_b;      /* total parameters, billions */
  double active_b;      /* active parameters per token, billions (= params_b for dense) */
  int gpus, seq_len, batch, ep;
  bool compile, grad_ckpt;

  /* Physics. pflex_twin_job_derive fills these from the configuration above;
   * calibration (reference set) may then adjust compute_share and mem_activity. */
  double mfu;              /* model FLOPs utilization of the uncapped job at f_max */
  double compute_share;    /* share of step time at f_max that scales with 1/f_sm, (0,1] */
  double compute_activity; /* SM switching activity during compute-bound time, relative */
  double mem_activity;     /* SM switching activity during memory/communication-bound time */
  double dram_util;        /* DRAM bandwidth utilization at f_max, 0..1 (follows compute_share:
                              recomputed by pflex_twin_job_refresh) */
  double dram_mix;         /* DRAM intensity of the memory-bound phases relative to the class
                              value (kernel mix; 1 = typical; 0 is read as 1) */
  double comm_share;       /* share of step time in inter-GPU communication, 0..1 */
  double mem_clock_bound; /* r: memory-bound kernels turn clock-bound below r * f_max (0 = never) */
  double phase_split;     /* share of the network-bound time in exposed collectives long enough for
                             the power limiter to hold at their own clock (0 = all interleaved) */
};

/* Fills the physics fields of job from its configuration for GPU type gpu:
 * FLOPs per token, class MFU, compute-bound share, activities, DRAM use.
 * -EINVAL on an incomplete configuration (no params, gpus < 1, unknown arch/task). */
int pflex_twin_job_derive(const struct pflex_twin_gpu *gpu, struct pflex_twin_job *job);

/* Recomputes the fields that follow from compute_share, comm_share and
 * dram_mix (the DRAM utilization); call after changing them. */
void pflex_twin_job_refresh(struct pflex_twin_job *job);

/* Training FLOPs per token of the job (6 N_active for pretraining, 4 N_active
 * for LoRA fine-tuning, +2 N_active with gradient checkpointing). */
double pflex_twin_job_flops_per_token(const struct pflex_twin_job *job);

/* Uncapped job throughput at f_max in tokens/s, before any power limit. */
double pflex_twin_job_t_peak(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job);

/* ---- Operating point under a cap ----------------------------------------- */

#define PFLEX_TWIN_NMETRICS 13

/* Index of each metric in pflex_twin_point.metrics (named by
 * pflex_twin_metric_name). Activities are fractions 0-1, mem_copy_util a
 * percent, traffic in bytes/s, fb_used in MiB. */
enum pflex_twin_metric {
  PFLEX_TWIN_M_GR_ENGINE = 0,
  PFLEX_TWIN_M_SM_ACTIVE,
  PFLEX_TWIN_M_SM_OCCUPANCY,
  PFLEX_TWIN_M_PIPE_TENSOR,
  PFLEX_TWIN_M_PIPE_FP16,
  PFLEX_TWIN_M_PIPE_FP32,
  PFLEX_TWIN_M_DRAM_ACTIVE,
  PFLEX_TWIN_M_MEM_COPY_UTIL,
  PFLEX_TWIN_M_NVLINK_TX,
  PFLEX_TWIN_M_NVLINK_RX,
  PFLEX_TWIN_M_PCIE_TX,
  PFLEX_TWIN_M_PCIE_RX,
  PFLEX_TWIN_M_FB_USED,
};

/* Name of telemetry metric i (DCGM field in lower case without prefix), or NULL. */
const char *pflex_twin_metric_name(size_t i);

struct pflex_twin_point {
  double cap_w;         /* per-GPU limit asked for */
  double power_w;       /* per-GPU board power */
  double job_power_w;   /* power of all the job's GPUs */
  double sm_clock_mhz;  /* settled SM clock (time average; effective clock when duty-cycled) */
  double mem_clock_mhz; /* memory clock */
  double util;          /* GPU utilization (graphics engine active), 0..1 */
  double tokens_per_s;  /* job throughput */
  double metrics[PFLEX_TWIN_NMETRICS]; /* in the order of pflex_twin_metric_name */
  bool limited; /* true when the cap binds (clock below what the job would run at) */
};

/* Noise of a measured aggregate: coefficients of variation. */
struct pflex_twin_noise {
  double power_cv;  /* relative SD of a power reading */
  double tput_cv;   /* relative SD of a throughput reading */
  double metric_cv; /* relative SD of a telemetry reading */
};

/* The paper's repeat-to-repeat CVs (0.4% power, 0.5% throughput) and 3% on telemetry. */
void pflex_twin_noise_default(struct pflex_twin_noise *noise);

/* The noise-free operating point of job on GPU type gpu with per-GPU cap cap_w
 * (clamped to [cap_min_w, tdp_w]; a cap above natural draw / 0.98 changes
 * nothing, except slightly for jobs with long memory phases: docs/twin.md). -EINVAL on bad arguments, -ERANGE if the clock cannot be settled. */
int pflex_twin_eval(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job,
                    double cap_w, struct pflex_twin_point *ret);

/* As pflex_twin_eval, plus seeded Gaussian noise (noise NULL = the default);
 * the same seed gives the same point. Power never exceeds the cap by more than
 * the noise. */
int pflex_twin_eval_noisy(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job,
                          double cap_w, const struct pflex_twin_noise *noise, uint64_t seed,
                          struct pflex_twin_point *ret);

/* Per-GPU power the job draws with no limit at all (may exceed the TDP). */
double pflex_twin_natural_power(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job);

/* ---- The paper's published numbers ---------------------------------------- */

enum pflex_twin_set { PFLEX_TWIN_HEADLINE = 0, PFLEX_TWIN_VALIDATION, PFLEX_TWIN_H100 };

struct pflex_twin_paper_group {
  const char *name;  /* unique, CSV-safe group name */
  const char *table; /* where the numbers come from, e.g. "Table 6" */
  enum pflex_twin_set set;
  const char *gpu; /* "H200" or "H100" */
  int gpus;
  const char *model;
  enum pflex_arch arch;
  enum pflex_task task;
  double params_b, active_b;
  int seq_len, batch, ep;
  bool compile, grad_ckpt;
  int ncaps;           /* caps in the group's grid (runs in the group) */
  double caps[6];      /* per-GPU caps, ascending, last is the uncapped 700 W run */
  double pfi;          /* published PFI on the group's own grid */
  double ci_lo, ci_hi; /* published 95% CI (Table 6), NAN when not published */
  double pfi4;         /* Table 9: PFI on the 200/500/600/700 grid, NAN when not published */
  const char *unmet4;  /* why the twin cannot meet pfi4 (a documented known miss), or NULL */
};

/* Number of groups the paper publishes (25 headline + 4 validation + 6 H100). */
size_t pflex_twin_paper_count(void);
/* The i-th published group, or NULL. */
const struct pflex_twin_paper_group *pflex_twin_paper_get(size_t i);
/* The published group called name, or NULL. */
const struct pflex_twin_paper_group *pflex_twin_paper_find(const char *name);
/* "headline", "validation" or "h100". */
const char *pflex_twin_set_name(enum pflex_twin_set set);
/* Fills job's configuration (not its physics) from a published group. */
void pflex_twin_paper_job(const struct pflex_twin_paper_group *g, struct pflex_twin_job *job);

/* ---- Calibration, reference set, check ------------------------------------ */

struct pflex_twin_calib {
  double pfi, pfi4; /* reconstructed PFI on the group's grid and on the 4-cap grid (NAN if n/a) */
  double compute_share; /* calibrated parameters (see twin_calibrate.c) */
  double compute_activity;
  double mem_clock_bound;
  double phase_split;
  bool met;    /* every published target met within tolerance */
  int nparams; /* parameters adjusted (1, 2, or 3 when r was needed) */
};

/* Tolerances: 6-cap / own grid PFI within 0.01, Table 9 4-cap PFI within 0.03. */
#define PFLEX_TWIN_TOL_PFI 0.01
#define PFLEX_TWIN_TOL_PFI4 0.03

/* Calibrates job (configured from g and derived) so that the noisy sweep drawn
 * with seed gives g's published PFI(s); writes the calibrated job back.
 * Returns 0 also when the targets cannot be met (ret->met false). */
int pflex_twin_calibrate(const struct pflex_twin_paper_group *g, const struct pflex_twin_gpu *gpu,
                         struct pflex_twin_job *job, uint64_t seed, struct pflex_twin_calib *ret);

/* Appends the sweep of job over caps (per-GPU, ascending, last = uncapped TDP)
 * to set, with seeded noise, power_sd/tokens_sd at the paper's repeat CVs, the
 * 13 telemetry columns and a "provenance" column. */
int pflex_twin_sweep(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job,
                     const char *group, const char *set_name, const char *provenance,
                     const double *caps, size_t ncaps, uint64_t seed, struct pflex_runset *set);

/* The calibrated job of the published group called name, as the reference set
 * built with seed uses it (e.g. for the simulated GPU backend to run a paper
 * job): its GPU type in *ret_gpu, the job in *ret_job, the calibration in
 * *ret_calib (may be NULL). -ENOENT for an unknown group. */
int pflex_twin_reference_job(const char *name, uint64_t seed, const struct pflex_twin_gpu **ret_gpu,
                             struct pflex_twin_job *ret_job, struct pflex_twin_calib *ret_calib);

/* The seed the reference set is built with. */
#define PFLEX_TWIN_REFERENCE_SEED 20260911u

/* Builds the reconstructed reference set (189 runs), calibrated group by group.
 * ret_calib (optional) receives one entry per published group, freed with free(). */
int pflex_twin_reference_build(uint64_t seed, struct pflex_runset *ret_set,
                               struct pflex_twin_calib **ret_calib);

struct pflex_twin_check_row {
  const char *group; /* borrowed from the paper table */
  const char *grid;  /* "own" (the group's grid) or "4-cap" (Table 9) */
  enum pflex_twin_set set;
  double published, reconstructed, diff, tol;
  bool ok;
  const char *known; /* ok is false but this miss is documented (the reason), or NULL */
};

/* Compares a runset with every published PFI (Tables 6, 7, 8 and 9). A group
 * missing from the set is a failed row with reconstructed NAN. The rows array
 * is freed with free(). */
int pflex_twin_check(const struct pflex_runset *set, struct pflex_twin_check_row **ret_rows,
                     size_t *ret_n);

/* One-feature least squares of PFI (own grid) on the uncapped run's DRAM copy
 * product (dram_active x mem_copy_util) over the groups whose set column is
 * set_name (NULL = all groups): in-sample R^2 and leave-one-out R^2 (as the
 * paper's Table 3 row i), and the number of groups used. */
int pflex_twin_dram_fit(const struct pflex_runset *set, const char *set_name, double *ret_r2_in,
                        double *ret_r2_loo, size_t *ret_n);

/* ---- Population of unseen jobs ---------------------------------------------- */

struct pflex_twin_population_opts {
  size_t jobs; /* number of jobs (sweep groups) to draw */
  uint64_t seed;
  const char *const *gpus; /* GPU types to draw from with equal odds (twin names);
                              NULL: H100 and H200 */
  size_t ngpus;
  bool mixed_units; /* each job's throughput also in a unit drawn per job (tokens/s,
                       samples/s, iterations/s): extra columns throughput, throughput_sd,
                       tput_unit (docs/twin.md); false: tokens/s only */
};

/* Draws opts->jobs new jobs from the job model (other models and sizes, GPU
 * types from opts->gpus, GPU counts from the Acme trace) and appends a full
 * 6-cap sweep of each (the paper's caps placed in each GPU's own limit range,
 * pflex_gpu_cap_relative), with telemetry and provenance "simulated", to
 * ret_set (initialized here). -ENOENT when a GPU type is not in the twin's table. */
int pflex_twin_population(const struct pflex_twin_population_opts *opts,
                          struct pflex_runset *ret_set);

/* The same population's jobs without their sweeps: job j's GPU type in
 * ret_gpus[j] and its job in ret_jobs[j] (both arrays of opts->jobs; the
 * runs pflex_twin_population writes are these jobs' sweeps), for a
 * simulation that runs them (pflex sim-cluster). -ENOENT as above. */
int pflex_twin_population_jobs(const struct pflex_twin_population_opts *opts,
                               const struct pflex_twin_gpu **ret_gpus,
                               struct pflex_twin_job *ret_jobs);

/* The name of a population's job `index` (from 0) on `gpu`: "PREFIX-NNNN
 * Dense|MoE PT|FT GPUxCOUNT MODEL" with NNNN = index + 1; pflex_twin_population
 * names its sweep groups so with prefix "sim". Returns snprintf's value. */
int pflex_twin_population_name(char *buf, size_t len, const char *prefix, size_t index,
                               const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job);

#endif
