/* Live power-cap sweeps: the paper's measurement protocol on one node
 * (paper.md section 2, docs/gpu.md).
 *
 * For each cap: set the limit of every selected GPU (restore record first,
 * pflex/restore.h) and read it back, start the training command fresh (or
 * stay attached to a running job, or restart the simulated job), sample the
 * GPUs at 1-10 Hz for the run's duration while collecting throughput (StatsD
 * lines, a regular expression over the command's output, or the simulated
 * job's rate), stop the command, detect phases and aggregate the training
 * phase by the top-10% mean (pflex/series.h), and pause. Whatever happens
 * (success, a GPU lost, a command crashing, cancellation through cancel_fd)
 * every swept GPU is brought back to its original limit before returning.
 *
 * The engine runs on the gpu ops only, so the nvml and sim backends share one
 * code path; with a virtual clock (sim) a 30-minute run takes milliseconds. */
#ifndef PFLEX_SWEEP_H
#define PFLEX_SWEEP_H

#include <stdbool.h>
#include <stddef.h>

#include "pflex/gpu.h"
#include "pflex/pfi.h"
#include "pflex/restore.h"
#include "pflex/runs.h"
#include "pflex/series.h"

enum pflex_sweep_stage {
  PFLEX_SWEEP_SETTING = 0, /* setting the limits of a run */
  PFLEX_SWEEP_SAMPLING,    /* a run in progress */
  PFLEX_SWEEP_PAUSING,     /* between runs */
  PFLEX_SWEEP_RESTORING,   /* bringing the limits back */
};

/* Passed to the progress callback about once per sample tick. */
struct pflex_sweep_progress {
  enum pflex_sweep_stage stage;
  size_t run, nruns; /* 0-based run index and the number of runs */
  double cap_w;
  double elapsed_s; /* in the current run or pause */
  double total_s;   /* its planned length */
  double power_w;   /* last sample: power summed over the swept GPUs (NAN if none) */
  double tput;      /* last throughput sample (NAN if none yet) */
};

struct pflex_sweep_opts {
  const unsigned *gpus; /* GPU indexes of the job */
  size_t ngpus;
  const double *caps_w; /* per-GPU caps in W, run in this order */
  size_t ncaps;
  double hz;                 /* sampling rate, 1..10 (paper's DCGM: 0.2) */
  double duration_s;         /* length of each run (paper: 1800) */
  double pause_s;            /* pause after each run (paper: 60) */
  char *const *argv;         /* command started fresh for every run, NULL-terminated; NULL
                                when attached or when the simulated job is used */
  bool attach;               /* measure a job that is already running */
  const char *statsd;        /* StatsD address (pflex/tput.h) or NULL */
  const char *statsd_metric; /* metric name (NULL = "tokens") */
  bool use_regex;            /* take throughput from the command's output lines */
  const char *tput_regex;    /* pattern (NULL = pflex_tput_default_pattern) */
  bool per_step_time;        /* the regex number is a time per step */
  const struct pflex_phase_opts *phase; /* NULL = the paper's (pflex_phase_opts_default) */
  const char *group;                    /* group name of the runs (required) */
  const char *gpu_type;      /* GPU type column (NULL: from the GPU's name, e.g. "H200") */
  enum pflex_tput_unit unit; /* unit of the throughput collected */
  int cancel_fd;             /* readable -> stop at once (e.g. a signal self-pipe); -1: none */
  double stop_grace_s;       /* SIGTERM to SIGKILL wait for the command (0 = 10 s) */
  /* Called about once per tick (may be NULL). */
  void (*progress)(const struct pflex_sweep_progress *p, void *userdata);
  /* Receives the command's output when use_regex captures it (may be NULL). */
  void (*output)(const char *data, size_t len, void *userdata);
  void *userdata;
};

/* What happened to one run. */
struct pflex_sweep_run {
  double cap_w;
  int err;           /* 0: aggregated into the runset; else why not */
  char message[256]; /* a reason when err != 0 */
  size_t samples, tput_samples;
  int child_status; /* wait status of the command (when one ran), else -1 */
};

struct pflex_sweep_result {
  struct pflex_runset runs;         /* one row per successful run */
  struct pflex_sweep_run *run_info; /* one per attempted run */
  size_t nrun_info;
  int stop_err; /* 0, or what ended the sweep early */
  char stop_message[256];
  struct pflex_restore_result *restored; /* the final restore, per GPU */
  size_t nrestored;
  int restore_err; /* 0 when every swept GPU is back at its original limit */
};

/* Empties a result; release frees what a sweep put in it (and accepts an empty one). */
void pflex_sweep_result_init(struct pflex_sweep_result *res);
void pflex_sweep_result_release(struct pflex_sweep_result *res);

/* Checks that every cap is inside every GPU's settable range. -ERANGE with a
 * message naming the GPU and its range otherwise. Changes nothing. */
int pflex_sweep_check(struct pflex_gpu *gpu, const struct pflex_sweep_opts *opts, char *errbuf,
                      size_t errlen);

/* Runs the sweep. `res` (initialized here, released by the caller) is filled
 * whatever happens. Returns 0 when every run was attempted and the limits
 * were restored; -ECANCELED when cancel_fd fired; -ECHILD when the command
 * died of a signal or failed; -EBUSY, changing nothing, when a selected GPU
 * already has a restore record (its final restore would undo that older
 * change); a GPU error (-ENODEV for a lost GPU, -EPERM ...)
 * when one ended the sweep; or the restore error. -EINVAL for bad options. */
int pflex_sweep_run(struct pflex_gpu *gpu, struct pflex_restore *restore,
                    const struct pflex_sweep_opts *opts, struct pflex_sweep_result *res);

/* The sweep's PFI (Eq. 1 and 3 with the pflex/pfi.h defaults: the highest cap
 * is the reference, caps whose drop is within noise are left out, a 95%
 * Monte Carlo CI from the runs' standard errors); *ret (initialized here,
 * released by the caller) holds one entry per successful run, in order.
 * -PFLEX_E_NOPOINTS with fewer than two runs. */
int pflex_sweep_pfi(const struct pflex_sweep_result *res, struct pflex_pfi_result *ret);

/* The GPU type for the runs CSV from a device name: the GPU table's name when
 * it knows the GPU ("NVIDIA H200" -> "H200", "NVIDIA H100 80GB HBM3" -> "H100",
 * "NVIDIA H100 PCIe" -> "H100-PCIE", "Tesla V100-SXM2-32GB" -> "V100"), else
 * the first word after "NVIDIA ", or the name itself when nothing fits. */
void pflex_sweep_gpu_type(const char *device_name, char *buf, size_t size);

#endif
