/* The SPANK plugin's inputs, checked: its plugstack.conf arguments, the job
 * options a user gives (--pflex-class, --pflex-weight,
 * --pflex-min-throughput) and the GPU list Slurm hands the prolog
 * (SLURM_JOB_GPUS). Pure parsing, no Slurm, no I/O except reading the classes
 * file, so the unit tests and the plugin share it. Every error is a negative
 * errno value with a message naming what was wrong in msg. */
#ifndef PFLEX_SLURM_SPANK_ARGS_H
#define PFLEX_SLURM_SPANK_ARGS_H

#include <stdbool.h>
#include <stddef.h>

#define PFLEX_SPANK_MAX_CLASSES 32
#define PFLEX_SPANK_CLASS_MAX 32 /* characters of a class name */
#define PFLEX_SPANK_MAX_GPUS 64  /* what pflexd's job API takes */
#define PFLEX_SPANK_MSG_MAX 256
#define PFLEX_SPANK_WEIGHT_MAX 1000.0

enum pflex_spank_on_error {
  PFLEX_SPANK_ON_ERROR_LOG,  /* the prolog logs and the job runs (default) */
  PFLEX_SPANK_ON_ERROR_FAIL, /* the prolog fails: Slurm requeues the job, drains the node */
};

struct pflex_spank_conf {
  char socket[108];      /* pflexd's Unix socket (sun_path's size) */
  char mapping_dir[256]; /* "" = none (spank_mapdir.h) */
  char classes[PFLEX_SPANK_MAX_CLASSES][PFLEX_SPANK_CLASS_MAX + 1];
  size_t nclasses;
  long timeout_ms; /* per request to pflexd */
  enum pflex_spank_on_error on_error;
};

/* The options of one job, as given (has_* false when not given). */
struct pflex_spank_job_opts {
  bool has_class, has_weight, has_min_tput;
  char class_name[PFLEX_SPANK_CLASS_MAX + 1];
  double weight;
  double min_tput;
};

/* The defaults: socket /run/pflex/pflexd.sock, classes rigid flex10 flex25
 * flex50 (issue 11's), 5000 ms, on_error=log. */
void pflex_spank_conf_init(struct pflex_spank_conf *c);

/* Applies plugstack.conf arguments key=value (socket, classes, classes_file,
 * timeout_ms, on_error, mapping_dir). -EINVAL for an unknown key or a bad value, -errno
 * when the classes file cannot be read; c is left as it was on error. */
int pflex_spank_conf_parse(struct pflex_spank_conf *c, int argc, char *const argv[], char *msg,
                           size_t msglen);

/* "rigid, flex10, ..." into buf: for messages. */
void pflex_spank_conf_class_list(const struct pflex_spank_conf *c, char *buf, size_t len);

/* Checks one option's value and stores it in o. -EINVAL with a message
 * naming the option and the accepted values. */
int pflex_spank_opt_class(const struct pflex_spank_conf *c, const char *value,
                          struct pflex_spank_job_opts *o, char *msg, size_t msglen);
int pflex_spank_opt_weight(const char *value, struct pflex_spank_job_opts *o, char *msg,
                           size_t msglen);
int pflex_spank_opt_min_tput(const char *value, struct pflex_spank_job_opts *o, char *msg,
                             size_t msglen);

/* SLURM_JOB_GPUS ("0,1,3" or ranges "0-2,5") into ascending distinct indices.
 * An empty string gives 0 GPUs. -EINVAL on anything else, -E2BIG past max. */
int pflex_spank_parse_gpus(const char *s, unsigned *ret_gpus, size_t max, size_t *ret_n, char *msg,
                           size_t msglen);

/* A Slurm job id fit for pflexd's path: 1-64 of [0-9A-Za-z_+-]. */
bool pflex_spank_job_id_ok(const char *id);

#endif
