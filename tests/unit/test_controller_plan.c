/* Unit tests of one round's decision (src/controller/plan.c, jobs.c): jobs
 * gathered from nodes and learnt uncapped, then a cut: the caps fit the
 * budget, the fallbacks fit the target, a node that stops answering counts at
 * the caps it acknowledged, and a target below the floors is flagged. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "assert_near.h"
#include "controller/plan.h"

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
  double top = 0;
  for (size_t i = 0; i < f->js.n; i++)
    if (f->js.v[i].cap_w * f->js.v[i].gpus > f->js.v[i].alloc_w + 1e-9)
      top += 0.03 * f->js.v[i].alloc_w + f->js.v[i].gpus; /* + rounding up, 1 W a GPU */
  if (caps > budget + top) fail_msg("caps %.1f > budget %.1f + %.1f", caps, budget, top);
  assert_true(caps >= 0.98 * budget); /* the budget is used */
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(jobs_are_gathered_across_nodes, setup, teardown),
      cmocka_unit_test_setup_teardown(caps_fit_the_budget_and_fallbacks_the_target, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(an_unreachable_node_counts_at_its_acknowledged_caps, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(a_target_below_the_floors_is_flagged, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
