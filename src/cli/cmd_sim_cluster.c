/* `pflex sim-cluster`: the simulated cluster of issue 10 under the name the
 * issue gives it. The simulation belongs to the controller (it starts real
 * pflexd agents and a real pflex-controller, src/controller/sim_cluster.c),
 * so this command hands every argument to `pflex-controller sim-cluster`,
 * installed beside pflex, rather than linking the controller into pflex:
 * the same options, output and exit status, one implementation. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"

/* $PFLEX_CONTROLLER, else pflex-controller in this program's directory. */
static void controller_path(char *buf, size_t size) {
  const char *env = getenv("PFLEX_CONTROLLER");
  if (env && *env) {
    snprintf(buf, size, "%s", env);
    return;
  }
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  self[n > 0 ? n : 0] = '\0';
  char *slash = strrchr(self, '/');
  if (slash) *slash = '\0';
  snprintf(buf, size, "%s/pflex-controller", slash ? self : ".");
}

static int run(int argc, char **argv) {
  char path[PATH_MAX + 32];
  controller_path(path, sizeof path);
  char **args = calloc((size_t)argc + 2, sizeof *args);
  if (!args) {
    fprintf(stderr, "error: sim-cluster: out of memory\n");
    return PFLEX_EXIT_FAIL;
  }
  args[0] = "pflex-controller";
  args[1] = "sim-cluster";
  for (int i = 1; i < argc; i++)
    args[i + 1] = argv[i];
  fflush(NULL);
  execv(path, args);
  int e = errno;
  free(args);
  fprintf(stderr,
          "error: sim-cluster: cannot run '%s': %s (it is installed beside pflex; "
          "PFLEX_CONTROLLER names another)\n",
          path, strerror(e));
  return PFLEX_EXIT_FAIL;
}

const struct pflex_cmd pflex_cmd_sim_cluster = {
    .name = "sim-cluster",
    .run = run,
    .summary = "prove pflex-controller on a simulated cluster of real agents",
    .own_help = true,
    .usage = "pflex sim-cluster [OPTIONS] (pflex sim-cluster --help)"};
