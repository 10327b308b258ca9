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
 * usage: bench_controller [--templates FILE] [NODES...]   (default 125 1000) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "controller/jobs.h"
#include "controller/plan.h"
#include "controller/sim_truth.h"
#include "controller/templates.h"

#define GPUS 8
#define ROUNDS 12

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

static void run(size_t n, const struct sim_truth *truth, const struct ctl_templates *tpl) {
  struct ctl_node *nodes = calloc(n, sizeof *nodes);
  const struct sim_kind **kind = calloc(n, sizeof *kind);
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  struct ctl_config cfg;
  ctl_config_defaults(&cfg);
  struct ctl_jobset js;
  ctl_jobset_init(&js);
  js.templates = tpl ? tpl->curves : NULL;
  js.ntemplates = tpl ? tpl->n : 0;
  double uncapped = 0, first_learn = 0;
  for (size_t k = 0; k < n; k++) { /* one job per node: n jobs */
    struct ctl_node *nd = &nodes[k];
    kind[k] = &truth->kinds[gsl_rng_uniform_int(rng, truth->n)];
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
      uncapped += sim_kind_power(kind[k], 700);
    }
  }
  double gather[ROUNDS], learn[ROUNDS], plan[ROUNDS], alloc[ROUNDS];
  size_t m = 0;
  for (int r = 0; r < 5 + ROUNDS; r++) {
    physics(nodes, n, kind, rng, r + 1);
    double t0 = now_ms();
    ctl_jobset_gather(&js, nodes, n, r, 120);
    double t1 = now_ms();
    ctl_jobset_learn(&js, &cfg);
    double t2 = now_ms();
    first_learn = fmax(first_learn, t2 - t1);
    if (r < 5) continue; /* uncapped: P_max and T_max learnt */
    struct ctl_plan_summary s;
    double target = 0.7 * uncapped;
    ctl_plan(nodes, n, &js, &cfg, target, target, 5600, &s);
    double t3 = now_ms();
    gather[m] = t1 - t0;
    learn[m] = t2 - t1;
    plan[m] = t3 - t2;
    alloc[m] = s.alloc_ms;
    m++;
  }
  double *v[] = {gather, learn, plan, alloc};
  const char *names[] = {"gather", "learn (refinement)", "plan", "  of which pflex_alloc_run"};
  for (int i = 0; i < 4; i++) {
    qsort(v[i], m, sizeof(double), cmp);
    printf("%6zu jobs %6zu GPUs  %-26s median %8.2f ms  max %8.2f ms\n", n, n * GPUS, names[i],
           v[i][m / 2], v[i][m - 1]);
  }
  printf("%6zu jobs %6zu GPUs  %-26s          %8.2f ms (the priors built)\n", n, n * GPUS,
         "slowest uncapped learn", first_learn);
  ctl_jobset_release(&js);
  gsl_rng_free(rng);
  free(kind);
  free(nodes);
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
  if (argc > 2 && strcmp(argv[1], "--templates") == 0) {
    char err[512];
    if (ctl_templates_load(argv[2], &tpl, err, sizeof err) < 0) {
      fprintf(stderr, "error: %s\n", err);
      return 1;
    }
    with_tpl = true;
    first = 3;
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
