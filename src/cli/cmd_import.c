/* `pflex import`: reads a runs CSV (or runs JSON) and stores its groups in the
 * SQLite store, all or nothing (docs/store.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/util.h"
#include "pflex/runs_json.h"
#include "pflex/runs_provenance.h"
#include "pflex/store.h"

struct args {
  const char *db, *tput_column;
  bool replace, append, json, migrate;
  enum pflex_tput_unit unit;
  enum cli_format format;
};

#define A struct args
static const struct cli_option options[] = {
    {CLI_STRING("db", "FILE", A, db,
                "store file (default: $PFLEX_DB, else ./pflex.db); created if missing")},
    {CLI_FLAG("replace", A, replace,
              "replace groups that are already stored (their samples go too)")},
    {CLI_FLAG("append", A, append,
              "add the runs to groups that are already stored (same configuration)")},
    {CLI_ENUM_FN("unit", "UNIT", A, unit, cli_unit_name,
                 "throughput column to read: tokens, samples, steps, step-time")},
    {CLI_STRING("tput-column", "NAME", A, tput_column, "read the throughput from column NAME")},
    {CLI_ENUM("format", "csv|json", A, format, cli_format_choices,
              "input format (default: json when the name ends in .json, else csv)")},
    {CLI_FLAG("json", A, json, "print the summary as JSON")},
    {CLI_FLAG("migrate", A, migrate,
              "no runs file: bring the store's schema up to this pflex's and say so "
              "(commands that only read a store refuse an older one)")},
    {CLI_END}};
#undef A

static const struct cli_spec spec = {
    .name = "import",
    .usage = "pflex import RUNS.csv|RUNS.json [options]\n       pflex import --migrate [--db FILE]",
    .about = "Stores the sweep groups of a runs file in the store, all or nothing "
             "(docs/store.md).",
    .options = options,
    .operands = "runs file",
    .min_operands = 0,
    .max_operands = 1,
    .exclusive =
        (const char *const[]){"replace append", "migrate replace", "migrate append", "migrate unit",
                              "migrate tput-column", "migrate format", NULL},
    .notes = "Without --replace or --append, a group that is already stored fails the import."};

/* --migrate: opens the store for writing (which applies every missing
 * migration, each in its own transaction) and reports its version. A
 * missing file is an error: there is nothing to migrate. */
static int migrate(const char *db, bool json) {
  fprintf(stderr, "note: using store '%s'\n", db);
  struct pflex_store *store = NULL;
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  int version = 0, err = pflex_store_open(db, 0, &store, &diag);
  if (!err) err = pflex_store_schema_version(store, &version);
  pflex_store_close(store);
  if (err) {
    cli_error_diag("cannot migrate store", &diag, err);
    return PFLEX_EXIT_FAIL;
  }
  if (json) {
    cli_print_json(json_pack("{s:s, s:i}", "db", db, "schema_version", version), 0);
  } else {
    printf("store '%s' is at schema version %d\n", db, version);
  }
  return PFLEX_EXIT_OK;
}

static int run(int argc, char **argv) {
  struct args a = {
      .db = cli_default_db(), .unit = PFLEX_TPUT_TOKENS_PER_S, .format = CLI_FORMAT_NONE};
  struct cli_parsed p;
  int perr = cli_parse(&spec, argc, argv, &a, &p);
  if (perr) return cli_parse_status(perr);
  const char *db = a.db;
  bool json = a.json;
  if (a.migrate && p.noperands) {
    cli_usage_error(&spec, "--migrate takes no runs file");
    return PFLEX_EXIT_USAGE;
  }
  if (a.migrate) return migrate(db, json);
  if (!p.noperands) {
    cli_usage_error(&spec, "missing the runs file (or --migrate, to migrate the store alone)");
    return PFLEX_EXIT_USAGE;
  }
  enum pflex_store_put_mode mode = a.replace  ? PFLEX_STORE_REPLACE_GROUP
                                   : a.append ? PFLEX_STORE_APPEND
                                              : PFLEX_STORE_REJECT_EXISTING;
  /* With --append the stored group already has its uncapped run; without,
   * a group must hold it (a partial file must not replace a whole group). */
  struct pflex_runs_read_opts ropts = {.unit = a.unit,
                                       .tput_column = a.tput_column,
                                       .require_uncapped = true,
                                       .partial_groups = a.append};
  const char *path = p.operands[0];
  const char *format = a.format == CLI_FORMAT_JSON    ? "json"
                       : a.format == CLI_FORMAT_CSV   ? "csv"
                       : cli_ends_with(path, ".json") ? "json"
                                                      : "csv";

  struct pflex_runset set;
  pflex_runset_init(&set);
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  int err;
  if (strcmp(format, "json") == 0) {
    err = pflex_runs_read_json(path, &set, &diag);
    /* The same group rules as a CSV (the CSV reader applies them itself). */
    if (!err) err = pflex_runset_check_groups(&set, mode == PFLEX_STORE_APPEND, &diag);
    if (err) cli_error_diag("cannot read", &diag, err);
  } else {
    err = cli_load_runs(path, &ropts, &set);
  }
  if (err) {
    pflex_runset_release(&set); /* a JSON file read but refused by the group rules */
    return PFLEX_EXIT_FAIL;
  }
  if (set.n == 0) {
    cli_error("'%s' holds no runs; nothing to import", path);
    pflex_runset_release(&set);
    return PFLEX_EXIT_FAIL;
  }

  fprintf(stderr, "note: using store '%s'\n", db);
  struct pflex_store *store = NULL;
  err = pflex_store_open(db, PFLEX_STORE_CREATE, &store, &diag);
  if (err) {
    cli_error_diag("cannot open store", &diag, err);
    pflex_runset_release(&set);
    return PFLEX_EXIT_FAIL;
  }
  struct pflex_store_put_result res;
  struct cli_progress pr;
  cli_progress_init(&pr, "import", false);
  struct pflex_progress hook = cli_progress_hook(&pr);
  pflex_store_set_progress(store, &hook);
  err = pflex_store_put_runs(store, &set, mode, &res, &diag);
  pflex_store_close(store);
  cli_progress_clear(&pr);
  if (err) {
    cli_error_diag("cannot import", &diag, err);
    fprintf(stderr, "nothing was imported into '%s'%s\n", db,
            err == -EEXIST && mode == PFLEX_STORE_REJECT_EXISTING &&
                    strcmp(diag.column, "group") == 0 /* not a cap twice in the file */
                ? "; --replace replaces stored groups, --append adds runs to them"
                : "");
    pflex_runset_release(&set);
    return PFLEX_EXIT_FAIL;
  }
  size_t ngroups = res.groups_new + res.groups_replaced + res.groups_appended;
  if (json) {
    json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "db", db, "source", path, "groups",
                          (json_int_t)ngroups, "new", (json_int_t)res.groups_new, "replaced",
                          (json_int_t)res.groups_replaced, "appended",
                          (json_int_t)res.groups_appended, "runs", (json_int_t)res.runs);
    if (o && cli_json_provenance(o, pflex_runs_provenance(&set, NULL, 0))) json_decref(o), o = NULL;
    cli_print_json(o, 0); /* the import is done: a lost report does not undo it */
  } else {
    printf("imported %zu runs in %zu groups (%zu new, %zu replaced, %zu appended to) from '%s' "
           "into '%s'; provenance %s\n",
           res.runs, ngroups, res.groups_new, res.groups_replaced, res.groups_appended, path, db,
           pflex_provenance_name(pflex_runs_provenance(&set, NULL, 0)));
  }
  pflex_runset_release(&set);
  return PFLEX_EXIT_OK;
}

const struct pflex_cmd pflex_cmd_import = {.name = "import",
                                           .run = run,
                                           .summary = "store a runs CSV or JSON file in the store",
                                           .specs = (const struct cli_spec *const[]){&spec, NULL}};
