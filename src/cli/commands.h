/* The pflex program's commands: one cmd_<name>.c per command, each exporting
 * one struct pflex_cmd that main.c lists in its table. */
#ifndef PFLEX_CLI_COMMANDS_H
#define PFLEX_CLI_COMMANDS_H

#include <stdbool.h>

struct cli_spec;

struct pflex_cmd {
  const char *name;
  int (*run)(int argc, char **argv); /* argv[0] is the command name; returns the exit status */
  const char *summary;               /* one line for `pflex help` */
  /* `pflex help <command>`: the option tables (cli/options.h) of the command,
   * or of each subcommand, ended by NULL; help prints each in turn. A command
   * with subcommands also gives usage, its overall usage line. Without specs,
   * usage is the full help text. */
  const struct cli_spec *const *specs;
  const char *usage;
  /* The command hands its arguments to another program, which prints its
   * own help: `--help` and `pflex help <command>` go to run(). */
  bool own_help;
};

/* Exit statuses (README.md, "What it does"). */
enum { PFLEX_EXIT_OK = 0, PFLEX_EXIT_FAIL = 1, PFLEX_EXIT_USAGE = 2 };

/* Add each new command here and in main.c's table. */
extern const struct pflex_cmd pflex_cmd_version;
extern const struct pflex_cmd pflex_cmd_gpus;
extern const struct pflex_cmd pflex_cmd_cap;
extern const struct pflex_cmd pflex_cmd_sweep;
extern const struct pflex_cmd pflex_cmd_twin;
extern const struct pflex_cmd pflex_cmd_import;
extern const struct pflex_cmd pflex_cmd_export;
extern const struct pflex_cmd pflex_cmd_pfi;
extern const struct pflex_cmd pflex_cmd_stats;
extern const struct pflex_cmd pflex_cmd_aggregate;
extern const struct pflex_cmd pflex_cmd_fit;
extern const struct pflex_cmd pflex_cmd_predict;
extern const struct pflex_cmd pflex_cmd_ablation;
extern const struct pflex_cmd pflex_cmd_allocate;
extern const struct pflex_cmd pflex_cmd_study;
extern const struct pflex_cmd pflex_cmd_sim_cluster;

#endif
