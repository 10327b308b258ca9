/* The event loop (loop.h). */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "agent/caps.h"
#include "agent/jobscrape.h"
#include "agent/jobtput.h"
#include "agent/loop.h"

int agent_wait_ms(const struct agent *a, double now, long http_ms) {
  double next = a->sampler.next_s;
  struct agent_lease v[AGENT_MAX_GPUS];
  for (unsigned i = 0; i < a->n; i++)
    v[i] = a->g[i].lease;
  double lease = agent_lease_next_deadline(v, a->n);
  if (lease < next) next = lease;
  long ms = (long)ceil((next - now) * 1000.0);
  if (ms < 0) ms = 0;
  if (ms > 1000) ms = 1000;
  if (http_ms >= 0 && http_ms < ms) ms = http_ms;
  return (int)ms;
}

static void reload_token(struct agent *a) {
  char why[512];
  struct agent_token t = {0};
  if (!a->cfg.listen[0]) return;
  if (agent_token_load(&t, a->cfg.token_file, why, sizeof why) == 0) {
    a->token = t;
    agent_log("note", "SIGHUP: token re-read from '%s'", a->cfg.token_file);
  } else {
    agent_log("error", "SIGHUP: %s; keeping the previous token", why);
  }
}

/* The signal that ends the loop, or 0. */
static int read_signal(struct agent *a, int sigfd) {
  struct signalfd_siginfo si;
  while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
    if (si.ssi_signo == SIGHUP)
      reload_token(a);
    else
      return (int)si.ssi_signo;
  }
  return 0;
}

/* This tick's readings into each GPU's telemetry of its job, where every
 * GPU of the job on this node read uncapped. */
static void take_telemetry(struct agent *a) {
  double window = AGENT_TELEMETRY_WINDOW_S * a->cfg.hz;
  uint64_t capped = 0;
  for (unsigned i = 0; i < a->n; i++)
    if (a->samp[i].last_err || !a->samp[i].have_last || !agent_telemetry_uncapped(&a->samp[i].last))
      capped |= (uint64_t)1 << i;
  for (unsigned i = 0; i < a->n; i++) {
    if (a->samp[i].last_err || !a->samp[i].have_last) continue;
    const struct agent_job *job = agent_jobs_of_gpu(&a->jobs, i);
    bool uncapped = job && !(agent_job_gpus(&a->jobs, job) & capped);
    agent_telemetry_take(&a->g[i].tel, job ? job->id : NULL, &a->samp[i].last, uncapped, window);
  }
}

void agent_step(struct agent *a, struct agent_http *h, double now) {
  if (now >= a->sampler.next_s) {
    agent_sampler_tick(&a->sampler, a->gpu, a->samp, a->n, now);
    take_telemetry(a);
  }
  agent_caps_expire(a, now);
  if (agent_mapdir_changed(&a->mapdir)) {
    char dir_job[AGENT_MAX_GPUS][AGENT_JOB_ID_MAX + 1];
    if (agent_mapdir_scan(&a->mapdir, a->n, dir_job) == 0)
      (void)agent_jobs_set_dir(&a->jobs, dir_job, a->n);
  }
  agent_jobtput_drain(a);
  agent_scrape_step(a, now);
  agent_http_run(h);
}

int agent_loop_run(struct agent *a, struct agent_http *h, int sigfd, agent_tick_fn tick,
                   void *userdata) {
  double next_tick = agent_now();
  for (;;) {
    struct pollfd p[6 + 16];
    int fds[2], n = 0;
    long http_ms;
    int nh = agent_http_fds(h, fds, &http_ms);
    p[n++] = (struct pollfd){.fd = sigfd, .events = POLLIN};
    for (int k = 0; k < nh; k++)
      p[n++] = (struct pollfd){.fd = fds[k], .events = POLLIN};
    if (a->mapdir.inotify_fd >= 0)
      p[n++] = (struct pollfd){.fd = a->mapdir.inotify_fd, .events = POLLIN};
    if (agent_jobtput_fd(a) >= 0)
      p[n++] = (struct pollfd){.fd = agent_jobtput_fd(a), .events = POLLIN};
    int timeout = agent_wait_ms(a, agent_now(), http_ms);
    n += (int)agent_scrape_fds(a, p + n, 16, &timeout);
    if (poll(p, (nfds_t)n, timeout) < 0 && errno != EINTR) {
      agent_log("error", "poll: %s", strerror(errno));
      return SIGTERM;
    }
    int sig = (p[0].revents & POLLIN) ? read_signal(a, sigfd) : 0;
    if (sig) return sig;
    double now = agent_now();
    agent_step(a, h, now);
    if (tick && now >= next_tick) {
      tick(userdata);
      next_tick = now + 1.0;
    }
  }
}
