/* Runs a program without a shell (posix_spawn, argv as given), with stdin
 * from /dev/null, a time limit, and its stdout and stderr read into bounded
 * buffers. For the Slurm client commands of the discovery
 * (discover_slurm.h). */
#ifndef CTL_RUN_CMD_H
#define CTL_RUN_CMD_H

#include <stddef.h>

struct ctl_cmd_result {
  char *out;       /* stdout, NUL-terminated (malloc'd; ctl_cmd_result_release) */
  size_t out_len;
  char err[512];   /* the start of stderr, NUL-terminated, trailing newlines removed */
  int status;      /* exit status when it exited, else -1 */
  int signal;      /* the signal that ended it, else 0 */
};

/* Runs argv[0] (an absolute path) with argv, in the environment of the
 * process, and waits until it exits or timeout_s passes (then it is killed
 * with SIGKILL and reaped). Returns 0 when it ran to its end (whatever its
 * exit status: see ret->status), -ETIMEDOUT when it was killed for the time
 * limit, -EFBIG when stdout passed max_out bytes (killed too), -errno when it
 * could not be started. ret is filled in every case (out may be NULL). */
int ctl_cmd_run(char *const argv[], double timeout_s, size_t max_out, struct ctl_cmd_result *ret);
void ctl_cmd_result_release(struct ctl_cmd_result *r);

#endif
