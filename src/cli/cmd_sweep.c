/* `pflex sweep`: a live power-cap sweep of one job on one node (the paper's
 * protocol), writing runs CSV and printing the PFI. Limits are restored on
 * every exit path; SIGINT/SIGTERM/SIGHUP/SIGQUIT reach the engine through a self-pipe
 * and are re-raised once the limits are back. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/gpu_cli.h"
#include "cli/util.h"
#include "pflex/pfi.h"
#include "pflex/runs_csv.h"
#include "pflex/store.h"
#include "pflex/sweep.h"

static const char usage[] =
    "pflex sweep --caps LIST [options] [-- COMMAND [ARGS...]]\n"
    "  --caps LIST          per-GPU caps in W, run in this order: 200:700:100 or 200,500,700\n"
    "  --gpus LIST          GPUs of the job, e.g. 0-7 (default: all)\n"
    "  --backend NAME       nvml (default; env PFLEX_GPU_BACKEND) or sim\n"
    "  --sim-job SPEC       sim backend: GPUs, job and clock (docs/gpu.md)\n"
    "  --hz N               samples per second, 1-10 (default 1)\n"
    "  --duration S         seconds per run (default 1800, the paper's 30 minutes)\n"
    "  --pause S            pause after each run (default 60)\n"
    "  --attach             measure a job that is already running (needs --statsd or sim)\n"
    "  --statsd ADDR        throughput from StatsD lines: udp://HOST:PORT or unix:PATH; the\n"
    "                       command gets the address in env PFLEX_STATSD\n"
    "  --statsd-metric NAME StatsD metric to follow (default tokens: a counter of tokens)\n"
    "  --tput-regex RE      throughput from the command's output: POSIX ERE, number in group 1\n"
    "                       (default without --statsd: a built-in tokens/s pattern)\n"
    "  --step-time          the regex number is a time per step (throughput = 1/number)\n"
    "  --tput-unit U        tokens (default), samples, steps or step-time\n"
    "  --group NAME         sweep group name of the runs (default: sweep)\n"
    "  --gpu-type NAME      GPU column of the runs (default: from the device name, e.g. H200)\n"
    "  --sustain S          training phase: utilization >= threshold for S seconds (default 30)\n"
    "  --out FILE           runs CSV to write (default runs.csv)\n"
    "  --db FILE            also store the runs in this pflex store (SQLite; created if missing;\n"
    "                       a group already stored is refused: choose another --group)\n"
    "  --state-dir DIR      restore records (env PFLEX_STATE_DIR; default /var/lib/pflex)\n"
    "  --stop-grace S       SIGTERM to SIGKILL wait when stopping the command (default 10)\n"
    "  --quiet              no progress line\n"
    "Each run: set the caps (original limits recorded first), start COMMAND fresh, sample,\n"
    "stop it (SIGTERM to its process group), aggregate the training phase by the top-10% mean,\n"
    "pause. The command gets env PFLEX_CAP_W. Limits are restored on success, error, SIGINT,\n"
    "SIGTERM and a crashing command; after kill -9 run 'pflex cap restore'. Needs root or\n"
    "CAP_SYS_ADMIN on real GPUs.";

static int sig_pipe[2] = {-1, -1};

static void on_signal(int signo) {
  int saved = errno;
  unsigned char b = (unsigned char)signo;
  if (write(sig_pipe[1], &b, 1) < 0) { /* the pipe is full: a signal is already pending */
  }
  errno = saved;
}

struct ui {
  bool progress;
  bool line_open;
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
  if (!ui->progress) return;
  char pw[32] = "-", tp[32] = "-";
  if (isfinite(p->power_w)) snprintf(pw, sizeof pw, "%.0f W", p->power_w);
  if (isfinite(p->tput)) snprintf(tp, sizeof tp, "%.6g/s", p->tput);
  fprintf(stderr, "\r\033[K[run %zu/%zu] cap %.0f W  %-12s %6.1f/%.1f s  power %s  tput %s",
          p->run + 1, p->nruns, p->cap_w, stage_name(p->stage), p->elapsed_s, p->total_s, pw, tp);
  ui->line_open = true;
}

static void on_output(const char *data, size_t len, void *ud) {
  struct ui *ui = ud;
  if (!ui->echo_output) return;
  if (ui->line_open) fputs("\r\033[K", stderr), ui->line_open = false;
  fwrite(data, 1, len, stderr);
}

/* The runs and the group's PFI (Eq. 1 and 3, pflex/pfi.h defaults: the
 * highest cap is the reference, caps whose throughput drop is within noise are
 * left out, 95% Monte Carlo CI from the runs' standard errors). */
static void print_results(const struct pflex_sweep_result *res, const char *unit_name) {
  const struct pflex_runset *rs = &res->runs;
  struct pflex_pfi_point *pts = calloc(rs->n ? rs->n : 1, sizeof *pts);
  struct pflex_pfi_result pr;
  pflex_pfi_result_init(&pr);
  int perr = -ENOMEM;
  if (pts) {
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
    perr = rs->n >= 2 ? pflex_pfi_compute(pts, rs->n, &po, &pr) : -PFLEX_E_NOPOINTS;
  }
  printf("%-8s %12s %14s %10s %s\n", "cap_W", "power_W", unit_name, "PFI_i", "note");
  size_t i = 0;
  for (size_t k = 0; k < res->nrun_info; k++) {
    const struct pflex_sweep_run *ri = &res->run_info[k];
    if (ri->err) {
      printf("%-8.0f %12s %14s %10s failed: %s\n", ri->cap_w, "-", "-", "-", ri->message);
      continue;
    }
    const struct pflex_run *r = &rs->runs[i];
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
  if (!perr && pr.have_ci)
    printf("PFI %.3f (95%% CI %.3f-%.3f; %zu runs used, %zu left out)\n", pr.pfi, pr.ci_low,
           pr.ci_high, pr.runs_used, pr.n_excluded);
  else if (!perr)
    printf("PFI %.3f (%zu runs used, %zu left out)\n", pr.pfi, pr.runs_used, pr.n_excluded);
  else
    printf("PFI: not available (%s)\n",
           perr == -PFLEX_E_NOPOINTS ? "needs the highest-cap run and a capped run that binds"
                                     : pflex_strerror(perr));
  pflex_pfi_result_release(&pr);
  free(pts);
}

static int run(int argc, char **argv) {
  static const struct option lopts[] = {{"caps", required_argument, NULL, 'c'},
                                        {"gpus", required_argument, NULL, 'g'},
                                        {"backend", required_argument, NULL, 'b'},
                                        {"sim-job", required_argument, NULL, 'S'},
                                        {"hz", required_argument, NULL, 'h'},
                                        {"duration", required_argument, NULL, 'd'},
                                        {"pause", required_argument, NULL, 'p'},
                                        {"attach", no_argument, NULL, 'a'},
                                        {"statsd", required_argument, NULL, 's'},
                                        {"statsd-metric", required_argument, NULL, 'm'},
                                        {"tput-regex", required_argument, NULL, 'r'},
                                        {"step-time", no_argument, NULL, 't'},
                                        {"tput-unit", required_argument, NULL, 'u'},
                                        {"group", required_argument, NULL, 'G'},
                                        {"gpu-type", required_argument, NULL, 'T'},
                                        {"sustain", required_argument, NULL, 'y'},
                                        {"out", required_argument, NULL, 'o'},
                                        {"db", required_argument, NULL, 'D'},
                                        {"state-dir", required_argument, NULL, 'z'},
                                        {"stop-grace", required_argument, NULL, 'k'},
                                        {"quiet", no_argument, NULL, 'q'},
                                        {NULL, 0, NULL, 0}};
  const char *caps_s = NULL, *gpus_s = NULL, *backend = NULL, *spec = NULL, *statsd_s = NULL;
  const char *metric = NULL, *regex = NULL, *group = "sweep", *gpu_type = NULL, *out = "runs.csv";
  const char *db = NULL, *state_dir = NULL;
  double hz = 1, duration = 1800, pause = 60, sustain = NAN, grace = 10;
  bool attach = false, step_time = false, quiet = false;
  enum pflex_tput_unit unit = PFLEX_TPUT_TOKENS_PER_S;
  int c;
  optind = 1;
  /* '+': options end at the first non-option, so the command keeps its own. */
  while ((c = getopt_long(argc, argv, "+", lopts, NULL)) != -1) {
    int err = 0;
    switch (c) {
    case 'c': caps_s = optarg; break;
    case 'g': gpus_s = optarg; break;
    case 'b': backend = optarg; break;
    case 'S': spec = optarg; break;
    case 'h': err = cli_parse_double("--hz", optarg, 1, 10, &hz); break;
    case 'd': err = cli_parse_double("--duration", optarg, 1e-3, 1e7, &duration); break;
    case 'p': err = cli_parse_double("--pause", optarg, 0, 1e6, &pause); break;
    case 'a': attach = true; break;
    case 's': statsd_s = optarg; break;
    case 'm': metric = optarg; break;
    case 'r': regex = optarg; break;
    case 't': step_time = true; break;
    case 'u':
      if (cli_parse_unit(optarg, &unit)) {
        cli_error("invalid --tput-unit '%s' (tokens, samples, steps, step-time)", optarg);
        err = -EINVAL;
      }
      break;
    case 'G': group = optarg; break;
    case 'T': gpu_type = optarg; break;
    case 'y': err = cli_parse_double("--sustain", optarg, 0, 1e6, &sustain); break;
    case 'o': out = optarg; break;
    case 'D': db = optarg; break;
    case 'z': state_dir = optarg; break;
    case 'k': err = cli_parse_double("--stop-grace", optarg, 0.01, 3600, &grace); break;
    case 'q': quiet = true; break;
    default: err = -EINVAL; break;
    }
    if (err) {
      fprintf(stderr, "usage: %s\n", usage);
      return PFLEX_EXIT_USAGE;
    }
  }
  char **cmd = optind < argc ? argv + optind : NULL;
  if (!caps_s) {
    cli_error("--caps is required");
    return PFLEX_EXIT_USAGE;
  }
  if (cmd && attach) {
    cli_error("--attach measures a running job: give no COMMAND");
    return PFLEX_EXIT_USAGE;
  }
  if ((regex || step_time) && !cmd) {
    cli_error("--tput-regex and --step-time read the output of a COMMAND given after '--'");
    return PFLEX_EXIT_USAGE;
  }
  double *caps;
  size_t ncaps;
  if (cli_parse_list(caps_s, &caps, &ncaps)) {
    cli_error("invalid --caps '%s': expected e.g. 200:700:100 or 200,500,700", caps_s);
    return PFLEX_EXIT_USAGE;
  }
  /* udp://HOST:PORT is the usual StatsD URL form; the receiver wants udp:HOST:PORT. */
  char statsd[512] = "";
  if (statsd_s) {
    if (strncmp(statsd_s, "udp://", 6) == 0)
      snprintf(statsd, sizeof statsd, "udp:%s", statsd_s + 6);
    else if (strncmp(statsd_s, "unix://", 7) == 0)
      snprintf(statsd, sizeof statsd, "unix:%s", statsd_s + 7);
    else
      snprintf(statsd, sizeof statsd, "%s", statsd_s);
  }

  struct pflex_gpu *gpu = NULL;
  struct pflex_restore *rs = NULL;
  unsigned *idx = NULL;
  size_t nidx = 0;
  int status = PFLEX_EXIT_FAIL;
  int oerr = cli_gpu_open(backend, spec, &gpu);
  if (oerr) {
    if (oerr == -ENOENT) status = PFLEX_EXIT_USAGE;
    goto out;
  }
  bool sim = strcmp(pflex_gpu_backend_name(gpu), "sim") == 0;
  if (!cmd && !attach && !sim) {
    cli_error("give the training COMMAND after '--', or --attach to a running job");
    status = PFLEX_EXIT_USAGE;
    goto out;
  }
  if (attach && !statsd[0] && !sim) {
    cli_error("--attach needs --statsd: pflex cannot read a running job's output");
    status = PFLEX_EXIT_USAGE;
    goto out;
  }
  if (cmd && pflex_gpu_virtual_clock(gpu)) {
    cli_error("the sim backend's virtual clock cannot run a real COMMAND; use clock=real in "
              "--sim-job, or no COMMAND to run the simulated job");
    status = PFLEX_EXIT_USAGE;
    goto out;
  }
  if (cli_gpu_select(gpu, gpus_s, &idx, &nidx)) goto out;

  struct pflex_phase_opts phase;
  pflex_phase_opts_default(&phase);
  if (isfinite(sustain)) phase.sustain_s = sustain;
  struct ui ui = {.progress = !quiet && cli_progress_enabled(), .echo_output = true};
  struct pflex_sweep_opts o = {.gpus = idx,
                               .ngpus = nidx,
                               .caps_w = caps,
                               .ncaps = ncaps,
                               .hz = hz,
                               .duration_s = duration,
                               .pause_s = pause,
                               .argv = cmd,
                               .attach = attach,
                               .statsd = statsd[0] ? statsd : NULL,
                               .statsd_metric = metric,
                               .use_regex = cmd && (regex || !statsd[0]),
                               .tput_regex = regex,
                               .per_step_time = step_time,
                               .phase = &phase,
                               .group = group,
                               .gpu_type = gpu_type,
                               .unit = unit,
                               .cancel_fd = -1,
                               .stop_grace_s = grace,
                               .progress = on_progress,
                               .output = on_output,
                               .userdata = &ui};
  char msg[256];
  int err = pflex_sweep_check(gpu, &o, msg, sizeof msg);
  if (err) {
    if (err == -ERANGE)
      cli_error("%s; nothing changed", msg);
    else
      cli_gpu_error(gpu, "cannot check the caps of", idx[0], err);
    goto out;
  }
  if (cli_restore_open(gpu, state_dir, true, &rs)) goto out;

  if (pipe(sig_pipe) != 0) {
    cli_error("cannot create a pipe: %s", strerror(errno));
    goto out;
  }
  for (int i = 0; i < 2; i++) {
    fcntl(sig_pipe[i], F_SETFD, FD_CLOEXEC);
    fcntl(sig_pipe[i], F_SETFL, O_NONBLOCK);
  }
  struct sigaction sa, old_int, old_term, old_hup, old_quit;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  /* Restart slow calls (flock, write) so a second Ctrl-C cannot break the final
   * restore; poll() still wakes up, and the self-pipe says why. */
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGHUP, &sa, &old_hup);
  sigaction(SIGQUIT, &sa, &old_quit); /* Ctrl-\ would otherwise dump core with the GPUs capped */
  o.cancel_fd = sig_pipe[0];
  /* A closed stdout or stderr (pflex sweep ... | head) must not kill pflex
   * with the GPUs at a cap: writes fail with EPIPE instead. */
  struct sigaction ign, old_pipe;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGPIPE, &ign, &old_pipe);

  fprintf(stderr, "sweep '%s': %zu run%s of %g s on %zu GPU%s (%s backend), caps", group, ncaps,
          ncaps == 1 ? "" : "s", duration, nidx, nidx == 1 ? "" : "s", pflex_gpu_backend_name(gpu));
  for (size_t i = 0; i < ncaps; i++)
    fprintf(stderr, "%s%.0f", i ? "," : " ", caps[i]);
  fprintf(stderr, " W; original limits are recorded%s%s and restored at the end\n",
          pflex_restore_path(rs)[0] ? " in " : " in memory (simulated GPUs)",
          pflex_restore_path(rs));
  if (sim) fprintf(stderr, "note: sim backend: simulated GPUs and job, modelled readings\n");

  struct pflex_sweep_result res;
  err = pflex_sweep_run(gpu, rs, &o, &res);
  if (ui.line_open) fputs("\r\033[K", stderr);
  int signo = 0;
  unsigned char b;
  if (read(sig_pipe[0], &b, 1) == 1) signo = b;
  if (res.stop_err && res.stop_err != -ECANCELED) cli_error("sweep stopped: %s", res.stop_message);
  /* Restored by now, whatever happened: say so for each GPU. */
  for (size_t i = 0; i < res.nrestored; i++) {
    const struct pflex_restore_result *x = &res.restored[i];
    if (x->changed)
      cli_error("GPU %u (%s) was left at %.1f W: someone changed its limit during the sweep "
                "(pflex had set %.1f W); 'pflex cap restore --force' sets its original %.1f W",
                x->index, x->record.uuid, x->was_mw / 1e3, x->record.set_mw / 1e3,
                x->record.original_mw / 1e3);
    else if (x->restored)
      cli_error("GPU %u (%s) is back at its original %.1f W, but its record could not be cleared "
                "from '%s': %s; run 'pflex cap restore' once the state directory is writable",
                x->index, x->record.uuid, x->record.original_mw / 1e3, pflex_restore_path(rs),
                pflex_strerror(x->err));
    else if (x->err)
      cli_error("GPU %u (%s) could not be restored to %.1f W: %s; run 'pflex cap restore'",
                x->found ? x->index : x->record.index, x->record.uuid, x->record.original_mw / 1e3,
                pflex_strerror(x->err));
  }
  if (res.restore_err && !res.nrestored)
    cli_error("cannot restore the original limits: %s; run 'pflex cap restore'",
              pflex_strerror(res.restore_err));
  if (!res.restore_err && res.nrestored)
    fprintf(stderr, "restored %zu GPU%s to their original limits\n", res.nrestored,
            res.nrestored == 1 ? "" : "s");
  if (res.runs.n) {
    res.runs.unit = unit;
    print_results(&res, pflex_tput_unit_name(unit));
    int werr = pflex_runs_write_csv(&res.runs, out);
    if (werr)
      cli_error("cannot write '%s': %s", out, pflex_strerror(werr));
    else
      fprintf(stderr, "wrote %zu run%s to '%s'\n", res.runs.n, res.runs.n == 1 ? "" : "s", out);
    if (werr) err = werr;
    if (db) {
      struct pflex_store *st = NULL;
      struct pflex_diag diag;
      pflex_diag_clear(&diag);
      int serr = pflex_store_open(db, PFLEX_STORE_CREATE, &st, &diag);
      if (!serr)
        serr = pflex_store_put_runs(st, &res.runs, PFLEX_STORE_REJECT_EXISTING, NULL, &diag);
      if (serr) {
        char buf[1024];
        pflex_diag_format(&diag, buf, sizeof buf);
        cli_error("cannot store the runs in '%s': %s%s%s (they are in '%s')", db,
                  pflex_strerror(serr), buf[0] ? ": " : "", buf, out);
        err = serr;
      } else {
        fprintf(stderr, "stored %zu run%s in '%s'\n", res.runs.n, res.runs.n == 1 ? "" : "s", db);
      }
      pflex_store_close(st);
    }
  }
  pflex_sweep_result_release(&res);
  status = err ? PFLEX_EXIT_FAIL : PFLEX_EXIT_OK;
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  sigaction(SIGHUP, &old_hup, NULL);
  sigaction(SIGQUIT, &old_quit, NULL);
  sigaction(SIGPIPE, &old_pipe, NULL);
  if (signo) {
    fprintf(stderr, "stopped by signal %d (%s)\n", signo, strsignal(signo));
    pflex_restore_free(rs);
    pflex_gpu_close(gpu);
    free(idx);
    free(caps);
    /* Die of the same signal, as a shell expects of an interrupted program. */
    signal(signo, SIG_DFL);
    raise(signo);
    return 128 + signo;
  }
out:
  if (sig_pipe[0] >= 0) close(sig_pipe[0]), close(sig_pipe[1]);
  pflex_restore_free(rs);
  pflex_gpu_close(gpu);
  free(idx);
  free(caps);
  return status;
}

const struct pflex_cmd pflex_cmd_sweep = {
    .name = "sweep",
    .run = run,
    .summary = "live power-cap sweep of a training job: runs CSV and PFI",
    .usage = usage};
