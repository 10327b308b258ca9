/* Unit tests of the controller's input files (src/controller/config.c,
 * inventory.c, schedule.c): what the fuzz harnesses found or guard, each
 * as a case with its expected outcome. A long comment line is one line
 * (libinih would read its tail as a key; fgets split it into a bogus URL
 * line); a NUL byte or a control byte is refused naming the line; a refused
 * configuration file changes no setting; a schedule with one bad entry adds
 * nothing. */
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

#include "controller/config.h"
#include "controller/inventory.h"
#include "controller/schedule.h"
#include "controller/store.h"

static char dir[64], path[128];

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/pflex-ctl-files-XXXXXX");
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/file", dir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
  return 0;
}

static void put(const char *text, size_t n) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  assert_int_equal(fwrite(text, 1, n, f), n);
  fclose(f);
}
#define PUT(s) put(s, sizeof(s) - 1)

/* The file at path is refused with why in the message, every setting as it was. */
static void refused_unchanged(const char *why) {
  struct ctl_config cfg, before;
  ctl_config_defaults(&cfg);
  before = cfg;
  char err[512];
  assert_int_equal(ctl_config_load(&cfg, path, err, sizeof err), -EINVAL);
  assert_non_null(strstr(err, why));
  assert_memory_equal(&cfg, &before, sizeof cfg);
}

static void config_long_comment_refused(void **state) {
  (void)state;
  char text[400];
  snprintf(text, sizeof text, "[controller]\n# %.*s round_s = 30\n", 200,
           "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
           "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
           "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
  put(text, strlen(text));
  refused_unchanged("line 2: longer than 197 characters");
}

static void config_nul_and_half_applied(void **state) {
  (void)state;
  PUT("[controller]\nround_s = 2\0\nlease_rounds = 3\n");
  refused_unchanged("line 2: holds a NUL byte");
  /* a good key then a bad one: neither is applied */
  PUT("[controller]\nround_s = 2\nlease_rounds = 1\n");
  refused_unchanged("line 3: 'lease_rounds'");
  PUT("[controller]\nbaseline_rounds = 2.5\n"); /* a count of rounds is whole */
  refused_unchanged("line 2: 'baseline_rounds': '2.5' is not an integer in [1, 600]");
  struct ctl_config cfg;
  ctl_config_defaults(&cfg);
  char err[512];
  PUT("[controller]\nround_s = 2\n");
  assert_int_equal(ctl_config_load(&cfg, path, err, sizeof err), 0);
  assert_true(cfg.round_s == 2);
}

/* An unknown section is named at its header's line, even with no key in it
 * (libinih reports it at its first key, or not at all). */
static void config_unknown_section_at_its_line(void **state) {
  (void)state;
  PUT("[controler]\nround_s = 2\n");
  refused_unchanged("line 1: unknown section [controler] ([controller], [class NAME])");
  PUT("[controller]\nround_s = 2\n\n  [oops]\n");
  refused_unchanged("line 4: unknown section [oops]");
  /* A section given twice would be merged by libinih: refused at the second. */
  PUT("[class a]\nweight = 2\n[class b]\nweight = 1\n[class a]\nfloor_pct = 50\n");
  refused_unchanged("line 5: section [class a] given twice (first at line 1)");
  PUT("[controller]\nround_s = 2\n[controller]\n");
  refused_unchanged("line 3: section [controller] given twice (first at line 1)");
  PUT("[class gold]\nweight = 2\n[controller]\nround_s = 2\n");
  struct ctl_config cfg;
  ctl_config_defaults(&cfg);
  char err[512];
  assert_int_equal(ctl_config_load(&cfg, path, err, sizeof err), 0);
  assert_int_equal(cfg.nclasses, 1);
}

/* A bad value from the command line names the option, from a file the key. */
static void config_option_named(void **state) {
  (void)state;
  struct ctl_config cfg;
  ctl_config_defaults(&cfg);
  char err[512], a0[] = "run", a1[] = "--round-s", a2[] = "abc";
  char *argv[] = {a0, a1, a2, NULL};
  assert_int_equal(ctl_config_parse_args(&cfg, 3, argv, err, sizeof err), -EINVAL);
  assert_string_equal(err, "--round-s: 'abc' is not a number in [0.05, 60]");
  PUT("[controller]\nround_s = abc\n");
  refused_unchanged("line 2: 'round_s': 'abc' is not a number in [0.05, 60]");
}

static void agents_long_comment_is_one_line(void **state) {
  (void)state;
  char text[2100] = "# ";
  memset(text + 2, 'c', 1500);
  snprintf(text + 1502, sizeof text - 1502, "\nhttp://gpu001:9170\n");
  put(text, strlen(text));
  struct ctl_inventory inv;
  char err[512];
  assert_int_equal(ctl_inventory_load(path, &inv, err, sizeof err), 0);
  assert_int_equal(inv.n, 1);
  assert_string_equal(inv.urls[0], "http://gpu001:9170");
  ctl_inventory_release(&inv);
}

static void agents_nul_and_control_refused(void **state) {
  (void)state;
  struct ctl_inventory inv;
  char err[512];
  PUT("http://a:1\nhttp://gpu001:9170\0junk\n");
  assert_int_equal(ctl_inventory_load(path, &inv, err, sizeof err), -EINVAL);
  assert_non_null(strstr(err, "line 2: holds a NUL byte"));
  PUT("http://gpu\001:9170\n");
  assert_int_equal(ctl_inventory_load(path, &inv, err, sizeof err), -EINVAL);
  assert_non_null(strstr(err, "line 1: URL too long or holds a space, quote, control byte"));
  /* libcurl's URL parser: a port past 65535 at start, not a warning each round. */
  PUT("http://gpu001:9170\nhttp://gpu002:99999\n");
  assert_int_equal(ctl_inventory_load(path, &inv, err, sizeof err), -EINVAL);
  assert_non_null(strstr(err, "line 2: not a valid URL: "));
  assert_non_null(strstr(err, "65535"));
}

static void schedule_bad_entry_adds_nothing(void **state) {
  (void)state;
  char db[160], err[512];
  snprintf(db, sizeof db, "%s/state.db", dir);
  struct ctl_store *st;
  assert_int_equal(ctl_store_open(db, &st, err, sizeof err), 0);
  PUT("{\"events\":[{\"cut_pct\":25,\"start\":\"2027-06-01T12:00:00Z\",\"duration_s\":60},"
      "{\"cut_pct\":25,\"start\":\"now\",\"duration_s\":60}]}");
  assert_int_equal(ctl_schedule_load(path, st, 1.8e9, err, sizeof err), -EINVAL);
  assert_non_null(strstr(err, "events[1]: field 'start': a schedule needs a time"));
  struct ctl_event *v;
  size_t n = 99;
  assert_int_equal(ctl_store_events(st, true, 1.8e9, &v, &n), 0);
  assert_int_equal(n, 0);
  free(v);
  PUT("{\"events\":[{\"cut_pct\":25,\"start\":\"2027-06-01T12:00:00Z\",\"duration_s\":60},"
      "{\"target_w\":9000,\"start\":\"2027-06-02T12:00:00Z\",\"duration_s\":60}]}");
  assert_int_equal(ctl_schedule_load(path, st, 1.8e9, err, sizeof err), 2);
  assert_int_equal(ctl_schedule_load(path, st, 1.8e9, err, sizeof err), 0); /* not twice */
  assert_int_equal(ctl_store_events(st, true, 1.8e9, &v, &n), 0);
  assert_int_equal(n, 2);
  free(v);
  /* Read again with one entry more (SIGHUP): only that one is added. */
  PUT("{\"events\":[{\"cut_pct\":25,\"start\":\"2027-06-01T12:00:00Z\",\"duration_s\":60},"
      "{\"target_w\":9000,\"start\":\"2027-06-02T12:00:00Z\",\"duration_s\":60},"
      "{\"target_w\":8000,\"start\":\"2027-06-03T12:00:00Z\",\"duration_s\":60}]}");
  assert_int_equal(ctl_schedule_load(path, st, 1.8e9, err, sizeof err), 1);
  assert_int_equal(ctl_store_events(st, true, 1.8e9, &v, &n), 0);
  assert_int_equal(n, 3);
  free(v);
  ctl_store_close(st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(config_long_comment_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(config_nul_and_half_applied, setup, teardown),
      cmocka_unit_test_setup_teardown(config_unknown_section_at_its_line, setup, teardown),
      cmocka_unit_test_setup_teardown(config_option_named, setup, teardown),
      cmocka_unit_test_setup_teardown(agents_long_comment_is_one_line, setup, teardown),
      cmocka_unit_test_setup_teardown(agents_nul_and_control_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(schedule_bad_entry_adds_nothing, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
