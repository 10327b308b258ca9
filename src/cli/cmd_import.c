/* `pflex import`: reads a runs CSV (or runs JSON) and stores its groups in the
 * SQLite store, all or nothing (docs/store.md). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/commands.h"
#include "cli/util.h"
#include "pflex/runs_json.h"
#include "pflex/store.h"

static const char usage[] =
    "pflex import RUNS.csv|RUNS.json [options]\n"
    "Stores the sweep groups of a runs file in the store, all or nothing.\n"
    "  --db FILE          store file (default: $PFLEX_DB, else ./pflex.db); created if missing\n"
    "  --replace          replace groups that are already stored (their samples go too)\n"
    "  --append           add the runs to groups that are already stored (same configuration)\n"
    "  --unit UNIT        throughput column to read: tokens, samples, steps, step-time\n"
    "  --tput-column NAME read the throughput from column NAME\n"
    "  --format csv|json  input format (default: json when the name ends in .json, else csv)\n"
    "  --json             print the summary as JSON\n"
    "Without --replace or --append, a group that is already stored fails the import.";

static int run(int argc, char **argv) {
  static const struct option opts[] = {{"db", required_argument, NULL, 'd'},
                                       {"replace", no_argument, NULL, 'r'},
                                       {"append", no_argument, NULL, 'a'},
                                       {"unit", required_argument, NULL, 'u'},
                                       {"tput-column", required_argument, NULL, 't'},
                                       {"format", required_argument, NULL, 'f'},
                                       {"json", no_argument, NULL, 'j'},
                                       {NULL, 0, NULL, 0}};
  const char *db = cli_default_db();
  const char *format = NULL;
  bool json = false;
  int nmodes = 0;
  enum pflex_store_put_mode mode = PFLEX_STORE_REJECT_EXISTING;
  struct pflex_runs_read_opts ropts = {.unit = PFLEX_TPUT_TOKENS_PER_S};
  int c;
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
    case 'd': db = optarg; break;
    case 'r':
      mode = PFLEX_STORE_REPLACE_GROUP;
      nmodes++;
      break;
    case 'a':
      mode = PFLEX_STORE_APPEND;
      ropts.partial_groups = true; /* the stored group already has its uncapped run */
      nmodes++;
      break;
    case 'u':
      if (cli_parse_unit_option(optarg, &ropts.unit)) return PFLEX_EXIT_USAGE;
      break;
    case 't': ropts.tput_column = optarg; break;
    case 'f':
      if (cli_parse_format(optarg, &format)) return PFLEX_EXIT_USAGE;
      break;
    case 'j': json = true; break;
    default: cli_bad_option("import", argv[optind - 1]); return PFLEX_EXIT_USAGE;
    }
  }
  if (nmodes > 1) {
    cli_error("import: --replace and --append exclude each other");
    return PFLEX_EXIT_USAGE;
  }
  if (optind != argc - 1) {
    cli_error("import: expected one runs file; see 'pflex help import'");
    return PFLEX_EXIT_USAGE;
  }
  const char *path = argv[optind];
  if (!format) format = cli_ends_with(path, ".json") ? "json" : "csv";

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
  err = pflex_store_put_runs(store, &set, mode, &res, &diag);
  pflex_store_close(store);
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
    cli_print_json(o, 0); /* the import is done: a lost report does not undo it */
  } else {
    printf("imported %zu runs in %zu groups (%zu new, %zu replaced, %zu appended to) from '%s' "
           "into '%s'\n",
           res.runs, ngroups, res.groups_new, res.groups_replaced, res.groups_appended, path, db);
  }
  pflex_runset_release(&set);
  return PFLEX_EXIT_OK;
}

const struct pflex_cmd pflex_cmd_import = {.name = "import",
                                           .run = run,
                                           .summary = "store a runs CSV or JSON file in the store",
                                           .usage = usage};
