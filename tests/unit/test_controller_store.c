/* Unit tests of the controller's SQLite state (src/controller/store.c): what
 * a restarted controller resumes from, also after the writer was killed with
 * SIGKILL mid-run, refusing a newer schema, a version 1 store gaining the
 * allocations' class, a version 2 store the draw a T_max estimate was read at, and the per-class sums the report (report.c) draws. */
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
#include "controller/report.h"
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
    struct ctl_alloc_row a = {"job-a", 8, 4000, 500, 100, 101, 140, 0.5, NULL};
    struct ctl_resume rs = {
        .offset_w = 500 + i, .uncapped_w = 100000, .last_round = r.t, .rounds = i + 1};
    assert_int_equal(ctl_store_round(st, &(struct ctl_round_write){.round = &r, .alloc = &a, .nalloc = 1, .resume = &rs}), 0);
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

/* Runs sql on the store file at path directly, as another program (or an
 * older controller) would have left it. */
static void exec_raw(const char *path, const char *sql) {
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
}

static void refuses_a_newer_schema(void **state) {
  char path[128], err[256];
  snprintf(path, sizeof path, "%s/newer.db", dir);
  struct ctl_store *st = open_at("newer.db");
  ctl_store_close(st);
  exec_raw(path, "UPDATE meta SET value='99' WHERE key='schema'");
  assert_int_equal(ctl_store_open(path, &st, err, sizeof err), -PFLEX_E_SCHEMA);
  assert_non_null(strstr(err, "newer"));
}


/* Two classes and jobs without one over three rounds; a job without a
 * throughput counts in its class's power, not in its throughput. */
static int64_t write_classes(struct ctl_store *st, double now) {
  struct ctl_event e = {.target_w = 9000, .start = now, .duration_s = 60, .created = now};
  snprintf(e.source, sizeof e.source, "api");
  assert_int_equal(ctl_store_event_add(st, &e), 0);
  for (int i = 0; i < 3; i++) {
    struct ctl_round_row r = {.t = now + 1 + i, .event_id = e.id, .target_w = 9000,
                              .measured_w = 8900, .tput = 270, .tput_uncapped = 300,
                              .compliant = 1};
    struct ctl_alloc_row a[] = {
        {"a1", 8, 3000, 375, 90, 90, 100, 0.9, "rigid"},
        {"a2", 8, 2000, 250, 60, 60, 100, 0.9, "rigid"},
        {"b1", 8, 2500, 312, 80, 80, 100, 0.9, "batch"},
        {"b2", 8, 500, 200, NAN, NAN, 0, 0, "batch"}, /* loading: no throughput yet */
        {"c1", 8, 900, 200, 40 + i, 40, 50, 0.5, NULL},
    };
    assert_int_equal(ctl_store_round(st, &(struct ctl_round_write){.round = &r, .alloc = a, .nalloc = 5}), 0);
  }
  return e.id;
}

static void sums_per_class(void **state) {
  double now = 1796126400;
  struct ctl_store *st = open_at("classes.db");
  int64_t id = write_classes(st, now);
  struct ctl_class_row *c = NULL;
  size_t n = 0;
  assert_int_equal(ctl_store_class_rounds(st, now - 10, now + 100, &c, &n), 0);
  assert_int_equal(n, 9); /* 3 rounds x (none, batch, rigid), by time then class */
  assert_string_equal(c[0].cls, "");
  assert_string_equal(c[1].cls, "batch");
  assert_string_equal(c[2].cls, "rigid");
  assert_int_equal(c[1].jobs, 2);
  assert_near(c[1].power_w, 3000, 1e-9);
  assert_near(c[1].tput, 80, 1e-9);
  assert_near(c[1].tput_uncapped, 100, 1e-9);
  assert_near(c[2].tput / c[2].tput_uncapped, 150.0 / 200, 1e-12);
  assert_near(c[6].tput, 42, 1e-9);
  free(c);
  char err[256];
  json_t *o = NULL;
  assert_int_equal(ctl_report_json(st, id, &o, err, sizeof err), 0);
  json_t *cls = json_object_get(o, "classes");
  assert_int_equal(json_array_size(cls), 3);
  json_t *none = json_array_get(cls, 0), *batch = json_array_get(cls, 1);
  assert_true(json_is_null(json_object_get(none, "class")));
  assert_near(json_real_value(json_object_get(none, "held_tput_relative")), 41.0 / 50, 1e-12);
  assert_string_equal(json_string_value(json_object_get(batch, "class")), "batch");
  assert_int_equal(json_integer_value(json_object_get(batch, "jobs_max")), 2);
  assert_near(json_real_value(json_object_get(batch, "held_tput_relative")), 0.8, 1e-12);
  assert_near(json_real_value(json_object_get(batch, "power_w_mean")), 3000, 1e-9);
  json_decref(o);
  ctl_store_close(st);
}

/* Two events that overlap: A (9 kW, 60 s) and B (8 kW, from 20 s to 40 s),
 * the lower one setting the target while both are in force. A's report
 * counts B's rounds inside A's window too (A's target then holds a
 * fortiori), and says which it governed; B's report has only its own. */
static void an_overlapped_event_keeps_its_rounds(void **state) {
  double now = 1796126400;
  struct ctl_store *st = open_at("overlap.db");
  struct ctl_event a = {.target_w = 9000, .start = now, .duration_s = 60, .created = now};
  struct ctl_event b = {.target_w = 8000, .start = now + 20, .duration_s = 20, .created = now};
  snprintf(a.source, sizeof a.source, "api");
  snprintf(b.source, sizeof b.source, "api");
  assert_int_equal(ctl_store_event_add(st, &a), 0);
  assert_int_equal(ctl_store_event_add(st, &b), 0);
  for (int i = 0; i < 70; i++) { /* one round a second, 10 s past A's end */
    double t = now + i + 0.5;
    bool in_b = t >= b.start && t < b.start + b.duration_s, in_a = t < a.start + a.duration_s;
    struct ctl_round_row r = {.t = t,
                              .event_id = in_b ? b.id : in_a ? a.id : 0,
                              .target_w = in_b ? 8000 : in_a ? 9000 : 0,
                              .measured_w = in_b ? 7990 : 8990,
                              .compliant = in_b || in_a ? 1 : -1};
    assert_int_equal(ctl_store_round(st, &(struct ctl_round_write){.round = &r}), 0);
  }
  char err[256];
  json_t *o = NULL;
  assert_int_equal(ctl_report_json(st, a.id, &o, err, sizeof err), 0);
  assert_int_equal(json_integer_value(json_object_get(o, "rounds")), 60);
  assert_int_equal(json_integer_value(json_object_get(o, "rounds_governing")), 40);
  assert_int_equal(json_integer_value(json_object_get(o, "rounds_over")), 0);
  json_decref(o);
  assert_int_equal(ctl_report_json(st, b.id, &o, err, sizeof err), 0);
  assert_int_equal(json_integer_value(json_object_get(o, "rounds")), 20);
  assert_int_equal(json_integer_value(json_object_get(o, "rounds_governing")), 20);
  json_decref(o);
  ctl_store_close(st);
}

/* The schema version the store at path says it has. */
static void assert_schema(const char *path, const char *want) {
  sqlite3 *db;
  sqlite3_stmt *q;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='schema'", -1, &q, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  assert_string_equal((const char *)sqlite3_column_text(q, 0), want);
  sqlite3_finalize(q);
  sqlite3_close(db);
}

/* A store written by a controller before the class column: opened, it
 * gains the column (its rows kept, their class none), the learnt table, and
 * says this version. */
static void migrates_a_version_1_store(void **state) {
  char path[128];
  snprintf(path, sizeof path, "%s/v1.db", dir);
  exec_raw(path,
           "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
           "INSERT INTO meta VALUES('schema','1');"
           "CREATE TABLE rounds (id INTEGER PRIMARY KEY, t REAL NOT NULL, event_id "
           "INTEGER, target_w REAL, budget_w REAL, measured_w REAL, offset_w REAL, caps_w "
           "REAL, tput REAL, tput_uncapped REAL, compliant INTEGER, nodes INTEGER, "
           "unreachable INTEGER, jobs INTEGER, alloc_ms REAL, round_ms REAL);"
           "INSERT INTO rounds (id, t, event_id) VALUES (1, 100, 1);"
           "CREATE TABLE allocations (round_id INTEGER NOT NULL, job TEXT NOT NULL, gpus "
           "INTEGER, power_w REAL, cap_w REAL, tput REAL, pred_tput REAL, tput_uncapped "
           "REAL, confidence REAL);"
           "INSERT INTO allocations VALUES (1, 'old', 8, 1000, 125, 5, 5, 10, 1);");
  struct ctl_store *st = open_at("v1.db");
  struct ctl_class_row *c = NULL;
  size_t n = 0;
  assert_int_equal(ctl_store_class_rounds(st, 0, 200, &c, &n), 0);
  assert_int_equal(n, 1);
  assert_string_equal(c[0].cls, "");
  assert_near(c[0].power_w, 1000, 1e-9);
  free(c);
  struct ctl_round_row r = {.t = 101, .event_id = 1, .compliant = 1};
  struct ctl_alloc_row a = {"new", 8, 900, 112, 4, 4, 10, 1, "rigid"};
  assert_int_equal(ctl_store_round(st, &(struct ctl_round_write){.round = &r, .alloc = &a, .nalloc = 1}), 0);
  ctl_store_close(st);
  assert_schema(path, "3");
}

/* A round writes the learnt rows that changed and deletes those of jobs
 * forgotten, in its own transaction; the rest stays as stored, and is read
 * back so (a restarted controller seeds its jobs with it). */
static int learnt_round(struct ctl_store *st, double t, const struct ctl_learnt_row *v, size_t n,
                        const char (*gone)[CTL_JOB_ID_MAX], size_t ngone) {
  struct ctl_round_row r = {.t = t, .compliant = -1};
  struct ctl_round_write w = {
      .round = &r, .learnt = v, .nlearnt = n, .gone = gone, .ngone = ngone};
  return ctl_store_round(st, &w);
}

/* A version 2 store (learnt rows without the draw T_max was read at) gains
 * the column, its rows at 0 (not known), and becomes version 3. */
static void migrates_a_version_2_store(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "%s/v2.db", dir);
  ctl_store_close(open_at("v2.db"));
  exec_raw(path, "ALTER TABLE learnt DROP COLUMN t_est_w;"
                 "UPDATE meta SET value='2' WHERE key='schema';"
                 "INSERT INTO learnt VALUES ('j', 0, 0, 12000, 0);");
  struct ctl_store *st = open_at("v2.db");
  struct ctl_learnt_row *v = NULL;
  size_t n = 0;
  assert_int_equal(ctl_store_learnt_get(st, &v, &n), 0);
  assert_int_equal(n, 1);
  assert_near(v[0].t_est, 12000, 0);
  assert_near(v[0].t_est_w, 0, 0);
  free(v);
  ctl_store_close(st);
  assert_schema(path, "3");
}

static void keeps_what_was_learnt_of_the_jobs(void **state) {
  struct ctl_store *st = open_at("learnt.db");
  struct ctl_learnt_row a[] = {{"j1", 5400, 40000, 0, 0.98, 0}, {"j2", 0, 0, 12000, 0, 3500}};
  const char gone[][CTL_JOB_ID_MAX] = {"j1"};
  assert_int_equal(learnt_round(st, 1, a, 2, NULL, 0), 0);
  assert_int_equal(learnt_round(st, 2, NULL, 0, NULL, 0), 0); /* nothing changed: both stay */
  struct ctl_learnt_row *v = NULL;
  size_t n = 0;
  assert_int_equal(ctl_store_learnt_get(st, &v, &n), 0);
  assert_int_equal(n, 2);
  free(v);
  assert_int_equal(learnt_round(st, 3, NULL, 0, gone, 1), 0); /* j1 forgotten */
  ctl_store_close(st);
  st = open_at("learnt.db");
  assert_int_equal(ctl_store_learnt_get(st, &v, &n), 0);
  assert_int_equal(n, 1);
  assert_string_equal(v[0].job, "j2");
  assert_near(v[0].t_est, 12000, 0);
  assert_near(v[0].t_est_w, 3500, 0); /* the draw the estimate was read at */
  free(v);
  a[0].p_max = 5300; /* j1 back, learnt anew; j2 unchanged */
  assert_int_equal(learnt_round(st, 4, a, 1, gone, 1), 0); /* deleted, then written */
  assert_int_equal(ctl_store_learnt_get(st, &v, &n), 0);
  assert_int_equal(n, 2);
  assert_string_equal(v[0].job, "j1");
  assert_near(v[0].p_max, 5300, 0);
  assert_near(v[0].t_max, 40000, 0);
  assert_near(v[0].draw_ratio, 0.98, 0);
  assert_near(v[1].t_est, 12000, 0);
  free(v);
  ctl_store_close(st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(resumes_after_a_clean_close, setup, teardown),
      cmocka_unit_test_setup_teardown(resumes_after_sigkill, setup, teardown),
      cmocka_unit_test_setup_teardown(refuses_a_newer_schema, setup, teardown),
      cmocka_unit_test_setup_teardown(sums_per_class, setup, teardown),
      cmocka_unit_test_setup_teardown(an_overlapped_event_keeps_its_rounds, setup, teardown),
      cmocka_unit_test_setup_teardown(migrates_a_version_1_store, setup, teardown),
      cmocka_unit_test_setup_teardown(migrates_a_version_2_store, setup, teardown),
      cmocka_unit_test_setup_teardown(keeps_what_was_learnt_of_the_jobs, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
