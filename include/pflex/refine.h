/* Closed-loop curve refinement (core): learn a job's power-throughput curve
 * from what its caps really did.
 *
 * A controller (or the study's simulated closed loop) knows a job's predicted
 * PFI and its power range before any cap is applied; every cap it then applies
 * is a measurement: the job's (power, throughput) while it held, noisy. Per
 * job it keeps one struct pflex_refine, feeds it each observation and asks for
 * the current curve (to allocate on) and a confidence (how much the
 * observations have narrowed the prior).
 *
 * Two shapes, as in the study (docs/study.md, "Closed loop"):
 * - PFLEX_REFINE_DATA: the curve's shape comes from other jobs' measured
 *   curves (templates, pflex_curve_from_pfi_templates). The job's PFI is
 *   re-estimated as the posterior mode over PFLEX_REFINE_NPFI candidate
 *   curves (the templates' shape at PFIs from 0.6 to 6, log-spaced; Gaussian
 *   prior on the PFI around the prediction, SD prior_sd; Gaussian relative
 *   noise on each throughput): the confidence. The shape after an
 *   observation is the mean of the templates nearest the observations (a
 *   Gaussian kernel in their distance from the observed T/T_max, as wide as
 *   the sqrt(n)-th nearest, at most the 8th, and at least twice the noise;
 *   with a table but no templates given, the candidates at the PFI's mode),
 *   and every observation becomes an exact knot of a monotone curve that
 *   follows that shape between knots (observations within knot_merge, 5%,
 *   of P_max of each other averaged; knots made monotone by isotonic regression and
 *   capped at T_max).
 * - PFLEX_REFINE_FAMILY: the parametric family (pflex_curve_from_pfi's path)
 *   is refitted by maximum a posteriori (pflex_refine_family_fit), times a
 *   residual correction that makes the curve pass through what was seen
 *   (observations within 1% of P_max of each other averaged).
 * Without templates (or without a grid point below P_max) the data shape
 * falls back to the family's member, as the study does.
 *
 * An observation at (or within 0.1% of) P_max says nothing about the shape:
 * every candidate passes through (P_max, T_max). It is kept but moves
 * neither the curve nor the confidence.
 *
 * Memory and time per job are bounded: the state keeps the most recent
 * max_obs observations (older ones are dropped); an observation costs
 * O(max_obs * PFLEX_REFINE_NPFI) and, with templates, O(templates *
 * (max_obs + 65)) (the prior reads at most 256 templates at 65 powers, once).
 * No globals, no environment, no output;
 * a prior is immutable once built and may be shared by many jobs and
 * threads; one struct pflex_refine is used by one thread at a time. */
#ifndef PFLEX_REFINE_H
#define PFLEX_REFINE_H

#include <stddef.h>

#include "pflex/curve.h"

enum pflex_refine_shape {
  PFLEX_REFINE_DATA = 0, /* templates' shape, PFI re-estimated, observations as knots */
  PFLEX_REFINE_FAMILY,   /* the parametric family refitted, with a residual correction */
};

/* Candidate PFIs of the data shape: PFLEX_REFINE_NPFI values log-spaced from
 * 0.6 to 6; pflex_refine_candidate_pfi(m) is the m-th (m fractional allowed). */
#define PFLEX_REFINE_NPFI 48
double pflex_refine_candidate_pfi(double m);

/* What is known of a job before any observation. */
struct pflex_refine_job {
  double pfi;                 /* predicted Eq. 1 PFI (finite) */
  double p_min, p_max, t_max; /* aggregate power range (W), throughput at P_max */
  int gpus;                   /* GPUs of the job (> 0) */
  const char *gpu;            /* GPU type for the idle power and grid; NULL: H200 */
  const double *grid;         /* Eq. 1 grid of aggregate powers; NULL: the paper's in */
  size_t ngrid;               /* the GPU's range (pflex_jobs_gpu_grid; unknown type:
                                 p_min / gpus to p_max / gpus) */
  enum pflex_refine_shape shape;
  const struct pflex_curve *const *templates; /* data shape: curves that shape this one; */
  size_t ntemplates;                          /* read while building, not kept */
  double bandwidth; /* data shape: PFI kernel width; 0 = 0.25 */
  /* data shape, optional: the templates already read on this job's grid
   * (pflex_refine_templates_new of a job with the same range, GPU and grid),
   * used instead of templates; use[j] != 0 for those that shape this job
   * (NULL: all). A table built for another job is -EINVAL. */
  const struct pflex_curve_templates *table;
  const unsigned char *use;
};

/* The job's templates read on its Eq. 1 grid (pflex_curve_templates_new),
 * to share among jobs of the same range, GPU and grid that use some of the
 * same templates (e.g. one group under several predictions). -EINVAL on a
 * bad job or one without templates, -PFLEX_E_NOPOINTS when no grid point
 * lies below P_max, -ENOMEM. Freed with pflex_curve_templates_free. */
int pflex_refine_templates_new(const struct pflex_refine_job *job,
                               struct pflex_curve_templates **ret);

/* The predicted curve of a job (what a controller allocates on before any
 * observation): the family's member with the job's PFI on its grid (outside
 * the family's range, its nearest end; with no grid point below P_max, the
 * default member), or with the data shape and templates, the templates'
 * shape with that PFI (a PFI at or below 0.05 taken as 0.05). *ret_curve is
 * freed with pflex_curve_free. -EINVAL on a bad job, -ENOMEM. */
int pflex_refine_predicted_curve(const struct pflex_refine_job *job,
                                 struct pflex_curve **ret_curve);

/* A job's prior: its predicted curve and, for the data shape, the candidate
 * curves (PFLEX_REFINE_NPFI template constructions: build it once per job,
 * or once per group of identical jobs, and share it). */
struct pflex_refine_prior;
int pflex_refine_prior_new(const struct pflex_refine_job *job,
                           struct pflex_refine_prior **ret_prior);
/* Accepts NULL. Every struct pflex_refine made from the prior must be freed first. */
void pflex_refine_prior_free(struct pflex_refine_prior *prior);
/* The predicted curve (pflex_refine_predicted_curve), owned by the prior. */
const struct pflex_curve *pflex_refine_prior_curve(const struct pflex_refine_prior *prior);

struct pflex_refine_opts {
  double noise;    /* relative SD of an observed throughput, default 0.005 (CV 0.5%) */
  double prior_sd; /* SD of the prior around the prediction, default 0.3: in PFI units (data
                      shape) or of the position on the family path (family shape) */
  size_t max_obs;  /* observations kept, the most recent; default 100, at least 1 */
  /* Data shape: observations within this share of P_max of each other are
   * averaged into one knot; default (and 0) PFLEX_REFINE_KNOT_MERGE, at most
   * 0.5. The study's shrunk loop takes 0.02 (docs/study.md, "Eighth wave"). */
  double knot_merge;
};
#define PFLEX_REFINE_KNOT_MERGE 0.05
void pflex_refine_opts_init(struct pflex_refine_opts *opts);

/* Per-job state. opts NULL: the defaults. The prior must outlive it.
 * -EINVAL on bad options (noise < 0, prior_sd <= 0, max_obs 0, knot_merge
 * < 0 or > 0.5), -ENOMEM. */
struct pflex_refine;
int pflex_refine_new(const struct pflex_refine_prior *prior, const struct pflex_refine_opts *opts,
                     struct pflex_refine **ret);
void pflex_refine_free(struct pflex_refine *r); /* accepts NULL */

/* Starts r over on prior (a new prediction for the job, or another job):
 * drops every observation, keeps the options and the memory. -EINVAL (r
 * unchanged) when prior's shape is not the one r was made with; -ENOMEM. */
int pflex_refine_reset(struct pflex_refine *r, const struct pflex_refine_prior *prior);

/* Adds one observation: aggregate power (W) and throughput while the cap
 * held, and refits. -EINVAL (nothing changed) when power or throughput is
 * not finite and positive. Never allocates. */
int pflex_refine_observe(struct pflex_refine *r, double power_w, double tput);

/* Data shape after an observation: the relative spread (SD / mean) of the
 * change from p0_w to p1_w among the templates the refined shape averages,
 * weighted as they are; NAN where there is none (no observation, no
 * templates, p1_w <= p0_w, no positive mean change). */
double pflex_refine_spread(const struct pflex_refine *r, double p0_w, double p1_w);

/* Observations held (at most max_obs). */
size_t pflex_refine_count(const struct pflex_refine *r);

/* The current curve: the prior's predicted curve before any observation, then
 * the refined curve (a callback curve on [P_min, P_max]). Owned by r; valid,
 * and unchanged, until the next pflex_refine_observe or pflex_refine_free. */
const struct pflex_curve *pflex_refine_curve(const struct pflex_refine *r);

/* A 64-bit content digest of the current curve (pflex_refine_curve), for
 * caches that keep what a curve computes across calls (the allocator's
 * pflex_alloc_ctx, through pflex_alloc_job.curve_digest): before any
 * observation the predicted curve's pflex_curve_digest; after, a digest of
 * the prior's content (its parameters, curves and templates' table), the
 * options and every observation since pflex_refine_new or the last
 * pflex_refine_reset, in order. The refined curve is a function of exactly
 * these, so equal digests mean the same curve (up to a 64-bit collision);
 * an observation always changes it. 0 for NULL. */
uint64_t pflex_refine_digest(const struct pflex_refine *r);

/* How far the observations have pinned the curve's shape, in [0, 1]:
 * 1 - (posterior SD) / (prior SD) of the shape parameter (the PFI for the
 * data shape, the family path position for the family shape), both taken
 * over the same bounded candidate range. 0 before any observation below
 * P_max; near 1 when the data fix the shape to the candidates' resolution
 * (about 5% in PFI for the data shape). */
double pflex_refine_confidence(const struct pflex_refine *r);

/* The family shape's update, on its own: the member along the path of
 * pflex_curve_from_pfi (u in (0, 1] is c; u in (1, 2] lowers vratio from
 * base->vratio to 1 with c = 1) that maximizes the posterior of a Gaussian
 * prior on u centred on the predicted member's position (SD prior_sd) and
 * Gaussian relative noise `noise` on each observed throughput obs_t[k] at
 * power obs_w[k]. An observation at P_max says nothing about the shape (every
 * member passes through the uncapped point), so the prior then keeps the
 * prediction. base gives the knee, idle share and path start (c = 1 and the
 * default vratio); pred is the predicted member. -EINVAL, -ENOMEM. */
int pflex_refine_family_fit(const struct pflex_curve_params *base,
                            const struct pflex_curve_params *pred, double prior_sd, double noise,
                            double p_max, double t_max, const double *obs_w, const double *obs_t,
                            size_t nobs, struct pflex_curve_params *ret);

#endif
