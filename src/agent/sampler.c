/* The sampling loop's ticks and the sample rings (sampler.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "agent/sampler.h"

int agent_ring_init(struct agent_ring *r, size_t cap) {
  r->v = calloc(cap, sizeof *r->v);
  if (!r->v) return -ENOMEM;
  r->cap = cap;
  r->head = r->n = 0;
  return 0;
}

void agent_ring_release(struct agent_ring *r) {
  free(r->v);
  r->v = NULL;
  r->cap = r->n = r->head = 0;
}

void agent_ring_push(struct agent_ring *r, const struct agent_sample *s) {
  r->v[r->head] = *s;
  r->head = (r->head + 1) % r->cap;
  if (r->n < r->cap) r->n++;
}

const struct agent_sample *agent_ring_get(const struct agent_ring *r, size_t k) {
  if (k >= r->n) return NULL;
  return &r->v[(r->head + r->cap - 1 - k) % r->cap];
}

void agent_sampler_init(struct agent_sampler *s, double hz, double now) {
  s->period_s = 1.0 / hz;
  s->next_s = now;
  s->samples = s->dropped = 0;
}

static void compact(const struct pflex_gpu_reading *rd, double now, struct agent_sample *out) {
  *out = (struct agent_sample){.time_s = now,
                               .valid = rd->valid,
                               .power_mw = rd->power_mw,
                               .limit_mw = rd->limit_mw,
                               .enforced_mw = rd->enforced_limit_mw,
                               .sm_clock_mhz = rd->sm_clock_mhz,
                               .energy_mj = rd->energy_mj,
                               .throttle_reasons = rd->throttle_reasons};
}

size_t agent_sampler_tick(struct agent_sampler *s, struct pflex_gpu *gpu,
                          struct agent_gpu_sampler *gpus, unsigned n, double now) {
  size_t failed = 0;
  for (unsigned i = 0; i < n; i++) {
    struct pflex_gpu_reading rd;
    int err = pflex_gpu_read(gpu, i, &rd);
    gpus[i].last_err = err;
    if (err) {
      failed++;
      continue;
    }
    gpus[i].last = rd;
    gpus[i].have_last = 1;
    struct agent_sample cs;
    compact(&rd, now, &cs);
    agent_ring_push(&gpus[i].ring, &cs);
  }
  s->samples += n - failed;
  s->dropped += failed;
  /* Ticks stay on a fixed grid; ticks the loop was too late for are dropped
   * rather than taken in a burst. */
  double late = floor((now - s->next_s) / s->period_s);
  if (late >= 1) s->dropped += (unsigned long long)late * n;
  s->next_s += (late > 0 ? late + 1 : 1) * s->period_s;
  return failed;
}
