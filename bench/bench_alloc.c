/* Allocator timings: every strategy on seeded synthetic workloads of 100,
 * 10^4 and 10^6 jobs at a 30% cut; median wall time of several repeats.
 *
 * Jobs are synthetic (not data): 8, 16 or 32 GPUs, uncapped power 450-700 W
 * per GPU, a 6-point measured curve (the paper's cap grid, 200-600 W and
 * uncapped) sampled from the parametric family with compute share c uniform
 * in [0.2, 1] and 0.5% throughput noise, interpolated with Steffen's method.
 *
 * Rows: each strategy as pflex allocate runs it (powers, caps, throughput);
 * the proportional ones again with skip_tput (powers and caps only, what a
 * controller sets); optimal without its local search (opt-nols); and the
 * controller's warm start: a pflex_alloc_ctx primed by the previous round,
 * then a round in which 1% of the jobs have new curves and the target moved
 * by 0.1% (opt-warm), against the same round solved cold (opt-cold, the
 * same work as optimal). The warm answer is checked to be the cold one, bit
 * for bit. equal/bounds: equal on the same jobs with their bounds given and
 * no curves (caps p / gpus): the water filling alone. oracle: the exact
 * oracle (its certified gap and optimal's shortfall against it are printed
 * below the tables). The flat rows (pflex_alloc_flat, what a controller
 * keeps between rounds): the NAME/flat rows a run of each proportional strategy on a
 * flat filled once (powers and caps; flat/powers: equal, powers only),
 * flat/fill the filling for equal; opt/flat, opt/fill the same for optimal
 * (hull greedy and polish on the curves' pieces),
 * opt/flathull opt/flat without the polish (no_local_search: the hull
 * greedy alone), opt/flatwarm a round of a primed flat in which 1% of the jobs are
 * replaced (pflex_alloc_flat_set, timed) and the target moved by 0.1%,
 * checked bit for bit against a flat filled afresh (warm==cold). Below the
 * tables: each flat proportional strategy's largest power difference from
 * pflex_alloc_run, and the flat optimal's shortfall against optimal. Peak
 * memory: the process's maximum resident set after each size (sizes run in
 * the order given, so give them ascending). --rows runs only the rows named;
 * --cpu times with the thread's CPU clock instead of the wall clock. The
 * flat run rows (NAME/flat, flat/powers, opt/flat, opt/flathull) time a
 * controller's round: runs on a flat filled once that has run before (the
 * previous round, untimed); --first-run times instead the first run after
 * each fill, as these rows did before the tenth wave (bench/README.md).
 *
 * usage: bench_alloc [--sizes N,N,...] [--repeats R] [--seed S] [--knots K] [--rows NAME,...]
 *                    [--cpu] [--first-run] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "pflex/alloc.h"
#include "pflex/error.h"

/* The clock of the timings: wall time, or (--cpu) this thread's CPU time,
 * which a loaded machine's time slicing does not inflate (its caches and
 * memory bandwidth, shared, still do). */
static clockid_t clock_id = CLOCK_MONOTONIC;
/* --first-run: the flat run rows time the first run after each fill. */
static bool first_run;

static double now(void) {
  struct timespec ts;
  clock_gettime(clock_id, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

struct workload {
  struct pflex_alloc_job *jobs;
  struct pflex_alloc_job *bare; /* the same jobs without curves, bounds given */
  struct pflex_curve **curves;
  size_t n;
};

static int make(struct workload *w, size_t n, gsl_rng *rng) {
  static const int gpus[] = {8, 16, 32};
  w->n = n;
  w->jobs = calloc(n, sizeof *w->jobs);
  w->curves = calloc(n, sizeof *w->curves);
  w->bare = calloc(n, sizeof *w->bare);
  if (!w->jobs || !w->curves || !w->bare) return -1;
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
    w->bare[i] = w->jobs[i];
    w->bare[i].curve = NULL;
    w->bare[i].p_min = pflex_curve_p_min(w->curves[i]);
    w->bare[i].p_max = pflex_curve_p_max(w->curves[i]);
  }
  return 0;
}

static void release(struct workload *w) {
  for (size_t i = 0; w->curves && i < w->n; i++)
    pflex_curve_free(w->curves[i]);
  free(w->curves);
  free(w->jobs);
  free(w->bare);
}

enum {
  NROWS = 24,
  MAXSIZES = 8,
  ROW_OPTIMAL = 8,
  ROW_ORACLE = 13,
  ROW_FLAT = 14,
  ROW_FILL = 18,
  ROW_POWERS = 19,
  ROW_OPT_FLAT = 20,
  ROW_OPT_FILL = 21,
  ROW_OPT_FLATWARM = 22,
  ROW_OPT_FLATGREEDY = 23
};
static const char *const row_names[NROWS] = {
    "equal",        "moe-ft",      "dram",       "pfi",         "equal/caps",   "moe-ft/caps",
    "dram/caps",    "pfi/caps",    "optimal",    "opt-nols",    "opt-cold",     "opt-warm",
    "equal/bounds", "oracle",      "equal/flat", "moe-ft/flat", "dram/flat",    "pfi/flat",
    "flat/fill",    "flat/powers", "opt/flat",   "opt/fill",    "opt/flatwarm", "opt/flathull"};

static double median(double *v, int n) {
  gsl_sort(v, 1, (size_t)n);
  return gsl_stats_median_from_sorted_data(v, 1, (size_t)n);
}

/* The process's minor page faults so far; a flat row's timed calls' median
 * count in flat_faults (a fault costs far more on some virtual machines
 * than the memory it maps: bench/README.md, tenth wave). */
static double minflt(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_minflt;
}
static double flat_faults;

/* The flat rows (pflex_alloc_flat_run on a flat filled once, untimed; powers
 * and caps) and flat/fill (pflex_alloc_flat_new for equal, timed). The
 * largest difference of a flat power from the /caps row's, relative to the
 * total cut, and whether every cap is the same function of the power. */
static int time_flat(int row, struct workload *w, double target, int reps, double *ret_ms,
                     double *ret_diff) {
  enum pflex_alloc_strategy st =
      row >= ROW_FILL ? PFLEX_ALLOC_EQUAL : (enum pflex_alloc_strategy)(row - ROW_FLAT);
  double *times = malloc((size_t)reps * sizeof *times), *pw = malloc(w->n * sizeof *pw),
         *cw = malloc(w->n * sizeof *cw), *fl = malloc((size_t)reps * sizeof *fl);
  struct pflex_alloc_result *r = malloc(w->n * sizeof *r);
  struct pflex_alloc_flat *f = NULL;
  int err = times && pw && cw && r && fl ? 0 : -1;
  double *cwr = row == ROW_POWERS ? NULL : cw;
  for (int rep = 0; !err && rep < reps; rep++) {
    if (!f || row == ROW_FILL || first_run) { /* a run row: filled once, one round untimed */
      pflex_alloc_flat_free(f);
      f = NULL;
      double a = now(), f0 = minflt();
      err = pflex_alloc_flat_new(w->jobs, w->n, st, NULL, &f);
      if (row == ROW_FILL) times[rep] = 1e3 * (now() - a), fl[rep] = minflt() - f0;
      if (!err && row != ROW_FILL && !first_run)
        err = pflex_alloc_flat_run(f, target, pw, cwr, NULL);
    }
    double a = now(), f0 = minflt();
    if (!err) err = pflex_alloc_flat_run(f, target, pw, cwr, NULL);
    if (row != ROW_FILL) times[rep] = 1e3 * (now() - a), fl[rep] = minflt() - f0;
  }
  struct pflex_alloc_opts o = {.skip_tput = true};
  if (!err) err = pflex_alloc_run(w->jobs, w->n, st, target, &o, r, NULL);
  double diff = 0, cut = 0;
  for (size_t i = 0; !err && i < w->n; i++) {
    cut += w->jobs[i].curve ? pflex_curve_p_max(w->jobs[i].curve) - r[i].power_w : 0;
    diff = fmax(diff, fabs(pw[i] - r[i].power_w));
    if (row != ROW_POWERS && pw[i] == r[i].power_w && cw[i] != r[i].cap_w) diff = INFINITY;
  }
  if (!err) {
    *ret_ms = median(times, reps);
    *ret_diff = cut > 0 ? diff / cut : diff;
    flat_faults = median(fl, reps);
  }
  pflex_alloc_flat_free(f);
  free(fl);
  free(times);
  free(pw);
  free(cw);
  free(r);
  return err;
}

/* Swaps jobs k * (n / nalt) with alt[k]'s curves, and with flat (unless
 * NULL) the same jobs there: the changes of a controller's round. */
static int swap_alt(struct workload *w, struct pflex_curve **alt, struct pflex_alloc_flat *flat) {
  size_t nalt = w->n / 100 ? w->n / 100 : 1;
  for (size_t k = 0; k < nalt; k++) {
    size_t i = k * (w->n / nalt);
    const struct pflex_curve *c = w->jobs[i].curve;
    w->jobs[i].curve = alt[k];
    alt[k] = (struct pflex_curve *)c;
    if (flat && pflex_alloc_flat_set(flat, i, &w->jobs[i])) return -1;
  }
  return 0;
}

/* optimal on a flat: opt/flat the run on a flat filled once (untimed),
 * opt/fill pflex_alloc_flat_new, opt/flatwarm a round of the flat primed by
 * the previous one: 1% of the jobs replaced (pflex_alloc_flat_set) and the
 * target moved by 0.1%, checked to be, bit for bit, the answer of a flat
 * filled afresh (*ret_same). *ret_tput: the throughput of its powers on
 * the curves. */
static int time_flat_opt(int row, struct workload *w, struct pflex_curve **alt, double target,
                         unsigned knots, int reps, double *ret_ms, double *ret_tput,
                         bool *ret_same) {
  double *times = malloc((size_t)reps * sizeof *times), *pw = malloc(w->n * sizeof *pw),
         *cw = malloc(w->n * sizeof *cw), *p2 = malloc(w->n * sizeof *p2),
         *fl = malloc((size_t)reps * sizeof *fl), f0 = 0;
  struct pflex_alloc_opts o = {.knots = knots, .no_local_search = row == ROW_OPT_FLATGREEDY};
  struct pflex_alloc_flat *f = NULL, *g = NULL;
  int err = times && pw && cw && p2 && fl ? 0 : -1;
  bool once = row != ROW_OPT_FILL && row != ROW_OPT_FLATWARM && !first_run;
  for (int rep = 0; !err && rep < reps; rep++) {
    double a, t = row == ROW_OPT_FLATWARM ? target * 1.001 : target;
    if (!f || !once) {
      pflex_alloc_flat_free(f);
      f = NULL;
      a = now(), f0 = minflt();
      err = pflex_alloc_flat_new(w->jobs, w->n, PFLEX_ALLOC_OPTIMAL, &o, &f);
      if (row == ROW_OPT_FILL) times[rep] = 1e3 * (now() - a), fl[rep] = minflt() - f0;
      if (!err && once) err = pflex_alloc_flat_run(f, target, pw, cw, NULL); /* untimed */
    }
    if (!err && row == ROW_OPT_FLATWARM) { /* the previous round, then this one */
      err = pflex_alloc_flat_run(f, target, pw, cw, NULL);
      a = now(), f0 = minflt();
      if (!err) err = swap_alt(w, alt, f);
    } else {
      a = now(), f0 = minflt();
    }
    if (!err) err = pflex_alloc_flat_run(f, t, pw, cw, NULL);
    if (row != ROW_OPT_FILL) times[rep] = 1e3 * (now() - a), fl[rep] = minflt() - f0;
    if (!err && row == ROW_OPT_FLATWARM) {
      err = pflex_alloc_flat_new(w->jobs, w->n, PFLEX_ALLOC_OPTIMAL, &o, &g);
      if (!err) err = pflex_alloc_flat_run(g, t, p2, cw, NULL);
      if (!err && memcmp(pw, p2, w->n * sizeof *pw) != 0) *ret_same = false;
      pflex_alloc_flat_free(g);
      g = NULL;
      if (!err) err = swap_alt(w, alt, NULL);
    }
  }
  double tput = 0;
  for (size_t i = 0; !err && i < w->n; i++)
    tput += pflex_curve_eval(w->jobs[i].curve, pw[i]);
  if (!err) *ret_ms = median(times, reps), *ret_tput = tput, flat_faults = median(fl, reps);
  pflex_alloc_flat_free(f);
  free(fl);
  free(times);
  free(pw);
  free(cw);
  free(p2);
  return err;
}

/* One row at one size: the median ms of reps calls; *ret_tput the total. */
static int time_row(int row, struct workload *w, struct pflex_curve **alt, double target,
                    unsigned knots, int reps, struct pflex_alloc_result *r, double *ret_ms,
                    double *ret_tput, double *ret_gap, bool *ret_same) {
  struct pflex_alloc_opts o = {
      .knots = knots, .skip_tput = row >= 4 && row < 8, .no_local_search = row == 9};
  enum pflex_alloc_strategy st = row < 8             ? (enum pflex_alloc_strategy)(row % 4)
                                 : row == ROW_ORACLE ? PFLEX_ALLOC_ORACLE
                                                     : PFLEX_ALLOC_OPTIMAL;
  if (row == 12) { /* equal on given bounds, no curves: the water filling alone */
    o = (struct pflex_alloc_opts){.skip_tput = true};
    st = PFLEX_ALLOC_EQUAL;
  }
  double *times = malloc((size_t)reps * sizeof *times);
  struct pflex_alloc_result *cold = row == 11 ? malloc(w->n * sizeof *cold) : NULL;
  if (!times || (row == 11 && !cold)) return -1;
  struct pflex_alloc_summary sum;
  struct pflex_alloc_ctx *ctx = NULL;
  size_t nalt = w->n / 100 ? w->n / 100 : 1;
  *ret_same = true;
  for (int rep = 0; rep < reps; rep++) {
    double t = target;
    if (row >= 10) {
      /* A controller round: the previous one (primes the context), then 1%
       * of the jobs with a new curve (swapped in untimed) and a new target. */
      if (row == 11 &&
          (pflex_alloc_ctx_new(&ctx) ||
           pflex_alloc_run(w->jobs, w->n, st, t,
                           &(struct pflex_alloc_opts){.knots = knots, .ctx = ctx}, r, &sum)))
        return -1;
      for (size_t k = 0; k < nalt; k++) {
        size_t i = k * (w->n / nalt);
        const struct pflex_curve *c = w->jobs[i].curve;
        w->jobs[i].curve = alt[k];
        alt[k] = (struct pflex_curve *)c;
      }
      t = target * 1.001;
      o.ctx = ctx;
    }
    const struct pflex_alloc_job *jobs = row == 12 ? w->bare : w->jobs;
    double a = now();
    int err = pflex_alloc_run(jobs, w->n, st, t, &o, r, &sum);
    times[rep] = 1e3 * (now() - a);
    if (!err && row == 11) { /* the same round cold: the same answer */
      struct pflex_alloc_opts oc = {.knots = knots};
      err = pflex_alloc_run(w->jobs, w->n, st, t, &oc, cold, NULL);
      for (size_t i = 0; !err && i < w->n; i++)
        if (memcmp(&cold[i], &r[i], sizeof *r) != 0) *ret_same = false;
    }
    if (row >= 10) /* swap the curves back for the next repeat */
      for (size_t k = 0; k < nalt; k++) {
        size_t i = k * (w->n / nalt);
        const struct pflex_curve *c = w->jobs[i].curve;
        w->jobs[i].curve = alt[k];
        alt[k] = (struct pflex_curve *)c;
      }
    pflex_alloc_ctx_free(ctx);
    ctx = NULL;
    if (err) {
      fprintf(stderr, "bench_alloc: %s: %s\n", row_names[row], pflex_strerror(err));
      return -1;
    }
  }
  *ret_ms = median(times, reps);
  *ret_tput = sum.total_tput;
  *ret_gap = sum.gap_bound;
  free(times);
  free(cold);
  return 0;
}

static void print_table(const char *title, const size_t *sizes, size_t nsizes,
                        double v[NROWS][MAXSIZES], double scale, int digits, int nrows) {
  printf("%s\n%-12s", title, "strategy");
  for (size_t k = 0; k < nsizes; k++)
    printf(" %12zu", sizes[k]);
  printf("\n");
  for (int s = 0; s < nrows; s++) {
    printf("%-12s", row_names[s]);
    for (size_t k = 0; k < nsizes; k++)
      printf(" %12.*f", digits, v[s][k] * (scale > 0 ? scale / (double)sizes[k] : 1));
    printf("\n");
  }
}

/* --rows: the rows to run, by name (the others print nan). */
static int parse_rows(char *list, bool *want) {
  for (int s = 0; s < NROWS; s++)
    want[s] = false;
  for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
    int s = 0;
    while (s < NROWS && strcmp(t, row_names[s]) != 0)
      s++;
    if (s == NROWS) {
      fprintf(stderr, "bench_alloc: no row '%s'\n", t);
      return -1;
    }
    want[s] = true;
  }
  return 0;
}

int main(int argc, char **argv) {
  size_t sizes[MAXSIZES] = {1000, 10000, 100000, 1000000}, nsizes = 4;
  int repeats = 0;
  unsigned long seed = 1;
  unsigned knots = 0;
  bool want[NROWS];
  for (int s = 0; s < NROWS; s++)
    want[s] = true;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
      nsizes = 0;
      for (char *s = strtok(argv[++i], ","); s && nsizes < MAXSIZES; s = strtok(NULL, ","))
        sizes[nsizes++] = strtoull(s, NULL, 10);
    } else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
      repeats = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
      seed = strtoul(argv[++i], NULL, 10);
    } else if (strcmp(argv[i], "--knots") == 0 && i + 1 < argc) {
      knots = (unsigned)atoi(argv[++i]);
    } else if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc) {
      if (parse_rows(argv[++i], want)) return 2;
    } else if (strcmp(argv[i], "--cpu") == 0) {
      clock_id = CLOCK_THREAD_CPUTIME_ID;
    } else if (strcmp(argv[i], "--first-run") == 0) {
      first_run = true;
    } else {
      fprintf(stderr, "usage: bench_alloc [--sizes N,N,...] [--repeats R] [--seed S] [--knots K] "
                      "[--rows NAME,...] [--cpu] [--first-run]\n");
      return 2;
    }
  }
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(rng, seed);
  double flat_diff[NROWS][MAXSIZES], ms[NROWS][MAXSIZES], tput[NROWS][MAXSIZES],
      gap[NROWS][MAXSIZES], build_ms[MAXSIZES], rss_mb[MAXSIZES], faults[NROWS][MAXSIZES];
  bool same[MAXSIZES];
  for (size_t k = 0; k < nsizes; k++) {
    size_t n = sizes[k], nalt = n / 100 ? n / 100 : 1;
    int reps = repeats > 0 ? repeats : n <= 1000 ? 51 : n <= 100000 ? 7 : 3;
    struct workload w = {0}, alt = {0};
    double t0 = now();
    if (make(&w, n, rng) || make(&alt, nalt, rng)) {
      fprintf(stderr, "bench_alloc: cannot build %zu jobs\n", n);
      return 1;
    }
    build_ms[k] = 1e3 * (now() - t0);
    struct pflex_alloc_result *r = malloc(n * sizeof *r);
    double target;
    if (!r || pflex_alloc_target_for_cut(w.jobs, n, 0.30, &target)) return 1;
    same[k] = true;
    for (int s = 0; s < NROWS; s++) {
      bool ok = true;
      ms[s][k] = tput[s][k] = gap[s][k] = flat_diff[s][k] = faults[s][k] = flat_faults = NAN;
      if (!want[s]) continue;
      if (s >= ROW_OPT_FLAT) {
        if (time_flat_opt(s, &w, alt.curves, target, knots, reps, &ms[s][k], &tput[s][k], &ok))
          return 1;
        if (!ok) same[k] = false;
        faults[s][k] = flat_faults;
        continue;
      }
      if (s >= ROW_FLAT) {
        if (time_flat(s, &w, target, reps, &ms[s][k], &flat_diff[s][k])) return 1;
        faults[s][k] = flat_faults;
        continue;
      }
      if (time_row(s, &w, alt.curves, target, knots, reps, r, &ms[s][k], &tput[s][k], &gap[s][k],
                   &ok))
        return 1;
      if (s == 11) same[k] = ok;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    rss_mb[k] = (double)ru.ru_maxrss / 1024.0;
    free(r);
    release(&w);
    release(&alt);
  }
  printf("allocator, median %s ms per call (30%% cut, synthetic measured curves, seed %lu, "
         "knots %u, one thread)\n",
         clock_id == CLOCK_MONOTONIC ? "wall" : "thread CPU", seed, knots ? knots : 17);
  printf("flat run rows: %s\n", first_run ? "the first run after each fill (--first-run)"
                                          : "a round on a flat that ran before");
  print_table("time (ms):", sizes, nsizes, ms, 0, 3, NROWS);
  print_table("per job (ns/job): flat across a row = linear", sizes, nsizes, ms, 1e6, 1, NROWS);
  print_table("minor page faults per timed call (flat rows; median):", sizes, nsizes, faults, 0, 0,
              NROWS);
  double rel[NROWS][MAXSIZES];
  for (int s = 0; s < NROWS; s++)
    for (size_t k = 0; k < nsizes; k++)
      rel[s][k] = tput[s][k] / tput[8][k];
  print_table("total throughput relative to optimal (same workload; /caps rows: not computed):",
              sizes, nsizes, rel, 0, 7, 4);
  printf("%-12s", "opt/oracle");
  for (size_t k = 0; k < nsizes; k++)
    printf(" %12.3g", 1 - tput[8][k] / tput[ROW_ORACLE][k]);
  printf("   (1 - optimal / oracle: optimal's shortfall against the exact oracle)\n%-12s",
         "oracle gap");
  for (size_t k = 0; k < nsizes; k++)
    printf(" %12.3g", gap[ROW_ORACLE][k] / tput[ROW_ORACLE][k]);
  printf("   (the oracle's certified gap to the optimum, relative)\n%-12s", "opt/flat");
  for (size_t k = 0; k < nsizes; k++)
    printf(" %12.3g", 1 - tput[ROW_OPT_FLAT][k] / tput[ROW_OPTIMAL][k]);
  printf("   (1 - flat optimal / optimal: the flat optimal's shortfall; < 0: above optimal)\n");
  printf("%-12s", "opt/flathull");
  for (size_t k = 0; k < nsizes; k++)
    printf(" %12.3g", 1 - tput[ROW_OPT_FLATGREEDY][k] / tput[ROW_OPTIMAL][k]);
  printf("   (the same without the polish: the hull greedy's shortfall)\n");
  printf("%-12s", "curves ms");
  for (size_t k = 0; k < nsizes; k++)
    printf(" %12.1f", build_ms[k]);
  printf("   (building the measured curves, once)\n%-12s", "peak RSS MB");
  for (size_t k = 0; k < nsizes; k++)
    printf(" %12.1f", rss_mb[k]);
  for (int s = ROW_FLAT; s < ROW_FILL; s++) {
    printf("\n%-12s", row_names[s]);
    for (size_t k = 0; k < nsizes; k++)
      printf(" %12.3g", flat_diff[s][k]);
  }
  printf("   (flat vs pflex_alloc_run: largest power difference / total cut; inf: a cap "
         "differs)\n%-12s",
         "warm==cold");
  for (size_t k = 0; k < nsizes; k++)
    printf(" %12s", same[k] ? "identical" : "DIFFERENT");
  printf("\n");
  gsl_rng_free(rng);
  for (size_t k = 0; k < nsizes; k++) {
    if (!same[k]) return 1;
    for (int s = ROW_FLAT; s < ROW_FILL; s++)
      if (flat_diff[s][k] > 1e-9) return 1;
  }
  return 0;
}
