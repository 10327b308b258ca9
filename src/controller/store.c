/* The controller's state in SQLite (store.h). */
#include "controller/store.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "pflex/error.h"

/* 2: allocations.class (the job's class, NULL: none), for the report's
 * per-class figure, and the learnt table (what a restarted controller keeps
 * of its jobs); a version 1 store gains both on open. */
#define SCHEMA_VERSION 3

struct ctl_store {
  sqlite3 *db;
  sqlite3_stmt *ins_round, *ins_alloc, *ins_comp, *set_state, *put_learnt, *del_learnt;
};

static const char SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY, target_w REAL NOT NULL,"
    " cut_pct REAL NOT NULL, start REAL NOT NULL, duration_s REAL NOT NULL, ramp_s REAL NOT NULL,"
    " priority INTEGER NOT NULL, created REAL NOT NULL, ended_early REAL NOT NULL DEFAULT 0,"
    " baseline_w REAL NOT NULL DEFAULT 0, source TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS rounds (id INTEGER PRIMARY KEY, t REAL NOT NULL, event_id INTEGER,"
    " target_w REAL, budget_w REAL, measured_w REAL, offset_w REAL, caps_w REAL, tput REAL,"
    " tput_uncapped REAL, compliant INTEGER, nodes INTEGER, unreachable INTEGER, jobs INTEGER,"
    " alloc_ms REAL, round_ms REAL);"
    "CREATE INDEX IF NOT EXISTS rounds_t ON rounds(t);"
    "CREATE TABLE IF NOT EXISTS allocations (round_id INTEGER NOT NULL, job TEXT NOT NULL,"
    " gpus INTEGER, power_w REAL, cap_w REAL, tput REAL, pred_tput REAL, tput_uncapped REAL,"
    " confidence REAL, class TEXT);"
    "CREATE INDEX IF NOT EXISTS allocations_round ON allocations(round_id);"
    "CREATE TABLE IF NOT EXISTS compliance (t REAL NOT NULL, event_id INTEGER NOT NULL,"
    " target_w REAL NOT NULL, measured_w REAL NOT NULL, compliant INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value REAL NOT NULL);"
    "CREATE TABLE IF NOT EXISTS learnt (job TEXT PRIMARY KEY, p_max REAL NOT NULL,"
    " t_max REAL NOT NULL, t_est REAL NOT NULL, draw_ratio REAL NOT NULL,"
    " t_est_w REAL NOT NULL DEFAULT 0);";

/* The columns each schema version added, in order (a store of an older
 * version gets those it lacks; tables it lacks SCHEMA creates whole). */
static const struct {
  const char *table, *column, *decl;
} ADDED[] = {
    {"allocations", "class", "TEXT"},                 /* 2 */
    {"learnt", "t_est_w", "REAL NOT NULL DEFAULT 0"}, /* 3: the draw T_max was estimated at */
};

static int fail(struct ctl_store *st, char *err, size_t errlen, const char *what) {
  if (err) snprintf(err, errlen, "%s: %s", what, st->db ? sqlite3_errmsg(st->db) : "out of memory");
  return -EIO;
}

static bool has_column(struct ctl_store *st, const char *table, const char *column) {
  sqlite3_stmt *q;
  if (sqlite3_prepare_v2(st->db, "SELECT 1 FROM pragma_table_info(?) WHERE name=?", -1, &q, NULL))
    return false;
  sqlite3_bind_text(q, 1, table, -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 2, column, -1, SQLITE_STATIC);
  bool has = sqlite3_step(q) == SQLITE_ROW;
  sqlite3_finalize(q);
  return has;
}

/* An older store to this version, in one transaction: the columns it lacks. */
static int migrate(struct ctl_store *st) {
  char sql[160];
  if (sqlite3_exec(st->db, "BEGIN", NULL, NULL, NULL)) return -EIO;
  for (size_t i = 0; i < sizeof ADDED / sizeof ADDED[0]; i++) {
    if (has_column(st, ADDED[i].table, ADDED[i].column)) continue;
    snprintf(sql, sizeof sql, "ALTER TABLE %s ADD COLUMN %s %s", ADDED[i].table, ADDED[i].column,
             ADDED[i].decl);
    if (sqlite3_exec(st->db, sql, NULL, NULL, NULL)) return -EIO;
  }
  snprintf(sql, sizeof sql, "UPDATE meta SET value='%d' WHERE key='schema'; COMMIT;",
           SCHEMA_VERSION);
  return sqlite3_exec(st->db, sql, NULL, NULL, NULL) ? -EIO : 0;
}

static int check_schema(struct ctl_store *st, char *err, size_t errlen) {
  sqlite3_stmt *q;
  if (sqlite3_prepare_v2(st->db, "SELECT value FROM meta WHERE key='schema'", -1, &q, NULL))
    return fail(st, err, errlen, "schema");
  int version = 0;
  if (sqlite3_step(q) == SQLITE_ROW) version = atoi((const char *)sqlite3_column_text(q, 0));
  sqlite3_finalize(q);
  if (version > SCHEMA_VERSION) {
    snprintf(err, errlen, "schema version %d is newer than this controller's %d", version,
             SCHEMA_VERSION);
    return -PFLEX_E_SCHEMA;
  }
  char sql[64];
  snprintf(sql, sizeof sql, "INSERT INTO meta VALUES('schema','%d')", SCHEMA_VERSION);
  if (version == 0 && sqlite3_exec(st->db, sql, NULL, NULL, NULL))
    return fail(st, err, errlen, "schema");
  if (version > 0 && version < SCHEMA_VERSION && migrate(st) < 0) {
    snprintf(err, errlen, "schema %d to %d: %s", version, SCHEMA_VERSION, sqlite3_errmsg(st->db));
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    return -EIO;
  }
  return 0;
}

static int prepare_all(struct ctl_store *st) {
  return sqlite3_prepare_v2(st->db,
                            "INSERT INTO rounds (t,event_id,target_w,budget_w,measured_w,offset_w,"
                            "caps_w,tput,tput_uncapped,compliant,nodes,unreachable,jobs,alloc_ms,"
                            "round_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                            -1, &st->ins_round, NULL) ||
         sqlite3_prepare_v2(
             st->db,
             "INSERT INTO allocations (round_id,job,gpus,power_w,cap_w,tput,pred_tput,"
             "tput_uncapped,confidence,class) VALUES (?,?,?,?,?,?,?,?,?,?)",
             -1, &st->ins_alloc, NULL) ||
         sqlite3_prepare_v2(st->db, "INSERT INTO compliance VALUES (?,?,?,?,?)", -1, &st->ins_comp,
                            NULL) ||
         sqlite3_prepare_v2(st->db, "INSERT OR REPLACE INTO state VALUES (?,?)", -1, &st->set_state,
                            NULL) ||
         sqlite3_prepare_v2(
             st->db,
             "INSERT OR REPLACE INTO learnt (job, p_max, t_max, t_est, draw_ratio, t_est_w)"
             " VALUES (?,?,?,?,?,?)",
             -1, &st->put_learnt, NULL) ||
         sqlite3_prepare_v2(st->db, "DELETE FROM learnt WHERE job=?", -1, &st->del_learnt, NULL);
}

int ctl_store_open(const char *path, struct ctl_store **ret, char *err, size_t errlen) {
  struct ctl_store *st = calloc(1, sizeof *st);
  if (!st) return -ENOMEM;
  int rc;
  if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) ||
      sqlite3_exec(st->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL, NULL,
                   NULL) ||
      sqlite3_busy_timeout(st->db, 2000) || sqlite3_exec(st->db, SCHEMA, NULL, NULL, NULL)) {
    rc = fail(st, err, errlen, path);
    goto out;
  }
  rc = check_schema(st, err, errlen);
  if (rc == 0 && prepare_all(st)) rc = fail(st, err, errlen, path);
out:
  if (rc < 0) {
    ctl_store_close(st);
    return rc;
  }
  *ret = st;
  return 0;
}

/* path as an SQLite URI ("file:" and the path, percent-encoded), with query. */
static int store_uri(const char *path, const char *query, char *uri, size_t size) {
  static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/-._~";
  size_t n = (size_t)snprintf(uri, size, "file:");
  const unsigned char *c = (const unsigned char *)path;
  for (; *c && n + 4 < size; c++) {
    if (strchr(plain, *c))
      uri[n++] = (char)*c;
    else
      n += (size_t)snprintf(uri + n, size - n, "%%%02X", *c);
  }
  if (*c || n + strlen(query) + 2 > size) return -ENAMETOOLONG;
  snprintf(uri + n, size - n, "?%s", query);
  return 0;
}

/* The schema of a store opened read-only: this controller's version only,
 * since migrating would write. */
static int check_schema_readonly(struct ctl_store *st, const char *path, char *err, size_t errlen) {
  sqlite3_stmt *q;
  if (sqlite3_prepare_v2(st->db, "SELECT value FROM meta WHERE key='schema'", -1, &q, NULL)) {
    snprintf(err, errlen, "'%s' is not a pflex-controller store: %s", path, sqlite3_errmsg(st->db));
    return -PFLEX_E_SCHEMA;
  }
  int version = sqlite3_step(q) == SQLITE_ROW ? atoi((const char *)sqlite3_column_text(q, 0)) : 0;
  sqlite3_finalize(q);
  if (version == SCHEMA_VERSION) return 0;
  if (version > SCHEMA_VERSION)
    snprintf(err, errlen, "'%s': schema version %d is newer than this controller's %d", path,
             version, SCHEMA_VERSION);
  else
    snprintf(err, errlen,
             "'%s': schema version %d is older than this controller's %d; start "
             "pflex-controller once on it (state_db) to migrate it, then report",
             path, version, SCHEMA_VERSION);
  return -PFLEX_E_SCHEMA;
}

int ctl_store_open_readonly(const char *path, struct ctl_store **ret, char *err, size_t errlen) {
  /* Without a -wal file no controller has the store open and all of it is
   * in the file: read it as immutable, which creates no -wal or -shm (a
   * plain read-only open of a WAL store leaves both behind). With one, a
   * controller is running (or died): read through its WAL, which exists. A
   * controller started meanwhile writes to a new WAL and changes the file
   * only at a checkpoint (after 1,000 pages, or when it closes). */
  char wal[4096 + 8], uri[3 * 4096 + 32];
  snprintf(wal, sizeof wal, "%s-wal", path);
  bool live = access(wal, F_OK) == 0;
  if (store_uri(path, live ? "mode=ro" : "mode=ro&immutable=1", uri, sizeof uri)) {
    snprintf(err, errlen, "'%s': %s", path, strerror(ENAMETOOLONG));
    return -ENAMETOOLONG;
  }
  struct ctl_store *st = calloc(1, sizeof *st);
  if (!st) return -ENOMEM;
  int rc = 0;
  if (sqlite3_open_v2(uri, &st->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) ||
      sqlite3_busy_timeout(st->db, 2000))
    rc = fail(st, err, errlen, path);
  if (rc == 0) rc = check_schema_readonly(st, path, err, errlen);
  if (rc < 0) {
    ctl_store_close(st);
    return rc;
  }
  *ret = st;
  return 0;
}

void ctl_store_close(struct ctl_store *st) {
  if (!st) return;
  sqlite3_finalize(st->ins_round);
  sqlite3_finalize(st->ins_alloc);
  sqlite3_finalize(st->ins_comp);
  sqlite3_finalize(st->set_state);
  sqlite3_finalize(st->put_learnt);
  sqlite3_finalize(st->del_learnt);
  sqlite3_close(st->db);
  free(st);
}

const char *ctl_store_errmsg(struct ctl_store *st) {
  return sqlite3_errmsg(st->db);
}

int ctl_store_event_add(struct ctl_store *st, struct ctl_event *e) {
  sqlite3_stmt *q;
  if (sqlite3_prepare_v2(st->db,
                         "INSERT INTO events (target_w,cut_pct,start,duration_s,ramp_s,priority,"
                         "created,ended_early,baseline_w,source) VALUES (?,?,?,?,?,?,?,?,?,?)",
                         -1, &q, NULL))
    return -EIO;
  sqlite3_bind_double(q, 1, e->target_w);
  sqlite3_bind_double(q, 2, e->cut_pct);
  sqlite3_bind_double(q, 3, e->start);
  sqlite3_bind_double(q, 4, e->duration_s);
  sqlite3_bind_double(q, 5, e->ramp_s);
  sqlite3_bind_int(q, 6, e->priority);
  sqlite3_bind_double(q, 7, e->created);
  sqlite3_bind_double(q, 8, e->ended_early);
  sqlite3_bind_double(q, 9, e->baseline_w);
  sqlite3_bind_text(q, 10, e->source, -1, SQLITE_TRANSIENT);
  int rc = sqlite3_step(q) == SQLITE_DONE ? 0 : -EIO;
  sqlite3_finalize(q);
  if (rc == 0) e->id = sqlite3_last_insert_rowid(st->db);
  return rc;
}

int ctl_store_events_add(struct ctl_store *st, struct ctl_event *v, size_t n) {
  if (sqlite3_exec(st->db, "BEGIN", NULL, NULL, NULL)) return -EIO;
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < n; i++)
    rc = ctl_store_event_add(st, &v[i]);
  if (rc == 0 && sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL)) rc = -EIO;
  if (rc < 0) {
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    for (size_t i = 0; i < n; i++)
      v[i].id = 0;
  }
  return rc;
}

int ctl_store_event_update(struct ctl_store *st, const struct ctl_event *e) {
  sqlite3_stmt *q;
  if (sqlite3_prepare_v2(st->db, "UPDATE events SET ended_early=?, baseline_w=? WHERE id=?", -1, &q,
                         NULL))
    return -EIO;
  sqlite3_bind_double(q, 1, e->ended_early);
  sqlite3_bind_double(q, 2, e->baseline_w);
  sqlite3_bind_int64(q, 3, e->id);
  int rc = sqlite3_step(q) == SQLITE_DONE && sqlite3_changes(st->db) == 1 ? 0 : -EIO;
  sqlite3_finalize(q);
  return rc;
}

static void event_from_row(sqlite3_stmt *q, struct ctl_event *e) {
  memset(e, 0, sizeof *e);
  e->id = sqlite3_column_int64(q, 0);
  e->target_w = sqlite3_column_double(q, 1);
  e->cut_pct = sqlite3_column_double(q, 2);
  e->start = sqlite3_column_double(q, 3);
  e->duration_s = sqlite3_column_double(q, 4);
  e->ramp_s = sqlite3_column_double(q, 5);
  e->priority = sqlite3_column_int(q, 6);
  e->created = sqlite3_column_double(q, 7);
  e->ended_early = sqlite3_column_double(q, 8);
  e->baseline_w = sqlite3_column_double(q, 9);
  snprintf(e->source, sizeof e->source, "%s", (const char *)sqlite3_column_text(q, 10));
}

#define EVENT_COLS                                                                                 \
  "id,target_w,cut_pct,start,duration_s,ramp_s,priority,created,ended_early,baseline_w,source"

int ctl_store_events(struct ctl_store *st, bool all, double now, struct ctl_event **ret,
                     size_t *ret_n) {
  sqlite3_stmt *q;
  if (sqlite3_prepare_v2(st->db, "SELECT " EVENT_COLS " FROM events ORDER BY id", -1, &q, NULL))
    return -EIO;
  struct ctl_event *v = NULL;
  size_t n = 0, cap = 0;
  int rc = 0, s;
  while ((s = sqlite3_step(q)) == SQLITE_ROW) {
    struct ctl_event e;
    event_from_row(q, &e);
    if (!all && ctl_event_state_at(&e, now) >= CTL_EVENT_DONE) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 8;
      void *p = realloc(v, cap * sizeof *v);
      if (!p) {
        rc = -ENOMEM;
        break;
      }
      v = p;
    }
    v[n++] = e;
  }
  if (rc == 0 && s != SQLITE_DONE) rc = -EIO;
  sqlite3_finalize(q);
  if (rc < 0) {
    free(v);
    return rc;
  }
  *ret = v;
  *ret_n = n;
  return 0;
}

int ctl_store_event_get(struct ctl_store *st, int64_t id, struct ctl_event *ret) {
  sqlite3_stmt *q;
  if (sqlite3_prepare_v2(st->db, "SELECT " EVENT_COLS " FROM events WHERE id=?", -1, &q, NULL))
    return -EIO;
  sqlite3_bind_int64(q, 1, id);
  int s = sqlite3_step(q), rc = 0;
  if (s == SQLITE_ROW)
    event_from_row(q, ret);
  else
    rc = s == SQLITE_DONE ? -ENOENT : -EIO;
  sqlite3_finalize(q);
  return rc;
}

static int step_reset(sqlite3_stmt *q) {
  int s = sqlite3_step(q);
  sqlite3_reset(q);
  sqlite3_clear_bindings(q);
  return s == SQLITE_DONE ? 0 : -EIO;
}

static int insert_round(struct ctl_store *st, const struct ctl_round_row *r) {
  sqlite3_stmt *q = st->ins_round;
  double d[] = {r->t,        0,         r->target_w, r->budget_w,     r->measured_w,
                r->offset_w, r->caps_w, r->tput,     r->tput_uncapped};
  for (int i = 0; i < 9; i++)
    sqlite3_bind_double(q, i + 1, d[i]);
  if (r->event_id)
    sqlite3_bind_int64(q, 2, r->event_id);
  else
    sqlite3_bind_null(q, 2);
  sqlite3_bind_int(q, 10, r->compliant);
  sqlite3_bind_int(q, 11, r->nodes);
  sqlite3_bind_int(q, 12, r->unreachable);
  sqlite3_bind_int(q, 13, r->jobs);
  sqlite3_bind_double(q, 14, r->alloc_ms);
  sqlite3_bind_double(q, 15, r->round_ms);
  return step_reset(q);
}

static int insert_allocs(struct ctl_store *st, int64_t round_id, const struct ctl_alloc_row *a,
                         size_t n) {
  sqlite3_stmt *q = st->ins_alloc;
  for (size_t i = 0; i < n; i++) {
    sqlite3_bind_int64(q, 1, round_id);
    sqlite3_bind_text(q, 2, a[i].job, -1, SQLITE_STATIC);
    sqlite3_bind_int(q, 3, a[i].gpus);
    double d[] = {a[i].power_w,   a[i].cap_w,         a[i].tput,
                  a[i].pred_tput, a[i].tput_uncapped, a[i].confidence};
    for (int k = 0; k < 6; k++)
      sqlite3_bind_double(q, 4 + k, d[k]);
    if (a[i].cls)
      sqlite3_bind_text(q, 10, a[i].cls, -1, SQLITE_STATIC);
    else
      sqlite3_bind_null(q, 10);
    if (step_reset(q) < 0) return -EIO;
  }
  return 0;
}

static int insert_compliance(struct ctl_store *st, const struct ctl_round_row *r) {
  sqlite3_stmt *q = st->ins_comp;
  sqlite3_bind_double(q, 1, r->t);
  sqlite3_bind_int64(q, 2, r->event_id);
  sqlite3_bind_double(q, 3, r->target_w);
  sqlite3_bind_double(q, 4, r->measured_w);
  sqlite3_bind_int(q, 5, r->compliant);
  return step_reset(q);
}

static int state_set(struct ctl_store *st, const char *key, double v) {
  sqlite3_bind_text(st->set_state, 1, key, -1, SQLITE_STATIC);
  sqlite3_bind_double(st->set_state, 2, v);
  return step_reset(st->set_state);
}

static int write_resume(struct ctl_store *st, const struct ctl_resume *r) {
  int rc = state_set(st, "offset_w", r->offset_w) | state_set(st, "uncapped_w", r->uncapped_w) |
           state_set(st, "last_round", r->last_round) | state_set(st, "rounds", (double)r->rounds);
  return rc < 0 ? -EIO : 0;
}

/* The learnt table's changes: the forgotten jobs' rows out, then the moved
 * ones in (a job forgotten and seen again within one round stays). */
static int write_learnt(struct ctl_store *st, const struct ctl_round_write *w) {
  for (size_t i = 0; i < w->ngone; i++) {
    sqlite3_bind_text(st->del_learnt, 1, w->gone[i], -1, SQLITE_STATIC);
    if (step_reset(st->del_learnt) < 0) return -EIO;
  }
  sqlite3_stmt *q = st->put_learnt;
  for (size_t i = 0; i < w->nlearnt; i++) {
    const struct ctl_learnt_row *v = &w->learnt[i];
    sqlite3_bind_text(q, 1, v->job, -1, SQLITE_STATIC);
    double d[] = {v->p_max, v->t_max, v->t_est, v->draw_ratio, v->t_est_w};
    for (int k = 0; k < 5; k++)
      sqlite3_bind_double(q, 2 + k, d[k]);
    if (step_reset(q) < 0) return -EIO;
  }
  return 0;
}

int ctl_store_round(struct ctl_store *st, const struct ctl_round_write *w) {
  const struct ctl_round_row *r = w->round;
  if (sqlite3_exec(st->db, "BEGIN", NULL, NULL, NULL)) return -EIO;
  int rc = insert_round(st, r);
  int64_t id = sqlite3_last_insert_rowid(st->db);
  if (rc == 0) rc = insert_allocs(st, id, w->alloc, w->nalloc);
  if (rc == 0 && r->event_id && r->compliant >= 0) rc = insert_compliance(st, r);
  if (rc == 0 && w->resume) rc = write_resume(st, w->resume);
  if (rc == 0) rc = write_learnt(st, w);
  if (rc == 0 && sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL)) rc = -EIO;
  if (rc < 0) sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}

int ctl_store_resume_get(struct ctl_store *st, struct ctl_resume *ret) {
  sqlite3_stmt *q;
  if (sqlite3_prepare_v2(st->db, "SELECT key, value FROM state", -1, &q, NULL)) return -EIO;
  struct ctl_resume r = {0};
  while (sqlite3_step(q) == SQLITE_ROW) {
    const char *k = (const char *)sqlite3_column_text(q, 0);
    double v = sqlite3_column_double(q, 1);
    if (strcmp(k, "offset_w") == 0)
      r.offset_w = v;
    else if (strcmp(k, "uncapped_w") == 0)
      r.uncapped_w = v;
    else if (strcmp(k, "last_round") == 0)
      r.last_round = v;
    else if (strcmp(k, "rounds") == 0)
      r.rounds = (int64_t)v;
  }
  sqlite3_finalize(q);
  *ret = r;
  return 0;
}

/* Runs a query of rows between from and to (its two parameters, if it has
 * them), each
 * read by row() into an element of size bytes of a growing array; *ret freed
 * with free(). */
static int query_rows(struct ctl_store *st, const char *sql, double from, double to, size_t size,
                      void (*row)(sqlite3_stmt *q, void *elem), void **ret, size_t *ret_n) {
  sqlite3_stmt *q;
  if (sqlite3_prepare_v2(st->db, sql, -1, &q, NULL)) return -EIO;
  if (sqlite3_bind_parameter_count(q) == 2) {
    sqlite3_bind_double(q, 1, from);
    sqlite3_bind_double(q, 2, to);
  }
  char *v = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  while (sqlite3_step(q) == SQLITE_ROW) {
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      void *p = realloc(v, cap * size);
      if (!p) {
        rc = -ENOMEM;
        break;
      }
      v = p;
    }
    row(q, v + size * n++);
  }
  sqlite3_finalize(q);
  if (rc < 0) {
    free(v);
    return rc;
  }
  *ret = v;
  *ret_n = n;
  return 0;
}

static void round_row(sqlite3_stmt *q, void *elem) {
  struct ctl_round_row *r = elem;
  r->t = sqlite3_column_double(q, 0);
  r->event_id = sqlite3_column_int64(q, 1);
  double *d[] = {&r->target_w, &r->budget_w, &r->measured_w,   &r->offset_w,
                 &r->caps_w,   &r->tput,     &r->tput_uncapped};
  for (int i = 0; i < 7; i++)
    *d[i] = sqlite3_column_double(q, 2 + i);
  r->compliant = sqlite3_column_int(q, 9);
  r->nodes = sqlite3_column_int(q, 10);
  r->unreachable = sqlite3_column_int(q, 11);
  r->jobs = sqlite3_column_int(q, 12);
  r->alloc_ms = sqlite3_column_double(q, 13);
  r->round_ms = sqlite3_column_double(q, 14);
}

int ctl_store_rounds(struct ctl_store *st, double from, double to, struct ctl_round_row **ret,
                     size_t *ret_n) {
  void *v = NULL;
  int rc = query_rows(st,
                      "SELECT t,IFNULL(event_id,0),target_w,budget_w,measured_w,offset_w,caps_w,"
                      "tput,tput_uncapped,compliant,nodes,unreachable,jobs,alloc_ms,round_ms "
                      "FROM rounds WHERE t>=? AND t<=? ORDER BY t",
                      from, to, sizeof **ret, round_row, &v, ret_n);
  if (rc == 0) *ret = v;
  return rc;
}

static void class_row(sqlite3_stmt *q, void *elem) {
  struct ctl_class_row *r = elem;
  r->t = sqlite3_column_double(q, 0);
  const unsigned char *cls = sqlite3_column_text(q, 1);
  snprintf(r->cls, sizeof r->cls, "%s", cls ? (const char *)cls : "");
  r->jobs = sqlite3_column_int(q, 2);
  r->power_w = sqlite3_column_double(q, 3);
  bool known = sqlite3_column_type(q, 5) != SQLITE_NULL;
  r->tput = known ? sqlite3_column_double(q, 4) : NAN;
  r->tput_uncapped = known ? sqlite3_column_double(q, 5) : NAN;
}

int ctl_store_class_rounds(struct ctl_store *st, double from, double to, struct ctl_class_row **ret,
                           size_t *ret_n) {
  void *v = NULL;
  int rc = query_rows(st,
                      "SELECT r.t, a.class, COUNT(*), SUM(a.power_w),"
                      " SUM(CASE WHEN a.tput IS NOT NULL AND a.tput_uncapped > 0 THEN a.tput END),"
                      " SUM(CASE WHEN a.tput IS NOT NULL AND a.tput_uncapped > 0"
                      " THEN a.tput_uncapped END)"
                      " FROM allocations a JOIN rounds r ON r.id = a.round_id"
                      " WHERE r.t>=? AND r.t<=? GROUP BY r.id, a.class ORDER BY r.t, a.class",
                      from, to, sizeof **ret, class_row, &v, ret_n);
  if (rc == 0) *ret = v;
  return rc;
}

static void learnt_row(sqlite3_stmt *q, void *elem) {
  struct ctl_learnt_row *r = elem;
  const unsigned char *id = sqlite3_column_text(q, 0);
  snprintf(r->job, sizeof r->job, "%s", id ? (const char *)id : "");
  r->p_max = sqlite3_column_double(q, 1);
  r->t_max = sqlite3_column_double(q, 2);
  r->t_est = sqlite3_column_double(q, 3);
  r->draw_ratio = sqlite3_column_double(q, 4);
  r->t_est_w = sqlite3_column_double(q, 5);
}

int ctl_store_learnt_get(struct ctl_store *st, struct ctl_learnt_row **ret, size_t *ret_n) {
  void *v = NULL;
  int rc = query_rows(
      st, "SELECT job, p_max, t_max, t_est, draw_ratio, t_est_w FROM learnt ORDER BY job", 0, 0,
      sizeof **ret, learnt_row, &v, ret_n);
  if (rc == 0) *ret = v;
  return rc;
}
