/* The allocation study engine (include/pflex/study.h): sample workloads from
 * sweep groups, allocate under each cut with each strategy, score on the true
 * curves, aggregate; optionally the simulated closed loop, whose curve
 * updates are the public refinement module's (include/pflex/refine.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "pflex/error.h"
#include "pflex/jobs.h"
#include "pflex/refine.h"
#include "pflex/study.h"

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

/* One output line per scenario and cut. */
struct line {
  enum pflex_alloc_strategy st;
  size_t pred; /* index into preds; (size_t)-1 for none */
  unsigned round;
};

struct acc {
  double sum_t;
  size_t above;
};

struct study {
  const struct pflex_study_group *g;
  size_t ng;
  const struct pflex_study_predset *preds;
  size_t np;
  const struct pflex_study_opts *o;
  const double *cuts;
  size_t ncuts;
  const struct pflex_curve **pcurve;  /* np * ng predicted curves (own[] or the priors') */
  struct pflex_curve **own;           /* open loop: np * ng predicted curves */
  struct pflex_refine_prior **prior;  /* closed loop: np * ng priors */
  size_t *pt, *ft, npt, nft;          /* groups by task */
  bool have_dram;
  struct line *lines;
  size_t nlines;
};

static void study_release(struct study *s) {
  for (size_t i = 0; i < s->np * s->ng; i++) {
    if (s->own) pflex_curve_free(s->own[i]);
    if (s->prior) pflex_refine_prior_free(s->prior[i]);
  }
  free(s->pcurve);
  free(s->own);
  free(s->prior);
  free(s->pt);
  free(s->ft);
  free(s->lines);
}

/* The most template curves one predicted data-shape curve averages over. */
#define STUDY_MAX_TEMPLATES 512

/* The refinement module's view of group gi under prediction set k: its
 * bounds, its predicted PFI and the curves that may shape it
 * (pflex_study_predset), collected into tmpl. */
static struct pflex_refine_job refine_job(const struct study *s, size_t k, size_t gi,
                                          const struct pflex_curve **tmpl) {
  const struct pflex_study_predset *ps = &s->preds[k];
  const struct pflex_study_group *g = &s->g[gi];
  size_t nt = 0;
  /* Past STUDY_MAX_TEMPLATES candidates, every k-th (a systematic sample
   * across the file) so that the shapes cost linear time in groups, not
   * quadratic; up to that many all are used, as always. */
  size_t nall = ps->templates ? ps->ntemplates : s->ng;
  size_t stride =
      nall > STUDY_MAX_TEMPLATES ? (nall + STUDY_MAX_TEMPLATES - 1) / STUDY_MAX_TEMPLATES : 1;
  if (ps->templates) {
    for (size_t j = 0; j < ps->ntemplates; j += stride)
      tmpl[nt++] = ps->templates[j];
  } else {
    for (size_t j = 0; j < s->ng; j += stride)
      if (!ps->fold || ps->fold[j] != ps->fold[gi]) tmpl[nt++] = s->g[j].curve;
  }
  bool family = s->o->shape == PFLEX_STUDY_SHAPE_FAMILY;
  return (struct pflex_refine_job){.pfi = ps->pfi[gi],
                                   .p_min = pflex_curve_p_min(g->curve),
                                   .p_max = pflex_curve_p_max(g->curve),
                                   .t_max = pflex_curve_t_max(g->curve),
                                   .gpus = g->gpus,
                                   .gpu = g->gpu,
                                   .shape = family ? PFLEX_REFINE_FAMILY : PFLEX_REFINE_DATA,
                                   .templates = family ? NULL : tmpl,
                                   .ntemplates = family ? 0 : nt,
                                   .bandwidth = s->o->bandwidth};
}

/* Groups by task, and whether every group knows its DRAM copy share. */
static int study_groups(struct study *s) {
  s->pt = calloc(s->ng, sizeof *s->pt);
  s->ft = calloc(s->ng, sizeof *s->ft);
  if (!s->pt || !s->ft) return -ENOMEM;
  s->have_dram = true;
  for (size_t i = 0; i < s->ng; i++) {
    const struct pflex_study_group *g = &s->g[i];
    if (!g->curve || g->gpus <= 0) return -EINVAL;
    if (g->task == PFLEX_TASK_PT) s->pt[s->npt++] = i;
    if (g->task == PFLEX_TASK_FT) s->ft[s->nft++] = i;
    if (!(g->dram_copy >= 0) || !isfinite(g->dram_copy)) s->have_dram = false;
  }
  return 0;
}

/* Every group's predicted curve under every prediction set; with the closed
 * loop, its prior (predicted curve and candidates). */
static int study_curves(struct study *s) {
  size_t npg = s->np * s->ng > 0 ? s->np * s->ng : 1, maxt = s->ng;
  for (size_t k = 0; k < s->np; k++)
    if (s->preds[k].templates && s->preds[k].ntemplates > maxt) maxt = s->preds[k].ntemplates;
  const struct pflex_curve **tmpl = calloc(maxt ? maxt : 1, sizeof *tmpl);
  s->pcurve = calloc(npg, sizeof *s->pcurve);
  if (s->o->rounds)
    s->prior = calloc(npg, sizeof *s->prior);
  else
    s->own = calloc(npg, sizeof *s->own);
  int err = tmpl && s->pcurve && (s->prior || s->own) ? 0 : -ENOMEM;
  for (size_t k = 0; k < s->np && !err; k++)
    for (size_t i = 0; i < s->ng && !err; i++) {
      size_t at = k * s->ng + i;
      struct pflex_refine_job job = refine_job(s, k, i, tmpl);
      if (s->prior) {
        err = pflex_refine_prior_new(&job, &s->prior[at]);
        if (!err) s->pcurve[at] = pflex_refine_prior_curve(s->prior[at]);
      } else {
        err = pflex_refine_predicted_curve(&job, &s->own[at]);
        s->pcurve[at] = s->own[at];
      }
    }
  free(tmpl);
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

/* Workload scratch space. */
struct work {
  size_t *gi;                      /* the jobs' groups */
  struct pflex_alloc_job *jt, *jp; /* on true curves, on predicted/refined curves */
  struct pflex_alloc_result *r;
  struct pflex_refine **ref; /* closed loop: per job */
  double *tl;                /* per line: this workload's throughput; then rounds + 1 */
  struct pflex_alloc_opts ao, ao_powers; /* ao_powers: ao with skip_tput */
  struct pflex_alloc_ctx *actx;
};

static void work_free(struct work *w, size_t n) {
  if (w->ref)
    for (size_t j = 0; j < n; j++)
      pflex_refine_free(w->ref[j]);
  free(w->gi);
  free(w->jt);
  free(w->jp);
  free(w->r);
  free(w->ref);
  free(w->tl);
  pflex_alloc_ctx_free(w->actx);
}

static int work_alloc(struct work *w, const struct study *s) {
  size_t n = s->o->jobs;
  w->gi = calloc(n, sizeof *w->gi);
  w->jt = calloc(n, sizeof *w->jt);
  w->jp = calloc(n, sizeof *w->jp);
  w->r = calloc(n, sizeof *w->r);
  w->ref = calloc(n, sizeof *w->ref);
  w->tl = calloc(s->nlines + s->o->rounds + 1, sizeof *w->tl);
  if (!(w->gi && w->jt && w->jp && w->r && w->ref && w->tl)) return -ENOMEM;
  /* One allocator context for the whole run: the same curves come back in
   * every workload and cut, their hulls are sampled once (same results). */
  int err = pflex_alloc_ctx_new(&w->actx);
  w->ao = (struct pflex_alloc_opts){.knots = s->o->knots, .ctx = w->actx};
  /* optimal's powers only: its throughput is read on the true curves. */
  w->ao_powers = w->ao;
  w->ao_powers.skip_tput = true;
  return err;
}

/* Draws one workload's jobs for scenario sc. */
static void sample_workload(const struct study *s, struct work *w, int sc, gsl_rng *rng) {
  const double p_pt =
      (double)PFLEX_ACME_PRETRAIN_JOBS / (PFLEX_ACME_PRETRAIN_JOBS + PFLEX_ACME_SFT_JOBS);
  for (size_t j = 0; j < s->o->jobs; j++) {
    size_t gi;
    if (sc == PFLEX_SCENARIO_RANDOM)
      gi = gsl_rng_uniform_int(rng, s->ng);
    else if (gsl_rng_uniform(rng) < p_pt)
      gi = s->pt[gsl_rng_uniform_int(rng, s->npt)];
    else
      gi = s->ft[gsl_rng_uniform_int(rng, s->nft)];
    const struct pflex_study_group *g = &s->g[gi];
    w->gi[j] = gi;
    pflex_alloc_job_init(&w->jt[j]);
    w->jt[j].name = g->name;
    w->jt[j].curve = g->curve;
    w->jt[j].gpus = g->gpus;
    w->jt[j].arch = g->arch;
    w->jt[j].task = g->task;
    w->jt[j].dram_copy = s->have_dram ? g->dram_copy : 0;
    w->jt[j].pfi = 0;
  }
}

/* Sum of true throughput of an allocation. */
static double true_tput(const struct study *s, const struct work *w) {
  double t = 0;
  for (size_t j = 0; j < s->o->jobs; j++)
    t += pflex_curve_eval(s->g[w->gi[j]].curve, w->r[j].power_w);
  return t;
}

/* optimal with prediction set k on one workload and cut, with the closed
 * loop: every job's true throughput at its allocated power is observed with
 * Gaussian relative noise and fed to the job's refinement; the cluster is
 * re-allocated on the refined curves. Writes the true throughput after each
 * round into t[0..rounds]. */
static int run_optimal(const struct study *s, struct work *w, size_t k, double target,
                       gsl_rng *noise, double *t) {
  size_t n = s->o->jobs;
  struct pflex_alloc_summary sum;
  for (size_t j = 0; j < n; j++) {
    w->jp[j] = w->jt[j];
    w->jp[j].curve = s->pcurve[k * s->ng + w->gi[j]];
  }
  int err = pflex_alloc_run(w->jp, n, PFLEX_ALLOC_OPTIMAL, target, &w->ao_powers, w->r, &sum);
  if (err) return err;
  t[0] = true_tput(s, w);
  struct pflex_refine_opts ro = {
      .noise = s->o->noise, .prior_sd = s->o->prior_sd, .max_obs = s->o->rounds};
  for (size_t j = 0; j < n && s->o->rounds; j++) {
    const struct pflex_refine_prior *prior = s->prior[k * s->ng + w->gi[j]];
    err = w->ref[j] ? pflex_refine_reset(w->ref[j], prior) : pflex_refine_new(prior, &ro, &w->ref[j]);
    if (err) return err;
  }
  for (size_t round = 1; round <= s->o->rounds; round++) {
    for (size_t j = 0; j < n; j++) {
      double pw = w->r[j].power_w;
      double obs = pflex_curve_eval(s->g[w->gi[j]].curve, pw) *
                   (1 + gsl_ran_gaussian(noise, s->o->noise));
      if ((err = pflex_refine_observe(w->ref[j], pw, obs))) return err;
      w->jp[j].curve = pflex_refine_curve(w->ref[j]);
    }
    if ((err = pflex_alloc_run(w->jp, n, PFLEX_ALLOC_OPTIMAL, target, &w->ao_powers, w->r, &sum)))
      return err;
    t[round] = true_tput(s, w);
  }
  return 0;
}

/* Every line's throughput on one workload at a target: w->tl[]. */
static int score_lines(const struct study *s, struct work *w, double target, double t_eq,
                       double t_or, gsl_rng *noise) {
  size_t n = s->o->jobs;
  double *tround = w->tl + s->nlines; /* rounds + 1 scratch values */
  struct pflex_alloc_summary sum;
  int err = 0;
  for (size_t l = 0; l < s->nlines && !err; l++) {
    const struct line *ln = &s->lines[l];
    switch (ln->st) {
    case PFLEX_ALLOC_EQUAL: w->tl[l] = t_eq; break;
    case PFLEX_ALLOC_ORACLE: w->tl[l] = t_or; break;
    case PFLEX_ALLOC_MOE_FT:
    case PFLEX_ALLOC_DRAM:
      err = pflex_alloc_run(w->jt, n, ln->st, target, &w->ao, w->r, &sum);
      w->tl[l] = sum.total_tput;
      break;
    case PFLEX_ALLOC_PFI:
      for (size_t j = 0; j < n; j++)
        w->jt[j].pfi = s->preds[ln->pred].pfi[w->gi[j]];
      err = pflex_alloc_run(w->jt, n, PFLEX_ALLOC_PFI, target, &w->ao, w->r, &sum);
      w->tl[l] = sum.total_tput;
      break;
    case PFLEX_ALLOC_OPTIMAL:
      /* All rounds of one prediction set come from one closed loop. */
      if (ln->round == 0) err = run_optimal(s, w, ln->pred, target, noise, tround);
      w->tl[l] = tround[ln->round];
      break;
    default: break;
    }
  }
  return err;
}

/* Per scenario and cut: the sums over the workloads the cut was feasible for. */
struct sums {
  struct acc *acc; /* cell * nlines + line */
  double *sum_or, *sum_eq;
  size_t *count;
};

static void sums_free(struct sums *m) {
  free(m->acc);
  free(m->sum_or);
  free(m->sum_eq);
  free(m->count);
}

/* One workload at every cut of scenario sc, into the sums. */
static int run_workload(const struct study *s, struct work *w, int sc, struct sums *m,
                        gsl_rng *noise) {
  size_t n = s->o->jobs;
  for (size_t c = 0; c < s->ncuts; c++) {
    double target;
    struct pflex_alloc_summary sum;
    int err = pflex_alloc_target_for_cut(w->jt, n, s->cuts[c], &target);
    if (err) return err;
    err = pflex_alloc_run(w->jt, n, PFLEX_ALLOC_ORACLE, target, &w->ao, w->r, &sum);
    if (err == -PFLEX_E_INFEASIBLE) continue; /* this workload cannot take this cut */
    if (err) return err;
    double t_or = sum.total_tput;
    if ((err = pflex_alloc_run(w->jt, n, PFLEX_ALLOC_EQUAL, target, &w->ao, w->r, &sum)))
      return err;
    double t_eq = sum.total_tput;
    if ((err = score_lines(s, w, target, t_eq, t_or, noise))) return err;
    size_t cell = (size_t)sc * s->ncuts + c;
    m->sum_or[cell] += t_or;
    m->sum_eq[cell] += t_eq;
    m->count[cell]++;
    for (size_t l = 0; l < s->nlines; l++) {
      m->acc[cell * s->nlines + l].sum_t += w->tl[l];
      if (w->tl[l] > t_or * (1 + PFLEX_STUDY_ORACLE_TOL)) m->acc[cell * s->nlines + l].above++;
    }
  }
  return 0;
}

/* Every scenario's workloads, each scenario on its own random streams so
 * that its results do not depend on whether the other ran. */
static int run_scenarios(const struct study *s, struct sums *m) {
  struct work w = {0};
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937), *noise = gsl_rng_alloc(gsl_rng_mt19937);
  int err = rng && noise ? work_alloc(&w, s) : -ENOMEM;
  size_t done = 0, total = 0;
  for (int sc = 0; sc < PFLEX_SCENARIO_N; sc++)
    if (s->o->scenarios & (1u << sc)) total += s->o->workloads;
  for (int sc = 0; sc < PFLEX_SCENARIO_N && !err; sc++) {
    if (!(s->o->scenarios & (1u << sc))) continue;
    gsl_rng_set(rng, s->o->seed * 1000003ul + (unsigned long)sc);
    gsl_rng_set(noise, s->o->seed * 7919ul + 104729ul + (unsigned long)sc);
    for (size_t wl = 0; wl < s->o->workloads && !err; wl++) {
      sample_workload(s, &w, sc, rng);
      err = run_workload(s, &w, sc, m, noise);
      pflex_progress_report(&s->o->progress, "workloads", ++done, total);
    }
  }
  work_free(&w, s->o->jobs);
  gsl_rng_free(rng);
  gsl_rng_free(noise);
  return err;
}

/* The result lines from the sums. */
static int study_results(const struct study *s, const struct sums *m,
                         struct pflex_study_result **ret, size_t *ret_n) {
  size_t nl = s->nlines, nres = 0;
  struct pflex_study_result *res = calloc(PFLEX_SCENARIO_N * s->ncuts * (nl ? nl : 1), sizeof *res);
  if (!res) return -ENOMEM;
  for (int sc = 0; sc < PFLEX_SCENARIO_N; sc++) {
    if (!(s->o->scenarios & (1u << sc))) continue;
    for (size_t c = 0; c < s->ncuts; c++) {
      size_t cell = (size_t)sc * s->ncuts + c, cnt = m->count[cell];
      double gap = m->sum_or[cell] - m->sum_eq[cell], sum_or = m->sum_or[cell];
      for (size_t l = 0; l < nl; l++) {
        const struct acc *a = &m->acc[cell * nl + l];
        const struct line *ln = &s->lines[l];
        res[nres++] = (struct pflex_study_result){
            .scenario = (enum pflex_study_scenario)sc,
            .strategy = ln->st,
            .prediction = ln->pred == (size_t)-1 ? PFLEX_PRED_TRUE : s->preds[ln->pred].mode,
            .round = ln->round,
            .cut = s->cuts[c],
            .workloads = cnt,
            .tokens_per_s = cnt ? a->sum_t / (double)cnt : NAN,
            .loss_vs_oracle = sum_or > 0 ? 1 - a->sum_t / sum_or : NAN,
            /* Relative to the gap's size: no gap at a 0% cut, or where the
             * oracle and equal agree to rounding. */
            .gap_recovered = cnt && gap > 1e-12 * sum_or ? (a->sum_t - m->sum_eq[cell]) / gap : NAN,
            .gain_per_job = cnt ? (a->sum_t - m->sum_eq[cell]) / ((double)cnt * (double)s->o->jobs)
                                : NAN,
            .above_oracle = a->above,
        };
      }
    }
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
      !(o->bandwidth > 0))
    return -EINVAL;
  for (size_t c = 0; o->cuts && c < o->ncuts; c++)
    if (!(o->cuts[c] >= 0 && o->cuts[c] <= 1)) return -EINVAL;
  for (size_t k = 0; k < npreds; k++) {
    if (!preds[k].pfi || (unsigned)preds[k].mode >= PFLEX_PRED_N) return -EINVAL;
    for (size_t i = 0; i < ngroups; i++)
      if (!isfinite(preds[k].pfi[i])) return -EINVAL;
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
  struct study s = {.g = groups, .ng = ngroups, .preds = preds, .np = npreds, .o = opts};
  s.cuts = opts->cuts ? opts->cuts : default_cuts;
  s.ncuts = opts->cuts ? opts->ncuts : sizeof default_cuts / sizeof default_cuts[0];
  struct sums m = {0};
  if (!(err = study_groups(&s)) &&
      (opts->scenarios & (1u << PFLEX_SCENARIO_PRODUCTION)) && (s.npt == 0 || s.nft == 0))
    err = -PFLEX_E_DATA;
  if (!err) err = study_curves(&s);
  if (!err) err = study_lines(&s);
  size_t ncell = PFLEX_SCENARIO_N * s.ncuts;
  if (!err) {
    m.acc = calloc(ncell * (s.nlines ? s.nlines : 1), sizeof *m.acc);
    m.sum_or = calloc(ncell, sizeof *m.sum_or);
    m.sum_eq = calloc(ncell, sizeof *m.sum_eq);
    m.count = calloc(ncell, sizeof *m.count);
    err = m.acc && m.sum_or && m.sum_eq && m.count ? 0 : -ENOMEM;
  }
  if (!err) err = run_scenarios(&s, &m);
  if (!err) err = study_results(&s, &m, ret_results, ret_n);
  sums_free(&m);
  study_release(&s);
  return err;
}
