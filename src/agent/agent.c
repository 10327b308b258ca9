/* Opening and closing one agent (agent.h): backend, restore store, lease
 * state, token, jobs sources, in the order that lets each refuse to start
 * before anything is changed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/caps.h"
#include "agent/jobtput.h"
#include "agent/reconcile.h"
#include "agent/state.h"
#include "agent/trust.h"
#include "pflex/error.h"

void agent_count_error(struct agent *a, int status) {
  for (int k = 0; k < AGENT_ERROR_CODES; k++)
    if (a->c.error_code[k] == status || a->c.error_code[k] == 0) {
      a->c.error_code[k] = status;
      a->c.errors[k]++;
      return;
    }
}

/* The state directory must be root's alone, and one pflexd uses it at a time. */
static int lock_state_dir(struct agent *a) {
  char why[256], path[AGENT_PATH_MAX + 32];
  int err = agent_trust_dir(a->cfg.state_dir, true, why, sizeof why);
  if (err) {
    agent_log("error", "state directory '%s': %s", a->cfg.state_dir, why);
    return err;
  }
  snprintf(path, sizeof path, "%s/pflexd.lock", a->cfg.state_dir);
  a->lock_fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (a->lock_fd < 0 || flock(a->lock_fd, LOCK_EX | LOCK_NB) != 0) {
    err = -errno;
    agent_log("error", "'%s': %s", path,
              errno == EWOULDBLOCK ? "another pflexd uses this state directory" : strerror(errno));
    return err == -EWOULDBLOCK ? -EBUSY : err;
  }
  snprintf(a->state_path, sizeof a->state_path, "%s/%s", a->cfg.state_dir, AGENT_STATE_FILE);
  return 0;
}

static int open_gpus(struct agent *a) {
  char msg[512] = "", spec[AGENT_PATH_MAX + 16] = "";
  if (strcmp(a->cfg.backend, "nvml") == 0)
    snprintf(spec, sizeof spec, "%s%s%s", a->cfg.nvml_profiling ? "gpm=on," : "",
             a->cfg.nvml_library[0] ? "lib=" : "", a->cfg.nvml_library);
  else if (strcmp(a->cfg.backend, "sim") == 0) /* a daemon lives in real time */
    snprintf(spec, sizeof spec, "%s%s%s", a->cfg.sim_job, a->cfg.sim_job[0] ? "," : "",
             strstr(a->cfg.sim_job, "clock=") ? "" : "clock=real");
  if (spec[0] && spec[strlen(spec) - 1] == ',') spec[strlen(spec) - 1] = '\0';
  int err = pflex_gpu_open(a->cfg.backend, spec[0] ? spec : NULL, &a->gpu, msg, sizeof msg);
  if (!err) err = pflex_gpu_count(a->gpu, &a->n);
  if (!err && a->n > AGENT_MAX_GPUS) err = -E2BIG;
  for (unsigned i = 0; !err && i < a->n; i++) {
    err = pflex_gpu_info(a->gpu, i, &a->g[i].info);
    if (!err) err = agent_ring_init(&a->samp[i].ring, a->cfg.ring);
  }
  if (err)
    agent_log("error", "GPU backend '%s': %s%s", a->cfg.backend,
              msg[0]          ? msg
              : err == -E2BIG ? "more than 64 GPUs"
                              : pflex_strerror(err),
              err == -ELIBACC ? "; nvml_library (--nvml-library FILE) loads another library, "
                                "backend = sim simulates GPUs"
                              : "");
  return err;
}

static int open_restore(struct agent *a) {
  char why[512] = "";
  struct pflex_restore_opts o;
  pflex_restore_opts_init(&o);
  o.state_dir = a->cfg.state_dir;
  o.hold = true;          /* the GPUs are pflexd's while it lives: 'cap restore' leaves them */
  o.lock_timeout_s = 5.0; /* a holder keeps restore.lock for milliseconds */
  int err = pflex_restore_open_opts(&o, &a->rs, why, sizeof why);
  if (err)
    agent_log("error", "cannot open the restore records in '%s': %s", a->cfg.state_dir,
              why[0] ? why : pflex_strerror(err));
  return err;
}

static int open_token(struct agent *a) {
  char why[512];
  if (!a->cfg.listen[0]) return 0; /* the Unix socket's mode is the access control */
  int err = agent_token_load(&a->token, a->cfg.token_file, why, sizeof why);
  if (err) agent_log("error", "%s (needed for --listen)", why);
  return err;
}

static int open_jobs(struct agent *a) {
  char why[512];
  agent_jobs_init(&a->jobs, a->cfg.ring, a->cfg.statsd_metric);
  int err = agent_mapdir_open(&a->mapdir, a->cfg.mapping_dir, why, sizeof why);
  if (err) {
    agent_log("error", "%s", why);
    return err;
  }
  char dir_job[AGENT_MAX_GPUS][AGENT_JOB_ID_MAX + 1];
  if (agent_mapdir_scan(&a->mapdir, a->n, dir_job) == 0)
    (void)agent_jobs_set_dir(&a->jobs, dir_job, a->n);
  if ((err = agent_scrape_init(&a->scrape))) {
    agent_log("error", "cannot set up libcurl for scraping jobs' metrics");
    return err;
  }
  return agent_jobtput_open(a);
}

int agent_open(struct agent *a, const struct agent_config *cfg) {
  memset(a, 0, sizeof *a);
  a->cfg = *cfg;
  a->lock_fd = -1;
  a->mapdir.inotify_fd = -1;
  a->start_s = agent_now();
  int err = lock_state_dir(a);
  if (!err) err = open_gpus(a);
  if (!err) err = open_token(a);
  if (!err) err = open_restore(a);
  if (!err) err = open_jobs(a);
  if (err) agent_close(a, false);
  return err;
}

int agent_start(struct agent *a) {
  char why[512];
  int err = agent_reconcile(a, why, sizeof why);
  if (err) {
    agent_log("error",
              "%s; refusing to start: fix or remove it after checking the GPUs "
              "('pflex cap get', 'pflex cap restore')",
              why);
    return err;
  }
  agent_sampler_init(&a->sampler, a->cfg.hz, agent_now());
  agent_sampler_tick(&a->sampler, a->gpu, a->samp, a->n, agent_now());
  return 0;
}

int agent_close(struct agent *a, bool restore) {
  int status = 0;
  uint64_t held = a->gpu ? agent_caps_held(a) : 0;
  if (held && restore) {
    json_t *out = NULL;
    struct agent_error e;
    if ((status = agent_caps_release(a, held, &out, &e)))
      agent_log("error", "at exit: %s; 'pflex cap restore' or the next pflexd brings it back",
                e.message);
    else
      agent_log("note", "at exit: %zu GPU%s restored",
                json_array_size(json_object_get(out, "restored")),
                json_array_size(json_object_get(out, "restored")) == 1 ? "" : "s");
    json_decref(out);
  } else if (held) {
    agent_log("note",
              "at exit: %d GPU%s keep their caps and leases for the next pflexd (keep_caps)",
              __builtin_popcountll(held), __builtin_popcountll(held) == 1 ? "" : "s");
  }
  agent_jobtput_close(a);
  agent_scrape_release(&a->scrape);
  agent_mapdir_close(&a->mapdir);
  agent_jobs_release(&a->jobs);
  for (unsigned i = 0; i < AGENT_MAX_GPUS; i++)
    agent_ring_release(&a->samp[i].ring);
  pflex_restore_free(a->rs);
  pflex_gpu_close(a->gpu);
  if (a->lock_fd >= 0) close(a->lock_fd);
  a->rs = NULL;
  a->gpu = NULL;
  a->lock_fd = -1;
  return status;
}
