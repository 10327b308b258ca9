/* The study protocol's allocation core, for the side-by-side comparison with
 * a straightforward NumPy implementation (bench/study_numpy.py, run by
 * bench/compare_numpy.sh): the headline groups of a runs CSV, each job's
 * true curve its measured points interpolated linearly, both scenarios
 * (random; production: Acme's pretraining/fine-tuning mix), W workloads of
 * 100 jobs, cuts 0-40% by 5%, strategies equal, moe-ft, dram, pfi (on the
 * true PFI) and oracle (optimal on the true curves), each job's throughput
 * read on its true curve. It prints the protocol's wall time (after
 * loading) and each strategy's share of the equal-to-oracle gap recovered
 * at 30%. The workloads are drawn with GSL's generator, NumPy draws its own:
 * the same protocol, not the same samples.
 *
 * usage: bench_protocol RUNS.csv [--workloads W] [--seed S] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_rng.h>

#include "pflex/alloc.h"
#include "pflex/error.h"
#include "pflex/features.h"
#include "pflex/jobs.h"
#include "pflex/runs.h"
#include "pflex/runs_csv.h"
#include "pflex/study.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { NST = 5, NCUT = 9, JOBS = 100 };
static const enum pflex_alloc_strategy strategies[NST] = {
    PFLEX_ALLOC_EQUAL, PFLEX_ALLOC_MOE_FT, PFLEX_ALLOC_DRAM, PFLEX_ALLOC_PFI, PFLEX_ALLOC_ORACLE};

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_protocol RUNS.csv [--workloads W] [--seed S]\n");
    return 2;
  }
  size_t workloads = 500;
  unsigned long seed = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--workloads") == 0)
      workloads = strtoull(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--seed") == 0)
      seed = strtoul(argv[i + 1], NULL, 10);
  }
  struct pflex_runset set;
  struct pflex_diag diag;
  struct pflex_runs_read_opts ro = {.set_filter = "headline"};
  if (pflex_runs_read_csv(argv[1], &ro, &set, &diag)) {
    fprintf(stderr, "bench_protocol: %s: %s\n", argv[1], diag.message);
    return 1;
  }
  struct pflex_group *g;
  size_t ng;
  if (pflex_runset_groups(&set, &g, &ng)) return 1;
  struct pflex_alloc_job *proto = calloc(ng, sizeof *proto);
  struct pflex_curve **curve = calloc(ng, sizeof *curve);
  size_t *pt = calloc(ng, sizeof *pt), *ft = calloc(ng, sizeof *ft), npt = 0, nft = 0;
  if (!proto || !curve || !pt || !ft) return 1;
  for (size_t k = 0; k < ng; k++) {
    struct pflex_curve_point p[16];
    size_t n = 0;
    for (size_t m = 0; m < g[k].n && n < 16; m++) {
      const struct pflex_run *r = &set.runs[g[k].runs[m]];
      p[n++] = (struct pflex_curve_point){r->power_w, r->tput, r->cap_w};
    }
    if (pflex_curve_new_measured(p, n, PFLEX_INTERP_LINEAR, &curve[k])) return 1;
    const struct pflex_run *top = &set.runs[g[k].uncapped];
    double grid[5], pfi, dram;
    size_t ngrid = pflex_jobs_paper_grid(top->gpus, pflex_curve_p_max(curve[k]), grid);
    if (pflex_curve_pfi(curve[k], grid, ngrid, &pfi)) pfi = 1;
    if (pflex_feature_value(&set, g[k].uncapped, "dram_copy", &dram, NULL)) dram = 0;
    pflex_alloc_job_init(&proto[k]);
    proto[k].curve = curve[k];
    proto[k].gpus = top->gpus;
    proto[k].arch = top->arch;
    proto[k].task = top->task;
    proto[k].pfi = pfi;
    proto[k].dram_copy = dram;
    if (top->task == PFLEX_TASK_PT) pt[npt++] = k;
    if (top->task == PFLEX_TASK_FT) ft[nft++] = k;
  }
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(rng, seed);
  struct pflex_alloc_ctx *ctx;
  if (pflex_alloc_ctx_new(&ctx)) return 1;
  struct pflex_alloc_opts o = {.ctx = ctx};
  struct pflex_alloc_job jobs[JOBS];
  struct pflex_alloc_result r[JOBS];
  double tot[2][NCUT][NST] = {{{0}}};
  const double p_pt =
      (double)PFLEX_ACME_PRETRAIN_JOBS / (PFLEX_ACME_PRETRAIN_JOBS + PFLEX_ACME_SFT_JOBS);
  double t0 = now();
  for (int sc = 0; sc < 2; sc++)
    for (size_t w = 0; w < workloads; w++) {
      for (int j = 0; j < JOBS; j++) {
        size_t k = sc == 0                       ? gsl_rng_uniform_int(rng, ng)
                   : gsl_rng_uniform(rng) < p_pt ? pt[gsl_rng_uniform_int(rng, npt)]
                                                 : ft[gsl_rng_uniform_int(rng, nft)];
        jobs[j] = proto[k];
      }
      for (int c = 0; c < NCUT; c++) {
        double target;
        if (pflex_alloc_target_for_cut(jobs, JOBS, 0.05 * c, &target)) return 1;
        for (int s = 0; s < NST; s++) {
          struct pflex_alloc_summary sum;
          int err = pflex_alloc_run(jobs, JOBS, strategies[s], target, &o, r, &sum);
          if (err) {
            fprintf(stderr, "bench_protocol: %s\n", pflex_strerror(err));
            return 1;
          }
          tot[sc][c][s] += sum.total_tput;
        }
      }
    }
  double dt = now() - t0;
  printf("pflex (C): %.3f s for %zu workloads x %d jobs x %d cuts x 2 scenarios x %d strategies "
         "(%zu groups)\n",
         dt, workloads, JOBS, NCUT, NST, ng);
  for (int sc = 0; sc < 2; sc++) {
    printf("  %-10s 30%% gap recovered:", sc ? "production" : "random");
    double gap = tot[sc][6][4] - tot[sc][6][0];
    for (int s = 0; s < NST; s++)
      printf(" %s %.3f", pflex_alloc_strategy_name(strategies[s]),
             (tot[sc][6][s] - tot[sc][6][0]) / gap);
    printf("\n");
  }
  printf("seconds %.6f\n", dt);
  pflex_alloc_ctx_free(ctx);
  gsl_rng_free(rng);
  for (size_t k = 0; k < ng; k++)
    pflex_curve_free(curve[k]);
  free(curve);
  free(proto);
  free(pt);
  free(ft);
  pflex_groups_free(g, ng);
  pflex_runset_release(&set);
  return 0;
}
