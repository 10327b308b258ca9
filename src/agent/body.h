/* Parsers of the API's request bodies (PUT /v1/caps, PUT /v1/jobs/{id}) and
 * of job ids. Pure: JSON text in, a request struct or an error naming the
 * field out; nothing is applied here. Fuzzed by tests/fuzz/fuzz_agent_*.c. */
#ifndef PFLEX_AGENT_BODY_H
#define PFLEX_AGENT_BODY_H

#include <stdbool.h>
#include <stddef.h>

#define AGENT_JOB_ID_MAX 64
#define AGENT_MAX_GPUS 64
#define AGENT_WATTS_MAX 10000.0 /* no GPU draws more; larger values are mistakes */

/* Why a request was refused: HTTP status, the field to blame ("" for the
 * body as a whole, e.g. "caps[1].watts") and a sentence. */
struct agent_error {
  int status;
  char field[96];
  char message[256];
};

/* Fills e and returns -EINVAL (for `return agent_error_set(...)`). */
int agent_error_set(struct agent_error *e, int status, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* One entry of "caps": a GPU or every GPU of a job, at `mw` per GPU. */
struct agent_cap_item {
  bool by_job;
  unsigned gpu;
  char job[AGENT_JOB_ID_MAX + 1];
  unsigned mw;
};

struct agent_caps_req {
  struct agent_cap_item items[AGENT_MAX_GPUS];
  size_t n;
  double lease_s;        /* the lease of every cap given, and of every renewed one */
  bool fallback_default; /* at lease end: the original limit ... */
  unsigned fallback_mw;  /* ... or this (when !fallback_default) */
};

/* Parses {"caps":[{"gpu":N|"job":ID, "watts":W}...], "lease_s":S,
 * "fallback":"default"|{"watts":W}} for a node of ngpus GPUs. lease_s absent:
 * default_lease_s; fallback absent: "default". 0, or -EINVAL with e filled
 * (400 malformed / unknown field / wrong type, 413 never, 422 a value out of
 * range or a GPU that does not exist). */
int agent_caps_parse(const char *body, size_t len, unsigned ngpus, double default_lease_s,
                     double max_lease_s, struct agent_caps_req *ret, struct agent_error *e);

#define AGENT_URL_MAX 256
#define AGENT_PROM_NAME_MAX 128

#define AGENT_CLASS_MAX 32 /* characters of a job class name */
#define AGENT_JOB_WEIGHT_MAX 1000.0

/* What the job was submitted with (the SPANK plugin's --pflex-class,
 * --pflex-weight, --pflex-min-throughput), passed on to the controller. */
struct agent_job_meta {
  char class_name[AGENT_CLASS_MAX + 1]; /* "" : not given */
  double weight;                        /* 0 : not given; else (0, 1000] */
  double min_throughput;                /* < 0 : not given; else [0, 1] */
};

struct agent_job_req {
  unsigned gpus[AGENT_MAX_GPUS];
  size_t n;
  char metrics_url[AGENT_URL_MAX]; /* "" : none */
  char metric[AGENT_PROM_NAME_MAX];
  struct agent_job_meta meta;
};

/* Parses {"gpus":[0,1,...], "metrics_url":URL, "metric":NAME, "class":NAME,
 * "weight":X, "min_throughput":F} (distinct indexes below ngpus, at least
 * one; optionally the training process's Prometheus endpoint, http on
 * loopback only, and the throughput metric in it, default
 * "tokens_per_second"; optionally the job's class, 1-32 of A-Z a-z 0-9 _ -,
 * its weight in (0, 1000] and its least throughput as a fraction of its
 * uncapped one, in [0, 1]). */
int agent_job_parse(const char *body, size_t len, unsigned ngpus, struct agent_job_req *ret,
                    struct agent_error *e);

/* True for a job id of 1-64 characters from [A-Za-z0-9_+-] (Slurm's
 * "123", "123_4", "123+0"); '.' is not allowed: it separates the job from
 * the metric in StatsD names. */
bool agent_job_id_valid(const char *id);

/* True for a class name of 1-32 characters from [A-Za-z0-9_-]. */
bool agent_class_name_valid(const char *name);

#endif
