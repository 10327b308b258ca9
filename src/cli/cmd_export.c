/* `pflex export`: writes stored runs as a runs CSV or runs JSON, to a file
 * (atomically) or to standard output; `--list` lists the stored groups. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/commands.h"
#include "cli/util.h"
#include "pflex/runs_json.h"
#include "pflex/store.h"

struct args {
  const char *db, *out;
  struct cli_strings groups;
  enum cli_format format;
  bool json, csv, list;
};

#define A struct args
static const struct cli_option options[] = {
    {CLI_STRING("db", "FILE", A, db,
                "store to read (default: $PFLEX_DB, else ./pflex.db); must exist")},
    {CLI_STRINGS("group", "NAME", A, groups,
                 "export only group NAME; repeat for several (default: every group)")},
    {CLI_ENUM("format", "csv|json", A, format, cli_format_choices,
              "output format (default: json when --out ends in .json, else csv)")},
    {CLI_FLAG("json", A, json, "the same as --format json")},
    {CLI_FLAG("csv", A, csv, "the same as --format csv")},
    {CLI_STRING("out", "FILE", A, out, "write to FILE atomically (default: standard output)")},
    {CLI_FLAG("list", A, list, "list the stored groups instead (a table; JSON with --json)")},
    {CLI_END}};
#undef A

static const struct cli_spec spec = {.name = "export",
                                     .usage = "pflex export [options]",
                                     .about = "Writes stored runs as a runs CSV or JSON "
                                              "(docs/store.md).",
                                     .options = options};

/* The output format: --format, --json and --csv must agree; else by --out's name. */
static int output_format(const struct args *a, bool *ret_json) {
  enum cli_format f = a->format;
  if ((a->json && f == CLI_FORMAT_CSV) || (a->csv && f == CLI_FORMAT_JSON) || (a->json && a->csv)) {
    cli_usage_error(&spec, "--json, --csv and --format name different formats");
    return -EINVAL;
  }
  if (a->json) f = CLI_FORMAT_JSON;
  if (a->csv) f = CLI_FORMAT_CSV;
  if (f == CLI_FORMAT_NONE)
    f = a->out && cli_ends_with(a->out, ".json") ? CLI_FORMAT_JSON : CLI_FORMAT_CSV;
  *ret_json = f == CLI_FORMAT_JSON;
  return 0;
}

static int write_csv_stdout(const struct pflex_runset *set) {
  int err = pflex_runs_write_csv_stream(set, stdout);
  if (!err && fflush(stdout)) err = -EIO;
  return err;
}

static int list_groups(struct pflex_store *store, bool json) {
  struct pflex_store_group *g;
  size_t n;
  int err = pflex_store_list_groups(store, &g, &n);
  if (err) return err;
  if (json) {
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++) {
      json_t *o = json_pack("{s:s, s:s, s:i, s:s, s:I, s:I, s:s?, s:s?, s:s?, s:s?, s:s?, s:s?}",
                            "name", g[i].name, "gpu", g[i].gpu, "gpus", g[i].gpus, "unit",
                            pflex_tput_unit_key(g[i].unit), "runs", (json_int_t)g[i].runs,
                            "samples", (json_int_t)g[i].samples, "model", g[i].model, "arch",
                            g[i].arch ? pflex_arch_name(g[i].arch) : NULL, "task",
                            g[i].task ? pflex_task_name(g[i].task) : NULL, "set", g[i].set,
                            "source", g[i].source, "imported_at", g[i].imported_at);
      if (!o || json_array_append_new(arr, o)) err = -ENOMEM;
    }
    if (!arr) err = -ENOMEM;
    if (!err)
      err = cli_print_json(arr, 0);
    else
      json_decref(arr);
  } else {
    printf("%-32s %-6s %4s %-14s %5s %8s  %-20s %s\n", "group", "gpu", "gpus", "unit", "runs",
           "samples", "imported (UTC)", "source");
    for (size_t i = 0; i < n; i++)
      printf("%-32s %-6s %4d %-14s %5zu %8zu  %-20s %s\n", g[i].name, g[i].gpu, g[i].gpus,
             pflex_tput_unit_name(g[i].unit), g[i].runs, g[i].samples, g[i].imported_at,
             g[i].source ? g[i].source : "-");
  }
  pflex_store_groups_free(g, n);
  return err;
}

static int run(int argc, char **argv) {
  struct args a = {.db = cli_default_db(), .format = CLI_FORMAT_NONE};
  struct cli_parsed p;
  bool json;
  int status = PFLEX_EXIT_USAGE;
  int perr = cli_parse(&spec, argc, argv, &a, &p);
  if (perr) {
    status = cli_parse_status(perr);
    goto out;
  }
  if (output_format(&a, &json)) goto out;
  const char *db = a.db, *out = a.out;
  bool list = a.list;

  status = PFLEX_EXIT_FAIL;
  fprintf(stderr, "note: using store '%s'\n", db);
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  struct pflex_store *store = NULL;
  int err = pflex_store_open(db, PFLEX_STORE_READONLY, &store, &diag);
  if (err) {
    cli_error_diag("cannot open store", &diag, err);
    goto out;
  }
  if (list) {
    err = list_groups(store, json);
    if (err) cli_error("cannot list the groups of '%s': %s", db, pflex_strerror(err));
    pflex_store_close(store);
    if (!err) status = PFLEX_EXIT_OK;
    goto out;
  }
  struct pflex_runset set;
  pflex_runset_init(&set);
  err = pflex_store_get_runs(store, a.groups.v, a.groups.n, &set, &diag);
  pflex_store_close(store);
  if (err) {
    cli_error_diag("cannot export from", &diag, err);
    goto out;
  }
  if (set.n == 0) {
    cli_error("store '%s' holds no runs", db);
    pflex_runset_release(&set);
    goto out;
  }
  if (json && !out) {
    char *text;
    err = pflex_runs_to_json(&set, &text);
    if (!err) {
      if (fputs(text, stdout) == EOF || fflush(stdout)) err = -EIO;
      free(text);
    }
  } else if (json) {
    err = pflex_runs_write_json(&set, out);
  } else if (out) {
    err = pflex_runs_write_csv(&set, out);
  } else {
    err = write_csv_stdout(&set);
  }
  if (err) {
    cli_error("cannot write '%s': %s", out ? out : "standard output", pflex_strerror(err));
  } else {
    if (!pflex_tput_unit_absolute(set.unit))
      fprintf(stderr, "note: throughput is %s: only ratios are meaningful\n",
              pflex_tput_unit_name(set.unit));
    if (out) fprintf(stderr, "wrote %zu runs to '%s'\n", set.n, out);
    status = PFLEX_EXIT_OK;
  }
  pflex_runset_release(&set);
out:
  cli_release(&spec, &a);
  return status;
}

const struct pflex_cmd pflex_cmd_export = {.name = "export",
                                           .run = run,
                                           .summary =
                                               "write stored runs as a runs CSV or JSON file",
                                           .specs = (const struct cli_spec *const[]){&spec, NULL}};
