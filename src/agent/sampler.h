/* Sampling: every GPU read at a fixed rate into a ring of recent samples,
 * plus the latest full reading (for /v1/gpus and /metrics). */
#ifndef PFLEX_AGENT_SAMPLER_H
#define PFLEX_AGENT_SAMPLER_H

#include <stddef.h>

#include "pflex/gpu.h"

/* One compact sample of one GPU; fields whose PFLEX_GPU_* bit is clear in
 * `valid` hold nothing. */
struct agent_sample {
  double time_s; /* monotonic */
  unsigned valid;
  unsigned power_mw, limit_mw, enforced_mw, sm_clock_mhz;
  unsigned long long energy_mj, throttle_reasons;
};

/* A fixed-size ring, oldest overwritten. */
struct agent_ring {
  struct agent_sample *v;
  size_t cap, head, n; /* head: where the next sample goes */
};

int agent_ring_init(struct agent_ring *r, size_t cap);
void agent_ring_release(struct agent_ring *r);
void agent_ring_push(struct agent_ring *r, const struct agent_sample *s);
/* The k-th newest sample (0 = latest), or NULL past the oldest. */
const struct agent_sample *agent_ring_get(const struct agent_ring *r, size_t k);

/* Per-GPU sampling state. */
struct agent_gpu_sampler {
  struct pflex_gpu_reading last; /* the latest successful reading */
  int have_last;
  int last_err;                  /* error of the latest read (0: fine) */
  struct agent_ring ring;
};

/* Schedule and counters of one sampling loop over n GPUs. */
struct agent_sampler {
  double period_s;
  double next_s; /* monotonic time of the next tick */
  unsigned long long samples, dropped;
};

/* Sets the rate; the first tick is due at `now`. */
void agent_sampler_init(struct agent_sampler *s, double hz, double now);

/* When the tick is due: reads every GPU into its ring and advances the
 * schedule. A failed read and every tick missed because the loop ran late
 * count as dropped. Returns the number of reads that failed. */
size_t agent_sampler_tick(struct agent_sampler *s, struct pflex_gpu *gpu,
                          struct agent_gpu_sampler *gpus, unsigned n, double now);

#endif
