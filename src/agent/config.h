/* pflexd's configuration: one declarative table of keys (name, type, default,
 * field, range, help) that gives the config file (/etc/pflex/pflexd.conf,
 * INI, parsed with libinih), the command-line options (each key as
 * --key-name) and the help text. */
#ifndef PFLEX_AGENT_CONFIG_H
#define PFLEX_AGENT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define AGENT_CONFIG_DEFAULT_PATH "/etc/pflex/pflexd.conf"
#define AGENT_PATH_MAX 1024

struct agent_config {
  char config[AGENT_PATH_MAX]; /* the file read (command line only) */
  char backend[32];
  char sim_job[512];
  char nvml_library[AGENT_PATH_MAX];
  bool nvml_profiling; /* GPM: the profiling activities, per-job telemetry */
  char state_dir[AGENT_PATH_MAX];
  char socket[AGENT_PATH_MAX];
  char socket_group[64];
  char listen[128];
  char token_file[AGENT_PATH_MAX];
  bool read_auth;
  double hz;
  unsigned ring;
  unsigned max_body;
  unsigned max_lease_s;
  unsigned default_lease_s;
  bool keep_caps;
  char mapping_dir[AGENT_PATH_MAX];
  char statsd[AGENT_PATH_MAX];
  char statsd_metric[128];
  bool metrics_job_label;
};

enum agent_key_type { AGENT_KEY_STRING, AGENT_KEY_BOOL, AGENT_KEY_UINT, AGENT_KEY_DOUBLE };

struct agent_key {
  const char *name; /* config-file key; the option is --name with '_' as '-' */
  enum agent_key_type type;
  const char *dflt;
  size_t offset, size; /* the field in struct agent_config */
  double min, max;     /* numbers: the accepted range */
  const char *metavar, *help;
};

/* The keys, in the order of the help text; *ret_n receives their number. */
const struct agent_key *agent_config_keys(size_t *ret_n);

/* Sets every key to its default. */
void agent_config_defaults(struct agent_config *c);

/* Sets key `name` from text. -ENOENT for an unknown key, -EINVAL for a value
 * that does not parse or lies outside the key's range (why in errbuf). */
int agent_config_set(struct agent_config *c, const char *name, const char *value, char *errbuf,
                     size_t errlen);

/* Reads an INI file (keys at the top or in a [pflexd] section). A missing
 * file is -ENOENT (the caller decides whether that matters); a file that
 * another user could write is refused (-EPERM). errbuf names file, line, key. */
int agent_config_load(struct agent_config *c, const char *path, char *errbuf, size_t errlen);

/* Defaults, then the config file (--config, else the default path when it
 * exists), then the command line. Returns 0, 1 after --help (printed), or
 * -EINVAL with the reason in errbuf. */
int agent_config_parse(struct agent_config *c, int argc, char **argv, char *errbuf, size_t errlen);

/* Prints the options and their defaults. */
void agent_config_usage(FILE *f);

#endif
