/* Unit tests of job metadata in the controller: the class, weight and
 * min_throughput an agent reports in GET /v1/jobs are parsed (absent or null:
 * not given; out of range: refused naming the field), and a job's class,
 * weight and floor are resolved from them, the glob match being the
 * fallback for a job submitted without a class. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "controller/agent_json.h"
#include "controller/config.h"
#include "controller/jobs.h"

static int parse(const char *body, struct ctl_job_tput *jobs, size_t *n, char *err) {
  return ctl_parse_jobs(body, strlen(body), jobs, 8, n, err, 256);
}

static void metadata_is_parsed(void **state) {
  (void)state;
  struct ctl_job_tput j[8];
  size_t n = 0;
  char err[256];
  const char *body = "{\"jobs\":[{\"id\":\"1\",\"throughput\":null,\"throughput_time\":null,"
                     "\"throughput_samples\":0,\"class\":\"flex50\",\"weight\":2.5,"
                     "\"min_throughput\":0.7},"
                     "{\"id\":\"2\",\"throughput\":5,\"throughput_time\":1,"
                     "\"throughput_samples\":1,\"class\":null,\"weight\":null,"
                     "\"min_throughput\":null},"
                     "{\"id\":\"3\",\"throughput\":5,\"throughput_time\":1,"
                     "\"throughput_samples\":1}]}";
  assert_int_equal(parse(body, j, &n, err), 0);
  assert_int_equal(n, 3);
  assert_string_equal(j[0].meta.class_name, "flex50");
  assert_true(j[0].meta.weight == 2.5 && j[0].meta.min_tput == 0.7);
  for (int k = 1; k < 3; k++) {
    assert_string_equal(j[k].meta.class_name, "");
    assert_true(j[k].meta.weight == 0 && j[k].meta.min_tput < 0);
  }
}

/* A throughput no allocator takes is as good as none: the job is kept
 * (allocated on its prior) and no stray value stays behind has_tput false
 * (the fuzzer's find: throughput -5 kept as -5). */
static void unusable_throughput_is_none(void **state) {
  (void)state;
  struct ctl_job_tput j[8];
  size_t n = 0;
  char err[256];
  const char *body =
      "{\"jobs\":[{\"id\":\"a\",\"throughput\":-5,\"throughput_time\":1,\"throughput_samples\":1},"
      "{\"id\":\"b\",\"throughput\":1e300,\"throughput_time\":1,\"throughput_samples\":1},"
      "{\"id\":\"c\",\"throughput\":7,\"throughput_time\":1,\"throughput_samples\":1}]}";
  assert_int_equal(parse(body, j, &n, err), 0);
  assert_int_equal(n, 3);
  for (int k = 0; k < 2; k++)
    assert_true(!j[k].has_tput && isnan(j[k].tput));
  assert_true(j[2].has_tput && j[2].tput == 7);
}

static void bad_metadata_names_the_field(void **state) {
  (void)state;
  static const struct {
    const char *extra, *field;
  } cases[] = {
      {"\"class\":7", "'class'"},
      {"\"class\":\"abcdefghijabcdefghijabcdefghijabc\"", "'class'"},
      {"\"weight\":0", "'weight'"},
      {"\"weight\":1001", "'weight'"},
      {"\"weight\":\"1\"", "'weight'"},
      {"\"min_throughput\":1.5", "'min_throughput'"},
      {"\"min_throughput\":-0.5", "'min_throughput'"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char body[512], err[256] = "";
    struct ctl_job_tput j[8];
    size_t n = 99;
    snprintf(body, sizeof body,
             "{\"jobs\":[{\"id\":\"1\",\"throughput\":null,\"throughput_time\":null,"
             "\"throughput_samples\":0,%s}]}",
             cases[k].extra);
    assert_int_equal(parse(body, j, &n, err), -EINVAL);
    assert_int_equal(n, 99);
    if (!strstr(err, cases[k].field))
      fail_msg("%s: error '%s' lacks %s", body, err, cases[k].field);
  }
}

static void classes_resolve_by_name_then_match(void **state) {
  (void)state;
  struct ctl_config cfg;
  char err[256];
  ctl_config_defaults(&cfg);
  char *argv[] = {"x",
                  "--class",
                  "rigid,floor_pct=95,weight=3",
                  "--class",
                  "flex50,floor_pct=50",
                  "--class",
                  "batch,match=b*,floor_pct=10,weight=0.5",
                  NULL};
  assert_true(ctl_config_parse_args(&cfg, 7, argv, err, sizeof err) >= 0);
  struct ctl_job j;
  memset(&j, 0, sizeof j);
  /* By name: the class's weight and floor. */
  snprintf(j.id, sizeof j.id, "b17");
  j.meta = (struct ctl_job_meta){.class_name = "flex50", .weight = 0, .min_tput = -1};
  ctl_job_resolve_class(&j, &cfg);
  assert_non_null(j.cls);
  assert_string_equal(j.cls->name, "flex50");
  assert_true(j.weight == 1 && fabs(j.floor_frac - 0.5) < 1e-12);
  /* The job's weight wins; the stricter floor wins, either way round. */
  j.meta = (struct ctl_job_meta){.class_name = "flex50", .weight = 4, .min_tput = 0.8};
  ctl_job_resolve_class(&j, &cfg);
  assert_true(j.weight == 4 && fabs(j.floor_frac - 0.8) < 1e-12);
  j.meta = (struct ctl_job_meta){.class_name = "rigid", .weight = 0, .min_tput = 0.2};
  ctl_job_resolve_class(&j, &cfg);
  assert_string_equal(j.cls->name, "rigid");
  assert_true(j.weight == 3 && fabs(j.floor_frac - 0.95) < 1e-12);
  /* No class: the glob on the job id; a class without match never matches. */
  j.meta = (struct ctl_job_meta){.weight = 0, .min_tput = -1};
  ctl_job_resolve_class(&j, &cfg);
  assert_string_equal(j.cls->name, "batch");
  assert_true(j.weight == 0.5 && fabs(j.floor_frac - 0.1) < 1e-12);
  snprintf(j.id, sizeof j.id, "x17");
  ctl_job_resolve_class(&j, &cfg);
  assert_null(j.cls);
  assert_true(j.weight == 1 && j.floor_frac == 0);
  /* min_throughput alone is a floor; an unknown class falls back to match. */
  j.meta = (struct ctl_job_meta){.class_name = "gold", .weight = 0, .min_tput = 0.6};
  ctl_job_resolve_class(&j, &cfg);
  assert_null(j.cls);
  assert_true(fabs(j.floor_frac - 0.6) < 1e-12);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(metadata_is_parsed),
      cmocka_unit_test(unusable_throughput_is_none),
      cmocka_unit_test(bad_metadata_names_the_field),
      cmocka_unit_test(classes_resolve_by_name_then_match),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
