/* Internal to the study engine: its state, shared by study.c (the
 * workloads) and study_calibrate.c (the shrinkage's calibrated bands), and
 * the bands' layout. */
#ifndef PFLEX_CORE_STUDY_INTERNAL_H
#define PFLEX_CORE_STUDY_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "pflex/refine.h"
#include "pflex/study.h"

/* One output line per scenario and cut. */
struct line {
  enum pflex_alloc_strategy st;
  size_t pred; /* index into preds; (size_t)-1 for none */
  unsigned round;
};

struct shaping; /* study.c's: group_curves' scratch */

/* The study's inputs and what it builds before the workloads. */
struct study {
  const struct pflex_study_group *g;
  size_t ng;
  const struct pflex_study_predset *preds;
  size_t np;
  const struct pflex_study_opts *o;
  const double *cuts;
  size_t ncuts;
  const struct pflex_curve **pcurve; /* np * ng predicted curves (own[] or the priors') */
  struct pflex_curve **own;          /* open loop: np * ng predicted curves */
  struct pflex_refine_prior **prior; /* closed loop: np * ng priors */
  double *fac;    /* shrinkage: CAL_PHASES * np * ng * CAL_NX bands calibrated on the other
                     folds' curves (pflex_shrink_band): gain, loss of a small move, then of a
                     large one (CAL_NB); NAN where not calibrated */
  double *ratio;  /* CAL_PHASES * np * ng * CAL_NX * CAL_NR: each group's change ratios */
  double *spread; /* closed loop, np * ng * CAL_NX * CAL_NR: phase 1's spread of each change
                     (pflex_refine_spread), beside its ratio */
  double *zq;     /* the same layout: each group's scaled band (pflex_shrink_scaled_band) */
  size_t *pt, *ft, npt, nft; /* groups by task */
  double *oscale;            /* PFLEX_OBJECTIVE_N * ng: a group's throughput's weight in
                                each objective (pflex_objective_scale) */
  bool have_dram;
  bool *built;             /* per group: its predicted curves built (group_curves) */
  struct shaping *shaping; /* per thread: group_curves' scratch */
  unsigned threads;        /* the threads the curves and the workloads run on (at least 1) */
  struct line *lines;
  size_t nlines;
};

/* The most template curves one predicted data-shape curve averages over. */
#define STUDY_MAX_TEMPLATES 512

/* The anchors at which the shrinkage is calibrated: x P_max for x = CAL_X0,
 * CAL_X0 + CAL_DX, ..., 1; rises and falls over CAL_STEP_SMALL and CAL_STEP
 * P_max (CAL_NR ratios per anchor: rise small, rise large, fall small, fall
 * large). Phase 0: the predicted curves; phase 1: the curves refined after
 * one observation at the anchor (the closed loop's); phase 2 + o: refined
 * after an observation at (x + pflex__study_cal_off[o]) P_max and then one
 * at the anchor (the loop's from round 2 on, for a job that round 1
 * moved). */
#define CAL_X0 0.30
#define CAL_DX 0.05
#define CAL_NX 15
#define CAL_STEP 0.10
#define CAL_STEP_SMALL 0.02 /* and over this: a small move is judged on the local slopes */
#define CAL_NR 4
#define CAL_NOFF 6
#define CAL_PHASES (2 + CAL_NOFF)
extern const double pflex__study_cal_off[CAL_NOFF]; /* phase 2 + o's offsets */
#define CAL_NB 4 /* a band's numbers: small move's gain, loss, large move's gain, loss */

static inline double *ratios_at(const struct study *s, int phase, size_t k, size_t j, size_t x) {
  return &s->ratio[(((size_t)phase * s->np + k) * s->ng + j) * CAL_NX * CAL_NR + x * CAL_NR];
}

static inline double *band_at(const struct study *s, int phase, size_t k, size_t i, size_t x) {
  return &s->fac[(((size_t)phase * s->np + k) * s->ng + i) * CAL_NX * CAL_NB + x * CAL_NB];
}

static inline double *cal_at(const struct study *s, double *a, size_t k, size_t j, size_t x) {
  return &a[((k * s->ng + j) * CAL_NX + x) * CAL_NR];
}

/* The shrunk loop's knots merge observations only within this share of
 * P_max: its moves are mostly 0.02-0.05 P_max, and the chord between two
 * such observations, noisy as it is, gained under the band on the mixed
 * clusters and on the reference set, while the unshrunk loop lost a little
 * with it (docs/study.md, "Eighth wave"). */
#define STUDY_SHRUNK_KNOT_MERGE 0.02

/* The refinement's options in the closed loop (max_obs: every round's). */
static inline struct pflex_refine_opts loop_opts(const struct study *s) {
  return (struct pflex_refine_opts){.noise = s->o->noise,
                                    .prior_sd = s->o->prior_sd,
                                    .max_obs = s->o->rounds,
                                    .knot_merge = s->o->shrink > 0 ? STUDY_SHRUNK_KNOT_MERGE
                                                                   : PFLEX_REFINE_KNOT_MERGE};
}

/* A refinement's spreads (pflex_refine_spread) of the CAL_NR changes
 * around anchor x (P_max units pm; lo: P_min / P_max), in the order of the
 * calibration's change ratios: rise small, rise large, fall small, fall
 * large. */
void pflex__study_change_spreads(const struct pflex_refine *r, double pm, double lo, double x,
                                 double *o);

/* The shrinkage's calibrated bands of every set whose folds are the study's
 * own groups (s->fac, s->ratio; in the closed loop s->spread and s->zq):
 * from the predicted curves (s->pcurve) and priors (s->prior), which must
 * be built for those groups. */
int pflex__study_calibrate(struct study *s);

#endif
