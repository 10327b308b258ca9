/* Per-job telemetry (telemetry.h). */
#include "agent/telemetry.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static double gpu_util(const struct pflex_gpu_reading *r) {
  return r->util_gpu_pct;
}
static double mem_copy_util(const struct pflex_gpu_reading *r) {
  return r->util_mem_pct; /* NVML's memory utilization is DCGM's MEM_COPY_UTIL */
}
static double sm_clock(const struct pflex_gpu_reading *r) {
  return r->sm_clock_mhz;
}
static double sm_active(const struct pflex_gpu_reading *r) {
  return r->sm_active;
}
static double pipe_tensor_active(const struct pflex_gpu_reading *r) {
  return r->pipe_tensor_active;
}
static double dram_active(const struct pflex_gpu_reading *r) {
  return r->dram_active;
}

/* Names as the runs file and the twin name them (docs/prediction.md). */
static const struct {
  const char *name;
  unsigned valid; /* the reading's bit it needs */
  double (*get)(const struct pflex_gpu_reading *);
} features[AGENT_TELEMETRY_NFEATURES] = {
    {"gpu_util", PFLEX_GPU_UTIL, gpu_util},
    {"mem_copy_util", PFLEX_GPU_UTIL, mem_copy_util},
    {"sm_clock", PFLEX_GPU_SM_CLOCK, sm_clock},
    {"sm_active", PFLEX_GPU_PROF, sm_active},
    {"pipe_tensor_active", PFLEX_GPU_PROF, pipe_tensor_active},
    {"dram_active", PFLEX_GPU_PROF, dram_active},
};

const char *agent_telemetry_name(size_t k) {
  return k < AGENT_TELEMETRY_NFEATURES ? features[k].name : NULL;
}

bool agent_telemetry_uncapped(const struct pflex_gpu_reading *r) {
  if (!(r->valid & PFLEX_GPU_LIMIT)) return false;
  if (r->valid & PFLEX_GPU_DEFAULT_LIMIT) return r->limit_mw >= r->default_limit_mw;
  return (r->valid & PFLEX_GPU_CONSTRAINTS) && r->limit_mw >= r->max_limit_mw;
}

static bool training(const struct pflex_gpu_reading *r) {
  return (r->valid & PFLEX_GPU_UTIL) && r->util_gpu_pct >= AGENT_TELEMETRY_TRAINING_UTIL;
}

void agent_telemetry_take(struct agent_gpu_telemetry *t, const char *job,
                          const struct pflex_gpu_reading *r, bool job_uncapped, double window) {
  if (!job) job = "";
  if (strcmp(t->job, job) != 0) {
    memset(t, 0, sizeof *t);
    snprintf(t->job, sizeof t->job, "%s", job);
  }
  if (!job[0] || !job_uncapped || !agent_telemetry_uncapped(r) || !training(r)) return;
  for (size_t k = 0; k < AGENT_TELEMETRY_NFEATURES; k++) {
    if (!(r->valid & features[k].valid)) continue;
    double x = features[k].get(r);
    if (!isfinite(x)) continue;
    t->n[k]++;
    /* The running mean, then a moving one with the window's horizon. */
    double w = 1.0 / fmin((double)t->n[k], fmax(window, 1.0));
    t->mean[k] += w * (x - t->mean[k]);
  }
}

json_t *agent_telemetry_json(const struct agent_gpu_telemetry *const *t, size_t n, const char *job,
                             unsigned long long *ret_samples) {
  json_t *o = NULL;
  unsigned long long samples = 0;
  for (size_t k = 0; k < AGENT_TELEMETRY_NFEATURES; k++) {
    double sum = 0;
    size_t m = 0;
    unsigned long long taken = 0;
    for (size_t i = 0; i < n; i++)
      if (strcmp(t[i]->job, job) == 0 && t[i]->n[k] >= AGENT_TELEMETRY_MIN_SAMPLES) {
        sum += t[i]->mean[k];
        taken += t[i]->n[k];
        m++;
      }
    if (!m) continue;
    if (!o && !(o = json_object())) return NULL;
    json_object_set_new(o, features[k].name, json_real(sum / (double)m));
    if (taken > samples) samples = taken;
  }
  *ret_samples = samples;
  return o;
}
