/* StatsD into per-job throughput (jobtput.h). */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>

#include "agent/jobtput.h"
#include "agent/trust.h"
#include "pflex/error.h"

static bool loopback_address(const char *addr) {
  static const char *const ok[] = {"udp:127.", "udp:[::1]:", "udp:localhost:", NULL};
  for (size_t i = 0; ok[i]; i++)
    if (strncmp(addr, ok[i], strlen(ok[i])) == 0) return true;
  return false;
}

static int check_address(const char *addr) {
  char why[256], dir[AGENT_PATH_MAX];
  if (strncmp(addr, "unix:", 5) == 0) {
    snprintf(dir, sizeof dir, "%s", addr + 5);
    if (agent_trust_dir(dirname(dir), false, why, sizeof why) == 0) return 0;
    agent_log("error", "StatsD socket '%s': its directory: %s", addr, why);
    return -EPERM;
  }
  if (loopback_address(addr)) return 0;
  agent_log("error", "StatsD address '%s': only loopback (udp:127.0.0.1:PORT, udp:[::1]:PORT) "
                     "or unix:PATH; throughput is unauthenticated", addr);
  return -EINVAL;
}

int agent_jobtput_open(struct agent *a) {
  a->statsd = NULL;
  if (!a->cfg.statsd[0]) return 0;
  int err = check_address(a->cfg.statsd);
  if (err) return err;
  err = pflex_statsd_open(a->cfg.statsd, &a->statsd);
  /* Throughput is not worth leaving the GPUs without their agent: go on. */
  if (err)
    agent_log("warning", "cannot open the StatsD intake '%s': %s; running without it",
              a->cfg.statsd, pflex_strerror(err));
  char bound[AGENT_PATH_MAX];
  if (!err && pflex_statsd_address(a->statsd, bound, sizeof bound) == 0)
    agent_log("note", "StatsD intake on %s", bound);
  return 0;
}

void agent_jobtput_close(struct agent *a) {
  pflex_statsd_close(a->statsd);
  a->statsd = NULL;
}

int agent_jobtput_fd(const struct agent *a) { return a->statsd ? pflex_statsd_fd(a->statsd) : -1; }

int agent_jobtput_split(const char *metric, char *job, size_t jobsize, const char **ret_name) {
  const char *dot = strchr(metric, '.');
  if (!dot) {
    job[0] = '\0';
    *ret_name = metric;
    return 0;
  }
  size_t len = (size_t)(dot - metric);
  if (len >= jobsize) return -EINVAL;
  memcpy(job, metric, len);
  job[len] = '\0';
  if (!agent_job_id_valid(job)) return -EINVAL;
  *ret_name = dot + 1;
  return 0;
}

static int on_metric(const struct pflex_statsd_metric *m, double time_s, void *userdata) {
  struct agent *a = userdata;
  char job[AGENT_JOB_ID_MAX + 1];
  const char *name;
  if (agent_jobtput_split(m->name, job, sizeof job, &name)) return 0;
  if (strcmp(name, a->jobs.metric) != 0) return 0;
  struct agent_job *target = job[0] ? agent_jobs_find(&a->jobs, job)
                             : a->jobs.n == 1 ? &a->jobs.v[0]
                                              : NULL;
  if (!target) {
    a->c.statsd_unattributed++;
    return 0;
  }
  struct pflex_statsd_metric bare = *m;
  snprintf(bare.name, sizeof bare.name, "%s", name);
  double t, v;
  if (pflex_tput_meter_feed(&target->meter, &bare, time_s, &t, &v) == 0)
    agent_job_tput_push(target, t, v);
  return 0;
}

void agent_jobtput_drain(struct agent *a) {
  if (!a->statsd) return;
  size_t packets = 0, bad = 0;
  int err = pflex_statsd_drain(a->statsd, on_metric, a, &packets, &bad);
  a->c.statsd_packets += packets;
  a->c.statsd_bad += bad;
  if (err && err != -EAGAIN) agent_log("warning", "StatsD intake: %s", pflex_strerror(err));
}
