/* Which GPUs belong to which job, from two sources: the API (PUT/DELETE
 * /v1/jobs/{id}) and a dcgm-exporter hpc-job-mapping directory (mapdir.c).
 * An API assignment of a GPU wins over the directory's. Each job also keeps
 * its throughput (StatsD, jobtput.c) with a short ring of samples. */
#ifndef PFLEX_AGENT_JOBS_H
#define PFLEX_AGENT_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/body.h"
#include "pflex/tput.h"

struct agent_tput_sample {
  double time_s; /* CLOCK_REALTIME (pflex_tput_now), as the StatsD intake gives */
  double value;
};

struct agent_job {
  char id[AGENT_JOB_ID_MAX + 1];
  uint64_t api_gpus; /* bit i: GPU i, registered through the API */
  uint64_t dir_gpus; /* bit i: GPU i, named in the mapping directory */
  struct pflex_tput_meter meter;
  struct agent_tput_sample *tput; /* ring of throughput samples */
  size_t tput_cap, tput_head, tput_n;
  unsigned long long tput_total; /* samples ever received */
  /* A Prometheus endpoint of the training process to scrape ("" none). */
  char scrape_url[AGENT_URL_MAX];
  char scrape_metric[AGENT_PROM_NAME_MAX];
  double next_scrape_s;           /* monotonic */
  double prev_value, prev_time_s; /* a counter's previous scrape (rate = delta / time) */
  bool have_prev;
  unsigned long long scrape_failures;
  struct agent_job_meta meta; /* as last registered through the API */
};

struct agent_jobs {
  struct agent_job *v;
  size_t n, cap;
  size_t ring;                        /* throughput samples kept per job */
  char metric[PFLEX_STATSD_NAME_MAX]; /* StatsD metric of throughput */
};

void agent_jobs_init(struct agent_jobs *j, size_t ring, const char *metric);
void agent_jobs_release(struct agent_jobs *j);

struct agent_job *agent_jobs_find(struct agent_jobs *j, const char *id);

/* The GPUs of a job: API ones, and directory ones not claimed through the API. */
uint64_t agent_job_gpus(const struct agent_jobs *j, const struct agent_job *job);

/* The job GPU i belongs to, or NULL. */
const struct agent_job *agent_jobs_of_gpu(const struct agent_jobs *j, unsigned gpu);

/* Registers (or replaces) job id with exactly these GPUs through the API.
 * A job that only the mapping directory names has no metadata (class,
 * weight, min_throughput not given) until it is registered.
 * -EBUSY when a GPU is registered to another job through the API (*ret_gpu
 * names it; nothing changed), -ENOMEM. */
int agent_jobs_put(struct agent_jobs *j, const char *id, uint64_t gpus, unsigned *ret_gpu);

/* Removes the job's API registration; the job goes when no source names it.
 * *ret_gpus receives the GPUs it had (either source). -ENOENT: no such job. */
int agent_jobs_delete(struct agent_jobs *j, const char *id, uint64_t *ret_gpus);

/* Replaces the directory's view: dir_job[i] the job id of GPU i ("" none). */
int agent_jobs_set_dir(struct agent_jobs *j, char (*dir_job)[AGENT_JOB_ID_MAX + 1], unsigned n);

/* Adds one throughput sample to the job. */
void agent_job_tput_push(struct agent_job *job, double time_s, double value);

/* The latest throughput sample, or NULL. */
const struct agent_tput_sample *agent_job_tput_last(const struct agent_job *job);

#endif
