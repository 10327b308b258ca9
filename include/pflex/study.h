/* The allocation study (paper.md section 6; issue 4 items 4-5): synthetic
 * workloads of jobs sampled from sweep groups, cluster power cuts, every
 * strategy, throughput measured on the groups' true curves.
 *
 * The engine knows nothing of how PFI is predicted: the caller passes, per
 * prediction mode (in-sample, leave-one-out, ...), one predicted PFI per
 * group. pfi uses it in Eq. 2; optimal allocates on a curve with that PFI on
 * the paper's cap grid for the job, bounded by the job's known P_min, P_max
 * and T_max: by default shaped by the other groups' curves of similar PFI
 * (pflex_curve_from_pfi_templates, the templates restricted to the
 * prediction's cross-validation fold), or the parametric family's member
 * (pflex_curve_from_pfi). A group's predicted curves are built when a
 * workload first gives optimal one of its jobs (all of them up front with
 * the shrinkage, whose calibration reads every group), its templates read
 * on its grid once for all prediction sets (pflex_curve_templates_new): the
 * same curves as building each on its own, only those used.
 * oracle allocates on the true curves. Every allocation is scored on the true
 * curves.
 *
 * Closed loop (rounds > 0, optimal only): after each allocation every job's
 * true throughput at its allocated power is observed with Gaussian relative
 * noise and fed to the job's closed-loop refinement (include/pflex/refine.h,
 * the module a controller uses on live jobs), and the cluster is re-allocated
 * on the refined curves. Data shape: the job's PFI is re-estimated (posterior
 * mode, the prediction as a Gaussian prior) over the same templates' curves,
 * and every observation becomes an exact knot of a monotone curve following
 * that shape. Family shape: the curve is refitted within the family, with
 * the prediction as a prior (pflex_refine_family_fit), times a residual
 * correction through the observations.
 *
 * Seeded and deterministic: the workloads depend only on the seed, the
 * scenario, and the number of workloads and jobs; the measurement noise on a
 * separate stream. */
#ifndef PFLEX_STUDY_H
#define PFLEX_STUDY_H

#include <stddef.h>

#include "pflex/alloc.h"
#include "pflex/curve.h"
#include "pflex/progress.h"
#include "pflex/objective.h"
#include "pflex/runs.h"

/* Acme trace, Seren cluster, GPU jobs of all end states (Hu et al., NSDI 2024;
 * InternLM/AcmeTrace, CC BY 4.0; numbers from ../shared/data/README.md). */
#define PFLEX_ACME_PRETRAIN_JOBS 4026
#define PFLEX_ACME_SFT_JOBS 66971

/* Relative tolerance of "the oracle is at least every strategy": the oracle
 * is certified within 1e-6 of the optimum (a branch and bound,
 * docs/allocation.md), so a strategy above it by more than this is a bug
 * to look at; the default study has none. */
#define PFLEX_STUDY_ORACLE_TOL 1e-5

/* Relative tolerance of "worse than an equal cut": a workload counts as worse
 * when the strategy's objective is below equal's by more than this share. */
#define PFLEX_STUDY_EQUAL_TOL 1e-5

enum pflex_study_scenario {
  PFLEX_SCENARIO_RANDOM = 0, /* jobs drawn uniformly, with replacement, from all groups */
  PFLEX_SCENARIO_PRODUCTION, /* pretraining with probability 4026 / (4026 + 66971), else
                                fine-tuning; uniformly among the groups of that task */
  PFLEX_SCENARIO_N
};

enum pflex_study_pred {
  PFLEX_PRED_TRUE = 0, /* the groups' own PFI (perfect knowledge) */
  PFLEX_PRED_IN_SAMPLE,
  PFLEX_PRED_LOO,
  PFLEX_PRED_LOCO,
  PFLEX_PRED_PRIOR,
  PFLEX_PRED_UNSEEN, /* a model fitted on other data (e.g. the reference set) never saw the job */
  PFLEX_PRED_N
};

/* One sweep group as the study sees it. */
struct pflex_study_group {
  const char *name;
  const char *gpu;                 /* GPU type (idle power of the family); NULL: H200 */
  const struct pflex_curve *curve; /* the true curve (measured) */
  int gpus;
  enum pflex_arch arch;
  enum pflex_task task;
  double dram_copy; /* NAN when unknown: then the dram strategy is skipped */
};

/* Predicted PFI of every group under one prediction mode. */
struct pflex_study_predset {
  enum pflex_study_pred mode;
  /* ngroups values; NAN: no prediction for that group (a fold that could not
   * be fitted): the set's lines then count only the workloads without it. */
  const double *pfi;
  /* ngroups values or NULL: the SD of each prediction's error (e.g.
   * pflex_shrink_fold_sd), by which optimal shrinks the group's predicted
   * curve toward the equal cut (include/pflex/shrink.h). NULL, 0 or NAN: no
   * shrinkage. */
  const double *sd;
  /* Shape PFLEX_STUDY_SHAPE_DATA: which curves may shape group i's predicted
   * curve. With templates (e.g. another runs file's groups, for jobs never
   * seen in fitting): those. Else with fold: the groups j with fold[j] !=
   * fold[i] (the same folds as the PFI model's cross-validation, so that a
   * held-out job's shape never comes from its own curve). Else every group
   * (in sample). A group left with no template (one group, or a single
   * cluster left out) gets the family's member, as with
   * PFLEX_STUDY_SHAPE_FAMILY. */
  const int *fold;
  const struct pflex_curve *const *templates;
  size_t ntemplates;
};

/* How optimal turns a predicted PFI into a curve. */
enum pflex_study_shape {
  PFLEX_STUDY_SHAPE_DATA = 0, /* pflex_curve_from_pfi_templates on the fold's curves (default) */
  PFLEX_STUDY_SHAPE_FAMILY,   /* pflex_curve_from_pfi: the physical family's one-parameter path */
};

struct pflex_study_opts {
  size_t workloads;   /* default 500 */
  size_t jobs;        /* jobs per workload, default 100 */
  const double *cuts; /* cut fractions; NULL: 0, 0.05, ..., 0.40 */
  size_t ncuts;
  unsigned scenarios;  /* bit (1 << scenario); default both */
  unsigned strategies; /* bit (1 << strategy); default all */
  unsigned rounds;     /* closed-loop rounds after the first allocation, default 0 */
  double noise;        /* relative SD of an observed throughput, default 0.005 (paper: CV 0.5%) */
  double prior_sd;     /* closed loop: SD of the prior around the prediction, default 0.3: in
                          PFI units (data shape), or of the position on the family path
                          (family shape, pflex_refine_family_fit) */
  unsigned long seed;  /* default 1 */
  unsigned knots;      /* optimizer knots (pflex_alloc_opts), default 17 */
  enum pflex_study_shape shape; /* default PFLEX_STUDY_SHAPE_DATA */
  double bandwidth;             /* data shape: PFI kernel width, default 0.25 (about the
                                   paper's LOO RMSE of model (i), 0.241) */
  /* Told each workload done ("workloads", done of total); default none. */
  struct pflex_progress progress;
  enum pflex_objective objective; /* what optimal and oracle maximize and the results measure;
                                     default PFLEX_OBJECTIVE_TOKENS (the paper's) */
  double shrink; /* optimal: z > 0 shrinks each job's curve toward an anchor, the equal
                    cut (round 0) or the power last observed (closed loop), by a band
                    calibrated on the other folds' groups' curves (their true against
                    predicted, or refined, rises and falls; Gaussian quantile Phi(-z),
                    shared among the workload's jobs at round 0), else by z SDs of the
                    PFI (predset.sd); default 0: none (include/pflex/shrink.h,
                    docs/study.md) */
  double dither; /* closed loop with shrinkage: a job that a round but the last leaves within
                    the knots' merge (0.02 P_max) of where it was last observed, and that
                    was not yet observed at two powers, is moved this share of its P_max
                    from there, up or down, the moves summing to zero watts, where the
                    shrunk curves' bound still beats the anchors': its next observation
                    is at a second power (docs/study.md, "Ninth wave"); default 0: none */
  unsigned threads; /* threads to run on, the caller's among them: the workloads and the
                       predicted curves; the results are the same bits for any count (the
                       closed loop's noise is drawn from its one stream in the workloads'
                       order). Default 1 (0 counts as 1), at most PFLEX_STUDY_MAX_THREADS;
                       progress is still told on the caller's thread */
};

#define PFLEX_STUDY_MAX_THREADS 1024

/* Fills the defaults listed above. */
void pflex_study_opts_init(struct pflex_study_opts *opts);

/* A result's numbers under one objective (opts.objective, or the other one),
 * against that objective's equal cut and oracle. */
struct pflex_study_score {
  double loss_vs_oracle;   /* 1 - sum V / sum V_oracle */
  double gap_recovered;    /* (sum V - sum V_equal) / (sum V_oracle - sum V_equal); NAN if no gap */
  double gain_per_job;     /* (sum V - sum V_equal) / (workloads * jobs) */
  double worse_than_equal; /* share of the workloads where V < V_equal (PFLEX_STUDY_EQUAL_TOL) */
};

/* One line of the results: a scenario, strategy, prediction mode, round and
 * cut, over all workloads for which the cut was feasible (and, for a
 * prediction set with a group left unpredicted, that hold no such group).
 * Strategies that use no prediction (equal, moe-ft, dram, oracle) are
 * reported once, with prediction PFLEX_PRED_TRUE. loss_vs_oracle,
 * gap_recovered, gain_per_job and worse_than_equal are under opts.objective
 * (V: total throughput for tokens, sum of GPUs x T / T_max for progress);
 * `other` is the same under the other objective, against its own oracle. */
struct pflex_study_result {
  enum pflex_study_scenario scenario;
  enum pflex_alloc_strategy strategy;
  enum pflex_study_pred prediction;
  unsigned round; /* 0 unless closed loop */
  double cut;
  size_t workloads;      /* workloads counted (the cut was feasible) */
  double tokens_per_s;   /* mean total true throughput per workload */
  double progress;       /* mean sum over jobs of GPUs x T / T_max per workload */
  double loss_vs_oracle; /* 1 - sum T / sum T_oracle */
  double gap_recovered;  /* (sum T - sum T_equal) / (sum T_oracle - sum T_equal); NAN if no gap */
  double gain_per_job;   /* (sum T - sum T_equal) / (workloads * jobs) */
  size_t above_oracle;   /* workloads where this strategy beat the oracle by more than
                            PFLEX_STUDY_ORACLE_TOL (relative) */
  double worse_than_equal;
  struct pflex_study_score other;
};

/* Study groups from a job set (e.g. pflex_jobs_from_runs): one per job with a
 * curve, pointing into the set (which must outlive them). *ret_groups is freed
 * with free(). -PFLEX_E_NOPOINTS when no job has a curve. */
struct pflex_jobset;
int pflex_study_groups_from_jobs(const struct pflex_jobset *set,
                                 struct pflex_study_group **ret_groups, size_t *ret_n);

/* Display names ("random", "production"; "true", "in-sample", ...). Never NULL. */
const char *pflex_study_scenario_name(enum pflex_study_scenario s);
const char *pflex_study_pred_name(enum pflex_study_pred p);

/* Runs the study. *ret_results (free with free()) holds *ret_n results in the
 * order scenario, cut, strategy, prediction set (in the order given), round.
 * -PFLEX_E_DATA when the production scenario is asked for and the groups lack
 * pretraining or fine-tuning groups (a task column); -EINVAL on bad options
 * (bandwidth <= 0, shrink < 0 included), an infinite prediction or SD, a
 * group without a curve, or (objective progress) a curve without T_max;
 * -ENOMEM. */
int pflex_study_run(const struct pflex_study_group *groups, size_t ngroups,
                    const struct pflex_study_predset *preds, size_t npreds,
                    const struct pflex_study_opts *opts, struct pflex_study_result **ret_results,
                    size_t *ret_n);

/* The result of a scenario, strategy, prediction, round and cut (within
 * 1e-9) among n results, or NULL. */
const struct pflex_study_result *pflex_study_find(const struct pflex_study_result *r, size_t n,
                                                  enum pflex_study_scenario scenario,
                                                  enum pflex_alloc_strategy strategy,
                                                  enum pflex_study_pred prediction, unsigned round,
                                                  double cut);

#endif
