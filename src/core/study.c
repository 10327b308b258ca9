/* The allocation study engine (include/pflex/study.h): sample workloads from
 * sweep groups, allocate under each cut with each strategy, score on the true
 * curves, aggregate; optionally the simulated closed loop, whose curve
 * updates are the public refinement module's (include/pflex/refine.h). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "pflex/error.h"
#include "pflex/jobs.h"
#include "pflex/parallel.h"
#include "pflex/refine.h"
#include "pflex/shrink.h"
#include "pflex/study.h"
#include "study_dither.h"
#include "study_internal.h"

static const double default_cuts[] = {0, 0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40};

void pflex_study_opts_init(struct pflex_study_opts *o) {
  memset(o, 0, sizeof *o);
  o->workloads = 500;
  o->jobs = 100;
  o->cuts = default_cuts;
  o->ncuts = sizeof default_cuts / sizeof default_cuts[0];
  o->scenarios = (1u << PFLEX_SCENARIO_N) - 1;
  o->strategies = (1u << PFLEX_ALLOC_NSTRATEGIES) - 1;
  o->noise = 0.005;
  o->prior_sd = 0.3;
  o->seed = 1;
  o->knots = 17;
  o->shape = PFLEX_STUDY_SHAPE_DATA;
  o->bandwidth = 0.25;
  o->objective = PFLEX_OBJECTIVE_TOKENS;
  o->shrink = 0;
  o->dither = 0;
  o->threads = 1;
}

const char *pflex_study_scenario_name(enum pflex_study_scenario s) {
  static const char *const n[] = {"random", "production"};
  return (unsigned)s < PFLEX_SCENARIO_N ? n[s] : "unknown";
}

const char *pflex_study_pred_name(enum pflex_study_pred p) {
  static const char *const n[] = {"true", "in-sample", "loo", "loco", "prior", "unseen"};
  return (unsigned)p < PFLEX_PRED_N ? n[p] : "unknown";
}

int pflex_study_groups_from_jobs(const struct pflex_jobset *set,
                                 struct pflex_study_group **ret_groups, size_t *ret_n) {
  struct pflex_study_group *g = calloc(set->n ? set->n : 1, sizeof *g);
  if (!g) return -ENOMEM;
  size_t n = 0;
  for (size_t i = 0; i < set->n; i++) {
    const struct pflex_alloc_job *j = &set->jobs[i];
    if (!j->curve) continue;
    g[n++] = (struct pflex_study_group){.name = j->name,
                                        .gpu = set->gpu ? set->gpu[i] : NULL,
                                        .curve = j->curve,
                                        .gpus = j->gpus,
                                        .arch = j->arch,
                                        .task = j->task,
                                        .dram_copy = j->dram_copy};
  }
  if (n == 0) {
    free(g);
    return -PFLEX_E_NOPOINTS;
  }
  *ret_groups = g;
  *ret_n = n;
  return 0;
}

const struct pflex_study_result *pflex_study_find(const struct pflex_study_result *r, size_t n,
                                                  enum pflex_study_scenario sc,
                                                  enum pflex_alloc_strategy st,
                                                  enum pflex_study_pred pred, unsigned round,
                                                  double cut) {
  for (size_t i = 0; i < n; i++)
    if (r[i].scenario == sc && r[i].strategy == st && r[i].prediction == pred &&
        r[i].round == round && fabs(r[i].cut - cut) < 1e-9)
      return &r[i];
  return NULL;
}

/* ---- the study --------------------------------------------------------------- */

/* A line's sums over the workloads it counted, per objective: its value, the
 * equal cut's and the oracle's (the oracle of that objective). */
struct acc {
  double v[PFLEX_OBJECTIVE_N], eq[PFLEX_OBJECTIVE_N], orc[PFLEX_OBJECTIVE_N];
  size_t count, above, worse[PFLEX_OBJECTIVE_N];
};

/* One group's templates while its predicted curves are built: set k's
 * candidates (tmpl, nt; tj: their groups, for the study's own), read on the
 * group's grid once (table, of the candidate list `from`: NULL for the
 * study's own groups, else the set's list) and which of them shape it. */
struct shaping {
  const struct pflex_curve **tmpl;
  size_t *tj, nt, nuse;
  unsigned char *use;
  const void *from;
  struct pflex_curve_templates *table;
};


static void study_release(struct study *s) {
  for (size_t i = 0; i < s->np * s->ng; i++) {
    if (s->own) pflex_curve_free(s->own[i]);
    if (s->prior) pflex_refine_prior_free(s->prior[i]);
  }
  for (unsigned t = 0; s->shaping && t < s->threads; t++) {
    free(s->shaping[t].tmpl);
    free(s->shaping[t].tj);
    free(s->shaping[t].use);
  }
  free(s->shaping);
  free(s->built);
  free(s->pcurve);
  free(s->own);
  free(s->prior);
  free(s->pt);
  free(s->ft);
  free(s->oscale);
  free(s->fac);
  free(s->ratio);
  free(s->spread);
  free(s->zq);
  free(s->lines);
}


/* Set k's candidate templates, before its folds exclude any: past
 * STUDY_MAX_TEMPLATES candidates, every k-th (a systematic sample across
 * the file) so that the shapes cost linear time in groups, not quadratic;
 * up to that many all are used, as always. */
static void set_templates(const struct study *s, size_t k, struct shaping *sh) {
  const struct pflex_study_predset *ps = &s->preds[k];
  size_t nall = ps->templates ? ps->ntemplates : s->ng;
  size_t stride =
      nall > STUDY_MAX_TEMPLATES ? (nall + STUDY_MAX_TEMPLATES - 1) / STUDY_MAX_TEMPLATES : 1;
  sh->nt = 0;
  for (size_t j = 0; j < nall; j += stride) {
    sh->tj[sh->nt] = j;
    sh->tmpl[sh->nt++] = ps->templates ? ps->templates[j] : s->g[j].curve;
  }
}

/* Which of the candidates shape group gi under set k: for the study's own
 * groups, those outside gi's fold. */
static void set_use(const struct study *s, size_t k, size_t gi, struct shaping *sh) {
  const struct pflex_study_predset *ps = &s->preds[k];
  sh->nuse = 0;
  for (size_t t = 0; t < sh->nt; t++) {
    sh->use[t] = ps->templates || !ps->fold || ps->fold[sh->tj[t]] != ps->fold[gi];
    sh->nuse += sh->use[t];
  }
}

/* The refinement module's view of group gi under prediction set k: its
 * bounds, its predicted PFI and its templates (sh), or none where its
 * folds leave none. */
static struct pflex_refine_job refine_job(const struct study *s, size_t k, size_t gi,
                                          const struct shaping *sh) {
  const struct pflex_study_predset *ps = &s->preds[k];
  const struct pflex_study_group *g = &s->g[gi];
  bool data = s->o->shape != PFLEX_STUDY_SHAPE_FAMILY && sh->nuse;
  return (struct pflex_refine_job){.pfi = ps->pfi[gi],
                                   .p_min = pflex_curve_p_min(g->curve),
                                   .p_max = pflex_curve_p_max(g->curve),
                                   .t_max = pflex_curve_t_max(g->curve),
                                   .gpus = g->gpus,
                                   .gpu = g->gpu,
                                   .shape = s->o->shape == PFLEX_STUDY_SHAPE_FAMILY
                                                ? PFLEX_REFINE_FAMILY
                                                : PFLEX_REFINE_DATA,
                                   .templates = data ? sh->tmpl : NULL,
                                   .ntemplates = data ? sh->nt : 0,
                                   .table = data ? sh->table : NULL,
                                   .use = sh->use,
                                   .bandwidth = s->o->bandwidth};
}

/* Groups by task, and whether every group knows its DRAM copy share. */
static int study_groups(struct study *s) {
  s->pt = calloc(s->ng, sizeof *s->pt);
  s->ft = calloc(s->ng, sizeof *s->ft);
  s->oscale = calloc(PFLEX_OBJECTIVE_N * s->ng, sizeof *s->oscale);
  if (!s->pt || !s->ft || !s->oscale) return -ENOMEM;
  s->have_dram = true;
  for (size_t i = 0; i < s->ng; i++) {
    const struct pflex_study_group *g = &s->g[i];
    if (!g->curve || g->gpus <= 0) return -EINVAL;
    for (int ob = 0; ob < PFLEX_OBJECTIVE_N; ob++)
      if (pflex_objective_scale((enum pflex_objective)ob, g->gpus, pflex_curve_t_max(g->curve),
                                &s->oscale[ob * s->ng + i]))
        return -EINVAL;
    if (g->task == PFLEX_TASK_PT) s->pt[s->npt++] = i;
    if (g->task == PFLEX_TASK_FT) s->ft[s->nft++] = i;
    if (!(g->dram_copy >= 0) || !isfinite(g->dram_copy)) s->have_dram = false;
  }
  return 0;
}

/* Group gi's predicted curves under every prediction set (with the closed
 * loop, its priors), once: each list of candidate templates read on its
 * grid once for all the sets that share it. */
static int group_curves(const struct study *s, struct shaping *sh, size_t gi) {
  int err = 0;
  if (s->built[gi]) return 0;
  s->built[gi] = true;
  for (size_t k = 0; k < s->np && !err; k++) {
    size_t at = k * s->ng + gi;
    if (isnan(s->preds[k].pfi[gi])) continue; /* not predicted: the set's lines skip it */
    const void *from = s->preds[k].templates;
    if (!sh->table || sh->from != from) {
      pflex_curve_templates_free(sh->table);
      sh->table = NULL;
      sh->from = from;
      set_templates(s, k, sh);
      sh->nuse = sh->nt;
      struct pflex_refine_job all = refine_job(s, k, gi, sh);
      if (all.shape == PFLEX_REFINE_DATA && (err = pflex_refine_templates_new(&all, &sh->table)))
        err = err == -PFLEX_E_NOPOINTS ? 0 : err; /* none below P_max: the refinement's fallback */
    }
    if (err) break;
    set_use(s, k, gi, sh);
    struct pflex_refine_job job = refine_job(s, k, gi, sh);
    if (s->prior) {
      err = pflex_refine_prior_new(&job, &s->prior[at]);
      if (!err) s->pcurve[at] = pflex_refine_prior_curve(s->prior[at]);
    } else {
      err = pflex_refine_predicted_curve(&job, &s->own[at]);
      s->pcurve[at] = s->own[at];
    }
  }
  pflex_curve_templates_free(sh->table);
  sh->table = NULL;
  return err;
}

/* A worker's curves of the groups listed (curves_job). */
struct curves_job {
  const struct study *s;
  const size_t *groups;
};

static int curves_one(void *ctx, unsigned worker, size_t i) {
  const struct curves_job *cj = ctx;
  return group_curves(cj->s, &cj->s->shaping[worker], cj->groups[i]);
}

/* The predicted curves of the groups listed (their order is the order a
 * loop would build them in, so that an error is the same one), one group a
 * call, on the study's threads: a group's curves are its alone. */
static int build_curves(const struct study *s, const size_t *groups, size_t n) {
  struct curves_job cj = {s, groups};
  return pflex_parallel_for(n, s->threads, curves_one, &cj, NULL);
}

/* Room for the predicted curves, which are built when a workload first
 * draws their group (group_curves: the same curves, only those used), or
 * all at once where the shrinkage's calibration reads them all; and each
 * thread's scratch for building them. */
static int study_curves(struct study *s) {
  size_t npg = s->np * s->ng > 0 ? s->np * s->ng : 1, maxt = s->ng;
  for (size_t k = 0; k < s->np; k++)
    if (s->preds[k].templates && s->preds[k].ntemplates > maxt) maxt = s->preds[k].ntemplates;
  maxt = maxt < STUDY_MAX_TEMPLATES ? maxt : STUDY_MAX_TEMPLATES;
  s->shaping = calloc(s->threads, sizeof *s->shaping);
  s->built = calloc(s->ng, sizeof *s->built);
  s->pcurve = calloc(npg, sizeof *s->pcurve);
  if (s->o->rounds)
    s->prior = calloc(npg, sizeof *s->prior);
  else
    s->own = calloc(npg, sizeof *s->own);
  if (!s->shaping || !s->built || !s->pcurve || !(s->prior || s->own)) return -ENOMEM;
  for (unsigned t = 0; t < s->threads; t++) {
    struct shaping *sh = &s->shaping[t];
    sh->tmpl = calloc(maxt + 1, sizeof *sh->tmpl);
    sh->tj = calloc(maxt + 1, sizeof *sh->tj);
    sh->use = calloc(maxt + 1, sizeof *sh->use);
    if (!sh->tmpl || !sh->tj || !sh->use) return -ENOMEM;
  }
  if (!(s->o->shrink > 0)) return 0;
  size_t *all = malloc(s->ng * sizeof *all);
  if (!all) return -ENOMEM;
  for (size_t i = 0; i < s->ng; i++)
    all[i] = i;
  int err = build_curves(s, all, s->ng);
  free(all);
  return err;
}

/* The output lines, in strategy order. */
static int study_lines(struct study *s) {
  const struct pflex_study_opts *o = s->o;
  if (!(s->lines = calloc(PFLEX_ALLOC_NSTRATEGIES + s->np * (2 + o->rounds), sizeof *s->lines)))
    return -ENOMEM;
  for (int st = 0; st < PFLEX_ALLOC_NSTRATEGIES; st++) {
    if (!(o->strategies & (1u << st))) continue;
    if (st == PFLEX_ALLOC_DRAM && !s->have_dram) continue;
    if (st == PFLEX_ALLOC_PFI || st == PFLEX_ALLOC_OPTIMAL) {
      for (size_t k = 0; k < s->np; k++)
        for (unsigned r = 0; r <= (st == PFLEX_ALLOC_OPTIMAL ? o->rounds : 0); r++)
          s->lines[s->nlines++] = (struct line){st, k, r};
    } else {
      s->lines[s->nlines++] = (struct line){st, (size_t)-1, 0};
    }
  }
  return 0;
}

#define SCORE_MEMO 128
struct score_memo {
  size_t gi;
  double p, t;
  unsigned stamp;
};

/* Workload scratch space. */
struct work {
  struct score_memo memo[SCORE_MEMO]; /* score's, valid at stamp */
  unsigned stamp;
  size_t *gi;                      /* the jobs' groups */
  struct pflex_alloc_job *jt, *jp; /* on true curves, on predicted/refined curves */
  struct pflex_alloc_result *r;
  struct pflex_refine **ref; /* closed loop: per job */
  struct pflex_shrink *shr;  /* optimal: per job, its shrunk curve */
  double *eq;                /* per job: its power in the equal cut (the shrinkage's anchor) */
  double *anc, *pw;          /* per job: the anchors of the allocation, and its powers */
  double *pobs;              /* closed loop, per job: the power last observed */
  double *dlo, *dhi, *dmv;   /* closed loop's dither, per job: bounds, moves */
  double *pund;              /* closed loop's dither, per job: the power before it, or NAN */
  unsigned char *two;        /* closed loop, per job: observed at two distinct powers */
  size_t *didx;              /* closed loop's dither: scratch */
  double *tl;                /* optimal's rounds 0 .. rounds: its value in each objective */
  struct pflex_alloc_opts ao, ao_powers; /* ao_powers: ao with skip_tput */
  struct pflex_alloc_ctx *actx;
  /* The workload's jobs prepared once for all its cuts (pflex_alloc_prepare):
   * on the true curves (ao.prepared), and per prediction set k on its
   * predicted curves (optimal's round 0 without shrinkage), when first used:
   * those jobs in jpk[k * jobs ..], which do not change from cut to cut
   * (run_optimal_plain). */
  struct pflex_alloc_prepared *prep_t, **prep_p;
  struct pflex_alloc_job *jpk;
  struct shaping *sh; /* its thread's scratch for group_curves */
  const double *nv;   /* the closed loop's noise drawn for this workload (draw_noise) */
  size_t nleft;       /* how many of them are left */
};

/* Frees the workload's prepared jobs. */
static void work_unprepare(struct work *w, size_t np) {
  pflex_alloc_prepared_free(w->prep_t);
  w->prep_t = NULL;
  w->ao.prepared = NULL;
  for (size_t k = 0; w->prep_p && k < np; k++) {
    pflex_alloc_prepared_free(w->prep_p[k]);
    w->prep_p[k] = NULL;
  }
}

static void work_free(struct work *w, size_t n) {
  for (size_t j = 0; j < n; j++) {
    if (w->ref) pflex_refine_free(w->ref[j]);
    if (w->shr) pflex_shrink_release(&w->shr[j]);
  }
  free(w->gi);
  free(w->jt);
  free(w->jp);
  free(w->r);
  free(w->ref);
  free(w->shr);
  free(w->eq);
  free(w->anc);
  free(w->pw);
  free(w->pobs);
  free(w->dlo);
  free(w->pund);
  free(w->two);
  free(w->dhi);
  free(w->dmv);
  free(w->didx);
  free(w->tl);
  free(w->prep_p);
  free(w->jpk);
  pflex_alloc_ctx_free(w->actx);
}

static int work_alloc(struct work *w, const struct study *s) {
  size_t n = s->o->jobs;
  w->gi = calloc(n, sizeof *w->gi);
  w->jt = calloc(n, sizeof *w->jt);
  w->jp = calloc(n, sizeof *w->jp);
  w->r = calloc(n, sizeof *w->r);
  w->ref = calloc(n, sizeof *w->ref);
  w->shr = calloc(n, sizeof *w->shr);
  w->eq = calloc(n, sizeof *w->eq);
  w->anc = calloc(n, sizeof *w->anc);
  w->pw = calloc(n, sizeof *w->pw);
  w->pobs = calloc(n, sizeof *w->pobs);
  w->dlo = calloc(n, sizeof *w->dlo);
  w->pund = calloc(n, sizeof *w->pund);
  w->two = calloc(n, sizeof *w->two);
  w->dhi = calloc(n, sizeof *w->dhi);
  w->dmv = calloc(n, sizeof *w->dmv);
  w->didx = calloc(n, sizeof *w->didx);
  w->tl = calloc(PFLEX_OBJECTIVE_N * (s->o->rounds + 1), sizeof *w->tl);
  w->prep_p = calloc(s->np ? s->np : 1, sizeof *w->prep_p);
  w->jpk = calloc((s->np ? s->np : 1) * n, sizeof *w->jpk);
  if (!(w->gi && w->jt && w->jp && w->r && w->ref && w->shr && w->eq && w->anc && w->pw &&
        w->pobs && w->dlo && w->pund && w->two && w->dhi && w->dmv && w->didx && w->tl &&
        w->prep_p && w->jpk))
    return -ENOMEM;
  /* One allocator context for the whole run: the same curves come back in
   * every workload and cut, their hulls are sampled once (same results). */
  int err = pflex_alloc_ctx_new(&w->actx);
  /* Every allocation is scored on the true curves from its powers alone. */
  w->ao = (struct pflex_alloc_opts){
      .knots = s->o->knots, .ctx = w->actx, .skip_tput = true, .skip_caps = true};
  /* optimal's powers only: its throughput is read on the true curves. */
  w->ao_powers = w->ao;
  w->ao_powers.skip_tput = true;
  return err;
}

/* Draws one workload's groups for scenario sc into gi (jobs of them). */
static void draw_workload(const struct study *s, int sc, gsl_rng *rng, size_t *gi) {
  const double p_pt =
      (double)PFLEX_ACME_PRETRAIN_JOBS / (PFLEX_ACME_PRETRAIN_JOBS + PFLEX_ACME_SFT_JOBS);
  for (size_t j = 0; j < s->o->jobs; j++) {
    if (sc == PFLEX_SCENARIO_RANDOM)
      gi[j] = gsl_rng_uniform_int(rng, s->ng);
    else if (gsl_rng_uniform(rng) < p_pt)
      gi[j] = s->pt[gsl_rng_uniform_int(rng, s->npt)];
    else
      gi[j] = s->ft[gsl_rng_uniform_int(rng, s->nft)];
  }
}

/* Sets w's jobs to the workload of groups gi, on their true curves. */
static void fill_workload(const struct study *s, struct work *w, const size_t *gi) {
  for (size_t j = 0; j < s->o->jobs; j++) {
    const struct pflex_study_group *g = &s->g[gi[j]];
    w->gi[j] = gi[j];
    pflex_alloc_job_init(&w->jt[j]);
    w->jt[j].name = g->name;
    w->jt[j].curve = g->curve;
    w->jt[j].gpus = g->gpus;
    w->jt[j].arch = g->arch;
    w->jt[j].task = g->task;
    w->jt[j].dram_copy = s->have_dram ? g->dram_copy : 0;
    w->jt[j].pfi = 0;
    w->jt[j].weight = s->oscale[s->o->objective * s->ng + gi[j]];
  }
}

/* The true value of the allocation in w->r under every objective: v[ob] =
 * sum of the jobs' true throughputs, each times its weight in ob. */
static void score(const struct study *s, struct work *w, double *v) {
  /* Jobs of one group often get one power: such a job reads the value of
   * the last one seen in this call (direct-mapped on group and power), the
   * same bits. An entry of an earlier call has another stamp. */
  struct score_memo *memo = w->memo;
  if (++w->stamp == 0) {
    for (size_t k = 0; k < SCORE_MEMO; k++)
      memo[k].stamp = 0;
    w->stamp = 1;
  }
  for (int ob = 0; ob < PFLEX_OBJECTIVE_N; ob++)
    v[ob] = 0;
  for (size_t j = 0; j < s->o->jobs; j++) {
    size_t gi = w->gi[j];
    double pw = w->r[j].power_w;
    uint64_t bits;
    memcpy(&bits, &pw, sizeof bits);
    uint64_t h = ((uint64_t)gi * 0x9E3779B97F4A7C15ull ^ bits) * 0xff51afd7ed558ccdull;
    size_t k = (size_t)(h >> 57) & (SCORE_MEMO - 1);
    if (memo[k].stamp != w->stamp || memo[k].gi != gi || !(memo[k].p == pw)) {
      memo[k].stamp = w->stamp;
      memo[k].gi = gi;
      memo[k].p = pw;
      memo[k].t = pflex_curve_eval(s->g[gi].curve, pw);
    }
    for (int ob = 0; ob < PFLEX_OBJECTIVE_N; ob++)
      v[ob] += s->oscale[ob * s->ng + gi] * memo[k].t;
  }
}

/* Whether prediction set k predicts every job of the workload. */
static bool predicted(const struct study *s, const struct work *w, size_t k) {
  for (size_t j = 0; j < s->o->jobs; j++)
    if (isnan(s->preds[k].pfi[w->gi[j]])) return false;
  return true;
}

/* Set k's shrinkage factors for group gi around an anchor power, in a
 * phase (0: the predicted curve, 1: the curve refined after observations):
 * calibrated on the other folds' curves at the nearest calibration anchor
 * (true), else phase 0's or the PFI's SD (false: the caller narrows them by
 * what the observations pinned), else none (1, 1). */
static bool factors(const struct study *s, int phase, size_t k, size_t gi, double anchor,
                    double *f) {
  const struct pflex_study_predset *ps = &s->preds[k];
  f[0] = f[1] = f[2] = f[3] = 1;
  if (!(s->o->shrink > 0)) return false;
  double x = anchor / pflex_curve_p_max(s->g[gi].curve);
  long xi = lround((x - CAL_X0) / CAL_DX);
  xi = xi < 0 ? 0 : xi >= CAL_NX ? CAL_NX - 1 : xi;
  for (int ph = phase; ph >= 0 && s->fac; ph = ph > 1 ? 1 : ph - 1) { /* 2 + o falls back to 1 */
    const double *c = band_at(s, ph, k, gi, (size_t)xi);
    if (!isnan(c[0])) {
      memcpy(f, c, CAL_NB * sizeof *f);
      return ph == phase;
    }
  }
  if (ps->sd && ps->sd[gi] > 0 &&
      pflex_shrink_factors(ps->pfi[gi], ps->sd[gi], s->o->shrink, &f[0], &f[1]))
    f[0] = f[1] = 1;
  f[2] = f[0], f[3] = f[1];
  return false;
}

/* Job j's curve for optimal: base, or base shrunk around the anchor with
 * factors f (include/pflex/shrink.h), their band narrowed to the share
 * `left` (1 - the refinement's confidence in the closed loop). */
static int shrunk_curve(struct work *w, size_t j, const struct pflex_curve *base,
                        const double *f, double left, double anchor) {
  pflex_shrink_release(&w->shr[j]);
  w->jp[j].curve = base;
  double b[CAL_NB];
  for (int m = 0; m < CAL_NB; m += 2)
    b[m] = 1 - (1 - f[m]) * left, b[m + 1] = 1 + (f[m + 1] - 1) * left;
  if (b[0] >= 1 && b[1] <= 1 && b[2] >= 1 && b[3] <= 1) return 0;
  double pm = pflex_curve_p_max(base);
  int err = pflex_shrink_init(&w->shr[j], base, anchor, b[0], b[1]);
  if (!err && (b[2] != b[0] || b[3] != b[1]))
    err = pflex_shrink_set_far(&w->shr[j], b[2], b[3], CAL_STEP_SMALL * pm, CAL_STEP * pm);
  if (!err) w->jp[j].curve = w->shr[j].curve;
  return err;
}

/* optimal on w->jp's curves, whose shrunk ones are anchored at w->anc: the
 * optimizer's powers, or the anchors where those are not better on the
 * pessimistic bound by more than the tolerance of "worse than equal"
 * (pflex_shrink_worth). */
static int allocate_shrunk(const struct study *s, struct work *w, double target) {
  size_t n = s->o->jobs;
  struct pflex_alloc_summary sum;
  int err = pflex_alloc_run(w->jp, n, PFLEX_ALLOC_OPTIMAL, target, &w->ao_powers, w->r, &sum);
  if (err || !(s->o->shrink > 0)) return err;
  for (size_t j = 0; j < n; j++)
    w->pw[j] = w->r[j].power_w;
  if (!pflex_shrink_worth(w->jp, w->pw, w->anc, n, PFLEX_STUDY_EQUAL_TOL))
    for (size_t j = 0; j < n; j++)
      w->r[j].power_w = w->anc[j];
  return 0;
}

/* The band of group gi's refinement r after an observation at pw, scaled
 * by its own spreads where it and its calibration have them (f: phase 1's,
 * kept where not): a job whose templates agree about a change is given a
 * narrower band there than one whose templates do not, the calibration
 * groups' errors standardized alike (pflex_shrink_scaled_band). Measured on
 * the mixed clusters and the reference set (docs/study.md, "Eighth wave"). */
static void scaled_factors(const struct study *s, const struct pflex_refine *r, size_t k,
                          size_t gi, double pw, double *f) {
  static const int slot[CAL_NR] = {0, 2, 1, 3}; /* change_ratios' order into f's */
  double pm = pflex_curve_p_max(s->g[gi].curve), x = pw / pm, sp[CAL_NR];
  long xi = lround((x - CAL_X0) / CAL_DX);
  xi = xi < 0 ? 0 : xi >= CAL_NX ? CAL_NX - 1 : xi;
  const double *z = cal_at(s, s->zq, k, gi, (size_t)xi);
  pflex__study_change_spreads(r, pm, pflex_curve_p_min(s->g[gi].curve) / pm, x, sp);
  for (int m = 0; m < CAL_NR; m++)
    if (isfinite(z[m]) && isfinite(sp[m]))
      f[slot[m]] = pflex_shrink_scaled_factor(z[m], sp[m], m < 2);
}

/* Job j's band in the closed loop at the power pw just observed, into f
 * (factors' return). From round 2 on, a job whose previous observation
 * (prev) lay farther than the knots' merge from pw has a chord measured on that side:
 * there its band is the one calibrated after two such observations (phase
 * 2 + o, the nearest offset), on the other side still phase 1's. Measured
 * on the mixed clusters and the reference set (docs/study.md, "Eighth
 * wave"); on both sides it was no better on the twin. */
static bool loop_factors(const struct study *s, const struct work *w, size_t k, size_t j,
                         size_t round, double prev, double pw, double *f) {
  size_t gi = w->gi[j];
  double off = (prev - pw) / pflex_curve_p_max(s->g[gi].curve);
  bool own = factors(s, 1, k, gi, pw, f);
  if (own) scaled_factors(s, w->ref[j], k, gi, pw, f);
  if (round < 2 || !own || !(fabs(off) > STUDY_SHRUNK_KNOT_MERGE)) return own;
  size_t o = 0;
  for (size_t m = 1; m < CAL_NOFF; m++)
    if (fabs(pflex__study_cal_off[m] - off) < fabs(pflex__study_cal_off[o] - off)) o = m;
  double f2[CAL_NB];
  if (!factors(s, 2 + (int)o, k, gi, pw, f2)) return own;
  for (int m = off < 0 ? 1 : 0; m < CAL_NB; m += 2) /* the measured side: falls below, rises above */
    f[m] = f2[m];
  return own;
}

/* The closed loop's dither (opts.dither, with shrinkage): the jobs that
 * w->r leaves within the knots' merge of where they were last observed are
 * moved, budget-neutral, so that their next observation is at a second
 * power (study_dither.h). */
static void dither(const struct study *s, struct work *w) {
  if (!(s->o->dither > 0) || !(s->o->shrink > 0)) return;
  size_t n = s->o->jobs;
  for (size_t j = 0; j < n; j++) {
    w->pw[j] = w->r[j].power_w;
    w->dlo[j] = w->r[j].floor_w;
    w->dhi[j] = pflex_curve_p_max(s->g[w->gi[j]].curve);
    if (w->two[j]) w->dlo[j] = w->dhi[j] = w->pw[j]; /* has its chord: stays */
  }
  pflex__study_dither(n, w->pw, w->pobs, w->dlo, w->dhi, w->dhi, s->o->dither,
                      STUDY_SHRUNK_KNOT_MERGE, w->didx, w->dmv);
  /* Only where the pessimistic bound still beats the anchors' (as the
   * allocation itself must): a dither the band finds worse is not made. */
  if (!pflex_shrink_worth(w->jp, w->pw, w->anc, n, PFLEX_STUDY_EQUAL_TOL)) return;
  for (size_t j = 0; j < n; j++) {
    if (w->dmv[j] != 0) w->pund[j] = w->r[j].power_w;
    w->r[j].power_w = w->pw[j];
  }
}

/* Round `round` of the closed loop for job j: its true throughput at its
 * allocated power observed with noise and fed to its refinement, its curve
 * for the next allocation the refined one shrunk around its anchor: the
 * power observed, or for a dithered job the power the allocation gave it
 * before the dither (near its earlier observation), the dithered
 * observation measuring the chord. */
static int observe(const struct study *s, struct work *w, size_t k, size_t j, size_t round,
                   gsl_rng *noise) {
  size_t gi = w->gi[j];
  double pw = w->r[j].power_w, pm = pflex_curve_p_max(s->g[gi].curve);
  bool dithered = !isnan(w->pund[j]);
  double a = w->anc[j] = dithered ? w->pund[j] : pw;
  w->pund[j] = NAN;
  /* The noise from the stream, or drawn from it before in this order
   * (workloads on several threads: draw_noise); no draw without noise. */
  double e = 0;
  if (s->o->noise > 0 && noise) {
    e = gsl_ran_gaussian(noise, s->o->noise);
  } else if (s->o->noise > 0) {
    if (!w->nleft) return -EPROTO; /* fewer counted than the loop draws: cannot happen */
    e = *w->nv++;
    w->nleft--;
  }
  double obs = pflex_curve_eval(s->g[gi].curve, pw) * (1 + e);
  int err = pflex_refine_observe(w->ref[j], pw, obs);
  if (err) return err;
  double f[CAL_NB];
  bool own = loop_factors(s, w, k, j, round, dithered ? pw : w->pobs[j], a, f);
  if (round > 1 && fabs(pw - w->pobs[j]) > STUDY_SHRUNK_KNOT_MERGE * pm) w->two[j] = 1;
  w->pobs[j] = pw;
  return shrunk_curve(w, j, pflex_refine_curve(w->ref[j]), f,
                      own ? 1 : 1 - pflex_refine_confidence(w->ref[j]), a);
}

/* The closed loop's rounds after optimal's first allocation: every job's
 * true throughput at its allocated power is observed with Gaussian relative
 * noise and fed to the job's refinement; the cluster is re-allocated on the
 * refined curves, each shrunk around the power just observed by its SD times
 * what the observations left of it (1 - confidence). t as run_optimal's. */
static int closed_loop(const struct study *s, struct work *w, size_t k, double target,
                       gsl_rng *noise, double *t) {
  size_t n = s->o->jobs;
  struct pflex_refine_opts ro = loop_opts(s);
  int err = 0;
  for (size_t j = 0; j < n && !err; j++) {
    const struct pflex_refine_prior *prior = s->prior[k * s->ng + w->gi[j]];
    err = w->ref[j] ? pflex_refine_reset(w->ref[j], prior) : pflex_refine_new(prior, &ro, &w->ref[j]);
    w->pund[j] = NAN;
    w->two[j] = 0;
  }
  for (size_t round = 1; round <= s->o->rounds && !err; round++) {
    for (size_t j = 0; j < n && !err; j++)
      err = observe(s, w, k, j, round, noise);
    if (!err) err = allocate_shrunk(s, w, target);
    if (!err && round < s->o->rounds) dither(s, w); /* observed again next round */
    if (!err) score(s, w, t + PFLEX_OBJECTIVE_N * round);
  }
  return err;
}

/* run_optimal without shrinkage or closed loop: the jobs on set k's
 * predicted curves (as run_optimal builds them: its shrinkage leaves each
 * curve as it is) are the same at every cut of the workload, so they are
 * built and prepared at its first cut only (w->jpk, w->prep_p). */
static int run_optimal_plain(const struct study *s, struct work *w, size_t k, double target,
                             double *t) {
  size_t n = s->o->jobs;
  struct pflex_alloc_job *jp = &w->jpk[k * n];
  int err = 0;
  if (!w->prep_p[k]) {
    for (size_t j = 0; j < n && !err; j++)
      err = group_curves(s, w->sh, w->gi[j]);
    for (size_t j = 0; j < n && !err; j++) {
      jp[j] = w->jt[j];
      jp[j].curve = s->pcurve[k * s->ng + w->gi[j]];
    }
    if (!err) err = pflex_alloc_prepare(jp, n, &w->prep_p[k]);
    if (err) return err;
  }
  struct pflex_alloc_opts o = w->ao_powers;
  o.prepared = w->prep_p[k];
  struct pflex_alloc_summary sum;
  if (!(err = pflex_alloc_run(jp, n, PFLEX_ALLOC_OPTIMAL, target, &o, w->r, &sum))) score(s, w, t);
  return err;
}

/* optimal with prediction set k on one workload and cut, each predicted
 * curve shrunk toward the job's power in the equal cut; then the closed
 * loop. Writes the true value after each round in each objective into
 * t[PFLEX_OBJECTIVE_N * round + objective], round 0 .. rounds. */
static int run_optimal(const struct study *s, struct work *w, size_t k, double target,
                       gsl_rng *noise, double *t) {
  size_t n = s->o->jobs;
  int err = 0;
  if (!(s->o->shrink > 0) && !s->o->rounds) return run_optimal_plain(s, w, k, target, t);
  for (size_t j = 0; j < n && !err; j++)
    err = group_curves(s, w->sh, w->gi[j]);
  for (size_t j = 0; j < n && !err; j++) {
    size_t gi = w->gi[j];
    w->jp[j] = w->jt[j];
    w->anc[j] = w->eq[j];
    double f[CAL_NB];
    factors(s, 0, k, gi, w->eq[j], f);
    /* Round 0 is taken blind: every move counts with the more pessimistic
     * of both distances' factors (the band by distance is the loop's). */
    f[0] = f[2] = fmin(f[0], f[2]), f[1] = f[3] = fmax(f[1], f[3]);
    err = shrunk_curve(w, j, s->pcurve[k * s->ng + gi], f, 1, w->eq[j]);
  }
  if (!err) err = allocate_shrunk(s, w, target);
  if (err) return err;
  score(s, w, t);
  return s->o->rounds ? closed_loop(s, w, k, target, noise, t) : 0;
}

/* One line's value on one workload at a target, in every objective (v), or
 * NAN where the line does not count the workload (a job its set does not
 * predict). eq and orc: the equal cut's and the oracle's values. */
static int score_line(const struct study *s, struct work *w, size_t l, double target,
                      const double *eq, const double *orc, gsl_rng *noise, double *v) {
  const struct line *ln = &s->lines[l];
  size_t n = s->o->jobs;
  double *tround = w->tl;
  struct pflex_alloc_summary sum;
  int err = 0;
  if (ln->pred != (size_t)-1 && !predicted(s, w, ln->pred)) {
    for (int ob = 0; ob < PFLEX_OBJECTIVE_N; ob++)
      v[ob] = NAN;
    return 0;
  }
  switch (ln->st) {
  case PFLEX_ALLOC_EQUAL: memcpy(v, eq, PFLEX_OBJECTIVE_N * sizeof *v); return 0;
  case PFLEX_ALLOC_ORACLE: memcpy(v, orc, PFLEX_OBJECTIVE_N * sizeof *v); return 0;
  case PFLEX_ALLOC_OPTIMAL:
    /* All rounds of one prediction set come from one closed loop. */
    if (ln->round == 0) err = run_optimal(s, w, ln->pred, target, noise, tround);
    memcpy(v, tround + PFLEX_OBJECTIVE_N * ln->round, PFLEX_OBJECTIVE_N * sizeof *v);
    return err;
  case PFLEX_ALLOC_PFI:
    for (size_t j = 0; j < n; j++)
      w->jt[j].pfi = s->preds[ln->pred].pfi[w->gi[j]];
    break;
  default: break;
  }
  err = pflex_alloc_run(w->jt, n, ln->st, target, &w->ao, w->r, &sum);
  if (!err) score(s, w, v);
  return err;
}

/* The sums per scenario, cut and line. */
struct sums {
  struct acc *acc; /* cell * nlines + line */
};

static void sums_free(struct sums *m) {
  free(m->acc);
}

/* The oracle of objective ob (optimal on the true curves with ob's weights)
 * and its value under every objective (v). */
static int oracle_of(const struct study *s, struct work *w, double target, int ob, double *v) {
  struct pflex_alloc_summary sum;
  for (size_t j = 0; j < s->o->jobs; j++)
    w->jt[j].weight = s->oscale[ob * s->ng + w->gi[j]];
  int err = pflex_alloc_run(w->jt, s->o->jobs, PFLEX_ALLOC_ORACLE, target, &w->ao, w->r, &sum);
  if (!err) score(s, w, v);
  return err;
}

/* orc[ob]: the value of objective ob's oracle under ob; orc_line: the values
 * of the study objective's oracle (its line) under every objective. The jobs'
 * weights are the study objective's again afterwards. */
static int oracles(const struct study *s, struct work *w, double target, double *orc,
                   double *orc_line) {
  int o = (int)s->o->objective;
  double v[PFLEX_OBJECTIVE_N];
  int err = oracle_of(s, w, target, o, orc_line);
  orc[o] = orc_line[o];
  for (int ob = 0; ob < PFLEX_OBJECTIVE_N && !err; ob++)
    if (ob != o && !(err = oracle_of(s, w, target, ob, v))) orc[ob] = v[ob];
  for (size_t j = 0; j < s->o->jobs; j++)
    w->jt[j].weight = s->oscale[o * s->ng + w->gi[j]];
  return err;
}

/* Adds one line's values on one workload to its sums. */
static void accumulate(struct acc *a, const double *v, const double *eq, const double *orc,
                       enum pflex_objective objective) {
  if (isnan(v[0])) return; /* the line does not count this workload */
  a->count++;
  for (int ob = 0; ob < PFLEX_OBJECTIVE_N; ob++) {
    a->v[ob] += v[ob];
    a->eq[ob] += eq[ob];
    a->orc[ob] += orc[ob];
    if (v[ob] < eq[ob] * (1 - PFLEX_STUDY_EQUAL_TOL)) a->worse[ob]++;
  }
  if (v[objective] > orc[objective] * (1 + PFLEX_STUDY_ORACLE_TOL)) a->above++;
}

/* A workload's record: per cut, whether the workload took it (1) or not
 * (0), the equal cut's and the oracle's values, then every line's, in every
 * objective; rec_stride doubles a cut. Workloads run on several threads
 * are summed from their records in their order: one thread's sums, bit for
 * bit. */
static size_t rec_stride(const struct study *s) {
  return 1 + (2 + s->nlines) * PFLEX_OBJECTIVE_N;
}

/* One workload (w's jobs) at every cut, into its record rec. */
static int run_workload(const struct study *s, struct work *w, double *rec, gsl_rng *noise) {
  size_t n = s->o->jobs;
  for (size_t c = 0; c < s->ncuts; c++) {
    double *r = rec + c * rec_stride(s), *eq = r + 1, *orc = eq + PFLEX_OBJECTIVE_N;
    double *lv = orc + PFLEX_OBJECTIVE_N, target, orc_line[PFLEX_OBJECTIVE_N];
    struct pflex_alloc_summary sum;
    r[0] = 0;
    int err = pflex_alloc_target_for_cut(w->jt, n, s->cuts[c], &target);
    if (err) return err;
    err = oracles(s, w, target, orc, orc_line);
    if (err == -PFLEX_E_INFEASIBLE) continue; /* this workload cannot take this cut */
    if (err) return err;
    if ((err = pflex_alloc_run(w->jt, n, PFLEX_ALLOC_EQUAL, target, &w->ao, w->r, &sum)))
      return err;
    score(s, w, eq);
    for (size_t j = 0; j < n; j++)
      w->eq[j] = w->r[j].power_w;
    for (size_t l = 0; l < s->nlines && !err; l++)
      err = score_line(s, w, l, target, eq, orc_line, noise, lv + PFLEX_OBJECTIVE_N * l);
    if (err) return err;
    r[0] = 1;
  }
  return 0;
}

/* Adds a workload's record of scenario sc to the sums. */
static void accumulate_record(const struct study *s, const double *rec, int sc, struct sums *m) {
  for (size_t c = 0; c < s->ncuts; c++) {
    const double *r = rec + c * rec_stride(s), *eq = r + 1, *orc = eq + PFLEX_OBJECTIVE_N;
    const double *lv = orc + PFLEX_OBJECTIVE_N;
    if (r[0] == 0) continue;
    struct acc *cell = &m->acc[((size_t)sc * s->ncuts + c) * s->nlines];
    for (size_t l = 0; l < s->nlines; l++)
      accumulate(&cell[l], lv + PFLEX_OBJECTIVE_N * l, eq, orc, s->o->objective);
  }
}

/* Whether a line allocates on predicted curves (optimal's). */
static bool needs_curves(const struct study *s) {
  for (size_t l = 0; l < s->nlines; l++)
    if (s->lines[l].st == PFLEX_ALLOC_OPTIMAL) return true;
  return false;
}

/* The workloads run a chunk at a time: drawn in order from one stream,
 * their groups' curves built, run on the study's threads (each with its own
 * scratch w[thread]), then summed in order. */
struct chunk {
  const struct study *s;
  struct work *w;
  size_t *gi;           /* the chunk's draws, jobs a workload */
  double *rec;          /* the chunk's records */
  size_t *todo;         /* groups whose curves the chunk builds */
  bool *listed;         /* per group: in todo of this chunk or an earlier one */
  gsl_rng *rng_noise;   /* the closed loop's observation noise, in the workloads' order */
  gsl_rng *noise;       /* rng_noise where the workloads draw from it (one thread), else NULL */
  bool drawn;           /* the chunk's noise is in draws (several threads) */
  double *draws;        /* on several threads: the noise drawn for the chunk (draw_noise) */
  size_t *ndraw, *at;   /* per workload: how many of draws, from where */
  size_t cap;           /* room in draws */
  size_t before, total; /* workloads done before this chunk, and in all */
};

static int chunk_one(void *ctx, unsigned worker, size_t i) {
  struct chunk *ch = ctx;
  const struct study *s = ch->s;
  struct work *w = &ch->w[worker];
  size_t n = s->o->jobs;
  fill_workload(s, w, ch->gi + i * n);
  w->nv = ch->drawn ? ch->draws + ch->at[i] : NULL;
  w->nleft = ch->drawn ? ch->ndraw[i] : 0;
  int err = pflex_alloc_prepare(w->jt, n, &w->prep_t);
  w->ao.prepared = w->prep_t;
  if (!err) err = run_workload(s, w, ch->rec + i * s->ncuts * rec_stride(s), ch->noise);
  work_unprepare(w, s->np);
  return err || !w->nleft ? err : -EPROTO; /* more counted than drawn: cannot happen */
}

/* How many noise draws workload i's closed loops make: one per job and
 * round for every cut it can take (the oracle's check, which the equal
 * cut's is) and every prediction set whose optimal line predicts all its
 * jobs, as run_workload and closed_loop make them. */
static int count_draws(void *ctx, unsigned worker, size_t i) {
  struct chunk *ch = ctx;
  const struct study *s = ch->s;
  struct work *w = &ch->w[worker];
  size_t n = s->o->jobs, sets = 0, cuts = 0;
  fill_workload(s, w, ch->gi + i * n);
  for (size_t l = 0; l < s->nlines; l++)
    sets += s->lines[l].st == PFLEX_ALLOC_OPTIMAL && s->lines[l].round == 0 &&
            predicted(s, w, s->lines[l].pred);
  int err = sets ? pflex_alloc_prepare(w->jt, n, &w->prep_t) : 0;
  w->ao.prepared = w->prep_t;
  for (size_t c = 0; c < s->ncuts && sets && !err; c++) {
    double target;
    struct pflex_alloc_summary sum;
    err = pflex_alloc_target_for_cut(w->jt, n, s->cuts[c], &target);
    if (!err) err = pflex_alloc_run(w->jt, n, PFLEX_ALLOC_EQUAL, target, &w->ao, w->r, &sum);
    cuts += err == 0;
    if (err == -PFLEX_E_INFEASIBLE) err = 0; /* the workload skips this cut */
  }
  work_unprepare(w, s->np);
  ch->ndraw[i] = cuts * sets * n * s->o->rounds;
  return err;
}

/* The closed loop's noise for the chunk's nw workloads on several threads,
 * drawn from the one stream in the workloads' order (as one thread draws
 * it): each workload's draws counted on the threads, then drawn here. */
static int draw_noise(struct chunk *ch, size_t nw) {
  const struct study *s = ch->s;
  int err = pflex_parallel_for(nw, s->threads, count_draws, ch, NULL);
  size_t total = 0;
  for (size_t i = 0; i < nw && !err; i++)
    ch->at[i] = total, total += ch->ndraw[i];
  if (!err && total > ch->cap) {
    double *d = realloc(ch->draws, total * sizeof *d);
    if (!d) return -ENOMEM;
    ch->draws = d;
    ch->cap = total;
  }
  for (size_t k = 0; k < total && !err; k++)
    ch->draws[k] = gsl_ran_gaussian(ch->rng_noise, s->o->noise);
  return err;
}

static void chunk_done(void *ctx, size_t finished) {
  const struct chunk *ch = ctx;
  pflex_progress_report(&ch->s->o->progress, "workloads", ch->before + finished, ch->total);
}

/* nw workloads of scenario sc: drawn, their new groups' curves built (in
 * the order of the draws, as the workloads would meet them), run, summed.
 * The closed loop's observation noise is one stream through the workloads
 * in order: on several threads it is drawn for them first (draw_noise). */
static int run_chunk(struct chunk *ch, int sc, size_t nw, gsl_rng *rng, struct sums *m) {
  const struct study *s = ch->s;
  size_t n = s->o->jobs, ntodo = 0;
  for (size_t i = 0; i < nw; i++)
    draw_workload(s, sc, rng, ch->gi + i * n);
  if (needs_curves(s))
    for (size_t k = 0; k < nw * n; k++)
      if (!ch->listed[ch->gi[k]]) ch->listed[ch->gi[k]] = true, ch->todo[ntodo++] = ch->gi[k];
  int err = build_curves(s, ch->todo, ntodo);
  if (!err && ch->drawn) err = draw_noise(ch, nw);
  if (!err) err = pflex_parallel_for(nw, s->threads, chunk_one, ch, chunk_done);
  for (size_t i = 0; i < nw && !err; i++)
    accumulate_record(s, ch->rec + i * s->ncuts * rec_stride(s), sc, m);
  ch->before += nw;
  return err;
}

/* Workloads a chunk: one on one thread (as a plain loop); on several, 16 a
 * thread, so that the threads left idle by a chunk's last workloads cost
 * little, as long as the chunk's draws stay under 2^22 jobs. */
static size_t chunk_size(const struct study *s) {
  if (s->threads <= 1) return 1;
  size_t c = 16 * (size_t)s->threads, most = ((size_t)1 << 22) / s->o->jobs;
  if (c > most) c = most > s->threads ? most : s->threads;
  return c < s->o->workloads ? c : s->o->workloads;
}

/* Every scenario's workloads, each scenario on its own random streams so
 * that its results do not depend on whether the other ran. */
static int run_scenarios(const struct study *s, struct sums *m) {
  size_t cs = chunk_size(s), n = s->o->jobs;
  struct chunk ch = {.s = s};
  ch.w = calloc(s->threads, sizeof *ch.w);
  ch.gi = malloc(cs * n * sizeof *ch.gi);
  ch.rec = malloc(cs * s->ncuts * rec_stride(s) * sizeof *ch.rec);
  ch.todo = malloc((cs * n < s->ng ? cs * n : s->ng) * sizeof *ch.todo);
  ch.listed = calloc(s->ng, sizeof *ch.listed);
  ch.ndraw = calloc(cs, sizeof *ch.ndraw);
  ch.at = calloc(cs, sizeof *ch.at);
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  ch.rng_noise = gsl_rng_alloc(gsl_rng_mt19937);
  int err =
      ch.w && ch.gi && ch.rec && ch.todo && ch.listed && ch.ndraw && ch.at && rng && ch.rng_noise
          ? 0
          : -ENOMEM;
  for (unsigned t = 0; t < s->threads && !err; t++) {
    err = work_alloc(&ch.w[t], s);
    ch.w[t].sh = &s->shaping[t];
  }
  /* The noise's path, the same for every chunk (a last one of one workload
   * too): from the stream on one thread, drawn for the chunk on several. */
  bool noisy = s->o->rounds && s->o->noise > 0;
  ch.drawn = noisy && s->threads > 1;
  ch.noise = noisy && !ch.drawn ? ch.rng_noise : NULL;
  for (int sc = 0; sc < PFLEX_SCENARIO_N; sc++)
    if (s->o->scenarios & (1u << sc)) ch.total += s->o->workloads;
  for (int sc = 0; sc < PFLEX_SCENARIO_N && !err; sc++) {
    if (!(s->o->scenarios & (1u << sc))) continue;
    gsl_rng_set(rng, s->o->seed * 1000003ul + (unsigned long)sc);
    gsl_rng_set(ch.rng_noise, s->o->seed * 7919ul + 104729ul + (unsigned long)sc);
    for (size_t wl = 0; wl < s->o->workloads && !err; wl += cs)
      err = run_chunk(&ch, sc, s->o->workloads - wl < cs ? s->o->workloads - wl : cs, rng, m);
  }
  for (unsigned t = 0; ch.w && t < s->threads; t++)
    work_free(&ch.w[t], n);
  free(ch.w);
  free(ch.gi);
  free(ch.rec);
  free(ch.todo);
  free(ch.listed);
  free(ch.ndraw);
  free(ch.at);
  free(ch.draws);
  gsl_rng_free(rng);
  gsl_rng_free(ch.rng_noise);
  return err;
}

/* A line's numbers under objective ob from its sums. */
static struct pflex_study_score score_of(const struct acc *a, int ob, size_t jobs) {
  double cnt = (double)a->count, gap = a->orc[ob] - a->eq[ob];
  return (struct pflex_study_score){
      .loss_vs_oracle = a->orc[ob] > 0 ? 1 - a->v[ob] / a->orc[ob] : NAN,
      /* Relative to the gap's size: no gap at a 0% cut, or where the oracle
       * and equal agree to rounding. */
      .gap_recovered = a->count && gap > 1e-12 * a->orc[ob] ? (a->v[ob] - a->eq[ob]) / gap : NAN,
      .gain_per_job = a->count ? (a->v[ob] - a->eq[ob]) / (cnt * (double)jobs) : NAN,
      .worse_than_equal = a->count ? (double)a->worse[ob] / cnt : NAN,
  };
}

/* One result line from its sums. */
static struct pflex_study_result result_of(const struct study *s, const struct acc *a, int sc,
                                           size_t c, const struct line *ln) {
  int ob = (int)s->o->objective, other = ob == PFLEX_OBJECTIVE_TOKENS ? PFLEX_OBJECTIVE_PROGRESS
                                                                     : PFLEX_OBJECTIVE_TOKENS;
  struct pflex_study_score main = score_of(a, ob, s->o->jobs);
  double cnt = (double)a->count;
  return (struct pflex_study_result){
      .scenario = (enum pflex_study_scenario)sc,
      .strategy = ln->st,
      .prediction = ln->pred == (size_t)-1 ? PFLEX_PRED_TRUE : s->preds[ln->pred].mode,
      .round = ln->round,
      .cut = s->cuts[c],
      .workloads = a->count,
      .tokens_per_s = a->count ? a->v[PFLEX_OBJECTIVE_TOKENS] / cnt : NAN,
      .progress = a->count ? a->v[PFLEX_OBJECTIVE_PROGRESS] / cnt : NAN,
      .loss_vs_oracle = main.loss_vs_oracle,
      .gap_recovered = main.gap_recovered,
      .gain_per_job = main.gain_per_job,
      .above_oracle = a->above,
      .worse_than_equal = main.worse_than_equal,
      .other = score_of(a, other, s->o->jobs),
  };
}

/* The result lines from the sums. */
static int study_results(const struct study *s, const struct sums *m,
                         struct pflex_study_result **ret, size_t *ret_n) {
  size_t nl = s->nlines, nres = 0;
  struct pflex_study_result *res = calloc(PFLEX_SCENARIO_N * s->ncuts * (nl ? nl : 1), sizeof *res);
  if (!res) return -ENOMEM;
  for (int sc = 0; sc < PFLEX_SCENARIO_N; sc++) {
    if (!(s->o->scenarios & (1u << sc))) continue;
    for (size_t c = 0; c < s->ncuts; c++)
      for (size_t l = 0; l < nl; l++)
        res[nres++] = result_of(s, &m->acc[((size_t)sc * s->ncuts + c) * nl + l], sc, c,
                                &s->lines[l]);
  }
  *ret = res;
  *ret_n = nres;
  return 0;
}

static int opts_check(const struct pflex_study_group *groups, size_t ngroups,
                      const struct pflex_study_predset *preds, size_t npreds,
                      const struct pflex_study_opts *o) {
  if (!groups || ngroups == 0 || (npreds && !preds) || o->jobs == 0 || o->workloads == 0 ||
      !(o->noise >= 0) || !(o->prior_sd > 0) || (o->ncuts && !o->cuts) || o->rounds > 100 ||
      !(o->bandwidth > 0) || !(o->shrink >= 0) || !isfinite(o->shrink) ||
      !(o->dither >= 0 && o->dither <= 0.5) || (unsigned)o->objective >= PFLEX_OBJECTIVE_N ||
      o->threads > PFLEX_STUDY_MAX_THREADS)
    return -EINVAL;
  for (size_t c = 0; o->cuts && c < o->ncuts; c++)
    if (!(o->cuts[c] >= 0 && o->cuts[c] <= 1)) return -EINVAL;
  for (size_t k = 0; k < npreds; k++) {
    if (!preds[k].pfi || (unsigned)preds[k].mode >= PFLEX_PRED_N) return -EINVAL;
    for (size_t i = 0; i < ngroups; i++) /* NAN: not predicted; infinity: an error */
      if (isinf(preds[k].pfi[i]) || (preds[k].sd && isinf(preds[k].sd[i]))) return -EINVAL;
  }
  return 0;
}

int pflex_study_run(const struct pflex_study_group *groups, size_t ngroups,
                    const struct pflex_study_predset *preds, size_t npreds,
                    const struct pflex_study_opts *opts, struct pflex_study_result **ret_results,
                    size_t *ret_n) {
  struct pflex_study_opts def;
  if (!opts) {
    pflex_study_opts_init(&def);
    opts = &def;
  }
  int err = opts_check(groups, ngroups, preds, npreds, opts);
  if (err) return err;
  struct study s = {.g = groups,
                    .ng = ngroups,
                    .preds = preds,
                    .np = npreds,
                    .o = opts,
                    .threads = opts->threads ? opts->threads : 1};
  s.cuts = opts->cuts ? opts->cuts : default_cuts;
  s.ncuts = opts->cuts ? opts->ncuts : sizeof default_cuts / sizeof default_cuts[0];
  struct sums m = {0};
  if (!(err = study_groups(&s)) &&
      (opts->scenarios & (1u << PFLEX_SCENARIO_PRODUCTION)) && (s.npt == 0 || s.nft == 0))
    err = -PFLEX_E_DATA;
  if (!err) err = study_curves(&s);
  if (!err) err = pflex__study_calibrate(&s);
  if (!err) err = study_lines(&s);
  size_t ncell = PFLEX_SCENARIO_N * s.ncuts;
  if (!err) {
    m.acc = calloc(ncell * (s.nlines ? s.nlines : 1), sizeof *m.acc);
    err = m.acc ? 0 : -ENOMEM;
  }
  if (!err) err = run_scenarios(&s, &m);
  if (!err) err = study_results(&s, &m, ret_results, ret_n);
  sums_free(&m);
  study_release(&s);
  return err;
}
