/* The simulated cluster's ground truth (sim_truth.h). */
#include "controller/sim_truth.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int kind_init(struct sim_kind *k, const struct pflex_twin_paper_group *g) {
  memset(k, 0, sizeof *k);
  snprintf(k->group, sizeof k->group, "%s", g->name);
  int rc = pflex_twin_reference_job(g->name, PFLEX_TWIN_REFERENCE_SEED, &k->gpu, &k->job, NULL);
  if (rc < 0) return rc;
  k->gpus = g->gpus;
  k->cap_min = k->gpu->cap_min_w;
  k->cap_max = k->gpu->tdp_w;
  k->n = (size_t)(k->cap_max - k->cap_min) + 1;
  k->power = calloc(k->n, sizeof *k->power);
  k->tput = calloc(k->n, sizeof *k->tput);
  if (!k->power || !k->tput) return -ENOMEM;
  for (size_t i = 0; i < k->n; i++) {
    struct pflex_twin_point p;
    rc = pflex_twin_eval(k->gpu, &k->job, k->cap_min + (double)i, &p);
    if (rc < 0) return rc;
    k->power[i] = p.power_w;
    k->tput[i] = p.tokens_per_s;
  }
  return 0;
}

int sim_truth_init(struct sim_truth *t) {
  memset(t, 0, sizeof *t);
  size_t n = pflex_twin_paper_count();
  t->kinds = calloc(n, sizeof *t->kinds);
  if (!t->kinds) return -ENOMEM;
  for (size_t i = 0; i < n; i++) {
    int rc = kind_init(&t->kinds[t->n], pflex_twin_paper_get(i));
    t->n++;
    if (rc < 0) {
      sim_truth_release(t);
      return rc;
    }
  }
  return 0;
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
