/* The simulated cluster's world (sim_world.h). */
#include "controller/sim_world.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gsl/gsl_randist.h>

#define NOISE 0.005

/* A kind for nnodes nodes of gpus_per_node GPUs of type `type` (NULL = any):
 * the kinds whose GPU count fills exactly that many nodes (or, for one node,
 * any smaller kind, run on the whole node). */
static const struct sim_kind *draw_kind(struct sim_world *w, const char *type, size_t max_nodes,
                                        size_t *ret_nodes) {
  for (int attempt = 0; attempt < 200; attempt++) {
    const struct sim_kind *k = &w->truth.kinds[gsl_rng_uniform_int(w->rng, w->truth.n)];
    size_t need = (size_t)ceil((double)k->gpus / (double)w->gpus_per_node);
    if (need < 1) need = 1;
    if (need > max_nodes || (type && strcmp(k->gpu->name, type) != 0)) continue;
    *ret_nodes = need;
    return k;
  }
  return NULL;
}

static int job_start(struct sim_world *w, struct sim_job *j, const struct sim_kind *k, size_t node0,
                     size_t nnodes, double now) {
  pflex_curve_free(j->curve);
  memset(j, 0, sizeof *j); /* phase SIM_RUNNING */
  snprintf(j->id, sizeof j->id, "j%05zu", ++w->serial);
  j->kind = k;
  j->node0 = node0;
  j->nnodes = nnodes;
  j->gpus = (int)(nnodes * w->gpus_per_node);
  j->running = true;
  j->t_end = w->churn_s > 0 ? now + gsl_ran_exponential(w->rng, w->churn_s) : INFINITY;
  for (size_t n = node0; n < node0 + nnodes; n++)
    for (size_t g = 0; g < w->gpus_per_node; g++)
      w->nodes[n].job[g] = (int)(j - w->jobs);
  return sim_kind_curve(k, j->gpus, &j->curve);
}

static int place_jobs(struct sim_world *w, double now) {
  size_t n = 0;
  while (n < w->nnodes) {
    if (gsl_rng_uniform(w->rng) < w->idle_frac) { /* a node without a job */
      n++;
      continue;
    }
    size_t need;
    const struct sim_kind *k = draw_kind(w, NULL, w->nnodes - n, &need);
    if (!k) return -EINVAL;
    int rc = job_start(w, &w->jobs[w->njobs++], k, n, need, now);
    if (rc < 0) return rc;
    n += need;
  }
  return 0;
}

static int make_nodes(struct sim_world *w, const char *dir) {
  /* Node GPU types follow the jobs placed on them; all H100/H200 types share
   * the 200-700 W range, and the first kind's type names the file's GPUs. */
  for (size_t i = 0; i < w->nnodes; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/node%04zu.nvml", dir, i);
    int rc = sim_node_create(&w->nodes[i], path, w->gpus_per_node, "H200", 700, 200,
                             PFLEX_CURVE_IDLE_W_H200, (unsigned)i);
    if (rc < 0) return rc;
  }
  return 0;
}

int sim_world_init(struct sim_world *w, const char *dir, size_t nnodes, size_t gpus_per_node,
                   double churn_s, double idle_frac, unsigned long seed, size_t population,
                   double now, char *err, size_t errlen) {
  memset(w, 0, sizeof *w);
  w->statsd_fd = -1;
  w->nnodes = nnodes;
  w->gpus_per_node = gpus_per_node;
  w->churn_s = churn_s;
  w->idle_frac = idle_frac;
  w->rng = gsl_rng_alloc(gsl_rng_mt19937);
  w->nodes = calloc(nnodes, sizeof *w->nodes);
  w->jobs = calloc(nnodes, sizeof *w->jobs);
  w->statsd_port = calloc(nnodes, sizeof *w->statsd_port);
  if (!w->rng || !w->nodes || !w->jobs || !w->statsd_port) {
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
  }
  gsl_rng_set(w->rng, seed);
  int rc = sim_truth_init(&w->truth, population, 1000 + (uint64_t)seed);
  if (rc < 0) {
    snprintf(err, errlen, "cannot build the twin's job kinds: %s", strerror(-rc));
    return rc;
  }
  rc = make_nodes(w, dir);
  if (rc < 0) {
    snprintf(err, errlen, "cannot write the nodes' state files under '%.300s': %s", dir,
             strerror(-rc));
    return rc;
  }
  rc = place_jobs(w, now);
  if (rc < 0) {
    snprintf(err, errlen, "cannot place jobs: %s", strerror(-rc));
    return rc;
  }
  w->statsd_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  return w->statsd_fd < 0 ? -errno : 0;
}

void sim_world_release(struct sim_world *w) {
  for (size_t i = 0; w->jobs && i < w->njobs; i++)
    pflex_curve_free(w->jobs[i].curve);
  free(w->jobs);
  free(w->nodes);
  free(w->statsd_port);
  if (w->statsd_fd >= 0) close(w->statsd_fd);
  if (w->rng) gsl_rng_free(w->rng);
  sim_truth_release(&w->truth);
  memset(w, 0, sizeof *w);
}

static double noisy(struct sim_world *w, double x) {
  return x * (1 + gsl_ran_gaussian(w->rng, NOISE));
}

void sim_world_update_tput(struct sim_world *w) {
  for (size_t i = 0; i < w->njobs; i++) {
    struct sim_job *j = &w->jobs[i];
    double low = INFINITY;
    for (size_t n = j->node0; n < j->node0 + j->nnodes; n++)
      for (size_t g = 0; g < w->gpus_per_node; g++)
        low = fmin(low, w->nodes[n].g[g].eff_w);
    /* Synchronous training runs at the pace of its slowest GPU. */
    j->tput_now = j->running ? sim_kind_tput(j->kind, low) * j->gpus / j->kind->gpus : 0;
  }
}

/* What GPU g of a node draws, settled and noise-free, at the limit in effect:
 * its job's twin power when it trains, a little over idle while it starts,
 * idle without one. */
static double settled_draw(const struct sim_world *w, const struct sim_node *nd, size_t g) {
  int ji = nd->job[g];
  const struct sim_job *j = ji >= 0 ? &w->jobs[ji] : NULL;
  return j && j->running                ? sim_kind_power(j->kind, nd->g[g].eff_w)
         : j && j->phase == SIM_STARTUP ? 1.1 * nd->g[g].idle_w
                                        : nd->g[g].idle_w;
}

int sim_world_tick(struct sim_world *w, double now, double dt, size_t avg_ticks, double lag_s) {
  for (size_t n = 0; n < w->nnodes; n++)
    (void)sim_node_read_limits(&w->nodes[n], now, lag_s); /* a missing read keeps the last */
  sim_world_update_tput(w);
  int rc = 0;
  for (size_t n = 0; n < w->nnodes; n++) {
    struct sim_node *nd = &w->nodes[n];
    double draw[SIM_MAX_GPUS];
    for (size_t g = 0; g < nd->ngpus; g++) /* the limiter holds the cap */
      draw[g] = fmin(noisy(w, settled_draw(w, nd, g)), nd->g[g].eff_w);
    int r = sim_node_tick(nd, draw, dt, avg_ticks);
    if (r < 0 && rc == 0) rc = r;
  }
  return rc;
}

void sim_world_model_unread(struct sim_world *w, double now) {
  for (size_t n = 0; n < w->nnodes; n++) {
    struct sim_node *nd = &w->nodes[n];
    if (!nd->unread) {
      nd->read_t = now;
      for (size_t g = 0; g < nd->ngpus; g++)
        nd->g[g].read_w = nd->g[g].avg_w;
      continue;
    }
    /* the one-second average moving from the last reading to the draw */
    double f = fmin(1.0, fmax(0.0, (now - nd->read_t) / SIM_NVML_AVG_S));
    for (size_t g = 0; g < nd->ngpus; g++) {
      struct sim_gpu *x = &nd->g[g];
      x->avg_w = x->read_w + f * (fmin(settled_draw(w, nd, g), x->eff_w) - x->read_w);
    }
  }
}

void sim_world_report_tput(struct sim_world *w) {
  for (size_t i = 0; i < w->njobs; i++) {
    const struct sim_job *j = &w->jobs[i];
    if (!j->running || w->statsd_port[j->node0] <= 0) continue;
    char msg[96];
    int len = snprintf(msg, sizeof msg, "%s.tokens:%.3f|g", j->id, noisy(w, j->tput_now));
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)w->statsd_port[j->node0])};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    (void)sendto(w->statsd_fd, msg, (size_t)len, 0, (struct sockaddr *)&sa, sizeof sa);
  }
}

size_t sim_world_churn(struct sim_world *w, double now, struct sim_change *ret, size_t max) {
  size_t n = 0;
  for (size_t i = 0; i < w->njobs && n < max; i++) {
    struct sim_job *j = &w->jobs[i];
    if (j->phase == SIM_RUNNING && now >= j->t_end) {
      size_t need;
      const struct sim_kind *k = draw_kind(w, j->kind->gpu->name, j->nnodes, &need);
      /* nothing else fits (or the kinds are fixed): the same kind */
      j->next = k && need == j->nnodes && !w->fixed_kinds ? k : j->kind;
      ret[n++] = (struct sim_change){.job = i, .put = false};
      snprintf(ret[n - 1].id, sizeof ret[n - 1].id, "%s", j->id);
      j->phase = SIM_GAP;
      j->running = false;
      j->t_phase = now + SIM_GAP_S;
      w->churned++;
    } else if (j->phase == SIM_GAP && now >= j->t_phase) {
      if (job_start(w, j, j->next, j->node0, j->nnodes, now) < 0) continue;
      j->phase = SIM_STARTUP;
      j->running = false;
      j->t_phase = now + SIM_STARTUP_S;
      j->t_end += SIM_STARTUP_S;
      ret[n++] = (struct sim_change){.job = i, .put = true};
      snprintf(ret[n - 1].id, sizeof ret[n - 1].id, "%s", j->id);
    } else if (j->phase == SIM_STARTUP && now >= j->t_phase) {
      j->phase = SIM_RUNNING;
      j->running = true;
    }
  }
  return n;
}

double sim_job_limit_w(const struct sim_world *w, const struct sim_job *j, double *ret_drawn_w) {
  double lim = INFINITY, drawn = 0;
  for (size_t n = j->node0; n < j->node0 + j->nnodes && n < w->nnodes; n++)
    for (size_t g = 0; g < w->nodes[n].ngpus; g++) {
      lim = fmin(lim, w->nodes[n].g[g].eff_w);
      drawn += w->nodes[n].g[g].avg_w;
    }
  *ret_drawn_w = drawn;
  return lim;
}

double sim_world_limits_w(const struct sim_world *w) {
  double s = 0;
  for (size_t n = 0; n < w->nnodes; n++)
    for (size_t g = 0; g < w->nodes[n].ngpus; g++)
      s += w->nodes[n].g[g].limit_w;
  return s;
}

double sim_world_reported_w(const struct sim_world *w, double *ret_idle_w) {
  double s = 0, idle = 0;
  for (size_t n = 0; n < w->nnodes; n++) {
    const struct sim_node *nd = &w->nodes[n];
    for (size_t g = 0; g < nd->ngpus; g++) {
      double p = w->raw_readings ? nd->g[g].avg_w : sim_node_reported(nd, g);
      s += p;
      int ji = nd->job[g];
      if (ji < 0 || !w->jobs[ji].running) idle += p;
    }
  }
  if (ret_idle_w) *ret_idle_w = idle;
  return s;
}
