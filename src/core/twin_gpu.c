/* The GPU half of the twin: a table of GPU types and the DVFS model that
 * settles the SM clock under a power limit (include/pflex/twin.h).
 *
 * Board power at SM clock f (per GPU):
 *   P(f) = idle + mem_dyn * dram_util(f) + sm_dyn * activity(f) * (f/f_max) * V(f)^2
 * with V(f) = v_floor below the voltage knee and rising linearly to 1 at f_max
 * above it. A power limit below P(f_max) makes the governor settle at the clock
 * f* with P(f*) = limit (found with GSL's Brent solver); the memory clock is
 * never changed (paper.md section 4).
 *
 * The limiter averages power over a short window. Work interleaved finely
 * (kernels of one layer) is seen as one load, block A; memory- or
 * network-bound phases long enough to be seen apart (job->phase_split of
 * that work: long all-to-alls, optimizer steps, unfused elementwise passes)
 * form block B, which settles at its own, higher clock. Measured power is the
 * time average of the two.
 *
 * Sources of the numbers (paper.md section 7 unless said otherwise):
 *  - settable limit 200-700 W, TDP 700 W, max SM clock 1980 MHz, memory clock
 *    2619 MHz (H100) and 3201 MHz (H200); idle about 72-86 W (H100), 75 W (H200).
 *  - knee and floor voltage: fitted by hand to the one published H100 cap ->
 *    (power, SM clock) series (200 W/625 MHz ... 700 W/647 W/1969 MHz): the
 *    implied V^2 = (P - idle) / (P_700 - idle) / (f / f_700) is flat (about
 *    0.68, V about 0.825) from 625 to 1132 MHz and rises above about 1380 MHz.
 *  - HBM bandwidth (3.35 TB/s H100 SXM, 4.8 TB/s H200, 2.04 TB/s A100 80GB),
 *    BF16 dense peaks (989 / 989 / 312 TFLOPS), NVLink (450 / 450 / 300 GB/s per
 *    direction) and memory sizes are NVIDIA's data-sheet values.
 *  - sm_dyn_w and mem_dyn_w are modelling assumptions: chosen so that
 *    GEMM-heavy training would draw about 1 kW per GPU at f_max and so runs
 *    power-limited at 700 W (H100/H200 training commonly does), and so that
 *    HBM at full bandwidth costs about 3.5 pJ/bit.
 *  - The governor holds power a little under the limit: the H100 series reads
 *    199/200, 298/300, 395/400, 493/500, 591/600 W, i.e. about
 *    1 - 0.02 cap/700 of the limit; we use target = cap (1 - 0.02 cap/TDP).
 *  - A100 SXM 80GB: TDP 400 W, limit range 100-400 W, max SM clock 1410 MHz,
 *    memory clock 1593 MHz, idle about 55 W; its knee and floor are scaled from
 *    the H100 ones (an assumption, no published A100 series was used).
 *  - Every GPU's limits and idle power come from the GPU table
 *    (core/gpu_models_data.h, docs/gpus.md), except the H100's idle (80 W, the
 *    value the reference set was calibrated with). For the GPUs beyond
 *    H100/H200/A100 (simulated only, never calibrated to a measurement): max
 *    SM and memory clocks, memory bandwidth and size, dense BF16 tensor peak
 *    (FP16 before Ampere) and NVLink (PCIe for PCIe cards, no bridge) are
 *    data-sheet values (docs/gpus.md); the knee sits at 0.7 f_max with the
 *    H100's floor voltage, sm_dyn_w is about 1.4 x the default limit (so
 *    GEMM-heavy training runs power-limited, as on the H100) and mem_dyn_w
 *    about 3.5 pJ/bit for HBM (2.8 for the Blackwells' HBM3e), 7.5 pJ/bit for
 *    GDDR6: all assumptions. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_roots.h>

#include "core/gpu_models_data.h"
#include "core/twin_internal.h"
#include "pflex/gpu_models.h"

static const struct pflex_twin_gpu gpu_table[] = {
    {.name = "H100",
     .long_name = "NVIDIA H100 SXM 80GB",
     .tdp_w = PFLEX__GPU_DEFAULT(PFLEX__GPU_H100),
     .cap_min_w = PFLEX__GPU_MIN(PFLEX__GPU_H100),
     .idle_w = 80, /* the calibrated reference set's value, inside the paper's 72-86 W */
     .f_max_mhz = 1980,
     .f_min_mhz = 210,
     .f_knee_mhz = 1380,
     .v_floor = 0.825,
     .sm_dyn_w = 1000,
     .mem_clock_mhz = 2619,
     .mem_dyn_w = 95,
     .mem_bw_gbs = 3350,
     .peak_tflops = 989,
     .hbm_gib = 80,
     .nvlink_gbs = 450},
    {.name = "H200",
     .long_name = "NVIDIA H200 SXM 141GB",
     .tdp_w = PFLEX__GPU_DEFAULT(PFLEX__GPU_H200),
     .cap_min_w = PFLEX__GPU_MIN(PFLEX__GPU_H200),
     .idle_w = PFLEX__GPU_IDLE(PFLEX__GPU_H200),
     .f_max_mhz = 1980,
     .f_min_mhz = 210,
     .f_knee_mhz = 1380,
     .v_floor = 0.825,
     .sm_dyn_w = 1000,
     .mem_clock_mhz = 3201,
     .mem_dyn_w = 135,
     .mem_bw_gbs = 4800,
     .peak_tflops = 989,
     .hbm_gib = 141,
     .nvlink_gbs = 450},
    {.name = "A100",
     .long_name = "NVIDIA A100 SXM 80GB",
     .tdp_w = PFLEX__GPU_DEFAULT(PFLEX__GPU_A100),
     .cap_min_w = PFLEX__GPU_MIN(PFLEX__GPU_A100),
     .idle_w = PFLEX__GPU_IDLE(PFLEX__GPU_A100),
     .f_max_mhz = 1410,
     .f_min_mhz = 210,
     .f_knee_mhz = 1000,
     .v_floor = 0.825,
     .sm_dyn_w = 500,
     .mem_clock_mhz = 1593,
     .mem_dyn_w = 60,
     .mem_bw_gbs = 2039,
     .peak_tflops = 312,
     .hbm_gib = 80,
     .nvlink_gbs = 300},
    {.name = "A100-PCIE",
     .long_name = "NVIDIA A100 PCIe 80GB",
     .tdp_w = PFLEX__GPU_DEFAULT(PFLEX__GPU_A100_PCIE),
     .cap_min_w = PFLEX__GPU_MIN(PFLEX__GPU_A100_PCIE),
     .idle_w = PFLEX__GPU_IDLE(PFLEX__GPU_A100_PCIE),
     .f_max_mhz = 1410,
     .f_min_mhz = 210,
     .f_knee_mhz = 1000,
     .v_floor = 0.825,
     .sm_dyn_w = 420,
     .mem_clock_mhz = 1512,
     .mem_dyn_w = 54,
     .mem_bw_gbs = 1935,
     .peak_tflops = 312,
     .hbm_gib = 80,
     .nvlink_gbs = 32},
    {.name = "H100-PCIE",
     .long_name = "NVIDIA H100 PCIe 80GB",
     .tdp_w = PFLEX__GPU_DEFAULT(PFLEX__GPU_H100_PCIE),
     .cap_min_w = PFLEX__GPU_MIN(PFLEX__GPU_H100_PCIE),
     .idle_w = PFLEX__GPU_IDLE(PFLEX__GPU_H100_PCIE),
     .f_max_mhz = 1755,
     .f_min_mhz = 210,
     .f_knee_mhz = 1225,
     .v_floor = 0.825,
     .sm_dyn_w = 490,
     .mem_clock_mhz = 1593,
     .mem_dyn_w = 56,
     .mem_bw_gbs = 2000,
     .peak_tflops = 756,
     .hbm_gib = 80,
     .nvlink_gbs = 64},
    {.name = "L40S",
     .long_name = "NVIDIA L40S 48GB",
     .tdp_w = PFLEX__GPU_DEFAULT(PFLEX__GPU_L40S),
     .cap_min_w = PFLEX__GPU_MIN(PFLEX__GPU_L40S),
     .idle_w = PFLEX__GPU_IDLE(PFLEX__GPU_L40S),
     .f_max_mhz = 2520,
     .f_min_mhz = 210,
     .f_knee_mhz = 1755,
     .v_floor = 0.825,
     .sm_dyn_w = 490,
     .mem_clock_mhz = 9001,
     .mem_dyn_w = 52,
     .mem_bw_gbs = 864,
     .peak_tflops = 362,
     .hbm_gib = 48,
     .nvlink_gbs = 32},
    {.name = "A40",
     .long_name = "NVIDIA A40 48GB",
     .tdp_w = PFLEX__GPU_DEFAULT(PFLEX__GPU_A40),
     .cap_min_w = PFLEX__GPU_MIN(PFLEX__GPU_A40),
     .idle_w = PFLEX__GPU_IDLE(PFLEX__GPU_A40),
     .f_max_mhz = 1740,
     .f_min_mhz = 210,
     .f_knee_mhz = 1215,
     .v_floor = 0.825,
     .sm_dyn_w = 420,
     .mem_clock_mhz = 7251,
     .mem_dyn_w = 42,
     .mem_bw_gbs = 696,
     .peak_tflops = 150,
     .hbm_gib = 48,
     .nvlink_gbs = 56},
    {.name = "A10",
     .long_name = "NVIDIA A10 24GB",
     .tdp_w = PFLEX__GPU_DEFAULT(PFLEX__GPU_A10),
     .cap_min_w = PFLEX__GPU_MIN(PFLEX__GPU_A10),
     .idle_w = PFLEX__GPU_IDLE(PFLEX__GPU_A10),
     .f_max_mhz = 1695,
     .f_min_mhz = 210,
     .f_knee_mhz = 1180,
     .v_floor = 0.825,
     .sm_dyn_w = 210,
     .mem_clock_mhz = 6251,
     .mem_dyn_w = 36,
     .mem_bw_gbs = 600,
     .peak_tflops = 125,
     .hbm_gib = 24,
     .nvlink_gbs = 32},
    {.name = "T4",
     .long_name = "NVIDIA T4 16GB",
     .tdp_w = PFLEX__GPU_DEFAULT(PFLEX__GPU_T4),
     .cap_min_w = PFLEX__GPU_MIN(PFLEX__GPU_T4),
     .idle_w = PFLEX__GPU_IDLE(PFLEX__GPU_T4),
     .f_max_mhz = 1590,
     .f_min_mhz = 300,
     .f_knee_mhz = 1110,
     .v_floor = 0.825,
     .sm_dyn_w = 100,
     .mem_clock_mhz = 5001,
     .mem_dyn_w = 19,
     .mem_bw_gbs = 320,
     .peak_tflops = 65,
     .hbm_gib = 16,
     .nvlink_gbs = 16},
    {.name = "V100",
     .long_name = "NVIDIA Tesla V100 SXM2 32GB",
     .tdp_w = PFLEX__GPU_DEFAULT(PFLEX__GPU_V100),
     .cap_min_w = PFLEX__GPU_MIN(PFLEX__GPU_V100),
     .idle_w = PFLEX__GPU_IDLE(PFLEX__GPU_V100),
     .f_max_mhz = 1530,
     .f_min_mhz = 135,
     .f_knee_mhz = 1070,
     .v_floor = 0.825,
     .sm_dyn_w = 420,
     .mem_clock_mhz = 877,
     .mem_dyn_w = 25,
     .mem_bw_gbs = 900,
     .peak_tflops = 125,
     .hbm_gib = 32,
     .nvlink_gbs = 150},
    {.name = "P100",
     .long_name = "NVIDIA Tesla P100 SXM2 16GB",
     .tdp_w = PFLEX__GPU_DEFAULT(PFLEX__GPU_P100),
     .cap_min_w = PFLEX__GPU_MIN(PFLEX__GPU_P100),
     .idle_w = PFLEX__GPU_IDLE(PFLEX__GPU_P100),
     .f_max_mhz = 1480,
     .f_min_mhz = 544,
     .f_knee_mhz = 1035,
     .v_floor = 0.825,
     .sm_dyn_w = 420,
     .mem_clock_mhz = 715,
     .mem_dyn_w = 23,
     .mem_bw_gbs = 732,
     .peak_tflops = 21.2,
     .hbm_gib = 16,
     .nvlink_gbs = 80},
    {.name = "B200",
     .long_name = "NVIDIA B200 SXM 180GB",
     .tdp_w = PFLEX__GPU_DEFAULT(PFLEX__GPU_B200),
     .cap_min_w = PFLEX__GPU_MIN(PFLEX__GPU_B200),
     .idle_w = PFLEX__GPU_IDLE(PFLEX__GPU_B200),
     .f_max_mhz = 1965,
     .f_min_mhz = 210,
     .f_knee_mhz = 1370,
     .v_floor = 0.825,
     .sm_dyn_w = 1400,
     .mem_clock_mhz = 3996,
     .mem_dyn_w = 180,
     .mem_bw_gbs = 8000,
     .peak_tflops = 2250,
     .hbm_gib = 180,
     .nvlink_gbs = 900},
    {.name = "GB200",
     .long_name = "NVIDIA GB200 (Blackwell GPU) 186GB",
     .tdp_w = PFLEX__GPU_DEFAULT(PFLEX__GPU_GB200),
     .cap_min_w = PFLEX__GPU_MIN(PFLEX__GPU_GB200),
     .idle_w = PFLEX__GPU_IDLE(PFLEX__GPU_GB200),
     .f_max_mhz = 2062,
     .f_min_mhz = 210,
     .f_knee_mhz = 1440,
     .v_floor = 0.825,
     .sm_dyn_w = 1680,
     .mem_clock_mhz = 3996,
     .mem_dyn_w = 180,
     .mem_bw_gbs = 8000,
     .peak_tflops = 2500,
     .hbm_gib = 186,
     .nvlink_gbs = 900},
};
#define NGPUS (sizeof gpu_table / sizeof gpu_table[0])

size_t pflex_twin_gpu_count(void) {
  return NGPUS;
}

const struct pflex_twin_gpu *pflex_twin_gpu_get(size_t i) {
  return i < NGPUS ? &gpu_table[i] : NULL;
}

const struct pflex_twin_gpu *pflex_twin_gpu_find(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < NGPUS; i++)
    if (strcasecmp(gpu_table[i].name, name) == 0 || strcasecmp(gpu_table[i].long_name, name) == 0)
      return &gpu_table[i];
  /* Other spellings ("H200 SXM", "NVIDIA A100-PCIE-80GB"): the GPU table's reading of them. */
  const struct pflex_gpu_model *m = pflex_gpu_model_find(name);
  for (size_t i = 0; m && i < NGPUS; i++)
    if (strcmp(gpu_table[i].name, m->name) == 0) return &gpu_table[i];
  return NULL;
}

/* Core voltage relative to the voltage at f_max. */
static double voltage(const struct pflex_twin_gpu *gpu, double f) {
  if (f <= gpu->f_knee_mhz) return gpu->v_floor;
  return gpu->v_floor +
         (1.0 - gpu->v_floor) * (f - gpu->f_knee_mhz) / (gpu->f_max_mhz - gpu->f_knee_mhz);
}

/* Memory- and network-bound time at clock f, before the split into blocks:
 * a memory-bound kernel of arithmetic intensity r times the ridge point
 * becomes clock-bound once f < r f_max (roofline). */
static double mem_time(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job,
                       double f) {
  double m = fmax(1.0 - job->compute_share - pflex__twin_comm(job), 0.0);
  return m * fmax(1.0, job->mem_clock_bound * gpu->f_max_mhz / f);
}

/* DRAM traffic of block B (long memory/network phases), in units of the
 * whole step's traffic at full bandwidth; block A carries the rest. */
static double bytes_b(const struct pflex_twin_job *job) {
  double phi = job->phase_split;
  if (!(phi > 0)) return 0.0;
  double mix = job->dram_mix > 0 ? job->dram_mix : 1.0;
  double m = fmax(1.0 - job->compute_share - pflex__twin_comm(job), 0.0);
  return fmin(phi * (PFLEX__TWIN_DRAM_LONG * mix * m + 0.10 * pflex__twin_comm(job)),
              job->dram_util);
}

/* Block A: compute-bound work with the memory/network work interleaved with it
 * (too short for the limiter to see apart). Its time and power at clock f. */
static double block_a(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job, double f,
                      double *ret_time, double *ret_tcomp) {
  double phi = fmin(fmax(job->phase_split, 0.0), 1.0);
  double tc = job->compute_share * gpu->f_max_mhz / f;
  double other = (1.0 - phi) * (mem_time(gpu, job, f) + pflex__twin_comm(job));
  double t = tc + other;
  double act = (job->compute_activity * tc + job->mem_activity * other) / t;
  double v = voltage(gpu, f);
  /* Bytes per step are fixed, so the DRAM bandwidth in use falls as time stretches. */
  double dram = (job->dram_util - bytes_b(job)) / t;
  if (ret_time) *ret_time = t;
  if (ret_tcomp) *ret_tcomp = tc;
  return gpu->idle_w + gpu->mem_dyn_w * dram + gpu->sm_dyn_w * act * (f / gpu->f_max_mhz) * v * v;
}

/* Block B: memory/network phases long enough for the limiter to hold them at
 * their own clock (phase_split of that work). Time 0 when there is none. */
static double block_b(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job, double f,
                      double *ret_time) {
  double phi = fmin(fmax(job->phase_split, 0.0), 1.0);
  double t = phi * (mem_time(gpu, job, f) + pflex__twin_comm(job));
  if (ret_time) *ret_time = t;
  if (!(t > 0)) return gpu->idle_w;
  double v = voltage(gpu, f);
  return gpu->idle_w + gpu->mem_dyn_w * bytes_b(job) / t +
         gpu->sm_dyn_w * PFLEX__TWIN_ACT_LONG * (f / gpu->f_max_mhz) * v * v;
}

struct settle_params {
  const struct pflex_twin_gpu *gpu;
  const struct pflex_twin_job *job;
  double cap;
  bool b;
};

static double block_power(const struct settle_params *sp, double f) {
  return sp->b ? block_b(sp->gpu, sp->job, f, NULL) : block_a(sp->gpu, sp->job, f, NULL, NULL);
}

static double settle_fn(double f, void *p) {
  const struct settle_params *sp = p;
  return block_power(sp, f) - sp->cap;
}

/* The SM clock the governor settles at under cap for one block (per GPU). */
static int settle(const struct settle_params *sp, double *ret_f) {
  const struct pflex_twin_gpu *gpu = sp->gpu;
  if (block_power(sp, gpu->f_max_mhz) <= sp->cap) {
    *ret_f = gpu->f_max_mhz;
    return 0;
  }
  /* Below its lowest clock the GPU still meets a limit by duty-cycling the
   * clock (hardware slowdown): an effective clock down to f_min / 8, with power
   * linear in it as below the knee. */
  double lo = gpu->f_min_mhz / 8.0;
  if (block_power(sp, lo) >= sp->cap) {
    /* The limit cannot be honoured at all: the GPU runs at the floor. */
    *ret_f = lo;
    return 0;
  }
  gsl_function fn = {settle_fn, (void *)sp};
  gsl_root_fsolver *s = gsl_root_fsolver_alloc(gsl_root_fsolver_brent);
  if (!s) return -ENOMEM;
  gsl_root_fsolver_set(s, &fn, lo, gpu->f_max_mhz);
  int status = GSL_CONTINUE;
  for (int it = 0; it < 200 && status == GSL_CONTINUE; it++) {
    if (gsl_root_fsolver_iterate(s) != GSL_SUCCESS) break;
    status = gsl_root_test_interval(gsl_root_fsolver_x_lower(s), gsl_root_fsolver_x_upper(s), 1e-10,
                                    1e-13);
  }
  double f = gsl_root_fsolver_root(s);
  gsl_root_fsolver_free(s);
  if (status != GSL_SUCCESS) return -ERANGE;
  *ret_f = f;
  return 0;
}

int pflex__twin_state(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job,
                      double target, struct pflex__twin_state *ret) {
  struct pflex__twin_state st = {0};
  struct settle_params pa = {gpu, job, target, false}, pb = {gpu, job, target, true};
  int r = settle(&pa, &st.f_a);
  if (r < 0) return r;
  double pw_a = block_a(gpu, job, st.f_a, &st.t_a, &st.t_comp);
  /* At a settled clock the block's power equals the target up to the solver
   * tolerance; use the target then, so power never exceeds it by rounding. */
  if (st.f_a < gpu->f_max_mhz && st.f_a > gpu->f_min_mhz / 8.0) pw_a = fmin(pw_a, target);
  double pw_b = gpu->idle_w;
  st.f_b = gpu->f_max_mhz;
  if (job->phase_split > 0) {
    r = settle(&pb, &st.f_b);
    if (r < 0) return r;
    pw_b = block_b(gpu, job, st.f_b, &st.t_b);
    if (st.f_b < gpu->f_max_mhz && st.f_b > gpu->f_min_mhz / 8.0) pw_b = fmin(pw_b, target);
  }
  st.tau = st.t_a + st.t_b;
  st.t_comm = pflex__twin_comm(job) * (st.t_a + st.t_b > 0 ? 1.0 : 0.0);
  st.power = (pw_a * st.t_a + pw_b * st.t_b) / st.tau;
  st.sm_clock = (st.f_a * st.t_a + st.f_b * st.t_b) / st.tau;
  st.limited = st.f_a < gpu->f_max_mhz || (st.t_b > 0 && st.f_b < gpu->f_max_mhz);
  *ret = st;
  return 0;
}

double pflex_twin_natural_power(const struct pflex_twin_gpu *gpu,
                                const struct pflex_twin_job *job) {
  struct pflex__twin_state st;
  if (pflex__twin_state(gpu, job, INFINITY, &st) < 0) return NAN;
  return st.power;
}

static bool job_valid(const struct pflex_twin_job *job) {
  return job->gpus >= 1 && job->compute_share > 0 && job->compute_share <= 1 &&
         job->compute_activity >= 0 && job->mem_activity >= 0 && job->dram_util >= 0 &&
         job->mfu > 0 && job->active_b > 0 && job->phase_split >= 0 && job->phase_split <= 1;
}

int pflex_twin_eval(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job,
                    double cap_w, struct pflex_twin_point *ret) {
  if (!gpu || !job || !ret || !isfinite(cap_w) || !job_valid(job)) return -EINVAL;
  double cap = fmin(fmax(cap_w, gpu->cap_min_w), gpu->tdp_w);
  double target = cap * (1.0 - 0.02 * cap / gpu->tdp_w);
  struct pflex__twin_state st;
  int r = pflex__twin_state(gpu, job, target, &st);
  if (r < 0) return r;
  struct pflex_twin_point pt = {0};
  pt.cap_w = cap_w;
  pt.limited = st.limited;
  pt.power_w = st.power;
  pt.job_power_w = pt.power_w * job->gpus;
  pt.sm_clock_mhz = st.sm_clock;
  pt.mem_clock_mhz = gpu->mem_clock_mhz;
  pt.tokens_per_s = pflex_twin_job_t_peak(gpu, job) / st.tau;
  pt.util = pflex__twin_util(job, &st);
  pflex__twin_metrics(gpu, job, &st, pt.metrics);
  *ret = pt;
  return 0;
}

int pflex__twin_power_tput(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job,
                           double cap_w, double *ret_power, double *ret_tput) {
  if (!gpu || !job || !isfinite(cap_w) || !job_valid(job)) return -EINVAL;
  double cap = fmin(fmax(cap_w, gpu->cap_min_w), gpu->tdp_w);
  double target = cap * (1.0 - 0.02 * cap / gpu->tdp_w);
  struct pflex__twin_state st;
  int r = pflex__twin_state(gpu, job, target, &st);
  if (r < 0) return r;
  *ret_power = st.power;
  *ret_tput = pflex_twin_job_t_peak(gpu, job) / st.tau;
  return 0;
}

int pflex__twin_noise_z(uint64_t seed, double *ret_zp, double *ret_zt) {
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  if (!rng) return -ENOMEM;
  gsl_rng_set(rng, (unsigned long)seed);
  /* The same draws, in the same order, as pflex_twin_eval_noisy. */
  *ret_zp = gsl_ran_gaussian_ziggurat(rng, 1.0);
  *ret_zt = gsl_ran_gaussian_ziggurat(rng, 1.0);
  gsl_rng_free(rng);
  return 0;
}

void pflex_twin_noise_default(struct pflex_twin_noise *noise) {
  noise->power_cv = 0.004;
  noise->tput_cv = 0.005;
  noise->metric_cv = 0.03;
}

int pflex_twin_eval_noisy(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job,
                          double cap_w, const struct pflex_twin_noise *noise, uint64_t seed,
                          struct pflex_twin_point *ret) {
  struct pflex_twin_noise def;
  if (!noise) {
    pflex_twin_noise_default(&def);
    noise = &def;
  }
  struct pflex_twin_point pt;
  int r = pflex_twin_eval(gpu, job, cap_w, &pt);
  if (r < 0) return r;
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  if (!rng) return -ENOMEM;
  gsl_rng_set(rng, (unsigned long)seed);
  /* Draw in a fixed order so a seed always gives the same point. */
  double zp = gsl_ran_gaussian_ziggurat(rng, 1.0);
  double zt = gsl_ran_gaussian_ziggurat(rng, 1.0);
  pt.power_w *= 1.0 + noise->power_cv * zp;
  pt.job_power_w = pt.power_w * job->gpus;
  pt.tokens_per_s *= 1.0 + noise->tput_cv * zt;
  for (size_t k = 0; k < PFLEX_TWIN_NMETRICS; k++) {
    double z = gsl_ran_gaussian_ziggurat(rng, 1.0);
    double v = pt.metrics[k] * (1.0 + noise->metric_cv * z);
    /* Ratios stay ratios; percentages stay percentages. */
    if (k <= PFLEX_TWIN_M_DRAM_ACTIVE)
      v = fmin(fmax(v, 0.0), 1.0);
    else if (k == PFLEX_TWIN_M_MEM_COPY_UTIL)
      v = fmin(fmax(v, 0.0), 100.0);
    else if (k == PFLEX_TWIN_M_FB_USED)
      v = fmin(fmax(v, 0.0), gpu->hbm_gib * 1024.0); /* cannot exceed the memory */
    else
      v = fmax(v, 0.0);
    pt.metrics[k] = v;
  }
  gsl_rng_free(rng);
  *ret = pt;
  return 0;
}
