/* Synthetic study groups shared by the study's unit tests (test_study.c,
 * test_study_threads.c): group i of a dozen, a 6-point measured curve on the
 * paper's grid sampled from the parametric family (compute share 0.25-1,
 * knee 0.5-0.72), 8 or 16 GPUs, a third pretraining, and its true PFI. */
#ifndef PFLEX_TESTS_STUDY_GROUPS_H
#define PFLEX_TESTS_STUDY_GROUPS_H

#include "pflex/curve.h"
#include "pflex/jobs.h"
#include "pflex/study.h"

/* Group i: its curve (the caller frees it) in *ret_curve, the group (named
 * "g", on it) in *ret_group, its PFI on the paper's grid in *ret_pfi. */
static inline void study_synthetic_group(int i, struct pflex_curve **ret_curve,
                                         struct pflex_study_group *ret_group, double *ret_pfi) {
  int gpus = i % 4 == 3 ? 16 : 8;
  double pmax = gpus * (520 + 15 * i), tmax = 1000.0 * gpus * (1 + 0.1 * i);
  struct pflex_curve_params q;
  pflex_curve_params_default("H200", gpus, pmax, &q);
  q.c = 0.25 + 0.07 * i; /* 0.25 .. 1.02 -> clamp */
  if (q.c > 1) q.c = 1;
  q.knee = 0.5 + 0.02 * i;
  struct pflex_curve *par;
  assert_int_equal(pflex_curve_new_parametric(&q, 200.0 * gpus, pmax, tmax, &par), 0);
  struct pflex_curve_point pt[6];
  size_t np = 0;
  for (int cap = 200; cap <= 600; cap += 100)
    if (cap * gpus < pmax)
      pt[np++] = (struct pflex_curve_point){cap * gpus, pflex_curve_eval(par, cap * gpus), cap};
  pt[np++] = (struct pflex_curve_point){pmax, tmax, 700};
  pflex_curve_free(par);
  assert_int_equal(pflex_curve_new_measured(pt, np, PFLEX_INTERP_STEFFEN, ret_curve), 0);
  double grid[5];
  size_t ng = pflex_jobs_paper_grid(gpus, pmax, grid);
  assert_int_equal(pflex_curve_pfi(*ret_curve, grid, ng, ret_pfi), 0);
  *ret_group = (struct pflex_study_group){.name = "g",
                                          .gpu = "H200",
                                          .curve = *ret_curve,
                                          .gpus = gpus,
                                          .arch = q.c < 0.6 ? PFLEX_ARCH_MOE : PFLEX_ARCH_DENSE,
                                          .task = i % 3 == 0 ? PFLEX_TASK_PT : PFLEX_TASK_FT,
                                          .dram_copy = 1 - q.c};
}

#endif
