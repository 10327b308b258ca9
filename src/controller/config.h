/* pflex-controller's settings: one declarative key table read from an INI
 * file (libinih) and from the command line (every key is also an option,
 * --key-name with dashes). Defaults, then the file, then the options.
 *
 * Job classes are sections "[class NAME]" with keys match (a glob on the job
 * id), weight and floor_pct; on the command line --class
 * "NAME,match=GLOB,weight=W,floor_pct=F". A job takes the class it was
 * submitted with (its agent reports it), else the first class whose match
 * it matches (a class without match is only taken by name), else weight 1
 * and no floor. */
#ifndef CTL_CONFIG_H
#define CTL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CTL_MAX_CLASSES 32

enum ctl_objective { CTL_OBJECTIVE_TOKENS = 0, CTL_OBJECTIVE_PROGRESS };
enum ctl_unassigned { CTL_UNASSIGNED_MIN = 0, CTL_UNASSIGNED_DEFAULT };
enum ctl_read_auth { CTL_READ_OPEN = 0, CTL_READ_TOKEN };
enum ctl_inventory_source { CTL_INVENTORY_FILE = 0, CTL_INVENTORY_SLURM };

struct ctl_class {
  char name[64];
  char match[128];
  double weight;    /* > 0 */
  double floor_pct; /* throughput floor, % of the job's uncapped throughput, [0, 100) */
};

struct ctl_config {
  char listen[128];           /* API address HOST:PORT ("" = none) */
  char token_file[512];       /* bearer token for writes to the controller's API */
  int read_auth;              /* enum ctl_read_auth */
  int inventory;              /* enum ctl_inventory_source: agents_file or Slurm */
  char agents_file[512];      /* one agent URL per line */
  char agent_url_template[256]; /* inventory = slurm: a node's agent, {node} / {addr} */
  char slurm_bin_dir[256];      /* where sinfo and squeue are */
  double slurm_poll_s;          /* re-discovery period */
  double slurm_timeout_s;       /* one Slurm command */
  int slurm_max_output_mb;      /* one Slurm command's output */
  char agent_token_file[512]; /* bearer token the agents expect */
  char state_db[512];         /* SQLite file */
  char schedule_file[512];    /* planned events ("" = none) */
  char templates_file[512];   /* runs CSV whose curves shape the jobs' ("" = the family) */
  char model_file[512];       /* `pflex fit` model: PFI from a job's telemetry ("" = none) */
  double round_s;             /* control round period */
  int lease_rounds;           /* a cap's lease, in rounds */
  double agent_timeout_s;     /* one agent request */
  int objective;              /* enum ctl_objective */
  int unassigned;             /* cap of GPUs without a job during an event */
  double prior_pfi;           /* the population prior's PFI */
  double gain_up, gain_down;  /* feedback gains */
  double margin_pct;          /* feedback setpoint below target, % */
  double max_over_pct;        /* caps sum at most target + this %, */
  int baseline_rounds;        /* rounds averaged for the uncapped baseline */
  int max_rounds;             /* stop after this many rounds (0 = run until signalled) */
  struct ctl_class classes[CTL_MAX_CLASSES];
  size_t nclasses;
  char config_file[512]; /* where the file settings came from ("" = none) */
};

void ctl_config_defaults(struct ctl_config *cfg);

/* Reads the INI file path into cfg. On error writes "'PATH': line N: ..."
 * into err and returns -EINVAL (or -errno when the file cannot be read;
 * -EPERM when others could write it: ctl_open_trusted). */
int ctl_config_load(struct ctl_config *cfg, const char *path, char *err, size_t errlen);
/* The same from fd (closed here), already checked; path names it. */
int ctl_config_load_fd(struct ctl_config *cfg, int fd, const char *path, char *err,
                       size_t errlen);

/* Applies the command line (argv[first..argc)); --config FILE is read first,
 * wherever it stands. Returns the index of the first non-option argument, or
 * -EINVAL with err filled (a usage error). */
int ctl_config_parse_args(struct ctl_config *cfg, int argc, char **argv, char *err, size_t errlen);

/* Checks the combination (required keys present, ranges). -EINVAL with err. */
int ctl_config_check(const struct ctl_config *cfg, char *err, size_t errlen);

/* Prints the options with their defaults and help, for --help. */
void ctl_config_usage(FILE *out);

/* The class called name, or NULL. */
const struct ctl_class *ctl_config_class_named(const struct ctl_config *cfg, const char *name);

/* The class whose match the job id matches first, or NULL. */
const struct ctl_class *ctl_config_class_for(const struct ctl_config *cfg, const char *job);

#endif
