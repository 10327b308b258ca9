/* The agent host (sim_host.h). */
#include "controller/sim_host.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "agent/agent.h"
#include "agent/caps.h"
#include "agent/http.h"
#include "agent/jobtput.h"
#include "agent/loop.h"

#define HOST_SIG UINT64_MAX
#define HOST_CMD (UINT64_MAX - 1)

struct hosted {
  struct agent a;
  struct agent_http h;
  bool opened, listening, stalled, killed;
};

struct host {
  const struct sim_host_cfg *c;
  struct hosted *v;
  /* When each agent must be stepped next (INFINITY: not running), apart
   * from the agents (kilobytes each) so that the scans every wakeup makes
   * read one small array: at 1,000 agents the host wakes thousands of
   * times a second. */
  double *due;
  size_t n;
  int ep; /* epoll: every agent's fds (data: its index), the signals, the commands */
  char cmd[256];
  size_t cmd_len;
};

static int open_one(struct host *h, size_t i) {
  const struct sim_host_cfg *c = h->c;
  struct hosted *x = &h->v[i];
  struct agent_config cfg;
  agent_config_defaults(&cfg);
  snprintf(cfg.backend, sizeof cfg.backend, "sim");
  snprintf(cfg.sim_job, sizeof cfg.sim_job, "%s", c->nodes[i].sim_job);
  snprintf(cfg.state_dir, sizeof cfg.state_dir, "%s/agent%04zu", c->dir, i);
  mkdir(cfg.state_dir, 0700);
  cfg.socket[0] = '\0';
  snprintf(cfg.listen, sizeof cfg.listen, "127.0.0.1:%d", c->nodes[i].port);
  snprintf(cfg.statsd, sizeof cfg.statsd, "udp:127.0.0.1:%d", c->nodes[i].port);
  snprintf(cfg.token_file, sizeof cfg.token_file, "%s", c->token_file);
  cfg.hz = c->hz;
  if (agent_open(&x->a, &cfg)) return -EIO;
  x->opened = true;
  if (agent_http_start(&x->h, &x->a) || agent_start(&x->a)) return -EIO;
  x->listening = true;
  return 0;
}

/* GPUs of agent x not at their default limit, after releasing its caps. */
static size_t release_and_count(struct hosted *x) {
  uint64_t held = agent_caps_held(&x->a);
  if (held) {
    json_t *out = NULL;
    struct agent_error e;
    if (agent_caps_release(&x->a, held, &out, &e)) agent_log("error", "at exit: %s", e.message);
    json_decref(out);
  }
  size_t wrong = 0;
  for (unsigned g = 0; g < x->a.n; g++) {
    unsigned mw = 0, lo, hi, dflt = 0;
    if (pflex_gpu_get_limit(x->a.gpu, g, &mw) ||
        pflex_gpu_constraints(x->a.gpu, g, &lo, &hi, &dflt) || mw != dflt)
      wrong++;
  }
  return wrong;
}

static void watch(struct host *h, size_t i, bool on);

static bool active(const struct hosted *x) {
  return x->opened && !x->stalled && !x->killed;
}

static void command(struct host *h, const char *line) {
  char verb[16];
  size_t i;
  if (sscanf(line, "%15s %zu", verb, &i) != 2 || i >= h->n || !h->v[i].opened) {
    agent_log("warning", "host: bad command '%s'", line);
    return;
  }
  struct hosted *x = &h->v[i];
  if (strcmp(verb, "job") == 0) {
    (void)pflex_gpu_job_start(x->a.gpu);
  } else if (strcmp(verb, "stall") == 0 && !x->stalled) {
    x->stalled = true;
    watch(h, i, false);
  } else if (strcmp(verb, "cont") == 0 && x->stalled) {
    x->stalled = false;
    watch(h, i, true);
  } else if (strcmp(verb, "kill") == 0 && x->listening) {
    watch(h, i, false);
    agent_http_stop(&x->h);
    x->listening = false;
    x->killed = true;
  } else if (strcmp(verb, "heal") == 0 && x->killed) {
    x->listening = agent_http_start(&x->h, &x->a) == 0;
    x->killed = false;
    if (x->listening) watch(h, i, true);
  }
  h->due[i] = active(x) ? 0 : INFINITY;
}

static void read_commands(struct host *h, int fd) {
  ssize_t r = read(fd, h->cmd + h->cmd_len, sizeof h->cmd - 1 - h->cmd_len);
  if (r <= 0) return;
  h->cmd_len += (size_t)r;
  h->cmd[h->cmd_len] = '\0';
  char *nl;
  while ((nl = strchr(h->cmd, '\n'))) {
    *nl = '\0';
    command(h, h->cmd);
    h->cmd_len -= (size_t)(nl + 1 - h->cmd);
    memmove(h->cmd, nl + 1, h->cmd_len + 1);
  }
  if (h->cmd_len == sizeof h->cmd - 1) h->cmd_len = 0; /* a line too long: dropped */
}


/* Agents due within this much of the earliest are stepped in the same
 * wakeup: 1,000 agents sampling at 2 Hz would otherwise wake the host
 * thousands of times a second. */
#define HOST_BATCH_S 0.005

/* Registers (or removes) agent i's fds in the epoll set: its HTTP listeners
 * and StatsD socket, which stay the same while it listens. */
static void watch(struct host *h, size_t i, bool on) {
  struct hosted *x = &h->v[i];
  int fds[3], n;
  long ms;
  n = agent_http_fds(&x->h, fds, &ms);
  if (agent_jobtput_fd(&x->a) >= 0) fds[n++] = agent_jobtput_fd(&x->a);
  for (int k = 0; k < n; k++) {
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = i};
    (void)epoll_ctl(h->ep, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, fds[k], &ev);
  }
}

static void step(struct host *h, size_t i, double now) {
  struct hosted *x = &h->v[i];
  agent_step(&x->a, &x->h, now);
  int fds[2];
  long http_ms;
  (void)agent_http_fds(&x->h, fds, &http_ms);
  h->due[i] = now + agent_wait_ms(&x->a, agent_now(), http_ms) / 1000.0;
}

static int wait_ms(const struct host *h, double now) {
  double next = now + 1.0;
  for (size_t i = 0; i < h->n; i++)
    if (h->due[i] < next) next = h->due[i];
  long ms = (long)ceil((next - now) * 1000.0);
  return ms < 0 ? 0 : ms > 1000 ? 1000 : (int)ms;
}

static int serve(struct host *h, int sigfd, int cmd_fd) {
  struct epoll_event ev[256];
  for (;;) {
    int n = epoll_wait(h->ep, ev, 256, wait_ms(h, agent_now()));
    if (n < 0 && errno != EINTR) return -errno;
    double now = agent_now();
    for (int k = 0; k < n; k++) {
      uint64_t who = ev[k].data.u64;
      if (who == HOST_SIG) return 0;
      if (who == HOST_CMD) {
        if ((ev[k].events & EPOLLHUP) && !(ev[k].events & EPOLLIN)) return 0; /* parent gone */
        read_commands(h, cmd_fd);
      } else if (who < h->n && active(&h->v[who])) {
        step(h, who, now);
      }
    }
    for (size_t i = 0; i < h->n; i++)
      if (h->due[i] <= now + HOST_BATCH_S) step(h, i, now);
  }
}

static void finish(struct host *h) {
  size_t wrong = 0;
  for (size_t i = 0; i < h->n; i++) {
    struct hosted *x = &h->v[i];
    if (!x->opened) continue;
    wrong += release_and_count(x);
    if (x->listening) agent_http_stop(&x->h);
    agent_close(&x->a, true);
  }
  char path[1100];
  snprintf(path, sizeof path, "%s/host.json", h->c->dir);
  FILE *f = fopen(path, "w");
  if (f) {
    fprintf(f, "{\"wrong_limits_final\":%zu}\n", wrong);
    fclose(f);
  }
}

static int host_main(const struct sim_host_cfg *c, int cmd_fd, int sigfd) {
  struct host h = {.c = c, .n = c->n};
  h.v = calloc(c->n, sizeof *h.v);
  h.due = malloc((c->n ? c->n : 1) * sizeof *h.due);
  for (size_t i = 0; h.due && i < c->n; i++)
    h.due[i] = INFINITY; /* until it is open */
  h.ep = epoll_create1(EPOLL_CLOEXEC);
  int rc = h.v && h.due && h.ep >= 0 ? 0 : -ENOMEM;
  struct epoll_event es = {.events = EPOLLIN, .data.u64 = HOST_SIG},
                     ec = {.events = EPOLLIN, .data.u64 = HOST_CMD};
  if (rc == 0 && (epoll_ctl(h.ep, EPOLL_CTL_ADD, sigfd, &es) < 0 ||
                  epoll_ctl(h.ep, EPOLL_CTL_ADD, cmd_fd, &ec) < 0))
    rc = -errno;
  for (size_t i = 0; rc == 0 && i < c->n; i++) {
    rc = open_one(&h, i);
    if (rc == 0) watch(&h, i, true);
    if (rc == 0) h.due[i] = 0;
  }
  if (rc == 0) rc = serve(&h, sigfd, cmd_fd);
  if (h.v) finish(&h);
  if (h.ep >= 0) close(h.ep);
  free(h.v);
  free(h.due);
  return rc;
}

pid_t sim_host_spawn(const struct sim_host_cfg *c, int *ret_cmd_fd) {
  int pfd[2];
  if (pipe(pfd) < 0) return -errno;
  fcntl(pfd[0], F_SETFD, FD_CLOEXEC);
  fcntl(pfd[1], F_SETFD, FD_CLOEXEC);
  pid_t pid = fork();
  if (pid < 0) {
    int err = -errno;
    close(pfd[0]);
    close(pfd[1]);
    return err;
  }
  if (pid > 0) {
    close(pfd[0]);
    *ret_cmd_fd = pfd[1];
    return pid;
  }
  close(pfd[1]);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  char log[1100];
  snprintf(log, sizeof log, "%s/host.log", c->dir);
  int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd >= 0) {
    dup2(fd, 1);
    dup2(fd, 2);
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigprocmask(SIG_BLOCK, &set, NULL);
  int sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  signal(SIGPIPE, SIG_IGN);
  fcntl(pfd[0], F_SETFL, O_NONBLOCK);
  _exit(host_main(c, pfd[0], sigfd) == 0 ? 0 : 1);
}

int sim_host_command(int cmd_fd, const char *verb, size_t i) {
  char line[64];
  int len = snprintf(line, sizeof line, "%s %zu\n", verb, i);
  return write(cmd_fd, line, (size_t)len) == len ? 0 : -errno;
}
