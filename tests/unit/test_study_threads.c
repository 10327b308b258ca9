/* The study on several threads: the loop that runs them (src/base/parallel.c)
 * and the study's results, which must be the same bits for any number of
 * threads (src/core/study.c). scripts/valgrind.sh also runs this under
 * helgrind, which reports any access to shared memory without a lock. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pflex/error.h"
#include "pflex/jobs.h"
#include "pflex/parallel.h"
#include "pflex/runs.h"
#include "pflex/runs_csv.h"
#include "pflex/study.h"
#include "pflex/study_predict.h"
#include "study_groups.h"

/* ---- the loop ---------------------------------------------------------------- */

#define N 200

struct calls {
  unsigned char ran[N]; /* each index's own byte: no two calls share one */
  unsigned worker[N];
  size_t fail_at[2]; /* indices that fail, with -EIO and -EDOM */
  unsigned threads;
  pthread_t caller;
  size_t last_done, dones;
  bool done_elsewhere, done_fell;
};

static int call(void *ctx, unsigned worker, size_t i) {
  struct calls *c = ctx;
  c->ran[i]++;
  c->worker[i] = worker;
  if (i == c->fail_at[0]) return -EIO;
  if (i == c->fail_at[1]) return -EDOM;
  return 0;
}

static void done(void *ctx, size_t finished) {
  struct calls *c = ctx;
  if (!pthread_equal(pthread_self(), c->caller)) c->done_elsewhere = true;
  if (finished < c->last_done) c->done_fell = true;
  c->last_done = finished;
  c->dones++;
}

static void start(struct calls *c, unsigned threads) {
  memset(c, 0, sizeof *c);
  c->fail_at[0] = c->fail_at[1] = SIZE_MAX;
  c->threads = threads;
  c->caller = pthread_self();
}

/* Every index once, on a worker below the count asked for; progress told on
 * the caller's thread only, never falling, ending at n. */
static void test_every_index_once(void **state) {
  (void)state;
  static const unsigned counts[] = {0, 1, 2, 3, 8, 300};
  for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) {
    struct calls c;
    start(&c, counts[k]);
    assert_int_equal(pflex_parallel_for(N, counts[k], call, &c, done), 0);
    for (size_t i = 0; i < N; i++) {
      assert_int_equal(c.ran[i], 1);
      assert_true(c.worker[i] < (counts[k] > 1 ? counts[k] : 1));
    }
    assert_false(c.done_elsewhere);
    assert_false(c.done_fell);
    assert_int_equal(c.last_done, N);
    assert_true(c.dones >= 1);
  }
  struct calls c;
  start(&c, 4);
  assert_int_equal(pflex_parallel_for(0, 4, call, &c, done), 0);
  assert_int_equal(c.dones, 0);
}

/* A failure: the lowest failing index's error, as a plain loop's first
 * failure; every index below it ran, and none is run twice. */
static void test_lowest_failure_wins(void **state) {
  (void)state;
  static const unsigned counts[] = {1, 2, 4, 16};
  for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) {
    struct calls c;
    start(&c, counts[k]);
    c.fail_at[0] = 150;
    c.fail_at[1] = 40;
    assert_int_equal(pflex_parallel_for(N, counts[k], call, &c, NULL), -EDOM);
    for (size_t i = 0; i <= 40; i++)
      assert_int_equal(c.ran[i], 1);
    for (size_t i = 41; i < N; i++)
      assert_true(c.ran[i] <= 1);
    if (counts[k] == 1) assert_int_equal(c.ran[41], 0); /* one thread stops at once */
  }
}

/* ---- the study --------------------------------------------------------------- */

#define NG 12

struct fixture {
  struct pflex_study_group g[NG];
  struct pflex_curve *c[NG];
  double pfi[NG], sd[NG];
  struct pflex_study_data ref;
  struct pflex_runset runs;
};

/* The synthetic groups (study_groups.h) with a prediction off by up to a
 * third, and the reference set. */
static int setup(void **state) {
  struct fixture *f = calloc(1, sizeof *f);
  for (int i = 0; i < NG; i++) {
    double pfi;
    study_synthetic_group(i, &f->c[i], &f->g[i], &pfi);
    f->pfi[i] = pfi * (1 + 0.33 * sin(1.7 * i));
    f->sd[i] = 0.3;
  }
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  assert_int_equal(
      pflex_runs_read_csv(PFLEX_SOURCE_DIR "/data/reference/runs.csv", NULL, &f->runs, &diag), 0);
  assert_int_equal(pflex_study_data_build(&f->runs, NULL, NULL, NULL, &f->ref, &diag), 0);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fixture *f = *state;
  for (int i = 0; i < NG; i++)
    pflex_curve_free(f->c[i]);
  pflex_study_data_release(&f->ref);
  pflex_runset_release(&f->runs);
  free(f);
  return 0;
}

static const double cuts[] = {0, 0.15, 0.3, 0.4};

/* Runs the study with one thread, then with two (and seven where `more`);
 * every result the same bits. */
static void same_for_any_threads(const struct pflex_study_group *g, size_t ng,
                                 const struct pflex_study_predset *p, size_t np,
                                 struct pflex_study_opts o, bool more) {
  static const unsigned counts[] = {2, 7};
  struct pflex_study_result *one, *r;
  size_t none, n;
  o.threads = 1;
  assert_int_equal(pflex_study_run(g, ng, p, np, &o, &one, &none), 0);
  assert_true(none > 0);
  for (size_t k = 0; k < (more ? 2 : 1); k++) {
    o.threads = counts[k];
    assert_int_equal(pflex_study_run(g, ng, p, np, &o, &r, &n), 0);
    assert_int_equal(n, none);
    assert_memory_equal(one, r, n * sizeof *r);
    free(r);
  }
  free(one);
}

static void base_opts(struct pflex_study_opts *o) {
  pflex_study_opts_init(o);
  o->workloads = 37; /* two threads: a chunk of 32 and one of 5 */
  o->jobs = 10;
  o->cuts = cuts;
  o->ncuts = sizeof cuts / sizeof *cuts;
}

/* Every strategy, open loop and closed loop (without noise, and with it:
 * drawn for the workloads in their order), shrinkage with and without the
 * loop's dither, both objectives. */
static void test_synthetic_same_bits(void **state) {
  struct fixture *f = *state;
  struct pflex_study_predset p[2] = {{.mode = PFLEX_PRED_LOO, .pfi = f->pfi, .sd = f->sd},
                                     {.mode = PFLEX_PRED_PRIOR, .pfi = f->pfi, .sd = f->sd}};
  struct pflex_study_opts o;
  base_opts(&o);
  same_for_any_threads(f->g, NG, p, 2, o, true);
  o.rounds = 2;
  o.noise = 0;
  same_for_any_threads(f->g, NG, p, 2, o, false);
  o.noise = 0.005;
  same_for_any_threads(f->g, NG, p, 2, o, false);
  o.workloads = 33; /* two threads: a chunk of 32, then one of a single workload */
  same_for_any_threads(f->g, NG, p, 2, o, false);
  o.workloads = 37;
  o.rounds = 0;
  o.shrink = 1;
  o.objective = PFLEX_OBJECTIVE_PROGRESS;
  same_for_any_threads(f->g, NG, p, 2, o, false);
  o.rounds = 2;
  o.noise = 0;
  o.dither = 0.06;
  same_for_any_threads(f->g, NG, p, 2, o, false);
}

/* The reference set's own predictions (in-sample, LOO, LOCO: the shapes of
 * other groups' curves, the templates) in both scenarios. */
static void test_reference_same_bits(void **state) {
  struct fixture *f = *state;
  struct pflex_study_opts o;
  base_opts(&o);
  o.workloads = 9;
  o.jobs = 30;
  same_for_any_threads(f->ref.groups, f->ref.ngroups, f->ref.sets, f->ref.nsets, o, false);
  o.rounds = 1;
  o.noise = 0;
  o.shrink = 1;
  same_for_any_threads(f->ref.groups, f->ref.ngroups, f->ref.sets, f->ref.nsets, o, false);
}

/* A count past the bound is refused; 0 runs on the caller's thread. */
static void test_threads_bound(void **state) {
  struct fixture *f = *state;
  struct pflex_study_predset p[1] = {{.mode = PFLEX_PRED_LOO, .pfi = f->pfi}};
  struct pflex_study_opts o;
  base_opts(&o);
  o.workloads = 3;
  struct pflex_study_result *r;
  size_t n;
  o.threads = PFLEX_STUDY_MAX_THREADS + 1;
  assert_int_equal(pflex_study_run(f->g, NG, p, 1, &o, &r, &n), -EINVAL);
  o.threads = 0;
  assert_int_equal(pflex_study_run(f->g, NG, p, 1, &o, &r, &n), 0);
  free(r);
}

int main(int argc, char **argv) {
  /* TEST runs the tests matching it, --skip TEST all the others
   * (scripts/valgrind.sh: helgrind skips the reference set's, the slowest) */
  if (argc > 2 && strcmp(argv[1], "--skip") == 0)
    cmocka_set_skip_filter(argv[2]);
  else if (argc > 1)
    cmocka_set_test_filter(argv[1]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_index_once),    cmocka_unit_test(test_lowest_failure_wins),
      cmocka_unit_test(test_synthetic_same_bits), cmocka_unit_test(test_reference_same_bits),
      cmocka_unit_test(test_threads_bound),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
