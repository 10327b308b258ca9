/* The simulated cluster's ground truth: job kinds drawn like `pflex twin
 * population` or taken from the twin's calibrated published groups
 * (dense/MoE, pretraining/fine-tuning, H100 and H200), each with its settled per-GPU power and throughput at
 * every cap from the GPU's least settable limit to its TDP in 1 W steps
 * (pflex_twin_eval), and its true aggregate power-throughput curve for the
 * oracle. Everything here is modelled (the twin), not measured. */
#ifndef CTL_SIM_TRUTH_H
#define CTL_SIM_TRUTH_H

#include <stddef.h>
#include <stdint.h>

#include "pflex/curve.h"
#include "pflex/twin.h"

struct sim_kind {
  char group[128];
  char spec[160]; /* how the sim GPU backend names it: group=NAME or population=SEED:INDEX */
  const struct pflex_twin_gpu *gpu;
  struct pflex_twin_job job;
  int gpus; /* the group's GPU count */
  double cap_min, cap_max;
  size_t n;      /* table entries: cap_min + i W for i < n */
  double *power; /* per-GPU settled power at cap (W) */
  double *tput;  /* job throughput at cap (tokens/s) */
};

struct sim_truth {
  struct sim_kind *kinds;
  size_t n;
};

/* Builds the kinds: with population 0 every published group's (the twin's
 * calibrated jobs at the groups' sizes; about 1 s: calibration and tables),
 * else `population` jobs drawn like `pflex twin population --jobs N --seed
 * SEED` (H100 and H200; other models, sizes from the Acme trace). */
int sim_truth_init(struct sim_truth *t, size_t population, uint64_t seed);
void sim_truth_release(struct sim_truth *t);

/* Per-GPU power and job throughput of kind k at per-GPU cap cap_w (clamped). */
double sim_kind_power(const struct sim_kind *k, double cap_w);
double sim_kind_tput(const struct sim_kind *k, double cap_w);

/* The kind's true curve for a job of `gpus` GPUs (throughput scaled by
 * gpus / k->gpus): aggregate power -> throughput, linear between caps 10 W
 * apart, the caps recorded. Freed with pflex_curve_free. */
int sim_kind_curve(const struct sim_kind *k, int gpus, struct pflex_curve **ret);

#endif
