/* Tests of per-job telemetry (src/agent/telemetry.c): only training samples
 * of an uncapped job count, a new job starts afresh, the mean becomes a
 * moving one past its window, a job's features are the mean over its GPUs
 * with enough samples, and nothing is reported before that. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "agent/telemetry.h"

/* A reading of a GPU at limit_w (default 700 W) and this utilization and DRAM activity. */
static struct pflex_gpu_reading reading(unsigned limit_w, unsigned util, double dram) {
  return (struct pflex_gpu_reading){.valid = PFLEX_GPU_LIMIT | PFLEX_GPU_DEFAULT_LIMIT |
                                             PFLEX_GPU_UTIL | PFLEX_GPU_PROF,
                                    .limit_mw = limit_w * 1000,
                                    .default_limit_mw = 700000,
                                    .util_gpu_pct = util,
                                    .util_mem_pct = 40,
                                    .dram_active = dram,
                                    .sm_active = 0.9,
                                    .pipe_tensor_active = 0.4};
}

static double feature(const json_t *o, const char *name) {
  const json_t *v = json_object_get(o, name);
  assert_non_null(v);
  return json_real_value(v);
}

static void take(struct agent_gpu_telemetry *t, const char *job, struct pflex_gpu_reading r,
                 bool job_uncapped, int times) {
  for (int k = 0; k < times; k++)
    agent_telemetry_take(t, job, &r, job_uncapped, 1000);
}

static void test_only_uncapped_training_counts(void **state) {
  (void)state;
  struct agent_gpu_telemetry t = {0};
  const struct agent_gpu_telemetry *tp[] = {&t};
  unsigned long long samples = 99;
  take(&t, "j", reading(700, 98, 0.2), true, AGENT_TELEMETRY_MIN_SAMPLES - 1);
  assert_null(agent_telemetry_json(tp, 1, "j", &samples)); /* one short */
  assert_int_equal(samples, 0);
  take(&t, "j", reading(400, 98, 0.9), true, 50);  /* capped GPU */
  take(&t, "j", reading(700, 98, 0.9), false, 50); /* another GPU of the job capped */
  take(&t, "j", reading(700, 20, 0.9), true, 50);  /* an eval, a checkpoint: not training */
  assert_null(agent_telemetry_json(tp, 1, "j", &samples));
  take(&t, "j", reading(700, 98, 0.2), true, 1);
  json_t *o = agent_telemetry_json(tp, 1, "j", &samples);
  assert_non_null(o);
  assert_int_equal(samples, AGENT_TELEMETRY_MIN_SAMPLES);
  assert_true(fabs(feature(o, "dram_active") - 0.2) < 1e-12);
  assert_true(fabs(feature(o, "mem_copy_util") - 40) < 1e-12);
  assert_true(fabs(feature(o, "gpu_util") - 98) < 1e-12);
  assert_null(json_object_get(o, "sm_clock")); /* never valid in these readings */
  json_decref(o);
  /* Another job's name, or none: nothing of this job's. */
  assert_null(agent_telemetry_json(tp, 1, "k", &samples));
  take(&t, "k", reading(700, 98, 0.5), true, AGENT_TELEMETRY_MIN_SAMPLES);
  assert_null(agent_telemetry_json(tp, 1, "j", &samples));
  o = agent_telemetry_json(tp, 1, "k", &samples);
  assert_true(fabs(feature(o, "dram_active") - 0.5) < 1e-12); /* afresh: none of j's */
  json_decref(o);
}

static void test_mean_over_gpus_and_window(void **state) {
  (void)state;
  struct agent_gpu_telemetry a = {0}, b = {0}, c = {0};
  const struct agent_gpu_telemetry *tp[] = {&a, &b, &c};
  take(&a, "j", reading(700, 98, 0.1), true, 20);
  take(&a, "j", reading(700, 98, 0.3), true, 20); /* running mean: 0.2 */
  take(&b, "j", reading(700, 98, 0.4), true, 10);
  take(&c, "j", reading(700, 98, 0.9), true, 3); /* too few: left out */
  unsigned long long samples = 0;
  json_t *o = agent_telemetry_json(tp, 3, "j", &samples);
  assert_non_null(o);
  assert_true(fabs(feature(o, "dram_active") - 0.3) < 1e-12);
  assert_int_equal(samples, 50);
  json_decref(o);
  /* Past its window the mean moves: after many samples of 1.0 it nears 1. */
  struct agent_gpu_telemetry d = {0};
  struct pflex_gpu_reading lo = reading(700, 98, 0.0), hi = reading(700, 98, 1.0);
  for (int k = 0; k < 100; k++)
    agent_telemetry_take(&d, "j", &lo, true, 10);
  for (int k = 0; k < 100; k++)
    agent_telemetry_take(&d, "j", &hi, true, 10);
  const struct agent_gpu_telemetry *dp[] = {&d};
  o = agent_telemetry_json(dp, 1, "j", &samples);
  assert_true(feature(o, "dram_active") > 0.99); /* 1 - 0.9^100 */
  json_decref(o);
}

static void test_uncapped_rule(void **state) {
  (void)state;
  struct pflex_gpu_reading r = reading(700, 98, 0.2);
  assert_true(agent_telemetry_uncapped(&r));
  r.limit_mw = 699000;
  assert_false(agent_telemetry_uncapped(&r));
  /* No default: the highest settable limit. */
  r.valid = PFLEX_GPU_LIMIT | PFLEX_GPU_CONSTRAINTS;
  r.max_limit_mw = 699000;
  assert_true(agent_telemetry_uncapped(&r));
  r.valid = PFLEX_GPU_DEFAULT_LIMIT;
  assert_false(agent_telemetry_uncapped(&r)); /* no limit read */
  assert_string_equal(agent_telemetry_name(0), "gpu_util");
  assert_null(agent_telemetry_name(AGENT_TELEMETRY_NFEATURES));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_only_uncapped_training_counts),
      cmocka_unit_test(test_mean_over_gpus_and_window),
      cmocka_unit_test(test_uncapped_rule),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
