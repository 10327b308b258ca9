/* The jobs the controller allocates among: gathered each round from the
 * GPUs' job labels across nodes, kept between rounds (sorted by id) with what
 * was learnt of them: the uncapped draw and throughput, and the closed-loop
 * refinement of their curve (pflex/refine.h) fed with every cap that held. */
#ifndef CTL_JOBS_H
#define CTL_JOBS_H

#include <stdbool.h>
#include <stddef.h>

#include "controller/agent_json.h"
#include "controller/config.h"
#include "controller/nodes.h"
#include "controller/store.h"
#include "pflex/alloc.h"
#include "pflex/predict.h"
#include "pflex/refine.h"

#define CTL_JOB_KEPT_OBS 8 /* observations a job keeps for its next curve (kept_w) */

struct ctl_job {
  char id[CTL_JOB_ID_MAX];
  /* This round (from the nodes). */
  int gpus;
  double min_w, max_w; /* per-GPU settable range (the narrowest over its GPUs) */
  double power_w;      /* measured draw of its GPUs */
  double limit_w;      /* lowest limit among its GPUs */
  bool uncapped;       /* every GPU at its default limit */
  bool has_tput;
  double tput, tput_time;   /* last throughput sample (sum over nodes) */
  struct ctl_job_meta meta; /* class, weight, min_throughput as submitted */
  struct ctl_telemetry telemetry; /* as its agent reports it (n = 0: none) */
  bool complete;            /* every GPU on a node that answered */
  bool present;             /* seen this round */
  double last_seen;
  /* Learnt. */
  double p_max, t_max; /* uncapped draw and throughput (0 = not yet measured) */
  double t_est;        /* T_max estimated for a job never seen uncapped (jobs.c) */
  double t_est_w;      /* the draw of the reading t_est was read from (0: none) */
  bool probe;          /* never seen uncapped, no T_max estimate yet: it runs at the
                          equal cut's share until its throughput there sets t_est */
  double probe_cap_w;  /* the share's cap the plan last gave it (0: held lower while
                          it loads) */
  int rounds_uncapped;
  double held_cap_w; /* cap that has held since held_rounds rounds */
  int held_rounds;
  double last_obs_time, last_obs_cap;
  int rounds_since_obs;
  struct pflex_refine_prior *prior;
  struct pflex_refine *refine;
  double prior_p_max, prior_t_max; /* what the prior was built on */
  double prior_pfi;                /* and at which PFI */
  bool data_shaped;                /* on the templates' shape (else the family) */
  double model_pfi;                /* the model's prediction from its telemetry (0: none) */
  bool relative;                   /* no throughput known: the curve's T_max is 1 */
  size_t observations;
  /* The last observations fed to the refinement, replayed into the next one
   * when the curve's bounds move (a new T_max estimate): they are points of
   * the job's curve whatever its T_max. */
  double kept_w[CTL_JOB_KEPT_OBS], kept_t[CTL_JOB_KEPT_OBS];
  size_t nkept;
  /* What its GPUs draw under a binding cap, as a share of the cap (a limiter
   * holds the draw a little under it: 0.97-0.99 on the twin's jobs); 0 until
   * measured. The plan divides a job's cap by it, so that the job draws the
   * power it was allotted (jobs.c, learn_draw_ratio). */
  double draw_ratio;
  /* What the store holds of it (ctl_jobset_learnt_saved): rows are written
   * only when these differ. */
  bool stored;
  double stored_v[5]; /* p_max, t_max, t_est, draw_ratio, t_est_w */
  /* Decided this round. */
  const struct ctl_class *cls; /* by the job's class name, else by match; NULL */
  double weight;               /* the job's weight, else its class's, else 1 */
  double floor_frac;           /* least throughput / T_max: the stricter of class and job */
  double alloc_w, cap_w, pred_tput;
  bool at_top; /* given its whole uncapped draw: its cap sits above what it draws */
  /* Exploration (explore.h): a binding cap under its draw while a job given
   * its whole draw has no observation that pins its curve. */
  double explore_cap_w; /* the probe's cap per GPU (0: not exploring) */
  int explore_rounds;   /* rounds the probe has run */
  bool explored;        /* probed once already (or could not be): not again */
  double raised_w;      /* the raise pushed to its GPUs last round, summed (loop.c) */
  double raised_prev_w; /* what of the raise the round before its readings did not show then */
};

struct ctl_jobset {
  struct ctl_job *v; /* sorted by id */
  size_t n, cap;
  /* Measured curves that shape every job's (PFLEX_REFINE_DATA); none: the
   * parametric family. Not owned; kept by ctl_jobset_init's caller. */
  const struct pflex_curve *const *templates;
  size_t ntemplates;
  /* A `pflex fit` model: a job whose agent reports the model's features as
   * telemetry starts from the PFI it predicts; the others from the model's
   * population prior. NULL: every job from the configured prior_pfi. */
  const struct pflex_model *model;
  double shape_budget_ms; /* left in this round for template-shaped priors (jobs.c) */
  /* The allocator's hulls kept between rounds (ctl_jobset_alloc_ctx; NULL:
   * none yet): a job whose curve and bounds did not change costs no curve
   * sampling (the jobs' curves carry pflex_refine_digest). */
  struct pflex_alloc_ctx *alloc_ctx;
  /* Jobs forgotten whose learnt row the store still holds, until saved. */
  char (*gone)[CTL_JOB_ID_MAX];
  size_t ngone, gone_cap;
};

void ctl_jobset_init(struct ctl_jobset *js);
void ctl_jobset_release(struct ctl_jobset *js);

/* Rebuilds this round's view from the nodes; jobs not seen for forget_s are
 * dropped (churn). -ENOMEM. */
int ctl_jobset_gather(struct ctl_jobset *js, const struct ctl_node *nodes, size_t n, double now,
                      double forget_s);

struct ctl_job *ctl_jobset_find(struct ctl_jobset *js, const char *id);

/* The job's class, weight and floor from what it was submitted with and
 * the configured classes (see config.h). */
void ctl_job_resolve_class(struct ctl_job *j, const struct ctl_config *cfg);

/* After gathering: learns the uncapped point of uncapped jobs, feeds settled
 * caps to the refinement, and makes sure every present job has a curve.
 * prior_pfi: the population prior. Returns observations made this round. */
size_t ctl_jobset_learn(struct ctl_jobset *js, const struct ctl_config *cfg);

/* js's allocator context, made at the first call; NULL without memory for
 * it (the allocation then works without: the same answer, more sampling). */
struct pflex_alloc_ctx *ctl_jobset_alloc_ctx(struct ctl_jobset *js);

/* What was learnt of the jobs (P_max, T_max or its estimate, the draw
 * ratio) and is not yet in the store: the rows of jobs whose values changed
 * since ctl_jobset_learnt_saved, at most max into v; returns the count. The
 * rows of forgotten jobs to delete are js->gone. */
size_t ctl_jobset_learnt(const struct ctl_jobset *js, struct ctl_learnt_row *v, size_t max);
/* The store now holds every job's learnt values (after a write of all of
 * ctl_jobset_learnt's rows and js->gone): marks them, clears js->gone. */
void ctl_jobset_learnt_saved(struct ctl_jobset *js);
/* A restarted controller's jobs as the store kept them: each added (not
 * present until a node lists it, forgotten as usual if none does) with what
 * was learnt, so that it is allocated on its curve at once instead of being
 * probed again. -ENOMEM. */
int ctl_jobset_seed(struct ctl_jobset *js, const struct ctl_learnt_row *v, size_t n, double now);

/* What of the raises pushed last round (each job's raised_w, loop.c) the
 * readings gathered since do not show yet: per job raised, what its GPUs may
 * draw under the limits now read (times the share of a binding cap they were
 * seen to draw, else all of it) less what they were read to draw, at most
 * the raise; all of the raise for a job not read whole this round. A job
 * whose limits still bind (under its uncapped draw) will draw its raise, so
 * what a reading a round late does not show of it counts one round more
 * (raised_prev_w); a raise that may pass the job's demand does not (it may
 * never show). Clears every job's raised_w. */
double ctl_jobset_raises_in_flight(struct ctl_jobset *js);

/* The job's curve to allocate on (refined, or the prior), or NULL. */
const struct pflex_curve *ctl_job_curve(const struct ctl_job *j);
/* Its content digest (pflex_refine_digest), 0 without a curve. */
uint64_t ctl_job_curve_digest(const struct ctl_job *j);
/* pflex_refine_confidence, 0 without a curve. */
double ctl_job_confidence(const struct ctl_job *j);

#endif
