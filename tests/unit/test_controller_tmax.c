/* Unit tests of T_max for a job never seen uncapped (src/controller/jobs.c,
 * estimate_t_max): a job that starts during an event is probed at the equal
 * share, and its throughput there, read back through the prior's shape,
 * estimates T_max. The estimate is made again from every settled reading
 * that draws 5% more than the one it came from (the shape errs least near
 * the top), never from a lower one, and the refinement keeps what it had
 * observed across the new prior. A share the headroom cut short by less than
 * the smallest raise that is pushed (max(5 W, 1%)) counts as held: such a
 * job stayed probed until its share moved (docs/controller.md, "Tenth
 * round"). Before this, the estimate was made once, from the share's
 * reading. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "assert_near.h"
#include "controller/jobs.h"
#include "controller/store.h"

/* One node, its 8 GPUs all the job's, held at cap_w per GPU (under their
 * 700 W default: never uncapped), drawing draw_w in all, reporting tput. */
static void node_at(struct ctl_node *nd, double cap_w, double draw_w, double tput, double t) {
  memset(nd, 0, sizeof *nd);
  nd->reachable = nd->seen = true;
  nd->ngpus = 8;
  for (size_t g = 0; g < 8; g++) {
    struct ctl_gpu_state *s = &nd->gpu[g];
    s->index = (unsigned)g;
    s->power_w = draw_w / 8;
    s->limit_w = s->enforced_w = cap_w;
    s->default_w = s->max_w = 700;
    s->min_w = 200;
    s->lease_s_left = -1;
    snprintf(s->job, sizeof s->job, "late");
  }
  nd->njobs = 1;
  snprintf(nd->jobs[0].id, sizeof nd->jobs[0].id, "late");
  nd->jobs[0].has_tput = tput > 0;
  nd->jobs[0].tput = tput;
  nd->jobs[0].tput_time = t;
}

/* k rounds from t0 with the job held at cap_w, drawing draw_w, making tput. */
static void hold(struct ctl_jobset *js, const struct ctl_config *cfg, double cap_w, double draw_w,
                 double tput, int t0, int k) {
  struct ctl_node nd;
  for (int r = 0; r < k; r++) {
    node_at(&nd, cap_w, draw_w, tput, t0 + r);
    assert_int_equal(ctl_jobset_gather(js, &nd, 1, t0 + r, 120), 0);
    ctl_jobset_learn(js, cfg);
  }
}

struct fixture {
  struct ctl_jobset js;
  struct ctl_config cfg;
};

static int setup(void **state) {
  static struct fixture f;
  memset(&f, 0, sizeof f);
  ctl_config_defaults(&f.cfg);
  ctl_jobset_init(&f.js);
  /* Capped from its first round (the event was on when it started), loading. */
  hold(&f.js, &f.cfg, 200, 8 * 85.0, 0, 0, 3);
  struct ctl_job *j = ctl_jobset_find(&f.js, "late");
  assert_non_null(j);
  assert_true(j->probe);
  *state = &f;
  return 0;
}

static int teardown(void **state) {
  struct fixture *f = *state;
  ctl_jobset_release(&f->js);
  return 0;
}

/* The plan gave it 422 W per GPU; the headroom let 420 W through, and the
 * last 2 W are under the smallest raise pushed: the share holds. */
static void a_share_short_by_an_unpushed_raise_is_held(void **state) {
  struct fixture *f = *state;
  struct ctl_job *j = ctl_jobset_find(&f->js, "late");
  j->probe_cap_w = 422;
  hold(&f->js, &f->cfg, 420, 8 * 417.0, 45900, 10, 3);
  assert_false(j->probe);
  assert_true(j->t_est > 45900);
  /* 30 W short is a share not reached: still probed. */
  struct fixture g;
  memset(&g, 0, sizeof g);
  ctl_config_defaults(&g.cfg);
  ctl_jobset_init(&g.js);
  hold(&g.js, &g.cfg, 200, 8 * 85.0, 0, 0, 3);
  struct ctl_job *k = ctl_jobset_find(&g.js, "late");
  k->probe_cap_w = 422;
  hold(&g.js, &g.cfg, 392, 8 * 389.0, 43000, 10, 3);
  assert_true(k->probe);
  assert_true(k->t_est == 0);
  ctl_jobset_release(&g.js);
}

/* The share's reading, from which the first estimate comes, is the job's
 * first point below its top: the new curve starts with it (it ran on a
 * relative curve until then, whose observations are not kept), so the job is
 * pinned and never probed again at its whole draw (explore.h). Before, that
 * reading was lost and a job lifted to its top was probed at 85% of it. */
static void the_share_reading_pins_the_curve(void **state) {
  struct fixture *f = *state;
  struct ctl_job *j = ctl_jobset_find(&f->js, "late");
  assert_true(j->relative);
  assert_true(ctl_job_confidence(j) == 0);
  j->probe_cap_w = 422;
  hold(&f->js, &f->cfg, 422, 8 * 417.0, 45900, 10, 3);
  assert_false(j->probe);
  assert_false(j->relative);
  assert_int_equal(j->observations, 1);
  assert_true(ctl_job_confidence(j) > 0);
  const struct pflex_curve *c = ctl_job_curve(j);
  assert_near(pflex_curve_eval(c, 8 * 417.0), 45900, 0.01 * 45900);
}

/* The estimate from the share, then a reading nearer the top: T_max is read
 * again from it, the curve passes above it (not flat there: a cap of its
 * knots at an estimate under the reading cut the job), and the observations
 * made on the old prior are kept. A reading lower again moves nothing. */
static void t_max_is_estimated_again_nearer_the_top(void **state) {
  struct fixture *f = *state;
  struct ctl_job *j = ctl_jobset_find(&f->js, "late");
  j->probe_cap_w = 422;
  hold(&f->js, &f->cfg, 422, 8 * 417.0, 45900, 10, 3);
  assert_false(j->probe);
  double first = j->t_est;
  assert_true(first > 45900);
  /* Allocated on that curve: a cap that binds at 500 W, read twice. */
  hold(&f->js, &f->cfg, 500, 8 * 495.0, 56000, 20, 3);
  double second = j->t_est;
  assert_true(fabs(second - first) > 1e-6 * first); /* read again: 3,960 W > 1.05 x 3,336 W */
  assert_true(second > 56000);
  size_t obs = j->observations;
  assert_true(obs >= 1); /* the reading at 500 W, on the new prior too */
  const struct pflex_curve *c = ctl_job_curve(j);
  assert_non_null(c);
  assert_near(pflex_curve_eval(c, 8 * 495.0), 56000, 0.02 * 56000);
  /* Nearer still: 580 W per GPU. */
  hold(&f->js, &f->cfg, 580, 8 * 575.0, 65500, 30, 3);
  double third = j->t_est;
  assert_true(fabs(third - second) > 1e-6 * second);
  assert_true(third > 65500);
  c = ctl_job_curve(j);
  assert_true(pflex_curve_eval(c, pflex_curve_p_max(c)) > 65500);
  assert_true(j->observations >= 2); /* the 500 W reading kept, the 580 W one added */
  /* A reading lower again (the allocation cut it) re-estimates nothing. */
  hold(&f->js, &f->cfg, 450, 8 * 446.0, 52000, 40, 3);
  assert_near(j->t_est, third, 0);
}

/* A stalled job (an NCCL hang: power drawn, nothing trained) reports a
 * throughput of 0 nearer the top: no estimate comes from it, the last one
 * and the observations stay. */
static void a_reading_of_no_throughput_estimates_nothing(void **state) {
  struct fixture *f = *state;
  struct ctl_job *j = ctl_jobset_find(&f->js, "late");
  j->probe_cap_w = 422;
  hold(&f->js, &f->cfg, 422, 8 * 417.0, 45900, 10, 3);
  hold(&f->js, &f->cfg, 500, 8 * 495.0, 56000, 20, 3);
  double t_est = j->t_est;
  size_t obs = j->observations;
  assert_true(t_est > 56000 && obs >= 1);
  struct ctl_node nd;
  for (int r = 0; r < 3; r++) {
    node_at(&nd, 640, 8 * 635.0, 0, 30 + r);
    nd.jobs[0].has_tput = true; /* reported, and 0 */
    assert_int_equal(ctl_jobset_gather(&f->js, &nd, 1, 30 + r, 120), 0);
    ctl_jobset_learn(&f->js, &f->cfg);
  }
  assert_near(j->t_est, t_est, 0);
  assert_false(j->probe);
  assert_false(j->relative);
  assert_true(j->observations >= obs);
}

/* A restarted controller (its jobs seeded from the store's learnt rows)
 * keeps the draw the estimate was read at: a settled reading lower than it
 * re-estimates nothing, as before the restart. */
static void a_restart_keeps_where_t_max_was_read(void **state) {
  struct fixture *f = *state;
  struct ctl_job *j = ctl_jobset_find(&f->js, "late");
  j->probe_cap_w = 422;
  hold(&f->js, &f->cfg, 422, 8 * 417.0, 45900, 10, 3);
  hold(&f->js, &f->cfg, 580, 8 * 575.0, 65500, 20, 3);
  double t_est = j->t_est;
  struct ctl_learnt_row row[4];
  assert_int_equal(ctl_jobset_learnt(&f->js, row, 4), 1);
  assert_near(row[0].t_est_w, 8 * 575.0, 0);
  struct ctl_jobset js;
  ctl_jobset_init(&js);
  assert_int_equal(ctl_jobset_seed(&js, row, 1, 29), 0);
  hold(&js, &f->cfg, 450, 8 * 446.0, 52000, 30, 3); /* lower than 4,600 W: kept */
  struct ctl_job *k = ctl_jobset_find(&js, "late");
  assert_non_null(k);
  assert_near(k->t_est, t_est, 0);
  ctl_jobset_release(&js);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(a_share_short_by_an_unpushed_raise_is_held, setup, teardown),
      cmocka_unit_test_setup_teardown(the_share_reading_pins_the_curve, setup, teardown),
      cmocka_unit_test_setup_teardown(t_max_is_estimated_again_nearer_the_top, setup, teardown),
      cmocka_unit_test_setup_teardown(a_reading_of_no_throughput_estimates_nothing, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(a_restart_keeps_where_t_max_was_read, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
