/* The agent API's JSON (issue 9, docs/agent.md): parsing GET /v1/gpus and
 * GET /v1/jobs, writing PUT /v1/caps. Parsers check every field they use
 * and refuse a body that lacks one, naming it. */
#ifndef CTL_AGENT_JSON_H
#define CTL_AGENT_JSON_H

#include <stdbool.h>
#include <stddef.h>

#define CTL_JOB_ID_MAX 65
#define CTL_MAX_NODE_GPUS 64

struct ctl_gpu_state {
  unsigned index;
  char uuid[96];
  double power_w, limit_w, enforced_w, default_w, min_w, max_w, energy_j;
  double lease_s_left;      /* < 0: no lease */
  char job[CTL_JOB_ID_MAX]; /* "" = no job */
  char lease_state[16];     /* pflexd's "held", "fallback", "none", ...; "" = not given */
};

#define CTL_CLASS_NAME_MAX 33 /* 32 characters, as pflexd allows */

/* What a job was submitted with, as its agent reports it (the SPANK
 * plugin's options through pflexd's PUT /v1/jobs/{id}). */
struct ctl_job_meta {
  char class_name[CTL_CLASS_NAME_MAX]; /* "" : not given */
  double weight;                       /* 0 : not given, else (0, 1000] */
  double min_tput;                     /* < 0 : not given, else [0, 1] */
};

/* A job's telemetry, if its agent reports it: DCGM fields by name (lower
 * case without prefix, as in runs files: dram_active, sm_active, ...) over
 * the job's GPUs, the inputs of a `pflex fit` model. */
#define CTL_TELEMETRY_MAX 32
#define CTL_TELEMETRY_NAME_MAX 32
struct ctl_telemetry {
  size_t n;
  char name[CTL_TELEMETRY_MAX][CTL_TELEMETRY_NAME_MAX];
  double value[CTL_TELEMETRY_MAX]; /* finite */
};

struct ctl_job_tput {
  char id[CTL_JOB_ID_MAX];
  struct ctl_job_meta meta;
  struct ctl_telemetry telemetry; /* n = 0: none reported */
  bool has_tput;
  double tput, tput_time; /* last sample and its time (epoch s) */
  double samples;         /* samples received so far */
};

/* Parses GET /v1/gpus into gpus (at most max). -EINVAL with err naming the
 * field on a malformed body. */
int ctl_parse_gpus(const char *body, size_t len, struct ctl_gpu_state *gpus, size_t max,
                   size_t *ret_n, char *err, size_t errlen);
/* Parses GET /v1/jobs: id, throughput, and the optional class, weight and
 * min_throughput (absent or null: not given; out of range: refused), and
 * telemetry ({"NAME": number, ...}: names of [a-z0-9_], at most 32 of
 * them, finite numbers; absent or null: none). */
int ctl_parse_jobs(const char *body, size_t len, struct ctl_job_tput *jobs, size_t max,
                   size_t *ret_n, char *err, size_t errlen);
/* Parses GET /v1/node ({"gpus":[...], "jobs":[...]}) as both of the above,
 * reading the body once. */
int ctl_parse_node(const char *body, size_t len, struct ctl_gpu_state *gpus, size_t max_gpus,
                   size_t *ret_ngpus, struct ctl_job_tput *jobs, size_t max_jobs,
                   size_t *ret_njobs, char *err, size_t errlen);

/* The body of PUT /v1/caps: caps[i] watts for GPU index[i], a lease and a
 * fallback in watts (<= 0: "default"). Returns a malloc'd string or NULL. */
char *ctl_caps_body(const unsigned *index, const double *watts, size_t n, double lease_s,
                    double fallback_w);

#endif
