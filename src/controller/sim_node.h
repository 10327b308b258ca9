/* One simulated node's GPUs as the fake NVML (tests/fake-nvml) shows them
 * to a real pflexd: a state file per node that pflexd's limit changes write
 * and this physics rewrites (power, energy) every tick. It models NVML as it
 * is in two ways: a new limit takes effect after limit_lag_s (about 100 ms),
 * and the power reading is the average of the last second's draw. One
 * difference stays: the fake clamps a reading to the limit at once
 * (min(power, limit)), so right after a cut the reading drops faster than a
 * real one-second average would (docs/controller.md says so). */
#ifndef CTL_SIM_NODE_H
#define CTL_SIM_NODE_H

#include <stdbool.h>
#include <stddef.h>

#define SIM_MAX_GPUS 64
#define SIM_HIST 16

struct sim_gpu {
  double limit_w;       /* as pflexd last set it (read from the state file) */
  double pending_w;     /* a new limit not yet in effect */
  double pending_since; /* when it was seen */
  double eff_w;         /* the limit in effect */
  double default_w, min_w, max_w, idle_w;
  double hist[SIM_HIST]; /* last ticks' draw */
  size_t hn, hh;
  double avg_w; /* the one-second average (what NVML reports) */
  double energy_j;
  double read_w; /* hosted: avg_w at the agent's last answer */
};

struct sim_node {
  char path[512]; /* the fake NVML state file */
  size_t ngpus;
  struct sim_gpu g[SIM_MAX_GPUS];
  char gpu_type[16];
  int job[SIM_MAX_GPUS]; /* index of the job on each GPU, -1 = none */
  bool unread;           /* hosted: the agent did not answer the last read */
  double read_t;         /* hosted: when it last answered */
};

/* Writes the initial state file: ngpus GPUs of `type` ("H200"/"H100"),
 * limits at the default, idle. -errno. */
int sim_node_create(struct sim_node *nd, const char *path, size_t ngpus, const char *type,
                    double tdp_w, double min_w, double idle_w, unsigned node_index);

/* Reads the limits pflexd set. -errno. */
int sim_node_read_limits(struct sim_node *nd, double now, double lag_s);

/* One tick: each GPU draws draw_w[i] (the caller's physics at the limit in
 * effect) for dt seconds; updates the averages and energy and writes the
 * state file (under the fake's lock). avg_ticks: ticks in one second. */
int sim_node_tick(struct sim_node *nd, const double *draw_w, double dt, size_t avg_ticks);

/* What NVML reports for GPU i: min(average, limit). */
double sim_node_reported(const struct sim_node *nd, size_t i);

#endif
