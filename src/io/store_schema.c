/* The store's schema as an ordered list of migrations.
 *
 * Policy (docs/store.md): a migration, once released, is never edited; a
 * schema change is a new entry at the end with the next version number.
 * store.c applies each missing migration in its own transaction and records
 * it in schema_version, so a store is always at exactly one known version.
 *
 * Absent optional values are NULL. A group's configuration lives in groups,
 * the per-run measurements in runs; run_extras keeps every other column of a
 * run verbatim (telemetry aggregates, unknown columns) with its position, so
 * that an export reproduces the column order. Samples name their metric
 * through the metrics table: a series has many rows and few metric names. */
#include "io/store_schema.h"

static const char schema_v1[] =
    "CREATE TABLE groups ("
    "  id INTEGER PRIMARY KEY,"
    "  name TEXT NOT NULL UNIQUE CHECK (name <> ''),"
    "  gpu TEXT NOT NULL CHECK (gpu <> ''),"
    "  gpus INTEGER NOT NULL CHECK (gpus > 0),"
    "  unit TEXT NOT NULL CHECK (unit IN ('tokens_per_s', 'samples_per_s', 'steps_per_s',"
    "                                    'per_step_time')),"
    "  model TEXT,"
    "  arch TEXT CHECK (arch IN ('dense', 'moe')),"
    "  task TEXT CHECK (task IN ('pt', 'ft')),"
    "  set_name TEXT,"
    "  seq_len INTEGER,"
    "  batch INTEGER,"
    "  ep INTEGER,"
    "  compile INTEGER CHECK (compile IN (0, 1)),"
    "  grad_ckpt INTEGER CHECK (grad_ckpt IN (0, 1)),"
    "  source TEXT,"
    "  imported_at TEXT NOT NULL"
    ");"
    "CREATE TABLE runs ("
    "  id INTEGER PRIMARY KEY,"
    "  group_id INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,"
    "  cap_w REAL NOT NULL CHECK (cap_w > 0),"
    "  power_w REAL NOT NULL CHECK (power_w > 0),"
    "  tput REAL NOT NULL CHECK (tput > 0),"
    "  power_sd REAL CHECK (power_sd >= 0),"
    "  tput_sd REAL CHECK (tput_sd >= 0),"
    "  source_line INTEGER,"
    "  UNIQUE (group_id, cap_w)"
    ");"
    "CREATE TABLE run_extras ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  position INTEGER NOT NULL,"
    "  name TEXT NOT NULL,"
    "  value TEXT NOT NULL,"
    "  PRIMARY KEY (run_id, name)"
    ") WITHOUT ROWID;"
    "CREATE TABLE metrics ("
    "  id INTEGER PRIMARY KEY,"
    "  name TEXT NOT NULL UNIQUE CHECK (name <> '')"
    ");"
    "CREATE TABLE samples ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  metric_id INTEGER NOT NULL REFERENCES metrics(id),"
    "  gpu INTEGER NOT NULL CHECK (gpu >= 0),"
    "  time_s REAL NOT NULL,"
    "  value REAL NOT NULL"
    ");"
    "CREATE INDEX samples_by_run ON samples (run_id, metric_id, gpu, time_s);";

const struct pflex__store_migration pflex__store_migrations[] = {
    {1, "groups, runs, run extras, telemetry samples", schema_v1},
};
const size_t pflex__store_nmigrations =
    sizeof pflex__store_migrations / sizeof pflex__store_migrations[0];
