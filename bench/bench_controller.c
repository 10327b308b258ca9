/* bench_controller: the compute of one pflex-controller round without the
 * HTTP, at cluster sizes: gathering the jobs from the nodes, learning (the
 * closed-loop refinement of every job's curve), and the plan (the optimal
 * allocation, caps, fallbacks). The jobs are the twin's calibrated groups on
 * nodes of 8 GPUs (src/controller/sim_truth.h); their draw and throughput at
 * the caps the plan gives are the twin's, with 0.5% noise. Timings are wall
 * clock on this machine, median and maximum over the capped rounds.
 *
 * With --templates FILE (a runs CSV) the curves are data-shaped by its
 * sweeps, as pflex-controller's templates_file; "first learn" is the round
 * that builds every job's prior.
 *
 * Two equal clusters run in lockstep: "warm" is the controller as it runs
 * (the allocator's hulls kept between rounds, pflex_alloc_ctx), "cold" the
 * same with the context dropped after every plan; their caps must be the
 * same in every round (the last line says so). So that both hold the same
 * curves, every template-shaped prior is built in the first round (the
 * controller spreads them over rounds by wall time).
 *
 * usage: bench_controller [--templates FILE] [--rounds N] [--trace] [NODES...]
 *        (default 125 1000; 12 capped rounds) */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "controller/jobs.h"
#include "controller/plan.h"
#include "controller/sim_truth.h"
#include "controller/templates.h"

#define GPUS 8
/* Capped rounds: 12, or --rounds N (at most MAX_ROUNDS). */
#define MAX_ROUNDS 600
static int rounds = 12;
/* --trace: each capped round's allocation times on stderr. */
static bool trace = false;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Each node's GPUs draw their kind's power at their limit; its job reports. */
static void physics(struct ctl_node *nodes, size_t n, const struct sim_kind **kind, gsl_rng *rng,
                    double t) {
  for (size_t k = 0; k < n; k++) {
    struct ctl_node *nd = &nodes[k];
    double low = INFINITY;
    for (size_t g = 0; g < GPUS; g++) {
      struct ctl_gpu_state *s = &nd->gpu[g];
      if (nd->cap_w[g] > 0) s->limit_w = s->enforced_w = nd->cap_w[g];
      s->power_w = fmin(sim_kind_power(kind[k], s->limit_w) * (1 + gsl_ran_gaussian(rng, 0.005)),
                        s->limit_w);
      low = fmin(low, s->limit_w);
    }
    nd->jobs[0].tput =
        sim_kind_tput(kind[k], low) * GPUS / kind[k]->gpus * (1 + gsl_ran_gaussian(rng, 0.005));
    nd->jobs[0].tput_time = t;
  }
}

/* One simulated cluster: its nodes (one job each), their kinds, its noise,
 * the controller's jobs. */
struct world {
  struct ctl_node *nodes;
  const struct sim_kind **kind;
  gsl_rng *rng;
  struct ctl_jobset js;
  double uncapped;
};

static void world_init(struct world *w, size_t n, const struct sim_truth *truth,
                       const struct ctl_templates *tpl) {
  w->nodes = calloc(n, sizeof *w->nodes);
  w->kind = calloc(n, sizeof *w->kind);
  w->rng = gsl_rng_alloc(gsl_rng_mt19937);
  ctl_jobset_init(&w->js);
  w->js.templates = tpl ? tpl->curves : NULL;
  w->js.ntemplates = tpl ? tpl->n : 0;
  w->uncapped = 0;
  for (size_t k = 0; k < n; k++) { /* one job per node: n jobs */
    struct ctl_node *nd = &w->nodes[k];
    w->kind[k] = &truth->kinds[gsl_rng_uniform_int(w->rng, truth->n)];
    nd->reachable = nd->seen = true;
    nd->ngpus = GPUS;
    nd->njobs = 1;
    snprintf(nd->jobs[0].id, sizeof nd->jobs[0].id, "job%06zu", k);
    nd->jobs[0].has_tput = true;
    for (size_t g = 0; g < GPUS; g++) {
      struct ctl_gpu_state *s = &nd->gpu[g];
      s->index = (unsigned)g;
      s->limit_w = s->enforced_w = s->default_w = s->max_w = 700;
      s->min_w = 200;
      s->lease_s_left = -1;
      snprintf(s->job, sizeof s->job, "%s", nd->jobs[0].id);
      w->uncapped += sim_kind_power(w->kind[k], 700);
    }
  }
}

static void world_release(struct world *w) {
  ctl_jobset_release(&w->js);
  gsl_rng_free(w->rng);
  free(w->kind);
  free(w->nodes);
}

/* The times of one world's capped rounds. */
struct times {
  double gather[MAX_ROUNDS], learn[MAX_ROUNDS], plan[MAX_ROUNDS], alloc[MAX_ROUNDS], first_learn;
  long faults[MAX_ROUNDS]; /* minor page faults during the plan */
};

/* Round r of world w (plans from round 5 on, into slot m of t); cold: the
 * allocator's context is dropped after the plan, so every round samples
 * every curve again (as before the context was kept). */
static void world_round(struct world *w, size_t n, int r, size_t m, bool cold,
                        const struct ctl_config *cfg, struct times *t) {
  physics(w->nodes, n, w->kind, w->rng, r + 1);
  double t0 = now_ms();
  ctl_jobset_gather(&w->js, w->nodes, n, r, 120);
  double t1 = now_ms();
  ctl_jobset_learn(&w->js, cfg);
  double t2 = now_ms();
  t->first_learn = fmax(t->first_learn, t2 - t1);
  if (r < 5) return; /* uncapped: P_max and T_max learnt */
  struct ctl_plan_summary s;
  double target = 0.7 * w->uncapped;
  struct rusage ru0, ru1;
  getrusage(RUSAGE_SELF, &ru0);
  ctl_plan(w->nodes, n, &w->js, cfg, target, target, 5600, &s);
  double t3 = now_ms();
  getrusage(RUSAGE_SELF, &ru1);
  t->faults[m] = ru1.ru_minflt - ru0.ru_minflt;
  if (cold) {
    pflex_alloc_ctx_free(w->js.alloc_ctx);
    w->js.alloc_ctx = NULL;
  }
  t->gather[m] = t1 - t0;
  t->learn[m] = t2 - t1;
  t->plan[m] = t3 - t2;
  t->alloc[m] = s.alloc_ms;
}

static void report(size_t n, struct times *t, size_t m, const char *tag) {
  double *v[] = {t->gather, t->learn, t->plan, t->alloc};
  const char *names[] = {"gather", "learn (refinement)", "plan", "  of which pflex_alloc_run"};
  for (int i = 0; i < 4; i++) {
    qsort(v[i], m, sizeof(double), cmp);
    printf("%6zu jobs %6zu GPUs %s %-26s median %8.2f ms  max %8.2f ms\n", n, n * GPUS, tag,
           names[i], v[i][m / 2], v[i][m - 1]);
  }
  printf("%6zu jobs %6zu GPUs %s %-26s          %8.2f ms (the priors built)\n", n, n * GPUS, tag,
         "slowest uncapped learn", t->first_learn);
}

/* Two equal clusters in lockstep (the same seed): the controller as it
 * runs, its allocator's hulls kept between rounds, and the same without
 * (cold); the allocation must not differ, so every GPU's cap must be the
 * same in both in every round. */
static void run(size_t n, const struct sim_truth *truth, const struct ctl_templates *tpl) {
  struct ctl_config cfg;
  ctl_config_defaults(&cfg);
  /* The controller builds template-shaped priors for a tenth of each
   * round's wall time, so which jobs have one would differ between the two
   * clusters: a budget of 1,000 s builds every one in the first round. */
  cfg.round_s = 1e4;
  struct world w[2];
  struct times t[2] = {{.first_learn = 0}, {.first_learn = 0}};
  for (int k = 0; k < 2; k++)
    world_init(&w[k], n, truth, tpl);
  size_t m = 0, differ = 0;
  uint64_t digest = 0xcbf29ce484222325ull; /* of every round's caps: compare builds */
  for (int r = 0; r < 5 + rounds; r++) {
    for (int k = 0; k < 2; k++) /* alternating which goes first */
      world_round(&w[(r + k) % 2], n, r, m, (r + k) % 2 == 1, &cfg, &t[(r + k) % 2]);
    for (size_t i = 0; i < n; i++) {
      differ += memcmp(w[0].nodes[i].cap_w, w[1].nodes[i].cap_w, sizeof w[0].nodes[i].cap_w) != 0;
      const unsigned char *b = (const unsigned char *)w[0].nodes[i].cap_w;
      for (size_t q = 0; q < sizeof w[0].nodes[i].cap_w; q++)
        digest = (digest ^ b[q]) * 0x100000001b3ull; /* FNV-1a */
    }
    if (trace && r >= 5)
      fprintf(stderr,
              "round %3zu  pflex_alloc_run warm %7.2f ms  cold %7.2f ms  page faults %ld %ld\n",
              m + 1, t[0].alloc[m], t[1].alloc[m], t[0].faults[m], t[1].faults[m]);
    m += r >= 5;
  }
  report(n, &t[0], m, "warm");
  report(n, &t[1], m, "cold");
  printf("%6zu jobs %6zu GPUs      caps with and without the kept hulls: %s (digest %016llx)\n",
         n, n * GPUS, differ ? "DIFFER" : "identical in every round", (unsigned long long)digest);
  for (int k = 0; k < 2; k++)
    world_release(&w[k]);
}

int main(int argc, char **argv) {
  gsl_set_error_handler_off();
  struct sim_truth truth;
  if (sim_truth_init(&truth, 0, 0) < 0) {
    fprintf(stderr, "error: cannot build the twin's job kinds\n");
    return 1;
  }
  size_t sizes[16] = {125, 1000};
  size_t ns = 2;
  struct ctl_templates tpl = {0};
  bool with_tpl = false;
  int first = 1;
  for (; first < argc && argv[first][0] == '-'; first += 2) {
    if (strcmp(argv[first], "--trace") == 0) {
      trace = true;
      first--; /* no value */
    } else if (first + 1 >= argc) {
      fprintf(stderr, "error: '%s' needs a value\n", argv[first]);
      return 1;
    } else if (strcmp(argv[first], "--templates") == 0) {
      char err[512];
      if (ctl_templates_load(argv[first + 1], &tpl, err, sizeof err) < 0) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
      }
      with_tpl = true;
    } else if (strcmp(argv[first], "--rounds") == 0) {
      rounds = atoi(argv[first + 1]);
      if (rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "error: --rounds takes 1 to %d\n", MAX_ROUNDS);
        return 1;
      }
    } else {
      fprintf(stderr, "error: unknown option '%s'\n", argv[first]);
      return 1;
    }
  }
  if (argc > first) {
    ns = 0;
    for (int i = first; i < argc && ns < 16; i++)
      sizes[ns++] = strtoul(argv[i], NULL, 10);
  }
  for (size_t i = 0; i < ns; i++)
    if (sizes[i] > 0) run(sizes[i], &truth, with_tpl ? &tpl : NULL);
  if (with_tpl) ctl_templates_release(&tpl);
  sim_truth_release(&truth);
  return 0;
}
