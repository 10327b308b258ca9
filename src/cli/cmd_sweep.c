/* `pflex sweep`: a live power-cap sweep of one job on one node (the paper's
 * protocol), writing runs CSV and printing the PFI. Limits are restored on
 * every exit path; SIGINT/SIGTERM/SIGHUP/SIGQUIT reach the engine through a self-pipe
 * and are re-raised once the limits are back. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/gpu_cli.h"
#include "cli/progress.h"
#include "cli/util.h"
#include "pflex/pfi.h"
#include "pflex/runs_csv.h"
#include "pflex/runs_provenance.h"
#include "pflex/store.h"
#include "pflex/sweep.h"

struct args {
  struct cli_list caps;
  const char *gpus, *backend, *spec, *statsd, *metric, *regex, *group, *gpu_type, *out, *db,
      *state_dir;
  double hz, duration, pause, sustain, grace;
  bool attach, step_time, quiet, force, profiling;
  int unit; /* enum pflex_tput_unit */
};

static const struct cli_option options[] = {
    {CLI_LIST("caps", "LIST", struct args, caps, 0, 100000,
              "per-GPU caps in W, run in this order: 200:700:100 or 200,500,700"),
     .flags = CLI_REQUIRED | CLI_OPEN_MIN, .expect = "a list of caps in W (e.g. 200:700:100)"},
    {CLI_CUSTOM("gpus", "LIST", struct args, gpus, cli_gpu_list_check, CLI_GPU_LIST_EXPECT,
                "GPUs of the job, e.g. 0-7 (default: all)")},
    {CLI_STRING("backend", "NAME", struct args, backend,
                "nvml (default; env PFLEX_GPU_BACKEND) or sim")},
    {CLI_STRING("sim-job", "SPEC", struct args, spec,
                "sim backend: GPUs, job and clock (docs/gpu.md)")},
    {CLI_DOUBLE("hz", "N", struct args, hz, 1, 10, "samples per second, 1-10 (default 1)")},
    {CLI_FLAG("profiling", struct args, profiling,
              "nvml: also record SM, tensor and DRAM activity with NVML's GPM (Hopper and newer; "
              "the sim backend always does)")},
    {CLI_DOUBLE("duration", "S", struct args, duration, 1e-3, 1e7,
                "seconds per run (default 1800, the paper's 30 minutes)")},
    {CLI_DOUBLE("pause", "S", struct args, pause, 0, 1e6, "pause after each run (default 60)")},
    {CLI_FLAG("attach", struct args, attach,
              "measure a job that is already running (needs --statsd or sim)")},
    {CLI_STRING("statsd", "ADDR", struct args, statsd,
                "throughput from StatsD lines: udp://HOST:PORT or unix:PATH; the command gets "
                "the address in env PFLEX_STATSD")},
    {CLI_STRING("statsd-metric", "NAME", struct args, metric,
                "StatsD metric to follow (default tokens: a counter of tokens)")},
    {CLI_STRING("tput-regex", "RE", struct args, regex,
                "throughput from the command's output: POSIX ERE, number in group 1 (default "
                "without --statsd: a built-in tokens/s pattern)")},
    {CLI_FLAG("step-time", struct args, step_time,
              "the regex number is a time per step (throughput = 1/number)")},
    {CLI_ENUM_FN("tput-unit", "U", struct args, unit, cli_unit_name,
                 "tokens (default), samples, steps or step-time")},
    {CLI_STRING("group", "NAME", struct args, group,
                "sweep group name of the runs (default: sweep)")},
    {CLI_STRING("gpu-type", "NAME", struct args, gpu_type,
                "GPU column of the runs (default: from the device name, e.g. H200)")},
    {CLI_DOUBLE("sustain", "S", struct args, sustain, 0, 1e6,
                "training phase: utilization >= threshold for S seconds (default 30)")},
    {CLI_STRING("out", "FILE", struct args, out,
                "runs CSV to write (default runs.csv); an existing file is refused unless "
                "--force")},
    {CLI_FLAG("force", struct args, force, "replace an existing --out file")},
    {CLI_STRING("db", "FILE", struct args, db,
                "also store the runs in this pflex store (SQLite; created if missing; a group "
                "already stored is refused: choose another --group)")},
    {CLI_STRING("state-dir", "DIR", struct args, state_dir,
                "restore records (env PFLEX_STATE_DIR; default /var/lib/pflex)")},
    {CLI_DOUBLE("stop-grace", "S", struct args, grace, 0.01, 3600,
                "SIGTERM to SIGKILL wait when stopping the command (default 10)")},
    {CLI_FLAG("quiet", struct args, quiet, "no progress line")},
    {CLI_END}};

static const struct cli_spec spec = {
    .name = "sweep",
    .usage = "pflex sweep --caps LIST [options] [-- COMMAND [ARGS...]]",
    .options = options,
    .operands = "COMMAND",
    .max_operands = 4096,
    .in_order = true, /* options end at COMMAND, which keeps its own */
    .notes = "Each run: set the caps (original limits recorded first), start COMMAND fresh, "
             "sample, stop it (SIGTERM to its process group), aggregate the training phase by "
             "the top-10% mean, pause. The command gets env PFLEX_CAP_W. Limits are restored "
             "on success, error, SIGINT, SIGTERM and a crashing command; after kill -9 run "
             "'pflex cap restore'. Needs root or CAP_SYS_ADMIN on real GPUs."};

static const struct cli_spec *const specs[] = {&spec, NULL};

static int sig_pipe[2] = {-1, -1};

static void on_signal(int signo) {
  int saved = errno;
  unsigned char b = (unsigned char)signo;
  if (write(sig_pipe[1], &b, 1) < 0) { /* the pipe is full: a signal is already pending */
  }
  errno = saved;
}

struct ui {
  struct cli_progress pr;
  bool echo_output;
};

static const char *stage_name(enum pflex_sweep_stage st) {
  switch (st) {
  case PFLEX_SWEEP_SETTING: return "setting caps";
  case PFLEX_SWEEP_SAMPLING: return "sampling";
  case PFLEX_SWEEP_PAUSING: return "pause";
  default: return "restoring";
  }
}

static void on_progress(const struct pflex_sweep_progress *p, void *ud) {
  struct ui *ui = ud;
  char pw[32] = "-", tp[32] = "-";
  if (isfinite(p->power_w)) snprintf(pw, sizeof pw, "%.0f W", p->power_w);
  if (isfinite(p->tput)) snprintf(tp, sizeof tp, "%.6g/s", p->tput);
  cli_progress_printf(&ui->pr, false,
                      "[run %zu/%zu] cap %.0f W  %-12s %6.1f/%.1f s  power %s  tput %s", p->run + 1,
                      p->nruns, p->cap_w, stage_name(p->stage), p->elapsed_s, p->total_s, pw, tp);
}

static void on_output(const char *data, size_t len, void *ud) {
  struct ui *ui = ud;
  if (!ui->echo_output) return;
  cli_progress_clear(&ui->pr);
  fwrite(data, 1, len, stderr);
}

/* The runs and the group's PFI (pflex_sweep_pfi). */
static void print_results(const struct pflex_sweep_result *res, const char *unit_name) {
  struct pflex_pfi_result pr;
  int perr = pflex_sweep_pfi(res, &pr);
  printf("%-8s %12s %14s %10s %s\n", "cap_W", "power_W", unit_name, "PFI_i", "note");
  size_t i = 0;
  for (size_t k = 0; k < res->nrun_info; k++) {
    const struct pflex_sweep_run *ri = &res->run_info[k];
    if (ri->err) {
      printf("%-8.0f %12s %14s %10s failed: %s\n", ri->cap_w, "-", "-", "-", ri->message);
      continue;
    }
    const struct pflex_run *r = &res->runs.runs[i];
    char pfi[32] = "-";
    const char *note = "";
    if (!perr && i < pr.n) {
      const struct pflex_pfi_run_result *x = &pr.runs[i];
      if (x->have_pfi_i) snprintf(pfi, sizeof pfi, "%.3f", x->pfi_i);
      if (x->role == PFLEX_PFI_UNCAPPED)
        note = "uncapped (reference)";
      else if (x->reason == PFLEX_PFI_REASON_TMAX_EQUAL)
        note = "left out: throughput equals the uncapped run's";
      else if (x->reason == PFLEX_PFI_REASON_NOISE)
        note = "left out: the cap does not bind (drop within noise)";
    }
    printf("%-8.0f %12.1f %14.6g %10s %s\n", r->cap_w, r->power_w, r->tput, pfi, note);
    i++;
  }
  char ci[64];
  cli_fmt_interval(ci, sizeof ci, pr.ci_low, pr.ci_high);
  if (!perr && pr.have_ci)
    printf("PFI %.3f (95%% CI %s; %zu runs used, %zu left out)\n", pr.pfi, ci, pr.runs_used,
           pr.n_excluded);
  else if (!perr)
    printf("PFI %.3f (%zu runs used, %zu left out)\n", pr.pfi, pr.runs_used, pr.n_excluded);
  else
    printf("PFI: not available (%s)\n",
           perr == -PFLEX_E_NOPOINTS ? "needs the highest-cap run and a capped run that binds"
                                     : pflex_strerror(perr));
  cli_print_provenance(stdout, pflex_runs_provenance(&res->runs, NULL, 0));
  pflex_pfi_result_release(&pr);
}

/* The signals that end a sweep reach the engine through the self-pipe; pflex
 * restores the limits and then dies of the same signal. */
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define NSTOP (sizeof stop_signals / sizeof stop_signals[0])
struct signals {
  struct sigaction old[NSTOP], old_pipe;
};

static int signals_catch(struct signals *sg) {
  if (pipe(sig_pipe) != 0) return -errno;
  for (int i = 0; i < 2; i++) {
    fcntl(sig_pipe[i], F_SETFD, FD_CLOEXEC);
    fcntl(sig_pipe[i], F_SETFL, O_NONBLOCK);
  }
  /* SA_RESTART: a second Ctrl-C cannot break the final restore's slow calls;
   * poll() still wakes up and the self-pipe says why. SIGQUIT (Ctrl-\) would
   * otherwise dump core with the GPUs capped. */
  struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART}, ign = {0};
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < NSTOP; i++)
    sigaction(stop_signals[i], &sa, &sg->old[i]);
  /* A closed stdout or stderr (pflex sweep ... | head) must not kill pflex
   * with the GPUs at a cap: writes fail with EPIPE instead. */
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGPIPE, &ign, &sg->old_pipe);
  return 0;
}

/* Puts the handlers back; the signal that stopped the sweep, or 0. */
static int signals_release(struct signals *sg) {
  unsigned char b;
  int signo = read(sig_pipe[0], &b, 1) == 1 ? b : 0;
  for (size_t i = 0; i < NSTOP; i++)
    sigaction(stop_signals[i], &sg->old[i], NULL);
  sigaction(SIGPIPE, &sg->old_pipe, NULL);
  close(sig_pipe[0]), close(sig_pipe[1]);
  sig_pipe[0] = sig_pipe[1] = -1;
  return signo;
}

/* Restored by now, whatever happened: say so for each GPU. */
static void report_restore(const struct pflex_sweep_result *res, struct pflex_restore *rs) {
  for (size_t i = 0; i < res->nrestored; i++) {
    const struct pflex_restore_result *x = &res->restored[i];
    if (x->changed)
      cli_error("GPU %u (%s) was left at %.1f W: someone changed its limit during the sweep "
                "(pflex had set %.1f W); 'pflex cap restore --force' sets its original %.1f W",
                x->index, x->record.uuid, x->was_mw / 1e3, x->record.set_mw / 1e3,
                x->record.original_mw / 1e3);
    else if (x->restored && x->err)
      cli_error("GPU %u (%s) is back at its original %.1f W, but its record could not be cleared "
                "from '%s': %s; run 'pflex cap restore' once the state directory is writable",
                x->index, x->record.uuid, x->record.original_mw / 1e3, pflex_restore_path(rs),
                pflex_strerror(x->err));
    else if (x->err)
      cli_error("GPU %u (%s) could not be restored to %.1f W: %s; run 'pflex cap restore'",
                x->found ? x->index : x->record.index, x->record.uuid, x->record.original_mw / 1e3,
                pflex_strerror(x->err));
  }
  if (res->restore_err && !res->nrestored)
    cli_error("cannot restore the original limits: %s; run 'pflex cap restore'",
              pflex_strerror(res->restore_err));
  if (!res->restore_err && res->nrestored)
    fprintf(stderr, "restored %zu GPU%s to their original limits\n", res->nrestored,
            res->nrestored == 1 ? "" : "s");
}

/* The runs CSV and (--db) the store; 0 or the first error (said). */
static int write_runs(struct pflex_sweep_result *res, const struct args *a) {
  res->runs.unit = (enum pflex_tput_unit)a->unit;
  print_results(res, pflex_tput_unit_name(res->runs.unit));
  int err = pflex_runs_write_csv(&res->runs, a->out);
  if (err)
    cli_error("cannot write '%s': %s", a->out, pflex_strerror(err));
  else
    fprintf(stderr, "wrote %zu run%s to '%s'\n", res->runs.n, res->runs.n == 1 ? "" : "s", a->out);
  if (!a->db) return err;
  struct pflex_store *st = NULL;
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  int serr = pflex_store_open(a->db, PFLEX_STORE_CREATE, &st, &diag);
  if (!serr) serr = pflex_store_put_runs(st, &res->runs, PFLEX_STORE_REJECT_EXISTING, NULL, &diag);
  if (serr) {
    char buf[1024];
    pflex_diag_format(&diag, buf, sizeof buf);
    cli_error("cannot store the runs in '%s': %s%s%s (they are in '%s')", a->db,
              pflex_strerror(serr), buf[0] ? ": " : "", buf, a->out);
  } else {
    fprintf(stderr, "stored %zu run%s in '%s'\n", res->runs.n, res->runs.n == 1 ? "" : "s", a->db);
  }
  pflex_store_close(st);
  return err ? err : serr;
}

/* What the options ask of the engine. */
static void engine_opts(const struct args *a, char **cmd, const unsigned *idx, size_t n,
                        struct pflex_phase_opts *phase, struct ui *ui, struct pflex_sweep_opts *o) {
  pflex_phase_opts_default(phase);
  if (isfinite(a->sustain)) phase->sustain_s = a->sustain;
  *o = (struct pflex_sweep_opts){.gpus = idx,
                                 .ngpus = n,
                                 .caps_w = a->caps.v,
                                 .ncaps = a->caps.n,
                                 .hz = a->hz,
                                 .duration_s = a->duration,
                                 .pause_s = a->pause,
                                 .argv = cmd,
                                 .attach = a->attach,
                                 .statsd = a->statsd,
                                 .statsd_metric = a->metric,
                                 .use_regex = cmd && (a->regex || !a->statsd),
                                 .tput_regex = a->regex,
                                 .per_step_time = a->step_time,
                                 .phase = phase,
                                 .group = a->group,
                                 .gpu_type = a->gpu_type,
                                 .unit = (enum pflex_tput_unit)a->unit,
                                 .cancel_fd = sig_pipe[0],
                                 .stop_grace_s = a->grace,
                                 .progress = on_progress,
                                 .output = on_output,
                                 .userdata = ui};
}

/* Usage errors that need the backend (a real COMMAND on a virtual clock, ...); 0 if none. */
static int check_usage(struct pflex_gpu *gpu, const struct args *a, char **cmd) {
  bool sim = strcmp(pflex_gpu_backend_name(gpu), "sim") == 0;
  if (!cmd && !a->attach && !sim)
    cli_usage_error(&spec, "give the training COMMAND after '--', or --attach to a running job");
  else if (a->attach && !a->statsd && !sim)
    cli_usage_error(&spec, "--attach needs --statsd: pflex cannot read a running job's output");
  else if (cmd && pflex_gpu_virtual_clock(gpu))
    cli_usage_error(&spec, "the sim backend's virtual clock cannot run a real COMMAND; use "
                           "clock=real in --sim-job, or no COMMAND to run the simulated job");
  else
    return 0;
  return PFLEX_EXIT_USAGE;
}

static void announce(struct pflex_gpu *gpu, struct pflex_restore *rs, const struct args *a,
                     size_t ngpus) {
  fprintf(stderr, "sweep '%s': %zu run%s of %g s on %zu GPU%s (%s backend), caps", a->group,
          a->caps.n, a->caps.n == 1 ? "" : "s", a->duration, ngpus, ngpus == 1 ? "" : "s",
          pflex_gpu_backend_name(gpu));
  for (size_t i = 0; i < a->caps.n; i++)
    fprintf(stderr, "%s%.0f", i ? "," : " ", a->caps.v[i]);
  fprintf(stderr, " W; original limits are recorded%s%s and restored at the end\n",
          pflex_restore_path(rs)[0] ? " in " : " in memory (simulated GPUs)",
          pflex_restore_path(rs));
  if (strcmp(pflex_gpu_backend_name(gpu), "sim") == 0)
    fprintf(stderr, "note: sim backend: simulated GPUs and job, modelled readings\n");
}

/* Runs the sweep with the signals caught; the signal that stopped it, or 0. */
static int sweep(struct pflex_gpu *gpu, struct pflex_restore *rs, const struct args *a, char **cmd,
                 const unsigned *idx, size_t n, int *ret_status) {
  struct signals sg;
  if (signals_catch(&sg)) {
    cli_error("cannot create a pipe: %s", strerror(errno));
    return 0;
  }
  struct pflex_phase_opts phase;
  struct ui ui = {.echo_output = true};
  cli_progress_init(&ui.pr, "sweep", a->quiet);
  struct pflex_sweep_opts o;
  engine_opts(a, cmd, idx, n, &phase, &ui, &o);
  announce(gpu, rs, a, n);
  struct pflex_sweep_result res;
  int err = pflex_sweep_run(gpu, rs, &o, &res);
  cli_progress_clear(&ui.pr);
  int signo = signals_release(&sg);
  if (res.stop_err && res.stop_err != -ECANCELED) cli_error("sweep stopped: %s", res.stop_message);
  report_restore(&res, rs);
  if (res.runs.n && write_runs(&res, a) && !err) err = -EIO;
  pflex_sweep_result_release(&res);
  *ret_status = err ? PFLEX_EXIT_FAIL : PFLEX_EXIT_OK;
  return signo;
}

static int run(int argc, char **argv) {
  struct args a = {.group = "sweep", .out = "runs.csv", .hz = 1, .duration = 1800, .pause = 60,
                   .sustain = NAN, .grace = 10, .unit = PFLEX_TPUT_TOKENS_PER_S};
  struct cli_parsed p;
  int status = cli_parse(&spec, argc, argv, &a, &p);
  if (status) {
    cli_release(&spec, &a);
    return cli_parse_status(status);
  }
  char **cmd = p.noperands ? p.operands : NULL;
  status = PFLEX_EXIT_USAGE;
  if (cmd && a.attach)
    cli_usage_error(&spec, "--attach measures a running job: give no COMMAND");
  else if ((a.regex || a.step_time) && !cmd)
    cli_usage_error(&spec, "--tput-regex and --step-time read the output of a COMMAND given "
                           "after '--'");
  else if (!a.force && access(a.out, F_OK) == 0) /* hours of measurement must not replace it */
    cli_usage_error(&spec, "'%s' exists: give --out another file, or --force to replace it", a.out);
  else
    status = PFLEX_EXIT_FAIL;
  struct pflex_gpu *gpu = NULL;
  struct pflex_restore *rs = NULL;
  unsigned *idx = NULL;
  size_t nidx = 0;
  int signo = 0;
  if (status == PFLEX_EXIT_USAGE) goto out;
  int err = cli_gpu_open(a.backend, a.spec, a.profiling ? "gpm=on" : NULL, &gpu);
  if (err) {
    status = err == -ENOENT ? PFLEX_EXIT_USAGE : PFLEX_EXIT_FAIL;
    goto out;
  }
  if ((status = check_usage(gpu, &a, cmd)) != 0) goto out;
  status = PFLEX_EXIT_FAIL;
  if (cli_gpu_select(gpu, a.gpus, &idx, &nidx)) goto out;
  struct pflex_sweep_opts check = {.gpus = idx, .ngpus = nidx, .caps_w = a.caps.v, .ncaps = a.caps.n};
  char msg[256];
  if ((err = pflex_sweep_check(gpu, &check, msg, sizeof msg)) != 0) {
    if (err == -ERANGE)
      cli_error("%s; nothing changed", msg);
    else
      cli_gpu_error(gpu, "cannot check the caps of", idx[0], err);
    goto out;
  }
  if (cli_restore_open(gpu, a.state_dir, true, &rs)) goto out;
  signo = sweep(gpu, rs, &a, cmd, idx, nidx, &status);
out:
  pflex_restore_free(rs);
  pflex_gpu_close(gpu);
  free(idx);
  cli_release(&spec, &a);
  if (!signo) return status;
  /* Die of the same signal, as a shell expects of an interrupted program. */
  fprintf(stderr, "stopped by signal %d (%s)\n", signo, strsignal(signo));
  signal(signo, SIG_DFL);
  raise(signo);
  return 128 + signo;
}

const struct pflex_cmd pflex_cmd_sweep = {
    .name = "sweep",
    .run = run,
    .summary = "live power-cap sweep of a training job: runs CSV and PFI",
    .specs = specs};
