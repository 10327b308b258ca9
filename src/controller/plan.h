/* One round's decision: the budget among the jobs (the library's optimal
 * strategy on each job's current curve, floors per job class, weights by
 * objective), the job powers turned into per-GPU caps, and the event-safe
 * fallback every node moves to if its lease runs out. */
#ifndef CTL_PLAN_H
#define CTL_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "controller/config.h"
#include "controller/jobs.h"
#include "controller/nodes.h"

struct ctl_plan_summary {
  double fixed_w;    /* what is not allocated: unreachable nodes, GPUs without a job, jobs
                        that cannot be allocated this round */
  double jobs_w;     /* the budget left for the jobs */
  double caps_w;     /* sum of every cap decided plus the unreachable nodes' bounds */
  double fallback_w; /* sum over nodes of their fallback times their GPUs */
  size_t jobs;       /* jobs allocated */
  bool saturated;    /* every job got its P_max */
  bool infeasible;   /* the budget is below the jobs' floors (every job at its least),
                        or the target below least_w */
  double least_w;    /* the least the caps can hold the cluster to: GPUs of jobs at their
                        least limits, GPUs without a job at their draw if lower,
                        unreachable nodes at their bounds */
  double floor_scale; /* the share of every job's throughput floor held: 1 when the floors
                         fit, less when they were scaled down together to fit, 0 when not
                         even the jobs' least powers fit */
  double alloc_ms;   /* time in pflex_alloc_run, wall clock */
  double alloc_cpu_ms; /* the same, this thread's CPU time (wall less preemption) */
  double pred_tput;  /* sum of the jobs' throughput predicted at their allocation */
  double rise_w;     /* how far the draw can rise under these caps without a new plan:
                        GPUs without a job (a job may start on them) and jobs outside the
                        allocation from their draw to their caps, loading jobs from their
                        draw to their shares (feedback.h, ctl_feedback_reserve) */
};

/* Decides caps for budget_w (the feedback's budget) under target_w (the
 * event's; fallbacks are scaled to it). The caps sum to at most the budget,
 * except that a job given its whole measured uncapped draw gets a cap 3%
 * above it (rounded up): a cap above the natural draw changes nothing, and
 * its rise stays bounded. The fallbacks count only what each node was
 * allotted. Writes nodes[k].cap_w and
 * fallback_w, and every job's alloc_w, cap_w, pred_tput. -ENOMEM. */
int ctl_plan(struct ctl_node *nodes, size_t nnodes, struct ctl_jobset *js,
             const struct ctl_config *cfg, double budget_w, double target_w, double unseen_w,
             struct ctl_plan_summary *ret);

#endif
