/* The sweep engine (include/pflex/sweep.h): one code path for real and
 * simulated GPUs. Limits are changed only through pflex_restore_apply_limits and
 * every exit path goes through the final restore at the end of
 * pflex_sweep_run. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pflex/error.h"
#include "pflex/gpu_models.h"
#include "pflex/sweep.h"
#include "pflex/tput.h"

void pflex_sweep_result_init(struct pflex_sweep_result *res) {
  memset(res, 0, sizeof *res);
  pflex_runset_init(&res->runs);
}

void pflex_sweep_result_release(struct pflex_sweep_result *res) {
  if (!res) return;
  pflex_runset_release(&res->runs);
  free(res->run_info);
  free(res->restored);
  memset(res, 0, sizeof *res);
}

int pflex_sweep_pfi(const struct pflex_sweep_result *res, struct pflex_pfi_result *ret) {
  pflex_pfi_result_init(ret);
  const struct pflex_runset *rs = &res->runs;
  if (rs->n < 2) return -PFLEX_E_NOPOINTS;
  struct pflex_pfi_point *pts = calloc(rs->n, sizeof *pts);
  if (!pts) return -ENOMEM;
  for (size_t i = 0; i < rs->n; i++) {
    const struct pflex_run *r = &rs->runs[i];
    pts[i] = (struct pflex_pfi_point){.cap_w = r->cap_w,
                                      .power_w = r->power_w,
                                      .tput = r->tput,
                                      .power_sd = r->power_sd,
                                      .tput_sd = r->tput_sd,
                                      .have = PFLEX_PFI_HAVE_POWER_SD | PFLEX_PFI_HAVE_TPUT_SD};
  }
  struct pflex_pfi_opts po;
  pflex_pfi_opts_init(&po);
  int err = pflex_pfi_compute(pts, rs->n, &po, ret);
  free(pts);
  return err;
}

void pflex_sweep_gpu_type(const char *name, char *buf, size_t size) {
  /* The GPU table's name tells the board apart ("NVIDIA H100 PCIe" is not an H100 SXM). */
  const struct pflex_gpu_model *m = pflex_gpu_model_find(name);
  if (m) {
    snprintf(buf, size, "%s", m->name);
    return;
  }
  const char *p = name;
  if (strncmp(p, "NVIDIA ", 7) == 0) p += 7;
  size_t len = strcspn(p, " ");
  if (len == 0) p = name, len = strlen(name);
  snprintf(buf, size, "%.*s", (int)len, p);
}

int pflex_sweep_check(struct pflex_gpu *gpu, const struct pflex_sweep_opts *o, char *errbuf,
                      size_t errlen) {
  for (size_t k = 0; k < o->ngpus; k++) {
    unsigned lo, hi;
    int err = pflex_gpu_constraints(gpu, o->gpus[k], &lo, &hi, NULL);
    if (err) {
      snprintf(errbuf, errlen, "cannot read the power limit range of GPU %u", o->gpus[k]);
      return err;
    }
    for (size_t c = 0; c < o->ncaps; c++) {
      double mw = o->caps_w[c] * 1000.0;
      if (mw < lo - 0.5 || mw > hi + 0.5) {
        snprintf(errbuf, errlen, "cap %.1f W is outside the settable range %.1f-%.1f W of GPU %u",
                 o->caps_w[c], lo / 1000.0, hi / 1000.0, o->gpus[k]);
        return -ERANGE;
      }
    }
  }
  return 0;
}

/* ---- one sweep in progress ---- */
struct sweep {
  struct pflex_gpu *gpu;
  struct pflex_restore *rs;
  const struct pflex_sweep_opts *o;
  struct pflex_sweep_result *res;
  bool virtual_clock;
  /* the current run */
  struct pflex_series series;
  bool series_live;
  size_t run;
  double cap_w;
  double last_power, last_tput;
  pid_t child;
  int child_out; /* read end of the command's stdout/stderr, or -1 */
  int child_status;
  bool child_done;
  struct pflex_statsd_server *statsd;
  struct pflex_tput_meter meter;
  struct pflex_tput_regex regex;
  bool have_regex;
  double now; /* backend clock of the event being handled */
  size_t metric_ix[9];
};

/* NVML's memory utilization is DCGM's MEM_COPY_UTIL, and the profiling
 * activities are DCGM's PROF_* as fractions: named as runs files and
 * `pflex fit` name them, so a sweep's runs give a model's features. */
static const char *const metric_names[] = {"power_w",      "gpu_util",           "fb_used_mib",
                                           "sm_clock_mhz", "mem_clock_mhz",      "mem_copy_util",
                                           "sm_active",    "pipe_tensor_active", "dram_active"};
#define NMETRICS (sizeof metric_names / sizeof metric_names[0])

static void progress(struct sweep *s, enum pflex_sweep_stage stage, double elapsed, double total) {
  if (!s->o->progress) return;
  struct pflex_sweep_progress p = {.stage = stage,
                                   .run = s->run,
                                   .nruns = s->o->ncaps,
                                   .cap_w = s->cap_w,
                                   .elapsed_s = elapsed,
                                   .total_s = total,
                                   .power_w = s->last_power,
                                   .tput = s->last_tput};
  s->o->progress(&p, s->o->userdata);
}

static int stop(struct sweep *s, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int stop(struct sweep *s, int err, const char *fmt, ...) {
  if (!s->res->stop_err) {
    s->res->stop_err = err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->res->stop_message, sizeof s->res->stop_message, fmt, ap);
    va_end(ap);
  }
  return err;
}

static bool cancelled(struct sweep *s) {
  if (s->o->cancel_fd < 0) return false;
  struct pollfd p = {.fd = s->o->cancel_fd, .events = POLLIN};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP));
}

static int on_tput(double time_s, double value, void *ud) {
  struct sweep *s = ud;
  (void)time_s; /* one clock for all samples: the backend's */
  s->last_tput = value;
  return pflex_series_add_tput(&s->series, s->now, value) == 0 ? 0 : 0;
}

static int on_statsd(const struct pflex_statsd_metric *m, double time_s, void *ud) {
  struct sweep *s = ud;
  double t, v;
  (void)time_s;
  if (pflex_tput_meter_feed(&s->meter, m, s->now, &t, &v) == 0) on_tput(t, v, s);
  return 0;
}

static int discard(const struct pflex_statsd_metric *m, double time_s, void *ud) {
  (void)m, (void)time_s, (void)ud;
  return 0;
}

static int start_child(struct sweep *s) {
  int pipefd[2] = {-1, -1};
  if (s->o->use_regex) {
    if (pipe(pipefd) != 0) return -errno;
    /* Only the command's end is inherited (dup2 clears close-on-exec on it). */
    fcntl(pipefd[0], F_SETFD, FD_CLOEXEC);
    fcntl(pipefd[1], F_SETFD, FD_CLOEXEC);
  }
  char cap[32], addr[256] = "";
  snprintf(cap, sizeof cap, "%.0f", s->cap_w);
  if (s->statsd) pflex_statsd_address(s->statsd, addr, sizeof addr);
  pid_t pid = fork();
  if (pid < 0) {
    int err = -errno;
    if (pipefd[0] >= 0) close(pipefd[0]), close(pipefd[1]);
    return err;
  }
  if (pid == 0) {
    /* The command gets its own process group (so it can be stopped as a whole),
     * default signal handling, and dies with pflex rather than outliving it. */
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    if (pipefd[1] >= 0) {
      dup2(pipefd[1], STDOUT_FILENO);
      dup2(pipefd[1], STDERR_FILENO);
    }
    setenv("PFLEX_CAP_W", cap, 1);
    if (addr[0]) setenv("PFLEX_STATSD", addr, 1);
    execvp(s->o->argv[0], s->o->argv);
    _exit(127);
  }
  setpgid(pid, pid);
  s->child = pid;
  s->child_done = false;
  s->child_status = -1;
  if (pipefd[1] >= 0) {
    close(pipefd[1]);
    s->child_out = pipefd[0];
    fcntl(s->child_out, F_SETFL, fcntl(s->child_out, F_GETFL) | O_NONBLOCK);
  }
  return 0;
}

static void reap(struct sweep *s, bool block) {
  if (s->child <= 0 || s->child_done) return;
  int st;
  pid_t r = waitpid(s->child, &st, block ? 0 : WNOHANG);
  if (r == s->child) {
    s->child_done = true;
    s->child_status = st;
  }
}

static void drain_child_output(struct sweep *s, bool eof) {
  if (s->child_out < 0) return;
  char buf[4096];
  for (;;) {
    ssize_t n = read(s->child_out, buf, sizeof buf);
    if (n > 0) {
      if (s->o->output) s->o->output(buf, (size_t)n, s->o->userdata);
      if (s->have_regex) pflex_tput_regex_feed(&s->regex, buf, (size_t)n, s->now, on_tput, s);
      continue;
    }
    if (n == 0 || eof || (errno != EINTR && errno != EAGAIN)) {
      if (n == 0 || eof) {
        if (s->have_regex) pflex_tput_regex_feed(&s->regex, NULL, 0, s->now, on_tput, s);
        close(s->child_out);
        s->child_out = -1;
      }
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
}

/* Stops the command: SIGTERM to its group, SIGKILL after the grace period. */
static void stop_child(struct sweep *s) {
  if (s->child <= 0) return;
  reap(s, false);
  if (!s->child_done) {
    kill(-s->child, SIGTERM);
    double grace = s->o->stop_grace_s > 0 ? s->o->stop_grace_s : 10.0;
    for (double waited = 0; waited < grace && !s->child_done; waited += 0.02) {
      struct timespec ts = {0, 20000000};
      nanosleep(&ts, NULL);
      reap(s, false);
    }
    if (!s->child_done) {
      kill(-s->child, SIGKILL);
      reap(s, true);
    }
  }
  drain_child_output(s, true);
  s->child = 0;
}

static int sample(struct sweep *s) {
  double sum = 0;
  bool have_power = true;
  for (size_t k = 0; k < s->o->ngpus; k++) {
    struct pflex_gpu_reading r;
    int err = pflex_gpu_read(s->gpu, s->o->gpus[k], &r);
    if (err) {
      const char *why = pflex_gpu_last_error(s->gpu);
      return stop(s, err, "reading GPU %u during the %.0f W run failed: %s%s%s", s->o->gpus[k],
                  s->cap_w, pflex_strerror(err), why ? ": " : "", why ? why : "");
    }
    double v[NMETRICS];
    for (size_t m = 0; m < NMETRICS; m++)
      v[m] = NAN;
    if (r.valid & PFLEX_GPU_POWER)
      v[0] = r.power_mw / 1000.0, sum += v[0];
    else
      have_power = false;
    if (r.valid & PFLEX_GPU_UTIL) v[1] = r.util_gpu_pct, v[5] = r.util_mem_pct;
    if (r.valid & PFLEX_GPU_MEMORY) v[2] = (double)r.mem_used_bytes / 1048576.0;
    if (r.valid & PFLEX_GPU_SM_CLOCK) v[3] = r.sm_clock_mhz;
    if (r.valid & PFLEX_GPU_MEM_CLOCK) v[4] = r.mem_clock_mhz;
    if (r.valid & PFLEX_GPU_PROF)
      v[6] = r.sm_active, v[7] = r.pipe_tensor_active, v[8] = r.dram_active;
    double row[NMETRICS + 8];
    for (size_t m = 0; m < s->series.nmetrics && m < NMETRICS + 8; m++)
      row[m] = NAN;
    for (size_t m = 0; m < NMETRICS; m++)
      row[s->metric_ix[m]] = v[m];
    err = pflex_series_add_row(&s->series, s->now, (int)s->o->gpus[k], row);
    if (err) return stop(s, err, "cannot store a sample: %s", pflex_strerror(err));
    /* The simulated job reports its throughput with the readings of its first GPU. */
    if (k == 0 && (r.valid & PFLEX_GPU_TPUT)) on_tput(s->now, r.tput, s);
  }
  s->last_power = have_power ? sum : NAN;
  return 0;
}

/* Waits until the backend clock reaches `until`, handling the command's
 * output, StatsD datagrams and cancellation meanwhile. */
static int wait_until(struct sweep *s, double until) {
  for (;;) {
    if (cancelled(s)) return stop(s, -ECANCELED, "cancelled");
    double now;
    pflex_gpu_now(s->gpu, &now);
    s->now = now;
    if (now >= until) return 0;
    if (s->virtual_clock) {
      int err = pflex_gpu_sleep(s->gpu, until - now);
      if (err) return stop(s, err, "the simulated clock failed: %s", pflex_strerror(err));
      continue;
    }
    struct pollfd p[3];
    nfds_t n = 0;
    if (s->o->cancel_fd >= 0) p[n++] = (struct pollfd){.fd = s->o->cancel_fd, .events = POLLIN};
    int out_ix = -1, sd_ix = -1;
    if (s->child_out >= 0)
      out_ix = (int)n, p[n++] = (struct pollfd){.fd = s->child_out, .events = POLLIN};
    if (s->statsd)
      sd_ix = (int)n, p[n++] = (struct pollfd){.fd = pflex_statsd_fd(s->statsd), .events = POLLIN};
    int ms = (int)ceil((until - now) * 1000.0);
    if (s->child > 0 && !s->child_done && s->child_out < 0 && ms > 50) ms = 50; /* notice exits */
    int r = poll(p, n, ms < 1 ? 1 : ms);
    if (r < 0 && errno != EINTR) return stop(s, -errno, "poll failed: %s", strerror(errno));
    pflex_gpu_now(s->gpu, &s->now);
    if (r > 0 && out_ix >= 0 && (p[out_ix].revents & (POLLIN | POLLHUP)))
      drain_child_output(s, false);
    if (r > 0 && sd_ix >= 0 && (p[sd_ix].revents & POLLIN))
      pflex_statsd_drain(s->statsd, on_statsd, s, NULL, NULL);
    reap(s, false);
    if (s->child > 0 && s->child_done) return 0;
  }
}

/* Aggregates the finished run into a row of the runset. */
static int aggregate(struct sweep *s, struct pflex_sweep_run *info) {
  struct pflex_phase_opts def;
  pflex_phase_opts_default(&def);
  const struct pflex_phase_opts *po = s->o->phase ? s->o->phase : &def;
  struct pflex_series_agg agg;
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  int err = pflex_series_aggregate(&s->series, po, &agg, &diag);
  if (err) {
    snprintf(info->message, sizeof info->message, "cannot aggregate the run: %.200s",
             diag.message[0] ? diag.message : pflex_strerror(err));
    return err;
  }
  if (!agg.tput.valid || !(agg.tput.value > 0)) {
    snprintf(info->message, sizeof info->message,
             "no throughput in the training phase (%zu throughput samples in all)",
             s->series.ntput);
    pflex_series_agg_release(&agg);
    return -PFLEX_E_NOPOINTS;
  }
  char type[64];
  if (s->o->gpu_type) {
    snprintf(type, sizeof type, "%s", s->o->gpu_type);
  } else {
    struct pflex_gpu_info gi;
    if (pflex_gpu_info(s->gpu, s->o->gpus[0], &gi) == 0)
      pflex_sweep_gpu_type(gi.name, type, sizeof type);
    else
      snprintf(type, sizeof type, "unknown");
  }
  /* The same row as `pflex aggregate` makes from a recorded series. */
  err = pflex_series_agg_append_run(&agg, s->o->group, type, s->cap_w, &s->res->runs);
  size_t i = s->res->runs.n - 1;
  char buf[64];
  if (!err) {
    snprintf(buf, sizeof buf, "%zu", agg.phase_steps[PFLEX_PHASE_TRAINING]);
    err = pflex_runset_set_extra(&s->res->runs, i, "train_steps", buf);
  }
  if (!err)
    err = pflex_runset_set_extra(&s->res->runs, i, "provenance",
                                 strcmp(pflex_gpu_backend_name(s->gpu), "sim") == 0 ? "simulated"
                                                                                    : "measured");
  pflex_series_agg_release(&agg);
  return err;
}

/* Every GPU of the job at the run's cap, or none (the previous cap stays). */
static int set_caps(struct sweep *s) {
  const struct pflex_sweep_opts *o = s->o;
  unsigned mw = (unsigned)lround(s->cap_w * 1000.0);
  struct pflex_limit_change *c = calloc(o->ngpus, sizeof *c);
  if (!c) return stop(s, -ENOMEM, "out of memory");
  for (size_t k = 0; k < o->ngpus; k++)
    c[k] = (struct pflex_limit_change){.index = o->gpus[k], .mw = mw};
  size_t failed;
  int serr = pflex_restore_apply_limits(s->rs, s->gpu, c, o->ngpus, 0, &failed);
  free(c);
  if (serr && failed >= o->ngpus)
    return stop(s, serr, "recording the original limits in '%s' for the %.0f W run failed: %s",
                pflex_restore_path(s->rs), s->cap_w, pflex_strerror(serr));
  if (serr) {
    const char *why = pflex_gpu_last_error(s->gpu);
    return stop(s, serr, "setting GPU %u to %.0f W failed: %s%s%s", o->gpus[failed], s->cap_w,
                pflex_strerror(serr), why ? ": " : "", why ? why : "");
  }
  return 0;
}

static int do_run(struct sweep *s, struct pflex_sweep_run *info) {
  const struct pflex_sweep_opts *o = s->o;
  progress(s, PFLEX_SWEEP_SETTING, 0, o->duration_s);
  int err = set_caps(s);
  if (err) return err;
  pflex_series_init(&s->series);
  s->series_live = true;
  for (size_t m = 0; !err && m < NMETRICS; m++)
    if ((err = pflex_series_metric(&s->series, metric_names[m], &s->metric_ix[m])) != 0)
      return stop(s, err, "out of memory");
  s->last_power = s->last_tput = NAN;
  if (s->have_regex) {
    pflex_tput_regex_release(&s->regex);
    s->have_regex = false;
  }
  if (o->use_regex) {
    struct pflex_tput_regex_opts ro = {.pattern = o->tput_regex, .per_step_time = o->per_step_time};
    char eb[256];
    if ((err = pflex_tput_regex_init(&s->regex, &ro, eb, sizeof eb)) != 0)
      return stop(s, err, "bad throughput regex: %s", eb);
    s->have_regex = true;
  }
  if (s->statsd) {
    pflex_statsd_drain(s->statsd, discard, NULL, NULL, NULL); /* from the previous run */
    /* a counter becomes one rate per sampling period, not one per datagram */
    pflex_tput_meter_init(&s->meter, o->statsd_metric, 1.0 / o->hz);
  }
  if (o->argv) {
    err = start_child(s);
  } else if (!o->attach || s->run == 0) {
    /* A simulated job restarts for every run; attached, it starts once and keeps
     * running across the caps, like a real job measured with --attach. */
    err = pflex_gpu_job_start(s->gpu);
    if (err == -EOPNOTSUPP && o->attach) err = 0;
  }
  if (err) return stop(s, err, "cannot start the job: %s", pflex_strerror(err));
  double t0;
  pflex_gpu_now(s->gpu, &t0);
  double period = 1.0 / o->hz, next = t0;
  for (;;) {
    err = wait_until(s, next);
    if (err) break;
    if (s->child > 0 && s->child_done) break;
    if (s->now - t0 >= o->duration_s) break;
    err = sample(s);
    if (err) break;
    info->samples++;
    progress(s, PFLEX_SWEEP_SAMPLING, s->now - t0, o->duration_s);
    next += period;
    if (next < s->now) next = s->now; /* a slow read: do not try to catch up */
  }
  if (o->argv) {
    bool ended_early = s->child_done;
    stop_child(s);
    info->child_status = s->child_status;
    if (!err && ended_early) {
      int st = s->child_status;
      if (WIFSIGNALED(st))
        err = stop(s, -ECHILD, "the command died of signal %d (%s) during the %.0f W run",
                   WTERMSIG(st), strsignal(WTERMSIG(st)), s->cap_w);
      else if (WIFEXITED(st) && WEXITSTATUS(st) != 0)
        err = stop(s, -ECHILD, "the command exited with status %d during the %.0f W run",
                   WEXITSTATUS(st), s->cap_w);
      /* exit status 0: the job finished before the run's end; what was sampled counts */
    }
  }
  info->tput_samples = s->series.ntput;
  if (!err) {
    info->err = aggregate(s, info);
  } else {
    info->err = err;
    snprintf(info->message, sizeof info->message, "%s", s->res->stop_message);
  }
  pflex_series_release(&s->series);
  s->series_live = false;
  return err;
}

/* Refuses GPUs that already have a restore record: the sweep's final restore
 * would otherwise bring them back to that older original and clear the
 * record, undoing an operator's 'pflex cap set', or change the limits of
 * GPUs another pflex is sweeping right now. */
static int check_unrecorded(struct sweep *s) {
  struct pflex_restore_record *v = NULL;
  size_t n = 0;
  int err = pflex_restore_list(s->rs, &v, &n);
  if (err)
    return stop(s, err, "cannot read the restore records in '%s': %s", pflex_restore_path(s->rs),
                pflex_strerror(err));
  const char *backend = pflex_gpu_backend_name(s->gpu);
  for (size_t k = 0; !err && k < s->o->ngpus; k++) {
    struct pflex_gpu_info info;
    err = pflex_gpu_info(s->gpu, s->o->gpus[k], &info);
    if (err) {
      stop(s, err, "cannot identify GPU %u: %s", s->o->gpus[k], pflex_strerror(err));
      break;
    }
    for (size_t i = 0; i < n; i++) {
      if (v[i].problem[0] || strcmp(v[i].backend, backend) != 0 ||
          strcmp(v[i].uuid, info.uuid) != 0)
        continue;
      err = stop(s, -EBUSY,
                 "GPU %u already has a recorded original limit (%.1f W, by process %lld): "
                 "'pflex cap set', an interrupted sweep or a sweep running now changed it; "
                 "run 'pflex cap restore' first",
                 s->o->gpus[k], v[i].original_mw / 1e3, v[i].pid);
      break;
    }
  }
  free(v);
  return err;
}

int pflex_sweep_run(struct pflex_gpu *gpu, struct pflex_restore *rs,
                    const struct pflex_sweep_opts *o, struct pflex_sweep_result *res) {
  pflex_sweep_result_init(res);
  if (!o->ngpus || !o->ncaps || !o->group || !(o->hz >= 1 && o->hz <= 10) || !(o->duration_s > 0) ||
      !(o->pause_s >= 0) || (o->argv && o->attach) || (o->use_regex && !o->argv))
    return -EINVAL;
  struct sweep s = {.gpu = gpu,
                    .rs = rs,
                    .o = o,
                    .res = res,
                    .child_out = -1,
                    .virtual_clock = pflex_gpu_virtual_clock(gpu)};
  s.last_power = s.last_tput = NAN;
  res->run_info = calloc(o->ncaps, sizeof *res->run_info);
  if (!res->run_info) return -ENOMEM;
  int err = check_unrecorded(&s);
  if (err) return err; /* nothing was changed: nothing to restore */
  if (o->statsd) {
    err = pflex_statsd_open(o->statsd, &s.statsd);
    if (err) stop(&s, err, "cannot listen for StatsD on '%s': %s", o->statsd, pflex_strerror(err));
  }
  for (size_t r = 0; !err && r < o->ncaps; r++) {
    s.run = r;
    s.cap_w = o->caps_w[r];
    struct pflex_sweep_run *info = &res->run_info[res->nrun_info++];
    info->cap_w = s.cap_w;
    info->child_status = -1;
    err = do_run(&s, info);
    if (err && !info->err) {
      info->err = err;
      snprintf(info->message, sizeof info->message, "%s", res->stop_message);
    }
    if (err || r + 1 == o->ncaps || o->pause_s <= 0) continue;
    double p0;
    pflex_gpu_now(gpu, &p0);
    /* The paper's pause starts when the GPUs are idle again; the command was stopped above. */
    for (double t = p0; !err && t < p0 + o->pause_s;) {
      progress(&s, PFLEX_SWEEP_PAUSING, t - p0, o->pause_s);
      double step = fmin(1.0, p0 + o->pause_s - t);
      err = wait_until(&s, t + step);
      pflex_gpu_now(gpu, &t);
    }
  }
  if (s.child > 0) stop_child(&s);
  if (s.child_out >= 0) close(s.child_out);
  if (s.have_regex) pflex_tput_regex_release(&s.regex);
  pflex_statsd_close(s.statsd);
  if (s.series_live) pflex_series_release(&s.series);
  /* Every exit path ends here: bring the swept GPUs back. */
  progress(&s, PFLEX_SWEEP_RESTORING, 0, 0);
  res->restore_err =
      pflex_restore_apply(rs, gpu, o->gpus, o->ngpus, 0, &res->restored, &res->nrestored);
  if (err) return err;
  return res->restore_err;
}
