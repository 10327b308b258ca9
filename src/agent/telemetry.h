/* Per-job telemetry for a controller's PFI prediction (docs/agent.md,
 * "Telemetry"): the features a `pflex fit` model can read, named as a runs
 * file names them, measured on each GPU while its job trains uncapped, and
 * averaged over the job's GPUs in GET /v1/jobs.
 *
 * Only uncapped samples count: the model is fitted on uncapped runs, and a
 * cap moves the features (in the twin, a cap at 71% of the top leaves
 * dram_copy at 0.48-1.02 of its uncapped value). A job that has trained
 * only under caps reports none. */
#ifndef PFLEX_AGENT_TELEMETRY_H
#define PFLEX_AGENT_TELEMETRY_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "agent/body.h"
#include "pflex/gpu.h"

#define AGENT_TELEMETRY_NFEATURES 6
/* Samples of one GPU before its mean counts. */
#define AGENT_TELEMETRY_MIN_SAMPLES 10
/* The mean is over all samples up to this many seconds' worth, then moving
 * (exponential, with this horizon): a job's features follow its phases. */
#define AGENT_TELEMETRY_WINDOW_S 300.0
/* A sample at this GPU utilization (%) or more is one of training: evals,
 * checkpoints and loading are left out, as the study's phases do. */
#define AGENT_TELEMETRY_TRAINING_UTIL 50

struct agent_gpu_telemetry {
  char job[AGENT_JOB_ID_MAX + 1]; /* whose samples these are ("": none) */
  unsigned long n[AGENT_TELEMETRY_NFEATURES];
  double mean[AGENT_TELEMETRY_NFEATURES];
};

/* The name of feature k (a runs-file column), or NULL past the last. */
const char *agent_telemetry_name(size_t k);

/* True when the reading's limit is the GPU's default (or, without one, its
 * highest settable). */
bool agent_telemetry_uncapped(const struct pflex_gpu_reading *r);

/* Takes one reading of a GPU whose job is `job` (NULL or "": none) into its
 * means when it is a training sample and job_uncapped (every GPU of the job
 * uncapped: synchronous training runs at its slowest GPU's pace, so one
 * capped GPU moves the others' features); a GPU whose job changed starts
 * afresh. window: samples in the horizon (AGENT_TELEMETRY_WINDOW_S times the
 * sampling rate). */
void agent_telemetry_take(struct agent_gpu_telemetry *t, const char *job,
                          const struct pflex_gpu_reading *r, bool job_uncapped, double window);

/* A job's features over its n GPUs' telemetry t[] (each feature the mean
 * over the GPUs that have AGENT_TELEMETRY_MIN_SAMPLES of it for this job),
 * or NULL when there is none yet; *ret_samples the most uncapped training
 * samples behind one feature, over all its GPUs. */
json_t *agent_telemetry_json(const struct agent_gpu_telemetry *const *t, size_t n, const char *job,
                             unsigned long long *ret_samples);

#endif
