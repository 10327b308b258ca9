/* Scoring a simulated event (sim_score.h). */
#include "controller/sim_score.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pflex/alloc.h"

void sim_score_init(struct sim_score *s) {
  memset(s, 0, sizeof *s);
}

void sim_score_release(struct sim_score *s) {
  free(s->t);
  free(s->p);
  free(s->target);
  free(s->held_v);
  free(s->kinds);
  free(s->gpus);
  free(s->jobs);
  memset(s, 0, sizeof *s);
}

int sim_score_power(struct sim_score *s, double t, double reported_w) {
  if (t < s->ev.start || t >= ctl_event_end(&s->ev)) return 0;
  if (s->n == s->cap) {
    size_t nc = s->cap ? 2 * s->cap : 1024;
    double *a = realloc(s->t, nc * sizeof *a), *b = a ? realloc(s->p, nc * sizeof *b) : NULL,
           *c = b ? realloc(s->target, nc * sizeof *c) : NULL;
    if (a) s->t = a;
    if (b) s->p = b;
    if (!c) return -ENOMEM;
    s->target = c;
    s->cap = nc;
  }
  s->t[s->n] = t;
  s->p[s->n] = reported_w;
  s->target[s->n] = NAN; /* known once the controller has taken the baseline */
  s->n++;
  return 0;
}

/* The level of every sample, now that the event's baseline is known. */
static void levels(const struct sim_score *s) {
  for (size_t i = 0; i < s->n; i++) {
    double level;
    s->target[i] = ctl_event_level(&s->ev, s->t[i], &level) ? level : NAN;
  }
}

/* Total throughput of a strategy on the true curves at budget; NAN if infeasible. */
static double strategy_tput(const struct pflex_alloc_job *aj, size_t n,
                            enum pflex_alloc_strategy st, double budget,
                            struct pflex_alloc_ctx *ctx, struct pflex_alloc_result *res) {
  struct pflex_alloc_summary sum;
  struct pflex_alloc_opts o = {.ctx = ctx};
  int rc = pflex_alloc_run(aj, n, st, budget, &o, res, &sum);
  return rc == 0 ? sum.total_tput : NAN;
}

int sim_score_tput(struct sim_score *s, const struct sim_world *w, double t, double idle_w,
                   double total_w) {
  double level;
  if (t < s->held_from || t >= ctl_event_end(&s->ev) || !ctl_event_level(&s->ev, t, &level))
    return 0;
  if (s->held == s->held_cap) {
    size_t nc = s->held_cap ? 2 * s->held_cap : 256;
    void *p = realloc(s->held_v, nc * sizeof *s->held_v);
    if (!p) return -ENOMEM;
    s->held_v = p;
    s->held_cap = nc;
  }
  struct sim_held h = {.t = t, .budget = level - idle_w, .drawn = total_w - idle_w,
                       .first = s->nkinds};
  for (size_t i = 0; i < w->njobs; i++) {
    const struct sim_job *j = &w->jobs[i];
    if (!j->running) continue;
    if (s->nkinds == s->kinds_cap) {
      size_t nc = s->kinds_cap ? 2 * s->kinds_cap : 4096;
      const struct sim_kind **a = realloc(s->kinds, nc * sizeof *a);
      if (a) s->kinds = a;
      int *b = a ? realloc(s->gpus, nc * sizeof *b) : NULL;
      if (b) s->gpus = b;
      struct sim_held_job *c = b ? realloc(s->jobs, nc * sizeof *c) : NULL;
      if (!c) return -ENOMEM;
      s->jobs = c;
      s->kinds_cap = nc;
    }
    struct sim_held_job *hj = &s->jobs[s->nkinds];
    snprintf(hj->id, sizeof hj->id, "%s", j->id);
    hj->limit_w = sim_job_limit_w(w, j, &hj->drawn_w);
    hj->tput = j->tput_now;
    s->kinds[s->nkinds] = j->kind;
    s->gpus[s->nkinds++] = j->gpus;
    h.ctl += j->tput_now;
    h.unc += pflex_curve_t_max(j->curve);
  }
  h.n = s->nkinds - h.first;
  s->held_v[s->held++] = h;
  return 0;
}

/* The true curves of the (kind, size) pairs the held seconds saw, built once. */
struct curve_cache {
  const struct sim_kind *kind[256];
  int gpus[256];
  struct pflex_curve *curve[256];
  size_t n;
};

static const struct pflex_curve *cached_curve(struct curve_cache *c, const struct sim_kind *k,
                                              int gpus) {
  for (size_t i = 0; i < c->n; i++)
    if (c->kind[i] == k && c->gpus[i] == gpus) return c->curve[i];
  if (c->n == 256 || sim_kind_curve(k, gpus, &c->curve[c->n]) < 0) return NULL;
  c->kind[c->n] = k;
  c->gpus[c->n] = gpus;
  return c->curve[c->n++];
}

struct sums {
  double ctl, eq, orc, eq_d, orc_d, unc, budget, drawn;
  size_t held;
};

/* What scoring the held seconds reuses: the jobs, their results, and the
 * allocator's context, which keeps each true curve's hull and majorant from
 * one second to the next (the same few curves every second: the oracle at
 * 1,000 jobs costs a fraction of a cold call). */
struct scratch {
  struct pflex_alloc_job *aj;
  struct pflex_alloc_result *res;
  struct pflex_alloc_ctx *ctx;
  struct curve_cache *cc;
};

/* The jobs of one held second: the controller's, the equal cut's and the
 * oracle's power and throughput for each (jobs_trace). */
static void trace_jobs(const struct sim_score *s, const struct sim_held *h,
                       const struct pflex_alloc_job *aj, struct scratch *x) {
  struct pflex_alloc_result *eq = calloc(h->n ? h->n : 1, sizeof *eq);
  if (!eq || !isfinite(strategy_tput(aj, h->n, PFLEX_ALLOC_EQUAL, h->budget, x->ctx, eq)) ||
      !isfinite(strategy_tput(aj, h->n, PFLEX_ALLOC_ORACLE, h->budget, x->ctx, x->res))) {
    free(eq);
    return;
  }
  for (size_t k = 0; k < h->n; k++) {
    const struct sim_held_job *j = &s->jobs[h->first + k];
    fprintf(s->jobs_trace, "%.3f,%s,%s,%d,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f\n",
            h->t - s->ev.start, j->id, s->kinds[h->first + k]->group, aj[k].gpus, j->limit_w,
            j->drawn_w, j->tput, x->res[k].power_w, x->res[k].tput, eq[k].power_w, eq[k].tput,
            pflex_curve_t_max(aj[k].curve));
  }
  free(eq);
}

/* One held second: equal and oracle at the jobs' budget and at what they drew. */
static int score_second(const struct sim_score *s, const struct sim_held *h, struct scratch *x,
                        struct sums *u) {
  struct pflex_alloc_job *aj = x->aj;
  for (size_t k = 0; k < h->n; k++) {
    const struct sim_kind *kd = s->kinds[h->first + k];
    pflex_alloc_job_init(&aj[k]);
    aj[k].curve = cached_curve(x->cc, kd, s->gpus[h->first + k]);
    if (!aj[k].curve) return -ENOMEM;
    aj[k].gpus = s->gpus[h->first + k];
    aj[k].cap_min_w = kd->cap_min;
    aj[k].cap_max_w = kd->cap_max;
  }
  double eq = strategy_tput(aj, h->n, PFLEX_ALLOC_EQUAL, h->budget, x->ctx, x->res);
  double orc = strategy_tput(aj, h->n, PFLEX_ALLOC_ORACLE, h->budget, x->ctx, x->res);
  double eq_d = strategy_tput(aj, h->n, PFLEX_ALLOC_EQUAL, h->drawn, x->ctx, x->res);
  double orc_d = strategy_tput(aj, h->n, PFLEX_ALLOC_ORACLE, h->drawn, x->ctx, x->res);
  if (!(isfinite(eq) && isfinite(orc) && isfinite(eq_d) && isfinite(orc_d))) return 0;
  u->ctl += h->ctl;
  u->eq += eq;
  u->orc += orc;
  u->eq_d += eq_d;
  u->orc_d += orc_d;
  u->unc += h->unc;
  u->budget += h->budget;
  u->drawn += h->drawn;
  u->held++;
  if (s->jobs_trace) trace_jobs(s, h, aj, x);
  if (s->trace)
    fprintf(s->trace, "%.3f,%.2f,%.2f,%.2f,%.2f,%.2f,%.1f,%.1f\n", h->t - s->ev.start, h->ctl, eq,
            orc, eq_d, orc_d, h->budget, h->drawn);
  return 0;
}

static int score_held(const struct sim_score *s, struct sums *u) {
  memset(u, 0, sizeof *u);
  size_t most = 1;
  for (size_t i = 0; i < s->held; i++)
    if (s->held_v[i].n > most) most = s->held_v[i].n;
  struct scratch x = {calloc(most, sizeof *x.aj), calloc(most, sizeof *x.res), NULL,
                      calloc(1, sizeof *x.cc)};
  int rc = x.aj && x.res && x.cc ? pflex_alloc_ctx_new(&x.ctx) : -ENOMEM;
  for (size_t i = 0; rc == 0 && i < s->held; i++)
    rc = score_second(s, &s->held_v[i], &x, u);
  for (size_t i = 0; x.cc && i < x.cc->n; i++)
    pflex_curve_free(x.cc->curve[i]);
  pflex_alloc_ctx_free(x.ctx);
  free(x.cc);
  free(x.res);
  free(x.aj);
  return rc;
}

int sim_score_result(struct sim_score *s, struct sim_result *r) {
  memset(r, 0, sizeof *r);
  levels(s);
  r->samples = s->n;
  r->compliance_s = NAN;
  size_t from = s->n;
  for (size_t i = 0; i < s->n; i++) { /* first sample that starts a settled compliant stretch */
    size_t k = i;
    while (k < s->n && s->p[k] <= s->target[k] * 1.01 && s->t[k] - s->t[i] < SIM_SETTLE_S)
      k++;
    bool settled =
        k < s->n ? s->t[k] - s->t[i] >= SIM_SETTLE_S : s->p[s->n - 1] <= s->target[s->n - 1] * 1.01;
    if (s->p[i] <= s->target[i] * 1.01 && settled) {
      from = i;
      break;
    }
  }
  if (from < s->n) r->compliance_s = s->t[from] - s->ev.start;
  double worst = -INFINITY;
  for (size_t i = from; i < s->n; i++) {
    r->overshoot_samples += s->p[i] > s->target[i] * 1.01;
    worst = fmax(worst, 100 * (s->p[i] - s->target[i]) / s->target[i]);
  }
  r->max_over_pct = from < s->n ? worst : NAN;
  struct sums u;
  int rc = score_held(s, &u);
  bool held = rc == 0 && u.held > 0;
  r->gap_recovered = held && u.orc > u.eq ? (u.ctl - u.eq) / (u.orc - u.eq) : NAN;
  r->gap_undefined = !held          ? "no held second was scored"
                     : u.orc > u.eq ? NULL
                                    : "the oracle is no better than an equal cut here (one job, or "
                                      "jobs alike): there is no gap to recover";
  r->gap_recovered_drawn = held && u.orc_d > u.eq_d ? (u.ctl - u.eq_d) / (u.orc_d - u.eq_d) : NAN;
  r->budget_used = held && u.budget > 0 ? u.drawn / u.budget : NAN;
  r->vs_equal = held ? u.ctl / u.eq : NAN;
  r->vs_oracle = held ? u.ctl / u.orc : NAN;
  r->vs_uncapped = held ? u.ctl / u.unc : NAN;
  return rc;
}
