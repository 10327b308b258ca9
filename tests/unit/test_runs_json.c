/* Unit tests of runsets as JSON (src/io/runs_json.c): round trips that keep
 * every double bit for bit, a hand-written document, and the errors. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "pflex/runs_json.h"

static struct pflex_run mkrun(const char *group, double cap, double p, double t) {
  return (struct pflex_run){
      .group = (char *)group, .gpu = "H200", .gpus = 8, .cap_w = cap, .power_w = p, .tput = t};
}

/* Every field in use somewhere; awkward doubles; an extra column empty everywhere. */
static void full_set(struct pflex_runset *set) {
  pflex_runset_init(set);
  set->unit = PFLEX_TPUT_SAMPLES_PER_S;
  assert_int_equal(pflex_runset_add_column(set, "dram_active", NULL), 0);
  assert_int_equal(pflex_runset_add_column(set, "always_empty", NULL), 0);
  struct pflex_run r = mkrun("g1", 700, 0.1 + 0.2, 1.0 / 3.0);
  r.model = "qwen \"moe\"";
  r.set = "validation";
  r.arch = PFLEX_ARCH_MOE;
  r.task = PFLEX_TASK_FT;
  r.power_sd = 1e-7;
  r.tput_sd = 123456.789012345678;
  r.seq_len = 8192;
  r.batch = 16;
  r.ep = 4;
  r.compile = false;
  r.grad_ckpt = true;
  r.have = PFLEX_RUN_POWER_SD | PFLEX_RUN_TPUT_SD | PFLEX_RUN_SEQ_LEN | PFLEX_RUN_BATCH |
           PFLEX_RUN_EP | PFLEX_RUN_COMPILE | PFLEX_RUN_GRAD_CKPT;
  assert_int_equal(pflex_runset_append(set, &r), 0);
  struct pflex_run bare = mkrun("g2", 250.5, 4.9e-324 /* smallest subnormal */, 1e300);
  assert_int_equal(pflex_runset_append(set, &bare), 0);
  assert_int_equal(pflex_runset_set_extra(set, 0, "dram_active", "0.420"), 0);
  assert_int_equal(pflex_runset_set_extra(set, 1, "note", "a,b\nc"), 0);
}

static void assert_same(const struct pflex_runset *x, const struct pflex_runset *y) {
  assert_int_equal(x->n, y->n);
  assert_int_equal(x->unit, y->unit);
  assert_int_equal(x->nextra, y->nextra);
  for (size_t k = 0; k < x->nextra; k++)
    assert_string_equal(x->extra_names[k], y->extra_names[k]);
  for (size_t i = 0; i < x->n; i++) {
    const struct pflex_run *a = &x->runs[i], *b = &y->runs[i];
    assert_string_equal(a->group, b->group);
    assert_string_equal(a->gpu, b->gpu);
    assert_int_equal(a->gpus, b->gpus);
    assert_true(a->cap_w == b->cap_w);
    assert_true(a->power_w == b->power_w);
    assert_true(a->tput == b->tput);
    assert_int_equal(a->have, b->have);
    if (a->have & PFLEX_RUN_POWER_SD) assert_true(a->power_sd == b->power_sd);
    if (a->have & PFLEX_RUN_TPUT_SD) assert_true(a->tput_sd == b->tput_sd);
    if (a->have & PFLEX_RUN_SEQ_LEN) assert_int_equal(a->seq_len, b->seq_len);
    if (a->have & PFLEX_RUN_BATCH) assert_int_equal(a->batch, b->batch);
    if (a->have & PFLEX_RUN_EP) assert_int_equal(a->ep, b->ep);
    if (a->have & PFLEX_RUN_COMPILE) assert_int_equal(a->compile, b->compile);
    if (a->have & PFLEX_RUN_GRAD_CKPT) assert_int_equal(a->grad_ckpt, b->grad_ckpt);
    assert_int_equal(a->arch, b->arch);
    assert_int_equal(a->task, b->task);
    if (a->model)
      assert_string_equal(a->model, b->model);
    else
      assert_null(b->model);
    if (a->set)
      assert_string_equal(a->set, b->set);
    else
      assert_null(b->set);
    for (size_t k = 0; k < x->nextra; k++)
      assert_string_equal(a->extra[k], b->extra[k]);
  }
}

static void test_round_trip_in_memory(void **state) {
  (void)state;
  struct pflex_runset set, back;
  full_set(&set);
  char *text;
  assert_int_equal(pflex_runs_to_json(&set, &text), 0);
  struct pflex_diag d;
  assert_int_equal(pflex_runs_from_json(text, "mem", &back, &d), 0);
  assert_same(&set, &back);
  /* Spelled out: the values that a 15-digit format would have changed. */
  assert_true(back.runs[0].power_w == 0.1 + 0.2);
  assert_true(back.runs[0].tput == 1.0 / 3.0);
  assert_true(back.runs[1].power_w == 4.9e-324);
  assert_string_equal(back.extra_names[1], "always_empty");
  assert_string_equal(back.runs[1].extra[2], "a,b\nc");
  assert_false(back.runs[1].have & PFLEX_RUN_POWER_SD);
  assert_null(back.runs[1].model);
  assert_string_equal(back.source, "mem");
  /* The unit is written with its stable key. */
  assert_non_null(strstr(text, "\"unit\": \"samples_per_s\""));
  free(text);
  pflex_runset_release(&back);
  pflex_runset_release(&set);
}

static void test_round_trip_file(void **state) {
  (void)state;
  char dir[] = "/tmp/pflex-test-json-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[64];
  snprintf(path, sizeof path, "%s/runs.json", dir);
  struct pflex_runset set, back;
  full_set(&set);
  assert_int_equal(pflex_runs_write_json(&set, path), 0);
  struct pflex_diag d;
  assert_int_equal(pflex_runs_read_json(path, &back, &d), 0);
  assert_same(&set, &back);
  pflex_runset_release(&back);
  /* Overwriting replaces the file whole. */
  set.n = 1;
  assert_int_equal(pflex_runs_write_json(&set, path), 0);
  set.n = 2;
  assert_int_equal(pflex_runs_read_json(path, &back, &d), 0);
  assert_int_equal(back.n, 1);
  pflex_runset_release(&back);
  pflex_runset_release(&set);
  unlink(path);
  assert_int_equal(rmdir(dir), 0); /* no temporary file left behind */
  assert_int_equal(pflex_runs_read_json(path, &back, &d), -ENOENT);
}

static void test_hand_written(void **state) {
  (void)state;
  const char *doc = "{\"format\": \"pflex-runs\", \"version\": 1, \"unit\": \"tokens_per_s\","
                    " \"runs\": ["
                    "  {\"group\": \"x\", \"gpu\": \"A100\", \"gpus\": 2, \"cap_w\": 400,"
                    "   \"power_w\": 750, \"tput\": 2000, \"task\": \"pt\", \"compile\": true,"
                    "   \"extra\": {\"sm_active\": 0.5, \"steps\": 12, \"who\": \"me\"}},"
                    "  {\"group\": \"x\", \"gpu\": \"A100\", \"gpus\": 2, \"cap_w\": 250.5,"
                    "   \"power_w\": 480, \"tput\": 1500.75}]}";
  struct pflex_runset set;
  struct pflex_diag d;
  assert_int_equal(pflex_runs_from_json(doc, NULL, &set, &d), 0);
  assert_int_equal(set.n, 2);
  assert_int_equal(set.unit, PFLEX_TPUT_TOKENS_PER_S);
  assert_string_equal(set.runs[0].gpu, "A100");
  assert_int_equal(set.runs[0].gpus, 2);
  assert_true(set.runs[0].cap_w == 400); /* an integer where a number is expected */
  assert_true(set.runs[1].cap_w == 250.5);
  assert_true(set.runs[1].tput == 1500.75);
  assert_int_equal(set.runs[0].task, PFLEX_TASK_PT);
  assert_int_equal(set.runs[0].arch, PFLEX_ARCH_UNKNOWN);
  assert_int_equal(set.runs[0].have, PFLEX_RUN_COMPILE);
  assert_true(set.runs[0].compile);
  assert_int_equal(set.runs[1].have, 0);
  /* Numbers in extra columns become their text; absent cells are empty. */
  assert_int_equal(set.nextra, 3);
  double v;
  assert_int_equal(pflex_runset_metric(&set, 0, "sm_active", &v), 0);
  assert_true(v == 0.5);
  assert_string_equal(set.runs[0].extra[1], "12");
  assert_string_equal(set.runs[0].extra[2], "me");
  assert_string_equal(set.runs[1].extra[2], "");
  assert_null(set.source);
  pflex_runset_release(&set);
}

/* Each document must fail with code and name the column (or NULL for none). */
static void expect_error(const char *doc, int code, const char *column, const char *in_message) {
  struct pflex_runset set;
  pflex_runset_init(&set);
  set.n = 12345; /* a sentinel: a failed read must not touch *ret_set */
  struct pflex_diag d;
  int err = pflex_runs_from_json(doc, "t.json", &set, &d);
  if (err != code) fprintf(stderr, "doc %s: got %d (%s)\n", doc, err, d.message);
  assert_int_equal(err, code);
  assert_int_equal(set.n, 12345);
  assert_string_equal(d.file, "t.json");
  assert_string_equal(d.column, column ? column : "");
  if (in_message) assert_non_null(strstr(d.message, in_message));
}

#define HEAD "{\"format\": \"pflex-runs\", \"version\": 1, \"unit\": \"tokens_per_s\", \"runs\": ["
#define RUN(extra)                                                                                 \
  "{\"group\": \"g\", \"gpu\": \"H100\", \"gpus\": 8, \"cap_w\": 700, \"power_w\": 5000, "         \
  "\"tput\": 10" extra "}"

static void test_errors(void **state) {
  (void)state;
  expect_error(HEAD RUN(""), -PFLEX_E_PARSE, NULL, NULL); /* unterminated */
  expect_error("[]", -PFLEX_E_PARSE, NULL, "not a JSON object");
  expect_error("{\"format\": \"other\", \"version\": 1, \"unit\": \"tokens_per_s\", \"runs\": []}",
               -PFLEX_E_DATA, "format", NULL);
  expect_error(
      "{\"format\": \"pflex-runs\", \"version\": 2, \"unit\": \"tokens_per_s\", \"runs\": []}",
      -PFLEX_E_DATA, "version", NULL);
  expect_error("{\"format\": \"pflex-runs\", \"version\": 1, \"unit\": \"furlongs\", \"runs\": []}",
               -PFLEX_E_DATA, "unit", "furlongs");
  expect_error(HEAD RUN(", \"power_sd\": -1") "]}", -PFLEX_E_DATA, "power_sd", "run 1");
  expect_error(HEAD RUN("") ", {\"group\": \"g\", \"gpu\": \"H100\", \"gpus\": 8, \"cap_w\": 0,"
                            " \"power_w\": 900, \"tput\": 9}]}",
               -PFLEX_E_DATA, "cap_w", "run 2: not a positive number");
  expect_error(HEAD RUN("") ", {\"group\": \"g\", \"gpu\": \"H100\", \"gpus\": 8, \"cap_w\": 500,"
                            " \"tput\": 9}]}",
               -PFLEX_E_DATA, "power_w", "run 2: missing");
  expect_error(HEAD RUN(", \"gpus\": 0") "]}", -PFLEX_E_PARSE, NULL, "duplicate");
  expect_error(HEAD RUN(", \"powr_w\": 3") "]}", -PFLEX_E_DATA, "powr_w", "unknown field");
  expect_error(
      "{\"format\": \"pflex-runs\", \"version\": 1, \"unit\": \"tokens_per_s\", \"runz\": []}",
      -PFLEX_E_DATA, "runz", "unknown field");
  expect_error(HEAD RUN(", \"arch\": \"sparse\"") "]}", -PFLEX_E_DATA, "arch", "sparse");
  expect_error(HEAD RUN(", \"seq_len\": 1.5") "]}", -PFLEX_E_PARSE, "seq_len", NULL);
  expect_error(HEAD RUN(", \"compile\": 1") "]}", -PFLEX_E_PARSE, "compile", NULL);
  expect_error(HEAD RUN(", \"extra\": {\"x\": [1]}") "]}", -PFLEX_E_PARSE, "x", NULL);
  expect_error(HEAD RUN(", \"model\": 7") "]}", -PFLEX_E_PARSE, "model", NULL);
  /* Whole numbers in the CSV reader's range 1..PFLEX_RUN_INT_MAX, so that a JSON
   * import always exports to a CSV that reads back. */
  expect_error(HEAD "{\"group\": \"g\", \"gpu\": \"H100\", \"gpus\": 0, \"cap_w\": 700, "
                    "\"power_w\": 5000, \"tput\": 10}]}",
               -PFLEX_E_DATA, "gpus", "run 1: 0 is not a whole number from 1 to 1000000");
  expect_error(HEAD RUN(", \"seq_len\": 0") "]}", -PFLEX_E_DATA, "seq_len", "from 1 to");
  expect_error(HEAD RUN(", \"ep\": 2000000") "]}", -PFLEX_E_DATA, "ep", "from 1 to");
  expect_error(HEAD RUN(", \"batch\": -4") "]}", -PFLEX_E_DATA, "batch", "from 1 to");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip_in_memory),
      cmocka_unit_test(test_round_trip_file),
      cmocka_unit_test(test_hand_written),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
