/* `pflex version`: prints the version. */
#include <stdio.h>

#include "cli/commands.h"

static int run(int argc, char **argv) {
  (void)argc;
  (void)argv;
  printf("pflex %s\n", PFLEX_VERSION);
  return PFLEX_EXIT_OK;
}

const struct pflex_cmd pflex_cmd_version = {
    .name = "version", .run = run, .summary = "print the version", .usage = "pflex version"};
