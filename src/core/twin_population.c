/* A population of new, unseen simulated jobs from the twin's job model
 * (include/pflex/twin.h): the out-of-sample test bed for prediction and
 * allocation. Nothing here is measured; every run says "simulated".
 *
 * Job mix and GPU counts: the Acme trace (Hu et al., "Characterization of
 * Large Language Model Development in the Datacenter", NSDI 2024; trace
 * InternLM/AcmeTrace, CC BY 4.0), Seren cluster, as summarised in
 * ../shared/data/README.md:
 *  - a job is pretraining with probability 4,026 / (4,026 + 66,971), else fine-tuning;
 *  - pretraining GPU counts by the published buckets (40-47: 96, 48-49: 200, 50-63: 71,
 *    64: 1,427, 65-127: 166, 128: 509, 129-255: 72, 256: 549, 257-511: 174, 512: 264,
 *    640: 10, 720: 4, 768: 256, 896: 3, 920: 1, 928: 15, 960: 43, 968-1008: 7, 1024: 159);
 *    a bucket's count is its lower end rounded up to a multiple of 8;
 *  - fine-tuning: 66,026 of 66,971 jobs use 1-16 GPUs (quartiles 2 / 8 / 8); above
 *    16: 24: 1, 32: 725, 56: 2, 64: 120, 128: 58, 192: 30, 256: 5, 512: 4. The split
 *    inside 1-16 is not published; we use 1: 15%, 2: 15%, 4: 15%, 8: 45%, 16: 10%,
 *    which matches the quartiles (an assumption).
 * Models: dense and MoE sizes other than the paper's (a catalogue below);
 * a model is redrawn when its training state would not fit the GPUs. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "core/twin_internal.h"
#include "pflex/gpu_models.h"
#include "pflex/pfi.h"

#define POP_MAX_GPUS 32 /* GPU types one population draws from */

struct bucket {
  int gpus;
  double jobs;
};

static const struct bucket pt_counts[] = {
    {40, 96},   {48, 200},  {56, 71},   {64, 1427}, {72, 166},   {128, 509}, {136, 72},
    {256, 549}, {264, 174}, {512, 264}, {640, 10},  {720, 4},    {768, 256}, {896, 3},
    {920, 1},   {928, 15},  {960, 43},  {968, 7},   {1024, 159},
};
static const struct bucket ft_counts[] = {
    {1, 0.15 * 66026}, {2, 0.15 * 66026}, {4, 0.15 * 66026}, {8, 0.45 * 66026}, {16, 0.10 * 66026},
    {24, 1},           {32, 725},         {56, 2},           {64, 120},         {128, 58},
    {192, 30},         {256, 5},          {512, 4},
};

struct model {
  const char *name;
  enum pflex_arch arch;
  double params_b, active_b;
};

/* Public model families and sizes not in the paper's data set. */
static const struct model catalogue[] = {
    {"Llama-3.2-1B", PFLEX_ARCH_DENSE, 1.2, 1.2},
    {"Llama-3.2-3B", PFLEX_ARCH_DENSE, 3.2, 3.2},
    {"Qwen2.5-7B", PFLEX_ARCH_DENSE, 7.6, 7.6},
    {"Llama-3.1-8B", PFLEX_ARCH_DENSE, 8.0, 8.0},
    {"Qwen3-14B", PFLEX_ARCH_DENSE, 14.8, 14.8},
    {"Gemma-2-27B", PFLEX_ARCH_DENSE, 27.2, 27.2},
    {"Qwen2.5-72B", PFLEX_ARCH_DENSE, 72.7, 72.7},
    {"Mistral-Large-123B", PFLEX_ARCH_DENSE, 123, 123},
    {"Llama-3.1-405B", PFLEX_ARCH_DENSE, 405, 405},
    {"OLMoE-1B-7B", PFLEX_ARCH_MOE, 6.9, 1.3},
    {"Mixtral-8x7B", PFLEX_ARCH_MOE, 46.7, 12.9},
    {"Qwen2-57B-A14B", PFLEX_ARCH_MOE, 57.4, 14.2},
    {"gpt-oss-120b", PFLEX_ARCH_MOE, 117, 5.1},
    {"Mixtral-8x22B", PFLEX_ARCH_MOE, 141, 39},
    {"Qwen3-235B-A22B", PFLEX_ARCH_MOE, 235, 22},
    {"DeepSeek-V3", PFLEX_ARCH_MOE, 671, 37},
};
#define NCAT (sizeof catalogue / sizeof catalogue[0])

static int draw_count(gsl_rng *rng, const struct bucket *b, size_t n) {
  double w[32];
  for (size_t i = 0; i < n; i++)
    w[i] = b[i].jobs;
  gsl_ran_discrete_t *d = gsl_ran_discrete_preproc(n, w);
  if (!d) return -ENOMEM;
  size_t k = gsl_ran_discrete(rng, d);
  gsl_ran_discrete_free(d);
  return b[k].gpus;
}

static double clampd(double x, double lo, double hi) {
  return fmin(fmax(x, lo), hi);
}

/* The GPU types to draw from: the options' list, or H100 and H200. */
static int gpu_types(const struct pflex_twin_population_opts *opts,
                     const struct pflex_twin_gpu *ret[POP_MAX_GPUS], size_t *ret_n) {
  static const char *const dflt[] = {"H100", "H200"};
  const char *const *names = opts->gpus ? opts->gpus : dflt;
  size_t n = opts->gpus ? opts->ngpus : 2;
  if (n == 0 || n > POP_MAX_GPUS) return -EINVAL;
  for (size_t i = 0; i < n; i++)
    if (!(ret[i] = pflex_twin_gpu_find(names[i]))) return -ENOENT;
  *ret_n = n;
  return 0;
}

/* The paper's 6-cap sweep (every job swept as the paper's x8 groups), placed
 * in the GPU's own limit range: 200-700 W on the H100 and H200. */
static void sweep_caps(const struct pflex_twin_gpu *gpu, double caps[6]) {
  static const double paper[] = {PFLEX_PFI_PAPER_CAPS6};
  for (size_t i = 0; i < 6; i++)
    caps[i] = pflex_gpu_cap_relative(paper[i], gpu->cap_min_w, gpu->tdp_w);
}

/* Mixed throughput units (opts->mixed_units): each job's unit, the tokens
 * one of it holds, and its runs' throughput in it. A sample is one sequence
 * (seq_len tokens); an iteration one optimizer step over the job's global
 * batch, taken as batch sequences per GPU (a simplification: with tensor or
 * pipeline parallelism fewer GPUs share a sequence; the twin does not model
 * the split). Names as a real archive writes them. */
static const char *const unit_names[] = {"tokens/s", "samples/s", "iterations/s"};
#define NUNITS (sizeof unit_names / sizeof unit_names[0])

static double tokens_per_unit(size_t kind, const struct pflex_run *run) {
  double seq = run->have & PFLEX_RUN_SEQ_LEN ? run->seq_len : 1;
  double batch = run->have & PFLEX_RUN_BATCH ? run->batch : 1;
  return kind == 0 ? 1 : kind == 1 ? seq : seq * batch * run->gpus;
}

/* Writes every run's throughput (and its SD) in its job's unit, drawn per
 * job with equal odds from a stream of its own (the jobs stay those of the
 * same seed without mixed units), into the columns throughput,
 * throughput_sd and tput_unit; tokens_per_s stays, the twin's ground truth. */
static int mixed_units(struct pflex_runset *set, uint64_t seed) {
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  if (!rng) return -ENOMEM;
  gsl_rng_set(rng, (unsigned long)(seed * 2654435761u + 104729u));
  const char *group = NULL;
  size_t kind = 0;
  int err = 0;
  for (size_t i = 0; i < set->n && !err; i++) {
    const struct pflex_run *run = &set->runs[i];
    if (!group || strcmp(group, run->group) != 0) {
      kind = gsl_rng_uniform_int(rng, NUNITS);
      group = run->group;
    }
    double per = tokens_per_unit(kind, run);
    char v[32], sd[32];
    snprintf(v, sizeof v, "%.10g", run->tput / per);
    snprintf(sd, sizeof sd, "%.10g", run->have & PFLEX_RUN_TPUT_SD ? run->tput_sd / per : 0.0);
    err = pflex_runset_set_extra(set, i, "throughput", v);
    if (!err) err = pflex_runset_set_extra(set, i, "throughput_sd", sd);
    if (!err) err = pflex_runset_set_extra(set, i, "tput_unit", unit_names[kind]);
  }
  gsl_rng_free(rng);
  return err;
}

/* Job-to-job spread around the class values, of the size the calibrated
 * reference groups show (s about +-0.15, a_c about +-0.25), long
 * latency-bound memory phases (seen apart by the limiter: common in MoE
 * without expert parallelism, as in the three calibrated EP1 groups,
 * occasional elsewhere), and, as in every published group, a highest capped
 * run (600 W on an H200) that binds: the activity of a job that would not
 * draw 5% above it is raised. */
static void spread_job(gsl_rng *rng, const struct pflex_twin_gpu *gpu, struct pflex_twin_job *job) {
  job->compute_share = clampd(job->compute_share + gsl_ran_gaussian(rng, 0.12), 0.15, 1.0);
  job->compute_activity = clampd(job->compute_activity + gsl_ran_gaussian(rng, 0.2), 0.5, 1.8);
  job->mem_clock_bound = gsl_rng_uniform(rng) < 0.3 ? gsl_ran_flat(rng, 0.3, 0.9) : 0.0;
  job->dram_mix = gsl_ran_lognormal(rng, 0.0, 0.15);
  double p_split = job->arch == PFLEX_ARCH_MOE && job->ep == 1 ? 0.5 : 0.1;
  job->phase_split = gsl_rng_uniform(rng) < p_split ? gsl_ran_flat(rng, 0.25, 1.0) : 0.0;
  pflex_twin_job_refresh(job);
  double caps[6];
  sweep_caps(gpu, caps);
  while (pflex_twin_natural_power(gpu, job) < 1.05 * caps[4] && job->compute_activity < 1.8)
    job->compute_activity += 0.05;
}

/* Draws job j of a population: its GPU type and its job, from rng (the
 * population's one stream, in the order every population has used). */
static int draw_job(gsl_rng *rng, const struct pflex_twin_gpu *const *types, size_t ntypes,
                    const struct pflex_twin_gpu **ret_gpu, struct pflex_twin_job *ret_job) {
  static const int seqs[] = {2048, 4096, 8192}, batches[] = {1, 2, 4, 8, 16};
  const double pt_share = 4026.0 / (4026.0 + 66971.0);
  /* One uniform draw, as before the list existed: H100,H200 gives the default population. */
  size_t t = (size_t)(gsl_rng_uniform(rng) * (double)ntypes);
  const struct pflex_twin_gpu *gpu = types[t < ntypes ? t : ntypes - 1];
  struct pflex_twin_job job = {0};
  job.task = gsl_rng_uniform(rng) < pt_share ? PFLEX_TASK_PT : PFLEX_TASK_FT;
  job.gpus = job.task == PFLEX_TASK_PT
                 ? draw_count(rng, pt_counts, sizeof pt_counts / sizeof pt_counts[0])
                 : draw_count(rng, ft_counts, sizeof ft_counts / sizeof ft_counts[0]);
  if (job.gpus < 0) return job.gpus;
  /* A model whose sharded state (16 B/param pretraining, 2 B/param frozen
   * for LoRA) fits in 60% of the job's memory. */
  const struct model *m = NULL;
  for (int tries = 0; tries < 1000 && !m; tries++) {
    const struct model *c = &catalogue[gsl_rng_uniform_int(rng, NCAT)];
    double bytes = (job.task == PFLEX_TASK_PT ? 16.0 : 2.0) * c->params_b * 1e9 / job.gpus;
    if (bytes <= 0.6 * gpu->hbm_gib * 1073741824.0) m = c;
  }
  if (!m) m = &catalogue[0];
  snprintf(job.model, sizeof job.model, "%s", m->name);
  job.arch = m->arch;
  job.params_b = m->params_b;
  job.active_b = m->active_b;
  job.seq_len = seqs[gsl_rng_uniform_int(rng, 3)];
  job.batch = batches[gsl_rng_uniform_int(rng, 5)];
  job.ep = job.arch == PFLEX_ARCH_MOE && job.task == PFLEX_TASK_PT && job.gpus >= 8 &&
                   gsl_rng_uniform(rng) < 0.5
               ? 8
               : 1;
  job.compile = gsl_rng_uniform(rng) < 0.5;
  job.grad_ckpt = gsl_rng_uniform(rng) < 0.5;
  int r = pflex_twin_job_derive(gpu, &job);
  if (r < 0) return r;
  spread_job(rng, gpu, &job);
  *ret_gpu = gpu;
  *ret_job = job;
  return 0;
}

int pflex_twin_population_jobs(const struct pflex_twin_population_opts *opts,
                               const struct pflex_twin_gpu **ret_gpus,
                               struct pflex_twin_job *ret_jobs) {
  if (!opts || !ret_gpus || !ret_jobs || !opts->jobs) return -EINVAL;
  const struct pflex_twin_gpu *types[POP_MAX_GPUS];
  size_t ntypes = 0;
  int err = gpu_types(opts, types, &ntypes);
  if (err) return err;
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  if (!rng) return -ENOMEM;
  gsl_rng_set(rng, (unsigned long)opts->seed);
  int r = 0;
  for (size_t j = 0; r == 0 && j < opts->jobs; j++)
    r = draw_job(rng, types, ntypes, &ret_gpus[j], &ret_jobs[j]);
  gsl_rng_free(rng);
  return r;
}

int pflex_twin_population_name(char *buf, size_t len, const char *prefix, size_t index,
                               const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job) {
  return snprintf(buf, len, "%s-%04zu %s %s %sx%d %s", prefix, index + 1,
                  job->arch == PFLEX_ARCH_MOE ? "MoE" : "Dense",
                  job->task == PFLEX_TASK_PT ? "PT" : "FT", gpu->name, job->gpus, job->model);
}

int pflex_twin_population(const struct pflex_twin_population_opts *opts,
                          struct pflex_runset *ret_set) {
  if (!opts || !ret_set || !opts->jobs) return -EINVAL;
  const struct pflex_twin_gpu **gpus = calloc(opts->jobs, sizeof *gpus);
  struct pflex_twin_job *jobs = calloc(opts->jobs, sizeof *jobs);
  int r = gpus && jobs ? pflex_twin_population_jobs(opts, gpus, jobs) : -ENOMEM;
  struct pflex_runset set;
  pflex_runset_init(&set);
  for (size_t j = 0; r == 0 && j < opts->jobs; j++) {
    double caps[6];
    sweep_caps(gpus[j], caps);
    char name[128];
    pflex_twin_population_name(name, sizeof name, "sim", j, gpus[j], &jobs[j]);
    r = pflex_twin_sweep(gpus[j], &jobs[j], name, "population", "simulated", caps, 6, opts->seed,
                         &set);
  }
  free(gpus);
  free(jobs);
  if (r >= 0 && opts->mixed_units) r = mixed_units(&set, opts->seed);
  if (r < 0) {
    pflex_runset_release(&set);
    return r;
  }
  *ret_set = set;
  return 0;
}
