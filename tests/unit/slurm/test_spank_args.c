/* The SPANK plugin's input checks (src/slurm/spank_args.c): plugstack
 * arguments, the three job options, SLURM_JOB_GPUS lists and job ids; and
 * its reading of pflexd's replies (src/slurm/spank_reply.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "spank_args.h"
#include "spank_reply.h"

static char msg[PFLEX_SPANK_MSG_MAX];

static void test_defaults(void **state) {
  struct pflex_spank_conf c;
  pflex_spank_conf_init(&c);
  assert_string_equal(c.socket, "/run/pflex/pflexd.sock");
  assert_int_equal(c.nclasses, 4);
  char list[256];
  pflex_spank_conf_class_list(&c, list, sizeof list);
  assert_string_equal(list, "rigid, flex10, flex25, flex50");
  assert_int_equal(c.timeout_ms, 5000);
  assert_int_equal(c.on_error, PFLEX_SPANK_ON_ERROR_LOG);
}

static void test_conf_args(void **state) {
  struct pflex_spank_conf c;
  pflex_spank_conf_init(&c);
  char *argv[] = {"socket=/tmp/x/pflexd.sock", "classes=gold,silver,bronze", "timeout_ms=250",
                  "on_error=fail", "mapping_dir=/run/pflex/jobs"};
  assert_int_equal(c.mapping_dir[0], '\0');
  assert_int_equal(pflex_spank_conf_parse(&c, 5, argv, msg, sizeof msg), 0);
  assert_string_equal(c.mapping_dir, "/run/pflex/jobs");
  assert_string_equal(c.socket, "/tmp/x/pflexd.sock");
  assert_int_equal(c.nclasses, 3);
  assert_string_equal(c.classes[2], "bronze");
  assert_int_equal(c.timeout_ms, 250);
  assert_int_equal(c.on_error, PFLEX_SPANK_ON_ERROR_FAIL);
}

/* Each bad argument: -EINVAL, a message naming it, and nothing applied. */
static void test_conf_bad_args(void **state) {
  static const struct {
    const char *arg, *want;
  } bad[] = {
      {"sockt=/x", "'sockt=/x': unknown"},
      {"socket=relative", "socket=relative: not an absolute path"},
      {"socket=", "needs a value"},
      {"classes=a,,b", "class name '' must be"},
      {"classes=a b", "class name 'a b' must be"},
      {"timeout_ms=10", "timeout_ms=10: want milliseconds"},
      {"timeout_ms=5s", "timeout_ms=5s: want milliseconds"},
      {"on_error=drain", "on_error=drain: want log or fail"},
      {"mapping_dir=jobs", "mapping_dir=jobs: not an absolute path"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    struct pflex_spank_conf c;
    pflex_spank_conf_init(&c);
    char *argv[] = {"timeout_ms=300", (char *)bad[k].arg};
    msg[0] = '\0';
    assert_int_equal(pflex_spank_conf_parse(&c, 2, argv, msg, sizeof msg), -EINVAL);
    if (!strstr(msg, bad[k].want))
      fail_msg("arg %s: message '%s' lacks '%s'", bad[k].arg, msg, bad[k].want);
    assert_int_equal(c.timeout_ms, 5000); /* the good first argument is not applied either */
    assert_int_equal(c.nclasses, 4);
  }
}

/* Run as root (as the prolog is): the file's owner must be root. */
static void test_classes_file(void **state) {
  char path[] = "/tmp/test_spank_args.XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fputs("# the controller's classes\n\nrigid 0.0\n  flex20\t0.20  # comment\nflex40\n", f);
  fclose(f);
  struct pflex_spank_conf c;
  pflex_spank_conf_init(&c);
  char arg[64];
  snprintf(arg, sizeof arg, "classes_file=%s", path);
  char *argv[] = {arg};
  assert_int_equal(pflex_spank_conf_parse(&c, 1, argv, msg, sizeof msg), 0);
  assert_int_equal(c.nclasses, 3);
  assert_string_equal(c.classes[1], "flex20");

  f = fopen(path, "w");
  fputs("rigid\nfl@x\n", f);
  fclose(f);
  assert_int_equal(pflex_spank_conf_parse(&c, 1, argv, msg, sizeof msg), -EINVAL);
  char want[96];
  snprintf(want, sizeof want, "%s:2: class name 'fl@x'", path);
  assert_non_null(strstr(msg, want));

  /* Read by the prolog as root: a file others may write is refused. */
  f = fopen(path, "w");
  fputs("rigid\n", f);
  fclose(f);
  assert_int_equal(chmod(path, 0664), 0);
  assert_int_equal(pflex_spank_conf_parse(&c, 1, argv, msg, sizeof msg), -EINVAL);
  assert_non_null(strstr(msg, "must be owned by root and writable by no one else"));

  unlink(path);
  assert_int_equal(pflex_spank_conf_parse(&c, 1, argv, msg, sizeof msg), -ENOENT);
  assert_non_null(strstr(msg, "No such file"));
  assert_int_equal(c.nclasses, 3); /* the last good file's classes stay */
}

/* pflex-controller's own config: its [class NAME] sections are the classes. */
static void test_controller_config(void **state) {
  char path[] = "/tmp/test_spank_ctl.XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fputs("[controller]\nround_s = 1\nagents_file = /etc/pflex/agents\n\n"
        "[class rigid]\nweight = 2\n[class flex25]\nfloor_pct = 75\nmatch = *\n"
        "[class empty]\n",
        f);
  fclose(f);
  struct pflex_spank_conf c;
  pflex_spank_conf_init(&c);
  char arg[64];
  snprintf(arg, sizeof arg, "controller_config=%s", path);
  char *argv[] = {arg};
  assert_int_equal(pflex_spank_conf_parse(&c, 1, argv, msg, sizeof msg), 0);
  char list[128];
  pflex_spank_conf_class_list(&c, list, sizeof list);
  assert_string_equal(
      list, "rigid, flex25"); /* a section without keys is no class to the controller either */

  static const struct {
    const char *text, *want;
  } bad[] = {
      {"[controller]\nround_s = 1\n", "no [class NAME] section"},
      {"[class fl@x]\nweight = 1\n", "[class fl@x]: class name 'fl@x' must be"},
      {"[class a]\nweight\n", ":2: not INI"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    f = fopen(path, "w");
    fputs(bad[k].text, f);
    fclose(f);
    struct pflex_spank_conf d;
    pflex_spank_conf_init(&d);
    assert_int_equal(pflex_spank_conf_parse(&d, 1, argv, msg, sizeof msg), -EINVAL);
    if (!strstr(msg, bad[k].want))
      fail_msg("'%s': message '%s' lacks '%s'", bad[k].text, msg, bad[k].want);
    assert_int_equal(d.nclasses, 4); /* the defaults stay */
  }
  assert_int_equal(chmod(path, 0666), 0);
  assert_int_equal(pflex_spank_conf_parse(&c, 1, argv, msg, sizeof msg), -EINVAL);
  assert_non_null(strstr(msg, "controller_config: "));
  assert_non_null(strstr(msg, "must be owned by root and writable by no one else"));
  unlink(path);
}

static void test_class_option(void **state) {
  struct pflex_spank_conf c;
  struct pflex_spank_job_opts o = {0};
  pflex_spank_conf_init(&c);
  assert_int_equal(pflex_spank_opt_class(&c, "flex25", &o, msg, sizeof msg), 0);
  assert_true(o.has_class);
  assert_string_equal(o.class_name, "flex25");
  struct pflex_spank_job_opts none = {0};
  assert_int_equal(pflex_spank_opt_class(&c, "flex99", &none, msg, sizeof msg), -EINVAL);
  assert_false(none.has_class);
  assert_string_equal(msg,
                      "--pflex-class=flex99: unknown class (known: rigid, flex10, flex25, flex50)");
  assert_int_equal(pflex_spank_opt_class(&c, "FLEX25", &none, msg, sizeof msg), -EINVAL);
  assert_int_equal(pflex_spank_opt_class(&c, "", &none, msg, sizeof msg), -EINVAL);
}

static void test_number_options(void **state) {
  struct pflex_spank_job_opts o = {0};
  assert_int_equal(pflex_spank_opt_weight("2.5", &o, msg, sizeof msg), 0);
  assert_true(o.has_weight);
  assert_true(o.weight == 2.5);
  assert_int_equal(pflex_spank_opt_min_tput("0.75", &o, msg, sizeof msg), 0);
  assert_true(o.min_tput == 0.75);
  assert_int_equal(pflex_spank_opt_min_tput("1", &o, msg, sizeof msg), 0);

  static const char *bad_weight[] = {"0", "-1", "1001", "abc", "2x",
                                     "",  " 1", "nan",  "inf", "1e999"};
  for (size_t k = 0; k < sizeof bad_weight / sizeof bad_weight[0]; k++) {
    struct pflex_spank_job_opts n = {0};
    assert_int_equal(pflex_spank_opt_weight(bad_weight[k], &n, msg, sizeof msg), -EINVAL);
    assert_false(n.has_weight);
    assert_non_null(strstr(msg, "--pflex-weight="));
    assert_non_null(strstr(msg, "want a number in (0, 1000]"));
  }
  static const char *bad_frac[] = {"0", "1.01", "-0.5", "half", "50%", ""};
  for (size_t k = 0; k < sizeof bad_frac / sizeof bad_frac[0]; k++) {
    struct pflex_spank_job_opts n = {0};
    assert_int_equal(pflex_spank_opt_min_tput(bad_frac[k], &n, msg, sizeof msg), -EINVAL);
    assert_false(n.has_min_tput);
    assert_non_null(strstr(msg, "--pflex-min-throughput="));
  }
  struct pflex_spank_job_opts n = {0};
  assert_int_equal(pflex_spank_opt_weight(NULL, &n, msg, sizeof msg), -EINVAL);
}

static void expect_gpus(const char *s, size_t want_n, const unsigned *want) {
  unsigned g[8];
  size_t n = 99;
  assert_int_equal(pflex_spank_parse_gpus(s, g, 8, &n, msg, sizeof msg), 0);
  assert_int_equal(n, want_n);
  for (size_t k = 0; k < n; k++)
    assert_int_equal(g[k], want[k]);
}

static void test_gpu_lists(void **state) {
  expect_gpus("", 0, NULL);
  expect_gpus("0", 1, (unsigned[]){0});
  expect_gpus("2,0", 2, (unsigned[]){0, 2});
  expect_gpus("0-2,5", 4, (unsigned[]){0, 1, 2, 5});
  expect_gpus("1,1,0-1", 2, (unsigned[]){0, 1});
  static const char *bad[] = {"0,", ",0", "a", "0,,1", "2-1", "0-", "1 2", "99999", "0;1", "-1"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    unsigned g[8];
    size_t n = 0;
    assert_int_equal(pflex_spank_parse_gpus(bad[k], g, 8, &n, msg, sizeof msg), -EINVAL);
    assert_non_null(strstr(msg, "not a list of GPU indices"));
  }
  unsigned g[8];
  size_t n = 0;
  assert_int_equal(pflex_spank_parse_gpus("0-8", g, 8, &n, msg, sizeof msg), -E2BIG);
  assert_non_null(strstr(msg, "more than 8 GPUs"));
}

static void test_job_ids(void **state) {
  assert_true(pflex_spank_job_id_ok("12345"));
  assert_true(pflex_spank_job_id_ok("12_3"));
  assert_false(pflex_spank_job_id_ok(""));
  assert_false(pflex_spank_job_id_ok("1/2"));
  assert_false(pflex_spank_job_id_ok("../x"));
  char long_id[80];
  memset(long_id, '1', 65);
  long_id[65] = '\0';
  assert_false(pflex_spank_job_id_ok(long_id));
}

static void test_reply_error(void **state) {
  const char *b = "{\"error\":\"GPU 1 belongs to job '7'\",\"field\":\"gpus\"}";
  pflex_spank_reply_error(b, strlen(b), 409, msg, sizeof msg);
  assert_string_equal(msg, "pflexd answered 409: gpus: GPU 1 belongs to job '7'");
  b = "{\"error\":\"no such job on this node\"}";
  pflex_spank_reply_error(b, strlen(b), 404, msg, sizeof msg);
  assert_string_equal(msg, "pflexd answered 404: no such job on this node");
  pflex_spank_reply_error("<html>", 6, 502, msg, sizeof msg);
  assert_string_equal(msg, "pflexd answered 502");
}

static void test_reply_holders(void **state) {
  const char *b = "{\"jobs\":[{\"id\":\"41\",\"gpus\":[0,1]},{\"id\":\"42\",\"gpus\":[2]},"
                  "{\"id\":\"43\",\"gpus\":[1,3]},{\"id\":\"../x\",\"gpus\":[1]},"
                  "{\"id\":7,\"gpus\":[1]},{\"id\":\"44\",\"gpus\":\"1\"}]}";
  char ids[4][PFLEX_SPANK_JOB_ID_MAX + 1];
  size_t n = 99;
  unsigned mine[] = {1, 2};
  assert_int_equal(
      pflex_spank_reply_holders(b, strlen(b), "42", mine, 2, ids, 4, &n, msg, sizeof msg), 0);
  /* 42 is the job itself; "../x" is no job id; 7 is no string; 44's gpus no list. */
  assert_int_equal(n, 2);
  assert_string_equal(ids[0], "41");
  assert_string_equal(ids[1], "43");
  assert_int_equal(
      pflex_spank_reply_holders(b, strlen(b), "42", mine, 2, ids, 1, &n, msg, sizeof msg), 0);
  assert_int_equal(n, 1);
  unsigned none[] = {3};
  assert_int_equal(
      pflex_spank_reply_holders(b, strlen(b), "43", none, 1, ids, 4, &n, msg, sizeof msg), 0);
  assert_int_equal(n, 0);
  static const char *bad[] = {"", "{}", "{\"jobs\":{}}", "[1]", "{\"jobs\":[", "null"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    assert_int_equal(pflex_spank_reply_holders(bad[k], strlen(bad[k]), "1", mine, 2, ids, 4, &n,
                                               msg, sizeof msg),
                     -EPROTO);
    assert_string_equal(msg, "pflexd's GET /v1/jobs: no \"jobs\" list in the reply");
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_defaults),          cmocka_unit_test(test_conf_args),
      cmocka_unit_test(test_conf_bad_args),     cmocka_unit_test(test_classes_file),
      cmocka_unit_test(test_class_option),      cmocka_unit_test(test_number_options),
      cmocka_unit_test(test_gpu_lists),         cmocka_unit_test(test_job_ids),
      cmocka_unit_test(test_controller_config), cmocka_unit_test(test_reply_error),
      cmocka_unit_test(test_reply_holders),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
