/* The SQLite store (include/pflex/store.h, docs/store.md).
 *
 * Journal: SQLite's default rollback journal, not WAL. WAL adds two side files
 * (-wal, -shm) that must travel with the database and needs shared memory,
 * which breaks on the network file systems cluster home directories often
 * live on; pflex writes in a few large transactions (an import, a batch of
 * samples), so WAL's concurrent readers-while-writing buy little. A busy
 * timeout lets a second process wait for a writer instead of failing at once.
 * Writes start with BEGIN IMMEDIATE so that the write lock is taken up front:
 * a deferred transaction that upgrades from reading to writing can fail with
 * SQLITE_BUSY halfway through, where the timeout does not help. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "base/utf8.h"
#include "io/store_extras.h"
#include "io/store_schema.h"
#include "pflex/runs_json.h" /* pflex_tput_unit_key */
#include "pflex/store.h"

#define BUSY_TIMEOUT_MS 5000

/* The pflex_run.have bits that belong to the group's configuration. */
#define CONFIG_BITS                                                                                \
  (PFLEX_RUN_SEQ_LEN | PFLEX_RUN_BATCH | PFLEX_RUN_EP | PFLEX_RUN_COMPILE | PFLEX_RUN_GRAD_CKPT)

struct pflex_store {
  sqlite3 *db;
  char *path;
  bool readonly;
  struct pflex_progress progress; /* told each group stored (pflex_store_set_progress) */
};

void pflex_store_set_progress(struct pflex_store *store, const struct pflex_progress *p) {
  if (store) store->progress = p ? *p : (struct pflex_progress){0};
}

int pflex_store_schema_latest(void) {
  return pflex__store_migrations[pflex__store_nmigrations - 1].version;
}

/* Maps an SQLite result code to a negative errno or pflex code. */
static int map_rc(sqlite3 *db, int rc) {
  switch (rc & 0xff) {
  case SQLITE_OK:
  case SQLITE_DONE:
  case SQLITE_ROW: return 0;
  case SQLITE_NOMEM: return -ENOMEM;
  case SQLITE_BUSY:
  case SQLITE_LOCKED: return -EBUSY;
  case SQLITE_READONLY: return -EROFS;
  case SQLITE_FULL: return -ENOSPC;
  case SQLITE_PERM:
  case SQLITE_AUTH: return -EACCES;
  case SQLITE_NOTADB: return -PFLEX_E_SCHEMA;
  case SQLITE_CONSTRAINT: return -PFLEX_E_DATA;
  case SQLITE_CANTOPEN: {
    int e = db ? sqlite3_system_errno(db) : 0;
    return e > 0 ? -e : -EIO;
  }
  default: return -EIO;
  }
}

/* Records an SQLite failure in diag and returns the mapped code. */
static int sql_fail(struct pflex_store *s, int rc, struct pflex_diag *diag, const char *what) {
  int err = map_rc(s->db, rc);
  if (rc == SQLITE_READONLY_ROLLBACK) /* recover_hot_journal could not write */
    return pflex_diag_set(diag, err, s->path, 0, NULL,
                          "left mid-write by a process that was killed (hot journal "
                          "'%s-journal'); open it once with write access (e.g. pflex export as "
                          "its owner) to roll the unfinished write back; stored data is intact",
                          s->path);
  return pflex_diag_set(diag, err ? err : -EIO, s->path, 0, NULL, "%s: %s", what,
                        s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
}

static int exec(struct pflex_store *s, const char *sql, struct pflex_diag *diag, const char *what) {
  int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
  return rc == SQLITE_OK ? 0 : sql_fail(s, rc, diag, what);
}

static int prepare(struct pflex_store *s, const char *sql, sqlite3_stmt **st,
                   struct pflex_diag *diag) {
  int rc = sqlite3_prepare_v2(s->db, sql, -1, st, NULL);
  return rc == SQLITE_OK ? 0 : sql_fail(s, rc, diag, "cannot prepare a statement");
}

static void rollback(struct pflex_store *s) {
  /* Keeps whatever error is already in the connection's message for diag. */
  if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

/* The current schema version: 0 for an empty database, -PFLEX_E_SCHEMA for a
 * database that holds tables but no schema_version (not a pflex store). */
static int read_version(struct pflex_store *s, int *ret_version, struct pflex_diag *diag) {
  sqlite3_stmt *st = NULL;
  int err = prepare(s,
                    "SELECT (SELECT count(*) FROM sqlite_schema),"
                    " (SELECT count(*) FROM sqlite_schema"
                    "  WHERE type = 'table' AND name = 'schema_version')",
                    &st, diag);
  if (err) return err;
  int rc = sqlite3_step(st);
  if (rc != SQLITE_ROW) {
    err = sql_fail(s, rc, diag, "cannot read the store");
    sqlite3_finalize(st);
    return err;
  }
  sqlite3_int64 nobjects = sqlite3_column_int64(st, 0);
  sqlite3_int64 has_table = sqlite3_column_int64(st, 1);
  sqlite3_finalize(st);
  if (!has_table) {
    if (nobjects == 0) {
      *ret_version = 0;
      return 0;
    }
    return pflex_diag_set(diag, -PFLEX_E_SCHEMA, s->path, 0, NULL,
                          "an SQLite database but not a pflex store (no schema_version table)");
  }
  err = prepare(s, "SELECT coalesce(max(version), 0) FROM schema_version", &st, diag);
  if (err) return err;
  rc = sqlite3_step(st);
  if (rc != SQLITE_ROW) {
    err = sql_fail(s, rc, diag, "cannot read the schema version");
    sqlite3_finalize(st);
    return err;
  }
  sqlite3_int64 v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  *ret_version = v > 1000000 ? 1000000 : (int)v;
  return 0;
}

/* Applies one migration in its own transaction, unless another process did it first. */
static int apply_migration(struct pflex_store *s, const struct pflex__store_migration *m,
                           struct pflex_diag *diag) {
  int err = exec(s, "BEGIN IMMEDIATE", diag, "cannot start the migration");
  if (err) return err;
  err = exec(s,
             "CREATE TABLE IF NOT EXISTS schema_version ("
             "  version INTEGER PRIMARY KEY,"
             "  summary TEXT NOT NULL,"
             "  applied_at TEXT NOT NULL)",
             diag, "cannot create the schema_version table");
  int version = 0;
  if (!err) err = read_version(s, &version, diag);
  if (!err && version < m->version) {
    err = exec(s, m->sql, diag, "migration failed");
    sqlite3_stmt *st = NULL;
    if (!err)
      err = prepare(s,
                    "INSERT INTO schema_version (version, summary, applied_at)"
                    " VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))",
                    &st, diag);
    if (!err) {
      sqlite3_bind_int(st, 1, m->version);
      sqlite3_bind_text(st, 2, m->summary, -1, SQLITE_STATIC);
      int rc = sqlite3_step(st);
      if (rc != SQLITE_DONE) err = sql_fail(s, rc, diag, "cannot record the migration");
    }
    sqlite3_finalize(st);
  }
  if (!err) err = exec(s, "COMMIT", diag, "cannot commit the migration");
  if (err) rollback(s);
  return err;
}

void pflex_store_close(struct pflex_store *store) {
  if (!store) return;
  sqlite3_close(store->db);
  free(store->path);
  free(store);
}

/* A process killed mid-write (kill -9 of an import) leaves a hot journal
 * beside the store; SQLite rolls it back on the next read, but only through a
 * connection that may write, so a read-only open would fail with "attempt to
 * write a readonly database" until something wrote. Roll it back here with a
 * short read-write connection when the store may be written; otherwise the
 * read-only open fails and says why (store_open_hint). */
static void recover_hot_journal(const char *path) {
  char journal[4096];
  struct stat sb;
  if (snprintf(journal, sizeof journal, "%s-journal", path) >= (int)sizeof journal ||
      stat(journal, &sb) != 0 || sb.st_size == 0 || access(path, W_OK) != 0)
    return;
  sqlite3 *db = NULL;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) == SQLITE_OK) {
    sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
    /* Any read takes the shared lock that rolls the journal back. */
    sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
  }
  sqlite3_close(db);
}

int pflex_store_open(const char *path, unsigned flags, struct pflex_store **ret_store,
                     struct pflex_diag *diag) {
  pflex_diag_clear(diag);
  if (!path || !*path || !ret_store) return -EINVAL;
  bool readonly = flags & PFLEX_STORE_READONLY;
  /* SQLite would create a missing file even for a mistyped read; ask first. */
  struct stat sb;
  if (stat(path, &sb) != 0) {
    int e = errno;
    if (e != ENOENT || readonly || !(flags & PFLEX_STORE_CREATE))
      return pflex_diag_set(diag, -e, path, 0, NULL, "%s", strerror(e));
  } else if (S_ISDIR(sb.st_mode)) {
    return pflex_diag_set(diag, -EISDIR, path, 0, NULL, "%s", strerror(EISDIR));
  }
  struct pflex_store *s = calloc(1, sizeof *s);
  if (!s) return -ENOMEM;
  s->readonly = readonly;
  s->path = strdup(path);
  if (!s->path) {
    free(s);
    return -ENOMEM;
  }
  if (readonly) recover_hot_journal(path);
  int oflags = readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  int rc = sqlite3_open_v2(path, &s->db, oflags | SQLITE_OPEN_NOMUTEX, NULL);
  int err = 0, version = 0;
  if (rc != SQLITE_OK) {
    err = sql_fail(s, rc, diag, "cannot open");
    goto fail;
  }
  sqlite3_extended_result_codes(s->db, 1);
  sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS);
  /* Foreign keys are off by default and per connection: the cascades need them. */
  err = exec(s, "PRAGMA foreign_keys = ON", diag, "cannot enable foreign keys");
  if (err) goto fail;
  err = read_version(s, &version, diag);
  if (err) {
    if (err == -PFLEX_E_SCHEMA && diag && strstr(diag->message, "not a database"))
      pflex_diag_set(diag, err, path, 0, NULL, "not a pflex store (not an SQLite database)");
    goto fail;
  }
  int latest = pflex_store_schema_latest();
  if (version > latest) {
    err = pflex_diag_set(diag, -PFLEX_E_SCHEMA, path, 0, NULL,
                         "store schema version %d is newer than this pflex knows (%d); "
                         "use a newer pflex",
                         version, latest);
    goto fail;
  }
  if (version < latest && readonly) {
    err = pflex_diag_set(diag, -PFLEX_E_SCHEMA, path, 0, NULL,
                         version == 0 ? "empty file, not a pflex store"
                                      : "store schema version %d is older than this pflex's (%d); "
                                        "migrate it with: pflex import --migrate --db '%s'",
                         version, latest, path);
    goto fail;
  }
  /* A new store gets 16 KiB pages (SQLite's default is 4 KiB): an import
   * appends hundreds of thousands of runs, and bigger pages split less often.
   * Only an empty file's page size can be set; an existing store keeps its. */
  if (version == 0) err = exec(s, "PRAGMA page_size = 16384", diag, "cannot set the page size");
  if (err) goto fail;
  for (size_t i = 0; i < pflex__store_nmigrations; i++) {
    if (pflex__store_migrations[i].version <= version) continue;
    err = apply_migration(s, &pflex__store_migrations[i], diag);
    if (err) goto fail;
  }
  *ret_store = s;
  return 0;
fail:
  pflex_store_close(s);
  return err;
}

int pflex_store_schema_version(struct pflex_store *store, int *ret_version) {
  if (!store || !ret_version) return -EINVAL;
  return read_version(store, ret_version, NULL);
}

/* ---- writing runs ---- */

static bool str_eq(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* The first field of the group configuration where a and b differ, or NULL. */
static const char *config_diff(const struct pflex_run *a, const struct pflex_run *b) {
  if (!str_eq(a->gpu, b->gpu)) return "gpu";
  if (a->gpus != b->gpus) return "gpus";
  if (!str_eq(a->model, b->model)) return "model";
  if (a->arch != b->arch) return "arch";
  if (a->task != b->task) return "task";
  if (!str_eq(a->set, b->set)) return "set";
  static const struct {
    unsigned bit;
    const char *name;
  } bits[] = {{PFLEX_RUN_SEQ_LEN, "seq_len"},
              {PFLEX_RUN_BATCH, "batch"},
              {PFLEX_RUN_EP, "ep"},
              {PFLEX_RUN_COMPILE, "compile"},
              {PFLEX_RUN_GRAD_CKPT, "grad_ckpt"}};
  for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++)
    if ((a->have & bits[i].bit) != (b->have & bits[i].bit)) return bits[i].name;
  if ((a->have & PFLEX_RUN_SEQ_LEN) && a->seq_len != b->seq_len) return "seq_len";
  if ((a->have & PFLEX_RUN_BATCH) && a->batch != b->batch) return "batch";
  if ((a->have & PFLEX_RUN_EP) && a->ep != b->ep) return "ep";
  if ((a->have & PFLEX_RUN_COMPILE) && a->compile != b->compile) return "compile";
  if ((a->have & PFLEX_RUN_GRAD_CKPT) && a->grad_ckpt != b->grad_ckpt) return "grad_ckpt";
  return NULL;
}

/* Checks one run's numbers; the CSV reader checks them too, but a runset may
 * come from anywhere, and SQLite would silently store a NaN as NULL. */
static int check_run(const char *src, const struct pflex_run *r, struct pflex_diag *diag) {
  const char *bad = NULL;
  if (!r->group || !*r->group)
    bad = "group";
  else if (!r->gpu || !*r->gpu)
    bad = "gpu";
  else if (r->gpus <= 0)
    bad = "gpus";
  else if (!isfinite(r->cap_w) || r->cap_w <= 0)
    bad = "cap_w";
  else if (!isfinite(r->power_w) || r->power_w <= 0)
    bad = "power_w";
  else if (!isfinite(r->tput) || r->tput <= 0)
    bad = "tput";
  else if ((r->have & PFLEX_RUN_POWER_SD) && (!isfinite(r->power_sd) || r->power_sd < 0))
    bad = "power_sd";
  else if ((r->have & PFLEX_RUN_TPUT_SD) && (!isfinite(r->tput_sd) || r->tput_sd < 0))
    bad = "tput_sd";
  if (!bad) return 0;
  return pflex_diag_set(diag, -PFLEX_E_DATA, src, r->line, bad,
                        "group '%s': missing, non-finite or out-of-range value",
                        r->group ? r->group : "");
}

static void bind_text_or_null(sqlite3_stmt *st, int i, const char *v) {
  if (v)
    sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
  else
    sqlite3_bind_null(st, i);
}

static void bind_int_if(sqlite3_stmt *st, int i, bool have, sqlite3_int64 v) {
  if (have)
    sqlite3_bind_int64(st, i, v);
  else
    sqlite3_bind_null(st, i);
}

static void bind_double_if(sqlite3_stmt *st, int i, bool have, double v) {
  if (have)
    sqlite3_bind_double(st, i, v);
  else
    sqlite3_bind_null(st, i);
}

static const char *col_text(sqlite3_stmt *st, int i) {
  return (const char *)sqlite3_column_text(st, i);
}

/* Fills the configuration fields of r from a groups row selected with GROUP_COLS
 * starting at column 0. Strings borrow from the statement. */
#define GROUP_COLS                                                                                 \
  "g.name, g.gpu, g.gpus, g.unit, g.model, g.arch, g.task, g.set_name, g.seq_len, g.batch,"        \
  " g.ep, g.compile, g.grad_ckpt, g.source, g.imported_at, g.id"
enum {
  GC_NAME,
  GC_GPU,
  GC_GPUS,
  GC_UNIT,
  GC_MODEL,
  GC_ARCH,
  GC_TASK,
  GC_SET,
  GC_SEQ_LEN,
  GC_BATCH,
  GC_EP,
  GC_COMPILE,
  GC_GRAD_CKPT,
  GC_SOURCE,
  GC_IMPORTED_AT,
  GC_ID,
  GC_END
};

static enum pflex_arch arch_from(const char *s) {
  enum pflex_arch a;
  return pflex_arch_parse(s, &a) == 0 ? a : PFLEX_ARCH_UNKNOWN;
}

static enum pflex_task task_from(const char *s) {
  enum pflex_task t;
  return pflex_task_parse(s, &t) == 0 ? t : PFLEX_TASK_UNKNOWN;
}

static void group_row_to_run(sqlite3_stmt *st, struct pflex_run *r) {
  memset(r, 0, sizeof *r);
  r->group = (char *)col_text(st, GC_NAME);
  r->gpu = (char *)col_text(st, GC_GPU);
  r->gpus = sqlite3_column_int(st, GC_GPUS);
  r->model = (char *)col_text(st, GC_MODEL);
  r->arch = arch_from(col_text(st, GC_ARCH));
  r->task = task_from(col_text(st, GC_TASK));
  r->set = (char *)col_text(st, GC_SET);
  static const struct {
    int col;
    unsigned bit;
  } ints[] = {{GC_SEQ_LEN, PFLEX_RUN_SEQ_LEN},
              {GC_BATCH, PFLEX_RUN_BATCH},
              {GC_EP, PFLEX_RUN_EP},
              {GC_COMPILE, PFLEX_RUN_COMPILE},
              {GC_GRAD_CKPT, PFLEX_RUN_GRAD_CKPT}};
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
    if (sqlite3_column_type(st, ints[i].col) != SQLITE_NULL) r->have |= ints[i].bit;
  r->seq_len = sqlite3_column_int(st, GC_SEQ_LEN);
  r->batch = sqlite3_column_int(st, GC_BATCH);
  r->ep = sqlite3_column_int(st, GC_EP);
  r->compile = sqlite3_column_int(st, GC_COMPILE) != 0;
  r->grad_ckpt = sqlite3_column_int(st, GC_GRAD_CKPT) != 0;
}

/* Statements of one put_runs call, prepared once and reset per row. */
struct put_ctx {
  struct pflex_store *s;
  const char *src; /* file the runs came from (their lines count there), else the store */
  const struct pflex_runset *set;
  struct pflex_diag *diag;
  sqlite3_int64 columns_id;     /* extra_columns row of the set's extra column names */
  bool sql_json;                /* insert_run packs the cells with SQLite's json_array */
  struct pflex__extras_packer packer; /* else with jansson (a run's extra cells as JSON) */
  char imported_at[32];         /* one time for the whole import, UTC, ISO 8601 */
  sqlite3_stmt *find_group, *delete_group, *insert_group, *touch_group, *insert_run;
};

static int step_done(struct put_ctx *c, sqlite3_stmt *st, const char *what) {
  int rc = sqlite3_step(st);
  int err = rc == SQLITE_DONE ? 0 : sql_fail(c->s, rc, c->diag, what);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return err;
}

static int insert_group(struct put_ctx *c, const struct pflex_run *r, sqlite3_int64 *ret_id) {
  sqlite3_stmt *st = c->insert_group;
  sqlite3_bind_text(st, 1, r->group, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 2, r->gpu, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(st, 3, r->gpus);
  sqlite3_bind_text(st, 4, pflex_tput_unit_key(c->set->unit), -1, SQLITE_STATIC);
  bind_text_or_null(st, 5, r->model);
  bind_text_or_null(st, 6, r->arch ? pflex_arch_name(r->arch) : NULL);
  bind_text_or_null(st, 7, r->task ? pflex_task_name(r->task) : NULL);
  bind_text_or_null(st, 8, r->set);
  bind_int_if(st, 9, r->have & PFLEX_RUN_SEQ_LEN, r->seq_len);
  bind_int_if(st, 10, r->have & PFLEX_RUN_BATCH, r->batch);
  bind_int_if(st, 11, r->have & PFLEX_RUN_EP, r->ep);
  bind_int_if(st, 12, r->have & PFLEX_RUN_COMPILE, r->compile);
  bind_int_if(st, 13, r->have & PFLEX_RUN_GRAD_CKPT, r->grad_ckpt);
  bind_text_or_null(st, 14, c->set->source);
  sqlite3_bind_text(st, 15, c->imported_at, -1, SQLITE_STATIC);
  int err = step_done(c, st, "cannot store a group");
  if (!err) *ret_id = sqlite3_last_insert_rowid(c->s->db);
  return err;
}

/* Binds run r's extra cells to insert_run: all of the set's columns, an empty
 * cell as "" (as schema 1 kept them). Every parameter is bound anew and the
 * strings outlive the step, so no copies and no clearing. */
static int bind_extras(struct put_ctx *c, const struct pflex_run *r) {
  sqlite3_stmt *st = c->insert_run;
  sqlite3_bind_int64(st, 8, c->columns_id);
  size_t n = c->set->nextra, bad = 0;
  int err = 0;
  if (c->sql_json) {
    for (size_t k = 0; !err && k < n; k++) {
      const char *v = r->extra && r->extra[k] ? r->extra[k] : "";
      if (!pflex__utf8_valid(v, NULL)) { /* SQLite's JSON would keep the bytes as they are */
        bad = k;
        err = -EILSEQ;
      }
      sqlite3_bind_text(st, 9 + (int)k, v, -1, SQLITE_STATIC);
    }
  } else {
    size_t len = 0;
    err = pflex__extras_pack(&c->packer, r->extra, &len, &bad);
    if (!err) sqlite3_bind_text(st, 9, c->packer.buf, (int)len, SQLITE_STATIC);
  }
  if (err == -EILSEQ)
    return pflex_diag_set(c->diag, -PFLEX_E_DATA, c->src, r->line, c->set->extra_names[bad],
                          "group '%s': not UTF-8 text", r->group);
  return err;
}

static int insert_run(struct put_ctx *c, sqlite3_int64 group_id, size_t i) {
  const struct pflex_run *r = &c->set->runs[i];
  sqlite3_stmt *st = c->insert_run;
  sqlite3_bind_int64(st, 1, group_id);
  sqlite3_bind_double(st, 2, r->cap_w);
  sqlite3_bind_double(st, 3, r->power_w);
  sqlite3_bind_double(st, 4, r->tput);
  bind_double_if(st, 5, r->have & PFLEX_RUN_POWER_SD, r->power_sd);
  bind_double_if(st, 6, r->have & PFLEX_RUN_TPUT_SD, r->tput_sd);
  bind_int_if(st, 7, r->line > 0, (sqlite3_int64)r->line);
  int err = c->set->nextra ? bind_extras(c, r) : 0;
  if (err) return err;
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc == SQLITE_CONSTRAINT_UNIQUE)
    return pflex_diag_set(c->diag, -EEXIST, c->src, r->line, "cap_w",
                          "group '%s' already has a run at cap %g W", r->group, r->cap_w);
  if (rc != SQLITE_DONE) return sql_fail(c->s, rc, c->diag, "cannot store a run");
  return 0;
}

/* Stores one sweep group (runs indexes idx[0..n)) inside the open transaction. */
static int put_group(struct put_ctx *c, const size_t *idx, size_t n, enum pflex_store_put_mode mode,
                     struct pflex_store_put_result *res) {
  const struct pflex_run *first = &c->set->runs[idx[0]];
  for (size_t j = 0; j < n; j++) {
    const struct pflex_run *r = &c->set->runs[idx[j]];
    int err = check_run(c->src, r, c->diag);
    if (err) return err;
    const char *field = config_diff(first, r);
    if (field)
      return pflex_diag_set(c->diag, -PFLEX_E_DATA, c->src, r->line, field,
                            "group '%s': runs differ in '%s'; a group has one configuration",
                            r->group, field);
  }
  sqlite3_stmt *st = c->find_group;
  sqlite3_bind_text(st, 1, first->group, -1, SQLITE_TRANSIENT);
  int rc = sqlite3_step(st);
  sqlite3_int64 group_id = 0;
  int err = 0;
  bool exists = rc == SQLITE_ROW;
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    err = sql_fail(c->s, rc, c->diag, "cannot look up a group");
  if (!err && exists) {
    group_id = sqlite3_column_int64(st, GC_ID);
    if (mode == PFLEX_STORE_REJECT_EXISTING) {
      err = pflex_diag_set(c->diag, -EEXIST, c->src, first->line, "group",
                           "group '%s' is already stored", first->group);
    } else if (mode == PFLEX_STORE_APPEND) {
      struct pflex_run stored;
      group_row_to_run(st, &stored);
      const char *field = config_diff(&stored, first);
      enum pflex_tput_unit unit;
      if (!field &&
          (pflex_tput_unit_from_key(col_text(st, GC_UNIT), &unit) || unit != c->set->unit))
        field = "unit";
      if (field)
        err = pflex_diag_set(c->diag, -PFLEX_E_DATA, c->src, first->line, field,
                             "group '%s': '%s' differs from the stored group's; "
                             "cannot append to it",
                             first->group, field);
    }
  }
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (err) return err;
  if (exists && mode == PFLEX_STORE_REPLACE_GROUP) {
    sqlite3_bind_int64(c->delete_group, 1, group_id);
    err = step_done(c, c->delete_group, "cannot delete the stored group");
    if (err) return err;
    exists = false;
    res->groups_replaced++;
  } else if (exists) {
    sqlite3_bind_int64(c->touch_group, 1, group_id);
    sqlite3_bind_text(c->touch_group, 2, c->imported_at, -1, SQLITE_STATIC);
    err = step_done(c, c->touch_group, "cannot update the stored group");
    if (err) return err;
    res->groups_appended++;
  } else {
    res->groups_new++;
  }
  if (!exists) {
    err = insert_group(c, first, &group_id);
    if (err) return err;
  }
  for (size_t j = 0; j < n; j++) {
    err = insert_run(c, group_id, idx[j]);
    if (err) return err;
    res->runs++;
  }
  return 0;
}

static int cmp_size(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return (x > y) - (x < y);
}

/* The import's one timestamp, from SQLite's clock in its format. */
static int import_time(struct put_ctx *c) {
  sqlite3_stmt *st = NULL;
  int err = prepare(c->s, "SELECT strftime('%Y-%m-%dT%H:%M:%SZ', 'now')", &st, c->diag);
  if (err) return err;
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW)
    snprintf(c->imported_at, sizeof c->imported_at, "%s", col_text(st, 0));
  else
    err = sql_fail(c->s, rc, c->diag, "cannot read the time");
  sqlite3_finalize(st);
  return err;
}

/* insert_run: a run with its extra cells packed as a JSON array by SQLite's
 * json_array (?9, ?10, ...), or, for more columns than an SQL function takes,
 * bound as one text that jansson packed. jansson's writer was 28% of an
 * import's instructions at 4,000 groups; json_array and its binds are about
 * half that (bench/README.md, twelfth wave). */
static int prepare_insert_run(struct put_ctx *c) {
  static const char head[] = "INSERT INTO runs (group_id, cap_w, power_w, tput, power_sd, tput_sd,"
                             " source_line, extra_columns_id, extras) VALUES (?, ?, ?, ?, ?, ?, ?,"
                             " ?, ";
  size_t n = c->set->nextra;
  c->sql_json = n > 0 && n <= (size_t)sqlite3_limit(c->s->db, SQLITE_LIMIT_FUNCTION_ARG, -1);
  if (!c->sql_json) {
    int err = pflex__extras_packer_init(&c->packer, n);
    return err ? err : prepare(c->s, "INSERT INTO runs (group_id, cap_w, power_w, tput, power_sd,"
                                     " tput_sd, source_line, extra_columns_id, extras)"
                                     " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                               &c->insert_run, c->diag);
  }
  char *sql = malloc(sizeof head + 16 + 2 * n);
  if (!sql) return -ENOMEM;
  size_t len = sizeof head - 1;
  memcpy(sql, head, len);
  memcpy(sql + len, "json_array(?", 12);
  len += 12;
  for (size_t k = 1; k < n; k++) {
    memcpy(sql + len, ",?", 2);
    len += 2;
  }
  memcpy(sql + len, "))", 3);
  int err = prepare(c->s, sql, &c->insert_run, c->diag);
  free(sql);
  return err;
}

static int put_prepare(struct put_ctx *c) {
  struct pflex_store *s = c->s;
  int err = prepare(s, "SELECT " GROUP_COLS " FROM groups g WHERE g.name = ?", &c->find_group,
                    c->diag);
  if (!err) err = prepare(s, "DELETE FROM groups WHERE id = ?", &c->delete_group, c->diag);
  if (!err)
    err = prepare(s,
                  "INSERT INTO groups (name, gpu, gpus, unit, model, arch, task, set_name, seq_len,"
                  " batch, ep, compile, grad_ckpt, source, imported_at) VALUES (?, ?, ?, ?, ?, ?,"
                  " ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                  &c->insert_group, c->diag);
  if (!err)
    err = prepare(s, "UPDATE groups SET imported_at = ?2 WHERE id = ?1", &c->touch_group, c->diag);
  if (!err) err = prepare_insert_run(c);
  if (!err) err = import_time(c);
  return err;
}

static void put_release(struct put_ctx *c) {
  sqlite3_finalize(c->find_group);
  sqlite3_finalize(c->delete_group);
  sqlite3_finalize(c->insert_group);
  sqlite3_finalize(c->touch_group);
  sqlite3_finalize(c->insert_run);
  pflex__extras_packer_release(&c->packer);
}

/* c->columns_id: the extra_columns row of the set's column names, found or added. */
static int put_columns(struct put_ctx *c) {
  char *names = NULL;
  size_t bad = 0;
  int err = pflex__extras_names_json(c->set->extra_names, c->set->nextra, &names, &bad);
  if (err == -EILSEQ)
    return pflex_diag_set(c->diag, -PFLEX_E_DATA, c->src, 0, NULL,
                          "extra column name %zu is not UTF-8 text", bad + 1);
  sqlite3_stmt *ins = NULL, *sel = NULL;
  if (!err)
    err = prepare(c->s, "INSERT OR IGNORE INTO extra_columns (names) VALUES (?)", &ins, c->diag);
  if (!err) err = prepare(c->s, "SELECT id FROM extra_columns WHERE names = ?", &sel, c->diag);
  if (!err) {
    sqlite3_bind_text(ins, 1, names, -1, SQLITE_STATIC);
    int rc = sqlite3_step(ins);
    if (rc != SQLITE_DONE) err = sql_fail(c->s, rc, c->diag, "cannot store the extra columns");
  }
  if (!err) {
    sqlite3_bind_text(sel, 1, names, -1, SQLITE_STATIC);
    int rc = sqlite3_step(sel);
    if (rc == SQLITE_ROW)
      c->columns_id = sqlite3_column_int64(sel, 0);
    else
      err = sql_fail(c->s, rc, c->diag, "cannot find the extra columns");
  }
  sqlite3_finalize(ins);
  sqlite3_finalize(sel);
  free(names);
  return err;
}

/* Stores the groups in one transaction. Foreign keys are checked by SQLite
 * for every row written, a search of the parent table each: here every
 * run's group and extra column list is a row this transaction just wrote or
 * found, so the checks are off while it runs,
 * except when it replaces groups, whose deletion needs the schema's cascades.
 * The pragma cannot change inside a transaction: it is set around it, and
 * set back whatever happens. */
static int put_all(struct put_ctx *c, const struct pflex_group *groups, size_t ngroups,
                   size_t *idx, enum pflex_store_put_mode mode, struct pflex_store_put_result *res) {
  struct pflex_store *store = c->s;
  bool fk_off = mode != PFLEX_STORE_REPLACE_GROUP;
  int err = fk_off ? exec(store, "PRAGMA foreign_keys = OFF", c->diag, "cannot set foreign keys")
                   : 0;
  if (!err) err = exec(store, "BEGIN IMMEDIATE", c->diag, "cannot start a transaction");
  if (!err && c->set->nextra) err = put_columns(c);
  for (size_t g = 0; !err && g < ngroups; g++) {
    /* File order within the group, not the cap order pflex_runset_groups gives. */
    size_t n = groups[g].n;
    memcpy(idx, groups[g].runs, n * sizeof *idx);
    qsort(idx, n, sizeof *idx, cmp_size);
    err = put_group(c, idx, n, mode, res);
    pflex_progress_report(&store->progress, "groups", g + 1, ngroups);
  }
  if (!err) err = exec(store, "COMMIT", c->diag, "cannot commit");
  if (err) rollback(store);
  if (fk_off) {
    int e = exec(store, "PRAGMA foreign_keys = ON", err ? NULL : c->diag,
                 "cannot enable foreign keys");
    if (!err) err = e;
  }
  return err;
}

int pflex_store_put_runs(struct pflex_store *store, const struct pflex_runset *set,
                         enum pflex_store_put_mode mode, struct pflex_store_put_result *ret_result,
                         struct pflex_diag *diag) {
  pflex_diag_clear(diag);
  if (!store || !set) return -EINVAL;
  if (store->readonly)
    return pflex_diag_set(diag, -EROFS, store->path, 0, NULL, "store opened read-only");
  struct put_ctx c = {
      .s = store, .src = set->source ? set->source : store->path, .set = set, .diag = diag};
  struct pflex_store_put_result res = {0};
  struct pflex_group *groups = NULL;
  size_t ngroups = 0;
  int err = pflex_runset_groups(set, &groups, &ngroups);
  if (err) return err;
  size_t *idx = malloc((set->n ? set->n : 1) * sizeof *idx);
  err = idx ? put_prepare(&c) : -ENOMEM;
  /* A page cache of up to 64 MiB (allocated as used) for the import: with
   * SQLite's 2 MiB default a large import spills dirty pages to the file
   * mid-transaction, each spill syncing the journal first. */
  if (!err) err = exec(store, "PRAGMA cache_size = -65536", diag, "cannot size the page cache");
  if (!err) err = put_all(&c, groups, ngroups, idx, mode, &res);
  put_release(&c);
  free(idx);
  pflex_groups_free(groups, ngroups);
  if (!err && ret_result) *ret_result = res;
  return err;
}

/* ---- reading runs ---- */

/* One run of a group as SQLite returns it (no ORDER BY: sorting a group's few
 * runs here costs less than SQLite's temporary B-tree per group). cells is
 * the offset of its extras JSON in the reader's text, SIZE_MAX when NULL. */
struct run_row {
  sqlite3_int64 id, columns_id;
  double cap_w, power_w, tput, power_sd, tput_sd;
  unsigned have;
  bool has_columns;
  size_t cells, cells_len;
};

static int cmp_run_row(const void *a, const void *b) {
  const struct run_row *x = a, *y = b;
  return (x->id > y->id) - (x->id < y->id);
}

/* An extra_columns row read: the runset column of each of its n names. */
struct column_list {
  sqlite3_int64 id;
  size_t n;
  size_t *col;
};

/* pflex_store_get_runs's reading: its statements (all groups, one group by
 * name, a group's runs, a list of extra columns), the group ids already read
 * (for a group named twice: an open-addressing set of nslots), the unit of
 * the first group read, which every other must share, and buffers reused
 * from group to group. */
struct runs_reader {
  struct pflex_store *store;
  sqlite3_stmt *all, *one, *runs_st, *columns_st;
  sqlite3_int64 *ids;
  size_t nslots;
  bool have_unit;
  char first_group[128];
  struct pflex_runset out;
  struct pflex_diag *diag;
  struct run_row *rows; /* the group's runs */
  size_t nrows, rows_cap;
  char *text; /* their extras JSON, each NUL-terminated */
  size_t len, text_cap;
  struct column_list *lists; /* the extra_columns rows read so far */
  size_t nlists, lists_cap;
  const char **vals; /* one run's extras in runset column order */
  size_t nvals;
  const char **cells; /* one run's extras in its list's order */
  size_t ncells;
};

/* Copies column i's text into rd's text: its offset and length, or SIZE_MAX
 * when out of memory. */
static size_t keep_text(struct runs_reader *rd, sqlite3_stmt *st, int i, size_t *ret_len) {
  const char *t = col_text(st, i);
  size_t n = (size_t)sqlite3_column_bytes(st, i);
  if (!t) return SIZE_MAX;
  if (rd->len + n + 1 > rd->text_cap) {
    size_t cap = rd->text_cap ? rd->text_cap : 4096;
    while (cap < rd->len + n + 1)
      cap *= 2;
    char *g = realloc(rd->text, cap);
    if (!g) return SIZE_MAX;
    rd->text = g;
    rd->text_cap = cap;
  }
  memcpy(rd->text + rd->len, t, n + 1);
  rd->len += n + 1;
  *ret_len = n;
  return rd->len - n - 1;
}

/* Reads the runs row st is on into rd->rows. */
static int keep_row(struct runs_reader *rd, sqlite3_stmt *st) {
  if (rd->nrows == rd->rows_cap) {
    size_t cap = rd->rows_cap ? 2 * rd->rows_cap : 256;
    struct run_row *g = realloc(rd->rows, cap * sizeof *g);
    if (!g) return -ENOMEM;
    rd->rows = g;
    rd->rows_cap = cap;
  }
  /* The types before the values: SQLite leaves a converted column's type undefined. */
  unsigned have = (sqlite3_column_type(st, 4) != SQLITE_NULL ? PFLEX_RUN_POWER_SD : 0u) |
                  (sqlite3_column_type(st, 5) != SQLITE_NULL ? PFLEX_RUN_TPUT_SD : 0u);
  bool has_columns = sqlite3_column_type(st, 6) != SQLITE_NULL;
  bool has_cells = sqlite3_column_type(st, 7) != SQLITE_NULL;
  struct run_row *r = &rd->rows[rd->nrows];
  *r = (struct run_row){.id = sqlite3_column_int64(st, 0),
                        .cap_w = sqlite3_column_double(st, 1),
                        .power_w = sqlite3_column_double(st, 2),
                        .tput = sqlite3_column_double(st, 3),
                        .power_sd = sqlite3_column_double(st, 4),
                        .tput_sd = sqlite3_column_double(st, 5),
                        .columns_id = sqlite3_column_int64(st, 6),
                        .has_columns = has_columns,
                        .cells = SIZE_MAX,
                        .have = have};
  if (has_cells && (r->cells = keep_text(rd, st, 7, &r->cells_len)) == SIZE_MAX) return -ENOMEM;
  rd->nrows++;
  return 0;
}

/* A stored run's extras are unusable: says which run of which group and why. */
static int bad_run(struct runs_reader *rd, const struct pflex_run *proto, const struct run_row *r,
                   const char *column, const char *why) {
  return pflex_diag_set(rd->diag, -PFLEX_E_SCHEMA, rd->store->path, 0, column,
                        "group '%s', run at cap %g W (runs.id %lld): %s", proto->group, r->cap_w,
                        (long long)r->id, why);
}

/* Room for n pointers in *v (of *nv), the new ones NULL. */
static int ptrs_fit(const char ***v, size_t *nv, size_t n) {
  if (n <= *nv) return 0;
  const char **g = realloc(*v, n * sizeof *g);
  if (!g) return -ENOMEM;
  for (size_t c = *nv; c < n; c++)
    g[c] = NULL;
  *v = g;
  *nv = n;
  return 0;
}

/* Reads extra_columns row id (its names, each found among or added to the
 * runset's columns, in order: columns appear in order of first appearance)
 * into a new entry of rd->lists. */
static int read_column_list(struct runs_reader *rd, const struct pflex_run *proto,
                            const struct run_row *r, struct column_list **ret) {
  sqlite3_stmt *st = rd->columns_st;
  sqlite3_bind_int64(st, 1, r->columns_id);
  int rc = sqlite3_step(st);
  char why[200] = "", **names = NULL;
  size_t n = 0;
  int err = 0;
  if (rc == SQLITE_ROW && col_text(st, 0))
    err = pflex__extras_parse_names(col_text(st, 0), &names, &n, why, sizeof why);
  else if (rc == SQLITE_ROW || rc == SQLITE_DONE)
    snprintf(why, sizeof why, "extra_columns_id %lld is not in extra_columns",
             (long long)r->columns_id);
  else
    err = sql_fail(rd->store, rc, rd->diag, "cannot read extra columns");
  sqlite3_reset(st);
  if (err == -PFLEX_E_SCHEMA || (!err && !names)) {
    char msg[300];
    snprintf(msg, sizeof msg, "extra_columns row %lld: %s", (long long)r->columns_id, why);
    return bad_run(rd, proto, r, "extra_columns_id", msg);
  }
  if (err) return err;
  if (rd->nlists == rd->lists_cap) {
    size_t cap = rd->lists_cap ? 2 * rd->lists_cap : 4;
    struct column_list *g = realloc(rd->lists, cap * sizeof *g);
    if (!g) err = -ENOMEM;
    if (g) rd->lists = g;
    if (g) rd->lists_cap = cap;
  }
  struct column_list *l = err ? NULL : &rd->lists[rd->nlists];
  if (l) *l = (struct column_list){r->columns_id, n, malloc((n ? n : 1) * sizeof(size_t))};
  if (l && !l->col) err = -ENOMEM;
  for (size_t k = 0; !err && k < n; k++)
    err = pflex_runset_add_column(&rd->out, names[k], &l->col[k]); /* finds it, or adds it */
  free(names);
  if (err) {
    if (l) free(l->col);
    return err;
  }
  rd->nlists++;
  *ret = l;
  return 0;
}

/* The column list of run r: read before (most runs share one), or now. */
static int column_list(struct runs_reader *rd, const struct pflex_run *proto,
                       const struct run_row *r, struct column_list **ret) {
  for (size_t i = rd->nlists; i-- > 0;)
    if (rd->lists[i].id == r->columns_id) {
      *ret = &rd->lists[i];
      return 0;
    }
  return read_column_list(rd, proto, r, ret);
}

/* Points rd->vals at run r's extras (parsed into *ret_owner), by runset column. */
static int run_cells(struct runs_reader *rd, const struct pflex_run *proto,
                     const struct run_row *r, void **ret_owner) {
  if (!r->has_columns && r->cells == SIZE_MAX) return 0; /* a run without extras */
  if (!r->has_columns || r->cells == SIZE_MAX)
    return bad_run(rd, proto, r, "extras",
                   "extras and extra_columns_id must be both set or both NULL");
  struct column_list *l = NULL;
  int err = column_list(rd, proto, r, &l);
  if (!err) err = ptrs_fit(&rd->cells, &rd->ncells, l->n);
  if (err) return err;
  char why[200];
  size_t bad = SIZE_MAX;
  err = pflex__extras_parse_cells(rd->text + r->cells, r->cells_len, l->n, rd->cells, ret_owner,
                                  &bad, why, sizeof why);
  if (err == -PFLEX_E_SCHEMA) {
    char msg[300];
    snprintf(msg, sizeof msg, "%s%s%s%s", why, bad == SIZE_MAX ? "" : " (extra column '",
             bad == SIZE_MAX ? "" : rd->out.extra_names[l->col[bad]], bad == SIZE_MAX ? "" : "')");
    return bad_run(rd, proto, r, "extras", msg);
  }
  if (!err) err = ptrs_fit(&rd->vals, &rd->nvals, rd->out.nextra);
  for (size_t k = 0; !err && k < l->n; k++)
    rd->vals[l->col[k]] = rd->cells[k];
  return err;
}

/* Appends run r of the group proto describes, with its extras. */
static int append_run(struct runs_reader *rd, const struct run_row *r,
                      const struct pflex_run *proto) {
  void *owner = NULL;
  int err = run_cells(rd, proto, r, &owner);
  if (!err) err = ptrs_fit(&rd->vals, &rd->nvals, rd->out.nextra);
  for (size_t c = 0; !err && c < rd->out.nextra; c++)
    if (!rd->vals[c]) rd->vals[c] = "";
  struct pflex_run run = *proto;
  run.extra = (char **)rd->vals;
  run.line = 0; /* the runs do not come from a file here */
  run.cap_w = r->cap_w;
  run.power_w = r->power_w;
  run.tput = r->tput;
  run.power_sd = r->power_sd;
  run.tput_sd = r->tput_sd;
  run.have |= r->have;
  if (!err) err = pflex_runset_append(&rd->out, &run); /* copies the values */
  pflex__extras_free(owner);
  for (size_t c = 0; c < rd->nvals; c++)
    rd->vals[c] = NULL;
  return err;
}

/* Appends the runs of group group_id in run id order, each with its extra columns. */
static int append_group_runs(struct runs_reader *rd, const struct pflex_run *proto,
                             sqlite3_int64 group_id) {
  sqlite3_stmt *st = rd->runs_st;
  sqlite3_bind_int64(st, 1, group_id);
  int rc, err = 0;
  rd->nrows = rd->len = 0;
  while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW)
    err = keep_row(rd, st);
  if (!err && rc != SQLITE_DONE) err = sql_fail(rd->store, rc, rd->diag, "cannot read runs");
  sqlite3_reset(st);
  if (!err) qsort(rd->rows, rd->nrows, sizeof *rd->rows, cmp_run_row);
  for (size_t k = 0; !err && k < rd->nrows; k++)
    err = append_run(rd, &rd->rows[k], proto);
  return err;
}

/* Adds id (> 0) to the set ids of nslots (a power of two): whether it was there. */
static bool id_seen(sqlite3_int64 *ids, size_t nslots, sqlite3_int64 id) {
  size_t h = (size_t)((uint64_t)id * 0x9E3779B97F4A7C15ull >> 17) & (nslots - 1);
  while (ids[h] && ids[h] != id)
    h = (h + 1) & (nslots - 1);
  bool seen = ids[h] == id;
  ids[h] = id;
  return seen;
}

static int reader_prepare(struct runs_reader *rd, size_t ngroups) {
  struct pflex_store *s = rd->store;
  int err = prepare(s, "SELECT " GROUP_COLS " FROM groups g ORDER BY g.id", &rd->all, rd->diag);
  if (!err)
    err = prepare(s, "SELECT " GROUP_COLS " FROM groups g WHERE g.name = ?", &rd->one, rd->diag);
  if (!err)
    err = prepare(s,
                  "SELECT r.id, r.cap_w, r.power_w, r.tput, r.power_sd, r.tput_sd,"
                  " r.extra_columns_id, r.extras FROM runs r WHERE r.group_id = ?",
                  &rd->runs_st, rd->diag);
  if (!err)
    err = prepare(s, "SELECT names FROM extra_columns WHERE id = ?", &rd->columns_st, rd->diag);
  rd->nslots = 16;
  while (rd->nslots < 2 * ngroups)
    rd->nslots *= 2;
  if (!err && ngroups) {
    rd->ids = malloc(rd->nslots * sizeof *rd->ids);
    if (!rd->ids) return -ENOMEM;
    for (size_t k = 0; k < rd->nslots; k++)
      rd->ids[k] = 0; /* rowids of groups are >= 1 */
  }
  return err;
}

static void reader_release(struct runs_reader *rd) {
  sqlite3_finalize(rd->all);
  sqlite3_finalize(rd->one);
  sqlite3_finalize(rd->runs_st);
  sqlite3_finalize(rd->columns_st);
  free(rd->ids);
  free(rd->rows);
  free(rd->text);
  for (size_t i = 0; i < rd->nlists; i++)
    free(rd->lists[i].col);
  free(rd->lists);
  free(rd->vals);
  free(rd->cells);
}

/* Steps to the next group row: of all groups (name NULL), or of the group
 * named `name`. 1 with *ret_st on the row, 0 when all groups are read, or an
 * error (-ENOENT: no group of that name). */
static int reader_next_group(struct runs_reader *rd, bool by_name, const char *name,
                             sqlite3_stmt **ret_st) {
  sqlite3_stmt *st = rd->all;
  if (by_name) {
    sqlite3_bind_text(rd->one, 1, name ? name : "", -1, SQLITE_TRANSIENT);
    st = rd->one;
  }
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    *ret_st = st;
    return 1;
  }
  if (rc != SQLITE_DONE) return sql_fail(rd->store, rc, rd->diag, "cannot read groups");
  if (!by_name) return 0;
  sqlite3_reset(rd->one);
  return pflex_diag_set(rd->diag, -ENOENT, rd->store->path, 0, "group",
                        "no group '%s' in the store", name ? name : "");
}

/* Appends the runs of the group on row st, after checking that its unit is
 * known and the same as the groups' read before. */
static int reader_take_group(struct runs_reader *rd, sqlite3_stmt *st, sqlite3_int64 id) {
  const char *path = rd->store->path;
  enum pflex_tput_unit unit = PFLEX_TPUT_TOKENS_PER_S;
  if (pflex_tput_unit_from_key(col_text(st, GC_UNIT), &unit))
    return pflex_diag_set(rd->diag, -PFLEX_E_SCHEMA, path, 0, "unit",
                          "group '%s' has an unknown unit", col_text(st, GC_NAME));
  if (rd->have_unit && unit != rd->out.unit)
    return pflex_diag_set(rd->diag, -PFLEX_E_DATA, path, 0, "unit",
                          "groups '%s' (%s) and '%s' (%s) have different throughput units; "
                          "read them separately",
                          rd->first_group, pflex_tput_unit_name(rd->out.unit),
                          col_text(st, GC_NAME), pflex_tput_unit_name(unit));
  if (!rd->have_unit)
    snprintf(rd->first_group, sizeof rd->first_group, "%s", col_text(st, GC_NAME));
  rd->out.unit = unit;
  rd->have_unit = true;
  struct pflex_run proto;
  group_row_to_run(st, &proto);
  return append_group_runs(rd, &proto, id);
}

/* Reads the groups named (all of them, in id order, when ngroups is 0). */
static int reader_read(struct runs_reader *rd, const char *const *groups, size_t ngroups) {
  for (size_t gi = 0; !ngroups || gi < ngroups; gi++) {
    sqlite3_stmt *st = NULL;
    int err = reader_next_group(rd, ngroups > 0, ngroups ? groups[gi] : NULL, &st);
    if (err <= 0) return err;
    sqlite3_int64 id = sqlite3_column_int64(st, GC_ID);
    bool dup = ngroups && id_seen(rd->ids, rd->nslots, id);
    err = dup ? 0 : reader_take_group(rd, st, id);
    if (ngroups) sqlite3_reset(rd->one);
    if (err) return err;
  }
  return 0;
}

int pflex_store_get_runs(struct pflex_store *store, const char *const *groups, size_t ngroups,
                         struct pflex_runset *ret_set, struct pflex_diag *diag) {
  pflex_diag_clear(diag);
  if (!store || !ret_set || (ngroups && !groups)) return -EINVAL;
  struct runs_reader rd = {.store = store, .diag = diag};
  pflex_runset_init(&rd.out);
  /* One read transaction: a concurrent import cannot tear the result. */
  /* The page cache as for an import: a large read revisits index pages. */
  int err = exec(store, "PRAGMA cache_size = -65536", diag, "cannot size the page cache");
  if (!err) err = exec(store, "BEGIN", diag, "cannot start a transaction");
  if (!err) err = reader_prepare(&rd, ngroups);
  if (!err) err = reader_read(&rd, groups, ngroups);
  reader_release(&rd);
  if (!err) err = exec(store, "COMMIT", diag, "cannot end the transaction");
  if (err) {
    rollback(store);
    pflex_runset_release(&rd.out);
    return err;
  }
  *ret_set = rd.out;
  return 0;
}

/* ---- listing ---- */

static char *dup_col(sqlite3_stmt *st, int i, bool *ok) {
  const char *v = col_text(st, i);
  if (!v) return NULL;
  char *d = strdup(v);
  if (!d) *ok = false;
  return d;
}

void pflex_store_groups_free(struct pflex_store_group *groups, size_t n) {
  if (!groups) return;
  for (size_t i = 0; i < n; i++) {
    free(groups[i].name);
    free(groups[i].gpu);
    free(groups[i].model);
    free(groups[i].set);
    free(groups[i].source);
    free(groups[i].imported_at);
  }
  free(groups);
}

int pflex_store_list_groups(struct pflex_store *store, struct pflex_store_group **ret_groups,
                            size_t *ret_n) {
  if (!store || !ret_groups || !ret_n) return -EINVAL;
  sqlite3_stmt *st = NULL;
  int err = prepare(store,
                    "SELECT " GROUP_COLS ","
                    " (SELECT count(*) FROM runs r WHERE r.group_id = g.id),"
                    " (SELECT count(*) FROM samples s JOIN runs r ON r.id = s.run_id"
                    "  WHERE r.group_id = g.id)"
                    " FROM groups g ORDER BY g.id",
                    &st, NULL);
  if (err) return err;
  struct pflex_store_group *v = NULL;
  size_t n = 0, cap = 0;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      struct pflex_store_group *nv = realloc(v, cap * sizeof *nv);
      if (!nv) {
        err = -ENOMEM;
        break;
      }
      v = nv;
    }
    struct pflex_store_group *g = &v[n++];
    memset(g, 0, sizeof *g);
    bool ok = true;
    g->name = dup_col(st, GC_NAME, &ok);
    g->gpu = dup_col(st, GC_GPU, &ok);
    g->gpus = sqlite3_column_int(st, GC_GPUS);
    if (pflex_tput_unit_from_key(col_text(st, GC_UNIT), &g->unit))
      g->unit = PFLEX_TPUT_TOKENS_PER_S;
    g->model = dup_col(st, GC_MODEL, &ok);
    g->arch = arch_from(col_text(st, GC_ARCH));
    g->task = task_from(col_text(st, GC_TASK));
    g->set = dup_col(st, GC_SET, &ok);
    g->source = dup_col(st, GC_SOURCE, &ok);
    g->imported_at = dup_col(st, GC_IMPORTED_AT, &ok);
    g->runs = (size_t)sqlite3_column_int64(st, GC_END);
    g->samples = (size_t)sqlite3_column_int64(st, GC_END + 1);
    if (!ok) {
      err = -ENOMEM;
      break;
    }
  }
  if (!err && rc != SQLITE_DONE) err = map_rc(store->db, rc);
  sqlite3_finalize(st);
  if (err) {
    pflex_store_groups_free(v, n);
    return err;
  }
  *ret_groups = v;
  *ret_n = n;
  return 0;
}

/* ---- telemetry samples ---- */

int pflex_store_run_id(struct pflex_store *store, const char *group, double cap_w,
                       int64_t *ret_id) {
  if (!store || !group || !ret_id) return -EINVAL;
  sqlite3_stmt *st = NULL;
  int err = prepare(store,
                    "SELECT r.id FROM runs r JOIN groups g ON g.id = r.group_id"
                    " WHERE g.name = ? AND r.cap_w = ?",
                    &st, NULL);
  if (err) return err;
  sqlite3_bind_text(st, 1, group, -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(st, 2, cap_w);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW)
    *ret_id = sqlite3_column_int64(st, 0);
  else
    err = rc == SQLITE_DONE ? -ENOENT : map_rc(store->db, rc);
  sqlite3_finalize(st);
  return err;
}

static int run_exists(struct pflex_store *s, int64_t run_id) {
  sqlite3_stmt *st = NULL;
  int err = prepare(s, "SELECT 1 FROM runs WHERE id = ?", &st, NULL);
  if (err) return err;
  sqlite3_bind_int64(st, 1, run_id);
  int rc = sqlite3_step(st);
  err = rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : map_rc(s->db, rc);
  sqlite3_finalize(st);
  return err;
}

/* A few metric names recur across many samples: remember their ids. */
struct metric_cache {
  const char **names;
  sqlite3_int64 *ids;
  size_t n, cap;
};

static int metric_id(struct pflex_store *s, struct metric_cache *mc, sqlite3_stmt *ins,
                     sqlite3_stmt *sel, const char *name, sqlite3_int64 *ret_id) {
  for (size_t i = 0; i < mc->n; i++)
    if (mc->names[i] == name || strcmp(mc->names[i], name) == 0) {
      *ret_id = mc->ids[i];
      return 0;
    }
  sqlite3_bind_text(ins, 1, name, -1, SQLITE_TRANSIENT);
  int rc = sqlite3_step(ins);
  sqlite3_reset(ins);
  if (rc != SQLITE_DONE) return map_rc(s->db, rc);
  sqlite3_bind_text(sel, 1, name, -1, SQLITE_TRANSIENT);
  rc = sqlite3_step(sel);
  sqlite3_int64 id = rc == SQLITE_ROW ? sqlite3_column_int64(sel, 0) : 0;
  sqlite3_reset(sel);
  if (rc != SQLITE_ROW) return rc == SQLITE_DONE ? -EIO : map_rc(s->db, rc);
  if (mc->n == mc->cap) {
    size_t cap = mc->cap ? 2 * mc->cap : 8;
    const char **names = realloc(mc->names, cap * sizeof *names);
    if (!names) return -ENOMEM;
    mc->names = names;
    sqlite3_int64 *ids = realloc(mc->ids, cap * sizeof *ids);
    if (!ids) return -ENOMEM;
    mc->ids = ids;
    mc->cap = cap;
  }
  mc->names[mc->n] = name;
  mc->ids[mc->n++] = id;
  *ret_id = id;
  return 0;
}

int pflex_store_add_samples(struct pflex_store *store, int64_t run_id,
                            const struct pflex_sample *samples, size_t n) {
  if (!store || (n && !samples)) return -EINVAL;
  if (store->readonly) return -EROFS;
  for (size_t i = 0; i < n; i++)
    if (!isfinite(samples[i].time_s) || !isfinite(samples[i].value) || samples[i].gpu < 0 ||
        !samples[i].metric || !*samples[i].metric)
      return -EINVAL;
  sqlite3_stmt *ins_metric = NULL, *sel_metric = NULL, *ins = NULL;
  struct metric_cache mc = {0};
  int err = exec(store, "BEGIN IMMEDIATE", NULL, NULL);
  if (!err) err = run_exists(store, run_id);
  if (!err)
    err = prepare(store, "INSERT OR IGNORE INTO metrics (name) VALUES (?)", &ins_metric, NULL);
  if (!err) err = prepare(store, "SELECT id FROM metrics WHERE name = ?", &sel_metric, NULL);
  if (!err)
    err = prepare(
        store, "INSERT INTO samples (run_id, metric_id, gpu, time_s, value) VALUES (?, ?, ?, ?, ?)",
        &ins, NULL);
  for (size_t i = 0; !err && i < n; i++) {
    sqlite3_int64 mid = 0;
    err = metric_id(store, &mc, ins_metric, sel_metric, samples[i].metric, &mid);
    if (err) break;
    sqlite3_bind_int64(ins, 1, run_id);
    sqlite3_bind_int64(ins, 2, mid);
    sqlite3_bind_int(ins, 3, samples[i].gpu);
    sqlite3_bind_double(ins, 4, samples[i].time_s);
    sqlite3_bind_double(ins, 5, samples[i].value);
    int rc = sqlite3_step(ins);
    sqlite3_reset(ins);
    if (rc != SQLITE_DONE) err = map_rc(store->db, rc);
  }
  sqlite3_finalize(ins_metric);
  sqlite3_finalize(sel_metric);
  sqlite3_finalize(ins);
  free(mc.names);
  free(mc.ids);
  if (!err) err = exec(store, "COMMIT", NULL, NULL);
  if (err) rollback(store);
  return err;
}

void pflex_sample_set_init(struct pflex_sample_set *set) {
  memset(set, 0, sizeof *set);
}

void pflex_sample_set_release(struct pflex_sample_set *set) {
  if (!set) return;
  for (size_t i = 0; i < set->nmetrics; i++)
    free(set->metrics[i]);
  free(set->metrics);
  free(set->samples);
  pflex_sample_set_init(set);
}

int pflex_store_get_samples(struct pflex_store *store, int64_t run_id, const char *metric,
                            struct pflex_sample_set *ret_set) {
  if (!store || !ret_set) return -EINVAL;
  struct pflex_sample_set out;
  pflex_sample_set_init(&out);
  sqlite3_stmt *st = NULL;
  size_t cap = 0;
  int err = exec(store, "BEGIN", NULL, NULL);
  if (!err) err = run_exists(store, run_id);
  if (!err)
    err = prepare(store,
                  "SELECT m.name, s.gpu, s.time_s, s.value FROM samples s"
                  " JOIN metrics m ON m.id = s.metric_id"
                  " WHERE s.run_id = ?1 AND (?2 IS NULL OR m.name = ?2)"
                  " ORDER BY m.name, s.gpu, s.time_s",
                  &st, NULL);
  if (!err) {
    sqlite3_bind_int64(st, 1, run_id);
    bind_text_or_null(st, 2, metric);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      const char *name = col_text(st, 0);
      if (!out.nmetrics || strcmp(out.metrics[out.nmetrics - 1], name) != 0) {
        char **m = realloc(out.metrics, (out.nmetrics + 1) * sizeof *m);
        if (!m) {
          err = -ENOMEM;
          break;
        }
        out.metrics = m;
        m[out.nmetrics] = strdup(name);
        if (!m[out.nmetrics]) {
          err = -ENOMEM;
          break;
        }
        out.nmetrics++;
      }
      if (out.n == cap) {
        cap = cap ? 2 * cap : 256;
        struct pflex_sample *v = realloc(out.samples, cap * sizeof *v);
        if (!v) {
          err = -ENOMEM;
          break;
        }
        out.samples = v;
      }
      out.samples[out.n++] = (struct pflex_sample){.time_s = sqlite3_column_double(st, 2),
                                                   .gpu = sqlite3_column_int(st, 1),
                                                   .metric = out.metrics[out.nmetrics - 1],
                                                   .value = sqlite3_column_double(st, 3)};
    }
    if (!err && rc != SQLITE_DONE) err = map_rc(store->db, rc);
  }
  sqlite3_finalize(st);
  if (!err) err = exec(store, "COMMIT", NULL, NULL);
  if (err) {
    rollback(store);
    pflex_sample_set_release(&out);
    return err;
  }
  *ret_set = out;
  return 0;
}
