/* Telemetry series of one run, its phases, and its aggregation into one run row.
 *
 * A series holds the per-GPU samples of one job at one power cap (time, GPU
 * index and any number of named metrics such as power_w, gpu_util,
 * fb_used_mib, sm_clock) and the job's throughput samples (time, value).
 * pflex_series_phases() splits the trace into the paper's phases (warmup,
 * startup, training) and pflex_series_aggregate() reduces the training phase
 * to one number per metric: the mean of the top 10% of samples (paper.md
 * section 2), with power summed over the job's GPUs per time step.
 * docs/telemetry.md gives the rules in full.
 *
 * Times are seconds on any one clock, shared by GPU and throughput samples
 * (the live receivers in pflex/tput.h use CLOCK_REALTIME, see pflex_tput_now()).
 * Missing readings are NAN; a sample need not carry every metric. */
#ifndef PFLEX_SERIES_H
#define PFLEX_SERIES_H

#include <stdbool.h>
#include <stddef.h>

#include "pflex/error.h"

/* Default metric names (the series CSV column names, docs/telemetry.md). */
#define PFLEX_SERIES_POWER "power_w"     /* W, per GPU */
#define PFLEX_SERIES_UTIL "gpu_util"     /* %, 0-100 (DCGM GPU_UTIL, NVML utilization.gpu) */
#define PFLEX_SERIES_FB "fb_used_mib"    /* frame buffer in use, MiB */
#define PFLEX_SERIES_TPUT "tokens_per_s" /* throughput column of the series CSV */

enum pflex_phase {
  PFLEX_PHASE_WARMUP = 0, /* frame-buffer use below the threshold: weights not loaded */
  PFLEX_PHASE_STARTUP,    /* weights loaded, utilization 0, before training */
  PFLEX_PHASE_TRAINING,   /* from the first to the last sustained run of high utilization */
  PFLEX_PHASE_OTHER,      /* anything else: busy-but-not-training before, teardown after */
  PFLEX_PHASE_COUNT
};

/* Name of a phase ("warmup", "startup", "training", "other"). */
const char *pflex_phase_name(enum pflex_phase phase);

/* The samples of one run. Metric values are stored column-wise:
 * values[m][i] is metric m of sample i (NAN when not sampled). */
struct pflex_series {
  size_t n, cap;       /* GPU samples */
  double *time_s;      /* [n] */
  int *gpu;            /* [n] GPU index (>= 0) */
  char **metric_names; /* [nmetrics] */
  double **values;     /* [nmetrics][cap] */
  size_t nmetrics;
  size_t ntput, cap_tput; /* throughput samples */
  double *tput_time_s;    /* [ntput] */
  double *tput;           /* [ntput], higher is better */
};

/* Makes s an empty series; pflex_series_release frees it (NULL allowed). */
void pflex_series_init(struct pflex_series *s);
void pflex_series_release(struct pflex_series *s);

/* Finds metric `name`, registering it (NAN for existing samples) if new; its
 * column index goes to *ret_index. */
int pflex_series_metric(struct pflex_series *s, const char *name, size_t *ret_index);

/* Index of an existing metric, or -ENOENT. */
int pflex_series_find_metric(const struct pflex_series *s, const char *name, size_t *ret_index);

/* Appends one sample of GPU `gpu` at time_s with n named metric values
 * (registering new names; NAN = not read). -EINVAL for a negative GPU index
 * or a non-finite time. */
int pflex_series_add_sample(struct pflex_series *s, double time_s, int gpu, size_t n,
                            const char *const *names, const double *values);

/* Appends one sample whose values are given by metric index: values has
 * s->nmetrics entries (NAN = not read). Faster for a sampling loop that
 * registered its metrics once with pflex_series_metric(). */
int pflex_series_add_row(struct pflex_series *s, double time_s, int gpu, const double *values);

/* Appends one throughput sample (a rate, higher is better; must be finite and >= 0). */
int pflex_series_add_tput(struct pflex_series *s, double time_s, double value);

/* Options of phase detection and aggregation; pflex_phase_opts_default()
 * gives the paper's values. */
struct pflex_phase_opts {
  double fb_threshold_mib;  /* warmup while frame-buffer use < this (10 GiB = 10240 MiB) */
  double util_threshold;    /* training needs utilization >= this, % (50) */
  double sustain_s;         /* ... for at least this long, s (30): see docs/telemetry.md */
  double top;               /* fraction of training samples averaged, (0, 1] (0.10) */
  double align_s;           /* time-step tolerance for aligning GPUs, s; 0 = half the median
                               sampling interval (see docs/telemetry.md) */
  const char *power_metric; /* NULL = "power_w" */
  const char *util_metric;  /* NULL = "gpu_util" */
  const char *fb_metric;    /* NULL = "fb_used_mib" */
};

/* Fills opts with the paper's values (10 GiB, 50%, top 10%) and the defaults listed above. */
void pflex_phase_opts_default(struct pflex_phase_opts *opts);

/* Classifies every sample: (*ret_phases)[i] is the phase of sample i (the
 * phase of the time step it belongs to). The array is malloc'd, the caller
 * frees it. A trace without a training phase is not an error here (no sample
 * is PFLEX_PHASE_TRAINING). -PFLEX_E_DATA with diag when a required metric
 * (utilization, frame buffer) is absent; -PFLEX_E_NOPOINTS for an empty series. */
int pflex_series_phases(const struct pflex_series *s, const struct pflex_phase_opts *opts,
                        enum pflex_phase **ret_phases, struct pflex_diag *diag);

/* How a metric is combined over the job's GPUs. */
enum pflex_agg_kind {
  PFLEX_AGG_SUM = 0, /* per time step sum over GPUs, then top-fraction mean (power) */
  PFLEX_AGG_MEAN,    /* top-fraction mean per GPU, then mean over GPUs (everything else) */
};

/* One aggregated quantity. */
struct pflex_agg_value {
  double value; /* top-fraction mean */
  double sd;    /* standard deviation of the averaged samples (0 when k == 1) */
  double se;    /* standard error of the top-fraction mean, tail threshold noise included (series.c) */
  size_t k;     /* samples averaged (for MEAN: per GPU, summed over GPUs) */
  size_t n;     /* training-phase samples it was chosen from (same convention) */
  bool valid;   /* false when no training-phase sample had this metric */
};

struct pflex_series_metric_agg {
  char *name;
  enum pflex_agg_kind kind;
  struct pflex_agg_value agg;
};

/* The aggregate of one run. */
struct pflex_series_agg {
  int gpus;                     /* distinct GPU indexes in the series */
  struct pflex_agg_value power; /* aggregate power of the job, W (sum over GPUs) */
  struct pflex_agg_value tput;  /* throughput in the training window (valid=false if none) */
  struct pflex_series_metric_agg *metrics; /* every metric, power included, series order */
  size_t nmetrics;
  size_t phase_samples[PFLEX_PHASE_COUNT]; /* GPU samples per phase */
  size_t phase_steps[PFLEX_PHASE_COUNT];   /* time steps per phase */
  size_t incomplete_steps; /* training steps lacking a GPU's power, left out of the power sum */
  double train_start_s, train_end_s; /* training window (throughput samples inside it count) */
  double step_s;                     /* median time-step interval found */
};

/* Frees what pflex_series_aggregate allocated in agg (NULL allowed). */
void pflex_series_agg_release(struct pflex_series_agg *agg);

/* Detects the phases and aggregates the training phase (docs/telemetry.md):
 * each metric as the mean of its top `top` fraction of training samples,
 * power summed over GPUs per time step before the top fraction is taken,
 * throughput over the samples inside the training window.
 * -PFLEX_E_NOPOINTS with diag when there is no training phase or no power
 * reading in it; -PFLEX_E_DATA with diag for a missing required metric;
 * -EINVAL for bad options. */
int pflex_series_aggregate(const struct pflex_series *s, const struct pflex_phase_opts *opts,
                           struct pflex_series_agg *ret_agg, struct pflex_diag *diag);

struct pflex_runset;

/* Appends the aggregate to set as one run: group, gpu_type and cap_w from the
 * caller; gpus, power_w and tput (in set->unit; a time per step stays a rate
 * here, the runs writer inverts it) from agg; power_sd and tput_sd are the
 * standard errors of the top-fraction means; every metric other than power
 * becomes an extra column of that name (empty when not valid).
 * -EINVAL when agg has no valid positive power or throughput, or cap_w <= 0. */
int pflex_series_agg_append_run(const struct pflex_series_agg *agg, const char *group,
                                const char *gpu_type, double cap_w, struct pflex_runset *set);

/* Mean of the top `top` fraction (k = ceil(top * n), at least 1) of x[0..n),
 * with its SD and SE; x is not modified. -PFLEX_E_NOPOINTS when n == 0. */
int pflex_top_mean(const double *x, size_t n, double top, struct pflex_agg_value *ret);

#endif
