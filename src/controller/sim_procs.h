/* Child processes of the simulated cluster (pflexd agents, the controller):
 * started with their output in a log file, killed with their parent
 * (PR_SET_PDEATHSIG), and every one still running killed on the way out. */
#ifndef CTL_SIM_PROCS_H
#define CTL_SIM_PROCS_H

#include <stdbool.h>
#include <sys/types.h>

/* Starts argv[0] with argv, env_extra ("KEY=VALUE" or NULL) added to the
 * environment, stdout and stderr appended to log. Returns the pid or -errno. */
pid_t sim_spawn(char *const argv[], const char *env_extra, const char *log);

/* Sends sig and, for SIGKILL/SIGTERM, waits for it (at most wait_s). */
void sim_signal(pid_t pid, int sig, double wait_s);

/* True when pid has not exited (reaps it if it has). */
bool sim_alive(pid_t pid);

/* A TCP port on 127.0.0.1 that nothing listens on now, from `from` upwards. */
int sim_free_port(int from);

#endif
