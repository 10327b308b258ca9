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
                            enum pflex_alloc_strategy st, double budget) {
  struct pflex_alloc_result *res = calloc(n ? n : 1, sizeof *res);
  struct pflex_alloc_summary sum;
  int rc = res ? pflex_alloc_run(aj, n, st, budget, NULL, res, &sum) : -ENOMEM;
  free(res);
  return rc == 0 ? sum.total_tput : NAN;
}

int sim_score_tput(struct sim_score *s, const struct sim_world *w, double t, double idle_w,
                   double total_w) {
  double level;
  if (t < s->held_from || t >= ctl_event_end(&s->ev) || !ctl_event_level(&s->ev, t, &level))
    return 0;
  struct pflex_alloc_job *aj = calloc(w->njobs ? w->njobs : 1, sizeof *aj);
  if (!aj) return -ENOMEM;
  size_t n = 0;
  double ctl = 0, unc = 0;
  for (size_t i = 0; i < w->njobs; i++) {
    const struct sim_job *j = &w->jobs[i];
    if (!j->running) continue;
    pflex_alloc_job_init(&aj[n]);
    aj[n].curve = j->curve;
    aj[n].gpus = j->gpus;
    aj[n].cap_min_w = j->kind->cap_min;
    aj[n].cap_max_w = j->kind->cap_max;
    n++;
    ctl += j->tput_now;
    unc += pflex_curve_t_max(j->curve);
  }
  double budget = level - idle_w, drawn = total_w - idle_w;
  double eq = strategy_tput(aj, n, PFLEX_ALLOC_EQUAL, budget);
  double orc = strategy_tput(aj, n, PFLEX_ALLOC_ORACLE, budget);
  double eq_d = strategy_tput(aj, n, PFLEX_ALLOC_EQUAL, drawn);
  double orc_d = strategy_tput(aj, n, PFLEX_ALLOC_ORACLE, drawn);
  free(aj);
  if (isfinite(eq) && isfinite(orc) && isfinite(eq_d) && isfinite(orc_d)) {
    s->ctl += ctl;
    s->eq += eq;
    s->orc += orc;
    s->eq_d += eq_d;
    s->orc_d += orc_d;
    s->unc += unc;
    s->budget += budget;
    s->drawn += drawn;
    s->held++;
    if (s->trace)
      fprintf(s->trace, "%.3f,%.2f,%.2f,%.2f,%.2f,%.2f,%.1f,%.1f\n", t - s->ev.start, ctl, eq, orc,
              eq_d, orc_d, budget, drawn);
  }
  return 0;
}

void sim_score_result(const struct sim_score *s, struct sim_result *r) {
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
  bool held = s->held > 0;
  r->gap_recovered = held && s->orc > s->eq ? (s->ctl - s->eq) / (s->orc - s->eq) : NAN;
  r->gap_recovered_drawn =
      held && s->orc_d > s->eq_d ? (s->ctl - s->eq_d) / (s->orc_d - s->eq_d) : NAN;
  r->budget_used = held && s->budget > 0 ? s->drawn / s->budget : NAN;
  r->vs_equal = held ? s->ctl / s->eq : NAN;
  r->vs_oracle = held ? s->ctl / s->orc : NAN;
  r->vs_uncapped = held ? s->ctl / s->unc : NAN;
}
