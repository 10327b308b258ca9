/* Scoring a simulated event against what the sim knows is true: power
 * samples against the target (compliance, overshoot), and throughput against
 * an equal cut and the oracle (pflex_alloc ORACLE on the jobs' true curves)
 * at the same budget for the jobs. */
#ifndef CTL_SIM_SCORE_H
#define CTL_SIM_SCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "controller/events.h"
#include "controller/sim_world.h"

#define SIM_SETTLE_S 5.0 /* compliance: at or under target + 1% for this long */

struct sim_held_job {
  char id[32];
  double limit_w, drawn_w, tput; /* lowest limit in effect per GPU, what its GPUs drew
                                    (NVML's average), true throughput */
};

struct sim_held {
  double t, ctl, unc, budget, drawn;
  size_t first, n; /* its jobs: kinds[first .. first + n) */
};

struct sim_score {
  struct ctl_event ev; /* as the controller resolved it */
  double held_from;    /* throughput is scored from here to the event's end */
  double *t, *p, *target;
  size_t n, cap;
  /* The held seconds, scored after the run (sim_score_result) so that the
   * oracle's cost stays out of the simulation's ticks: each second's jobs
   * (kind and size, which give the true curve), the controller's throughput,
   * the jobs' budget and what they drew. */
  struct sim_held *held_v;
  size_t held, held_cap;
  const struct sim_kind **kinds; /* of every held second's jobs, in order */
  int *gpus;
  struct sim_held_job *jobs; /* and what each was and did (for jobs_trace) */
  size_t nkinds, kinds_cap;
  FILE *trace; /* NULL, or every held second: t,ctl,equal,oracle,equal_drawn,oracle_drawn,budget,drawn */
  /* NULL, or every held second's jobs, one line each (a diagnostic: where the
   * controller's power differs from the oracle's): t, job, kind, gpus, the
   * limit in effect per GPU, what the job drew and its throughput, the
   * oracle's power for it and its throughput there, the same for the equal
   * cut, and T_max. */
  FILE *jobs_trace;
  double alloc_ms_max, round_ms_max;
};

void sim_score_init(struct sim_score *s);
void sim_score_release(struct sim_score *s);

/* A power sample at time t (the reported total), kept from the event's
 * start (s->ev.start) to its end; scored against the event's level once
 * the baseline is known (sim_score_result). */
int sim_score_power(struct sim_score *s, double t, double reported_w);

/* A throughput sample at time t: the jobs' true throughput now against equal
 * and oracle at the budget the jobs had (the target minus what GPUs without
 * a running job reported, idle_w), and at the power the jobs drew (the
 * total reported, total_w, minus idle_w): the second separates how well the
 * power was divided from how much of the budget the feedback used. */
int sim_score_tput(struct sim_score *s, const struct sim_world *w, double t, double idle_w,
                   double total_w);

struct sim_result {
  double compliance_s; /* NAN: never compliant */
  size_t overshoot_samples, samples;
  double max_over_pct;                                    /* after compliance_s */
  double gap_recovered, vs_equal, vs_oracle, vs_uncapped; /* NAN without held samples */
  double gap_recovered_drawn; /* the same gap with equal and oracle at the power drawn */
  const char *gap_undefined;  /* why gap_recovered is NAN (a static string), or NULL */
  double budget_used;         /* what the jobs drew / their budget */
};
/* Scores the power samples and the held seconds (the oracle and the equal
 * cut on every held second's true curves; writes the trace). -ENOMEM. */
int sim_score_result(struct sim_score *s, struct sim_result *r);

#endif
