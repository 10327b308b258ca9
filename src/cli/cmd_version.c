/* `pflex version`: prints the version. */
#include <stdio.h>

#include "cli/commands.h"
#include "cli/options.h"

static const struct cli_spec spec = {.name = "version",
                                     .usage = "pflex version",
                                     .about = "Prints the version of pflex."};

static int run(int argc, char **argv) {
  struct cli_parsed p;
  int err = cli_parse(&spec, argc, argv, NULL, &p);
  if (err) return cli_parse_status(err);
  printf("pflex %s\n", PFLEX_VERSION);
  return PFLEX_EXIT_OK;
}

const struct pflex_cmd pflex_cmd_version = {.name = "version",
                                            .run = run,
                                            .summary = "print the version",
                                            .specs = (const struct cli_spec *const[]){&spec, NULL}};
