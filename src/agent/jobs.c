/* The job table (jobs.h). A node has few jobs: arrays and linear search. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/jobs.h"

void agent_jobs_init(struct agent_jobs *j, size_t ring, const char *metric) {
  memset(j, 0, sizeof *j);
  j->ring = ring ? ring : 1;
  snprintf(j->metric, sizeof j->metric, "%s", metric && *metric ? metric : "tokens");
}

static void job_release(struct agent_job *job) {
  free(job->tput);
}

void agent_jobs_release(struct agent_jobs *j) {
  for (size_t i = 0; i < j->n; i++)
    job_release(&j->v[i]);
  free(j->v);
  j->v = NULL;
  j->n = j->cap = 0;
}

struct agent_job *agent_jobs_find(struct agent_jobs *j, const char *id) {
  for (size_t i = 0; i < j->n; i++)
    if (strcmp(j->v[i].id, id) == 0) return &j->v[i];
  return NULL;
}

static uint64_t api_claimed(const struct agent_jobs *j) {
  uint64_t m = 0;
  for (size_t i = 0; i < j->n; i++)
    m |= j->v[i].api_gpus;
  return m;
}

uint64_t agent_job_gpus(const struct agent_jobs *j, const struct agent_job *job) {
  return job->api_gpus | (job->dir_gpus & ~api_claimed(j));
}

const struct agent_job *agent_jobs_of_gpu(const struct agent_jobs *j, unsigned gpu) {
  uint64_t bit = (uint64_t)1 << gpu;
  for (size_t i = 0; i < j->n; i++)
    if (j->v[i].api_gpus & bit) return &j->v[i];
  for (size_t i = 0; i < j->n; i++)
    if (j->v[i].dir_gpus & bit) return &j->v[i];
  return NULL;
}

static struct agent_job *job_add(struct agent_jobs *j, const char *id) {
  if (j->n == j->cap) {
    size_t cap = j->cap ? 2 * j->cap : 8;
    struct agent_job *v = realloc(j->v, cap * sizeof *v);
    if (!v) return NULL;
    j->v = v;
    j->cap = cap;
  }
  struct agent_job *job = &j->v[j->n];
  memset(job, 0, sizeof *job);
  job->tput = calloc(j->ring, sizeof *job->tput);
  if (!job->tput) return NULL;
  job->tput_cap = j->ring;
  snprintf(job->id, sizeof job->id, "%s", id);
  job->meta = (struct agent_job_meta){.weight = 0, .min_throughput = -1};
  /* A counter's rate over at least a second: several ranks sending per step
   * would otherwise give jittery per-step rates. */
  pflex_tput_meter_init(&job->meter, j->metric, 1.0);
  j->n++;
  return job;
}

/* Drops jobs that no source names any more. */
static void prune(struct agent_jobs *j) {
  size_t w = 0;
  for (size_t i = 0; i < j->n; i++) {
    if (j->v[i].api_gpus || j->v[i].dir_gpus)
      j->v[w++] = j->v[i];
    else
      job_release(&j->v[i]);
  }
  j->n = w;
}

int agent_jobs_put(struct agent_jobs *j, const char *id, uint64_t gpus, unsigned *ret_gpu) {
  for (size_t i = 0; i < j->n; i++) {
    uint64_t clash = strcmp(j->v[i].id, id) != 0 ? j->v[i].api_gpus & gpus : 0;
    if (clash) {
      *ret_gpu = (unsigned)__builtin_ctzll(clash);
      return -EBUSY;
    }
  }
  struct agent_job *job = agent_jobs_find(j, id);
  if (!job) job = job_add(j, id);
  if (!job) return -ENOMEM;
  job->api_gpus = gpus;
  return 0;
}

int agent_jobs_delete(struct agent_jobs *j, const char *id, uint64_t *ret_gpus) {
  struct agent_job *job = agent_jobs_find(j, id);
  if (!job) return -ENOENT;
  *ret_gpus = agent_job_gpus(j, job);
  job->api_gpus = 0;
  prune(j);
  return 0;
}

int agent_jobs_set_dir(struct agent_jobs *j, char (*dir_job)[AGENT_JOB_ID_MAX + 1], unsigned n) {
  for (size_t i = 0; i < j->n; i++)
    j->v[i].dir_gpus = 0;
  for (unsigned g = 0; g < n; g++) {
    if (!dir_job[g][0]) continue;
    struct agent_job *job = agent_jobs_find(j, dir_job[g]);
    if (!job) job = job_add(j, dir_job[g]);
    if (!job) return -ENOMEM;
    job->dir_gpus |= (uint64_t)1 << g;
  }
  prune(j);
  return 0;
}

void agent_job_tput_push(struct agent_job *job, double time_s, double value) {
  job->tput[job->tput_head] = (struct agent_tput_sample){time_s, value};
  job->tput_head = (job->tput_head + 1) % job->tput_cap;
  if (job->tput_n < job->tput_cap) job->tput_n++;
  job->tput_total++;
}

const struct agent_tput_sample *agent_job_tput_last(const struct agent_job *job) {
  if (!job->tput_n) return NULL;
  return &job->tput[(job->tput_head + job->tput_cap - 1) % job->tput_cap];
}
