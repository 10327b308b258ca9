/* Unit tests of the simulated cluster's world (src/controller/sim_world.c):
 * the readings of a hosted agent that does not answer (killed, stalled). Its
 * GPUs still run under the limits they hold, so what NVML reports moves from
 * the last reading to the settled draw there over one second, and must not
 * stay frozen at a reading taken while a cut was still in the average (the
 * population fault run's samples over target + 1%). A node that answers
 * keeps what it reported. A node whose state file's lock is held (an agent
 * stopped by SIGSTOP inside the fake NVML's write) does not stop the tick:
 * it used to wait on the lock forever, and with it the fault's SIGCONT. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "assert_near.h"
#include "controller/sim_node.h"
#include "controller/sim_world.h"

struct fixture {
  char dir[64];
  struct sim_world w;
};

static int setup(void **state) {
  struct fixture *f = calloc(1, sizeof *f);
  if (!f) return -1;
  snprintf(f->dir, sizeof f->dir, "/tmp/pflex-simworld.XXXXXX");
  char err[256];
  /* two nodes of 8 GPUs, every node with a training job, no churn */
  if (!mkdtemp(f->dir) || sim_world_init(&f->w, f->dir, 2, 8, 0, 0, 1, 100, 0, err, sizeof err)) {
    free(f);
    return -1;
  }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fixture *f = *state;
  for (size_t i = 0; i < f->w.nnodes; i++)
    unlink(f->w.nodes[i].path);
  sim_world_release(&f->w);
  rmdir(f->dir);
  free(f);
  return 0;
}

/* Node 0 read at t = 10 s just after a cut to 300 W per GPU (its average still
 * 500 W), then stalled; node 1 keeps answering. */
static void read_then_stall(struct sim_world *w) {
  for (size_t n = 0; n < 2; n++)
    for (size_t g = 0; g < w->nodes[n].ngpus; g++) {
      w->nodes[n].g[g].eff_w = w->nodes[n].g[g].limit_w = 300;
      w->nodes[n].g[g].avg_w = 500;
    }
  w->nodes[0].unread = w->nodes[1].unread = false;
  sim_world_model_unread(w, 10);
  w->nodes[0].unread = true;
}

static double settled(const struct sim_world *w, size_t n, size_t g) {
  const struct sim_job *j = &w->jobs[w->nodes[n].job[g]];
  return fmin(sim_kind_power(j->kind, w->nodes[n].g[g].eff_w), w->nodes[n].g[g].eff_w);
}

static void test_unread_settles_under_the_cap(void **state) {
  struct fixture *f = *state;
  struct sim_world *w = &f->w;
  assert_true(w->nodes[0].job[0] >= 0 && w->jobs[w->nodes[0].job[0]].running);
  read_then_stall(w);
  sim_world_model_unread(w, 10.5); /* half way through the second */
  for (size_t g = 0; g < w->nodes[0].ngpus; g++)
    assert_near(w->nodes[0].g[g].avg_w, 500 + 0.5 * (settled(w, 0, g) - 500), 1e-9);
  sim_world_model_unread(w, 17); /* the rest of the stall */
  for (size_t g = 0; g < w->nodes[0].ngpus; g++) {
    assert_near(w->nodes[0].g[g].avg_w, settled(w, 0, g), 1e-9);
    assert_true(w->nodes[0].g[g].avg_w <= 300);
  }
  for (size_t g = 0; g < w->nodes[1].ngpus; g++) /* it answered: as it reported */
    assert_near(w->nodes[1].g[g].avg_w, 500, 0);
}

/* When the agent answers again, its reading is what it reports, and a later
 * stall starts from that one. */
static void test_answer_again(void **state) {
  struct fixture *f = *state;
  struct sim_world *w = &f->w;
  read_then_stall(w);
  sim_world_model_unread(w, 12);
  w->nodes[0].unread = false;
  w->nodes[0].g[0].avg_w = 280;
  sim_world_model_unread(w, 13);
  assert_near(w->nodes[0].g[0].avg_w, 280, 0);
  w->nodes[0].unread = true;
  sim_world_model_unread(w, 13.25);
  assert_near(w->nodes[0].g[0].avg_w, 280 + 0.25 * (settled(w, 0, 0) - 280), 1e-9);
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_a_held_lock_does_not_stop_the_tick(void **state) {
  struct fixture *f = *state;
  struct sim_node *nd = &f->w.nodes[0];
  int held = open(nd->path, O_RDONLY | O_CLOEXEC);
  assert_true(held >= 0);
  assert_int_equal(flock(held, LOCK_EX), 0);
  double draw[SIM_MAX_GPUS];
  for (size_t g = 0; g < nd->ngpus; g++)
    draw[g] = 400;
  double t0 = mono_s();
  assert_int_equal(sim_node_tick(nd, draw, 0.1, 10), -EAGAIN);
  assert_true(mono_s() - t0 < 1.0); /* it waits 20 ms, not for ever */
  assert_int_equal(sim_world_tick(&f->w, 1.0, 0.1, 10, 0.1), -EAGAIN);
  flock(held, LOCK_UN);
  close(held);
  assert_int_equal(sim_node_tick(nd, draw, 0.1, 10), 0); /* resumed: written again */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_unread_settles_under_the_cap, setup, teardown),
      cmocka_unit_test_setup_teardown(test_answer_again, setup, teardown),
      cmocka_unit_test_setup_teardown(test_a_held_lock_does_not_stop_the_tick, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
