/* Tests of pflexd's request body parsers (src/agent/body.c): accepted
 * bodies give exactly their values; every refusal names its field and the
 * right HTTP status. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "agent/body.h"
#include "agent/promtext.h"

static int caps(const char *body, struct agent_caps_req *r, struct agent_error *e) {
  return agent_caps_parse(body, strlen(body), 4, 60, 3600, r, e);
}

static void test_caps_accepted(void **state) {
  (void)state;
  struct agent_caps_req r;
  struct agent_error e;
  assert_int_equal(caps("{\"caps\":[{\"gpu\":0,\"watts\":450},{\"gpu\":3,\"watts\":300.5}],"
                        "\"lease_s\":30,\"fallback\":\"default\"}",
                        &r, &e),
                   0);
  assert_int_equal(r.n, 2);
  assert_false(r.items[0].by_job);
  assert_int_equal(r.items[0].gpu, 0);
  assert_int_equal(r.items[0].mw, 450000);
  assert_int_equal(r.items[1].gpu, 3);
  assert_int_equal(r.items[1].mw, 300500);
  assert_true(r.lease_s == 30);
  assert_true(r.fallback_default);

  assert_int_equal(
      caps("{\"caps\":[{\"job\":\"12_3\",\"watts\":200}],\"fallback\":{\"watts\":500}}", &r, &e),
      0);
  assert_true(r.items[0].by_job);
  assert_string_equal(r.items[0].job, "12_3");
  assert_true(r.lease_s == 60); /* the default */
  assert_false(r.fallback_default);
  assert_int_equal(r.fallback_mw, 500000);

  assert_int_equal(caps("{\"caps\":[]}", &r, &e), 0); /* a pure renewal */
  assert_int_equal(r.n, 0);
}

struct bad_case {
  const char *body;
  int status;
  const char *field;
};

static void test_caps_refused(void **state) {
  (void)state;
  static const struct bad_case cases[] = {
      {"", 400, ""},
      {"{", 400, ""},
      {"[]", 400, ""},
      {"{\"caps\":[],\"caps\":[]}", 400, ""},
      {"{}", 400, "caps"},
      {"{\"caps\":1}", 400, "caps"},
      {"{\"caps\":[],\"x\":1}", 400, "x"},
      {"{\"caps\":[1]}", 400, "caps[0]"},
      {"{\"caps\":[{\"watts\":1}]}", 400, "caps[0].gpu"},
      {"{\"caps\":[{\"gpu\":1,\"job\":\"a\",\"watts\":1}]}", 400, "caps[0].gpu"},
      {"{\"caps\":[{\"gpu\":4,\"watts\":1}]}", 422, "caps[0].gpu"},
      {"{\"caps\":[{\"gpu\":\"1\",\"watts\":1}]}", 400, "caps[0].gpu"},
      {"{\"caps\":[{\"gpu\":1}]}", 400, "caps[0].watts"},
      {"{\"caps\":[{\"gpu\":1,\"watts\":0}]}", 422, "caps[0].watts"},
      {"{\"caps\":[{\"gpu\":1,\"watts\":10001}]}", 422, "caps[0].watts"},
      {"{\"caps\":[{\"gpu\":1,\"watts\":null}]}", 400, "caps[0].watts"},
      {"{\"caps\":[{\"gpu\":1,\"watts\":5,\"w\":5}]}", 400, "caps[0].w"},
      {"{\"caps\":[{\"gpu\":1,\"watts\":5},{\"gpu\":1,\"watts\":6}]}", 422, "caps[1].gpu"},
      {"{\"caps\":[{\"job\":\"a\",\"watts\":5},{\"job\":\"a\",\"watts\":6}]}", 422, "caps[1].job"},
      {"{\"caps\":[{\"job\":\"\",\"watts\":5}]}", 400, "caps[0].job"},
      {"{\"caps\":[{\"job\":7,\"watts\":5}]}", 400, "caps[0].job"},
      {"{\"caps\":[],\"lease_s\":0.05}", 422, "lease_s"},
      {"{\"caps\":[],\"lease_s\":3601}", 422, "lease_s"},
      {"{\"caps\":[],\"lease_s\":true}", 400, "lease_s"},
      {"{\"caps\":[],\"fallback\":\"none\"}", 400, "fallback"},
      {"{\"caps\":[],\"fallback\":{\"watts\":-1}}", 422, "fallback.watts"},
      {"{\"caps\":[],\"fallback\":{\"w\":1}}", 400, "fallback.w"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    struct agent_caps_req r;
    struct agent_error e = {0};
    int err = caps(cases[k].body, &r, &e);
    if (err != -EINVAL || e.status != cases[k].status || strcmp(e.field, cases[k].field) != 0)
      fail_msg("%s: got %d, status %d, field '%s' (%s)", cases[k].body, err, e.status, e.field,
               e.message);
    assert_true(e.message[0] != '\0');
  }
}

static void test_jobs(void **state) {
  (void)state;
  struct agent_job_req r;
  struct agent_error e;
  const char *ok = "{\"gpus\":[3,0,1]}";
  assert_int_equal(agent_job_parse(ok, strlen(ok), 4, &r, &e), 0);
  assert_int_equal(r.n, 3);
  assert_int_equal(r.gpus[0], 3);
  assert_int_equal(r.gpus[2], 1);
  static const struct bad_case cases[] = {
      {"{}", 400, "gpus"},
      {"{\"gpus\":[]}", 422, "gpus"},
      {"{\"gpus\":[1,1]}", 422, "gpus[1]"},
      {"{\"gpus\":[4]}", 422, "gpus[0]"},
      {"{\"gpus\":[1.5]}", 400, "gpus[0]"},
      {"{\"gpus\":[0],\"id\":\"x\"}", 400, "id"},
      {"nope", 400, ""},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    e = (struct agent_error){0};
    int err = agent_job_parse(cases[k].body, strlen(cases[k].body), 4, &r, &e);
    if (err != -EINVAL || e.status != cases[k].status || strcmp(e.field, cases[k].field) != 0)
      fail_msg("%s: got %d, status %d, field '%s'", cases[k].body, err, e.status, e.field);
  }
}

static void test_job_ids(void **state) {
  (void)state;
  assert_true(agent_job_id_valid("123"));
  assert_true(agent_job_id_valid("123_4"));
  assert_true(agent_job_id_valid("123+0"));
  assert_true(agent_job_id_valid("a-B"));
  assert_false(agent_job_id_valid(""));
  assert_false(agent_job_id_valid("a.b"));
  assert_false(agent_job_id_valid("a/b"));
  assert_false(agent_job_id_valid("a b"));
  char id[70];
  memset(id, 'x', 64);
  id[64] = '\0';
  assert_true(agent_job_id_valid(id));
  id[64] = 'x';
  id[65] = '\0';
  assert_false(agent_job_id_valid(id));
}

static void test_job_scrape_fields(void **state) {
  (void)state;
  struct agent_job_req r;
  struct agent_error e;
  const char *ok = "{\"gpus\":[0],\"metrics_url\":\"http://127.0.0.1:9000/metrics\"}";
  assert_int_equal(agent_job_parse(ok, strlen(ok), 4, &r, &e), 0);
  assert_string_equal(r.metrics_url, "http://127.0.0.1:9000/metrics");
  assert_string_equal(r.metric, "tokens_per_second");
  static const struct bad_case cases[] = {
      {"{\"gpus\":[0],\"metrics_url\":\"https://127.0.0.1:9/m\"}", 422, "metrics_url"},
      {"{\"gpus\":[0],\"metrics_url\":\"http://127.0.0.1.evil:9/m\"}", 422, "metrics_url"},
      {"{\"gpus\":[0],\"metrics_url\":\"http://user@127.0.0.1:9/m\"}", 422, "metrics_url"},
      {"{\"gpus\":[0],\"metrics_url\":\"http://localhost:9/m@x\"}", 422, "metrics_url"},
      {"{\"gpus\":[0],\"metric\":\"x\"}", 400, "metric"},
      {"{\"gpus\":[0],\"metrics_url\":\"http://[::1]:9/m\",\"metric\":\"a-b\"}", 400, "metric"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    e = (struct agent_error){0};
    int err = agent_job_parse(cases[k].body, strlen(cases[k].body), 4, &r, &e);
    if (err != -EINVAL || e.status != cases[k].status || strcmp(e.field, cases[k].field) != 0)
      fail_msg("%s: got %d, status %d, field '%s'", cases[k].body, err, e.status, e.field);
  }
}

static void test_job_meta(void **state) {
  (void)state;
  struct agent_job_req r;
  struct agent_error e;
  const char *none = "{\"gpus\":[0]}";
  assert_int_equal(agent_job_parse(none, strlen(none), 4, &r, &e), 0);
  assert_string_equal(r.meta.class_name, "");
  assert_true(r.meta.weight == 0);
  assert_true(r.meta.min_throughput < 0);
  const char *ok = "{\"gpus\":[0,2],\"class\":\"flex_50-b\",\"weight\":2.5,"
                   "\"min_throughput\":0.8}";
  assert_int_equal(agent_job_parse(ok, strlen(ok), 4, &r, &e), 0);
  assert_string_equal(r.meta.class_name, "flex_50-b");
  assert_true(r.meta.weight == 2.5);
  assert_true(r.meta.min_throughput == 0.8);
  const char *edges = "{\"gpus\":[1],\"weight\":1000,\"min_throughput\":0}";
  assert_int_equal(agent_job_parse(edges, strlen(edges), 4, &r, &e), 0);
  assert_true(r.meta.weight == 1000 && r.meta.min_throughput == 0);
  const char *one = "{\"gpus\":[1],\"min_throughput\":1,"
                    "\"class\":\"abcdefghijabcdefghijabcdefghij12\"}";
  assert_int_equal(agent_job_parse(one, strlen(one), 4, &r, &e), 0);
  assert_true(r.meta.min_throughput == 1);
  assert_int_equal(strlen(r.meta.class_name), 32);
  static const struct bad_case cases[] = {
      {"{\"gpus\":[0],\"class\":\"\"}", 400, "class"},
      {"{\"gpus\":[0],\"class\":\"flex 50\"}", 400, "class"},
      {"{\"gpus\":[0],\"class\":\"a.b\"}", 400, "class"},
      {"{\"gpus\":[0],\"class\":\"abcdefghijabcdefghijabcdefghij123\"}", 400, "class"},
      {"{\"gpus\":[0],\"class\":7}", 400, "class"},
      {"{\"gpus\":[0],\"class\":null}", 400, "class"},
      {"{\"gpus\":[0],\"weight\":0}", 422, "weight"},
      {"{\"gpus\":[0],\"weight\":-1}", 422, "weight"},
      {"{\"gpus\":[0],\"weight\":1000.5}", 422, "weight"},
      {"{\"gpus\":[0],\"weight\":\"2\"}", 400, "weight"},
      {"{\"gpus\":[0],\"min_throughput\":-0.1}", 422, "min_throughput"},
      {"{\"gpus\":[0],\"min_throughput\":1.01}", 422, "min_throughput"},
      {"{\"gpus\":[0],\"min_throughput\":true}", 400, "min_throughput"},
      {"{\"gpus\":[0],\"klass\":\"rigid\"}", 400, "klass"},
      {"{\"gpus\":[9],\"class\":\"rigid\"}", 422, "gpus[0]"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    e = (struct agent_error){0};
    int err = agent_job_parse(cases[k].body, strlen(cases[k].body), 4, &r, &e);
    if (err != -EINVAL || e.status != cases[k].status || strcmp(e.field, cases[k].field) != 0)
      fail_msg("%s: got %d, status %d, field '%s'", cases[k].body, err, e.status, e.field);
  }
}

static void test_prom_sum(void **state) {
  (void)state;
  const char *text = "# HELP tps x\n# TYPE tps gauge\ntps{rank=\"0\"} 1000\n"
                     "tps{rank=\"1\",n=\"a}b\\\"c\"} 2500 1700000000000\r\n"
                     "tps_other 7\ntps NaN\ntpsx 1\n  tps 3\ntps{broken 4\n";
  double sum = 0;
  size_t n = 0;
  assert_int_equal(agent_prom_sum(text, strlen(text), "tps", &sum, &n), 0);
  assert_int_equal(n, 2);
  assert_true(sum == 3500);
  assert_int_equal(agent_prom_sum(text, strlen(text), "nope", &sum, &n), -ENOENT);
  /* the length bounds the parse: the first line only */
  assert_int_equal(agent_prom_sum("a 1\na 2\n", 4, "a", &sum, &n), 0);
  assert_true(sum == 1);
  assert_true(agent_prom_name_valid("train_tokens_total"));
  assert_true(agent_prom_name_valid("job:tps"));
  assert_false(agent_prom_name_valid("9tps"));
  assert_false(agent_prom_name_valid("a-b"));
  assert_false(agent_prom_name_valid(""));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_caps_accepted),
      cmocka_unit_test(test_caps_refused),
      cmocka_unit_test(test_jobs),
      cmocka_unit_test(test_job_ids),
      cmocka_unit_test(test_job_scrape_fields),
      cmocka_unit_test(test_job_meta),
      cmocka_unit_test(test_prom_sum),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
