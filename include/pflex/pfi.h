/* The Power Flexibility Index (paper.md section 1, Appendix A; docs/pfi.md).
 *
 * A sweep group is given as an array of points (one per run); the uncapped
 * run is the point at the highest cap. pflex_pfi_compute() gives the group's
 * PFI under one of three definitions (Eq. 1/3 ratio, area, constant
 * elasticity), optionally on a sub-grid of caps, with a seeded Monte Carlo
 * 95% confidence interval, and says which runs it left out and why. Caps that
 * do not bind (throughput within noise of the uncapped run) are excluded from
 * the ratio definition, because their PFI_i is noise divided by noise. */
#ifndef PFLEX_PFI_H
#define PFLEX_PFI_H

#include <stdbool.h>
#include <stddef.h>

/* Per-cap index of Eq. 1: (1 - p/p_max) / (1 - t/t_max). Returns -EDOM when
 * t == t_max (the paper excludes such runs), -EINVAL on non-positive inputs. */
int pflex_pfi_index(double p, double t, double p_max, double t_max, double *ret);

/* Bits of pflex_pfi_point.have. */
enum pflex_pfi_point_field {
  PFLEX_PFI_HAVE_POWER_SD = 1u << 0, /* power_sd is given */
  PFLEX_PFI_HAVE_TPUT_SD = 1u << 1,  /* tput_sd is given */
};

/* One run of a sweep group. */
struct pflex_pfi_point {
  double cap_w;    /* per-GPU cap; the highest cap of the group is the uncapped run */
  double power_w;  /* aggregate measured power, > 0 */
  double tput;     /* throughput (any rate, higher is better), > 0 */
  double power_sd; /* standard error of power_w (PFLEX_PFI_HAVE_POWER_SD) */
  double tput_sd;  /* standard error of tput (PFLEX_PFI_HAVE_TPUT_SD) */
  unsigned have;   /* enum pflex_pfi_point_field bits */
};

enum pflex_pfi_definition {
  PFLEX_PFI_RATIO = 0,  /* Eq. 1 and 3: mean of PFI_i over the capped runs */
  PFLEX_PFI_AREA,       /* Appendix A: area between normalized curve and diagonal */
  PFLEX_PFI_ELASTICITY, /* Appendix A: 1 - a of the fit log T = a log P + log k */
};

enum pflex_pfi_exclude {
  PFLEX_PFI_EXCLUDE_NOISE = 0, /* default: drop caps whose throughput drop is within k SE */
  PFLEX_PFI_EXCLUDE_PAPER,     /* the paper's rule: drop only T_i == T_max */
};

/* A grid value names a cap when it is within this many watts: caps are set in
 * whole watts, CSVs may carry them as 200 or 200.0. */
#define PFLEX_PFI_GRID_TOLERANCE_W 0.5

/* The paper's cap grid (paper.md section 2), its one definition: per-GPU caps,
 * ascending, the last the uncapped run at the 700 W TDP; groups of up to 8
 * GPUs are swept on the 6-cap grid, larger ones on the 4-cap grid (which
 * Table 9 also applies to 8-GPU groups). The macros are for static tables. */
#define PFLEX_PFI_PAPER_CAPS6 200, 300, 400, 500, 600, 700
#define PFLEX_PFI_PAPER_CAPS4 200, 500, 600, 700
#define PFLEX_PFI_PAPER_GRID_MAX 6
/* The grid a group of gpus GPUs was swept on: its count, *ret_caps set to the
 * (static) caps in W per GPU. */
size_t pflex_pfi_paper_grid(int gpus, const double **ret_caps);

struct pflex_pfi_opts {
  enum pflex_pfi_definition definition;
  enum pflex_pfi_exclude exclude;
  double noise_k;     /* noise rule threshold in standard errors of T_i/T_max (default 2) */
  double power_cv;    /* relative SE of power when power_sd is absent (default 0.004) */
  bool ignore_sd;     /* use the CVs for every run, not the runs' power_sd/tput_sd columns:
                         repeat-to-repeat noise instead of within-run noise (default false) */
  double tput_cv;     /* relative SE of throughput when tput_sd is absent (default 0.005) */
  size_t draws;       /* Monte Carlo draws for the CI (default 10000); 0 = no CI */
  unsigned long seed; /* RNG seed (default 1): same seed, same CI */
  const double *grid; /* caps to keep (the uncapped run is always kept), or NULL for all */
  size_t ngrid;
};

/* Fills opts with the defaults listed in struct pflex_pfi_opts. */
void pflex_pfi_opts_init(struct pflex_pfi_opts *opts);

/* What a run is to the computation. */
enum pflex_pfi_role { PFLEX_PFI_USED = 0, PFLEX_PFI_UNCAPPED, PFLEX_PFI_EXCLUDED };

/* Why a run was left out (role PFLEX_PFI_EXCLUDED). */
enum pflex_pfi_reason {
  PFLEX_PFI_REASON_NONE = 0,
  PFLEX_PFI_REASON_TMAX_EQUAL, /* T_i == T_max: Eq. 1 divides by zero (the paper's rule) */
  PFLEX_PFI_REASON_NOISE,      /* 1 - T_i/T_max < k standard errors: the cap does not bind */
  PFLEX_PFI_REASON_GRID,       /* the cap is not in the requested sub-grid */
};

/* The fate of one input point, in input order. */
struct pflex_pfi_run_result {
  double cap_w;
  enum pflex_pfi_role role;
  enum pflex_pfi_reason reason;
  double pfi_i;    /* Eq. 1 value when role is USED under the ratio definition, else 0 */
  bool have_pfi_i; /* pfi_i is meaningful */
  double drop;     /* 1 - T_i/T_max (capped runs) */
  double drop_se;  /* its standard error from the run noise (capped runs) */
};

struct pflex_pfi_result {
  enum pflex_pfi_definition definition;
  double pfi;                        /* the point estimate from the measured values */
  double ci_low;                     /* 2.5th percentile of the Monte Carlo draws */
  double ci_high;                    /* 97.5th percentile */
  bool have_ci;                      /* false when opts.draws == 0 */
  size_t draws_used;                 /* draws that gave a finite value */
  size_t runs_used;                  /* runs the value rests on, the uncapped run included */
  size_t n_excluded;                 /* runs with role PFLEX_PFI_EXCLUDED */
  struct pflex_pfi_run_result *runs; /* n entries, input order */
  size_t n;
};

/* Zeroes a result; pflex_pfi_result_release frees its runs (NULL allowed) and zeroes it again. */
void pflex_pfi_result_init(struct pflex_pfi_result *res);
void pflex_pfi_result_release(struct pflex_pfi_result *res);

/* Decides each run's role (used, uncapped, excluded and why) without
 * computing the PFI; ret_runs must hold n entries. -EINVAL on bad points (n < 2,
 * non-positive or non-finite values, a tie at the highest cap). Under the
 * ratio definition the noise/paper rule applies; area and elasticity use every
 * run of the grid. */
int pflex_pfi_classify(const struct pflex_pfi_point *pts, size_t n,
                       const struct pflex_pfi_opts *opts, struct pflex_pfi_run_result *ret_runs);

/* Computes the PFI of one sweep group into *ret (which it initializes; release
 * it with pflex_pfi_result_release). Returns -EINVAL on bad points or options,
 * -PFLEX_E_NOPOINTS when no capped run is left (every one excluded or outside
 * the grid; pflex_pfi_classify says why) or the elasticity fit has fewer than
 * two distinct powers, -ENOMEM. */
int pflex_pfi_compute(const struct pflex_pfi_point *pts, size_t n,
                      const struct pflex_pfi_opts *opts, struct pflex_pfi_result *ret);

/* The points of sweep group g of set, in g's order (ascending cap), into a
 * new array (free() it) of g->n entries. -EINVAL on an empty group, -ENOMEM. */
struct pflex_runset;
struct pflex_group;
int pflex_pfi_group_points(const struct pflex_runset *set, const struct pflex_group *g,
                           struct pflex_pfi_point **ret_pts);

/* The one group PFI every caller uses: the PFI of sweep group g of set under
 * opts, without a confidence interval (opts->draws is ignored); opts NULL is
 * the paper's plain Eq. 1/3 mean over every capped run (only T_i == T_max
 * left out, pflex_pfi_opts_paper). 0 and *ret_pfi; -PFLEX_E_NOPOINTS when the
 * group has no capped run left; -EINVAL, -ENOMEM as pflex_pfi_compute. */
int pflex_pfi_group(const struct pflex_runset *set, const struct pflex_group *g,
                    const struct pflex_pfi_opts *opts, double *ret_pfi);

/* opts for the paper's own rule: the defaults, with only T_i == T_max
 * excluded and no CI draws. */
void pflex_pfi_opts_paper(struct pflex_pfi_opts *opts);

/* Short stable name of a definition ("ratio", "area", "elasticity"), of an
 * exclusion rule ("noise", "paper") and of a reason ("t-equals-tmax",
 * "within-noise", "not-in-grid", "none"). Never NULL. */
const char *pflex_pfi_definition_name(enum pflex_pfi_definition d);
const char *pflex_pfi_exclude_name(enum pflex_pfi_exclude e);
const char *pflex_pfi_reason_name(enum pflex_pfi_reason r);

/* Parses the names above; -EINVAL if unknown. */
int pflex_pfi_definition_parse(const char *s, enum pflex_pfi_definition *ret);
int pflex_pfi_exclude_parse(const char *s, enum pflex_pfi_exclude *ret);

#endif
