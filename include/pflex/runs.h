/* Runs and sweep groups: the in-memory form of the runs CSV (docs/formats.md).
 *
 * A run is one measurement of a job at one per-GPU power cap. Runs that share
 * a `group` name form a sweep group; the group's uncapped run is its run at
 * the highest cap. Throughput is always stored as a rate where higher is
 * better (a time per step is inverted on import), in the unit the runset
 * records; only tokens/s gives absolute token figures, any other unit is
 * meaningful as a ratio only. */
#ifndef PFLEX_RUNS_H
#define PFLEX_RUNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "pflex/error.h"

enum pflex_arch { PFLEX_ARCH_UNKNOWN = 0, PFLEX_ARCH_DENSE, PFLEX_ARCH_MOE };
enum pflex_task { PFLEX_TASK_UNKNOWN = 0, PFLEX_TASK_PT, PFLEX_TASK_FT };

/* The unit of pflex_run.tput for a whole runset. */
enum pflex_tput_unit {
  PFLEX_TPUT_TOKENS_PER_S = 0, /* tokens/s: absolute */
  PFLEX_TPUT_SAMPLES_PER_S,    /* relative only */
  PFLEX_TPUT_STEPS_PER_S,      /* relative only */
  PFLEX_TPUT_PER_STEP_TIME,    /* 1 / (seconds per step or epoch): relative only */
};

/* Bits of pflex_run.have: which optional fields were given. */
enum pflex_run_field {
  PFLEX_RUN_POWER_SD = 1u << 0,
  PFLEX_RUN_TPUT_SD = 1u << 1,
  PFLEX_RUN_SEQ_LEN = 1u << 2,
  PFLEX_RUN_BATCH = 1u << 3,
  PFLEX_RUN_EP = 1u << 4,
  PFLEX_RUN_COMPILE = 1u << 5,
  PFLEX_RUN_GRAD_CKPT = 1u << 6,
};

/* Largest gpus, seq_len, batch or ep a runs file may give (each is >= 1): far
 * above any real job, and small enough for int arithmetic on it. */
#define PFLEX_RUN_INT_MAX 1000000

struct pflex_run {
  char *group;     /* sweep group name (required) */
  char *gpu;       /* GPU type, e.g. "H200" (required) */
  int gpus;        /* GPU count of the job (required, > 0) */
  double cap_w;    /* per-GPU power cap in W; the TDP when uncapped (required) */
  double power_w;  /* aggregate measured power of all the job's GPUs, W (required) */
  double tput;     /* throughput in the runset's unit, higher is better (required) */
  double power_sd; /* noise of power_w as a measurement, the SD the PFI CI draws from:
                      the SE of a top-10% mean, or the spread of repeats (PFLEX_RUN_POWER_SD) */
  double tput_sd;  /* the same for tput (PFLEX_RUN_TPUT_SD) */
  char *model;     /* optional, NULL when absent */
  char *set;       /* optional: headline, validation, h100, ... */
  enum pflex_arch arch;
  enum pflex_task task;
  int seq_len, batch, ep;
  bool compile, grad_ckpt;
  unsigned have; /* enum pflex_run_field bits */
  char **extra;  /* runset->nextra values of the other columns, verbatim ("" if empty) */
  size_t line;   /* line in the source file, 0 if not from a file */
};

struct pflex_runset {
  struct pflex_run *runs;
  size_t n, cap_runs;
  char **extra_names; /* names of the columns kept verbatim (telemetry, unknown) */
  size_t nextra;
  enum pflex_tput_unit unit;
  char *source;       /* file it was read from, or NULL */
  unsigned char *over_one; /* internal: cache of pflex_runset_column_over_one per extra
                              column (0 not known, 1 no, 2 yes), NULL when empty; the
                              functions below that change the runset drop it */
  struct pflex__runs_groups *groups_memo; /* internal: pflex_runset_groups' grouping, kept
                                            until the runset changes (dropped as over_one) */
  struct pflex__arena *strings; /* internal: every run's strings (group, gpu, model, set,
                                   extra cells), freed with the runset; a run's strings
                                   are read-only and never freed on their own */
};

struct pflex_group {
  const char *name; /* borrowed from the first run */
  size_t *runs;     /* indexes into runset->runs, sorted by cap ascending */
  size_t n;
  size_t uncapped; /* index into runset->runs of the run at the highest cap */
};

/* Makes set an empty runset; pflex_runset_release frees it (NULL allowed) and leaves it empty. */
void pflex_runset_init(struct pflex_runset *set);
void pflex_runset_release(struct pflex_runset *set);

/* The index of extra column name in *ret_index: 0, or -ENOENT when there is none. */
int pflex_runset_find_column(const struct pflex_runset *set, const char *name, size_t *ret_index);

/* True when some cell of extra column k holds a finite number above 1 (a
 * utilization column in percent rather than as a fraction). Linear in the runs
 * the first time for a column, then constant: the answer is cached in the
 * runset until it changes (not thread-safe while the cache fills). */
bool pflex_runset_column_over_one(const struct pflex_runset *set, size_t k);

/* Registers an extra column name (idempotent) and returns its index in *ret_index. */
int pflex_runset_add_column(struct pflex_runset *set, const char *name, size_t *ret_index);

/* Appends a deep copy of run (its extra array, if not NULL, has set->nextra entries). */
int pflex_runset_append(struct pflex_runset *set, const struct pflex_run *run);

/* Sets extra column `name` of run i to value (adding the column if needed). */
int pflex_runset_set_extra(struct pflex_runset *set, size_t i, const char *name, const char *value);

/* The value of extra column `name` of run i as a finite number: 0, -ENOENT when the
 * column does not exist, -ENODATA when the cell is empty, -EINVAL when not a number. */
int pflex_runset_metric(const struct pflex_runset *set, size_t i, const char *name, double *ret);

/* Splits the runs into sweep groups in order of first appearance. The array
 * and each group's runs array are freed by pflex_groups_free. Which run is in
 * which group is kept in the runset for later calls until it changes (by the
 * functions above), so, like pflex_runset_column_over_one, it is not
 * thread-safe on one runset while that fills. A group's runs are sorted by
 * cap at each call. */
int pflex_runset_groups(const struct pflex_runset *set, struct pflex_group **ret_groups,
                        size_t *ret_n);
/* Frees the groups of pflex_runset_groups (NULL allowed). */
void pflex_groups_free(struct pflex_group *groups, size_t n);

/* Checks the rules that span runs of a group: one GPU type and count, no cap
 * twice, and (unless partial) an uncapped run for GPU types whose default
 * limit pflex knows (pflex/gpu_models.h). The analysis commands read with
 * partial set: there the highest-cap run is the reference (pflex/reference.h).
 * 0, or a pflex error with diag naming set->source and the run's line (or, for
 * runs without one, its position "run N"). */
int pflex_runset_check_groups(const struct pflex_runset *set, bool partial,
                              struct pflex_diag *diag);

/* Everything pflex calls a throughput unit, in one table (the only one). */
struct pflex_tput_unit_info {
  enum pflex_tput_unit unit;
  const char *name;      /* option value and jobs JSON "unit": "tokens", ..., "step-time" */
  const char *label;     /* for people: "tokens/s", ..., "1/(s per step)" */
  const char *key;       /* store schema and runs JSON: "tokens_per_s", ... (never renamed) */
  const char *column;    /* runs and series CSV column: "tokens_per_s", ..., "s_per_step" */
  const char *sd_column; /* its standard deviation column: "tokens_sd", ... */
  bool absolute;         /* comparable across jobs (tokens/s); else only ratios mean anything */
};
/* The unit's row, or NULL for a value outside the enum. */
const struct pflex_tput_unit_info *pflex_tput_unit_info(enum pflex_tput_unit unit);
/* Row i of the table (0, 1, ...), NULL past the last: to list or search the units. */
const struct pflex_tput_unit_info *pflex_tput_unit_at(size_t i);
/* Parses a unit name (pflex_tput_unit_info.name): 0, or -EINVAL when unknown. */
int pflex_tput_unit_parse(const char *name, enum pflex_tput_unit *ret_unit);

/* True when the unit gives absolute tokens/s. */
bool pflex_tput_unit_absolute(enum pflex_tput_unit unit);
/* Display names: "tokens/s", ... ("unknown" outside the enum); "dense"/"moe" and
 * "pt"/"ft", "" when unknown. Never NULL. */
const char *pflex_tput_unit_name(enum pflex_tput_unit unit);
const char *pflex_arch_name(enum pflex_arch arch);
const char *pflex_task_name(enum pflex_task task);
/* Parses an arch name in any case ("dense", "moe"): 0, or -EINVAL. */
int pflex_arch_parse(const char *s, enum pflex_arch *ret_arch);
/* Parses a task name in any case: pt (or pretrain, pretraining), ft (or lora, sft,
 * finetune, fine-tuning): 0, or -EINVAL. */
int pflex_task_parse(const char *s, enum pflex_task *ret_task);

#endif
