/* A store's packed extra columns (schema 2, src/io/store.c and
 * store_extras.c) as another tool or a hand edit may leave them: the input,
 * split at its first newline, becomes extra_columns.names and runs.extras of
 * a stored run (written past the schema's CHECKs), then read back through
 * pflex_store_get_runs as pflex export does. Reading either fails with
 * -PFLEX_E_SCHEMA (or -ENOMEM) or gives the run with one extra column per
 * name, every cell a string; never a crash. Without a newline the input is
 * the cells and the names stay ["a","b"]. */
#include "fuzz.h"

#include <errno.h>
#include <sqlite3.h>

#include "pflex/runs.h"
#include "pflex/store.h"

/* fuzz-args: -max_len=4096 */
/* fuzz-link: PkgConfig::SQLITE */

static char dir[64];
static char db_path[128];
static struct pflex_store *store;
static sqlite3 *raw; /* the editing connection */
static sqlite3_stmt *set_names, *set_cells;

static void cleanup(void) {
  sqlite3_finalize(set_names);
  sqlite3_finalize(set_cells);
  sqlite3_close(raw);
  pflex_store_close(store);
  char p[160];
  snprintf(p, sizeof p, "%s-journal", db_path);
  unlink(p);
  unlink(db_path);
  rmdir(dir);
}

/* One group, one run with extras a and b: extra_columns row 1, runs row 1. */
static int make_store(void) {
  if (pflex_store_open(db_path, PFLEX_STORE_CREATE, &store, NULL) != 0) return -1;
  struct pflex_runset set;
  pflex_runset_init(&set);
  struct pflex_run r = {.group = "g", .gpu = "H200", .gpus = 8, .cap_w = 700, .power_w = 5000,
                        .tput = 100};
  int err = pflex_runset_append(&set, &r);
  if (!err) err = pflex_runset_set_extra(&set, 0, "a", "1");
  if (!err) err = pflex_runset_set_extra(&set, 0, "b", "2");
  if (!err) err = pflex_store_put_runs(store, &set, PFLEX_STORE_REJECT_EXISTING, NULL, NULL);
  pflex_runset_release(&set);
  return err;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/pflex-fuzz-XXXXXX", tmp && *tmp && strlen(tmp) < 40 ? tmp : "/tmp");
  snprintf(db_path, sizeof db_path, "%s/pflex.db", mkdtemp(dir) ? dir : "/nonexistent");
  atexit(cleanup);
  if (make_store() != 0 || sqlite3_open(db_path, &raw) != SQLITE_OK ||
      sqlite3_exec(raw,
                   "PRAGMA ignore_check_constraints = ON; PRAGMA synchronous = OFF;"
                   " PRAGMA journal_mode = MEMORY",
                   NULL, NULL, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(raw, "UPDATE extra_columns SET names = ?", -1, &set_names, NULL) ||
      sqlite3_prepare_v2(raw, "UPDATE runs SET extras = ?", -1, &set_cells, NULL)) {
    fprintf(stderr, "fuzz_store: cannot make a store in %s\n", dir);
    exit(1);
  }
  return 0;
}

static void edit(sqlite3_stmt *st, const uint8_t *text, size_t n) {
  sqlite3_bind_text(st, 1, (const char *)text, (int)n, SQLITE_TRANSIENT);
  fuzz_check(sqlite3_step(st) == SQLITE_DONE);
  sqlite3_reset(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nl = memchr(data, '\n', size);
  static const char two[] = "[\"a\",\"b\"]";
  if (nl) {
    edit(set_names, data, (size_t)(nl - data));
    edit(set_cells, nl + 1, size - (size_t)(nl - data) - 1);
  } else {
    edit(set_names, (const uint8_t *)two, sizeof two - 1);
    edit(set_cells, data, size);
  }
  struct pflex_runset got;
  struct pflex_diag d;
  int err = pflex_store_get_runs(store, NULL, 0, &got, &d);
  fuzz_check(err == 0 || err == -PFLEX_E_SCHEMA || err == -ENOMEM);
  if (err == -PFLEX_E_SCHEMA) fuzz_check(strstr(d.message, "runs.id 1") != NULL);
  if (err == 0) {
    fuzz_check(got.n == 1);
    for (size_t c = 0; c < got.nextra; c++)
      fuzz_check(got.extra_names[c] != NULL && got.runs[0].extra[c] != NULL);
    pflex_runset_release(&got);
  }
  return 0;
}
