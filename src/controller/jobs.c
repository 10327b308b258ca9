/* The jobs the controller allocates among (jobs.h). */
#include "controller/jobs.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/raises.h"

#define SETTLE_ROUNDS 2 /* a cap (or no cap) holds this long before its reading counts */
#define OBS_EVERY_ROUNDS 10
#define EMA 0.3
/* A cap binds when it is this far under the job's uncapped draw per GPU; the
 * ratio of draw to cap is then the limiter's, not the job's demand. */
#define BINDING 0.97
#define RATIO_MIN 0.9

void ctl_jobset_init(struct ctl_jobset *js) {
  memset(js, 0, sizeof *js);
}

static void job_release(struct ctl_job *j) {
  pflex_refine_free(j->refine);
  pflex_refine_prior_free(j->prior);
  j->refine = NULL;
  j->prior = NULL;
}

void ctl_jobset_release(struct ctl_jobset *js) {
  for (size_t i = 0; i < js->n; i++)
    job_release(&js->v[i]);
  free(js->v);
  free(js->gone);
  pflex_alloc_ctx_free(js->alloc_ctx);
  js->v = NULL;
  js->gone = NULL;
  js->alloc_ctx = NULL;
  js->n = js->cap = js->ngone = js->gone_cap = 0; /* the templates stay: they are the caller's */
}

static int cmp_job(const void *a, const void *b) {
  return strcmp(((const struct ctl_job *)a)->id, ((const struct ctl_job *)b)->id);
}

struct ctl_job *ctl_jobset_find(struct ctl_jobset *js, const char *id) {
  if (!js->n) return NULL;
  struct ctl_job key;
  snprintf(key.id, sizeof key.id, "%s", id);
  return bsearch(&key, js->v, js->n, sizeof *js->v, cmp_job);
}

/* Finds id among the sorted jobs or the ones appended this round (from sorted_n on). */
static struct ctl_job *find_or_add(struct ctl_jobset *js, size_t sorted_n, const char *id) {
  struct ctl_job key;
  snprintf(key.id, sizeof key.id, "%s", id);
  struct ctl_job *j = sorted_n ? bsearch(&key, js->v, sorted_n, sizeof *js->v, cmp_job) : NULL;
  if (j) return j;
  for (size_t i = sorted_n; i < js->n; i++)
    if (strcmp(js->v[i].id, id) == 0) return &js->v[i];
  if (js->n == js->cap) {
    size_t nc = js->cap ? js->cap * 2 : 64;
    void *p = realloc(js->v, nc * sizeof *js->v);
    if (!p) return NULL;
    js->v = p;
    js->cap = nc;
  }
  j = &js->v[js->n++];
  memset(j, 0, sizeof *j);
  snprintf(j->id, sizeof j->id, "%s", id);
  return j;
}

static void reset_round(struct ctl_job *j) {
  j->present = false;
  j->complete = true;
  j->uncapped = true;
  j->gpus = 0;
  j->power_w = 0;
  j->min_w = 0;
  j->max_w = INFINITY;
  j->limit_w = INFINITY;
  j->has_tput = false;
  j->meta = (struct ctl_job_meta){.weight = 0, .min_tput = -1};
  j->telemetry.n = 0;
  j->alloc_w = j->cap_w = j->pred_tput = 0;
}

static void add_gpu(struct ctl_job *j, const struct ctl_gpu_state *g) {
  j->present = true;
  j->gpus++;
  j->power_w += isfinite(g->power_w) ? g->power_w : g->enforced_w;
  j->min_w = fmax(j->min_w, g->min_w);
  j->max_w = fmin(j->max_w, g->max_w);
  j->limit_w = fmin(j->limit_w, g->limit_w);
  if (!(fabs(g->limit_w - g->default_w) <= 0.5)) j->uncapped = false;
}

/* A job on several nodes: each field from the first node that gives it. */
static void add_meta(struct ctl_job *j, const struct ctl_job_meta *m) {
  if (!j->meta.class_name[0])
    snprintf(j->meta.class_name, sizeof j->meta.class_name, "%s", m->class_name);
  if (!(j->meta.weight > 0)) j->meta.weight = m->weight;
  if (j->meta.min_tput < 0) j->meta.min_tput = m->min_tput;
}

static void add_tput(struct ctl_jobset *js, size_t sorted_n, const struct ctl_job_tput *t) {
  struct ctl_job *j = find_or_add(js, sorted_n, t->id);
  if (!j || !j->present) return;
  add_meta(j, &t->meta);
  if (!j->telemetry.n) j->telemetry = t->telemetry;
  if (t->has_tput && (!j->has_tput || t->tput_time > j->tput_time)) {
    j->has_tput = true;
    j->tput = t->tput;
    j->tput_time = t->tput_time;
  }
}

/* Jobs with a GPU on a node that did not answer cannot be allocated this round. */
static void mark_incomplete(struct ctl_jobset *js, size_t sorted_n, const struct ctl_node *nd) {
  for (size_t g = 0; g < nd->ngpus; g++)
    if (nd->gpu[g].job[0]) {
      struct ctl_job *j = find_or_add(js, sorted_n, nd->gpu[g].job);
      if (j) j->complete = false;
    }
}

/* A forgotten job's learnt row is to be deleted. Without memory for the
 * list the row stays: a restarted controller seeds it and forgets it again. */
static void add_gone(struct ctl_jobset *js, const struct ctl_job *j) {
  if (!j->stored) return;
  if (js->ngone == js->gone_cap) {
    size_t nc = js->gone_cap ? js->gone_cap * 2 : 16;
    void *p = realloc(js->gone, nc * sizeof *js->gone);
    if (!p) return;
    js->gone = p;
    js->gone_cap = nc;
  }
  memcpy(js->gone[js->ngone++], j->id, sizeof *js->gone);
}

static void forget(struct ctl_jobset *js, double now, double forget_s) {
  size_t w = 0;
  for (size_t i = 0; i < js->n; i++) {
    struct ctl_job *j = &js->v[i];
    if (j->present || (j->last_seen > 0 && now - j->last_seen < forget_s)) {
      js->v[w++] = *j;
    } else {
      add_gone(js, j);
      job_release(j);
    }
  }
  js->n = w;
}

int ctl_jobset_gather(struct ctl_jobset *js, const struct ctl_node *nodes, size_t n, double now,
                      double forget_s) {
  for (size_t i = 0; i < js->n; i++)
    reset_round(&js->v[i]);
  size_t sorted_n = js->n;
  for (size_t k = 0; k < n; k++) {
    const struct ctl_node *nd = &nodes[k];
    if (!nd->reachable) continue;
    for (size_t g = 0; g < nd->ngpus; g++) {
      if (!nd->gpu[g].job[0]) continue;
      struct ctl_job *j = find_or_add(js, sorted_n, nd->gpu[g].job);
      if (!j) return -ENOMEM;
      if (j >= js->v + sorted_n && !j->present && j->gpus == 0) reset_round(j);
      add_gpu(j, &nd->gpu[g]);
    }
  }
  for (size_t k = 0; k < n; k++) {
    if (nodes[k].reachable)
      for (size_t t = 0; t < nodes[k].njobs; t++)
        add_tput(js, sorted_n, &nodes[k].jobs[t]);
    else if (nodes[k].seen)
      mark_incomplete(js, sorted_n, &nodes[k]);
  }
  for (size_t i = 0; i < js->n; i++)
    if (js->v[i].present) js->v[i].last_seen = now;
  forget(js, now, forget_s);
  if (js->n) qsort(js->v, js->n, sizeof *js->v, cmp_job);
  return 0;
}

/* The uncapped point: an exponential average over settled uncapped rounds
 * in which the job reports its throughput or draws at least its GPUs' least
 * limit. A job that does neither may be loading (its weights, a checkpoint:
 * minutes at idle power on a real cluster), and its draw then is not its
 * P_max: a curve built on it would pin the job at its least power once it
 * trains. Until then it is probed (plan.c: the equal share, held near its
 * draw while it draws well under it). A job that never reports throughput
 * but draws (no StatsD, no scrape) is learnt from its draw, so that its
 * class's floor holds on its prior's shape. */
static void learn_uncapped(struct ctl_job *j) {
  bool drawing = j->power_w >= j->gpus * j->min_w;
  if (!j->uncapped || !(j->has_tput || drawing)) {
    j->rounds_uncapped = 0;
    return;
  }
  if (++j->rounds_uncapped <= SETTLE_ROUNDS) return;
  j->p_max = j->p_max > 0 ? (1 - EMA) * j->p_max + EMA * j->power_w : j->power_w;
  if (j->has_tput) j->t_max = j->t_max > 0 ? (1 - EMA) * j->t_max + EMA * j->tput : j->tput;
}

static void refine_job(const struct ctl_jobset *js, const struct ctl_job *j, double p_max,
                       double t_max, double pfi, bool data, struct pflex_refine_job *rj) {
  memset(rj, 0, sizeof *rj);
  rj->pfi = pfi;
  rj->p_min = j->gpus * j->min_w;
  rj->p_max = p_max;
  rj->t_max = t_max;
  rj->gpus = j->gpus;
  rj->shape = data && js->ntemplates ? PFLEX_REFINE_DATA : PFLEX_REFINE_FAMILY;
  rj->templates = rj->shape == PFLEX_REFINE_DATA ? js->templates : NULL;
  rj->ntemplates = rj->shape == PFLEX_REFINE_DATA ? js->ntemplates : 0;
}

/* A probed job's cap is at its share when the limit held is the share, or
 * as near as the raises pushed go (no raise under ctl_smallest_raise_w is sent:
 * a share cut short by the headroom by less than that stays short, and the
 * job stayed probed until the share moved). */
static bool at_share(const struct ctl_job *j) {
  double tol = ctl_smallest_raise_w(j->probe_cap_w) + 0.5;
  return j->probe_cap_w > 0 && fabs(j->held_cap_w - j->probe_cap_w) <= tol;
}

static void keep_obs(struct ctl_job *j, double w, double t);

/* A new estimate of T_max needs a reading this much nearer the top (in draw)
 * than the one the last came from. */
#define NEARER 1.05

/* T_max of a job never seen uncapped (one that started during an event), read
 * back through the prior's shape from a settled reading: first its throughput
 * at the equal share (probing), then again from every settled reading that
 * draws NEARER more than the one the estimate came from. The shape errs least
 * near the top, where every candidate meets (P_max, T_max): read from 62% of
 * the power, two Qwen2.5-7B jobs got 61,000-66,000 tokens/s against a true
 * 71,500, and since the refinement caps its knots at T_max, a reading near
 * that estimate flattened the curve and the allocation cut the job
 * (docs/controller.md, "Tenth round"). Each estimate comes from a higher
 * draw, so they end. */
static void estimate_t_max(const struct ctl_jobset *js, struct ctl_job *j, double p, double pfi) {
  /* A reading of no throughput (a stalled job: an NCCL hang draws power and
   * trains nothing) says nothing of T_max. */
  bool settled = j->has_tput && j->tput > 0 && j->held_rounds >= SETTLE_ROUNDS && !j->uncapped;
  bool nearer = j->t_est > 0 ? j->power_w > NEARER * j->t_est_w : at_share(j);
  if (!settled || !nearer) return;
  struct pflex_refine_job rj;
  refine_job(js, j, p, 1.0, pfi, true, &rj);
  struct pflex_curve *c;
  if (pflex_refine_predicted_curve(&rj, &c) < 0) return;
  double rel = pflex_curve_eval(c, j->power_w);
  pflex_curve_free(c);
  if (!(rel > 0)) return;
  j->t_est = j->tput / rel;
  j->t_est_w = j->power_w;
  /* The first estimate's reading is a point of the curve in tokens/s too, and
   * the job's first below its top: kept, the new curve starts with it. Until
   * now the job ran on a relative curve, whose observations are shares and
   * are not kept; a later estimate's reading was kept when it was observed. */
  if (j->relative) keep_obs(j, j->power_w, j->tput);
}

/* The P_max and T_max to build a curve on: measured, else the most the GPUs
 * may draw and T_max estimated from the job's readings (estimate_t_max);
 * until the first estimate, a relative curve (T_max 1). An estimate moves
 * only on a reading nearer the top: the refinement fits the curve through
 * what the job's caps do, and a new prior every round would throw that
 * away (a new one keeps its observations: ensure_curve). */
static void curve_bounds(const struct ctl_jobset *js, struct ctl_job *j, double pfi, double *ret_p,
                         double *ret_t) {
  double p = j->p_max > 0 ? j->p_max : j->gpus * j->max_w;
  p = fmax(p, 1.02 * j->gpus * j->min_w);
  *ret_p = p;
  if (!(j->t_max > 0)) estimate_t_max(js, j, p, pfi);
  *ret_t = j->t_max > 0 ? j->t_max : j->t_est > 0 ? j->t_est : 1.0;
}

static bool needs_prior(const struct ctl_job *j, double p, double t, double pfi) {
  return !j->prior || fabs(p - j->prior_p_max) > 0.03 * j->prior_p_max ||
         fabs(t - j->prior_t_max) > 0.03 * j->prior_t_max || pfi != j->prior_pfi;
}

/* The model's prediction from the job's telemetry, as one uncapped run of
 * live telemetry (so that derived features such as dram_copy are computed
 * as for a runs file). False when a feature is missing: the prior then. */
static bool predict_pfi(const struct pflex_model *m, const struct ctl_job *j, double *ret) {
  struct pflex_runset set;
  pflex_runset_init(&set);
  struct pflex_run run = {.group = (char *)j->id, .gpu = "", .gpus = j->gpus,
                          .cap_w = j->max_w, .power_w = j->power_w, .tput = 1};
  int rc = pflex_runset_append(&set, &run);
  for (size_t k = 0; rc == 0 && k < j->telemetry.n; k++) {
    char v[32];
    snprintf(v, sizeof v, "%.17g", j->telemetry.value[k]);
    rc = pflex_runset_set_extra(&set, 0, j->telemetry.name[k], v);
  }
  bool was_prior = true;
  if (rc == 0) rc = pflex_model_predict_run(m, &set, 0, true, ret, &was_prior, NULL);
  pflex_runset_release(&set);
  return rc == 0 && !was_prior && isfinite(*ret);
}

/* The PFI a job's prior is built at: the model's prediction from the job's
 * telemetry (made once, when the model's features are reported), else the
 * model's population prior, else the configured prior_pfi. */
static double job_pfi(const struct ctl_jobset *js, struct ctl_job *j, double prior_pfi) {
  const struct pflex_model *m = js->model;
  if (j->model_pfi > 0 || !m) return j->model_pfi > 0 ? j->model_pfi : prior_pfi;
  double pfi;
  if (j->telemetry.n && predict_pfi(m, j, &pfi)) {
    j->model_pfi = fmin(fmax(pfi, 0.6), 6.0); /* the refinement's candidate range */
    return j->model_pfi;
  }
  double prior = pflex_model_prior(m, PFLEX_ARCH_UNKNOWN, PFLEX_TASK_UNKNOWN);
  return isfinite(prior) && prior > 0 ? fmin(fmax(prior, 0.6), 6.0) : prior_pfi;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Remembers an observation for the next refinement (ensure_curve). */
static void keep_obs(struct ctl_job *j, double w, double t) {
  if (j->nkept == CTL_JOB_KEPT_OBS) {
    memmove(j->kept_w, j->kept_w + 1, (CTL_JOB_KEPT_OBS - 1) * sizeof *j->kept_w);
    memmove(j->kept_t, j->kept_t + 1, (CTL_JOB_KEPT_OBS - 1) * sizeof *j->kept_t);
    j->nkept--;
  }
  j->kept_w[j->nkept] = w;
  j->kept_t[j->nkept++] = t;
}

/* A new refinement starts with the kept observations (in tokens/s on both
 * curves; a relative curve's are not kept) up to its P_max; else with none. */
static void replay_kept(struct ctl_job *j, bool keep, double p_max) {
  size_t n = keep ? j->nkept : 0;
  j->nkept = 0;
  for (size_t k = 0; k < n; k++)
    if (j->kept_w[k] <= p_max && pflex_refine_observe(j->refine, j->kept_w[k], j->kept_t[k]) == 0) {
      keep_obs(j, j->kept_w[k], j->kept_t[k]);
      j->observations++;
    }
}

/* A template-shaped prior costs milliseconds (PFLEX_REFINE_NPFI template
 * constructions): a round builds them for SHAPE_SHARE of its period at most,
 * and a job waiting its turn runs on the family (cheap) meanwhile. */
#define SHAPE_SHARE 0.1

static int ensure_curve(struct ctl_jobset *js, struct ctl_job *j, double prior_pfi) {
  double p, t, pfi = job_pfi(js, j, prior_pfi);
  bool data = js->ntemplates && js->shape_budget_ms > 0;
  curve_bounds(js, j, pfi, &p, &t);
  if (!needs_prior(j, p, t, pfi) && !(data && !j->data_shaped)) return 0;
  double t0 = now_ms();
  struct pflex_refine_job rj;
  refine_job(js, j, p, t, pfi, data, &rj);
  struct pflex_refine_prior *prior;
  struct pflex_refine *r;
  int rc = pflex_refine_prior_new(&rj, &prior);
  if (rc < 0) return rc;
  rc = pflex_refine_new(prior, NULL, &r);
  if (rc < 0) {
    pflex_refine_prior_free(prior);
    return rc;
  }
  /* Observations carry over to a curve with a T_max; the kept ones are all
   * rates (a relative curve's, T_max 1, are shares and never kept; the first
   * estimate keeps the reading it came from: estimate_t_max). */
  bool keep = j->refine && (j->t_max > 0 || j->t_est > 0);
  job_release(j);
  j->prior = prior;
  j->refine = r;
  j->prior_p_max = p;
  j->prior_t_max = t;
  j->prior_pfi = pfi;
  j->data_shaped = rj.shape == PFLEX_REFINE_DATA;
  if (j->data_shaped) js->shape_budget_ms -= now_ms() - t0;
  j->relative = !(j->t_max > 0) && !(j->t_est > 0);
  j->observations = 0;
  replay_kept(j, keep, p);
  return 0;
}

/* Every cap that held is a measurement of the curve. */
static bool observe(struct ctl_job *j) {
  if (fabs(j->limit_w - j->held_cap_w) <= 0.5) {
    j->held_rounds++;
  } else {
    j->held_cap_w = j->limit_w;
    j->held_rounds = 0;
  }
  j->rounds_since_obs++;
  if (j->uncapped || !j->refine || !j->has_tput || j->held_rounds < SETTLE_ROUNDS ||
      j->tput_time <= j->last_obs_time)
    return false;
  bool moved = fabs(j->held_cap_w - j->last_obs_cap) > 0.01 * j->held_cap_w;
  if (!moved && j->rounds_since_obs < OBS_EVERY_ROUNDS) return false;
  if (pflex_refine_observe(j->refine, j->power_w, j->tput) < 0) return false;
  if (!j->relative) keep_obs(j, j->power_w, j->tput);
  j->last_obs_time = j->tput_time;
  j->last_obs_cap = j->held_cap_w;
  j->rounds_since_obs = 0;
  j->observations++;
  return true;
}

/* The draw under a binding cap that held (a reading that predates the cap,
 * or one of a cap above the job's demand, says nothing about the limiter). */
static void learn_draw_ratio(struct ctl_job *j) {
  bool binding = !j->uncapped && j->p_max > 0 && j->held_rounds >= SETTLE_ROUNDS &&
                 isfinite(j->limit_w) && j->gpus * j->limit_w < BINDING * j->p_max;
  if (!binding) return;
  double r = j->power_w / (j->gpus * j->limit_w);
  if (!(r >= RATIO_MIN && r <= 1.0)) return; /* loading, stalled, or not yet under the cap */
  j->draw_ratio = j->draw_ratio > 0 ? (1 - EMA) * j->draw_ratio + EMA * r : r;
}

void ctl_job_resolve_class(struct ctl_job *j, const struct ctl_config *cfg) {
  j->cls = j->meta.class_name[0] ? ctl_config_class_named(cfg, j->meta.class_name) : NULL;
  if (!j->cls) j->cls = ctl_config_class_for(cfg, j->id);
  j->weight = j->meta.weight > 0 ? j->meta.weight : j->cls ? j->cls->weight : 1.0;
  double cls_floor = j->cls ? j->cls->floor_pct / 100.0 : 0;
  j->floor_frac = fmax(cls_floor, j->meta.min_tput);
}

size_t ctl_jobset_learn(struct ctl_jobset *js, const struct ctl_config *cfg) {
  size_t obs = 0;
  js->shape_budget_ms = SHAPE_SHARE * cfg->round_s * 1e3;
  for (size_t i = 0; i < js->n; i++) {
    struct ctl_job *j = &js->v[i];
    if (!j->present || !j->complete || j->gpus == 0) continue;
    learn_uncapped(j);
    obs += observe(j);
    learn_draw_ratio(j);
    (void)ensure_curve(js, j, cfg->prior_pfi); /* without a curve the job keeps its floor */
    j->probe = !(j->p_max > 0) && !(j->t_est > 0);
    ctl_job_resolve_class(j, cfg);
  }
  /* The allocator's context, sized for the jobs now, before a round needs it. */
  struct pflex_alloc_ctx *ctx = ctl_jobset_alloc_ctx(js);
  if (ctx) (void)pflex_alloc_ctx_reserve(ctx, js->n);
  return obs;
}

struct pflex_alloc_ctx *ctl_jobset_alloc_ctx(struct ctl_jobset *js) {
  if (!js->alloc_ctx && pflex_alloc_ctx_new(&js->alloc_ctx) < 0) js->alloc_ctx = NULL;
  return js->alloc_ctx;
}

/* What of the raises pushed last round the readings do not show yet (jobs.h). */
double ctl_jobset_raises_in_flight(struct ctl_jobset *js) {
  double w = 0;
  for (size_t i = 0; i < js->n; i++) {
    struct ctl_job *j = &js->v[i];
    double pending = j->raised_w + j->raised_prev_w;
    if (!(pending > 0)) continue;
    double ratio = j->draw_ratio > 0 ? j->draw_ratio : 1.0;
    bool read = j->present && j->complete && isfinite(j->limit_w);
    double unseen = read ? fmax(0.0, j->gpus * j->limit_w * ratio - j->power_w) : pending;
    w += fmin(pending, unseen);
    bool binds = read && j->p_max > 0 && j->gpus * j->limit_w < BINDING * j->p_max;
    j->raised_prev_w = binds ? fmin(j->raised_w, unseen) : 0;
    j->raised_w = 0;
  }
  return w;
}

const struct pflex_curve *ctl_job_curve(const struct ctl_job *j) {
  return j->refine ? pflex_refine_curve(j->refine) : NULL;
}

uint64_t ctl_job_curve_digest(const struct ctl_job *j) {
  return j->refine ? pflex_refine_digest(j->refine) : 0;
}

double ctl_job_confidence(const struct ctl_job *j) {
  return j->refine ? pflex_refine_confidence(j->refine) : 0;
}

/* The job's learnt values as the store keeps them; false: nothing learnt. */
static bool learnt_values(const struct ctl_job *j, double v[5]) {
  v[0] = j->p_max;
  v[1] = j->t_max;
  v[2] = j->t_est;
  v[3] = j->draw_ratio;
  v[4] = j->t_est_w;
  return j->p_max > 0 || j->t_est > 0;
}

size_t ctl_jobset_learnt(const struct ctl_jobset *js, struct ctl_learnt_row *v, size_t max) {
  size_t n = 0;
  for (size_t i = 0; i < js->n && n < max; i++) {
    const struct ctl_job *j = &js->v[i];
    double d[5];
    if (!learnt_values(j, d) || (j->stored && memcmp(d, j->stored_v, sizeof d) == 0)) continue;
    struct ctl_learnt_row *r = &v[n++];
    snprintf(r->job, sizeof r->job, "%s", j->id);
    r->p_max = d[0];
    r->t_max = d[1];
    r->t_est = d[2];
    r->draw_ratio = d[3];
    r->t_est_w = d[4];
  }
  return n;
}

void ctl_jobset_learnt_saved(struct ctl_jobset *js) {
  for (size_t i = 0; i < js->n; i++) {
    struct ctl_job *j = &js->v[i];
    if (learnt_values(j, j->stored_v)) j->stored = true;
  }
  js->ngone = 0;
}

int ctl_jobset_seed(struct ctl_jobset *js, const struct ctl_learnt_row *v, size_t n, double now) {
  size_t sorted_n = js->n;
  for (size_t i = 0; i < n; i++) {
    struct ctl_job *j = find_or_add(js, sorted_n, v[i].job);
    if (!j) return -ENOMEM;
    reset_round(j);
    j->last_seen = now;
    j->p_max = v[i].p_max > 0 ? v[i].p_max : 0;
    j->t_max = v[i].t_max > 0 ? v[i].t_max : 0;
    j->t_est = v[i].t_est > 0 ? v[i].t_est : 0;
    j->draw_ratio = v[i].draw_ratio >= RATIO_MIN && v[i].draw_ratio <= 1 ? v[i].draw_ratio : 0;
    j->t_est_w = j->t_est > 0 && v[i].t_est_w > 0 ? v[i].t_est_w : 0;
    (void)learnt_values(j, j->stored_v);
    j->stored = true; /* the store has its row */
  }
  if (js->n) qsort(js->v, js->n, sizeof *js->v, cmp_job);
  return 0;
}
