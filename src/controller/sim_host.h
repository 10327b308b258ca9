/* The simulated cluster's agent host: one child process that runs many real
 * pflexd agents (src/agent, struct agent), each on its own loopback port
 * with its own state directory, on the sim backend (src/gpu/sim.c: the
 * twin's job, NVML's one-second power average and 100 ms limit lag), all in
 * one poll loop, so that 1,000 nodes fit on two cores. The parent (the
 * cluster) drives it over a pipe with one command a line:
 *   job N    the job on node N ended: its GPUs idle and the next one loads
 *            (pflex_gpu_job_start: the sim's warmup then startup phases)
 *   stall N  node N's agent stops answering and stepping (as SIGSTOP)
 *   cont N   and resumes
 *   kill N   node N's agent's HTTP listener closes and it stops (as kill -9:
 *            the GPUs keep their caps, nothing runs the leases)
 *   heal N   it listens again and resumes; expired leases then fall back
 *            (what a restarted pflexd's reconcile does)
 * On SIGTERM it releases every cap, counts the GPUs not back at their
 * default limit into <dir>/host.json ("wrong_limits_final") and exits. */
#ifndef CTL_SIM_HOST_H
#define CTL_SIM_HOST_H

#include <stddef.h>
#include <sys/types.h>

struct sim_host_node {
  char sim_job[512]; /* the sim backend's spec for this node */
  int port;          /* HTTP and StatsD (UDP) */
};

struct sim_host_cfg {
  const char *dir;        /* work directory: agentNNNN state dirs, host.log, host.json */
  const char *token_file; /* the agents' bearer token */
  double hz;              /* samples per second */
  size_t n;
  const struct sim_host_node *nodes;
};

/* Forks the host; *ret_cmd_fd receives the write end of its command pipe.
 * Returns the pid or -errno. */
pid_t sim_host_spawn(const struct sim_host_cfg *c, int *ret_cmd_fd);

/* Sends one command ("job", "stall", "cont", "kill", "heal") for node i. */
int sim_host_command(int cmd_fd, const char *verb, size_t i);

#endif
