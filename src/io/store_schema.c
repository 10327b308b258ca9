/* The store's schema as an ordered list of migrations.
 *
 * Policy (docs/store.md): a migration, once released, is never edited; a
 * schema change is a new entry at the end with the next version number.
 * store.c applies each missing migration in its own transaction and records
 * it in schema_version, so a store is always at exactly one known version.
 *
 * Absent optional values are NULL. A group's configuration lives in groups,
 * the per-run measurements in runs. Every other column of a run (telemetry
 * aggregates, unknown columns) is kept verbatim: in version 1 as one
 * run_extras row per cell with its position, from version 2 packed into the
 * run's row (runs.extras, a JSON array of strings) beside the list of column
 * names it follows (extra_columns, a JSON array, one row per distinct list),
 * so that an export reproduces the column order. Samples name their metric
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

/* Version 2: a run's extra cells in one JSON array on its own row instead of
 * one run_extras row each (3.4 M rows at 40,000 groups were most of an
 * import). extras and extra_columns_id are both NULL for a run without
 * extras. No CHECK parses extras (json_valid would parse every run's cells a
 * second time per import); pflex_store_get_runs refuses a malformed one. The
 * v1 rows are converted per run: an aggregate over a subquery with ORDER BY
 * is not flattened (SQLite's flattener rule: an aggregate outer query takes
 * no ordered subquery), so json_group_array sees the cells in position order
 * (tests/unit/test_store.c checks it on a v1 store). */
static const char schema_v2[] =
    "CREATE TABLE extra_columns ("
    "  id INTEGER PRIMARY KEY,"
    "  names TEXT NOT NULL UNIQUE CHECK (json_valid(names) AND json_type(names) = 'array')"
    ");"
    "ALTER TABLE runs ADD COLUMN extra_columns_id INTEGER REFERENCES extra_columns(id);"
    "ALTER TABLE runs ADD COLUMN extras TEXT"
    "  CHECK ((extras IS NULL) = (extra_columns_id IS NULL));"
    "CREATE TEMP TABLE v1_extras (run_id INTEGER PRIMARY KEY, names TEXT, cells TEXT);"
    "INSERT INTO v1_extras (run_id, names, cells)"
    "  SELECT r.id,"
    "   (SELECT json_group_array(name) FROM"
    "     (SELECT e.name FROM run_extras e WHERE e.run_id = r.id ORDER BY e.position)),"
    "   (SELECT json_group_array(value) FROM"
    "     (SELECT e.value FROM run_extras e WHERE e.run_id = r.id ORDER BY e.position))"
    "  FROM runs r WHERE EXISTS (SELECT 1 FROM run_extras e WHERE e.run_id = r.id);"
    "INSERT OR IGNORE INTO extra_columns (names) SELECT names FROM v1_extras ORDER BY run_id;"
    "UPDATE runs SET"
    "  extra_columns_id = (SELECT c.id FROM v1_extras v JOIN extra_columns c ON c.names = v.names"
    "                      WHERE v.run_id = runs.id),"
    "  extras = (SELECT v.cells FROM v1_extras v WHERE v.run_id = runs.id)"
    "  WHERE id IN (SELECT run_id FROM v1_extras);"
    "DROP TABLE v1_extras;"
    "DROP TABLE run_extras;";

const struct pflex__store_migration pflex__store_migrations[] = {
    {1, "groups, runs, run extras, telemetry samples", schema_v1},
    {2, "run extras packed: runs.extras (JSON array) and extra_columns (their names)", schema_v2},
};
const size_t pflex__store_nmigrations =
    sizeof pflex__store_migrations / sizeof pflex__store_migrations[0];
