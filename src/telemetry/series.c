/* Telemetry series of one run: storage, phase detection and the paper's
 * training-phase top-10% aggregation (include/pflex/series.h,
 * docs/telemetry.md).
 *
 * The GPUs of a job are sampled at "the same" moments, but a sampling loop
 * reads them one after another and an exporter may stamp them a few ms apart.
 * Phases and summed power are decided per time step, so samples are first
 * grouped into steps: sorted by time, a sample opens a new step when its GPU
 * already has a sample in the current step or when it lies more than the
 * alignment tolerance after the step's first sample. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "pflex/format.h"
#include "pflex/runs.h"
#include "pflex/series.h"

const char *pflex_phase_name(enum pflex_phase phase) {
  switch (phase) {
  case PFLEX_PHASE_WARMUP: return "warmup";
  case PFLEX_PHASE_STARTUP: return "startup";
  case PFLEX_PHASE_TRAINING: return "training";
  case PFLEX_PHASE_OTHER: return "other";
  default: return "unknown";
  }
}

void pflex_series_init(struct pflex_series *s) {
  memset(s, 0, sizeof *s);
}

void pflex_series_release(struct pflex_series *s) {
  if (!s) return;
  free(s->time_s);
  free(s->gpu);
  for (size_t m = 0; m < s->nmetrics; m++) {
    free(s->metric_names[m]);
    free(s->values[m]);
  }
  free(s->metric_names);
  free(s->values);
  free(s->tput_time_s);
  free(s->tput);
  pflex_series_init(s);
}

int pflex_series_find_metric(const struct pflex_series *s, const char *name, size_t *ret_index) {
  for (size_t m = 0; m < s->nmetrics; m++)
    if (strcmp(s->metric_names[m], name) == 0) {
      if (ret_index) *ret_index = m;
      return 0;
    }
  return -ENOENT;
}

int pflex_series_metric(struct pflex_series *s, const char *name, size_t *ret_index) {
  if (!name || !name[0]) return -EINVAL;
  if (pflex_series_find_metric(s, name, ret_index) == 0) return 0;
  char **names = realloc(s->metric_names, (s->nmetrics + 1) * sizeof *names);
  if (!names) return -ENOMEM;
  s->metric_names = names;
  double **values = realloc(s->values, (s->nmetrics + 1) * sizeof *values);
  if (!values) return -ENOMEM;
  s->values = values;
  char *copy = strdup(name);
  double *col = malloc((s->cap ? s->cap : 1) * sizeof *col);
  if (!copy || !col) {
    free(copy);
    free(col);
    return -ENOMEM;
  }
  for (size_t i = 0; i < s->n; i++)
    col[i] = NAN;
  names[s->nmetrics] = copy;
  values[s->nmetrics] = col;
  if (ret_index) *ret_index = s->nmetrics;
  s->nmetrics++;
  return 0;
}

/* Makes room for one more sample in every column. */
static int grow(struct pflex_series *s) {
  if (s->n < s->cap) return 0;
  size_t cap = s->cap ? 2 * s->cap : 256;
  double *t = realloc(s->time_s, cap * sizeof *t);
  if (!t) return -ENOMEM;
  s->time_s = t;
  int *g = realloc(s->gpu, cap * sizeof *g);
  if (!g) return -ENOMEM;
  s->gpu = g;
  for (size_t m = 0; m < s->nmetrics; m++) {
    double *col = realloc(s->values[m], cap * sizeof *col);
    if (!col) return -ENOMEM;
    s->values[m] = col;
  }
  s->cap = cap;
  return 0;
}

int pflex_series_add_row(struct pflex_series *s, double time_s, int gpu, const double *values) {
  if (gpu < 0 || !isfinite(time_s)) return -EINVAL;
  int r = grow(s);
  if (r < 0) return r;
  s->time_s[s->n] = time_s;
  s->gpu[s->n] = gpu;
  for (size_t m = 0; m < s->nmetrics; m++)
    s->values[m][s->n] = values ? values[m] : NAN;
  s->n++;
  return 0;
}

int pflex_series_add_sample(struct pflex_series *s, double time_s, int gpu, size_t n,
                            const char *const *names, const double *values) {
  if (gpu < 0 || !isfinite(time_s)) return -EINVAL;
  /* Register every name first, so a failure leaves no half-added sample. */
  for (size_t k = 0; k < n; k++) {
    int r = pflex_series_metric(s, names[k], NULL);
    if (r < 0) return r;
  }
  int r = pflex_series_add_row(s, time_s, gpu, NULL);
  if (r < 0) return r;
  for (size_t k = 0; k < n; k++) {
    size_t m = 0;
    pflex_series_find_metric(s, names[k], &m);
    s->values[m][s->n - 1] = values[k];
  }
  return 0;
}

int pflex_series_add_tput(struct pflex_series *s, double time_s, double value) {
  if (!isfinite(time_s) || !isfinite(value) || value < 0) return -EINVAL;
  if (s->ntput == s->cap_tput) {
    size_t cap = s->cap_tput ? 2 * s->cap_tput : 256;
    double *t = realloc(s->tput_time_s, cap * sizeof *t);
    if (!t) return -ENOMEM;
    s->tput_time_s = t;
    double *v = realloc(s->tput, cap * sizeof *v);
    if (!v) return -ENOMEM;
    s->tput = v;
    s->cap_tput = cap;
  }
  s->tput_time_s[s->ntput] = time_s;
  s->tput[s->ntput] = value;
  s->ntput++;
  return 0;
}

void pflex_phase_opts_default(struct pflex_phase_opts *opts) {
  memset(opts, 0, sizeof *opts);
  opts->fb_threshold_mib = 10.0 * 1024.0; /* 10 GiB, paper.md section 2 */
  opts->util_threshold = 50.0;
  opts->sustain_s = 30.0;
  opts->top = 0.10;
  opts->align_s = 0.0;
}

int pflex_top_mean(const double *x, size_t n, double top, struct pflex_agg_value *ret) {
  if (!(top > 0.0 && top <= 1.0)) return -EINVAL;
  if (n == 0) return -PFLEX_E_NOPOINTS;
  double *y = malloc(n * sizeof *y);
  if (!y) return -ENOMEM;
  memcpy(y, x, n * sizeof *y);
  gsl_sort(y, 1, n);
  /* The small slack keeps 0.1 * 100 from rounding up to 11 samples. */
  size_t k = (size_t)ceil(top * (double)n - 1e-9);
  if (k < 1) k = 1;
  if (k > n) k = n;
  const double *hi = y + (n - k);
  struct pflex_agg_value v = {0};
  v.value = gsl_stats_mean(hi, 1, k);
  v.sd = k > 1 ? gsl_stats_sd_m(hi, 1, k, v.value) : 0.0;
  /* The top-k mean is an upper-tail mean (an expected shortfall): its standard
   * error must also carry the noise of where the tail starts. Asymptotically
   * Var = [Var(X | X >= q) + (1 - p)(mean - q)^2] / k with p = k / n and q the
   * tail's threshold (Chen 2008, "Nonparametric estimation of expected
   * shortfall", J. Financial Econometrics 6(1)). sd / sqrt(k) alone
   * understates it by about 1.5x for normal noise at p = 0.1. */
  double p = (double)k / (double)n, q = hi[0];
  v.se = sqrt((v.sd * v.sd + (1.0 - p) * (v.value - q) * (v.value - q)) / (double)k);
  v.k = k;
  v.n = n;
  v.valid = true;
  free(y);
  *ret = v;
  return 0;
}

/* ---- time steps ---- */

struct order {
  double t;
  int gpu;
  size_t i;
};

static int cmp_order(const void *a, const void *b) {
  const struct order *x = a, *y = b;
  if (x->t < y->t) return -1;
  if (x->t > y->t) return 1;
  if (x->gpu != y->gpu) return x->gpu < y->gpu ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Everything phase detection and aggregation share. */
struct steps {
  size_t n;          /* samples */
  struct order *ord; /* samples sorted by time */
  int *gpus;         /* distinct GPU indexes, ascending */
  size_t ngpus;
  size_t *gpu_of;  /* [sample] dense GPU index */
  size_t *step_of; /* [sample] step */
  size_t nsteps;
  double *step_t;                 /* [step] time of its first sample */
  double interval;                /* median sampling interval of one GPU, 0 if unknown */
  enum pflex_phase *phase;        /* [step] */
  size_t train_first, train_last; /* steps; train_first > train_last when none */
  double longest_high_s;          /* longest run of high utilization, for the error message */
};

static void steps_release(struct steps *st) {
  free(st->ord);
  free(st->gpus);
  free(st->gpu_of);
  free(st->step_of);
  free(st->step_t);
  free(st->phase);
  memset(st, 0, sizeof *st);
}

static size_t gpu_index(const struct steps *st, int gpu) {
  const int *p = bsearch(&gpu, st->gpus, st->ngpus, sizeof *st->gpus, cmp_int);
  return (size_t)(p - st->gpus);
}

static const char *metric_or(const char *name, const char *fallback) {
  return name && name[0] ? name : fallback;
}

static int check_opts(const struct pflex_phase_opts *o) {
  if (!(o->fb_threshold_mib >= 0) || !isfinite(o->fb_threshold_mib)) return -EINVAL;
  if (!(o->util_threshold > 0 && o->util_threshold <= 100)) return -EINVAL;
  if (!(o->sustain_s >= 0) || !isfinite(o->sustain_s)) return -EINVAL;
  if (!(o->top > 0 && o->top <= 1)) return -EINVAL;
  if (!(o->align_s >= 0) || !isfinite(o->align_s)) return -EINVAL;
  return 0;
}

/* Sorts the samples, finds the GPUs, the sampling interval and the steps. */
static int build_steps(const struct pflex_series *s, const struct pflex_phase_opts *o,
                       struct steps *st) {
  memset(st, 0, sizeof *st);
  st->n = s->n;
  st->ord = malloc(s->n * sizeof *st->ord);
  st->gpus = malloc(s->n * sizeof *st->gpus);
  st->gpu_of = malloc(s->n * sizeof *st->gpu_of);
  st->step_of = malloc(s->n * sizeof *st->step_of);
  st->step_t = malloc(s->n * sizeof *st->step_t);
  st->phase = malloc(s->n * sizeof *st->phase);
  double *diffs = malloc(s->n * sizeof *diffs);
  double *last = malloc(s->n * sizeof *last);
  unsigned char *seen = calloc(s->n, 1);
  int r = -ENOMEM;
  if (!st->ord || !st->gpus || !st->gpu_of || !st->step_of || !st->step_t || !st->phase || !diffs ||
      !last || !seen)
    goto out;

  for (size_t i = 0; i < s->n; i++) {
    st->ord[i] = (struct order){s->time_s[i], s->gpu[i], i};
    st->gpus[i] = s->gpu[i];
  }
  qsort(st->ord, s->n, sizeof *st->ord, cmp_order);
  qsort(st->gpus, s->n, sizeof *st->gpus, cmp_int);
  size_t ng = 0;
  for (size_t i = 0; i < s->n; i++)
    if (ng == 0 || st->gpus[ng - 1] != st->gpus[i]) st->gpus[ng++] = st->gpus[i];
  st->ngpus = ng;
  for (size_t i = 0; i < s->n; i++)
    st->gpu_of[i] = gpu_index(st, s->gpu[i]);

  /* Median interval between consecutive samples of the same GPU. */
  size_t nd = 0;
  for (size_t g = 0; g < ng; g++)
    last[g] = NAN;
  for (size_t j = 0; j < s->n; j++) {
    size_t g = st->gpu_of[st->ord[j].i];
    if (!isnan(last[g]) && st->ord[j].t > last[g]) diffs[nd++] = st->ord[j].t - last[g];
    last[g] = st->ord[j].t;
  }
  if (nd) {
    gsl_sort(diffs, 1, nd);
    st->interval = gsl_stats_median_from_sorted_data(diffs, 1, nd);
  }
  double tol = o->align_s > 0 ? o->align_s : st->interval / 2;

  /* Group into steps; `seen` marks the GPUs already in the current step. */
  size_t step = 0, first_of_step = 0;
  for (size_t j = 0; j < s->n; j++) {
    size_t g = st->gpu_of[st->ord[j].i];
    bool new_step = j > 0 && (seen[g] || st->ord[j].t - st->ord[first_of_step].t > tol);
    if (new_step) {
      for (size_t k = first_of_step; k < j; k++)
        seen[st->gpu_of[st->ord[k].i]] = 0;
      step++;
      first_of_step = j;
    }
    if (j == first_of_step) st->step_t[step] = st->ord[j].t;
    seen[g] = 1;
    st->step_of[st->ord[j].i] = step;
  }
  st->nsteps = s->n ? step + 1 : 0;
  r = 0;
out:
  free(diffs);
  free(last);
  free(seen);
  if (r < 0) steps_release(st);
  return r;
}

/* Decides the phase of every step (docs/telemetry.md, "Phases"). */
static int detect_phases(const struct pflex_series *s, const struct pflex_phase_opts *o,
                         struct steps *st, struct pflex_diag *diag) {
  const char *util_name = metric_or(o->util_metric, PFLEX_SERIES_UTIL);
  const char *fb_name = metric_or(o->fb_metric, PFLEX_SERIES_FB);
  size_t mu, mf;
  if (pflex_series_find_metric(s, util_name, &mu) < 0)
    return pflex_diag_set(diag, -PFLEX_E_DATA, NULL, 0, util_name,
                          "no GPU utilization metric: phases cannot be detected");
  if (pflex_series_find_metric(s, fb_name, &mf) < 0)
    return pflex_diag_set(diag, -PFLEX_E_DATA, NULL, 0, fb_name,
                          "no frame-buffer metric: phases cannot be detected");

  size_t ns = st->nsteps;
  double *fb_min = malloc(ns * sizeof *fb_min);
  double *util_sum = calloc(ns, sizeof *util_sum);
  size_t *util_n = calloc(ns, sizeof *util_n);
  if (!fb_min || !util_sum || !util_n) {
    free(fb_min);
    free(util_sum);
    free(util_n);
    return -ENOMEM;
  }
  for (size_t k = 0; k < ns; k++)
    fb_min[k] = NAN;
  for (size_t i = 0; i < s->n; i++) {
    size_t k = st->step_of[i];
    double f = s->values[mf][i], u = s->values[mu][i];
    if (!isnan(f) && (isnan(fb_min[k]) || f < fb_min[k])) fb_min[k] = f;
    if (!isnan(u)) {
      util_sum[k] += u;
      util_n[k]++;
    }
  }

  /* Sustained runs of high utilization; training spans the first to the last. */
  double interval = st->interval;
  st->train_first = 1;
  st->train_last = 0;
  st->longest_high_s = 0;
  size_t k = 0;
  while (k < ns) {
    bool high = util_n[k] && util_sum[k] / (double)util_n[k] >= o->util_threshold &&
                !(fb_min[k] < o->fb_threshold_mib);
    if (!high) {
      k++;
      continue;
    }
    size_t end = k;
    while (end + 1 < ns && util_n[end + 1] &&
           util_sum[end + 1] / (double)util_n[end + 1] >= o->util_threshold &&
           !(fb_min[end + 1] < o->fb_threshold_mib))
      end++;
    /* A run of m samples covers m sampling intervals of time. */
    double dur = st->step_t[end] - st->step_t[k] + interval;
    if (dur > st->longest_high_s) st->longest_high_s = dur;
    if (dur >= o->sustain_s - 1e-9) {
      if (st->train_first > st->train_last) st->train_first = k;
      st->train_last = end;
    }
    k = end + 1;
  }
  bool have_training = st->train_first <= st->train_last;
  for (k = 0; k < ns; k++) {
    if (have_training && k >= st->train_first && k <= st->train_last)
      st->phase[k] = PFLEX_PHASE_TRAINING;
    else if (have_training && k > st->train_last)
      st->phase[k] = PFLEX_PHASE_OTHER;
    else if (fb_min[k] < o->fb_threshold_mib)
      st->phase[k] = PFLEX_PHASE_WARMUP;
    else if (util_n[k] && util_sum[k] == 0)
      st->phase[k] = PFLEX_PHASE_STARTUP;
    else
      st->phase[k] = PFLEX_PHASE_OTHER;
  }
  free(fb_min);
  free(util_sum);
  free(util_n);
  return 0;
}

static int prepare(const struct pflex_series *s, const struct pflex_phase_opts *opts,
                   struct steps *st, struct pflex_diag *diag) {
  struct pflex_phase_opts o;
  if (opts)
    o = *opts;
  else
    pflex_phase_opts_default(&o);
  if (check_opts(&o) < 0)
    return pflex_diag_set(diag, -EINVAL, NULL, 0, NULL, "invalid phase options");
  if (s->n == 0) return pflex_diag_set(diag, -PFLEX_E_NOPOINTS, NULL, 0, NULL, "no GPU samples");
  int r = build_steps(s, &o, st);
  if (r < 0) return pflex_diag_set(diag, r, NULL, 0, NULL, "out of memory");
  r = detect_phases(s, &o, st, diag);
  if (r < 0) steps_release(st);
  return r;
}

int pflex_series_phases(const struct pflex_series *s, const struct pflex_phase_opts *opts,
                        enum pflex_phase **ret_phases, struct pflex_diag *diag) {
  struct steps st;
  int r = prepare(s, opts, &st, diag);
  if (r < 0) return r;
  enum pflex_phase *ph = malloc(s->n * sizeof *ph);
  if (!ph) {
    steps_release(&st);
    return -ENOMEM;
  }
  for (size_t i = 0; i < s->n; i++)
    ph[i] = st.phase[st.step_of[i]];
  steps_release(&st);
  *ret_phases = ph;
  return 0;
}

void pflex_series_agg_release(struct pflex_series_agg *agg) {
  if (!agg) return;
  for (size_t m = 0; m < agg->nmetrics; m++)
    free(agg->metrics[m].name);
  free(agg->metrics);
  memset(agg, 0, sizeof *agg);
}

/* Power of the job: per training step the sum over all GPUs (steps missing a
 * GPU's reading are left out and counted), then the top-fraction mean. */
static int agg_sum(const struct pflex_series *s, const struct steps *st, size_t m, double top,
                   struct pflex_agg_value *ret, size_t *ret_incomplete) {
  size_t ns = st->nsteps;
  double *sum = calloc(ns, sizeof *sum);
  size_t *cnt = calloc(ns, sizeof *cnt);
  double *x = malloc(ns * sizeof *x);
  int r = -ENOMEM;
  if (!sum || !cnt || !x) goto out;
  for (size_t i = 0; i < s->n; i++) {
    double v = s->values[m][i];
    if (isnan(v)) continue;
    sum[st->step_of[i]] += v;
    cnt[st->step_of[i]]++;
  }
  size_t nx = 0, incomplete = 0;
  for (size_t k = 0; k < ns; k++) {
    if (st->phase[k] != PFLEX_PHASE_TRAINING) continue;
    if (cnt[k] == st->ngpus)
      x[nx++] = sum[k];
    else
      incomplete++;
  }
  struct pflex_agg_value v = {0};
  r = nx ? pflex_top_mean(x, nx, top, &v) : 0;
  if (r == 0) {
    *ret = v; /* valid stays false when no step was complete */
    *ret_incomplete = incomplete;
  }
out:
  free(sum);
  free(cnt);
  free(x);
  return r;
}

/* Any other metric: top-fraction mean per GPU, then the mean over the GPUs
 * that have one; se combines the per-GPU standard errors as for a mean of
 * independent means. */
static int agg_mean(const struct pflex_series *s, const struct steps *st, size_t m, double top,
                    struct pflex_agg_value *ret) {
  double *x = malloc(s->n * sizeof *x);
  if (!x) return -ENOMEM;
  struct pflex_agg_value out = {0};
  double se2 = 0;
  size_t used = 0;
  for (size_t g = 0; g < st->ngpus; g++) {
    size_t nx = 0;
    for (size_t i = 0; i < s->n; i++)
      if (st->gpu_of[i] == g && st->phase[st->step_of[i]] == PFLEX_PHASE_TRAINING &&
          !isnan(s->values[m][i]))
        x[nx++] = s->values[m][i];
    if (!nx) continue;
    struct pflex_agg_value v;
    int r = pflex_top_mean(x, nx, top, &v);
    if (r < 0) {
      free(x);
      return r;
    }
    out.value += v.value;
    out.sd += v.sd;
    se2 += v.se * v.se;
    out.k += v.k;
    out.n += v.n;
    used++;
  }
  free(x);
  if (used) {
    out.value /= (double)used;
    out.sd /= (double)used;
    out.se = sqrt(se2) / (double)used;
    out.valid = true;
  }
  *ret = out;
  return 0;
}

/* The training window and how many samples and steps each phase has. */
static void phase_counts(const struct pflex_series *s, const struct steps *st,
                         struct pflex_series_agg *agg) {
  agg->gpus = (int)st->ngpus;
  agg->step_s = st->interval;
  agg->train_start_s = st->step_t[st->train_first];
  agg->train_end_s = st->step_t[st->train_last];
  for (size_t i = 0; i < s->n; i++)
    agg->phase_samples[st->phase[st->step_of[i]]]++;
  for (size_t k = 0; k < st->nsteps; k++)
    agg->phase_steps[st->phase[k]]++;
}

/* Every metric over the training steps: the power metric (index mp) summed
 * over the GPUs of each step, the others averaged. */
static int aggregate_metrics(const struct pflex_series *s, const struct steps *st, size_t mp,
                             double top, struct pflex_series_agg *agg) {
  agg->metrics = calloc(s->nmetrics ? s->nmetrics : 1, sizeof *agg->metrics);
  if (!agg->metrics) return -ENOMEM;
  for (size_t m = 0; m < s->nmetrics; m++) {
    struct pflex_series_metric_agg *ma = &agg->metrics[m];
    ma->name = strdup(s->metric_names[m]);
    agg->nmetrics++;
    if (!ma->name) return -ENOMEM;
    int r;
    if (m == mp) {
      ma->kind = PFLEX_AGG_SUM;
      r = agg_sum(s, st, m, top, &ma->agg, &agg->incomplete_steps);
      agg->power = ma->agg;
    } else {
      ma->kind = PFLEX_AGG_MEAN;
      r = agg_mean(s, st, m, top, &ma->agg);
    }
    if (r < 0) return r;
  }
  return 0;
}

/* The throughput's top mean. Throughput samples report the step that just
 * ended, so the window runs one sampling interval past the last training step. */
static int aggregate_tput(const struct pflex_series *s, const struct steps *st, double top,
                          struct pflex_series_agg *agg) {
  if (!s->ntput) return 0;
  double *x = malloc(s->ntput * sizeof *x);
  if (!x) return -ENOMEM;
  size_t nx = 0;
  for (size_t j = 0; j < s->ntput; j++)
    if (s->tput_time_s[j] >= agg->train_start_s &&
        s->tput_time_s[j] <= agg->train_end_s + st->interval)
      x[nx++] = s->tput[j];
  int r = nx ? pflex_top_mean(x, nx, top, &agg->tput) : 0;
  free(x);
  return r;
}

int pflex_series_aggregate(const struct pflex_series *s, const struct pflex_phase_opts *opts,
                           struct pflex_series_agg *ret_agg, struct pflex_diag *diag) {
  struct pflex_phase_opts o;
  if (opts)
    o = *opts;
  else
    pflex_phase_opts_default(&o);
  const char *power_name = metric_or(o.power_metric, PFLEX_SERIES_POWER);
  size_t mp = SIZE_MAX;
  if (s->n && pflex_series_find_metric(s, power_name, &mp) < 0)
    return pflex_diag_set(diag, -PFLEX_E_DATA, NULL, 0, power_name, "no power metric");

  struct steps st;
  int r = prepare(s, &o, &st, diag);
  if (r < 0) return r;
  struct pflex_series_agg agg = {0};
  if (st.train_first > st.train_last) {
    r = pflex_diag_set(diag, -PFLEX_E_NOPOINTS, NULL, 0, NULL,
                       "no training phase: mean GPU utilization never stayed >= %g%% "
                       "with >= %g GiB in use for %g s (longest run %.0f s)",
                       o.util_threshold, o.fb_threshold_mib / 1024.0, o.sustain_s,
                       st.longest_high_s);
    goto fail;
  }
  phase_counts(s, &st, &agg);
  if ((r = aggregate_metrics(s, &st, mp, o.top, &agg)) < 0) goto fail;
  if (!agg.power.valid) {
    r = pflex_diag_set(diag, -PFLEX_E_NOPOINTS, NULL, 0, power_name,
                       "no training step has a power reading of every GPU (%d GPUs)", agg.gpus);
    goto fail;
  }
  if ((r = aggregate_tput(s, &st, o.top, &agg)) < 0) goto fail;
  steps_release(&st);
  *ret_agg = agg;
  return 0;
fail:
  steps_release(&st);
  pflex_series_agg_release(&agg);
  return r;
}

int pflex_series_agg_append_run(const struct pflex_series_agg *agg, const char *group,
                                const char *gpu_type, double cap_w, struct pflex_runset *set) {
  if (!group || !gpu_type || !(cap_w > 0) || !isfinite(cap_w) || !agg->power.valid ||
      !(agg->power.value > 0) || !agg->tput.valid || !(agg->tput.value > 0))
    return -EINVAL;
  struct pflex_run run = {0};
  run.group = (char *)group;
  run.gpu = (char *)gpu_type;
  run.gpus = agg->gpus;
  run.cap_w = cap_w;
  run.power_w = agg->power.value;
  run.tput = agg->tput.value;
  run.power_sd = agg->power.se;
  run.tput_sd = agg->tput.se;
  run.have = PFLEX_RUN_POWER_SD | PFLEX_RUN_TPUT_SD;
  int r = pflex_runset_append(set, &run);
  size_t i = set->n - 1;
  for (size_t m = 0; r == 0 && m < agg->nmetrics; m++) {
    if (agg->metrics[m].kind == PFLEX_AGG_SUM) continue; /* that is power_w */
    char num[40] = "";
    if (agg->metrics[m].agg.valid) pflex_format_double(num, sizeof num, agg->metrics[m].agg.value);
    r = pflex_runset_set_extra(set, i, agg->metrics[m].name, num);
  }
  return r;
}
