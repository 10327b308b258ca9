/* The simulated cluster's ground truth (sim_truth.h). */
#include "controller/sim_truth.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Kind k: job on gpu, its tables from the GPU's least limit to its TDP. */
static int kind_fill(struct sim_kind *k, const char *name, const struct pflex_twin_gpu *gpu,
                     const struct pflex_twin_job *job) {
  memset(k, 0, sizeof *k);
  snprintf(k->group, sizeof k->group, "%s", name);
  k->gpu = gpu;
  k->job = *job;
  k->gpus = job->gpus;
  k->cap_min = gpu->cap_min_w;
  k->cap_max = gpu->tdp_w;
  k->n = (size_t)(k->cap_max - k->cap_min) + 1;
  k->power = calloc(k->n, sizeof *k->power);
  k->tput = calloc(k->n, sizeof *k->tput);
  if (!k->power || !k->tput) return -ENOMEM;
  for (size_t i = 0; i < k->n; i++) {
    struct pflex_twin_point p;
    int rc = pflex_twin_eval(gpu, job, k->cap_min + (double)i, &p);
    if (rc < 0) return rc;
    k->power[i] = p.power_w;
    k->tput[i] = p.tokens_per_s;
  }
  return 0;
}

/* A published group's kind: the twin's calibrated job, at the group's size. */
static int paper_kind(struct sim_kind *k, size_t i) {
  const struct pflex_twin_paper_group *g = pflex_twin_paper_get(i);
  const struct pflex_twin_gpu *gpu;
  struct pflex_twin_job job;
  int rc = pflex_twin_reference_job(g->name, PFLEX_TWIN_REFERENCE_SEED, &gpu, &job, NULL);
  if (rc < 0) return rc;
  job.gpus = g->gpus;
  rc = kind_fill(k, g->name, gpu, &job);
  snprintf(k->spec, sizeof k->spec, "group=%s", g->name);
  return rc;
}

static int population_kinds(struct sim_truth *t, size_t n, uint64_t seed) {
  struct pflex_twin_population_opts po = {.jobs = n, .seed = seed};
  const struct pflex_twin_gpu **gpus = calloc(n, sizeof *gpus);
  struct pflex_twin_job *jobs = calloc(n, sizeof *jobs);
  int rc = gpus && jobs ? pflex_twin_population_jobs(&po, gpus, jobs) : -ENOMEM;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    char name[128];
    pflex_twin_population_name(name, sizeof name, "pop", i, gpus[i], &jobs[i]);
    struct sim_kind *k = &t->kinds[t->n++];
    rc = kind_fill(k, name, gpus[i], &jobs[i]);
    snprintf(k->spec, sizeof k->spec, "population=%llu:%zu", (unsigned long long)seed, i);
  }
  free(gpus);
  free(jobs);
  return rc;
}

int sim_truth_init(struct sim_truth *t, size_t population, uint64_t seed) {
  memset(t, 0, sizeof *t);
  size_t n = population ? population : pflex_twin_paper_count();
  t->kinds = calloc(n, sizeof *t->kinds);
  if (!t->kinds) return -ENOMEM;
  int rc = 0;
  if (population)
    rc = population_kinds(t, n, seed);
  else
    for (size_t i = 0; rc == 0 && i < n; i++)
      rc = paper_kind(&t->kinds[t->n++], i);
  if (rc < 0) sim_truth_release(t);
  return rc;
}

void sim_truth_release(struct sim_truth *t) {
  for (size_t i = 0; i < t->n; i++) {
    free(t->kinds[i].power);
    free(t->kinds[i].tput);
  }
  free(t->kinds);
  memset(t, 0, sizeof *t);
}

static double lookup(const struct sim_kind *k, const double *v, double cap_w) {
  double x = fmin(fmax(cap_w, k->cap_min), k->cap_max) - k->cap_min;
  size_t i = (size_t)floor(x);
  if (i + 1 >= k->n) return v[k->n - 1];
  double f = x - (double)i;
  return v[i] + f * (v[i + 1] - v[i]);
}

double sim_kind_power(const struct sim_kind *k, double cap_w) {
  return lookup(k, k->power, cap_w);
}
double sim_kind_tput(const struct sim_kind *k, double cap_w) {
  return lookup(k, k->tput, cap_w);
}

int sim_kind_curve(const struct sim_kind *k, int gpus, struct pflex_curve **ret) {
  struct pflex_curve_point pts[64];
  size_t n = 0;
  double scale = (double)gpus / k->gpus;
  for (double cap = k->cap_min; cap <= k->cap_max + 1e-9 && n < 64; cap += 10) {
    pts[n].cap_w = cap;
    pts[n].power_w = gpus * sim_kind_power(k, cap);
    pts[n].tput = scale * sim_kind_tput(k, cap);
    /* Caps above the natural draw change nothing: keep one point per power. */
    if (n == 0 || pts[n].power_w > pts[n - 1].power_w + 1e-6) n++;
  }
  return pflex_curve_new_measured(pts, n, PFLEX_INTERP_LINEAR, ret);
}
