#include "controller/sim_cluster.h"

#include <stdio.h>

int ctl_sim_cluster_main(int argc, char **argv) {
  fprintf(stderr, "error: sim-cluster: not built yet\n");
  return 1;
}
