/* The simulated cluster's world: nodes (fake-NVML state files), the jobs
 * running on them (twin kinds placed on whole nodes, ending and replaced:
 * churn), the physics of every tick (each GPU draws its kind's settled power
 * at the limit in effect, with 0.5% noise), and the throughput each job
 * reports to its first node's pflexd over StatsD, as a training process does. */
#ifndef CTL_SIM_WORLD_H
#define CTL_SIM_WORLD_H

#include <stdbool.h>
#include <stddef.h>

#include <gsl/gsl_rng.h>

#include "controller/sim_node.h"
#include "controller/sim_truth.h"
#include "pflex/curve.h"

/* A job's life on its nodes: training; then (churn) ended, its GPUs without
 * a job for a gap; then the next job's startup (loading, little power, no
 * throughput); then training again. */
enum sim_phase { SIM_RUNNING = 0, SIM_GAP, SIM_STARTUP };
#define SIM_GAP_S 5.0
#define SIM_STARTUP_S 5.0
#define SIM_NVML_AVG_S 1.0 /* NVML's power reading: the mean draw over the last second */

struct sim_change {
  size_t job;
  bool put; /* true: PUT /v1/jobs/{id} (a job starts); false: DELETE (it ended) */
  char id[32];
};

struct sim_job {
  enum sim_phase phase;
  double t_phase;              /* when the gap or startup ends */
  const struct sim_kind *next; /* kind of the job that follows the gap */
  char id[32];
  const struct sim_kind *kind;
  size_t node0, nnodes; /* on nodes node0 .. node0 + nnodes - 1, every GPU */
  int gpus;
  double t_end;              /* when it ends (churn); INFINITY = never */
  bool running;              /* phase == SIM_RUNNING */
  struct pflex_curve *curve; /* true curve */
  double tput_now;           /* noise-free throughput at the limits in effect */
};

struct sim_world {
  struct sim_truth truth;
  struct sim_node *nodes;
  size_t nnodes, gpus_per_node;
  struct sim_job *jobs; /* at most one per node */
  size_t njobs;
  size_t serial;    /* job ids */
  double churn_s;   /* mean job lifetime (0 = no churn) */
  double idle_frac; /* share of nodes left without a job */
  gsl_rng *rng;
  int statsd_fd;
  int *statsd_port; /* per node */
  size_t churned;
  bool fixed_kinds;  /* churn keeps each job's kind (hosted: the sim backend's group is fixed) */
  bool raw_readings; /* the nodes' avg_w is what the agents read (hosted agents on the
                        sim backend), not this physics' average: reported as is */
};

/* Builds the truth (sim_truth_init: `population` kinds drawn with seed
 * 1000 + seed, or the published groups when 0), the nodes' state files under
 * dir, and places jobs. -errno with err. */
int sim_world_init(struct sim_world *w, const char *dir, size_t nnodes, size_t gpus_per_node,
                   double churn_s, double idle_frac, unsigned long seed, size_t population,
                   double now, char *err, size_t errlen);
void sim_world_release(struct sim_world *w);

/* Every job's noise-free throughput at the lowest limit in effect on its GPUs. */
void sim_world_update_tput(struct sim_world *w);

/* One physics tick at time now (dt since the last), limits read first. */
int sim_world_tick(struct sim_world *w, double now, double dt, size_t avg_ticks, double lag_s);

/* Hosted: the GPUs of an agent that did not answer the last read (killed,
 * stalled) still run and NVML still reads them, but the sim reads NVML
 * through the agent; so their readings are modelled from the last one: they
 * hold their limits (no agent changes them) and the one-second average moves
 * linearly to the settled draw there (noise-free) over a second. Nodes that
 * answered keep what they reported (and remember it, with the time). */
void sim_world_model_unread(struct sim_world *w, double now);

/* Sends every running job's throughput to its first node's StatsD port. */
void sim_world_report_tput(struct sim_world *w);

/* Moves jobs through their phases: a job whose time is up ends (DELETE), the
 * next starts on the same nodes after the gap (PUT; drawn among the kinds
 * that fit them) and trains after its startup. Returns the changes for the
 * agents (at most max). */
size_t sim_world_churn(struct sim_world *w, double now, struct sim_change *ret, size_t max);

/* The lowest limit in effect on a job's GPUs, and what they draw (NVML's
 * one-second averages, summed). */
double sim_job_limit_w(const struct sim_world *w, const struct sim_job *j, double *ret_drawn_w);
/* Sum of every GPU's limit now. */
double sim_world_limits_w(const struct sim_world *w);

/* Sum over every GPU of what NVML reports now, and of GPUs without a running job. */
double sim_world_reported_w(const struct sim_world *w, double *ret_idle_w);

#endif
