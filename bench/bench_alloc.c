/* Allocator timings: every strategy on seeded synthetic workloads of 100,
 * 10^4 and 10^6 jobs at a 30% cut; median wall time of several repeats.
 *
 * Jobs are synthetic (not data): 8, 16 or 32 GPUs, uncapped power 450-700 W
 * per GPU, a 6-point measured curve (the paper's cap grid, 200-600 W and
 * uncapped) sampled from the parametric family with compute share c uniform
 * in [0.2, 1] and 0.5% throughput noise, interpolated with Steffen's method.
 *
 * The row opt-nols is optimal without its local search on the curves.
 *
 * usage: bench_alloc [--sizes N,N,...] [--repeats R] [--seed S] [--knots K] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "pflex/alloc.h"
#include "pflex/error.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

struct workload {
  struct pflex_alloc_job *jobs;
  struct pflex_curve **curves;
  size_t n;
};

static int make(struct workload *w, size_t n, gsl_rng *rng) {
  static const int gpus[] = {8, 16, 32};
  w->n = n;
  w->jobs = calloc(n, sizeof *w->jobs);
  w->curves = calloc(n, sizeof *w->curves);
  if (!w->jobs || !w->curves) return -1;
  for (size_t i = 0; i < n; i++) {
    int g = gpus[gsl_rng_uniform_int(rng, 3)];
    double pmax = g * (450 + 250 * gsl_rng_uniform(rng)), tmax = 1000.0 * g;
    struct pflex_curve_params q;
    pflex_curve_params_default("H200", g, pmax, &q);
    q.c = 0.2 + 0.8 * gsl_rng_uniform(rng);
    struct pflex_curve *truth;
    if (pflex_curve_new_parametric(&q, 200.0 * g, pmax, tmax, &truth)) return -1;
    struct pflex_curve_point pt[6];
    size_t np = 0;
    for (int cap = 200; cap <= 600; cap += 100)
      if (cap * g < pmax) {
        double pw = cap * g;
        double t = pflex_curve_eval(truth, pw) * (1 + gsl_ran_gaussian(rng, 0.005));
        pt[np++] = (struct pflex_curve_point){pw, t, cap};
      }
    pt[np++] = (struct pflex_curve_point){pmax, tmax, 700};
    pflex_curve_free(truth);
    if (pflex_curve_new_measured(pt, np, PFLEX_INTERP_STEFFEN, &w->curves[i])) return -1;
    pflex_alloc_job_init(&w->jobs[i]);
    w->jobs[i].curve = w->curves[i];
    w->jobs[i].gpus = g;
    w->jobs[i].pfi = 1 + 1.5 * gsl_rng_uniform(rng);
    w->jobs[i].dram_copy = gsl_rng_uniform(rng);
    w->jobs[i].arch = gsl_rng_uniform(rng) < 0.5 ? PFLEX_ARCH_MOE : PFLEX_ARCH_DENSE;
    w->jobs[i].task = gsl_rng_uniform(rng) < 0.5 ? PFLEX_TASK_FT : PFLEX_TASK_PT;
  }
  return 0;
}

static const char *row_name(int s) {
  return s == PFLEX_ALLOC_NSTRATEGIES ? "opt-nols" : pflex_alloc_strategy_name(s);
}

static void release(struct workload *w) {
  for (size_t i = 0; w->curves && i < w->n; i++)
    pflex_curve_free(w->curves[i]);
  free(w->curves);
  free(w->jobs);
}

int main(int argc, char **argv) {
  size_t sizes[8] = {100, 10000, 1000000}, nsizes = 3;
  int repeats = 0;
  unsigned long seed = 1;
  unsigned knots = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
      nsizes = 0;
      for (char *s = strtok(argv[++i], ","); s && nsizes < 8; s = strtok(NULL, ","))
        sizes[nsizes++] = strtoull(s, NULL, 10);
    } else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
      repeats = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
      seed = strtoul(argv[++i], NULL, 10);
    } else if (strcmp(argv[i], "--knots") == 0 && i + 1 < argc) {
      knots = (unsigned)atoi(argv[++i]);
    } else {
      fprintf(stderr,
              "usage: bench_alloc [--sizes N,N,...] [--repeats R] [--seed S] [--knots K]\n");
      return 2;
    }
  }
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(rng, seed);
  struct pflex_alloc_opts opts = {.knots = knots};
  /* Row NSTRATEGIES: optimal without its local search (docs/allocation.md). */
  double ms[PFLEX_ALLOC_NSTRATEGIES + 1][8], tput[PFLEX_ALLOC_NSTRATEGIES + 1][8], build_ms[8];
  for (size_t k = 0; k < nsizes; k++) {
    size_t n = sizes[k];
    int reps = repeats > 0 ? repeats : n <= 1000 ? 51 : n <= 100000 ? 7 : 3;
    struct workload w = {0};
    double t0 = now();
    if (make(&w, n, rng)) {
      fprintf(stderr, "bench_alloc: cannot build %zu jobs\n", n);
      return 1;
    }
    build_ms[k] = 1e3 * (now() - t0);
    struct pflex_alloc_result *r = malloc(n * sizeof *r);
    double target, *times = malloc((size_t)reps * sizeof *times);
    if (!r || !times || pflex_alloc_target_for_cut(w.jobs, n, 0.30, &target)) return 1;
    for (int s = 0; s <= PFLEX_ALLOC_NSTRATEGIES; s++) {
      struct pflex_alloc_summary sum;
      struct pflex_alloc_opts o = opts;
      o.no_local_search = s == PFLEX_ALLOC_NSTRATEGIES;
      enum pflex_alloc_strategy st = s == PFLEX_ALLOC_NSTRATEGIES ? PFLEX_ALLOC_OPTIMAL : s;
      for (int rep = 0; rep < reps; rep++) {
        double a = now();
        int err = pflex_alloc_run(w.jobs, n, st, target, &o, r, &sum);
        times[rep] = 1e3 * (now() - a);
        if (err) {
          fprintf(stderr, "bench_alloc: %s: %s\n", pflex_alloc_strategy_name(st),
                  pflex_strerror(err));
          return 1;
        }
      }
      gsl_sort(times, 1, (size_t)reps);
      ms[s][k] = gsl_stats_median_from_sorted_data(times, 1, (size_t)reps);
      tput[s][k] = sum.total_tput;
    }
    free(times);
    free(r);
    release(&w);
  }
  printf("allocator wall time, median ms per call (30%% cut, synthetic measured curves, seed %lu, "
         "knots %u)\n",
         seed, knots ? knots : 17);
  printf("%-8s", "strategy");
  for (size_t k = 0; k < nsizes; k++)
    printf(" %12zu", sizes[k]);
  printf("   ratio to equal:");
  for (size_t k = 0; k < nsizes; k++)
    printf(" %9zu", sizes[k]);
  printf("\n");
  for (int s = 0; s <= PFLEX_ALLOC_NSTRATEGIES; s++) {
    printf("%-8s", row_name(s));
    for (size_t k = 0; k < nsizes; k++)
      printf(" %12.3f", ms[s][k]);
    printf("   %15s", "");
    for (size_t k = 0; k < nsizes; k++)
      printf(" %9.1f", ms[s][k] / ms[PFLEX_ALLOC_EQUAL][k]);
    printf("\n");
  }
  printf("%-8s", "curves");
  for (size_t k = 0; k < nsizes; k++)
    printf(" %12.3f", build_ms[k]);
  printf("   (building the n measured curves, once)\n");
  printf("per-job time (us/job):\n%-8s", "strategy");
  for (size_t k = 0; k < nsizes; k++)
    printf(" %12zu", sizes[k]);
  printf("\n");
  for (int s = 0; s <= PFLEX_ALLOC_NSTRATEGIES; s++) {
    printf("%-8s", row_name(s));
    for (size_t k = 0; k < nsizes; k++)
      printf(" %12.3f", 1e3 * ms[s][k] / (double)sizes[k]);
    printf("\n");
  }
  printf("total throughput relative to optimal (same workload):\n%-8s", "strategy");
  for (size_t k = 0; k < nsizes; k++)
    printf(" %12zu", sizes[k]);
  printf("\n");
  for (int s = 0; s <= PFLEX_ALLOC_NSTRATEGIES; s++) {
    printf("%-8s", row_name(s));
    for (size_t k = 0; k < nsizes; k++)
      printf(" %12.7f", tput[s][k] / tput[PFLEX_ALLOC_OPTIMAL][k]);
    printf("\n");
  }
  gsl_rng_free(rng);
  return 0;
}
