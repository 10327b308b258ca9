/* Unit tests of one round's decision (src/controller/plan.c, jobs.c,
 * templates.c): jobs gathered from nodes and learnt uncapped, then a cut: the
 * caps fit the budget, the fallbacks fit the target, a node that stops
 * answering counts at the caps it acknowledged, and a target below the floors
 * is flagged. Where a job's curve comes from: with a `pflex fit` model, a job
 * whose agent reports the model's telemetry starts from the PFI the model
 * predicts (dram_copy computed from dram_active and mem_copy_util as for a
 * runs file), one without telemetry from the model's population prior, and
 * without a model from prior_pfi; templates from a runs file give the curves
 * another shape than the family's, and a file without two groups is refused.
 * A job that reports no throughput yet (loading) is probed, not given its
 * draw as P_max, and counted at its draw plus the largest rise one such job
 * can make; the draw under a binding cap is learnt and the cap divided by
 * it. A job given its whole draw with nothing observed of its curve is
 * probed once under a binding cap (explore.h), counted at its old draw until
 * the readings show the fall, and taken back by the allocation once the
 * probe's reading pins its curve. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "assert_near.h"
#include "controller/explore.h"
#include "controller/plan.h"
#include "controller/raises.h"
#include "controller/templates.h"

#define NNODES 4

static void node_init(struct ctl_node *nd, const char *job, double draw_w, double tput) {
  memset(nd, 0, sizeof *nd);
  nd->reachable = nd->seen = true;
  nd->ngpus = 8;
  for (size_t g = 0; g < 8; g++) {
    struct ctl_gpu_state *s = &nd->gpu[g];
    s->index = (unsigned)g;
    s->power_w = job ? draw_w : 75;
    s->limit_w = s->enforced_w = s->default_w = s->max_w = 700;
    s->min_w = 200;
    s->lease_s_left = -1;
    snprintf(s->job, sizeof s->job, "%s", job ? job : "");
  }
  if (job && tput > 0) {
    nd->njobs = 1;
    snprintf(nd->jobs[0].id, sizeof nd->jobs[0].id, "%s", job);
    nd->jobs[0].has_tput = true;
    nd->jobs[0].tput = tput;
    nd->jobs[0].tput_time = 1;
  }
}

struct fixture {
  struct ctl_node nodes[NNODES];
  struct ctl_jobset js;
  struct ctl_config cfg;
};

static int setup(void **state) {
  static struct fixture f;
  memset(&f, 0, sizeof f);
  ctl_config_defaults(&f.cfg);
  ctl_jobset_init(&f.js);
  node_init(&f.nodes[0], "dense", 690, 9000);
  node_init(&f.nodes[1], "moe", 660, 40000);
  node_init(&f.nodes[2], "wide", 680, 20000); /* a job on two nodes */
  node_init(&f.nodes[3], "wide", 680, 0);
  for (int r = 0; r < 5; r++) { /* uncapped rounds: P_max and T_max learnt */
    assert_int_equal(ctl_jobset_gather(&f.js, f.nodes, NNODES, r, 120), 0);
    ctl_jobset_learn(&f.js, &f.cfg);
  }
  *state = &f;
  return 0;
}

static int teardown(void **state) {
  struct fixture *f = *state;
  ctl_jobset_release(&f->js);
  return 0;
}

static double node_caps(const struct ctl_node *nd) {
  double s = 0;
  for (size_t g = 0; g < nd->ngpus; g++)
    s += nd->cap_w[g];
  return s;
}

static void jobs_are_gathered_across_nodes(void **state) {
  struct fixture *f = *state;
  assert_int_equal(f->js.n, 3);
  struct ctl_job *w = ctl_jobset_find(&f->js, "wide");
  assert_non_null(w);
  assert_int_equal(w->gpus, 16);
  assert_near(w->p_max, 16 * 680, 1e-6);
  assert_near(w->t_max, 20000, 1e-6);
  assert_non_null(ctl_job_curve(w));
}

static void caps_fit_the_budget_and_fallbacks_the_target(void **state) {
  struct fixture *f = *state;
  double uncapped = 8 * 690 + 8 * 660 + 16 * 680, target = 0.7 * uncapped, budget = target * 1.01;
  struct ctl_plan_summary s;
  assert_int_equal(ctl_plan(f->nodes, NNODES, &f->js, &f->cfg, budget, target, 5600, &s), 0);
  assert_false(s.infeasible);
  assert_false(s.saturated);
  assert_int_equal(s.jobs, 3);
  double caps = 0;
  for (size_t k = 0; k < NNODES; k++) {
    caps += node_caps(&f->nodes[k]);
    assert_true(f->nodes[k].fallback_w * 8 <= node_caps(&f->nodes[k]) + 1e-9);
  }
  /* Within the budget, but for the 3% a job given its whole draw may draw above it. */
  double top = 0, probes = 0;
  for (size_t i = 0; i < f->js.n; i++) {
    const struct ctl_job *j = &f->js.v[i];
    if (j->cap_w * j->gpus > j->alloc_w + 1e-9)
      top += 0.03 * j->alloc_w + j->gpus; /* + rounding up, 1 W a GPU */
    if (ctl_explore_active(j)) probes += j->alloc_w - j->cap_w * j->gpus;
  }
  if (caps > budget + top) fail_msg("caps %.1f > budget %.1f + %.1f", caps, budget, top);
  /* The budget is used, but for what a probe starting now frees: it goes to
   * the others once the readings show it (a_job_at_its_whole_draw_is_probed). */
  assert_true(caps + probes >= 0.98 * budget);
  assert_true(s.fallback_w <= target);
  /* One cap per job, the same on every GPU of the job, in range. */
  struct ctl_job *w = ctl_jobset_find(&f->js, "wide");
  assert_true(w->cap_w >= 200 && w->cap_w <= 700);
  for (size_t g = 0; g < 8; g++)
    assert_near(f->nodes[3].cap_w[g], w->cap_w, 0);
}

static void an_unreachable_node_counts_at_its_acknowledged_caps(void **state) {
  struct fixture *f = *state;
  struct ctl_node *nd = &f->nodes[1];
  nd->has_acked = true;
  for (size_t g = 0; g < 8; g++)
    nd->acked_w[g] = 450;
  nd->reachable = false;
  assert_near(ctl_node_bound_w(nd, 5600), 8 * 450, 0);
  assert_int_equal(ctl_jobset_gather(&f->js, f->nodes, NNODES, 10, 120), 0);
  ctl_jobset_learn(&f->js, &f->cfg);
  struct ctl_plan_summary s;
  double target = 20000;
  assert_int_equal(ctl_plan(f->nodes, NNODES, &f->js, &f->cfg, target, target, 5600, &s), 0);
  assert_near(s.fixed_w, 8 * 450, 1e-9); /* its job is not allocated; the others absorb it */
  assert_int_equal(s.jobs, 2);
  nd->has_acked = false; /* never capped by us: the most its GPUs can draw */
  assert_near(ctl_node_bound_w(nd, 5600), 8 * 700, 0);
}

static void a_target_below_the_floors_is_flagged(void **state) {
  struct fixture *f = *state;
  struct ctl_plan_summary s;
  assert_int_equal(ctl_plan(f->nodes, NNODES, &f->js, &f->cfg, 1000, 1000, 5600, &s), 0);
  assert_true(s.infeasible);
  for (size_t k = 0; k < NNODES; k++)
    for (size_t g = 0; g < 8; g++)
      assert_near(f->nodes[k].cap_w[g], 200, 0); /* every GPU at its least */
}

/* A target the caps cannot reach is flagged even where the jobs' budget
 * fits their curves: a job still probed (a new job of 8 GPUs whose least
 * limits sum to 1,600 W) under 1,000 W, and a node without jobs whose idle
 * draw (8 x 75 W) is above the target. */
static void a_target_below_the_least_total_is_flagged(void **state) {
  struct fixture *f = *state;
  struct ctl_node nd[1];
  node_init(&nd[0], "new", 600, 0);
  struct ctl_jobset js;
  ctl_jobset_init(&js);
  assert_int_equal(ctl_jobset_gather(&js, nd, 1, 0, 120), 0);
  ctl_jobset_learn(&js, &f->cfg);
  struct ctl_plan_summary s;
  assert_int_equal(ctl_plan(nd, 1, &js, &f->cfg, 1000, 1000, 5600, &s), 0);
  assert_near(s.least_w, 8 * 200, 0);
  assert_true(s.infeasible);
  assert_int_equal(ctl_plan(nd, 1, &js, &f->cfg, 1700, 1700, 5600, &s), 0);
  assert_false(s.infeasible);
  ctl_jobset_release(&js);
  struct ctl_node idle[1];
  node_init(&idle[0], NULL, 0, 0);
  struct ctl_jobset none;
  ctl_jobset_init(&none);
  assert_int_equal(ctl_plan(idle, 1, &none, &f->cfg, 420, 420, 5600, &s), 0);
  assert_near(s.least_w, 8 * 75, 0);
  assert_true(s.infeasible);
  assert_int_equal(ctl_plan(idle, 1, &none, &f->cfg, 700, 700, 5600, &s), 0);
  assert_false(s.infeasible);
  /* A job may start on them with no plan to answer: the draw can climb from
   * 75 W to the least cap on every GPU (feedback.h, ctl_feedback_reserve). */
  assert_near(s.rise_w, 8 * (200 - 75), 1e-9);
  ctl_jobset_release(&none);
}

/* Telemetry as an agent reports it for the node's job. */
static void set_telemetry(struct ctl_node *nd, double dram, double copy) {
  struct ctl_telemetry *t = &nd->jobs[0].telemetry;
  t->n = 2;
  snprintf(t->name[0], sizeof t->name[0], "dram_active");
  snprintf(t->name[1], sizeof t->name[1], "mem_copy_util");
  t->value[0] = dram;
  t->value[1] = copy;
}

/* PFI = 1 + 2 x dram_copy; population prior 1.7. */
static void model_init(struct pflex_model *m) {
  pflex_model_init(m);
  m->kind = PFLEX_MODEL_OLS;
  assert_int_equal(pflex_featlist_add(&m->feats, "dram_copy"), 0);
  m->lin.p = 1;
  m->lin.intercept = 1.0;
  m->lin.coef = calloc(1, sizeof(double));
  m->lin.mean = calloc(1, sizeof(double));
  m->lin.sd = calloc(1, sizeof(double));
  m->lin.beta_std = calloc(1, sizeof(double));
  m->lin.coef[0] = 2.0;
  m->lin.sd[0] = 1;
  m->prior_mean = 1.7;
}

static void learn(struct ctl_jobset *js, struct ctl_node *nodes, size_t n,
                  const struct ctl_config *cfg) {
  for (int r = 0; r < 4; r++) {
    assert_int_equal(ctl_jobset_gather(js, nodes, n, r, 120), 0);
    ctl_jobset_learn(js, cfg);
  }
}

static void model_pfi_from_telemetry(void **state) {
  (void)state;
  struct ctl_config cfg;
  ctl_config_defaults(&cfg);
  struct pflex_model m;
  model_init(&m);
  struct ctl_jobset js;
  ctl_jobset_init(&js);
  js.model = &m;
  struct ctl_node nodes[2];
  node_init(&nodes[0], "seen", 650, 10000);
  set_telemetry(&nodes[0], 50, 40); /* percent: dram_copy = 0.5 x 0.4 = 0.2 */
  node_init(&nodes[1], "dark", 650, 10000);
  learn(&js, nodes, 2, &cfg);
  const struct ctl_job *a = ctl_jobset_find(&js, "seen"), *b = ctl_jobset_find(&js, "dark");
  assert_non_null(a);
  assert_non_null(b);
  assert_near(a->prior_pfi, 1.4, 1e-9);
  assert_near(a->model_pfi, 1.4, 1e-9);
  assert_near(b->prior_pfi, 1.7, 1e-9);
  assert_true(b->model_pfi == 0);
  assert_non_null(ctl_job_curve(a));
  ctl_jobset_release(&js);
  js.model = NULL; /* without a model: the configured prior */
  learn(&js, nodes, 2, &cfg);
  assert_near(ctl_jobset_find(&js, "seen")->prior_pfi, cfg.prior_pfi, 1e-12);
  ctl_jobset_release(&js);
  pflex_model_release(&m);
}

static void templates_shape_the_curves(void **state) {
  (void)state;
  struct ctl_templates t;
  char err[512];
  assert_int_equal(
      ctl_templates_load(PFLEX_SOURCE_DIR "/data/reference/runs.csv", &t, err, sizeof err), 0);
  assert_true(t.n >= 2);
  struct ctl_config cfg;
  ctl_config_defaults(&cfg);
  struct ctl_jobset js;
  ctl_jobset_init(&js);
  js.templates = t.curves;
  js.ntemplates = t.n;
  struct ctl_node nodes[1];
  node_init(&nodes[0], "job", 650, 10000);
  learn(&js, nodes, 1, &cfg);
  const struct pflex_curve *c = ctl_job_curve(ctl_jobset_find(&js, "job"));
  assert_non_null(c);
  assert_near(pflex_curve_t_max(c), 10000, 1);
  double p = 0.6 * pflex_curve_p_max(c), shaped = pflex_curve_eval(c, p);
  ctl_jobset_release(&js);
  ctl_jobset_init(&js); /* the same job on the family alone: another curve */
  learn(&js, nodes, 1, &cfg);
  double family = pflex_curve_eval(ctl_job_curve(ctl_jobset_find(&js, "job")), p);
  assert_true(fabs(shaped - family) > 1e-3 * family);
  ctl_jobset_release(&js);
  ctl_templates_release(&t);
  char one[64];
  snprintf(one, sizeof one, "/tmp/pflex-ctl-one-group.%ld.csv", (long)getpid());
  FILE *f = fopen(one, "w");
  assert_non_null(f);
  fprintf(f, "group,gpu,gpus,cap_w,power_w,tokens_per_s\na,H100,8,700,5000,100\na,H100,8,400,3000,80\n");
  fclose(f);
  assert_true(ctl_templates_load(one, &t, err, sizeof err) < 0);
  assert_non_null(strstr(err, "at least two sweep groups"));
  unlink(one);
}


/* Rounds of the nodes as they are now (times from t0). */
static void rounds(struct fixture *f, struct ctl_node *nodes, size_t n, int t0, int k) {
  for (int r = 0; r < k; r++) {
    assert_int_equal(ctl_jobset_gather(&f->js, nodes, n, t0 + r, 120), 0);
    ctl_jobset_learn(&f->js, &f->cfg);
  }
}

/* A job that reports no throughput yet and draws under its least limit
 * (loading) is not given its draw as its P_max: it is probed at the equal share, and counted at its draw, plus
 * room for the largest rise one loading job can make to its cap. Once it
 * reports, its uncapped draw is learnt. */
static void a_loading_job_is_probed_not_pinned(void **state) {
  struct fixture *f = *state;
  struct ctl_node nodes[NNODES + 2];
  memcpy(nodes, f->nodes, sizeof f->nodes);
  node_init(&nodes[NNODES], "loading", 80, 0);
  node_init(&nodes[NNODES + 1], "loading2", 90, 0);
  rounds(f, nodes, NNODES + 2, 10, 5);
  struct ctl_job *j = ctl_jobset_find(&f->js, "loading");
  assert_non_null(j);
  assert_true(j->p_max == 0);
  assert_true(j->probe);
  double uncapped = 8 * 690 + 8 * 660 + 16 * 680, target = 0.7 * uncapped;
  struct ctl_plan_summary s;
  assert_int_equal(ctl_plan(nodes, NNODES + 2, &f->js, &f->cfg, target, target, 5600, &s), 0);
  const struct ctl_job *j2 = ctl_jobset_find(&f->js, "loading2");
  assert_near(j->cap_w, 200, 0); /* held near its draw: its least cap */
  assert_near(j2->cap_w, 200, 0);
  double rise = fmax(1600 - 1.1 * 8 * 80, 1600 - 1.1 * 8 * 90);
  assert_near(s.fixed_w, 1.1 * 8 * 80 + 1.1 * 8 * 90 + rise, 1e-6);
  /* Without a plan to answer, both could climb to their caps at once. */
  assert_near(s.rise_w, 8 * (200 - 80) + 8 * (200 - 90), 1e-6);
  assert_true(s.fallback_w <= target);
  /* A job that reports no throughput but draws above its least limit is
   * not loading: its draw is its P_max (its class's floor holds on it). */
  struct ctl_node silent[1];
  node_init(&silent[0], "silent", 600, 0);
  struct ctl_jobset js;
  ctl_jobset_init(&js);
  for (int r = 0; r < 4; r++) {
    assert_int_equal(ctl_jobset_gather(&js, silent, 1, r, 120), 0);
    ctl_jobset_learn(&js, &f->cfg);
  }
  assert_near(ctl_jobset_find(&js, "silent")->p_max, 8 * 600, 1e-6);
  ctl_jobset_release(&js);
  /* It trains now: its draw while it reports throughput is its P_max. */
  node_init(&nodes[NNODES], "loading", 650, 30000);
  rounds(f, nodes, NNODES + 2, 20, 4);
  assert_near(j->p_max, 8 * 650, 1e-6);
  assert_false(j->probe);
}

/* Under a binding cap a job's GPUs draw a little under it: that share is
 * learnt, and the next cap is divided by it so that the job draws what it
 * is given. */
static void the_draw_under_a_binding_cap_is_learnt(void **state) {
  struct fixture *f = *state;
  struct ctl_job *d = ctl_jobset_find(&f->js, "dense");
  assert_true(d->draw_ratio == 0); /* never capped */
  for (size_t g = 0; g < 8; g++) {
    f->nodes[0].gpu[g].limit_w = f->nodes[0].gpu[g].enforced_w = 500;
    f->nodes[0].gpu[g].power_w = 0.98 * 500;
  }
  rounds(f, f->nodes, NNODES, 10, 6);
  assert_near(d->draw_ratio, 0.98, 1e-9);
  double uncapped = 8 * 690 + 8 * 660 + 16 * 680, target = 0.7 * uncapped;
  struct ctl_plan_summary s;
  assert_int_equal(ctl_plan(f->nodes, NNODES, &f->js, &f->cfg, target, target, 5600, &s), 0);
  double cap = pflex_curve_cap_for_power(ctl_job_curve(d), d->alloc_w, 8, 200, 700);
  assert_true(cap < 690);
  assert_near(d->cap_w, floor(fmin(cap / 0.98, 700)), 0);
  /* A cap above the job's demand says nothing of the limiter. */
  struct ctl_job *m = ctl_jobset_find(&f->js, "moe");
  for (size_t g = 0; g < 8; g++)
    f->nodes[1].gpu[g].limit_w = f->nodes[1].gpu[g].enforced_w = 690; /* above its 660 W */
  rounds(f, f->nodes, NNODES, 20, 4);
  assert_true(m->draw_ratio == 0);
}

/* A restarted controller finds its jobs capped (never uncapped): seeded with
 * what the store kept, a job is allocated on its curve at once, not probed. */
static void a_seeded_job_is_not_probed_again(void **state) {
  struct fixture *f = *state;
  struct ctl_learnt_row kept[1];
  assert_int_equal(ctl_jobset_learnt(&f->js, kept, 1), 1); /* the first by id: dense */
  assert_string_equal(kept[0].job, "dense");
  struct ctl_jobset js;
  ctl_jobset_init(&js);
  assert_int_equal(ctl_jobset_seed(&js, kept, 1, 100), 0);
  for (size_t g = 0; g < 8; g++)
    f->nodes[0].gpu[g].limit_w = f->nodes[0].gpu[g].enforced_w = 500; /* capped */
  for (int r = 0; r < 3; r++) {
    assert_int_equal(ctl_jobset_gather(&js, f->nodes, 1, 100 + r, 120), 0);
    ctl_jobset_learn(&js, &f->cfg);
  }
  const struct ctl_job *d = ctl_jobset_find(&js, "dense");
  assert_non_null(d);
  assert_false(d->probe);
  assert_near(d->p_max, 8 * 690, 1e-6);
  assert_near(d->t_max, 9000, 1e-6);
  const struct pflex_curve *c = ctl_job_curve(d);
  assert_non_null(c);
  assert_near(pflex_curve_eval(c, pflex_curve_p_max(c)), 9000, 1e-6 * 9000);
  ctl_jobset_release(&js);
}

/* Only what changed goes to the store: once saved, a round that learnt
 * nothing new gives no row; a moved P_max gives that job's row; a job
 * forgotten (not seen for forget_s) is named for its row to be deleted. */
static void only_changed_learnt_values_are_written(void **state) {
  struct fixture *f = *state;
  struct ctl_learnt_row v[3];
  assert_int_equal(ctl_jobset_learnt(&f->js, v, 3), 3);
  ctl_jobset_learnt_saved(&f->js);
  assert_int_equal(ctl_jobset_learnt(&f->js, v, 3), 0);
  for (size_t g = 0; g < 8; g++)
    f->nodes[1].gpu[g].power_w = 600; /* moe draws less: its P_max moves */
  assert_int_equal(ctl_jobset_gather(&f->js, f->nodes, NNODES, 5, 120), 0);
  ctl_jobset_learn(&f->js, &f->cfg);
  assert_int_equal(ctl_jobset_learnt(&f->js, v, 3), 1);
  assert_string_equal(v[0].job, "moe");
  ctl_jobset_learnt_saved(&f->js);
  f->nodes[0].ngpus = 0; /* dense ended */
  assert_int_equal(ctl_jobset_gather(&f->js, f->nodes, NNODES, 6, 120), 0);
  assert_int_equal(f->js.ngone, 0); /* not seen this round, not yet forgotten */
  assert_int_equal(ctl_jobset_gather(&f->js, f->nodes, NNODES, 200, 120), 0);
  assert_int_equal(f->js.ngone, 1);
  assert_string_equal(f->js.gone[0], "dense");
  ctl_jobset_learnt_saved(&f->js);
  assert_int_equal(f->js.ngone, 0);
}

/* The config's one class: jobs matching glob, weight 1, the floor given. */
static void one_class(struct fixture *f, const char *name, const char *glob, double floor_pct) {
  f->cfg.nclasses = 1;
  struct ctl_class *c = &f->cfg.classes[0];
  memset(c, 0, sizeof *c);
  snprintf(c->name, sizeof c->name, "%s", name);
  snprintf(c->match, sizeof c->match, "%s", glob);
  c->weight = 1;
  c->floor_pct = floor_pct;
}

/* A class's floor holds for a job whose curve has no observation yet (its
 * curve reports no T_max of its own: the floor is taken at its P_max). */
static void a_class_floor_holds_before_any_observation(void **state) {
  struct fixture *f = *state;
  one_class(f, "keep", "dense", 90);
  rounds(f, f->nodes, NNODES, 10, 1);
  struct ctl_job *d = ctl_jobset_find(&f->js, "dense");
  assert_true(d->observations == 0);
  double uncapped = 8 * 690 + 8 * 660 + 16 * 680, target = 0.7 * uncapped;
  struct ctl_plan_summary s;
  assert_int_equal(ctl_plan(f->nodes, NNODES, &f->js, &f->cfg, target, target, 5600, &s), 0);
  assert_false(s.infeasible);
  if (!(d->pred_tput >= 0.9 * 9000 - 1e-6)) fail_msg("dense at %.0f of 9000", d->pred_tput);
}

/* Floors that do not all fit are scaled down together, not dropped: every
 * job (all of class "rigid", 99%) keeps the same share of its floor, the
 * largest that fits, and the summary says how much. */
static void floors_that_do_not_fit_are_scaled_not_dropped(void **state) {
  struct fixture *f = *state;
  one_class(f, "rigid", "*", 99);
  rounds(f, f->nodes, NNODES, 10, 1);
  double uncapped = 8 * 690 + 8 * 660 + 16 * 680, target = 0.7 * uncapped;
  struct ctl_plan_summary s;
  assert_int_equal(ctl_plan(f->nodes, NNODES, &f->js, &f->cfg, target, target, 5600, &s), 0);
  assert_false(s.infeasible);
  if (!(s.floor_scale > 0.3 && s.floor_scale < 1)) fail_msg("floor_scale %g", s.floor_scale);
  for (size_t i = 0; i < f->js.n; i++) {
    const struct ctl_job *j = &f->js.v[i];
    const struct pflex_curve *cv = ctl_job_curve(j);
    double t_top = pflex_curve_eval(cv, pflex_curve_p_max(cv)), held = j->pred_tput / t_top;
    if (!(held >= 0.99 * s.floor_scale - 1e-6))
      fail_msg("%s at %.4f of its top, floors scaled to %.4f", j->id, held, s.floor_scale);
  }
  /* With room for every floor, they hold whole again. */
  assert_int_equal(ctl_plan(f->nodes, NNODES, &f->js, &f->cfg, uncapped, uncapped, 5600, &s), 0);
  assert_near(s.floor_scale, 1, 0);
}

/* One node listed twice (the same GPU UUIDs): the later one counts once. */
static void a_node_listed_twice_counts_once(void **state) {
  (void)state;
  struct ctl_node nd[3];
  node_init(&nd[0], "a", 600, 1000);
  node_init(&nd[1], "a", 600, 1000);
  node_init(&nd[2], "b", 600, 1000);
  for (size_t g = 0; g < 8; g++) {
    snprintf(nd[0].gpu[g].uuid, sizeof nd[0].gpu[g].uuid, "GPU-a-%zu", g);
    snprintf(nd[1].gpu[g].uuid, sizeof nd[1].gpu[g].uuid, "GPU-a-%zu", g);
    snprintf(nd[2].gpu[g].uuid, sizeof nd[2].gpu[g].uuid, "GPU-b-%zu", g);
  }
  assert_int_equal(ctl_nodes_mark_duplicates(nd, 3, NULL), 1);
  assert_false(nd[0].duplicate);
  assert_true(nd[1].duplicate);
  assert_int_equal(nd[1].duplicate_of, 0);
  assert_int_equal(nd[1].ngpus, 0);
  assert_int_equal(nd[1].njobs, 0);
  assert_false(nd[2].duplicate);
  assert_int_equal(nd[2].ngpus, 8);
  /* An unreachable node's old view is not compared; one shared GPU is enough. */
  node_init(&nd[1], "a", 600, 1000);
  nd[1].reachable = false;
  snprintf(nd[1].gpu[0].uuid, sizeof nd[1].gpu[0].uuid, "GPU-a-0");
  snprintf(nd[2].gpu[5].uuid, sizeof nd[2].gpu[5].uuid, "GPU-a-3");
  assert_int_equal(ctl_nodes_mark_duplicates(nd, 3, NULL), 1);
  assert_false(nd[1].duplicate);
  assert_true(nd[2].duplicate);
  assert_int_equal(nd[2].duplicate_of, 0);
  /* With a digest kept between rounds: none listed twice, then the same GPUs
   * (no sort, none found), then a node reporting another's GPU again (found,
   * and checked again in every round while it lasts). */
  uint64_t sig = 0;
  node_init(&nd[2], "b", 600, 1000);
  for (size_t g = 0; g < 8; g++)
    snprintf(nd[2].gpu[g].uuid, sizeof nd[2].gpu[g].uuid, "GPU-b-%zu", g);
  assert_int_equal(ctl_nodes_mark_duplicates(nd, 3, &sig), 0);
  assert_true(sig != 0);
  uint64_t none = sig;
  assert_int_equal(ctl_nodes_mark_duplicates(nd, 3, &sig), 0);
  assert_true(sig == none);
  snprintf(nd[2].gpu[7].uuid, sizeof nd[2].gpu[7].uuid, "GPU-a-1");
  for (int round = 0; round < 2; round++) {
    nd[2].ngpus = 8; /* each round's view is read again */
    assert_int_equal(ctl_nodes_mark_duplicates(nd, 3, &sig), 1);
    assert_true(nd[2].duplicate);
    assert_int_equal(sig, 0);
  }
}

/* Sets what a job's GPUs are read at, on every node it runs on. */
static void job_reads(struct ctl_node *nodes, size_t n, const char *id, double limit_w,
                      double power_w, double tput, double t) {
  for (size_t k = 0; k < n; k++) {
    for (size_t g = 0; g < nodes[k].ngpus; g++)
      if (strcmp(nodes[k].gpu[g].job, id) == 0) {
        nodes[k].gpu[g].limit_w = nodes[k].gpu[g].enforced_w = limit_w;
        nodes[k].gpu[g].power_w = power_w;
      }
    if (nodes[k].njobs && strcmp(nodes[k].jobs[0].id, id) == 0 && nodes[k].jobs[0].has_tput) {
      nodes[k].jobs[0].tput = tput;
      nodes[k].jobs[0].tput_time = t;
    }
  }
}

static double others_alloc_w(const struct ctl_jobset *js, const struct ctl_job *p) {
  double s = 0;
  for (size_t i = 0; i < js->n; i++)
    if (&js->v[i] != p) s += js->v[i].alloc_w;
  return s;
}

/* A job the allocation gives its whole draw gets a cap above it, which never
 * binds: nothing would ever be observed of its curve. Once, while its curve
 * has no observation, it is held at a probe cap under its draw. The power
 * that frees is not handed out until the readings show it freed (while they
 * still show the old draw, the job counts at it); then it is, and once the
 * probe's reading has refined the curve the job goes back to the
 * allocation and is not probed again. */
static void a_job_at_its_whole_draw_is_probed(void **state) {
  struct fixture *f = *state;
  double uncapped = 8 * 690 + 8 * 660 + 16 * 680, target = 0.7 * uncapped;
  struct ctl_plan_summary s;
  assert_int_equal(ctl_plan(f->nodes, NNODES, &f->js, &f->cfg, target, target, 5600, &s), 0);
  struct ctl_job *p = NULL;
  for (size_t i = 0; i < f->js.n; i++)
    if (ctl_explore_active(&f->js.v[i])) p = &f->js.v[i];
  assert_non_null(p); /* the fixture's cut leaves one job its whole draw */
  double per_gpu = p->p_max / p->gpus, cap = floor(CTL_EXPLORE_DEPTH * per_gpu);
  assert_near(p->cap_w, cap, 0);
  assert_false(p->at_top);
  assert_near(p->alloc_w, p->p_max, 1e-3 * p->p_max); /* counted at its whole draw */
  for (size_t k = 0; k < NNODES; k++)
    for (size_t g = 0; g < 8; g++)
      if (strcmp(f->nodes[k].gpu[g].job, p->id) == 0) assert_near(f->nodes[k].cap_w[g], cap, 0);
  double others = others_alloc_w(&f->js, p);
  /* The limit is set, the reading still shows the old draw: nothing freed. */
  job_reads(f->nodes, NNODES, p->id, cap, per_gpu, p->t_max, 10);
  rounds(f, f->nodes, NNODES, 10, 1);
  assert_int_equal(ctl_plan(f->nodes, NNODES, &f->js, &f->cfg, target, target, 5600, &s), 0);
  assert_true(ctl_explore_active(p));
  assert_near(p->cap_w, cap, 0);
  assert_near(p->alloc_w, p->power_w, 1e-9);
  assert_true(others_alloc_w(&f->js, p) <= others + 1e-6 * others);
  /* The reading shows the fall: the others get what it freed. */
  double t_probe = 0.99 * p->t_max;
  job_reads(f->nodes, NNODES, p->id, cap, 0.98 * cap, t_probe, 11);
  rounds(f, f->nodes, NNODES, 11, 1);
  assert_int_equal(ctl_plan(f->nodes, NNODES, &f->js, &f->cfg, target, target, 5600, &s), 0);
  assert_true(ctl_explore_active(p));
  assert_near(p->alloc_w, p->gpus * cap, 1e-9);
  double freed = p->p_max - p->gpus * cap;
  assert_true(others_alloc_w(&f->js, p) >= others + 0.9 * freed);
  double caps = 0;
  for (size_t k = 0; k < NNODES; k++)
    caps += node_caps(&f->nodes[k]);
  assert_true(caps <= target + 0.03 * target);
  /* The cap holds, its throughput is read: an observation, the probe ends. */
  for (int r = 0; r < 3; r++) {
    job_reads(f->nodes, NNODES, p->id, cap, 0.98 * cap, t_probe, 12 + r);
    rounds(f, f->nodes, NNODES, 12 + r, 1);
  }
  assert_true(ctl_job_confidence(p) > 0);
  assert_int_equal(ctl_plan(f->nodes, NNODES, &f->js, &f->cfg, target, target, 5600, &s), 0);
  assert_false(ctl_explore_active(p));
  assert_true(p->explored);
  assert_int_equal(s.jobs, 3); /* back in the allocation */
  p->at_top = true; /* even given its whole draw again: probed once only */
  assert_false(ctl_explore_wanted(p));
}

/* A job whose PFI its telemetry predicted (the model file) is not probed at
 * its whole draw: its prior is its own, and probing such jobs cost more than
 * it gained in the simulated cluster (docs/controller.md, "Fourteenth
 * round"). The same cut as above leaves one job its whole draw; with every
 * job's PFI its own, none is probed and that one keeps a cap above its draw. */
static void a_job_with_its_own_pfi_is_not_probed(void **state) {
  struct fixture *f = *state;
  for (size_t i = 0; i < f->js.n; i++)
    f->js.v[i].model_pfi = f->js.v[i].prior_pfi; /* as job_pfi sets it: no new prior */
  double uncapped = 8 * 690 + 8 * 660 + 16 * 680, target = 0.7 * uncapped;
  struct ctl_plan_summary s;
  assert_int_equal(ctl_plan(f->nodes, NNODES, &f->js, &f->cfg, target, target, 5600, &s), 0);
  size_t top = 0;
  for (size_t i = 0; i < f->js.n; i++) {
    struct ctl_job *j = &f->js.v[i];
    assert_false(ctl_explore_active(j));
    assert_false(ctl_explore_wanted(j));
    if (!j->at_top) continue;
    top++;
    assert_true(j->cap_w * j->gpus >= j->p_max);
    j->model_pfi = 0; /* the population's prior: probed */
    assert_true(ctl_explore_wanted(j));
  }
  assert_int_equal(top, 1);
}

/* A raise pushed last round counts until the readings show it: a job whose
 * GPUs draw under the raised limits has the difference in flight (at most
 * its raise), one whose reading shows it has none, one not read has all.
 * Where the raised limits still bind (under the job's uncapped draw), what a
 * reading a round late does not show counts one round more, then no more;
 * a raise to limits above that draw counts once (it may never show). */
static void raises_count_until_the_readings_show_them(void **state) {
  struct fixture *f = *state;
  struct ctl_job *d = ctl_jobset_find(&f->js, "dense"), *m = ctl_jobset_find(&f->js, "moe");
  for (size_t g = 0; g < 8; g++) { /* raised to 500 W; the reading shows 450 W a GPU */
    f->nodes[0].gpu[g].limit_w = f->nodes[0].gpu[g].enforced_w = 500;
    f->nodes[0].gpu[g].power_w = 450;
    f->nodes[1].gpu[g].limit_w = f->nodes[1].gpu[g].enforced_w = 400; /* shows its raise */
    f->nodes[1].gpu[g].power_w = 400;
  }
  rounds(f, f->nodes, NNODES, 10, 1);
  d->raised_w = 8 * 100; /* from 400 W */
  m->raised_w = 8 * 50;
  assert_true(d->p_max > 8 * 500 / 0.97); /* 500 W a GPU binds */
  assert_near(ctl_jobset_raises_in_flight(&f->js), 8 * 50, 1e-9);
  assert_true(d->raised_w == 0 && m->raised_w == 0);
  assert_near(ctl_jobset_raises_in_flight(&f->js), 8 * 50, 1e-9); /* a round late */
  assert_near(ctl_jobset_raises_in_flight(&f->js), 0, 0);         /* then no more */
  double p_max = d->p_max;
  d->p_max = 8 * 500 / 0.98; /* limits above 0.97 of its draw: may never show */
  d->raised_w = 8 * 100;
  assert_near(ctl_jobset_raises_in_flight(&f->js), 8 * 50, 1e-9);
  assert_near(ctl_jobset_raises_in_flight(&f->js), 0, 0); /* counted once */
  d->p_max = p_max;
  d->raised_w = 8 * 20; /* at most the raise */
  assert_near(ctl_jobset_raises_in_flight(&f->js), 8 * 20, 1e-9);
  assert_near(ctl_jobset_raises_in_flight(&f->js), 8 * 20, 1e-9);
  assert_near(ctl_jobset_raises_in_flight(&f->js), 0, 0);
  f->nodes[0].reachable = false; /* not read this round: all of it */
  rounds(f, f->nodes, NNODES, 11, 1);
  d->raised_w = 8 * 100;
  assert_near(ctl_jobset_raises_in_flight(&f->js), 8 * 100, 1e-9);
}

/* Node 0's job "dense" held at 400 W a GPU (acknowledged) and planned at
 * 500 W: an 800 W raise; every other GPU keeps its cap. */
static void plan_a_raise(struct fixture *f) {
  for (size_t i = 0; i < NNODES; i++) {
    struct ctl_node *nd = &f->nodes[i];
    nd->has_acked = true;
    for (size_t g = 0; g < nd->ngpus; g++)
      nd->cap_w[g] = nd->acked_w[g] = i == 0 ? 400 : 600;
  }
  for (size_t g = 0; g < 8; g++)
    f->nodes[0].cap_w[g] = 500;
  ctl_jobset_find(&f->js, "dense")->at_top = false;
}

/* Raises fill the room the last reading leaves under the target itself, not
 * under target + max_over (the compliance band's edge): a reading inside the
 * band lets no raise through, one 300 W under the target lets 300 W of the
 * 800 W through, every GPU's raise scaled alike. */
static void raises_fill_to_the_target_not_the_band(void **state) {
  struct fixture *f = *state;
  struct ctl_job *d = ctl_jobset_find(&f->js, "dense");
  const double target = 20000;
  assert_near(ctl_jobset_raises_in_flight(&f->js), 0, 0);
  plan_a_raise(f);
  double withheld = ctl_limit_raises(f->nodes, NNODES, &f->js, target, target * 1.005);
  assert_near(withheld, 800, 0);
  for (size_t g = 0; g < 8; g++)
    assert_near(f->nodes[0].cap_w[g], 400, 0);
  assert_near(f->nodes[1].cap_w[0], 600, 0); /* no raise: untouched */
  assert_near(d->raised_w, 0, 0);

  plan_a_raise(f);
  withheld = ctl_limit_raises(f->nodes, NNODES, &f->js, target, target - 300);
  double pushed = 0;
  for (size_t g = 0; g < 8; g++) {
    assert_near(f->nodes[0].cap_w[g], 437, 0); /* floor(400 + 300/800 x 100) */
    pushed += f->nodes[0].cap_w[g] - 400;
  }
  assert_near(pushed, 8 * 37, 0);
  assert_near(withheld, 800 - pushed, 1e-9);
  assert_near(d->raised_w, pushed, 1e-9);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(jobs_are_gathered_across_nodes, setup, teardown),
      cmocka_unit_test_setup_teardown(caps_fit_the_budget_and_fallbacks_the_target, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(an_unreachable_node_counts_at_its_acknowledged_caps, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(a_target_below_the_floors_is_flagged, setup, teardown),
      cmocka_unit_test_setup_teardown(a_target_below_the_least_total_is_flagged, setup, teardown),
      cmocka_unit_test_setup_teardown(a_loading_job_is_probed_not_pinned, setup, teardown),
      cmocka_unit_test_setup_teardown(the_draw_under_a_binding_cap_is_learnt, setup, teardown),
      cmocka_unit_test_setup_teardown(a_seeded_job_is_not_probed_again, setup, teardown),
      cmocka_unit_test_setup_teardown(only_changed_learnt_values_are_written, setup, teardown),
      cmocka_unit_test_setup_teardown(a_class_floor_holds_before_any_observation, setup, teardown),
      cmocka_unit_test_setup_teardown(floors_that_do_not_fit_are_scaled_not_dropped, setup,
                                      teardown),
      cmocka_unit_test(a_node_listed_twice_counts_once),
      cmocka_unit_test_setup_teardown(a_job_with_its_own_pfi_is_not_probed, setup, teardown),
      cmocka_unit_test_setup_teardown(a_job_at_its_whole_draw_is_probed, setup, teardown),
      cmocka_unit_test_setup_teardown(raises_count_until_the_readings_show_them, setup, teardown),
      cmocka_unit_test_setup_teardown(raises_fill_to_the_target_not_the_band, setup, teardown),
      cmocka_unit_test(model_pfi_from_telemetry),
      cmocka_unit_test(templates_shape_the_curves),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
