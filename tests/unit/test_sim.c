/* Unit tests of the sim backend's NVML-like timing (src/gpu/sim.c): the power
 * reading is the mean of the true draw over the trailing second, a new limit
 * takes effect only after the limiter's lag (about 100 ms), and the job runs
 * from the backend's open unless start=call. The true draw is the twin's
 * settled power (pflex_twin_eval of the same calibrated job), computed here
 * independently of the backend. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "assert_near.h"
#include "gpu/backends.h" /* pflex__gpu_set_limit_unrecorded */
#include "pflex/gpu.h"
#include "pflex/twin.h"

#define GROUP "Dense PT H200x8 Qwen3-32B no-compile"
/* Training from t = 0, no dips, no noise: the reading is the model alone. */
#define QUIET "noise=off,warmup=0,startup=0,eval=0,ckpt=0,gpus=2"

/* The twin's settled point of the sim's default job at cap_w. */
static struct pflex_twin_point twin_at(double cap_w) {
  const struct pflex_twin_paper_group *g = pflex_twin_paper_find(GROUP);
  assert_non_null(g);
  const struct pflex_twin_gpu *type = pflex_twin_gpu_find(g->gpu);
  assert_non_null(type);
  struct pflex_twin_job job;
  pflex_twin_paper_job(g, &job);
  assert_int_equal(pflex_twin_job_derive(type, &job), 0);
  struct pflex_twin_calib c;
  assert_int_equal(pflex_twin_calibrate(g, type, &job, PFLEX_TWIN_REFERENCE_SEED, &c), 0);
  struct pflex_twin_point p;
  assert_int_equal(pflex_twin_eval(type, &job, cap_w, &p), 0);
  return p;
}

static struct pflex_gpu_reading read0(struct pflex_gpu *g, double at_s) {
  double now;
  assert_int_equal(pflex_gpu_now(g, &now), 0);
  assert_int_equal(pflex_gpu_sleep(g, at_s - now), 0);
  struct pflex_gpu_reading r;
  assert_int_equal(pflex_gpu_read(g, 0, &r), 0);
  return r;
}

#define W(mw) ((double)(mw) / 1000.0)

/* A cap at t = 5 s: the limit reads back at once, the enforced limit and the
 * draw follow 100 ms later, and the reading moves over the next second as a
 * trailing average of the draw: halfway at 0.5 s after the change took effect. */
static void test_lag_and_average(void **state) {
  (void)state;
  double hi = twin_at(700).power_w, lo = twin_at(300).power_w;
  double t_hi = twin_at(700).tokens_per_s, t_lo = twin_at(300).tokens_per_s;
  assert_true(hi - lo > 100); /* the cap matters for this job */
  struct pflex_gpu *g;
  char msg[256];
  assert_int_equal(pflex_gpu_open("sim", QUIET, &g, msg, sizeof msg), 0);
  struct pflex_gpu_reading r = read0(g, 5.0);
  assert_true(r.valid & PFLEX_GPU_TPUT); /* start=open: training without job_start */
  assert_near(W(r.power_mw), hi, 0.0015);
  assert_near(r.tput, t_hi, 1e-6 * t_hi);
  unsigned long long e5 = r.energy_mj;

  assert_int_equal(pflex__gpu_set_limit_unrecorded(g, 0, 300000), 0);
  r = read0(g, 5.05); /* inside the lag */
  assert_int_equal(r.limit_mw, 300000);
  assert_int_equal(r.enforced_limit_mw, 700000);
  assert_near(W(r.power_mw), hi, 0.0015);
  assert_near(r.tput, t_hi, 1e-6 * t_hi);

  r = read0(g, 5.15); /* the limit took effect at 5.1 s: the draw is lo, the reading not yet */
  assert_int_equal(r.enforced_limit_mw, 300000);
  assert_near(r.tput, t_lo, 1e-6 * t_lo); /* the job runs at the capped pace */
  assert_true(W(r.power_mw) > hi - 0.1 * (hi - lo));

  r = read0(g, 5.6); /* window (4.6, 5.6]: half at hi, half at lo */
  assert_near(W(r.power_mw), (hi + lo) / 2, 0.0015);

  r = read0(g, 6.1 + 1e-6); /* the window has left the old draw behind */
  assert_near(W(r.power_mw), lo, 0.0015);

  r = read0(g, 7.0); /* energy integrates the true draw: 0.1 s at hi, 1.9 s at lo */
  double joules = (double)(r.energy_mj - e5) / 1000.0;
  assert_near(joules, 0.1 * hi + 1.9 * lo, 0.01 * joules);
  pflex_gpu_close(g);
}

/* Several changes inside one window: the reading is the time-weighted mean
 * of each limit's draw while it was in effect. */
static void test_average_over_changes(void **state) {
  (void)state;
  double p7 = twin_at(700).power_w, p4 = twin_at(400).power_w, p3 = twin_at(300).power_w;
  struct pflex_gpu *g;
  char msg[256];
  assert_int_equal(pflex_gpu_open("sim", QUIET ",lag=0.2,avg=2", &g, msg, sizeof msg), 0);
  (void)read0(g, 10.0);
  assert_int_equal(pflex__gpu_set_limit_unrecorded(g, 0, 400000), 0); /* in effect at 10.2 */
  (void)read0(g, 10.8);
  assert_int_equal(pflex__gpu_set_limit_unrecorded(g, 0, 300000), 0); /* in effect at 11.0 */
  struct pflex_gpu_reading r = read0(g, 11.5);                        /* window (9.5, 11.5] */
  double want = (0.7 * p7 + 0.8 * p4 + 0.5 * p3) / 2.0;
  assert_near(W(r.power_mw), want, 0.0015);
  pflex_gpu_close(g);
}

/* lag=0, avg=0: the reading follows a new limit at once (the old model). */
static void test_instant(void **state) {
  (void)state;
  double lo = twin_at(300).power_w;
  struct pflex_gpu *g;
  char msg[256];
  assert_int_equal(pflex_gpu_open("sim", QUIET ",lag=0,avg=0", &g, msg, sizeof msg), 0);
  (void)read0(g, 3.0);
  assert_int_equal(pflex__gpu_set_limit_unrecorded(g, 0, 300000), 0);
  struct pflex_gpu_reading r = read0(g, 3.0);
  assert_int_equal(r.enforced_limit_mw, 300000);
  assert_near(W(r.power_mw), lo, 0.0015);
  pflex_gpu_close(g);
}

/* start=call: idle until pflex_gpu_job_start, as pflex sweep wants it. */
static void test_start_call(void **state) {
  (void)state;
  struct pflex_gpu *g;
  char msg[256];
  assert_int_equal(pflex_gpu_open("sim", QUIET ",start=call", &g, msg, sizeof msg), 0);
  struct pflex_gpu_reading r = read0(g, 5.0);
  assert_false(r.valid & PFLEX_GPU_TPUT);
  double idle = W(r.power_mw);
  assert_int_equal(pflex_gpu_job_start(g), 0);
  r = read0(g, 7.0);
  assert_true(r.valid & PFLEX_GPU_TPUT);
  assert_true(W(r.power_mw) > idle + 100);
  pflex_gpu_close(g);
}

static void test_since(void **state) {
  (void)state;
  struct pflex_gpu *g;
  char msg[256];
  /* default warmup 60 s and startup 30 s, but the job began 100 s before the open */
  assert_int_equal(pflex_gpu_open("sim", "noise=off,gpus=2,since=100", &g, msg, sizeof msg), 0);
  struct pflex_gpu_reading r = read0(g, 0.5);
  assert_true(r.valid & PFLEX_GPU_TPUT);
  assert_near(W(r.power_mw), twin_at(700).power_w, 0.0015); /* the window before the open too */
  pflex_gpu_close(g);
}

static void test_bad_specs(void **state) {
  (void)state;
  static const char *const bad[] = {"avg=-1",     "avg=11",        "lag=x",
                                    "lag=-0.1",   "start=later",   "since=-5",
                                    "population=7", "population=7:x", "population=-1:2"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct pflex_gpu *g = NULL;
    char msg[256] = "";
    assert_int_equal(pflex_gpu_open("sim", bad[i], &g, msg, sizeof msg), -EINVAL);
    char key[8];
    snprintf(key, sizeof key, "%.*s", (int)(strchr(bad[i], '=') - bad[i]), bad[i]);
    assert_non_null(strstr(msg, key)); /* the message names the key */
  }
}

/* population=SEED:INDEX runs job INDEX of `pflex twin population --seed SEED`
 * as the population draws it: with no noise, no cap and the job training,
 * the reading is that job's settled draw on its GPU type. */
static void test_population_job(void **state) {
  (void)state;
  enum { N = 20 };
  struct pflex_twin_population_opts po = {.jobs = N, .seed = 7};
  const struct pflex_twin_gpu *gpus[N];
  struct pflex_twin_job jobs[N];
  assert_int_equal(pflex_twin_population_jobs(&po, gpus, jobs), 0);
  /* a job whose draw is not the default group's, so that the reading tells them apart */
  double dflt = twin_at(700).power_w;
  size_t k = N;
  struct pflex_twin_point want;
  for (size_t i = 0; i < N && k == N; i++) {
    assert_int_equal(pflex_twin_eval(gpus[i], &jobs[i], gpus[i]->tdp_w, &want), 0);
    if (fabs(want.power_w - dflt) > 0.03 * dflt) k = i;
  }
  assert_true(k < N);
  char spec[128];
  snprintf(spec, sizeof spec, "population=7:%zu,%s", k, QUIET);
  struct pflex_gpu *g = NULL;
  char msg[256] = "";
  assert_int_equal(pflex_gpu_open("sim", spec, &g, msg, sizeof msg), 0);
  struct pflex_gpu_reading r = read0(g, 3);
  assert_near(W(r.power_mw), want.power_w, 0.002 * want.power_w);
  pflex_gpu_close(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lag_and_average), cmocka_unit_test(test_average_over_changes),
      cmocka_unit_test(test_instant),         cmocka_unit_test(test_start_call),
      cmocka_unit_test(test_since),           cmocka_unit_test(test_bad_specs),
      cmocka_unit_test(test_population_job),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
