/* The configuration table and its three readers: defaults, the INI file
 * (libinih) and the command line (getopt_long, options generated from the
 * table). See config.h. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "agent/config.h"
#include "agent/trust.h"

#define F(field) offsetof(struct agent_config, field), sizeof(((struct agent_config *)0)->field)

static const struct agent_key keys[] = {
    {"config", AGENT_KEY_STRING, AGENT_CONFIG_DEFAULT_PATH, F(config), 0, 0, "FILE",
     "config file (INI; a missing default file is fine)"},
    {"backend", AGENT_KEY_STRING, "nvml", F(backend), 0, 0, "NAME", "GPU backend: nvml or sim"},
    {"sim_job", AGENT_KEY_STRING, "", F(sim_job), 0, 0, "SPEC", "sim backend job (docs/gpu.md)"},
    {"nvml_library", AGENT_KEY_STRING, "", F(nvml_library), 0, 0, "FILE",
     "NVML library to load (default libnvidia-ml.so.1; env PFLEX_NVML_LIB)"},
    {"nvml_profiling", AGENT_KEY_BOOL, "false", F(nvml_profiling), 0, 0, "BOOL",
     "read SM, tensor and DRAM activity with NVML's GPM (Hopper and newer) for the jobs' "
     "telemetry; leave off where DCGM profiles the GPUs"},
    {"state_dir", AGENT_KEY_STRING, "/var/lib/pflex", F(state_dir), 0, 0, "DIR",
     "restore records and lease state (root-only directory)"},
    {"socket", AGENT_KEY_STRING, "/run/pflex/pflexd.sock", F(socket), 0, 0, "PATH",
     "Unix socket of the API, mode 0660 (\"\" = none)"},
    {"socket_group", AGENT_KEY_STRING, "", F(socket_group), 0, 0, "GROUP",
     "group of the Unix socket (default root's)"},
    {"listen", AGENT_KEY_STRING, "", F(listen), 0, 0, "HOST:PORT",
     "also serve the API on TCP (writes need the token)"},
    {"token_file", AGENT_KEY_STRING, "/etc/pflex/token", F(token_file), 0, 0, "FILE",
     "bearer token, a root-only file (mode 0600 or 0400)"},
    {"read_auth", AGENT_KEY_BOOL, "false", F(read_auth), 0, 0, "BOOL",
     "reads over TCP need the token too"},
    {"hz", AGENT_KEY_DOUBLE, "10", F(hz), 0.1, 100, "N", "samples per second of every GPU"},
    {"ring", AGENT_KEY_UINT, "600", F(ring), 2, 100000, "N", "samples kept per GPU and per job"},
    {"max_body", AGENT_KEY_UINT, "65536", F(max_body), 64, 16777216, "BYTES",
     "largest request body"},
    {"max_lease_s", AGENT_KEY_UINT, "86400", F(max_lease_s), 1, 31536000, "S",
     "longest lease a request may ask for"},
    {"default_lease_s", AGENT_KEY_UINT, "60", F(default_lease_s), 1, 31536000, "S",
     "lease of a PUT /v1/caps without lease_s"},
    {"keep_caps", AGENT_KEY_BOOL, "false", F(keep_caps), 0, 0, "BOOL",
     "on SIGTERM keep caps and leases for the next instance (rolling upgrade)"},
    {"mapping_dir", AGENT_KEY_STRING, "", F(mapping_dir), 0, 0, "DIR",
     "dcgm-exporter hpc-job-mapping directory (a file per GPU index holding the job id)"},
    {"statsd", AGENT_KEY_STRING, "udp:127.0.0.1:8125", F(statsd), 0, 0, "ADDR",
     "StatsD intake of job throughput, loopback or unix:PATH (\"\" = none)"},
    {"statsd_metric", AGENT_KEY_STRING, "tokens", F(statsd_metric), 0, 0, "NAME",
     "StatsD metric of throughput ([JOB.]NAME)"},
    {"metrics_job_label", AGENT_KEY_BOOL, "false", F(metrics_job_label), 0, 0, "BOOL",
     "add a job label to the GPU series of /metrics"},
};

const struct agent_key *agent_config_keys(size_t *ret_n) {
  *ret_n = sizeof keys / sizeof keys[0];
  return keys;
}

static const struct agent_key *key_find(const char *name) {
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (strcmp(keys[i].name, name) == 0) return &keys[i];
  return NULL;
}

static int parse_bool(const char *s, bool *ret) {
  static const struct {
    const char *text;
    bool value;
  } words[] = {{"true", true},   {"yes", true}, {"on", true},   {"1", true},
               {"false", false}, {"no", false}, {"off", false}, {"0", false}};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (strcasecmp(s, words[i].text) == 0) {
      *ret = words[i].value;
      return 0;
    }
  return -EINVAL;
}

static int parse_number(const struct agent_key *k, const char *s, double *ret) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (!*s || *end || errno || !isfinite(v)) return -EINVAL;
  if (k->type == AGENT_KEY_UINT && v != floor(v)) return -EINVAL;
  if (v < k->min || v > k->max) return -ERANGE;
  *ret = v;
  return 0;
}

static int key_set(struct agent_config *c, const struct agent_key *k, const char *value,
                   char *errbuf, size_t errlen) {
  char *field = (char *)c + k->offset;
  double v;
  switch (k->type) {
  case AGENT_KEY_STRING:
    if (strlen(value) >= k->size) {
      snprintf(errbuf, errlen, "%s: longer than %zu characters", k->name, k->size - 1);
      return -EINVAL;
    }
    memcpy(field, value, strlen(value) + 1);
    return 0;
  case AGENT_KEY_BOOL:
    if (parse_bool(value, (bool *)field) == 0) return 0;
    snprintf(errbuf, errlen, "%s: '%s' is not true or false", k->name, value);
    return -EINVAL;
  case AGENT_KEY_UINT:
  case AGENT_KEY_DOUBLE:
    if (parse_number(k, value, &v) == 0) {
      if (k->type == AGENT_KEY_UINT)
        *(unsigned *)field = (unsigned)v;
      else
        *(double *)field = v;
      return 0;
    }
    snprintf(errbuf, errlen, "%s: '%s' is not %s in %g-%g", k->name, value,
             k->type == AGENT_KEY_UINT ? "an integer" : "a number", k->min, k->max);
    return -EINVAL;
  }
  return -EINVAL;
}

int agent_config_set(struct agent_config *c, const char *name, const char *value, char *errbuf,
                     size_t errlen) {
  const struct agent_key *k = key_find(name);
  if (!k) {
    snprintf(errbuf, errlen, "unknown key '%s'", name);
    return -ENOENT;
  }
  return key_set(c, k, value, errbuf, errlen);
}

void agent_config_defaults(struct agent_config *c) {
  char ignored[8];
  memset(c, 0, sizeof *c);
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    (void)key_set(c, &keys[i], keys[i].dflt, ignored, sizeof ignored);
}

struct ini_ctx {
  struct agent_config *c;
  const char *path;
  char *errbuf;
  size_t errlen;
  int err;
};

static int on_ini_line(void *user, const char *section, const char *name, const char *value) {
  struct ini_ctx *x = user;
  char why[512];
  if (x->err) return 0;
  if (*section && strcmp(section, "pflexd") != 0)
    snprintf(why, sizeof why, "unknown section [%s]", section), x->err = -EINVAL;
  else if (strcmp(name, "config") == 0)
    snprintf(why, sizeof why, "'config' is a command-line option only"), x->err = -EINVAL;
  else
    x->err = agent_config_set(x->c, name, value, why, sizeof why) ? -EINVAL : 0;
  if (x->err) snprintf(x->errbuf, x->errlen, "%s", why);
  return x->err ? 0 : 1;
}

int agent_config_load(struct agent_config *c, const char *path, char *errbuf, size_t errlen) {
  char why[256];
  int fd = -1, err = agent_trust_open(path, &fd, why, sizeof why);
  if (err) {
    snprintf(errbuf, errlen, "%s '%s': %s", err == -EPERM ? "refusing config file" : "cannot open",
             path, why);
    return err;
  }
  FILE *f = fdopen(fd, "r");
  if (!f) {
    close(fd);
    return -ENOMEM;
  }
  char msg[512] = "";
  struct ini_ctx x = {c, path, msg, sizeof msg, 0};
  int line = ini_parse_file(f, on_ini_line, &x);
  fclose(f);
  if (line == 0) return 0;
  snprintf(errbuf, errlen, "'%s': line %d: %s", path, line > 0 ? line : 0,
           msg[0] ? msg : "not an INI line (expected key = value)");
  return -EINVAL;
}
