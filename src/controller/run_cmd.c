/* A program run without a shell, bounded in time and output (run_cmd.h). */
#define _GNU_SOURCE /* pipe2: the pipes are close-on-exec from the start (other threads) */
#include "controller/run_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The child gets default signal dispositions (we ignore SIGPIPE), an empty
 * mask, its own process group (so a kill reaches anything it started), and
 * stdin from /dev/null. */
static pid_t spawn(char *const argv[], int out_w, int err_w, int *ret_errno) {
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_w, 1);
  posix_spawn_file_actions_adddup2(&fa, err_w, 2);
  posix_spawnattr_init(&at);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK |
                                    POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setsigdefault(&at, &all);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setpgroup(&at, 0);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, &at, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  *ret_errno = rc;
  return rc ? -1 : pid;
}

struct sink {
  int fd;
  char *buf;
  size_t len, cap, max; /* max: at most this many bytes kept */
  bool over;            /* more than max came */
};

/* Reads what is there; closes fd at EOF. Returns false on a read error. */
static bool drain(struct sink *s) {
  char tmp[16384];
  ssize_t n = read(s->fd, tmp, sizeof tmp);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) {
    close(s->fd);
    s->fd = -1;
    return true;
  }
  size_t keep = s->len + (size_t)n > s->max ? s->max - s->len : (size_t)n;
  if ((size_t)n > keep) s->over = true;
  if (s->len + keep + 1 > s->cap) {
    size_t nc = s->cap ? s->cap : 16384;
    while (nc < s->len + keep + 1)
      nc *= 2;
    char *p = realloc(s->buf, nc);
    if (!p) return false;
    s->buf = p;
    s->cap = nc;
  }
  memcpy(s->buf + s->len, tmp, keep);
  s->len += keep;
  s->buf[s->len] = '\0';
  return true;
}

/* Reads both pipes until EOF, the deadline, or too much output. */
static int collect(struct sink *out, struct sink *err, double deadline) {
  while (out->fd >= 0 || err->fd >= 0) {
    double left = deadline - mono_s();
    if (left <= 0) return -ETIMEDOUT;
    struct pollfd p[2] = {{out->fd, POLLIN, 0}, {err->fd, POLLIN, 0}};
    int n = poll(p, 2, (int)(left * 1000) + 1);
    if (n < 0 && errno != EINTR) return -errno;
    if (n <= 0) continue;
    if (p[0].revents && !drain(out)) return -EIO;
    if (p[1].revents && !drain(err)) return -EIO;
    if (out->over) return -EFBIG;
  }
  return 0;
}

/* Waits for the child until the deadline; kills its group after it. */
static int reap(pid_t pid, double deadline, bool kill_now, int *ret_wstatus) {
  for (;;) {
    if (kill_now || mono_s() >= deadline) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      while (waitpid(pid, ret_wstatus, 0) < 0 && errno == EINTR)
        ;
      return kill_now ? 0 : -ETIMEDOUT;
    }
    pid_t w = waitpid(pid, ret_wstatus, WNOHANG);
    if (w == pid) return 0;
    if (w < 0 && errno != EINTR) return -errno;
    nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
  }
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

int ctl_cmd_run(char *const argv[], double timeout_s, size_t max_out, struct ctl_cmd_result *ret) {
  memset(ret, 0, sizeof *ret);
  ret->status = -1;
  /* posix_spawn reports a failed exec only where it is built on vfork
   * semantics (not under valgrind, for one): check first. */
  if (access(argv[0], X_OK) < 0) return -errno;
  int po[2], pe[2];
  if (pipe2(po, O_CLOEXEC) < 0) return -errno;
  if (pipe2(pe, O_CLOEXEC) < 0) {
    int e = errno;
    close(po[0]);
    close(po[1]);
    return -e;
  }
  int spawn_errno;
  double deadline = mono_s() + timeout_s;
  pid_t pid = spawn(argv, po[1], pe[1], &spawn_errno);
  close_fd(&po[1]);
  close_fd(&pe[1]);
  struct sink out = {.fd = po[0], .max = max_out}, err = {.fd = pe[0], .max = sizeof ret->err - 1};
  int rc = pid < 0 ? -spawn_errno : collect(&out, &err, deadline);
  close_fd(&out.fd);
  close_fd(&err.fd);
  if (pid > 0) {
    int ws = 0, wrc = reap(pid, deadline, rc < 0, &ws);
    if (rc == 0) rc = wrc;
    if (WIFEXITED(ws)) ret->status = WEXITSTATUS(ws);
    if (WIFSIGNALED(ws)) ret->signal = WTERMSIG(ws);
  }
  ret->out = out.buf;
  ret->out_len = out.len;
  if (err.buf) memcpy(ret->err, err.buf, err.len + 1);
  free(err.buf);
  size_t n = strlen(ret->err);
  while (n && (ret->err[n - 1] == '\n' || ret->err[n - 1] == '\r'))
    ret->err[--n] = '\0';
  return rc;
}

void ctl_cmd_result_release(struct ctl_cmd_result *r) {
  free(r->out);
  r->out = NULL;
  r->out_len = 0;
}
