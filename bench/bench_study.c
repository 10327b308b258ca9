/* Study engine timings: the default protocol (500 workloads of 100 jobs, cuts
 * 0-40% by 5%, both scenarios, every strategy) on 25 synthetic groups, with
 * three prediction sets, open loop and with two closed-loop rounds, for both
 * curve shapes (data, the default, with leave-one-out folds; family), with
 * their time ratio.
 *
 * The groups are synthetic, not data: 6-point measured curves on the paper's
 * grid sampled from the parametric family (compute share 0.2-1, knee
 * 0.45-0.75), 8/16/32 GPUs, half pretraining; the "predictions" are the true
 * PFI plus Gaussian noise (SD 0.1, 0.2, 0.3), standing in for in-sample, LOO
 * and LOCO predictions. Only the time is meant; the gap figures it prints
 * describe this synthetic set, not the paper's.
 *
 * --scale N,N,...: instead, the scaling table: one production workload of N
 * jobs at a 30% cut (every strategy, the three prediction sets, data shape,
 * open loop) per size, its wall time, time per job and the process's peak
 * resident memory (sizes in ascending order).
 *
 * --threads N (N > 1): also the open-loop data-shape study on one thread
 * and on N, side by side, their ratio, and whether their results are the
 * same bits (they must be).
 *
 * usage: bench_study [--workloads N] [--rounds R] [--threads N] [--scale N,N,...] */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "pflex/error.h"
#include "pflex/jobs.h"
#include "pflex/study.h"

#define NG 25

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One study run and its wall time; -1 (said on stderr) on a failure. */
static int timed_run(const struct pflex_study_group *g, const struct pflex_study_predset *p,
                     const struct pflex_study_opts *o, struct pflex_study_result **ret_res,
                     size_t *ret_n, double *ret_s) {
  double t0 = now();
  int err = pflex_study_run(g, NG, p, 3, o, ret_res, ret_n);
  *ret_s = now() - t0;
  if (err) fprintf(stderr, "bench_study: %s\n", pflex_strerror(err));
  return err ? -1 : 0;
}

/* The scaling table: one workload of each size (see the top). */
static int scale(const struct pflex_study_group *g, const struct pflex_study_predset *p,
                 const size_t *sizes, size_t nsizes) {
  static const double cut[] = {0.30};
  printf("study scaling: 1 production workload, 30%% cut, every strategy, 3 prediction sets, "
         "data shape, open loop\n%10s %12s %12s %12s\n",
         "jobs", "s", "ns/job", "peak RSS MB");
  for (size_t k = 0; k < nsizes; k++) {
    struct pflex_study_opts o;
    pflex_study_opts_init(&o);
    o.workloads = 1;
    o.jobs = sizes[k];
    o.cuts = cut;
    o.ncuts = 1;
    o.scenarios = 1u << PFLEX_SCENARIO_PRODUCTION;
    struct pflex_study_result *res;
    size_t nres;
    double dt;
    if (timed_run(g, p, &o, &res, &nres, &dt)) return 1;
    free(res);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%10zu %12.3f %12.1f %12.1f\n", sizes[k], dt, 1e9 * dt / (double)sizes[k],
           (double)ru.ru_maxrss / 1024.0);
  }
  return 0;
}

/* The open-loop data-shape study on one thread, then on n: times, ratio,
 * and whether the results are the same bits. */
static int compare_threads(const struct pflex_study_group *g, const struct pflex_study_predset *p,
                           size_t workloads, unsigned n) {
  struct pflex_study_result *res[2];
  size_t nres[2];
  double dt[2];
  for (int k = 0; k < 2; k++) {
    struct pflex_study_opts o;
    pflex_study_opts_init(&o);
    o.workloads = workloads;
    o.threads = k ? n : 1;
    if (timed_run(g, p, &o, &res[k], &nres[k], &dt[k])) return 1;
  }
  bool same = nres[0] == nres[1] && memcmp(res[0], res[1], nres[0] * sizeof *res[0]) == 0;
  printf("open loop, data shape: 1 thread %.2f s, %u threads %.2f s, ratio %.2f; same results: "
         "%s\n",
         dt[0], n, dt[1], dt[0] / dt[1], same ? "yes" : "NO");
  free(res[0]);
  free(res[1]);
  return same ? 0 : 1;
}

int main(int argc, char **argv) {
  gsl_set_error_handler_off(); /* as the programs: GSL errors as return codes */
  size_t workloads = 500, sizes[8], nsizes = 0;
  unsigned rounds = 2, threads = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--workloads") == 0 && i + 1 < argc)
      workloads = strtoull(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
      rounds = (unsigned)atoi(argv[++i]);
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
      threads = (unsigned)atoi(argv[++i]);
    else if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc)
      for (char *t = strtok(argv[++i], ","); t && nsizes < 8; t = strtok(NULL, ","))
        sizes[nsizes++] = strtoull(t, NULL, 10);
    else {
      fprintf(stderr,
              "usage: bench_study [--workloads N] [--rounds R] [--threads N] [--scale N,N,...]\n");
      return 2;
    }
  }
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(rng, 1);
  static const int gpus[] = {8, 16, 32};
  struct pflex_study_group g[NG];
  struct pflex_curve *c[NG];
  double pfi[3][NG];
  int loo[NG]; /* data shape: a group's curve never shapes its own prediction */
  for (int i = 0; i < NG; i++)
    loo[i] = i;
  for (int i = 0; i < NG; i++) {
    int n = gpus[gsl_rng_uniform_int(rng, 3)];
    double pmax = n * (450 + 250 * gsl_rng_uniform(rng)), tmax = 1000.0 * n;
    struct pflex_curve_params q;
    pflex_curve_params_default("H200", n, pmax, &q);
    q.c = 0.2 + 0.8 * gsl_rng_uniform(rng);
    q.knee = 0.45 + 0.3 * gsl_rng_uniform(rng);
    struct pflex_curve *par;
    if (pflex_curve_new_parametric(&q, 200.0 * n, pmax, tmax, &par)) return 1;
    struct pflex_curve_point pt[6];
    size_t np = 0;
    for (int cap = 200; cap <= 600; cap += 100)
      if (cap * n < pmax)
        pt[np++] = (struct pflex_curve_point){cap * n, pflex_curve_eval(par, cap * n), cap};
    pt[np++] = (struct pflex_curve_point){pmax, tmax, 700};
    pflex_curve_free(par);
    if (pflex_curve_new_measured(pt, np, PFLEX_INTERP_STEFFEN, &c[i])) return 1;
    double grid[5], truth;
    size_t ng = pflex_jobs_paper_grid(n, pmax, grid);
    if (pflex_curve_pfi(c[i], grid, ng, &truth)) return 1;
    for (int k = 0; k < 3; k++)
      pfi[k][i] = truth + gsl_ran_gaussian(rng, 0.1 * (k + 1));
    g[i] = (struct pflex_study_group){.name = "g",
                                      .gpu = "H200",
                                      .curve = c[i],
                                      .gpus = n,
                                      .arch = q.c < 0.6 ? PFLEX_ARCH_MOE : PFLEX_ARCH_DENSE,
                                      .task = i % 2 ? PFLEX_TASK_FT : PFLEX_TASK_PT,
                                      .dram_copy = 1 - q.c};
  }
  struct pflex_study_predset p[3] = {{.mode = PFLEX_PRED_IN_SAMPLE, .pfi = pfi[0]},
                                     {.mode = PFLEX_PRED_LOO, .pfi = pfi[1], .fold = loo},
                                     {.mode = PFLEX_PRED_LOCO, .pfi = pfi[2], .fold = loo}};
  if (nsizes) {
    int err = scale(g, p, sizes, nsizes);
    for (int i = 0; i < NG; i++)
      pflex_curve_free(c[i]);
    gsl_rng_free(rng);
    return err;
  }
  printf("study wall time, %zu workloads x 100 jobs, 9 cuts, 2 scenarios, 6 strategies, "
         "3 prediction sets, 25 synthetic groups\n",
         workloads);
  static const char *const shape_name[] = {"data", "family"};
  double secs[2][2] = {{0}};
  for (unsigned r = 0; r <= rounds; r += rounds ? rounds : 1)
    for (int sh = 0; sh < 2; sh++) {
      struct pflex_study_opts o;
      pflex_study_opts_init(&o);
      o.workloads = workloads;
      o.rounds = r;
      o.shape = sh ? PFLEX_STUDY_SHAPE_FAMILY : PFLEX_STUDY_SHAPE_DATA;
      struct pflex_study_result *res;
      size_t nres;
      double dt;
      if (timed_run(g, p, &o, &res, &nres, &dt)) return 1;
      secs[r ? 1 : 0][sh] = dt;
      printf("rounds %u, shape %-6s: %.2f s (%zu result lines)\n", r, shape_name[sh], dt, nres);
      for (size_t i = 0; i < nres; i++)
        if (res[i].cut == 0.30 && res[i].scenario == PFLEX_SCENARIO_PRODUCTION &&
            (res[i].strategy == PFLEX_ALLOC_OPTIMAL || res[i].strategy == PFLEX_ALLOC_PFI))
          printf("  production 30%%: %-7s %-9s round %u gap recovered %.3f\n",
                 pflex_alloc_strategy_name(res[i].strategy),
                 pflex_study_pred_name(res[i].prediction), res[i].round, res[i].gap_recovered);
      free(res);
    }
  printf("time ratio data / family shape: open loop %.2f", secs[0][0] / secs[0][1]);
  if (rounds) printf(", %u rounds %.2f", rounds, secs[1][0] / secs[1][1]);
  printf("\n");
  if (threads > 1 && compare_threads(g, p, workloads, threads)) return 1;
  for (int i = 0; i < NG; i++)
    pflex_curve_free(c[i]);
  gsl_rng_free(rng);
  return 0;
}
