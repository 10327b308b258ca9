/* `pflex-controller sim-cluster`: a simulated cluster of real pflexd agents
 * on loopback to prove the controller (docs/controller.md). */
#ifndef CTL_SIM_CLUSTER_H
#define CTL_SIM_CLUSTER_H

int ctl_sim_cluster_main(int argc, char **argv);

#endif
