/* Unit tests of the runs CSV reader and writer (src/io/runs_csv.c): every
 * validation rule names the right line and column and loads nothing. */
#include <errno.h>
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

#include "pflex/runs.h"
#include "pflex/runs_csv.h"

static char dir[] = "/tmp/pflex-test-runs-XXXXXX";

static const char *write_file(const char *name, const char *text) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

#define HEADER "group,gpu,gpus,cap_w,power_w,tokens_per_s\n"

/* Expects the text to be rejected with err, at line, naming column (NULL: none). */
static void expect_error(const char *text, int err, size_t line, const char *column,
                         const char *needle) {
  const char *path = write_file("bad.csv", text);
  struct pflex_runset set;
  pflex_runset_init(&set);
  set.n = 12345; /* must stay untouched on failure */
  struct pflex_diag diag;
  int rc = pflex_runs_read_csv(path, NULL, &set, &diag);
  if (rc != err) fprintf(stderr, "got %d (%s) for:\n%s\n", rc, diag.message, text);
  assert_int_equal(rc, err);
  assert_int_equal(set.n, 12345);
  assert_string_equal(diag.file, path);
  if (diag.line != line)
    fprintf(stderr, "line %zu (%s) for:\n%.200s\n", diag.line, diag.message, text);
  assert_int_equal(diag.line, line);
  assert_string_equal(diag.column, column ? column : "");
  if (needle && !strstr(diag.message, needle)) fprintf(stderr, "message: %s\n", diag.message);
  if (needle) assert_non_null(strstr(diag.message, needle));
}

static void test_reads_valid_file(void **state) {
  (void)state;
  const char *path = write_file(
      "ok.csv", "group,gpu,gpus,cap_w,power_w,tokens_per_s,arch,task,compile,dram_active,note\n"
                "g1,H200,8,700,5200.5,10000,moe,lora,Y,0.41,\"a, quoted\"\n"
                "\n"
                "g1,H200,8,300,2300,7000,moe,ft,y,0.40,\n");
  struct pflex_runset set;
  struct pflex_diag diag;
  assert_int_equal(pflex_runs_read_csv(path, NULL, &set, &diag), 0);
  assert_int_equal(set.n, 2);
  assert_int_equal(set.unit, PFLEX_TPUT_TOKENS_PER_S);
  assert_true(set.runs[0].power_w == 5200.5);
  assert_int_equal(set.runs[0].arch, PFLEX_ARCH_MOE);
  assert_int_equal(set.runs[0].task, PFLEX_TASK_FT);
  assert_true(set.runs[0].compile);
  assert_true(set.runs[0].have & PFLEX_RUN_COMPILE);
  assert_int_equal(set.runs[1].line, 4); /* the blank line 3 counts */
  /* Unknown columns are kept verbatim. */
  assert_int_equal(set.nextra, 2);
  assert_string_equal(set.extra_names[1], "note");
  assert_string_equal(set.runs[0].extra[1], "a, quoted");
  double v;
  assert_int_equal(pflex_runset_metric(&set, 1, "dram_active", &v), 0);
  assert_true(v == 0.40);
  pflex_runset_release(&set);
}

static void test_round_trip(void **state) {
  (void)state;
  const char *text =
      "group,gpu,gpus,cap_w,power_w,tokens_per_s,power_sd,tokens_sd,model,arch,task,"
      "seq_len,batch,ep,compile,grad_ckpt,set,dram_active\n"
      "\"a,b\",H200,8,700,5123.456789012345,9876.5,20.5,49.25,Qwen3-32B,dense,pt,"
      "4096,8,1,1,0,headline,0.3\n"
      "\"a,b\",H200,8,200,1500,3000.125,,,Qwen3-32B,dense,pt,4096,8,1,1,0,headline,\n";
  const char *in = write_file("in.csv", text);
  struct pflex_runset a, b;
  assert_int_equal(pflex_runs_read_csv(in, NULL, &a, NULL), 0);
  char out[512];
  snprintf(out, sizeof out, "%s/out.csv", dir);
  assert_int_equal(pflex_runs_write_csv(&a, out), 0);
  assert_int_equal(pflex_runs_read_csv(out, NULL, &b, NULL), 0);
  assert_int_equal(b.n, 2);
  for (size_t i = 0; i < 2; i++) {
    assert_string_equal(a.runs[i].group, b.runs[i].group);
    assert_true(a.runs[i].power_w == b.runs[i].power_w); /* exact: shortest round-trip form */
    assert_true(a.runs[i].tput == b.runs[i].tput);
    assert_int_equal(a.runs[i].have, b.runs[i].have);
    assert_string_equal(a.runs[i].extra[0], b.runs[i].extra[0]);
  }
  assert_true(b.runs[0].power_sd == 20.5);
  assert_string_equal(b.runs[0].model, "Qwen3-32B");
  /* The same text comes back byte for byte. */
  FILE *f = fopen(out, "r");
  char buf[2048] = {0};
  assert_true(fread(buf, 1, sizeof buf - 1, f) > 0);
  fclose(f);
  assert_string_equal(buf, text);
  pflex_runset_release(&a);
  pflex_runset_release(&b);
}

static void test_step_time_is_inverted(void **state) {
  (void)state;
  const char *path = write_file("steps.csv", "group,gpu,gpus,cap_w,power_w,s_per_step\n"
                                             "g,X9,4,500,1600,2.0\ng,X9,4,300,1000,2.5\n");
  struct pflex_runset set;
  assert_int_equal(pflex_runs_read_csv(path, NULL, &set, NULL), 0);
  assert_int_equal(set.unit, PFLEX_TPUT_PER_STEP_TIME);
  assert_false(pflex_tput_unit_absolute(set.unit));
  assert_true(set.runs[0].tput == 0.5);
  assert_true(set.runs[1].tput == 0.4);
  pflex_runset_release(&set);
}

/* --unit picks its column even when tokens_per_s is there too (docs/formats.md:
 * "choose among several rate columns with --unit"); the other rate stays an
 * extra column. A unit whose column is absent is an error, not a fallback. */
static void test_unit_chooses_column(void **state) {
  (void)state;
  const char *path =
      write_file("two.csv", "group,gpu,gpus,cap_w,power_w,tokens_per_s,samples_per_s\n"
                            "g,H200,8,700,5000,1000,4\ng,H200,8,300,2000,600,3\n");
  struct pflex_runs_read_opts o = {.unit = PFLEX_TPUT_SAMPLES_PER_S};
  struct pflex_runset set;
  struct pflex_diag diag;
  assert_int_equal(pflex_runs_read_csv(path, &o, &set, &diag), 0);
  assert_int_equal(set.unit, PFLEX_TPUT_SAMPLES_PER_S);
  assert_true(set.runs[0].tput == 4 && set.runs[1].tput == 3);
  assert_int_equal(set.nextra, 1);
  assert_string_equal(set.extra_names[0], "tokens_per_s");
  pflex_runset_release(&set);
  /* The default unit still prefers tokens_per_s. */
  assert_int_equal(pflex_runs_read_csv(path, NULL, &set, &diag), 0);
  assert_int_equal(set.unit, PFLEX_TPUT_TOKENS_PER_S);
  assert_true(set.runs[0].tput == 1000);
  pflex_runset_release(&set);
  o.unit = PFLEX_TPUT_STEPS_PER_S;
  assert_int_equal(pflex_runs_read_csv(path, &o, &set, &diag), -PFLEX_E_PARSE);
  assert_int_equal(diag.line, 1);
  assert_string_equal(diag.column, "steps_per_s");
  /* Two rates and neither tokens nor a unit: ambiguous. */
  path = write_file("amb.csv", "group,gpu,gpus,cap_w,power_w,samples_per_s,steps_per_s\n"
                               "g,H200,8,700,5000,4,1\n");
  assert_int_equal(pflex_runs_read_csv(path, NULL, &set, &diag), -PFLEX_E_PARSE);
  assert_non_null(strstr(diag.message, "several throughput columns"));
}

static void test_errors(void **state) {
  (void)state;
  expect_error("", -PFLEX_E_PARSE, 0, NULL, "empty file");
  expect_error(HEADER, -PFLEX_E_PARSE, 1, NULL, "header only");
  /* Text that is not UTF-8 (Latin-1 "é"): refused where it is read, any column. */
  expect_error(HEADER "ok,H200,8,700,5000,10\nok,H200,8,300,2300,6\nb\xe9,H200,8,700,5000,10\n",
               -PFLEX_E_PARSE, 4, "group", "not UTF-8 text (byte 2 of the field)");
  expect_error("group,gpu,gpus,cap_w,power_w,tokens_per_s,note\ng,H200,8,700,5000,10,caf\xe9\n",
               -PFLEX_E_PARSE, 2, "note", "not UTF-8");
  expect_error("group,gpu,gpus,cap_w,power_w,tokens_per_s,n\xe9\ng,H200,8,700,5000,10,1\n",
               -PFLEX_E_PARSE, 1, NULL, "column name 7 is not UTF-8");
  expect_error("group,gpu,gpus,cap_w,tokens_per_s\ng,H200,8,700,5\n", -PFLEX_E_PARSE, 1, "power_w",
               "missing");
  expect_error("group,gpu,gpus,cap_w,power_w\ng,H200,8,700,5\n", -PFLEX_E_PARSE, 1, "tokens_per_s",
               "missing");
  expect_error(HEADER "g,H200,8,700,5000,100\ng,H200,8,300,abc,80\n", -PFLEX_E_PARSE, 3, "power_w",
               "not a number");
  expect_error(HEADER "g,H200,8,700,5000,100\ng,H200,8,300,2000,nan\n", -PFLEX_E_PARSE, 3,
               "tokens_per_s", "finite");
  expect_error(HEADER "g,H200,8,700,inf,100\n", -PFLEX_E_PARSE, 2, "power_w", "finite");
  expect_error(HEADER "g,H200,8,700,1e999,100\n", -PFLEX_E_PARSE, 2, "power_w", "finite");
  expect_error(HEADER "g,H200,8,700,0,100\n", -PFLEX_E_DATA, 2, "power_w", "greater than zero");
  expect_error(HEADER "g,H200,8,700,5000,-3\n", -PFLEX_E_DATA, 2, "tokens_per_s",
               "greater than zero");
  /* The fuzzer's find: a subnormal time per step inverts to an infinite throughput. */
  expect_error("group,gpu,gpus,cap_w,power_w,s_per_step\ng,H100,8,700,5200,1e-320\n",
               -PFLEX_E_DATA, 2, "s_per_step", "too small a time per step");
  expect_error(HEADER "g,H200,8,700,5000,100\ng,H200,8,500,4000,90\ng,H200,8,500,4100,91\n",
               -PFLEX_E_DATA, 4, "cap_w", "twice");
  expect_error(HEADER "g,H200,8,700,5000,100\ng,H100,8,500,4000,90\n", -PFLEX_E_DATA, 3, "gpu",
               "mixes GPU types");
  expect_error(HEADER "g,H200,8,700,5000,100\ng,H200,16,500,4000,90\n", -PFLEX_E_DATA, 3, "gpus",
               "mixes GPU counts");
  expect_error(HEADER "g,H200,8,700,5000\n", -PFLEX_E_PARSE, 2, NULL, "5 fields");
  expect_error(HEADER "g,H200,8,700,5000,100,7\n", -PFLEX_E_PARSE, 2, NULL, "7 fields");
  expect_error(HEADER "g,H200,0,700,5000,100\n", -PFLEX_E_PARSE, 2, "gpus", "whole number");
  expect_error(HEADER ",H200,8,700,5000,100\n", -PFLEX_E_PARSE, 2, "group", "empty");
  expect_error("group,gpu,gpus,cap_w,power_w,tokens_per_s,arch\ng,H200,8,700,5000,100,ssm\n",
               -PFLEX_E_PARSE, 2, "arch", "dense");
  expect_error("group,gpu,gpus,cap_w,power_w,tokens_per_s,gpu\n", -PFLEX_E_PARSE, 1, "gpu",
               "twice");
  expect_error(HEADER "g,H200,8,700,5000,\"100\n", -PFLEX_E_PARSE, 2, NULL, "unterminated quote");
  expect_error(HEADER "g,H2\"00,8,700,5000,100\n", -PFLEX_E_PARSE, 2, NULL, "malformed quoting");

  /* A line far longer than any real one. */
  size_t n = 70000;
  char *big = malloc(n + 200);
  strcpy(big, HEADER "g,H200,8,700,5000,100\ng,H200,8,300,2000,");
  size_t len = strlen(big);
  memset(big + len, '9', n);
  strcpy(big + len + n, "\n");
  expect_error(big, -PFLEX_E_PARSE, 3, NULL, "allowed");
  free(big);
}

/* What spreadsheets write: a UTF-8 byte order mark before the header, CRLF
 * line ends, quoted numbers, spaces around unquoted fields. */
static void test_spreadsheet_style(void **state) {
  (void)state;
  const char *path =
      write_file("excel.csv", "\xEF\xBB\xBFgroup,gpu,gpus,cap_w,power_w,tokens_per_s\r\n"
                              "g, H200 ,\"8\",\"700\",5000 ,\"100.5\"\r\n"
                              "g,H200,8,300,2000,80\r\n"
                              "\r\n");
  struct pflex_runset set;
  struct pflex_diag diag;
  int rc = pflex_runs_read_csv(path, NULL, &set, &diag);
  if (rc) fprintf(stderr, "%s\n", diag.message);
  assert_int_equal(rc, 0);
  assert_int_equal(set.n, 2);
  assert_string_equal(set.runs[0].group, "g"); /* not "\xEF\xBB\xBFg..." */
  assert_string_equal(set.runs[0].gpu, "H200");
  assert_int_equal(set.runs[0].gpus, 8);
  assert_true(set.runs[0].power_w == 5000);
  assert_true(set.runs[0].tput == 100.5);
  assert_int_equal(set.runs[1].line, 3);
  assert_int_equal(set.nextra, 0);
  pflex_runset_release(&set);

  /* A BOM anywhere but at the very start stays part of the data. */
  expect_error(HEADER "\xEF\xBB\xBFg,H200,8,700,5000,100\ng,H200,8,300,2000,x\n", -PFLEX_E_PARSE, 3,
               "tokens_per_s", "not a number");
  /* A trailing comma gives a column without a name: said so. */
  expect_error("group,gpu,gpus,cap_w,power_w,tokens_per_s,\ng,H200,8,700,5000,100,\n",
               -PFLEX_E_PARSE, 1, NULL, "trailing comma");
}

static void test_directory(void **state) {
  (void)state;
  struct pflex_runset set;
  struct pflex_diag diag;
  assert_int_equal(pflex_runs_read_csv(dir, NULL, &set, &diag), -EISDIR);
  assert_string_equal(diag.file, dir);
  assert_non_null(strstr(diag.message, "directory"));
}

static void test_missing_file(void **state) {
  (void)state;
  struct pflex_runset set;
  struct pflex_diag diag;
  assert_int_equal(pflex_runs_read_csv("/nonexistent/x.csv", NULL, &set, &diag), -ENOENT);
  assert_string_equal(diag.file, "/nonexistent/x.csv");
  char buf[600];
  pflex_diag_format(&diag, buf, sizeof buf);
  assert_string_equal(buf, "'/nonexistent/x.csv': No such file or directory");
}

static int setup(void **state) {
  (void)state;
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd);
}

/* A group whose highest cap is below its GPU's default limit: its highest-cap
 * run is the reference run when reading for analysis; refused under the
 * store's rule (require_uncapped), unless runs are added to a stored group. */
static void test_reference_below_default(void **state) {
  (void)state;
  const char *path = write_file("ref.csv", HEADER "g,A100,8,300,2000,100\ng,A100,8,200,1500,80\n");
  struct pflex_runset set;
  struct pflex_diag diag;
  assert_int_equal(pflex_runs_read_csv(path, NULL, &set, &diag), 0);
  assert_int_equal(set.n, 2);
  pflex_runset_release(&set);
  struct pflex_runs_read_opts o = {.require_uncapped = true};
  assert_int_equal(pflex_runs_read_csv(path, &o, &set, &diag), -PFLEX_E_NOUNCAPPED);
  assert_int_equal(diag.line, 2);
  assert_non_null(strstr(diag.message, "below the A100's 400 W default limit"));
  o.partial_groups = true;
  assert_int_equal(pflex_runs_read_csv(path, &o, &set, &diag), 0);
  pflex_runset_release(&set);
  /* the reference cap: runs above it left out, every group needs a run at it */
  struct pflex_runs_read_opts r = {.reference_cap_w = 200};
  assert_int_equal(pflex_runs_read_csv(path, &r, &set, &diag), 0);
  assert_int_equal(set.n, 1);
  assert_float_equal(set.runs[0].cap_w, 200, 0);
  pflex_runset_release(&set);
  r.reference_cap_w = 250;
  assert_int_equal(pflex_runs_read_csv(path, &r, &set, &diag), -PFLEX_E_DATA);
  assert_non_null(strstr(diag.message, "group 'g' has no run at the reference cap 250 W"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reference_below_default),
      cmocka_unit_test(test_reads_valid_file),
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_step_time_is_inverted),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_missing_file),
      cmocka_unit_test(test_spreadsheet_style),
      cmocka_unit_test(test_directory),
      cmocka_unit_test(test_unit_chooses_column),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
