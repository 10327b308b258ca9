/* pflexd, the pflex node agent (docs/agent.md): reads its configuration,
 * opens the GPUs, starts the API, reconciles what a previous instance held,
 * then serves until SIGTERM, when it restores every GPU it holds (or keeps
 * them for the next instance with keep_caps). Exit: 0, 1 failure, 2 usage. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>

#include <systemd/sd-daemon.h>

#include "agent/agent.h"
#include "agent/config.h"
#include "agent/http.h"
#include "agent/loop.h"

static int signal_fd(void) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGQUIT);
  if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) return -errno;
  int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  return fd < 0 ? -errno : fd;
}

static void watchdog(void *userdata) {
  (void)userdata;
  sd_notify(0, "WATCHDOG=1");
}

/* The program, not the library, reads the environment. */
static void from_env(struct agent_config *c) {
  const char *lib = getenv("PFLEX_NVML_LIB");
  if (!c->nvml_library[0] && lib && strlen(lib) < sizeof c->nvml_library)
    snprintf(c->nvml_library, sizeof c->nvml_library, "%s", lib);
}

static int serve(struct agent *a, int sigfd) {
  struct agent_http h;
  if (agent_http_start(&h, a)) return 1;
  if (agent_start(a)) {
    agent_http_stop(&h);
    return 1;
  }
  sd_notifyf(0, "READY=1\nSTATUS=%u GPUs, backend %s", a->n, a->cfg.backend);
  agent_log("note", "pflexd %s: %u GPU%s (%s), %.3g Hz", PFLEX_VERSION, a->n,
            a->n == 1 ? "" : "s", a->cfg.backend, a->cfg.hz);
  int sig = agent_loop_run(a, &h, sigfd, watchdog, NULL);
  sd_notify(0, "STOPPING=1");
  agent_log("note", "signal %d (%s): stopping", sig, strsignal(sig));
  agent_http_stop(&h);
  return 0;
}

int main(int argc, char **argv) {
  static struct agent a; /* large: the GPUs' rings and leases */
  struct agent_config cfg;
  char why[1024] = "";
  int rc = agent_config_parse(&cfg, argc, argv, why, sizeof why);
  if (rc == 1) return 0;
  if (rc) {
    fprintf(stderr, "error: %s\n", why);
    return 2;
  }
  from_env(&cfg);
  signal(SIGPIPE, SIG_IGN);
  int sigfd = signal_fd();
  if (sigfd < 0) {
    fprintf(stderr, "error: cannot set up signals: %s\n", strerror(-sigfd));
    return 1;
  }
  if (agent_open(&a, &cfg)) return 1;
  int status = serve(&a, sigfd);
  if (agent_close(&a, !cfg.keep_caps)) status = 1;
  return status;
}
