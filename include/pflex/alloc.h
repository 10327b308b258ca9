/* Power allocation under a cluster power target (paper.md section 6).
 *
 * Given jobs (each with a power-throughput curve and bounds) and a target for
 * their total aggregate power, a strategy decides each job's power; the curve
 * then gives the per-GPU cap that yields it and the expected throughput.
 *
 * Bounds: job i gets power in [lo_i, P_max_i], where lo_i is P_min_i raised, if
 * the job has a throughput floor, to the least power that meets it. Every
 * strategy respects these bounds. The proportional strategies (equal, moe-ft,
 * dram, pfi) take from each job a share of the total cut proportional to its
 * weight; a share larger than a job's headroom (P_max - lo) is clipped to it
 * and the rest redistributed over the other jobs, until feasible (water
 * filling). optimal maximizes the total weighted throughput on the curves it
 * is given: exact for concave piecewise-linear curves; on curves not known to
 * be concave a local search on the curves themselves follows the hull greedy
 * (docs/allocation.md). oracle is the exact optimum of the same problem,
 * certified to a relative 1e-6, by branch and bound on concave majorants of
 * the curves (docs/allocation.md); by convention the caller passes the true
 * curves. It ignores knots and no_local_search.
 *
 * The target is never exceeded: the returned powers, summed left to right in
 * double precision, are <= the target. A target below the sum of the lower
 * bounds fails with -PFLEX_E_INFEASIBLE and the summary says the deepest
 * feasible cut. A target at or above the sum of P_max gives every job P_max. */
#ifndef PFLEX_ALLOC_H
#define PFLEX_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "pflex/curve.h"
#include "pflex/runs.h"

enum pflex_alloc_strategy {
  PFLEX_ALLOC_EQUAL = 0, /* cut proportional to P_max */
  PFLEX_ALLOC_MOE_FT,    /* as equal, MoE fine-tuning jobs weighted twice */
  PFLEX_ALLOC_DRAM,      /* cut proportional to the DRAM copy product */
  PFLEX_ALLOC_PFI,       /* cut proportional to (P_max / T_max) * PFI (paper Eq. 2) */
  PFLEX_ALLOC_OPTIMAL,   /* max total weighted throughput on the given curves */
  PFLEX_ALLOC_ORACLE,    /* the exact optimum (to 1e-6); by convention on the true curves */
  PFLEX_ALLOC_NSTRATEGIES
};

/* Default per-GPU cap limits (H100/H200, paper.md section 7). */
#define PFLEX_ALLOC_CAP_MIN_W 200.0
#define PFLEX_ALLOC_CAP_MAX_W 700.0

/* The largest job the allocator takes: P_max in W, weight, and throughput
 * (at P_max, or at any measured point). Beyond them sums and products of
 * powers and weighted throughputs could overflow, and the exact oracle's
 * hulls would no longer be concave: pflex_alloc_run refuses with -ERANGE.
 * A terawatt and 1e80 tokens/s leave every real cluster far inside. */
#define PFLEX_ALLOC_MAX_W 1e12
#define PFLEX_ALLOC_MAX_WEIGHT 1e12
#define PFLEX_ALLOC_MAX_TPUT 1e80

struct pflex_alloc_job {
  const char *name;                /* for messages; may be NULL */
  const struct pflex_curve *curve; /* needed by optimal/oracle, throughput floors, throughput and
                                      cap output; may be NULL for the proportional strategies */
  double p_min, p_max;             /* aggregate W; 0: take from the curve */
  double t_max;                    /* throughput at P_max; 0: take from the curve */
  int gpus;                        /* GPU count (> 0) */
  double cap_min_w, cap_max_w;     /* per-GPU cap limits; 0: PFLEX_ALLOC_CAP_MIN_W / MAX_W */
  double weight;                   /* weight of its throughput in optimal (> 0, default 1) */
  double min_tput;                 /* throughput floor; 0: none */
  double pfi;                      /* (predicted) PFI, used by pfi */
  double dram_copy;                /* DRAM copy product, used by dram */
  enum pflex_arch arch;            /* used by moe-ft */
  enum pflex_task task;            /* used by moe-ft */
  uint64_t curve_digest;           /* optional: a content digest of a callback curve (what it
                                      computes now, e.g. pflex_refine_digest), so that a
                                      pflex_alloc_ctx may keep its hull; 0: none */
};

/* Sets the defaults: everything 0/NULL/unknown, weight 1, gpus 1. */
void pflex_alloc_job_init(struct pflex_alloc_job *job);

/* Reusable state for repeated allocations: a study's workloads and cuts, a
 * controller's rounds. It keeps the optimizer's piecewise-linear hulls of the
 * curves it has seen, keyed by curve digest (pflex_curve_digest), window,
 * weight and knots, so that a job whose curve and bounds did not change
 * since an earlier call costs no curve evaluation for its hull (nor, for
 * the oracle, its majorant): the warm start for a controller (the next
 * round with few changed jobs re-samples only those). Callback curves are
 * not kept across calls (their digest names the function, not what it
 * computes now) unless the job gives their content digest (curve_digest,
 * keyed with the curve's own): a caller that gives one must change it
 * whenever what the curve computes changes (pflex_refine_digest does).
 * Results are bit for bit those of a call without it. It
 * holds no pointer to a curve; its size is bounded: past 6 hulls per job of
 * a call plus 4096 it keeps the most recently used half. One context per
 * thread. */
struct pflex_alloc_ctx;
int pflex_alloc_ctx_new(struct pflex_alloc_ctx **ret_ctx);
void pflex_alloc_ctx_free(struct pflex_alloc_ctx *ctx); /* NULL allowed */
/* Sizes the context's table for calls of n jobs up to its bound, so that
 * no call pays for growing it (a controller does this between events).
 * -EINVAL without a context, -ENOMEM. */
int pflex_alloc_ctx_reserve(struct pflex_alloc_ctx *ctx, size_t n);

/* Jobs whose bounds are resolved once for many runs (pflex_alloc_prepare):
 * a study's workload, allocated at every cut with every strategy. */
struct pflex_alloc_prepared;

struct pflex_alloc_opts {
  /* optimal: points per curve for the piecewise-linear approximation (uniform
   * on [lo, P_max]; a measured curve's points are always added). 0: 33. A
   * measured curve with linear interpolation is used exactly, without them. */
  unsigned knots;
  /* optimal: skip the local search on the curves that follows the hull greedy
   * when some curve is not known to be concave (docs/allocation.md); for
   * comparison and tests. false (default): search. */
  bool no_local_search;
  /* optional: reused state (see pflex_alloc_ctx); NULL: none */
  struct pflex_alloc_ctx *ctx;
  /* Powers and caps only: no curve evaluation for each job's throughput
   * (result tput and the summary's total_tput and weighted_tput are NAN).
   * For a controller's re-plan, which sets caps; the proportional strategies
   * then cost no curve evaluation at all (unless pfi needs T_max). */
  bool skip_tput;
  /* No cap mapping: each result's cap_w is NAN. For callers that read the
   * powers only (the study scores them on the true curves). */
  bool skip_caps;
  /* optional: the jobs' bounds resolved before (pflex_alloc_prepare), for
   * runs on the same jobs; NULL: resolved in each run. optimal keeps its
   * first greedy pass in it (it is the same at every target). */
  struct pflex_alloc_prepared *prepared;
};

/* What one job gets. */
struct pflex_alloc_result {
  double power_w; /* allocated aggregate power */
  double cap_w;   /* per-GPU cap that yields it (pflex_curve_cap_for_power) */
  double tput;    /* throughput on the job's curve at power_w; NAN without a curve */
  double floor_w; /* the job's lower bound lo */
};

struct pflex_alloc_summary {
  double target_w;      /* the target asked for */
  double total_w;       /* sum of allocated power (<= target_w) */
  double total_tput;    /* sum of throughputs (NAN if a job has no curve) */
  double weighted_tput; /* sum of weight * throughput */
  double min_w;         /* sum of lower bounds: the least total power possible */
  double max_w;         /* sum of P_max */
  double deepest_cut;   /* 1 - min_w / max_w: the deepest feasible cut as a fraction */
  double gap_bound;     /* optimal: upper bound on the weighted throughput lost to
                           non-concavity of the piecewise-linear curves (0 if concave);
                           oracle: certified bound on its shortfall against the
                           optimum (at most 1e-6 of the total unless a node limit
                           was reached); 0 for the other strategies */
};

const char *pflex_alloc_strategy_name(enum pflex_alloc_strategy s);
/* Parses "equal", "moe-ft", "dram", "pfi", "optimal", "oracle"; -EINVAL otherwise. */
int pflex_alloc_strategy_parse(const char *name, enum pflex_alloc_strategy *ret);

/* The target in W for a cut (fraction in [0, 1]) of the jobs' total P_max. */
int pflex_alloc_target_for_cut(const struct pflex_alloc_job *jobs, size_t n, double cut,
                               double *ret_target_w);

/* Allocates target_w among n jobs with a strategy. results (n entries) is
 * written only on success; summary (may be NULL) is filled on success and on
 * -PFLEX_E_INFEASIBLE (then min_w and deepest_cut tell what is feasible).
 * opts may be NULL. -EINVAL on a job with inconsistent bounds, no curve where
 * one is needed, or a negative/NaN weight or DRAM feature, a NaN PFI (a
 * negative predicted PFI counts as 0: that job is cut last); -ENOMEM. A
 * throughput floor above a job's T_max is -PFLEX_E_INFEASIBLE. -ERANGE on a
 * job beyond PFLEX_ALLOC_MAX_W, _MAX_WEIGHT or _MAX_TPUT. */
int pflex_alloc_run(const struct pflex_alloc_job *jobs, size_t n,
                    enum pflex_alloc_strategy strategy, double target_w,
                    const struct pflex_alloc_opts *opts, struct pflex_alloc_result *results,
                    struct pflex_alloc_summary *summary);

/* Resolves the bounds of n jobs once (each job's P_min, P_max, cap limits,
 * throughput floor), for runs that pass it in opts.prepared with the same
 * jobs: such a run skips that step and gives bit for bit the result of a
 * run without it. The jobs may differ from those it was made from in their
 * weight, pfi, dram_copy, arch, task and name only (weights are checked in
 * each run, with pflex_alloc_run's errors); a run whose jobs have another
 * count, or a job another curve pointer, resolves them afresh (so passing
 * it by mistake costs time, not correctness, unless a curve was freed and
 * another created at its address, a job's bounds changed, or a job with a
 * throughput floor has a callback curve that computes otherwise now). The first
 * optimal run on it keeps its first greedy pass (each job's hull on its
 * bounds, the same at every target) for the later runs with the same
 * weights and knots, unless a job has a callback curve (so runs write to
 * it: one thread at a time). Errors as
 * pflex_alloc_run's for bad bounds (a throughput floor above T_max is
 * not one: the runs return -PFLEX_E_INFEASIBLE); -ENOMEM. */
int pflex_alloc_prepare(const struct pflex_alloc_job *jobs, size_t n,
                        struct pflex_alloc_prepared **ret);
void pflex_alloc_prepared_free(struct pflex_alloc_prepared *pp); /* NULL allowed */

/* A flat copy of jobs for repeated allocations (a controller's rounds at
 * 10^5-10^6 jobs): each job's bounds, its weight for one strategy and what
 * its cap mapping needs, in arrays filled once (pflex_alloc_flat_new reads
 * every curve; pflex_alloc_flat_set reads the one of the job it replaces:
 * a round in which few jobs change re-reads only those). A run then reads
 * no curve: powers and caps, no throughput (as skip_tput). The jobs' checks
 * and errors are pflex_alloc_run's, at new/set time (a throughput floor
 * above T_max makes every run -PFLEX_E_INFEASIBLE until that job is
 * replaced). It holds no pointer to the jobs or their curves. One flat per
 * strategy; a run changes none of its answers' inputs and keeps its
 * scratch in the flat for the next run (optimal: 9 doubles a job and the
 * bracket's segments; allocated afresh, their page faults cost more than a
 * run on some virtual machines), so that the first run after
 * pflex_alloc_flat_new costs more than the next ones. Runs may share a
 * flat: concurrent ones allocate their own scratch. opts: knots, and
 * no_local_search (optimal: no polish, the hull greedy's answer alone, as
 * fast as before the polish and as coarse).
 *
 * The proportional strategies (equal, moe-ft, dram, pfi): pflex_alloc_run's
 * answer up to rounding (its water filling sums in another order, so a
 * power may differ in its last bits; tests: within 1e-9 of the total cut,
 * caps the same function of the power).
 * optimal: the hull greedy on each curve's hull sampled once at `knots`
 * points on the job's bounds (pflex_alloc_run's first pass, exact for
 * piecewise-linear concave curves; from 16,384 jobs on its threshold slope
 * is searched in a bracket from a sample of the jobs, checked by the
 * greedy's pass, else over every segment), then, for measured curves, a polish on
 * each curve's own cubic pieces (held in the flat): every job moves to
 * where its weighted slope meets the threshold slope on its curve, within
 * its bracket of the hull, and Newton steps on that slope bring the sum
 * back to the target (docs/allocation.md). Under
 * PFLEX_ALLOC_FLAT_OPT_TOL_JOBS jobs whose curves all have pieces, pair
 * moves on the pieces follow (one job gives, another takes; 12 amounts
 * halving from the widest job range; the best move while one gains more
 * than 1e-9 of the total, at most 64). No other local search. Tolerance
 * (tests/unit/test_alloc_flat.c, random measured workloads of 2-420 jobs,
 * seeds 13, 15, 17 and 20): on PFLEX_ALLOC_FLAT_OPT_TOL_JOBS jobs or more,
 * at most PFLEX_ALLOC_FLAT_OPT_TOL below pflex_alloc_run's optimal (worst
 * seen 4.8e-4 over seeds 13-23), within PFLEX_ALLOC_FLAT_OPT_CLOSE in at
 * least 90% of the runs; on 2-8 jobs at most PFLEX_ALLOC_FLAT_OPT_TOL_SMALL
 * below the better of optimal and the exact oracle (worst seen 4.6e-3 over
 * seeds 13-30 with the pair moves; 1.1e-2 on seed 20 without them, two jobs
 * on hull bridges that the polish cannot move);
 * at 10^3-10^6 jobs (bench_alloc, `opt/flat`) above optimal. Parametric and
 * callback curves are not polished (the hull greedy's answer: test, at
 * most 1e-3 below optimal). The summary's gap_bound is NAN. */
struct pflex_alloc_flat;
#define PFLEX_ALLOC_FLAT_OPT_TOL 1e-3
#define PFLEX_ALLOC_FLAT_OPT_TOL_JOBS 20
#define PFLEX_ALLOC_FLAT_OPT_TOL_SMALL 1e-2
#define PFLEX_ALLOC_FLAT_OPT_CLOSE 1e-5
int pflex_alloc_flat_new(const struct pflex_alloc_job *jobs, size_t n,
                         enum pflex_alloc_strategy strategy, const struct pflex_alloc_opts *opts,
                         struct pflex_alloc_flat **ret_flat);
/* Replaces job i (0 <= i < n) with *job; on an error job i stays as it was. */
int pflex_alloc_flat_set(struct pflex_alloc_flat *flat, size_t i,
                         const struct pflex_alloc_job *job);
void pflex_alloc_flat_free(struct pflex_alloc_flat *flat); /* NULL allowed */
/* Allocates target_w: power_w (n entries) and, unless NULL, cap_w (n) are
 * written on success only; summary (may be NULL) as pflex_alloc_run's, its
 * throughputs NAN. */
int pflex_alloc_flat_run(const struct pflex_alloc_flat *flat, double target_w, double *power_w,
                         double *cap_w, struct pflex_alloc_summary *summary);

#endif
