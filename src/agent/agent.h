/* One pflexd instance: its configuration, GPUs (samples and leases), jobs,
 * token, StatsD intake and counters. Everything an instance owns lives here
 * (no process-wide state), so one process could host several for tests or
 * a simulated cluster. */
#ifndef PFLEX_AGENT_AGENT_H
#define PFLEX_AGENT_AGENT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/auth.h"
#include "agent/body.h"
#include "agent/config.h"
#include "agent/jobs.h"
#include "agent/jobscrape.h"
#include "agent/lease.h"
#include "agent/log.h"
#include "agent/mapdir.h"
#include "agent/sampler.h"
#include "agent/telemetry.h"
#include "pflex/gpu.h"
#include "pflex/restore.h"
#include "pflex/tput.h"

struct agent_gpu {
  struct pflex_gpu_info info;
  struct agent_lease lease;
  struct agent_gpu_telemetry tel; /* its job's features while uncapped */
};

/* API errors by HTTP status, for /metrics. */
#define AGENT_ERROR_CODES 10
struct agent_counters {
  int error_code[AGENT_ERROR_CODES];
  unsigned long long errors[AGENT_ERROR_CODES];
  unsigned long long requests;
  unsigned long long lease_expiries; /* leases that ran out and fell back */
  unsigned long long limit_failures; /* limit changes that failed (API, expiry, reconcile) */
  unsigned long long statsd_packets, statsd_bad, statsd_unattributed;
};

struct agent {
  struct agent_config cfg;
  struct pflex_gpu *gpu;
  struct pflex_restore *rs;
  char state_path[AGENT_PATH_MAX + 32];
  unsigned n; /* GPUs */
  struct agent_gpu g[AGENT_MAX_GPUS];
  struct agent_gpu_sampler samp[AGENT_MAX_GPUS];
  struct agent_sampler sampler;
  struct agent_jobs jobs;
  struct agent_token token;
  struct pflex_statsd_server *statsd;
  struct agent_scrape scrape;
  struct agent_mapdir mapdir;
  struct agent_counters c;
  int lock_fd; /* flock on <state_dir>/pflexd.lock: one pflexd per state directory */
  double start_s;
  double retry_s;          /* failed restores are retried from then on */
  double retry_interval_s; /* 2 s after a failed restore, doubled after each, at most 60 s */
};

/* Opens everything the configuration names without changing any GPU: the
 * state directory (locked: one pflexd per directory), the GPU backend, the
 * token, the restore store, the jobs sources. On failure logs why and
 * returns a negative errno. */
int agent_open(struct agent *a, const struct agent_config *cfg);

/* Reconciles with the previous instance's lease state (reconcile.h) and
 * takes the first samples. On failure logs why. */
int agent_start(struct agent *a);

/* Releases everything; with restore, first brings every GPU pflexd holds
 * back to its original limit (the SIGTERM path unless keep_caps). Returns
 * 0, or the error of a GPU that could not be restored. */
int agent_close(struct agent *a, bool restore);

/* Counts an API error of this HTTP status. */
void agent_count_error(struct agent *a, int status);

#endif
