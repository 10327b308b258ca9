/* One round's decision: allocation, caps, fallbacks (plan.h). */
#include "controller/plan.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/explore.h"
#include "pflex/alloc.h"
#include "pflex/error.h"
#include "pflex/objective.h"

static double clock_ms(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double now_ms(void) {
  return clock_ms(CLOCK_MONOTONIC);
}

static bool placeable(const struct ctl_job *j) {
  return j->present && j->complete && j->gpus > 0 && j->max_w >= j->min_w;
}

/* Held at a binding probe cap while its curve has no observation (explore.h). */
static bool exploring(const struct ctl_job *j) {
  return placeable(j) && !j->probe && ctl_explore_active(j);
}

/* Allocated by the optimal strategy on its curve. */
static bool allocatable(const struct ctl_job *j) {
  return placeable(j) && !j->probe && ctl_job_curve(j) && !ctl_explore_active(j);
}

/* Given the equal cut's share while its curve is unknown (jobs.h). */
static bool probing(const struct ctl_job *j) {
  return placeable(j) && j->probe;
}

/* Its caps are decided by this plan (the others' GPUs keep what they hold). */
static bool planned(const struct ctl_job *j) {
  return allocatable(j) || probing(j) || exploring(j);
}

/* What GPUs outside the allocation hold, and the caps they get. */
static double fix_gpus(struct ctl_node *nodes, size_t nnodes, struct ctl_jobset *js,
                       const struct ctl_config *cfg, double unseen_w, double *rise_w) {
  double fixed = 0;
  for (size_t k = 0; k < nnodes; k++) {
    struct ctl_node *nd = &nodes[k];
    memset(nd->cap_w, 0, sizeof nd->cap_w);
    if (!nd->reachable) {
      fixed += ctl_node_bound_w(nd, unseen_w);
      continue;
    }
    for (size_t g = 0; g < nd->ngpus; g++) {
      const struct ctl_gpu_state *gs = &nd->gpu[g];
      struct ctl_job *j = gs->job[0] ? ctl_jobset_find(js, gs->job) : NULL;
      if (j && planned(j)) continue;
      double cap = !j && cfg->unassigned == CTL_UNASSIGNED_MIN ? gs->min_w
                   : !j                                        ? gs->default_w
                   : nd->has_acked && nd->acked_w[g] > 0       ? nd->acked_w[g]
                                                               : gs->limit_w;
      nd->cap_w[g] = cap;
      /* A GPU without a job counts at what it draws, with a 10% margin (at
       * most its cap): idle, it sits far under its least cap, and a job that
       * starts on it is seen by the next round while it loads. */
      double draw = isfinite(gs->power_w) ? gs->power_w : cap;
      fixed += j ? cap : fmin(cap, 1.1 * draw);
      *rise_w += fmax(0.0, cap - draw);
    }
  }
  return fixed;
}

/* The least the caps can hold the cluster to: a GPU of a job at its least
 * limit, a GPU without a job at the lower of its draw and its least limit (a
 * cap does not lower an idle draw), an unreachable node at its bound. */
static double least_total_w(const struct ctl_node *nodes, size_t nnodes, double unseen_w) {
  double least = 0;
  for (size_t k = 0; k < nnodes; k++) {
    const struct ctl_node *nd = &nodes[k];
    if (!nd->reachable) {
      least += ctl_node_bound_w(nd, unseen_w);
      continue;
    }
    for (size_t g = 0; g < nd->ngpus; g++) {
      const struct ctl_gpu_state *gs = &nd->gpu[g];
      double draw = isfinite(gs->power_w) ? gs->power_w : gs->min_w;
      least += gs->job[0] ? gs->min_w : fmin(gs->min_w, draw);
    }
  }
  return least;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Tokens per watt of the median job with a measured throughput (for jobs
 * whose throughput is unknown under the tokens objective). */
static double median_tokens_per_w(const struct ctl_jobset *js) {
  double *v = malloc((js->n ? js->n : 1) * sizeof *v);
  size_t n = 0;
  for (size_t i = 0; v && i < js->n; i++)
    if (allocatable(&js->v[i]) && !js->v[i].relative)
      v[n++] = js->v[i].prior_t_max / js->v[i].prior_p_max;
  double m = 1.0;
  if (n) {
    qsort(v, n, sizeof *v, cmp_double);
    m = v[n / 2];
  }
  free(v);
  return m;
}

static void alloc_job(const struct ctl_job *j, const struct ctl_config *cfg, double tok_per_w,
                      bool floors, struct pflex_alloc_job *a) {
  pflex_alloc_job_init(a);
  a->name = j->id;
  a->curve = ctl_job_curve(j);
  a->curve_digest = ctl_job_curve_digest(j);
  a->gpus = j->gpus;
  a->cap_min_w = j->min_w;
  a->cap_max_w = j->max_w;
  double w = j->weight > 0 ? j->weight : 1.0;
  double scale; /* progress: GPUs / T_max (include/pflex/objective.h) */
  if (cfg->objective == CTL_OBJECTIVE_PROGRESS &&
      pflex_objective_scale(PFLEX_OBJECTIVE_PROGRESS, j->gpus, j->prior_t_max, &scale) == 0)
    a->weight = w * scale;
  else
    a->weight = j->relative ? w * tok_per_w * j->prior_p_max : w;
  /* The curve's throughput at its P_max: a refined curve without
   * observations reports no T_max of its own (pflex_curve_t_max 0). */
  double t_top = pflex_curve_eval(a->curve, pflex_curve_p_max(a->curve));
  if (floors && j->floor_frac > 0) a->min_tput = j->floor_frac * t_top;
}

/* Whether the jobs' floors, each at `scale` of itself, fit in jobs_w (the
 * allocator's own bounds; an equal cut costs no curve but the floors'). */
static int floors_fit(struct pflex_alloc_job *aj, const double *floor, size_t n, double scale,
                      double jobs_w, struct pflex_alloc_result *res) {
  for (size_t i = 0; i < n; i++)
    aj[i].min_tput = scale * floor[i];
  struct pflex_alloc_opts o = {.skip_tput = true, .skip_caps = true};
  int rc = pflex_alloc_run(aj, n, PFLEX_ALLOC_EQUAL, jobs_w, &o, res, NULL);
  return rc == -PFLEX_E_INFEASIBLE ? 0 : rc < 0 ? rc : 1;
}

/* The largest share of every job's floor that fits, to 1/1024 (bisection);
 * 0 when not even the jobs' least powers do. Sets the floors to it. */
static int fitting_floor_scale(struct pflex_alloc_job *aj, size_t n, double jobs_w,
                               struct pflex_alloc_result *res, double *ret_scale) {
  double *floor = malloc(n * sizeof *floor);
  if (!floor) return -ENOMEM;
  for (size_t i = 0; i < n; i++)
    floor[i] = aj[i].min_tput;
  double lo = 0, hi = 1;
  int rc = floors_fit(aj, floor, n, 0, jobs_w, res);
  for (int k = 0; rc == 1 && k < 10; k++) {
    double mid = 0.5 * (lo + hi);
    int fit = floors_fit(aj, floor, n, mid, jobs_w, res);
    if (fit < 0) rc = fit;
    if (fit == 1) lo = mid;
    if (fit == 0) hi = mid;
  }
  for (size_t i = 0; rc >= 0 && i < n; i++)
    aj[i].min_tput = lo * floor[i];
  free(floor);
  *ret_scale = lo;
  return rc < 0 ? rc : 0;
}

/* Runs the allocator, with the hulls of the rounds before (ctl_jobset_alloc_ctx,
 * made at the first call; without memory for it, none: the same answer,
 * bit for bit, at the cost of sampling every curve). When the jobs' floors
 * together do not fit, every floor is scaled down by the same factor, the
 * largest that fits (so the strictest class keeps the most: a 99% floor
 * scaled by 0.99 still holds 98%), and the summary says by how much; with
 * every job at its least when not even the least powers fit. */
static int allocate(struct ctl_jobset *js, struct pflex_alloc_job *aj, size_t n, double jobs_w,
                    struct pflex_alloc_result *res, struct ctl_plan_summary *s) {
  struct pflex_alloc_summary sum;
  s->floor_scale = 1;
  struct pflex_alloc_opts o = {.ctx = ctl_jobset_alloc_ctx(js)};
  int rc = pflex_alloc_run(aj, n, PFLEX_ALLOC_OPTIMAL, jobs_w, &o, res, &sum);
  if (rc == -PFLEX_E_INFEASIBLE) {
    rc = fitting_floor_scale(aj, n, jobs_w, res, &s->floor_scale);
    if (rc == 0) rc = pflex_alloc_run(aj, n, PFLEX_ALLOC_OPTIMAL, jobs_w, &o, res, &sum);
  }
  if (rc == -PFLEX_E_INFEASIBLE) {
    s->infeasible = true;
    s->floor_scale = 0;
    for (size_t i = 0; i < n; i++) {
      res[i].power_w = pflex_curve_p_min(aj[i].curve);
      res[i].tput = pflex_curve_eval(aj[i].curve, res[i].power_w);
    }
    return 0;
  }
  if (rc == 0) s->saturated = sum.total_w >= sum.max_w - 1e-6 * sum.max_w;
  return rc;
}

/* The least limit of a node's GPUs: no fallback goes below it. */
static double node_floor_w(const struct ctl_node *nd) {
  double f = 0;
  for (size_t g = 0; g < nd->ngpus; g++)
    f = fmax(f, nd->gpu[g].min_w);
  return f;
}

/* One probe at a time (explore.h): none running, the job given its whole
 * draw with nothing observed that draws the most is probed from this round. */
static void start_probe(struct ctl_jobset *js) {
  struct ctl_job *best = NULL;
  for (size_t i = 0; i < js->n; i++) {
    struct ctl_job *j = &js->v[i];
    if (ctl_explore_active(j)) return;
    if (allocatable(j) && ctl_explore_wanted(j) && (!best || j->p_max > best->p_max)) best = j;
  }
  if (best) ctl_explore_begin(best);
}

/* Writes the jobs' caps onto their GPUs and each node's fallback: its
 * share (what it was allotted: a job at its full draw keeps an uncapped cap,
 * but was allotted only that draw), spread evenly over its GPUs, the part
 * above their least limit scaled so that the fallbacks of all reachable
 * nodes sum to at most what the target leaves beside the unreachable nodes'
 * bounds (unreach_w), as long as the least limits fit in it. */
static void spread(struct ctl_node *nodes, size_t nnodes, struct ctl_jobset *js, double target_w,
                   double unreach_w, struct ctl_plan_summary *s) {
  double shares = 0, floors = 0;
  for (size_t k = 0; k < nnodes; k++) {
    struct ctl_node *nd = &nodes[k];
    nd->fallback_w = 0;
    if (!nd->reachable) continue;
    for (size_t g = 0; g < nd->ngpus; g++) {
      struct ctl_job *j = nd->gpu[g].job[0] ? ctl_jobset_find(js, nd->gpu[g].job) : NULL;
      bool mine = j && planned(j);
      if (mine) nd->cap_w[g] = j->cap_w;
      s->caps_w += nd->cap_w[g];
      nd->fallback_w += mine ? fmin(j->cap_w, j->alloc_w / j->gpus) : nd->cap_w[g];
    }
    shares += nd->fallback_w;
    floors += node_floor_w(nd) * nd->ngpus;
  }
  double left = fmax(0.0, target_w - unreach_w);
  double scale = shares > left && shares > floors ? fmax(0.0, left - floors) / (shares - floors)
                                                  : 1.0;
  for (size_t k = 0; k < nnodes; k++) {
    struct ctl_node *nd = &nodes[k];
    if (!nd->reachable || !nd->ngpus) continue;
    double floor_w = node_floor_w(nd), per = nd->fallback_w / nd->ngpus;
    nd->fallback_w = floor(floor_w + fmax(0.0, per - floor_w) * scale);
    s->fallback_w += nd->fallback_w * nd->ngpus;
  }
}

/* Jobs being probed get the equal cut's share of the budget left: the ratio
 * of that budget to every placeable job's P_max (theirs: the most their GPUs
 * may draw), less while one that reports nothing yet draws well under its
 * cap (a job loading its weights needs no power it will not draw). Returns
 * the power they take. */
#define SHARE_KEPT 0.05

static double probe_shares(struct ctl_jobset *js, double left_w, double *rise_w) {
  double sum_pmax = 0, taken = 0;
  for (size_t i = 0; i < js->n; i++) {
    const struct ctl_job *j = &js->v[i];
    if (allocatable(j))
      sum_pmax += j->prior_p_max;
    else if (probing(j))
      sum_pmax += j->gpus * j->max_w;
  }
  double ratio = sum_pmax > 0 ? fmin(1.0, fmax(0.0, left_w / sum_pmax)) : 1.0;
  double jump = 0;
  for (size_t i = 0; i < js->n; i++) {
    struct ctl_job *j = &js->v[i];
    if (!probing(j)) continue;
    double share = floor(fmin(fmax(ratio * j->max_w, j->min_w), j->max_w));
    /* A share that moved little keeps the cap in force (counted as it is): a
     * cap that moves every round with the budget never holds the rounds its
     * reading needs (jobs.c, curve_bounds), and the job stays probed. */
    if (j->probe_cap_w > 0 && fabs(share - j->probe_cap_w) <= SHARE_KEPT * j->probe_cap_w)
      share = j->probe_cap_w;
    double cap = share;
    bool pressing = j->power_w >= 0.95 * j->gpus * j->limit_w;
    bool loading = !j->has_tput && !pressing;
    if (loading) cap = fmin(cap, 1.2 * j->power_w / j->gpus);
    j->cap_w = floor(fmin(fmax(cap, j->min_w), j->max_w));
    j->probe_cap_w = j->cap_w == share ? share : 0;
    j->at_top = false;
    j->alloc_w = j->cap_w * j->gpus;
    j->pred_tput = NAN;
    /* A job loading draws far under even its least cap: it counts at its
     * draw (with 10%), and the budget keeps room for the largest rise to
     * its cap that one job can make when it starts training (jobs start one
     * by one; the next round re-plans around it). */
    double held = loading ? fmin(j->alloc_w, 1.1 * j->power_w) : j->alloc_w;
    jump = fmax(jump, j->alloc_w - held);
    if (loading) *rise_w += fmax(0.0, j->alloc_w - j->power_w);
    taken += held;
  }
  return taken + jump;
}

/* Probes: those that have their observation (or ran their time) end and go
 * back to the allocation; the others keep their probe caps and are counted
 * at what the readings show they still draw (explore.h). Returns that. */
static double hold_probes(struct ctl_jobset *js) {
  double held = 0;
  for (size_t i = 0; i < js->n; i++) {
    struct ctl_job *j = &js->v[i];
    if (!ctl_explore_step(j, placeable(j) && !j->probe)) continue;
    j->cap_w = j->explore_cap_w;
    j->alloc_w = ctl_explore_held_w(j);
    j->at_top = false;
    j->pred_tput = NAN;
    held += j->alloc_w;
  }
  return held;
}

/* The cap under which a job draws power_w: the curve's cap for that draw,
 * over the share of a binding cap its GPUs were seen to draw (jobs.h,
 * draw_ratio), rounded down. */
static double binding_cap(const struct ctl_job *j, const struct pflex_curve *c, double power_w) {
  double cap = pflex_curve_cap_for_power(c, power_w, j->gpus, j->min_w, j->max_w);
  if (j->draw_ratio > 0) cap /= j->draw_ratio;
  return floor(fmin(fmax(cap, j->min_w), j->max_w));
}

int ctl_plan(struct ctl_node *nodes, size_t nnodes, struct ctl_jobset *js,
             const struct ctl_config *cfg, double budget_w, double target_w, double unseen_w,
             struct ctl_plan_summary *ret) {
  struct ctl_plan_summary s = {.floor_scale = 1};
  s.fixed_w = fix_gpus(nodes, nnodes, js, cfg, unseen_w, &s.rise_w);
  s.fixed_w += hold_probes(js);
  s.fixed_w += probe_shares(js, budget_w - s.fixed_w, &s.rise_w);
  s.jobs_w = budget_w - s.fixed_w;
  size_t n = 0;
  for (size_t i = 0; i < js->n; i++)
    n += allocatable(&js->v[i]);
  struct pflex_alloc_job *aj = calloc(n ? n : 1, sizeof *aj);
  struct pflex_alloc_result *res = calloc(n ? n : 1, sizeof *res);
  struct ctl_job **map = calloc(n ? n : 1, sizeof *map);
  int rc = aj && res && map ? 0 : -ENOMEM;
  double tok_per_w = rc == 0 ? median_tokens_per_w(js) : 1;
  for (size_t i = 0, k = 0; rc == 0 && i < js->n; i++)
    if (allocatable(&js->v[i])) {
      map[k] = &js->v[i];
      alloc_job(map[k], cfg, tok_per_w, true, &aj[k]);
      k++;
    }
  double t0 = now_ms(), c0 = clock_ms(CLOCK_THREAD_CPUTIME_ID);
  if (rc == 0 && n) rc = allocate(js, aj, n, fmax(s.jobs_w, 0), res, &s);
  s.alloc_ms = now_ms() - t0;
  s.alloc_cpu_ms = clock_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
  for (size_t k = 0; rc == 0 && k < n; k++) {
    struct ctl_job *j = map[k];
    double pmax = pflex_curve_p_max(aj[k].curve);
    j->alloc_w = res[k].power_w;
    j->pred_tput = res[k].tput;
    /* A job given its whole measured uncapped draw gets a cap a little above
     * it (a cap above the natural draw changes nothing), so that a rise of its
     * demand stays bounded; any other job gets the cap of its power. */
    bool at_top = res[k].power_w >= 0.999 * pmax && j->p_max > 0;
    j->at_top = at_top;
    j->cap_w = at_top ? fmin(j->max_w, ceil(1.03 * res[k].power_w / j->gpus))
                      : binding_cap(j, aj[k].curve, res[k].power_w);
    s.pred_tput += isfinite(res[k].tput) ? res[k].tput : 0;
  }
  if (rc == 0) start_probe(js);
  s.jobs = n;
  s.least_w = least_total_w(nodes, nnodes, unseen_w);
  if (target_w < s.least_w) s.infeasible = true;
  if (rc == 0) {
    for (size_t k = 0; k < nnodes; k++)
      if (!nodes[k].reachable) s.caps_w += ctl_node_bound_w(&nodes[k], unseen_w);
    spread(nodes, nnodes, js, target_w, s.caps_w, &s);
  }
  free(aj);
  free(res);
  free(map);
  if (rc == 0) *ret = s;
  return rc;
}
