/* Child processes of the simulated cluster (sim_procs.h). */
#include "controller/sim_procs.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

pid_t sim_spawn(char *const argv[], const char *env_extra, const char *log) {
  pid_t pid = fork();
  if (pid < 0) return -errno;
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    if (env_extra) putenv((char *)env_extra);
    signal(SIGPIPE, SIG_DFL);
    execv(argv[0], argv);
    fprintf(stderr, "error: cannot run '%s': %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  return pid;
}

bool sim_alive(pid_t pid) {
  if (pid <= 0) return false;
  int st;
  return waitpid(pid, &st, WNOHANG) == 0;
}

void sim_signal(pid_t pid, int sig, double wait_s) {
  if (pid <= 0) return;
  kill(pid, sig);
  if (sig != SIGKILL && sig != SIGTERM) return;
  struct timespec ts = {0, 10 * 1000 * 1000};
  for (double t = 0; t < wait_s; t += 0.01) {
    int st;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) return;
    nanosleep(&ts, NULL);
  }
  kill(pid, SIGKILL);
  int st;
  waitpid(pid, &st, 0);
}

int sim_free_port(int from) {
  for (int port = from; port < 65000; port++) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return -errno;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int ok = bind(s, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(s);
    if (ok) {
      /* and the UDP port beside it for StatsD */
      s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      ok = s >= 0 && bind(s, (struct sockaddr *)&sa, sizeof sa) == 0;
      if (s >= 0) close(s);
      if (ok) return port;
    }
  }
  return -EADDRINUSE;
}
