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
 *    the H100 ones (an assumption, no published A100 series was used). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_roots.h>

#include "core/twin_internal.h"

static const struct pflex_twin_gpu gpu_table[] = {
    {.name = "H100",
     .long_name = "NVIDIA H100 SXM 80GB",
     .tdp_w = 700, .cap_min_w = 200, .idle_w = 80,
     .f_max_mhz = 1980, .f_min_mhz = 210, .f_knee_mhz = 1380, .v_floor = 0.825,
     .sm_dyn_w = 1000, .mem_clock_mhz = 2619, .mem_dyn_w = 95, .mem_bw_gbs = 3350,
     .peak_tflops = 989, .hbm_gib = 80, .nvlink_gbs = 450},
    {.name = "H200",
     .long_name = "NVIDIA H200 SXM 141GB",
     .tdp_w = 700, .cap_min_w = 200, .idle_w = 75,
     .f_max_mhz = 1980, .f_min_mhz = 210, .f_knee_mhz = 1380, .v_floor = 0.825,
     .sm_dyn_w = 1000, .mem_clock_mhz = 3201, .mem_dyn_w = 135, .mem_bw_gbs = 4800,
     .peak_tflops = 989, .hbm_gib = 141, .nvlink_gbs = 450},
    {.name = "A100",
     .long_name = "NVIDIA A100 SXM 80GB",
     .tdp_w = 400, .cap_min_w = 100, .idle_w = 55,
     .f_max_mhz = 1410, .f_min_mhz = 210, .f_knee_mhz = 1000, .v_floor = 0.825,
     .sm_dyn_w = 500, .mem_clock_mhz = 1593, .mem_dyn_w = 60, .mem_bw_gbs = 2039,
     .peak_tflops = 312, .hbm_gib = 80, .nvlink_gbs = 300},
};
#define NGPUS (sizeof gpu_table / sizeof gpu_table[0])

size_t pflex_twin_gpu_count(void) { return NGPUS; }

const struct pflex_twin_gpu *pflex_twin_gpu_get(size_t i) {
  return i < NGPUS ? &gpu_table[i] : NULL;
}

const struct pflex_twin_gpu *pflex_twin_gpu_find(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < NGPUS; i++)
    if (strcasecmp(gpu_table[i].name, name) == 0 || strcasecmp(gpu_table[i].long_name, name) == 0)
      return &gpu_table[i];
  /* Accept "H200 SXM" and similar spellings that start with the short name. */
  for (size_t i = 0; i < NGPUS; i++) {
    size_t n = strlen(gpu_table[i].name);
    if (strncasecmp(gpu_table[i].name, name, n) == 0 && (name[n] == ' ' || name[n] == '-'))
      return &gpu_table[i];
  }
  return NULL;
}

/* Core voltage relative to the voltage at f_max. */
static double voltage(const struct pflex_twin_gpu *gpu, double f) {
  if (f <= gpu->f_knee_mhz) return gpu->v_floor;
  return gpu->v_floor + (1.0 - gpu->v_floor) * (f - gpu->f_knee_mhz) / (gpu->f_max_mhz - gpu->f_knee_mhz);
}

double pflex__twin_step_rel(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job,
                            double f) {
  double s = job->compute_share;
  double k = pflex__twin_comm(job);
  /* Roofline: a memory-bound kernel of arithmetic intensity r times the ridge
   * point becomes clock-bound once f < r f_max. */
  double mem = (1.0 - s - k) * fmax(1.0, job->mem_clock_bound * gpu->f_max_mhz / f);
  return s * gpu->f_max_mhz / f + mem + k;
}

double pflex__twin_power_at(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job,
                            double f) {
  double tau = pflex__twin_step_rel(gpu, job, f);
  /* Share of wall time in clock-bound work: SMs switch at compute_activity there,
   * at mem_activity while waiting on memory or the network. */
  double c = job->compute_share * gpu->f_max_mhz / f / tau;
  double act = job->compute_activity * c + job->mem_activity * (1.0 - c);
  double v = voltage(gpu, f);
  /* Bytes per step are fixed, so DRAM bandwidth in use falls with the step rate. */
  double dram = job->dram_util / tau;
  return gpu->idle_w + gpu->mem_dyn_w * dram + gpu->sm_dyn_w * act * (f / gpu->f_max_mhz) * v * v;
}

double pflex_twin_natural_power(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job) {
  return pflex__twin_power_at(gpu, job, gpu->f_max_mhz);
}

struct settle_params {
  const struct pflex_twin_gpu *gpu;
  const struct pflex_twin_job *job;
  double cap;
};

static double settle_fn(double f, void *p) {
  const struct settle_params *sp = p;
  return pflex__twin_power_at(sp->gpu, sp->job, f) - sp->cap;
}

/* The SM clock the governor settles at under cap (per GPU). */
static int settle(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job, double cap,
                  double *ret_f) {
  if (pflex__twin_power_at(gpu, job, gpu->f_max_mhz) <= cap) {
    *ret_f = gpu->f_max_mhz;
    return 0;
  }
  if (pflex__twin_power_at(gpu, job, gpu->f_min_mhz) >= cap) {
    /* The limit cannot be honoured even at the lowest clock: the GPU runs there. */
    *ret_f = gpu->f_min_mhz;
    return 0;
  }
  struct settle_params sp = {gpu, job, cap};
  gsl_function fn = {settle_fn, &sp};
  gsl_root_fsolver *s = gsl_root_fsolver_alloc(gsl_root_fsolver_brent);
  if (!s) return -ENOMEM;
  gsl_root_fsolver_set(s, &fn, gpu->f_min_mhz, gpu->f_max_mhz);
  int status = GSL_CONTINUE;
  for (int it = 0; it < 200 && status == GSL_CONTINUE; it++) {
    if (gsl_root_fsolver_iterate(s) != GSL_SUCCESS) break;
    status = gsl_root_test_interval(gsl_root_fsolver_x_lower(s), gsl_root_fsolver_x_upper(s),
                                    1e-10, 1e-13);
  }
  double f = gsl_root_fsolver_root(s);
  gsl_root_fsolver_free(s);
  if (status != GSL_SUCCESS) return -ERANGE;
  *ret_f = f;
  return 0;
}

static bool job_valid(const struct pflex_twin_job *job) {
  return job->gpus >= 1 && job->compute_share > 0 && job->compute_share <= 1 &&
         job->compute_activity >= 0 && job->mem_activity >= 0 && job->dram_util >= 0 &&
         job->mfu > 0 && job->active_b > 0;
}

int pflex_twin_eval(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job,
                    double cap_w, struct pflex_twin_point *ret) {
  if (!gpu || !job || !ret || !isfinite(cap_w) || !job_valid(job)) return -EINVAL;
  double cap = fmin(fmax(cap_w, gpu->cap_min_w), gpu->tdp_w);
  double target = cap * (1.0 - 0.02 * cap / gpu->tdp_w);
  double f;
  int r = settle(gpu, job, target, &f);
  if (r < 0) return r;
  struct pflex_twin_point pt = {0};
  pt.cap_w = cap_w;
  /* At the settled clock the power equals the cap up to the solver tolerance;
   * use the cap itself then, so that power never exceeds it by rounding. */
  pt.limited = f < gpu->f_max_mhz;
  double p = pflex__twin_power_at(gpu, job, f);
  pt.power_w = pt.limited && f > gpu->f_min_mhz ? fmin(p, target) : p;
  pt.job_power_w = pt.power_w * job->gpus;
  pt.sm_clock_mhz = f;
  pt.mem_clock_mhz = gpu->mem_clock_mhz;
  pt.tokens_per_s = pflex_twin_job_t_peak(gpu, job) / pflex__twin_step_rel(gpu, job, f);
  pt.util = pflex__twin_util(gpu, job, f);
  pflex__twin_metrics(gpu, job, f, pt.metrics);
  *ret = pt;
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
    if (k <= PFLEX__M_DRAM_ACTIVE || k == PFLEX__M_GR_ENGINE) v = fmin(fmax(v, 0.0), 1.0);
    else if (k == PFLEX__M_MEM_COPY_UTIL) v = fmin(fmax(v, 0.0), 100.0);
    else v = fmax(v, 0.0);
    pt.metrics[k] = v;
  }
  gsl_rng_free(rng);
  *ret = pt;
  return 0;
}
