/* The pflex program: a table of commands, `pflex help [command]`, --version. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "cli/commands.h"
#include "cli/options.h"

/* In the order of the data's path: measure, characterize, predict, allocate,
 * enforce (docs/design.md). */
static const struct pflex_cmd *const commands[] = {
    &pflex_cmd_study,   &pflex_cmd_pfi,      &pflex_cmd_stats,    &pflex_cmd_aggregate,
    &pflex_cmd_import,  &pflex_cmd_export,   &pflex_cmd_twin,     &pflex_cmd_fit,
    &pflex_cmd_predict, &pflex_cmd_ablation, &pflex_cmd_allocate, &pflex_cmd_gpus,
    &pflex_cmd_cap,     &pflex_cmd_sweep,    &pflex_cmd_sim_cluster, &pflex_cmd_version,
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const struct pflex_cmd *find(const char *name) {
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (strcmp(commands[i]->name, name) == 0) return commands[i];
  return NULL;
}

static void overview(FILE *out) {
  fprintf(out, "usage: pflex <command> [options]\n\n"
               "pflex makes GPU training clusters power-flexible: it measures, predicts and\n"
               "allocates power by each job's Power Flexibility Index (PFI).\n\ncommands:\n");
  for (size_t i = 0; i < NCOMMANDS; i++)
    fprintf(out, "  %-12s %s\n", commands[i]->name, commands[i]->summary);
  fprintf(out, "\n'pflex help <command>' describes one command.\n");
}

/* Output to a full disk or a closed pipe fails only when stdio flushes: check
 * once here for every command, so that a truncated table or JSON never exits 0. */
static int finish(int status) {
  errno = 0;
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "error: cannot write to standard output: %s\n",
            errno ? strerror(errno) : "write error");
    return status == PFLEX_EXIT_OK ? PFLEX_EXIT_FAIL : status;
  }
  return status;
}

/* `pflex help <command>`: generated from the command's option tables. */
static void command_help(FILE *out, const struct pflex_cmd *c) {
  if (!c->specs) {
    fprintf(out, "usage: %s\n", c->usage);
    return;
  }
  if (!c->specs[1]) {
    cli_help(out, c->specs[0], 0);
    return;
  }
  fprintf(out, "usage: %s\n", c->usage);
  for (size_t i = 0; c->specs[i]; i++) {
    fputc('\n', out);
    cli_help(out, c->specs[i], 2);
  }
}

static int help(int argc, char **argv) {
  if (argc < 3) {
    overview(stdout);
    return finish(PFLEX_EXIT_OK);
  }
  const struct pflex_cmd *c = find(argv[2]);
  if (!c) {
    fprintf(stderr, "error: unknown command '%s'\ntry 'pflex help'\n", argv[2]);
    return PFLEX_EXIT_USAGE;
  }
  if (c->own_help) {
    char *args[] = {(char *)c->name, "--help", NULL};
    return finish(c->run(2, args));
  }
  command_help(stdout, c);
  return finish(PFLEX_EXIT_OK);
}

int main(int argc, char **argv) {
  /* The program's choice, once: GSL reports errors as return codes, which the
   * library checks, instead of aborting (the library never sets the handler). */
  gsl_set_error_handler_off();
  if (argc < 2) {
    overview(stderr);
    return PFLEX_EXIT_USAGE;
  }
  if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
    return help(argc, argv);
  if (strcmp(argv[1], "--version") == 0) argv[1] = "version";
  const struct pflex_cmd *c = find(argv[1]);
  if (!c) {
    fprintf(stderr, "error: unknown command '%s'\ntry 'pflex help'\n", argv[1]);
    return PFLEX_EXIT_USAGE;
  }
  for (int i = 2; i < argc && !c->own_help; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      command_help(stdout, c);
      return finish(PFLEX_EXIT_OK);
    }
  return finish(c->run(argc - 1, argv + 1));
}
