/* Unit tests of the controller's SQLite state (src/controller/store.c): what
 * a restarted controller resumes from, also after the writer was killed with
 * SIGKILL mid-run, and refusing a newer schema. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "assert_near.h"
#include "controller/store.h"
#include "pflex/error.h"

static char dir[64];

static int setup(void **state) {
  snprintf(dir, sizeof dir, "/tmp/pflex-ctl-store-XXXXXX");
  assert_non_null(mkdtemp(dir));
  return 0;
}

static int teardown(void **state) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
  return 0;
}

static struct ctl_store *open_at(const char *name) {
  char path[128], err[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  struct ctl_store *st = NULL;
  if (ctl_store_open(path, &st, err, sizeof err) < 0) fail_msg("%s", err);
  return st;
}

/* What a controller writes during an event: the event, its baseline, rounds. */
static void write_event_and_rounds(struct ctl_store *st, double now, int rounds) {
  struct ctl_event e = {.cut_pct = 30, .start = now - 10, .duration_s = 600, .created = now - 10};
  snprintf(e.source, sizeof e.source, "api");
  assert_int_equal(ctl_store_event_add(st, &e), 0);
  assert_true(e.id > 0);
  e.baseline_w = 100000;
  assert_int_equal(ctl_store_event_update(st, &e), 0);
  for (int i = 0; i < rounds; i++) {
    struct ctl_round_row r = {.t = now - rounds + i,
                              .event_id = e.id,
                              .target_w = 70000,
                              .budget_w = 70500,
                              .measured_w = 69900,
                              .compliant = 1};
    struct ctl_alloc_row a = {"job-a", 8, 4000, 500, 100, 101, 140, 0.5};
    assert_int_equal(ctl_store_round(st, &r, &a, 1), 0);
    struct ctl_resume rs = {
        .offset_w = 500 + i, .uncapped_w = 100000, .last_round = r.t, .rounds = i + 1};
    assert_int_equal(ctl_store_resume_set(st, &rs), 0);
  }
}

static void check_resumable(struct ctl_store *st, double now, int rounds) {
  struct ctl_event *v = NULL;
  size_t n = 0;
  assert_int_equal(ctl_store_events(st, false, now, &v, &n), 0);
  assert_int_equal(n, 1);
  assert_near(v[0].baseline_w, 100000, 0);
  assert_near(v[0].cut_pct, 30, 0);
  double level;
  assert_true(ctl_event_level(&v[0], now, &level));
  assert_near(level, 70000, 1e-6);
  free(v);
  struct ctl_resume r;
  assert_int_equal(ctl_store_resume_get(st, &r), 0);
  assert_near(r.offset_w, 500 + rounds - 1, 0);
  assert_near(r.uncapped_w, 100000, 0);
  assert_int_equal(r.rounds, rounds);
  struct ctl_round_row *rows = NULL;
  assert_int_equal(ctl_store_rounds(st, now - 1000, now + 1, &rows, &n), 0);
  assert_int_equal(n, rounds);
  assert_int_equal(rows[n - 1].compliant, 1);
  free(rows);
}

static void resumes_after_a_clean_close(void **state) {
  double now = 1796126400;
  struct ctl_store *st = open_at("clean.db");
  write_event_and_rounds(st, now, 5);
  ctl_store_close(st);
  st = open_at("clean.db");
  check_resumable(st, now, 5);
  /* Past the event's end nothing is active any more. */
  struct ctl_event *v = NULL;
  size_t n = 9;
  assert_int_equal(ctl_store_events(st, false, now + 600, &v, &n), 0);
  assert_int_equal(n, 0);
  free(v);
  ctl_store_close(st);
}

static void resumes_after_sigkill(void **state) {
  double now = 1796126400;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    struct ctl_store *st = open_at("killed.db");
    write_event_and_rounds(st, now, 7);
    raise(SIGKILL); /* no close, no checkpoint */
    _exit(3);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  struct ctl_store *st = open_at("killed.db");
  check_resumable(st, now, 7);
  ctl_store_close(st);
}

static void refuses_a_newer_schema(void **state) {
  char path[128], err[256];
  snprintf(path, sizeof path, "%s/newer.db", dir);
  struct ctl_store *st = open_at("newer.db");
  ctl_store_close(st);
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(
      sqlite3_exec(db, "UPDATE meta SET value='99' WHERE key='schema'", NULL, NULL, NULL),
      SQLITE_OK);
  sqlite3_close(db);
  assert_int_equal(ctl_store_open(path, &st, err, sizeof err), -PFLEX_E_SCHEMA);
  assert_non_null(strstr(err, "newer"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(resumes_after_a_clean_close, setup, teardown),
      cmocka_unit_test_setup_teardown(resumes_after_sigkill, setup, teardown),
      cmocka_unit_test_setup_teardown(refuses_a_newer_schema, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
