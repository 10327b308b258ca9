/* Unit tests of mapping and caps files (src/io/caps_plan.c): a mapping made
 * into caps, the checks that refuse a plan that cannot be carried out, and a
 * caps file read back exactly as written. */
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

#include "pflex/caps_plan.h"

static char *write_tmp(const char *text) {
  char *path = strdup("/tmp/pflex-test-caps-XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  return path;
}

static int read_mapping(const char *text, struct pflex_caps_plan *m, struct pflex_diag *d) {
  char *path = write_tmp(text);
  pflex_diag_clear(d);
  int err = pflex_mapping_read_json(path, m, d);
  unlink(path);
  free(path);
  return err;
}

static const struct pflex_caps_job jobs[] = {{"a", 3, 412.5}, {"b", 1, 300}};
static const char *const two_jobs =
    "{\"jobs\": {\"a\": {\"n1\": [0, 1], \"n2\": [5]}, \"b\": {\"n1\": [2]}}}";

static void test_build_gives_each_gpu_its_jobs_cap(void **state) {
  (void)state;
  struct pflex_caps_plan m, plan;
  struct pflex_diag d;
  assert_int_equal(read_mapping(two_jobs, &m, &d), 0);
  assert_int_equal(m.n, 4);
  assert_int_equal(pflex_caps_plan_build(&m, "m.json", jobs, 2, "optimal", 1500, PFLEX_PROV_SIMULATED, &plan, &d), 0);
  assert_int_equal(plan.n, 4);
  assert_string_equal(plan.caps[2].node, "n2");
  assert_int_equal(plan.caps[2].gpu, 5);
  assert_true(plan.caps[2].cap_w == 412.5);
  assert_string_equal(plan.caps[3].job, "b");
  assert_true(plan.caps[3].cap_w == 300);
  assert_string_equal(plan.strategy, "optimal");

  /* Written and read back: the same caps, bit for bit. */
  char *path = write_tmp("");
  assert_int_equal(pflex_caps_plan_write_json(path, &plan), 0);
  struct pflex_caps_plan back;
  assert_int_equal(pflex_caps_plan_read_json(path, &back, &d), 0);
  unlink(path);
  free(path);
  assert_int_equal(back.n, plan.n);
  for (size_t i = 0; i < plan.n; i++) {
    assert_string_equal(back.caps[i].node, plan.caps[i].node);
    assert_int_equal(back.caps[i].gpu, plan.caps[i].gpu);
    assert_true(back.caps[i].cap_w == plan.caps[i].cap_w);
  }
  assert_true(back.target_w == 1500);
  assert_int_equal(back.provenance, PFLEX_PROV_SIMULATED);
  pflex_caps_plan_release(&back);
  pflex_caps_plan_release(&plan);
  pflex_caps_plan_release(&m);
}

/* Each plan that cannot be carried out, with the words that say why. */
static void test_build_refuses(void **state) {
  (void)state;
  static const struct {
    const char *mapping, *why;
  } cases[] = {
      {"{\"jobs\": {\"a\": {\"n1\": [0, 1]}, \"b\": {\"n1\": [2]}}}", "runs on 3 GPUs"},
      {"{\"jobs\": {\"a\": {\"n1\": [0, 1, 3]}}}", "job 'b' (1 GPUs) is not in the mapping"},
      {"{\"jobs\": {\"a\": {\"n1\": [0, 1, 3]}, \"b\": {\"n1\": [2]}, \"c\": {\"n3\": [0]}}}",
       "job 'c' is not among the allocated jobs"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    struct pflex_caps_plan m, plan;
    struct pflex_diag d;
    assert_int_equal(read_mapping(cases[k].mapping, &m, &d), 0);
    assert_int_equal(pflex_caps_plan_build(&m, "m.json", jobs, 2, NULL, NAN, PFLEX_PROV_UNKNOWN, &plan, &d),
                     -PFLEX_E_DATA);
    if (!strstr(d.message, cases[k].why)) fail_msg("case %zu: '%s'", k, d.message);
    assert_null(plan.caps);
    pflex_caps_plan_release(&m);
  }
  /* Two allocated jobs of one name cannot be told apart. */
  static const struct pflex_caps_job twins[] = {{"a", 1, 300}, {"a", 1, 400}};
  struct pflex_caps_plan m, plan;
  struct pflex_diag d;
  assert_int_equal(read_mapping("{\"jobs\": {\"a\": {\"n\": [0]}}}", &m, &d), 0);
  assert_int_equal(pflex_caps_plan_build(&m, "m.json", twins, 2, NULL, NAN, PFLEX_PROV_UNKNOWN, &plan, &d),
                   -PFLEX_E_DATA);
  assert_non_null(strstr(d.message, "two allocated jobs are named 'a'"));
  pflex_caps_plan_release(&m);
}

static void test_mapping_errors(void **state) {
  (void)state;
  static const struct {
    const char *text, *why;
  } cases[] = {
      {"{\"jobs\": {\"a\": {\"n\": [0]}, \"b\": {\"n\": [0]}}}", "node 'n' GPU 0 is given twice"},
      {"{\"jobs\": {\"a\": {\"n\": [4096]}}}", "GPU index must be an integer 0-4095"},
      {"{\"jobs\": {\"a\": {\"n\": [1.5]}}}", "GPU index must be an integer"},
      {"{\"jobs\": {\"a\": {\"n\": []}}}", "non-empty array"},
      {"{\"jobs\": {\"a\": {}}}", "non-empty object"},
      {"{\"jobs\": {\"\": {\"n\": [0]}}}", "job name is empty"},
      {"{\"jobs\": {}}", "non-empty object"},
      {"{\"jobs\": {\"a\": {\"n\": [0]}}, \"extra\": 1}", "unknown field"},
      {"{\"jobs\": {\"a\": {\"n\": [0]}, \"a\": {\"m\": [1]}}}", "duplicate"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    struct pflex_caps_plan m;
    struct pflex_diag d;
    assert_true(read_mapping(cases[k].text, &m, &d) < 0);
    if (!strstr(d.message, cases[k].why)) fail_msg("case %zu: '%s'", k, d.message);
    assert_int_equal(m.n, 0);
  }
}

static void test_caps_file_errors(void **state) {
  (void)state;
  static const char *const bad[] = {
      "{\"format\": \"pflex-caps/2\", \"caps\": []}",
      "{\"caps\": []}",
      "{\"format\": \"pflex-caps/1\", \"caps\": [{\"node\": \"n\", \"gpu\": 0, \"cap_w\": 0}]}",
      "{\"format\": \"pflex-caps/1\", \"caps\": [{\"node\": \"n\", \"gpu\": 0}]}",
      "{\"format\": \"pflex-caps/1\", \"caps\": [{\"gpu\": 0, \"cap_w\": 300}]}",
      "{\"format\": \"pflex-caps/1\", \"caps\": [{\"node\": \"n\", \"gpu\": 0, \"cap_w\": 300, "
      "\"watts\": 3}]}",
      "{\"format\": \"pflex-caps/1\", \"caps\": [{\"node\": \"n\", \"gpu\": 1, \"cap_w\": 300}, "
      "{\"node\": \"n\", \"gpu\": 1, \"cap_w\": 200}]}",
      "[]",
      "{\"format\": \"pflex-caps/1\", \"provenance\": \"real\", \"caps\": []}",
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    char *path = write_tmp(bad[k]);
    struct pflex_caps_plan p;
    struct pflex_diag d;
    pflex_diag_clear(&d);
    int err = pflex_caps_plan_read_json(path, &p, &d);
    unlink(path);
    free(path);
    if (err >= 0) fail_msg("case %zu accepted", k);
    assert_true(d.message[0] != '\0');
    assert_int_equal(p.n, 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_build_gives_each_gpu_its_jobs_cap),
      cmocka_unit_test(test_build_refuses),
      cmocka_unit_test(test_mapping_errors),
      cmocka_unit_test(test_caps_file_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
