/* Unit tests of the SQLite store (src/io/store.c): opening and migrating,
 * refusing unknown schemas, put/get round trips, conflicts and rollback,
 * telemetry samples. Each test works in its own temporary directory. */
#include <errno.h>
#include <math.h>
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
#include <sqlite3.h>

#include "pflex/runs_json.h"
#include "pflex/store.h"

struct fixture {
  char dir[64];
  char db[128];
};

static int setup(void **state) {
  struct fixture *f = calloc(1, sizeof *f);
  if (!f) return -1;
  snprintf(f->dir, sizeof f->dir, "/tmp/pflex-test-store-XXXXXX");
  if (!mkdtemp(f->dir)) return -1;
  snprintf(f->db, sizeof f->db, "%s/pflex.db", f->dir);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fixture *f = *state;
  char p[160];
  const char *suffixes[] = {"", "-journal", "-wal", "-shm"};
  for (size_t i = 0; i < 4; i++) {
    snprintf(p, sizeof p, "%s%s", f->db, suffixes[i]);
    unlink(p);
  }
  snprintf(p, sizeof p, "%s/other.db", f->dir);
  unlink(p);
  rmdir(f->dir);
  free(f);
  return 0;
}

/* Runs SQL on a database directly, bypassing the store (to forge files). */
static void raw_exec(const char *path, const char *sql) {
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
}

/* The extra cells stored (schema 2: the length of every run's extras array). */
#define EXTRA_CELLS "SELECT coalesce(sum(json_array_length(extras)), 0) FROM runs"

static long long raw_count(const char *path, const char *sql) {
  sqlite3 *db;
  sqlite3_stmt *st;
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  long long n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

static struct pflex_store *open_rw(const char *path) {
  struct pflex_store *s = NULL;
  struct pflex_diag d;
  int err = pflex_store_open(path, PFLEX_STORE_CREATE, &s, &d);
  if (err) fprintf(stderr, "open: %s\n", d.message);
  assert_int_equal(err, 0);
  return s;
}

static struct pflex_run mkrun(const char *group, const char *gpu, int gpus, double cap, double p,
                              double t) {
  return (struct pflex_run){.group = (char *)group,
                            .gpu = (char *)gpu,
                            .gpus = gpus,
                            .cap_w = cap,
                            .power_w = p,
                            .tput = t};
}

static void add(struct pflex_runset *set, struct pflex_run r) {
  assert_int_equal(pflex_runset_append(set, &r), 0);
}

/* Two groups: "a" (H200 x8, dense pt, with config and extras) and "b" (H100 x4). */
static void sample_set(struct pflex_runset *set) {
  pflex_runset_init(set);
  struct pflex_run r = mkrun("a", "H200", 8, 700, 5000.5, 1000.25);
  r.model = "llama-8b";
  r.arch = PFLEX_ARCH_DENSE;
  r.task = PFLEX_TASK_PT;
  r.set = "headline";
  r.seq_len = 4096;
  r.compile = true;
  r.grad_ckpt = false;
  r.have = PFLEX_RUN_SEQ_LEN | PFLEX_RUN_COMPILE | PFLEX_RUN_GRAD_CKPT;
  r.have |= PFLEX_RUN_POWER_SD | PFLEX_RUN_TPUT_SD;
  r.power_sd = 12.5;
  r.tput_sd = 0.1; /* not exactly representable: must come back bit for bit */
  r.line = 2;
  add(set, r);
  r.cap_w = 400;
  r.power_w = 3100;
  r.tput = 900.125;
  r.have &= ~(unsigned)PFLEX_RUN_POWER_SD; /* this run has no power_sd */
  r.tput_sd = 2;
  r.line = 3;
  add(set, r);
  struct pflex_run b = mkrun("b", "H100", 4, 700, 2500, 400);
  b.arch = PFLEX_ARCH_MOE;
  b.task = PFLEX_TASK_FT;
  b.ep = 2;
  b.have = PFLEX_RUN_EP;
  b.line = 4;
  add(set, b);
  b.cap_w = 300;
  b.power_w = 1200;
  b.tput = 1.0 / 3.0;
  b.line = 5;
  add(set, b);
  assert_int_equal(pflex_runset_set_extra(set, 0, "dram_active", "0.42"), 0);
  assert_int_equal(pflex_runset_set_extra(set, 0, "note", "x, \"quoted\""), 0);
  assert_int_equal(pflex_runset_set_extra(set, 3, "dram_active", "0.30"), 0);
  set->unit = PFLEX_TPUT_TOKENS_PER_S;
}

static size_t count_groups(struct pflex_store *s) {
  struct pflex_store_group *g;
  size_t n;
  assert_int_equal(pflex_store_list_groups(s, &g, &n), 0);
  pflex_store_groups_free(g, n);
  return n;
}

/* ---- opening and migrating ---- */

static void test_fresh_store_gets_latest_schema(void **state) {
  struct fixture *f = *state;
  /* The program knows two migrations today (store_schema.c). */
  assert_int_equal(pflex_store_schema_latest(), 2);
  struct pflex_store *s = open_rw(f->db);
  int v = 0;
  assert_int_equal(pflex_store_schema_version(s, &v), 0);
  assert_int_equal(v, 2);
  assert_int_equal(count_groups(s), 0);
  pflex_store_close(s);
  /* Reopening migrates nothing again: still two recorded migrations. */
  s = open_rw(f->db);
  pflex_store_close(s);
  assert_int_equal(raw_count(f->db, "SELECT count(*) FROM schema_version"), 2);
  assert_int_equal(raw_count(f->db, "SELECT max(version) FROM schema_version"), 2);
  /* A new store's pages are 16 KiB (store.c: fewer splits in a large import). */
  assert_int_equal(raw_count(f->db, "PRAGMA page_size"), 16384);
  /* Every table of schema 2 exists, and schema 1's run_extras no more. */
  assert_int_equal(raw_count(f->db,
                             "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND "
                             "name IN ('groups', 'runs', 'extra_columns', 'metrics', 'samples')"),
                   5);
  assert_int_equal(
      raw_count(f->db, "SELECT count(*) FROM sqlite_schema WHERE name = 'run_extras'"), 0);
  assert_int_equal(raw_count(f->db, "SELECT count(*) FROM pragma_table_info('runs')"
                                    " WHERE name IN ('extra_columns_id', 'extras')"),
                   2);
}

static void test_empty_file_is_migrated(void **state) {
  struct fixture *f = *state;
  FILE *fp = fopen(f->db, "w"); /* `touch pflex.db` */
  assert_non_null(fp);
  fclose(fp);
  struct pflex_store *s = open_rw(f->db);
  int v = 0;
  assert_int_equal(pflex_store_schema_version(s, &v), 0);
  assert_int_equal(v, 2);
  pflex_store_close(s);
}

static void test_missing_file_without_create(void **state) {
  struct fixture *f = *state;
  struct pflex_store *s = NULL;
  struct pflex_diag d;
  assert_int_equal(pflex_store_open(f->db, 0, &s, &d), -ENOENT);
  assert_int_equal(pflex_store_open(f->db, PFLEX_STORE_READONLY | PFLEX_STORE_CREATE, &s, &d),
                   -ENOENT);
  assert_null(s);
  struct stat sb;
  assert_int_not_equal(stat(f->db, &sb), 0); /* nothing was created */
  assert_string_equal(d.file, f->db);
  /* A directory is not a store either. */
  assert_int_equal(pflex_store_open(f->dir, PFLEX_STORE_CREATE, &s, &d), -EISDIR);
}

static void test_newer_schema_refused(void **state) {
  struct fixture *f = *state;
  raw_exec(f->db, "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, summary TEXT NOT NULL,"
                  " applied_at TEXT NOT NULL);"
                  "INSERT INTO schema_version VALUES (999, 'from the future', 'x');");
  struct pflex_store *s = NULL;
  struct pflex_diag d;
  assert_int_equal(pflex_store_open(f->db, PFLEX_STORE_CREATE, &s, &d), -PFLEX_E_SCHEMA);
  assert_null(s);
  assert_non_null(strstr(d.message, "999"));
  assert_non_null(strstr(d.message, "newer"));
  assert_int_equal(pflex_store_open(f->db, PFLEX_STORE_READONLY, &s, &d), -PFLEX_E_SCHEMA);
  /* Refusing did not touch it: no migration was recorded or table created. */
  assert_int_equal(raw_count(f->db, "SELECT count(*) FROM schema_version"), 1);
  assert_int_equal(raw_count(f->db, "SELECT count(*) FROM sqlite_schema WHERE name = 'runs'"), 0);
}

static void test_foreign_files_refused(void **state) {
  struct fixture *f = *state;
  struct pflex_store *s = NULL;
  struct pflex_diag d;
  raw_exec(f->db, "CREATE TABLE something (x);");
  assert_int_equal(pflex_store_open(f->db, PFLEX_STORE_CREATE, &s, &d), -PFLEX_E_SCHEMA);
  assert_non_null(strstr(d.message, "not a pflex store"));
  unlink(f->db);
  FILE *fp = fopen(f->db, "w");
  assert_non_null(fp);
  fputs("group,gpu,gpus,cap_w,power_w,tokens_per_s\nthis is a CSV file, not SQLite\n", fp);
  fclose(fp);
  assert_int_equal(pflex_store_open(f->db, PFLEX_STORE_CREATE, &s, &d), -PFLEX_E_SCHEMA);
  assert_non_null(strstr(d.message, "not an SQLite database"));
  assert_null(s);
}

static void test_readonly_store(void **state) {
  struct fixture *f = *state;
  pflex_store_close(open_rw(f->db));
  struct pflex_store *s = NULL;
  struct pflex_diag d;
  assert_int_equal(pflex_store_open(f->db, PFLEX_STORE_READONLY, &s, &d), 0);
  struct pflex_runset set;
  sample_set(&set);
  assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_APPEND, NULL, &d), -EROFS);
  struct pflex_sample smp = {.time_s = 1, .gpu = 0, .metric = "power_w", .value = 1};
  assert_int_equal(pflex_store_add_samples(s, 1, &smp, 1), -EROFS);
  pflex_store_close(s);
  pflex_runset_release(&set);
}

/* ---- runs ---- */

/* Field-by-field equality of two runs of two runsets, extras by column name. */
static void assert_same_run(const struct pflex_runset *xs, size_t i, const struct pflex_runset *ys,
                            size_t j) {
  const struct pflex_run *x = &xs->runs[i], *y = &ys->runs[j];
  assert_string_equal(x->group, y->group);
  assert_string_equal(x->gpu, y->gpu);
  assert_int_equal(x->gpus, y->gpus);
  assert_true(x->cap_w == y->cap_w);
  assert_true(x->power_w == y->power_w);
  assert_true(x->tput == y->tput);
  assert_int_equal(x->have, y->have);
  if (x->have & PFLEX_RUN_POWER_SD) assert_true(x->power_sd == y->power_sd);
  if (x->have & PFLEX_RUN_TPUT_SD) assert_true(x->tput_sd == y->tput_sd);
  if (x->have & PFLEX_RUN_SEQ_LEN) assert_int_equal(x->seq_len, y->seq_len);
  if (x->have & PFLEX_RUN_BATCH) assert_int_equal(x->batch, y->batch);
  if (x->have & PFLEX_RUN_EP) assert_int_equal(x->ep, y->ep);
  if (x->have & PFLEX_RUN_COMPILE) assert_int_equal(x->compile, y->compile);
  if (x->have & PFLEX_RUN_GRAD_CKPT) assert_int_equal(x->grad_ckpt, y->grad_ckpt);
  if (x->model)
    assert_string_equal(x->model, y->model);
  else
    assert_null(y->model);
  if (x->set)
    assert_string_equal(x->set, y->set);
  else
    assert_null(y->set);
  assert_int_equal(x->arch, y->arch);
  assert_int_equal(x->task, y->task);
  for (size_t k = 0; k < xs->nextra; k++) {
    size_t l;
    for (l = 0; l < ys->nextra; l++)
      if (strcmp(xs->extra_names[k], ys->extra_names[l]) == 0) break;
    assert_true(l < ys->nextra);
    assert_string_equal(x->extra[k], y->extra[l]);
  }
}

static void test_put_get_round_trip(void **state) {
  struct fixture *f = *state;
  struct pflex_runset set, got;
  sample_set(&set);
  struct pflex_store *s = open_rw(f->db);
  struct pflex_store_put_result res;
  struct pflex_diag d;
  assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_REJECT_EXISTING, &res, &d), 0);
  assert_int_equal(res.groups_new, 2);
  assert_int_equal(res.runs, 4);
  pflex_store_close(s);

  s = open_rw(f->db);
  assert_int_equal(pflex_store_get_runs(s, NULL, 0, &got, &d), 0);
  assert_int_equal(got.n, 4);
  assert_int_equal(got.unit, PFLEX_TPUT_TOKENS_PER_S);
  /* Column order is the order of first appearance. */
  assert_int_equal(got.nextra, 2);
  assert_string_equal(got.extra_names[0], "dram_active");
  assert_string_equal(got.extra_names[1], "note");
  for (size_t i = 0; i < 4; i++)
    assert_same_run(&set, i, &got, i);
  /* Spelled out for the tricky ones: a missing power_sd stays missing, 1/3 stays 1/3. */
  assert_false(got.runs[1].have & PFLEX_RUN_POWER_SD);
  assert_true(got.runs[0].tput_sd == 0.1);
  assert_true(got.runs[3].tput == 1.0 / 3.0);
  assert_string_equal(got.runs[0].extra[1], "x, \"quoted\"");
  assert_string_equal(got.runs[2].extra[0], "");
  assert_int_equal(got.runs[0].line, 0);
  pflex_runset_release(&got);

  /* A group filter: only b, in storage order. */
  const char *only_b[] = {"b", "b"};
  assert_int_equal(pflex_store_get_runs(s, only_b, 2, &got, &d), 0);
  assert_int_equal(got.n, 2);
  assert_same_run(&set, 2, &got, 0);
  assert_same_run(&set, 3, &got, 1);
  pflex_runset_release(&got);
  const char *missing[] = {"a", "zzz"};
  assert_int_equal(pflex_store_get_runs(s, missing, 2, &got, &d), -ENOENT);
  assert_non_null(strstr(d.message, "zzz"));

  struct pflex_store_group *g;
  size_t n;
  assert_int_equal(pflex_store_list_groups(s, &g, &n), 0);
  assert_int_equal(n, 2);
  assert_string_equal(g[0].name, "a");
  assert_string_equal(g[0].gpu, "H200");
  assert_int_equal(g[0].gpus, 8);
  assert_int_equal(g[0].runs, 2);
  assert_string_equal(g[0].model, "llama-8b");
  assert_null(g[1].model);
  assert_int_equal(g[1].arch, PFLEX_ARCH_MOE);
  assert_int_equal(g[1].samples, 0);
  pflex_store_groups_free(g, n);
  pflex_store_close(s);
  pflex_runset_release(&set);
}

static void test_conflict_stores_nothing(void **state) {
  struct fixture *f = *state;
  struct pflex_runset set;
  sample_set(&set);
  struct pflex_store *s = open_rw(f->db);
  struct pflex_diag d;
  assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_REJECT_EXISTING, NULL, &d), 0);
  pflex_runset_release(&set);

  /* c (new), then b (stored: conflict), then e (new). */
  pflex_runset_init(&set);
  add(&set, mkrun("c", "H200", 8, 700, 5000, 100));
  add(&set, mkrun("b", "H100", 4, 500, 2000, 350));
  add(&set, mkrun("e", "H200", 8, 700, 5000, 100));
  assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_REJECT_EXISTING, NULL, &d), -EEXIST);
  assert_non_null(strstr(d.message, "'b'"));
  assert_int_equal(count_groups(s), 2); /* a and b only */
  assert_int_equal(raw_count(f->db, "SELECT count(*) FROM groups WHERE name IN ('c', 'e')"), 0);
  assert_int_equal(raw_count(f->db, "SELECT count(*) FROM runs"), 4);
  pflex_store_close(s);
  pflex_runset_release(&set);
}

static void test_failure_midway_rolls_back(void **state) {
  struct fixture *f = *state;
  struct pflex_runset set;
  sample_set(&set);
  struct pflex_store *s = open_rw(f->db);
  struct pflex_diag d;
  assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_REJECT_EXISTING, NULL, &d), 0);
  pflex_runset_release(&set);
  long long runs0 = raw_count(f->db, "SELECT count(*) FROM runs");
  long long extras0 = raw_count(f->db, EXTRA_CELLS);

  /* Appending: c is new and gets written first, then b's cap 300 W is already
   * stored, so the whole transaction must be undone, c included. */
  pflex_runset_init(&set);
  add(&set, mkrun("c", "H200", 8, 700, 5000, 100));
  assert_int_equal(pflex_runset_set_extra(&set, 0, "sm_active", "0.9"), 0);
  struct pflex_run b = mkrun("b", "H100", 4, 500, 2000, 350);
  b.arch = PFLEX_ARCH_MOE;
  b.task = PFLEX_TASK_FT;
  b.ep = 2;
  b.have = PFLEX_RUN_EP;
  add(&set, b);
  b.cap_w = 300;
  b.line = 9;
  add(&set, b);
  set.source = strdup("more.csv");
  assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_APPEND, NULL, &d), -EEXIST);
  assert_string_equal(d.file, "more.csv");
  assert_int_equal(d.line, 9);
  assert_non_null(strstr(d.message, "300"));
  assert_int_equal(count_groups(s), 2);
  assert_int_equal(raw_count(f->db, "SELECT count(*) FROM runs"), runs0);
  assert_int_equal(raw_count(f->db, EXTRA_CELLS), extras0);

  /* A non-finite number in the second group: nothing of the first is kept either. */
  pflex_runset_release(&set);
  pflex_runset_init(&set);
  add(&set, mkrun("c", "H200", 8, 700, 5000, 100));
  add(&set, mkrun("d", "H200", 8, 700, NAN, 100));
  assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_REJECT_EXISTING, NULL, &d),
                   -PFLEX_E_DATA);
  assert_string_equal(d.column, "power_w");
  assert_int_equal(count_groups(s), 2);
  /* The store still works after the rollbacks. */
  pflex_runset_release(&set);
  pflex_runset_init(&set);
  add(&set, mkrun("c", "H200", 8, 700, 5000, 100));
  assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_REJECT_EXISTING, NULL, &d), 0);
  assert_int_equal(count_groups(s), 3);
  pflex_store_close(s);
  pflex_runset_release(&set);
}

static void test_append_and_replace(void **state) {
  struct fixture *f = *state;
  struct pflex_runset set, got;
  sample_set(&set);
  struct pflex_store *s = open_rw(f->db);
  struct pflex_diag d;
  struct pflex_store_put_result res;
  assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_REJECT_EXISTING, NULL, &d), 0);
  pflex_runset_release(&set);

  /* Append a 500 W run to b (same configuration). */
  pflex_runset_init(&set);
  struct pflex_run b = mkrun("b", "H100", 4, 500, 2000, 350);
  b.arch = PFLEX_ARCH_MOE;
  b.task = PFLEX_TASK_FT;
  b.ep = 2;
  b.have = PFLEX_RUN_EP;
  add(&set, b);
  assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_APPEND, &res, &d), 0);
  assert_int_equal(res.groups_appended, 1);
  assert_int_equal(res.runs, 1);
  const char *only_b[] = {"b"};
  assert_int_equal(pflex_store_get_runs(s, only_b, 1, &got, &d), 0);
  assert_int_equal(got.n, 3);
  assert_true(got.runs[2].cap_w == 500);
  pflex_runset_release(&got);

  /* Appending with another GPU count is refused. */
  set.runs[0].gpus = 8;
  set.runs[0].cap_w = 600;
  assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_APPEND, NULL, &d), -PFLEX_E_DATA);
  assert_string_equal(d.column, "gpus");
  /* ... and so is another throughput unit. */
  set.runs[0].gpus = 4;
  set.unit = PFLEX_TPUT_SAMPLES_PER_S;
  assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_APPEND, NULL, &d), -PFLEX_E_DATA);
  assert_string_equal(d.column, "unit");
  pflex_runset_release(&set);

  /* Samples of b's 700 W run disappear with b when b is replaced. */
  int64_t id;
  assert_int_equal(pflex_store_run_id(s, "b", 700, &id), 0);
  struct pflex_sample smp[2] = {{0, 0, "power_w", 600}, {1, 0, "power_w", 610}};
  assert_int_equal(pflex_store_add_samples(s, id, smp, 2), 0);
  pflex_runset_init(&set);
  add(&set, mkrun("b", "H100", 4, 700, 2600, 410));
  add(&set, mkrun("b", "H100", 4, 200, 900, 200));
  assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_REPLACE_GROUP, &res, &d), 0);
  assert_int_equal(res.groups_replaced, 1);
  assert_int_equal(pflex_store_get_runs(s, only_b, 1, &got, &d), 0);
  assert_int_equal(got.n, 2);
  assert_true(got.runs[0].power_w == 2600);
  assert_true(got.runs[1].cap_w == 200);
  assert_int_equal(got.runs[0].arch, PFLEX_ARCH_UNKNOWN); /* the new configuration */
  assert_int_equal(got.runs[0].have, 0);
  pflex_runset_release(&got);
  assert_int_equal(raw_count(f->db, "SELECT count(*) FROM samples"), 0);
  assert_int_equal(raw_count(f->db, "SELECT count(*) FROM runs"), 4); /* a: 2, b: 2 */
  assert_int_equal(raw_count(f->db, EXTRA_CELLS), 4); /* a's two runs */
  assert_int_equal(raw_count(f->db, "SELECT count(*) FROM pragma_foreign_key_check"), 0);
  /* a is untouched. */
  const char *only_a[] = {"a"};
  assert_int_equal(pflex_store_get_runs(s, only_a, 1, &got, &d), 0);
  assert_int_equal(got.n, 2);
  assert_true(got.runs[1].tput == 900.125);
  pflex_runset_release(&got);
  pflex_store_close(s);
  pflex_runset_release(&set);
}

static void test_group_with_two_configurations_refused(void **state) {
  struct fixture *f = *state;
  struct pflex_runset set;
  pflex_runset_init(&set);
  struct pflex_run r = mkrun("a", "H200", 8, 700, 5000, 100);
  r.model = "m1";
  add(&set, r);
  r.cap_w = 400;
  r.model = "m2";
  r.line = 3;
  add(&set, r);
  struct pflex_store *s = open_rw(f->db);
  struct pflex_diag d;
  assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_REJECT_EXISTING, NULL, &d),
                   -PFLEX_E_DATA);
  assert_string_equal(d.column, "model");
  assert_int_equal(d.line, 3);
  assert_int_equal(count_groups(s), 0);
  pflex_store_close(s);
  pflex_runset_release(&set);
}

static void test_units_do_not_mix(void **state) {
  struct fixture *f = *state;
  struct pflex_store *s = open_rw(f->db);
  struct pflex_diag d;
  struct pflex_runset set, got;
  pflex_runset_init(&set);
  add(&set, mkrun("tok", "H200", 8, 700, 5000, 100));
  assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_REJECT_EXISTING, NULL, &d), 0);
  pflex_runset_release(&set);
  pflex_runset_init(&set);
  set.unit = PFLEX_TPUT_PER_STEP_TIME;
  add(&set, mkrun("steps", "H200", 8, 700, 5000, 0.5));
  assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_REJECT_EXISTING, NULL, &d), 0);
  pflex_runset_release(&set);
  assert_int_equal(pflex_store_get_runs(s, NULL, 0, &got, &d), -PFLEX_E_DATA);
  assert_string_equal(d.column, "unit");
  const char *one[] = {"steps"};
  assert_int_equal(pflex_store_get_runs(s, one, 1, &got, &d), 0);
  assert_int_equal(got.unit, PFLEX_TPUT_PER_STEP_TIME);
  assert_true(got.runs[0].tput == 0.5);
  pflex_runset_release(&got);
  pflex_store_close(s);
}

/* ---- samples ---- */

static void test_samples(void **state) {
  struct fixture *f = *state;
  struct pflex_runset set;
  sample_set(&set);
  struct pflex_store *s = open_rw(f->db);
  struct pflex_diag d;
  assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_REJECT_EXISTING, NULL, &d), 0);
  pflex_runset_release(&set);
  int64_t id, id2;
  assert_int_equal(pflex_store_run_id(s, "a", 400, &id), 0);
  assert_int_equal(pflex_store_run_id(s, "a", 700, &id2), 0);
  assert_true(id != id2);
  assert_int_equal(pflex_store_run_id(s, "a", 401, &id2), -ENOENT);

  /* 5 ticks x 2 GPUs x 3 metrics, given time-major as a sampler produces them:
   * value = 100 * metric + 10 * gpu + t, so each sample's identity is in its value. */
  static const char *const metrics[] = {"sm_active", "power_w", "dram_active"};
  struct pflex_sample smp[30];
  size_t n = 0;
  for (int t = 0; t < 5; t++)
    for (int g = 0; g < 2; g++)
      for (int m = 0; m < 3; m++)
        smp[n++] = (struct pflex_sample){
            .time_s = 0.5 * t, .gpu = g, .metric = metrics[m], .value = 100.0 * m + 10.0 * g + t};
  assert_int_equal(pflex_store_add_samples(s, id, smp, n), 0);

  struct pflex_sample_set got;
  assert_int_equal(pflex_store_get_samples(s, id, NULL, &got), 0);
  assert_int_equal(got.n, 30);
  assert_int_equal(got.nmetrics, 3);
  /* Ordered by metric name, GPU, time: dram_active (m=2) first, power_w (m=1), sm_active (m=0). */
  assert_string_equal(got.samples[0].metric, "dram_active");
  assert_true(got.samples[0].value == 200);
  assert_true(got.samples[4].value == 204 && got.samples[4].time_s == 2.0);
  assert_int_equal(got.samples[5].gpu, 1);
  assert_true(got.samples[5].value == 210);
  assert_string_equal(got.samples[10].metric, "power_w");
  assert_true(got.samples[10].value == 100);
  assert_string_equal(got.samples[29].metric, "sm_active");
  assert_true(got.samples[29].value == 14);
  pflex_sample_set_release(&got);

  assert_int_equal(pflex_store_get_samples(s, id, "power_w", &got), 0);
  assert_int_equal(got.n, 10);
  for (size_t i = 0; i < got.n; i++)
    assert_string_equal(got.samples[i].metric, "power_w");
  pflex_sample_set_release(&got);

  /* A bad sample in a batch: none of the batch is stored. */
  smp[7].value = NAN;
  assert_int_equal(pflex_store_add_samples(s, id, smp, n), -EINVAL);
  smp[7].value = 1;
  assert_int_equal(pflex_store_add_samples(s, id + 1000, smp, n), -ENOENT);
  assert_int_equal(pflex_store_get_samples(s, id + 1000, NULL, &got), -ENOENT);
  assert_int_equal(raw_count(f->db, "SELECT count(*) FROM samples"), 30);
  assert_int_equal(raw_count(f->db, "SELECT count(*) FROM metrics"), 3);

  struct pflex_store_group *g;
  size_t ng;
  assert_int_equal(pflex_store_list_groups(s, &g, &ng), 0);
  assert_int_equal(g[0].samples, 30);
  assert_int_equal(g[1].samples, 0);
  pflex_store_groups_free(g, ng);
  pflex_store_close(s);
}

/* Many groups whose runs come interleaved (as in an archive of sweeps run
 * side by side): each group is stored with its runs in file order and read
 * back in import order of groups, runs and extras as before the per-group
 * rescans were removed; a filter naming groups several times, in any order,
 * returns each once, in the order first named. */
static void test_many_interleaved_groups(void **state) {
  struct fixture *f = *state;
  enum { NG = 300, PER = 4 };
  struct pflex_runset set, got;
  pflex_runset_init(&set);
  char names[NG][16];
  for (int j = 0; j < NG; j++)
    snprintf(names[j], sizeof names[j], "g%03d", (j * 37) % NG); /* not in name order */
  for (int k = 0; k < PER; k++)
    for (int j = 0; j < NG; j++) {
      struct pflex_run r = mkrun(names[j], "H200", 8, 700 - 100 * k, 5000 - 500 * k - j, 900 - k);
      r.line = (size_t)(2 + k * NG + j);
      add(&set, r);
      char v[32];
      snprintf(v, sizeof v, "%d.%d", j, k);
      assert_int_equal(pflex_runset_set_extra(&set, set.n - 1, "tag", v), 0);
    }
  struct pflex_store *s = open_rw(f->db);
  struct pflex_store_put_result res;
  struct pflex_diag d;
  assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_REJECT_EXISTING, &res, &d), 0);
  assert_int_equal(res.groups_new, NG);
  assert_int_equal(res.runs, NG * PER);
  assert_int_equal(pflex_store_get_runs(s, NULL, 0, &got, &d), 0);
  assert_int_equal(got.n, NG * PER);
  /* Groups in order of first appearance, each group's runs in file order. */
  for (int j = 0; j < NG; j++)
    for (int k = 0; k < PER; k++)
      assert_same_run(&set, (size_t)(k * NG + j), &got, (size_t)(j * PER + k));
  pflex_runset_release(&got);
  const char *want[] = {names[5], names[2], names[5], names[299], names[2], names[0]};
  assert_int_equal(pflex_store_get_runs(s, want, 6, &got, &d), 0);
  assert_int_equal(got.n, 4 * PER);
  const int order[] = {5, 2, 299, 0};
  for (int g = 0; g < 4; g++)
    for (int k = 0; k < PER; k++)
      assert_same_run(&set, (size_t)(k * NG + order[g]), &got, (size_t)(g * PER + k));
  pflex_runset_release(&got);
  pflex_store_close(s);
  pflex_runset_release(&set);
}

/* Runs read back with their extras in column order of first appearance
 * (run id, then each run's own column order), whatever order SQLite returns
 * the joined rows in: a second import with a new column and the old ones
 * reordered, and a run with no extra at all (a third import). */
static void test_extras_column_order(void **state) {
  struct fixture *f = *state;
  struct pflex_store *s = open_rw(f->db);
  struct pflex_store_put_result res;
  struct pflex_diag d;
  const char *cols[][3] = {{"zeta", "alpha", NULL}, {"alpha", "mid", "zeta"}};
  for (int part = 0; part < 2; part++) {
    struct pflex_runset set;
    pflex_runset_init(&set);
    for (int k = 0; k < 3; k++) {
      char g[16];
      snprintf(g, sizeof g, "p%d", part);
      add(&set, mkrun(g, "H200", 8, 700 - 100 * k, 5000 - 500 * k, 900 - k));
      for (int c = 0; c < 3 && cols[part][c]; c++) {
        char v[32];
        snprintf(v, sizeof v, "%s-%d-%d", cols[part][c], part, k);
        assert_int_equal(pflex_runset_set_extra(&set, set.n - 1, cols[part][c], v), 0);
      }
    }
    assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_REJECT_EXISTING, &res, &d), 0);
    pflex_runset_release(&set);
  }
  struct pflex_runset bare, got;
  pflex_runset_init(&bare);
  add(&bare, mkrun("p2", "H200", 8, 700, 5000, 900));
  assert_int_equal(pflex_store_put_runs(s, &bare, PFLEX_STORE_REJECT_EXISTING, &res, &d), 0);
  assert_int_equal(pflex_store_get_runs(s, NULL, 0, &got, &d), 0);
  assert_int_equal(got.n, 7);
  assert_int_equal(got.nextra, 3);
  assert_string_equal(got.extra_names[0], "zeta");
  assert_string_equal(got.extra_names[1], "alpha");
  assert_string_equal(got.extra_names[2], "mid");
  for (size_t i = 0; i < 7; i++) {
    int part = (int)i / 3, k = (int)i % 3;
    assert_true(got.runs[i].cap_w == (part < 2 ? 700 - 100 * k : 700));
    for (size_t c = 0; c < 3; c++) {
      char want[32] = "";
      bool has = part == 1 || (part == 0 && c < 2);
      if (has) snprintf(want, sizeof want, "%s-%d-%d", got.extra_names[c], part, k);
      assert_string_equal(got.runs[i].extra[c], want);
    }
  }
  pflex_runset_release(&got);
  pflex_runset_release(&bare);
  pflex_store_close(s);
}

/* An import writes with foreign keys off (store.c, put_all): many columns,
 * named against their order, keep their order and values; the groups of one import
 * share one time; and after an import, failed or not, foreign keys are on
 * again: a replace still takes the group's samples and extras with it. */
static void test_bulk_import_keeps_order_and_cascades(void **state) {
  struct fixture *f = *state;
  struct pflex_store *s = open_rw(f->db);
  struct pflex_diag d;
  struct pflex_runset set, got;
  pflex_runset_init(&set);
  enum { NCOL = 70 };
  for (int g = 0; g < 3; g++)
    for (int k = 0; k < 2; k++) {
      char name[16];
      snprintf(name, sizeof name, "g%d", g);
      add(&set, mkrun(name, "H200", 8, 700 - 100 * k, 5000 - 500 * k, 900 - k));
      for (int c = 0; c < NCOL; c++) {
        char col[48], v[48];
        snprintf(col, sizeof col, "c%02d", NCOL - 1 - c); /* c69, c68, ...: against name order */
        snprintf(v, sizeof v, "v%d-%d-%d", g, k, c);
        assert_int_equal(pflex_runset_set_extra(&set, set.n - 1, col, v), 0);
      }
    }
  assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_REJECT_EXISTING, NULL, &d), 0);
  assert_int_equal(raw_count(f->db, EXTRA_CELLS), 6 * NCOL);
  /* One list of names for the import, in the set's column order (c69 first). */
  assert_int_equal(raw_count(f->db, "SELECT count(*) FROM extra_columns"), 1);
  assert_int_equal(
      raw_count(f->db, "SELECT json_extract(names, '$[0]') = 'c69' FROM extra_columns"), 1);
  assert_int_equal(raw_count(f->db, "SELECT count(DISTINCT imported_at) FROM groups"), 1);
  assert_int_equal(raw_count(f->db, "SELECT count(*) FROM pragma_foreign_key_check"), 0);
  assert_int_equal(pflex_store_get_runs(s, NULL, 0, &got, &d), 0);
  assert_int_equal(got.n, 6);
  assert_int_equal(got.nextra, NCOL);
  for (size_t i = 0; i < got.n; i++)
    for (size_t c = 0; c < NCOL; c++) {
      assert_string_equal(got.extra_names[c], set.extra_names[c]);
      assert_string_equal(got.runs[i].extra[c], set.runs[i].extra[c]);
    }
  pflex_runset_release(&got);
  /* A failed import (g0 is stored), then a replace on the same connection. */
  assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_REJECT_EXISTING, NULL, &d), -EEXIST);
  int64_t id;
  assert_int_equal(pflex_store_run_id(s, "g1", 700, &id), 0);
  struct pflex_sample smp[1] = {{0, 0, "power_w", 600}};
  assert_int_equal(pflex_store_add_samples(s, id, smp, 1), 0);
  pflex_runset_release(&set);
  pflex_runset_init(&set);
  add(&set, mkrun("g1", "H200", 8, 600, 4000, 800));
  assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_REPLACE_GROUP, NULL, &d), 0);
  assert_int_equal(raw_count(f->db, "SELECT count(*) FROM samples"), 0);
  assert_int_equal(raw_count(f->db, EXTRA_CELLS), 4 * NCOL);
  assert_int_equal(raw_count(f->db, "SELECT count(*) FROM runs"), 5);
  pflex_runset_release(&set);
  pflex_store_close(s);
}

/* Both ways of packing a run's cells (store.c, prepare_insert_run): SQLite's
 * json_array for up to its limit of function arguments, jansson for wider
 * runs. Tricky text comes back as it was, and text that is not UTF-8 is
 * refused with its column, storing nothing. */
static void test_extras_packed_narrow_and_wide(void **state) {
  struct fixture *f = *state;
  struct pflex_store *s = open_rw(f->db);
  struct pflex_diag d;
  sqlite3 *raw;
  assert_int_equal(sqlite3_open(f->db, &raw), SQLITE_OK);
  int limit = sqlite3_limit(raw, SQLITE_LIMIT_FUNCTION_ARG, -1);
  sqlite3_close(raw);
  static const char *tricky[] = {"", "a\"b\\c", "tab\there\nnl", "caf\xc3\xa9 \xe2\x82\xac",
                                 "\x01\x1f", "[1,2]", "null"};
  enum { NTRICKY = sizeof tricky / sizeof tricky[0] };
  const size_t widths[] = {3, (size_t)limit + 5};
  for (int w = 0; w < 2; w++) {
    size_t ncol = widths[w];
    char group[16];
    snprintf(group, sizeof group, "w%d", w);
    struct pflex_runset set, got;
    pflex_runset_init(&set);
    for (int k = 0; k < 2; k++) {
      add(&set, mkrun(group, "H200", 8, 700 - 100 * k, 5000 - 500 * k, 900 - k));
      for (size_t c = 0; c < ncol; c++) {
        char col[32];
        snprintf(col, sizeof col, "x%zu", c);
        const char *v = tricky[(c + (size_t)k) % NTRICKY];
        assert_int_equal(pflex_runset_set_extra(&set, set.n - 1, col, v), 0);
      }
    }
    /* A cell that is not UTF-8 first: refused, with its column, nothing stored. */
    char *keep = set.runs[1].extra[ncol - 1];
    set.runs[1].extra[ncol - 1] = "bad \xff";
    assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_REJECT_EXISTING, NULL, &d),
                     -PFLEX_E_DATA);
    char want_col[32];
    snprintf(want_col, sizeof want_col, "x%zu", ncol - 1);
    assert_string_equal(d.column, want_col);
    assert_non_null(strstr(d.message, "UTF-8"));
    assert_int_equal(raw_count(f->db, "SELECT count(*) FROM runs"), w == 0 ? 0 : 2);
    set.runs[1].extra[ncol - 1] = keep;
    assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_REJECT_EXISTING, NULL, &d), 0);
    const char *only[] = {group};
    assert_int_equal(pflex_store_get_runs(s, only, 1, &got, &d), 0);
    assert_int_equal(got.n, 2);
    assert_int_equal(got.nextra, ncol);
    for (size_t i = 0; i < 2; i++)
      for (size_t c = 0; c < ncol; c++) {
        assert_string_equal(got.extra_names[c], set.extra_names[c]);
        assert_string_equal(got.runs[i].extra[c], set.runs[i].extra[c]);
      }
    pflex_runset_release(&got);
    pflex_runset_release(&set);
  }
  assert_int_equal(raw_count(f->db, EXTRA_CELLS), 2 * (3 + limit + 5));
  pflex_store_close(s);
}

/* ---- schema 1 stores ---- */

/* Schema 1 as store_schema.c released it (a released migration never changes). */
static const char schema_v1_sql[] =
    "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, summary TEXT NOT NULL,"
    "  applied_at TEXT NOT NULL);"
    "INSERT INTO schema_version VALUES (1, 'groups, runs, run extras, telemetry samples', 'x');"
    "CREATE TABLE groups (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE CHECK (name <> ''),"
    "  gpu TEXT NOT NULL CHECK (gpu <> ''), gpus INTEGER NOT NULL CHECK (gpus > 0),"
    "  unit TEXT NOT NULL CHECK (unit IN ('tokens_per_s', 'samples_per_s', 'steps_per_s',"
    "                                    'per_step_time')),"
    "  model TEXT, arch TEXT CHECK (arch IN ('dense', 'moe')), task TEXT CHECK (task IN ('pt', "
    "'ft')), set_name TEXT, seq_len INTEGER, batch INTEGER, ep INTEGER,"
    "  compile INTEGER CHECK (compile IN (0, 1)), grad_ckpt INTEGER CHECK (grad_ckpt IN (0, 1)),"
    "  source TEXT, imported_at TEXT NOT NULL);"
    "CREATE TABLE runs (id INTEGER PRIMARY KEY,"
    "  group_id INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,"
    "  cap_w REAL NOT NULL CHECK (cap_w > 0), power_w REAL NOT NULL CHECK (power_w > 0),"
    "  tput REAL NOT NULL CHECK (tput > 0), power_sd REAL CHECK (power_sd >= 0),"
    "  tput_sd REAL CHECK (tput_sd >= 0), source_line INTEGER, UNIQUE (group_id, cap_w));"
    "CREATE TABLE run_extras (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  position INTEGER NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL,"
    "  PRIMARY KEY (run_id, name)) WITHOUT ROWID;"
    "CREATE TABLE metrics (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE CHECK (name <> ''));"
    "CREATE TABLE samples (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  metric_id INTEGER NOT NULL REFERENCES metrics(id), gpu INTEGER NOT NULL CHECK (gpu >= 0),"
    "  time_s REAL NOT NULL, value REAL NOT NULL);"
    "CREATE INDEX samples_by_run ON samples (run_id, metric_id, gpu, time_s);";

/* Rows as schema 1's pflex wrote them: group v (runs 1 and 3, run 3 without
 * extras, run 2 of group w between them), extras with positions against
 * their name order (zeta, alpha, mid: run_extras' key is name order), a
 * second run with another list in another order, a value with a quote, a
 * newline and UTF-8, and samples of run 1. */
static const char v1_rows_sql[] =
    "INSERT INTO groups VALUES (1, 'v', 'H200', 8, 'tokens_per_s', 'm', 'dense', 'pt', NULL,"
    "  4096, NULL, NULL, 1, NULL, 'v.csv', '2026-01-01T00:00:00Z');"
    "INSERT INTO groups VALUES (2, 'w', 'H100', 4, 'tokens_per_s', NULL, NULL, NULL, NULL,"
    "  NULL, NULL, NULL, NULL, NULL, 'v.csv', '2026-01-01T00:00:00Z');"
    "INSERT INTO runs VALUES (1, 1, 700, 5000, 1000, 12.5, NULL, 2);"
    "INSERT INTO runs VALUES (2, 2, 700, 2500, 400, NULL, NULL, 3);"
    "INSERT INTO runs VALUES (3, 1, 400, 3000, 900, NULL, 2, 4);"
    "INSERT INTO run_extras VALUES (1, 0, 'zeta', 'z1'), (1, 1, 'alpha', 'a1'),"
    "  (1, 2, 'mid', 'say \"hi\"' || char(10) || 'caf' || char(233));"
    "INSERT INTO run_extras VALUES (2, 0, 'mid', 'm2'), (2, 1, 'zeta', '');"
    "INSERT INTO metrics VALUES (1, 'power_w');"
    "INSERT INTO samples VALUES (1, 1, 0, 0.5, 600);";

/* The runs schema 1's pflex_store_get_runs gave for v1_rows_sql: runs in id
 * order within a group, extra columns in order of first appearance, a cell
 * a run lacks empty. */
static void v1_expected(struct pflex_runset *set) {
  pflex_runset_init(set);
  struct pflex_run r = mkrun("v", "H200", 8, 700, 5000, 1000);
  r.model = "m";
  r.arch = PFLEX_ARCH_DENSE;
  r.task = PFLEX_TASK_PT;
  r.seq_len = 4096;
  r.compile = true;
  r.have = PFLEX_RUN_SEQ_LEN | PFLEX_RUN_COMPILE | PFLEX_RUN_POWER_SD;
  r.power_sd = 12.5;
  add(set, r);
  assert_int_equal(pflex_runset_set_extra(set, 0, "zeta", "z1"), 0);
  assert_int_equal(pflex_runset_set_extra(set, 0, "alpha", "a1"), 0);
  assert_int_equal(pflex_runset_set_extra(set, 0, "mid", "say \"hi\"\ncaf\xc3\xa9"), 0);
  r.cap_w = 400;
  r.power_w = 3000;
  r.tput = 900;
  r.have = PFLEX_RUN_SEQ_LEN | PFLEX_RUN_COMPILE | PFLEX_RUN_TPUT_SD;
  r.tput_sd = 2;
  add(set, r);
  add(set, mkrun("w", "H100", 4, 700, 2500, 400));
  assert_int_equal(pflex_runset_set_extra(set, 2, "mid", "m2"), 0);
  set->unit = PFLEX_TPUT_TOKENS_PER_S;
}

/* A schema 1 store opened for writing is migrated to schema 2 (its extras
 * packed per run, run_extras gone) and reads back as schema 1 gave it: the
 * same runs, columns and cells, the same JSON export byte for byte. */
static void test_v1_store_migrated(void **state) {
  struct fixture *f = *state;
  raw_exec(f->db, schema_v1_sql);
  raw_exec(f->db, v1_rows_sql);
  struct pflex_store *s = NULL;
  struct pflex_diag d;
  /* Read-only, an older store is refused, not migrated. */
  assert_int_equal(pflex_store_open(f->db, PFLEX_STORE_READONLY, &s, &d), -PFLEX_E_SCHEMA);
  assert_non_null(strstr(d.message, "older"));
  s = open_rw(f->db);
  int v = 0;
  assert_int_equal(pflex_store_schema_version(s, &v), 0);
  assert_int_equal(v, 2);
  /* json_group_array saw the cells in position order, not run_extras' name order. */
  assert_int_equal(raw_count(f->db, "SELECT extras = '[\"z1\",\"a1\",\"say \\\"hi\\\"\\ncaf"
                                    "\xc3\xa9\"]' FROM runs WHERE id = 1"),
                   1);
  assert_int_equal(raw_count(f->db, "SELECT names = '[\"zeta\",\"alpha\",\"mid\"]' FROM runs r"
                                    " JOIN extra_columns c ON c.id = r.extra_columns_id"
                                    " WHERE r.id = 1"),
                   1);
  assert_int_equal(raw_count(f->db, "SELECT count(*) FROM extra_columns"), 2);
  assert_int_equal(raw_count(f->db, "SELECT count(*) FROM runs WHERE id = 3 AND extras IS NULL"
                                    " AND extra_columns_id IS NULL"),
                   1);
  assert_int_equal(
      raw_count(f->db, "SELECT count(*) FROM sqlite_schema WHERE name = 'run_extras'"), 0);
  assert_int_equal(raw_count(f->db, "SELECT count(*) FROM pragma_foreign_key_check"), 0);
  struct pflex_runset want, got;
  v1_expected(&want);
  assert_int_equal(pflex_store_get_runs(s, NULL, 0, &got, &d), 0);
  assert_int_equal(got.n, 3);
  assert_int_equal(got.nextra, 3);
  for (size_t k = 0; k < 3; k++)
    assert_string_equal(got.extra_names[k], want.extra_names[k]);
  for (size_t i = 0; i < 3; i++)
    assert_same_run(&want, i, &got, i);
  char *jw = NULL, *jg = NULL;
  assert_int_equal(pflex_runs_to_json(&want, &jw), 0);
  assert_int_equal(pflex_runs_to_json(&got, &jg), 0);
  assert_string_equal(jg, jw);
  free(jw);
  free(jg);
  pflex_runset_release(&got);
  /* The samples and the cascades are intact: replacing v takes run 1's samples. */
  assert_int_equal(raw_count(f->db, "SELECT count(*) FROM samples"), 1);
  struct pflex_runset again;
  pflex_runset_init(&again);
  add(&again, mkrun("v", "H200", 8, 700, 5000, 1000));
  assert_int_equal(pflex_store_put_runs(s, &again, PFLEX_STORE_REPLACE_GROUP, NULL, &d), 0);
  assert_int_equal(raw_count(f->db, "SELECT count(*) FROM samples"), 0);
  assert_int_equal(raw_count(f->db, "SELECT count(*) FROM runs"), 2);
  pflex_runset_release(&again);
  pflex_runset_release(&want);
  pflex_store_close(s);
}

/* Reads every group; expects err with diag naming the store, run 1 of a and
 * the column, and a message with `what` in it. */
static void assert_read_refused(struct pflex_store *s, const char *db, const char *column,
                                const char *what) {
  struct pflex_runset got;
  struct pflex_diag d;
  assert_int_equal(pflex_store_get_runs(s, NULL, 0, &got, &d), -PFLEX_E_SCHEMA);
  assert_string_equal(d.file, db);
  assert_string_equal(d.column, column);
  assert_non_null(strstr(d.message, "group 'a', run at cap 700 W (runs.id 1)"));
  if (!strstr(d.message, what)) fail_msg("'%s' does not say '%s'", d.message, what);
}

/* Extras edited by hand into something unusable are refused with a message
 * naming the store, the group, the run and what is wrong; never a crash. */
static void test_corrupt_extras_refused(void **state) {
  struct fixture *f = *state;
  struct pflex_runset set;
  sample_set(&set);
  struct pflex_store *s = open_rw(f->db);
  struct pflex_diag d;
  assert_int_equal(pflex_store_put_runs(s, &set, PFLEX_STORE_REJECT_EXISTING, NULL, &d), 0);
  pflex_runset_release(&set);
  static const struct {
    const char *sql, *column, *what;
  } cases[] = {
      {"UPDATE runs SET extras = '[\"0.42\", oops' WHERE id = 1", "extras", "not JSON"},
      {"UPDATE runs SET extras = '{\"a\": \"1\"}' WHERE id = 1", "extras", "not a JSON array of 2"},
      {"UPDATE runs SET extras = '[\"0.42\"]' WHERE id = 1", "extras", "not a JSON array of 2"},
      {"UPDATE runs SET extras = '[\"0.42\", 5]' WHERE id = 1", "extras", "extra column 'note'"},
      {"UPDATE runs SET extras = '[\"0.42\", \"a\\u0000b\"]' WHERE id = 1", "extras", "not JSON"},
      {"UPDATE runs SET extras = NULL WHERE id = 1", "extras", "both set or both NULL"},
      {"UPDATE runs SET extra_columns_id = 99 WHERE id = 1", "extra_columns_id",
       "99 is not in extra_columns"},
      {"UPDATE extra_columns SET names = '[\"x\", \"x\"]'", "extra_columns_id", "appears twice"},
      {"UPDATE extra_columns SET names = '[\"x\", 3]'", "extra_columns_id", "name 2 is not"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
    /* As another tool might: past the schema's CHECKs (both or neither of a run's columns). */
    assert_int_equal(sqlite3_exec(db, "PRAGMA ignore_check_constraints = ON", NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, cases[i].sql, NULL, NULL, NULL), SQLITE_OK);
    assert_read_refused(s, f->db, cases[i].column, cases[i].what);
    /* Undo the edit for the next case: the store reads again. */
    assert_int_equal(
        sqlite3_exec(db,
                     "UPDATE runs SET extras = '[\"0.42\",\"x, \\\"quoted\\\"\"]',"
                     " extra_columns_id = 1 WHERE id = 1;"
                     "UPDATE extra_columns SET names = '[\"dram_active\",\"note\"]'",
                     NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    struct pflex_runset got;
    assert_int_equal(pflex_store_get_runs(s, NULL, 0, &got, &d), 0);
    assert_string_equal(got.runs[0].extra[1], "x, \"quoted\"");
    pflex_runset_release(&got);
  }
  pflex_store_close(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_fresh_store_gets_latest_schema, setup, teardown),
      cmocka_unit_test_setup_teardown(test_empty_file_is_migrated, setup, teardown),
      cmocka_unit_test_setup_teardown(test_missing_file_without_create, setup, teardown),
      cmocka_unit_test_setup_teardown(test_newer_schema_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_foreign_files_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_readonly_store, setup, teardown),
      cmocka_unit_test_setup_teardown(test_put_get_round_trip, setup, teardown),
      cmocka_unit_test_setup_teardown(test_conflict_stores_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_failure_midway_rolls_back, setup, teardown),
      cmocka_unit_test_setup_teardown(test_append_and_replace, setup, teardown),
      cmocka_unit_test_setup_teardown(test_group_with_two_configurations_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_units_do_not_mix, setup, teardown),
      cmocka_unit_test_setup_teardown(test_samples, setup, teardown),
      cmocka_unit_test_setup_teardown(test_many_interleaved_groups, setup, teardown),
      cmocka_unit_test_setup_teardown(test_extras_column_order, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bulk_import_keeps_order_and_cascades, setup, teardown),
      cmocka_unit_test_setup_teardown(test_extras_packed_narrow_and_wide, setup, teardown),
      cmocka_unit_test_setup_teardown(test_v1_store_migrated, setup, teardown),
      cmocka_unit_test_setup_teardown(test_corrupt_extras_refused, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
