/* The sim backend: simulated GPUs of a twin GPU type running one simulated
 * training job (include/pflex/twin.h), so sweeps, caps and the commands run
 * end to end without hardware. Everything it reports is modelled, not measured.
 *
 * Spec (--sim-job or pflex_gpu_open's spec): comma-separated key=value:
 *   group=NAME   a published sweep group of the twin (default
 *                "Dense PT H200x8 Qwen3-32B no-compile"); its job is calibrated
 *                to the group's published PFI unless calibrate=0
 *   gpus=N       simulated GPUs (default: the group's GPU count); the job spans all
 *   clock=virtual|real   virtual (default): time advances only by sleep calls,
 *                so a 30-minute run takes milliseconds; real: wall-clock time
 *   seed=N       noise seed (default 1)
 *   noise=sample|repeat|off  sample (default): 0.5% Gaussian jitter on every
 *                power and throughput sample around the twin's noise-free point,
 *                which gives top-10% aggregates with standard errors of the order
 *                of the paper's within-run ones (0.04% power, 0.05% throughput);
 *                repeat: in addition, each run's point is offset by the paper's
 *                repeat-to-repeat CVs (0.4% power, 0.5% throughput); off: none
 *   warmup=S startup=S   seconds of the warmup (weights loading) and startup
 *                phases after each job start (default 60 and 30)
 *   eval=S ckpt=S        an eval at 10 min and a checkpoint at 20 min of each run,
 *                lasting S seconds (default 60 and 45; 0 = none), as in the paper
 *   avg=S        the power reading is the mean of the true draw over the last S
 *                seconds (default 1, as NVML's power reading; 0 = instantaneous)
 *   lag=S        a new limit takes effect S seconds after it is set (default 0.1,
 *                as the driver's power limiter): the reported limit changes at
 *                once, the enforced limit and the draw only then
 *   start=open|call  open (default): the job runs from the backend's open, as on a
 *                node whose job is already there (pflexd); call: only from
 *                pflex_gpu_job_start (each call restarts it, as pflex sweep does)
 *   since=S      start=open: the job started S seconds before the open (default 0),
 *                e.g. past its warmup and startup on a node that was already busy
 *
 * Timeline of a job start: warmup (frame buffer below 10 GiB, idle power),
 * startup (weights loaded, utilization 0), training (the twin's settled point
 * under the GPU's limit; throughput reported), with the eval and checkpoint
 * dips inside training (no throughput reported there). Synchronous training
 * runs at the pace of the slowest GPU: the job's throughput is the twin's at
 * the lowest limit among the simulated GPUs. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "gpu/backends.h"
#include "pflex/gpu.h"
#include "pflex/twin.h"

#define SIM_DEFAULT_GROUP "Dense PT H200x8 Qwen3-32B no-compile"
#define SIM_MAX_GPUS 64
#define SIM_JITTER 0.005
#define SIM_POINTS 4      /* cached twin points per GPU (limits before and after changes) */
#define SIM_CHANGES 8     /* limit changes remembered per GPU (for the trailing average) */
#define SIM_AVG_STEP 0.05 /* the trailing average samples the true draw every 50 ms */
#define SIM_AVG_MAX 64    /* and at most this many times */

struct sim_point {
  unsigned mw, run;
  bool ok;
  struct pflex_twin_point p;
};

/* A limit that takes effect at time t (set at t - lag). */
struct sim_change {
  double t;
  unsigned mw;
};

struct sim_gpu {
  unsigned limit_mw;                 /* the last limit set (what NVML reports as the limit) */
  unsigned base_mw;                  /* in effect before the oldest remembered change */
  struct sim_change ch[SIM_CHANGES]; /* oldest first */
  unsigned nch;
  unsigned long long energy_mj;
  double energy_t; /* time up to which energy is integrated */
  bool energy_started;
  struct sim_point pt[SIM_POINTS]; /* cached twin points for (mw, run) */
  unsigned pt_next;
};

struct sim {
  const struct pflex_twin_gpu *type;
  struct pflex_twin_job job;
  char group[128];
  long long pop_seed, pop_index; /* population=SEED:INDEX (pop_index -1: a group) */
  unsigned n;
  struct sim_gpu g[SIM_MAX_GPUS];
  bool virtual_clock;
  double vnow;  /* virtual clock */
  double real0; /* real clock origin */
  bool job_running;
  double job_t0;
  double prev_t0; /* the previous job start (-1: none): its run until job_t0 */
  bool start_at_open;
  double avg_s, lag_s, since_s;
  unsigned runs; /* job starts so far: seeds the per-run noise */
  int noise;     /* 0 off, 1 sample jitter, 2 jitter + repeat-to-repeat run offsets */
  unsigned long long seed;
  gsl_rng *rng;
  double warmup_s, startup_s, eval_s, ckpt_s;
  char err[256];
};

static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double sim_time(struct sim *s) {
  return s->virtual_clock ? s->vnow : mono() - s->real0;
}

static int parse_num(const char *v, double lo, double hi, double *ret) {
  char *end;
  double x = strtod(v, &end);
  if (end == v || *end || !isfinite(x) || x < lo || x > hi) return -EINVAL;
  *ret = x;
  return 0;
}

static int parse_spec(struct sim *s, const char *spec, char *errbuf, size_t errlen) {
  if (!spec) return 0;
  char *copy = strdup(spec), *save = NULL;
  if (!copy) return -ENOMEM;
  int err = 0;
  for (char *kv = strtok_r(copy, ",", &save); kv && !err; kv = strtok_r(NULL, ",", &save)) {
    while (*kv == ' ')
      kv++;
    if (!*kv) continue;
    char *eq = strchr(kv, '=');
    if (!eq) {
      snprintf(errbuf, errlen, "sim spec: '%s' is not key=value", kv);
      err = -EINVAL;
      break;
    }
    *eq = '\0';
    const char *k = kv, *v = eq + 1;
    double x;
    if (strcmp(k, "group") == 0) {
      snprintf(s->group, sizeof s->group, "%s", v);
    } else if (strcmp(k, "population") == 0) {
      char *end1, *end2;
      s->pop_seed = strtoll(v, &end1, 10);
      s->pop_index = *end1 == ':' ? strtoll(end1 + 1, &end2, 10) : -1;
      if (end1 == v || *end1 != ':' || *end2 || s->pop_seed < 0 || s->pop_index < 0 ||
          s->pop_index >= 100000)
        err = -EINVAL;
    } else if (strcmp(k, "gpus") == 0) {
      if (parse_num(v, 1, SIM_MAX_GPUS, &x) || x != floor(x))
        err = -EINVAL;
      else
        s->n = (unsigned)x;
    } else if (strcmp(k, "clock") == 0) {
      if (strcmp(v, "virtual") == 0)
        s->virtual_clock = true;
      else if (strcmp(v, "real") == 0)
        s->virtual_clock = false;
      else
        err = -EINVAL;
    } else if (strcmp(k, "seed") == 0) {
      if (parse_num(v, 0, 9e15, &x))
        err = -EINVAL;
      else
        s->seed = (unsigned long long)x;
    } else if (strcmp(k, "noise") == 0) {
      if (strcmp(v, "off") == 0)
        s->noise = 0;
      else if (strcmp(v, "sample") == 0)
        s->noise = 1;
      else if (strcmp(v, "repeat") == 0)
        s->noise = 2;
      else
        err = -EINVAL;
    } else if (strcmp(k, "warmup") == 0) {
      err = parse_num(v, 0, 1e6, &s->warmup_s);
    } else if (strcmp(k, "startup") == 0) {
      err = parse_num(v, 0, 1e6, &s->startup_s);
    } else if (strcmp(k, "eval") == 0) {
      err = parse_num(v, 0, 500, &s->eval_s);
    } else if (strcmp(k, "ckpt") == 0) {
      err = parse_num(v, 0, 500, &s->ckpt_s);
    } else if (strcmp(k, "avg") == 0) {
      err = parse_num(v, 0, 10, &s->avg_s);
    } else if (strcmp(k, "lag") == 0) {
      err = parse_num(v, 0, 10, &s->lag_s);
    } else if (strcmp(k, "since") == 0) {
      err = parse_num(v, 0, 1e9, &s->since_s);
    } else if (strcmp(k, "start") == 0) {
      if (strcmp(v, "open") == 0)
        s->start_at_open = true;
      else if (strcmp(v, "call") == 0)
        s->start_at_open = false;
      else
        err = -EINVAL;
    } else if (strcmp(k, "calibrate") == 0) {
      /* handled by the caller */
    } else {
      snprintf(errbuf, errlen,
               "sim spec: unknown key '%s' (group, population, gpus, clock, seed, noise, "
               "warmup, startup, eval, ckpt, avg, lag, start, since, calibrate)",
               k);
      err = -EINVAL;
      break;
    }
    if (err && !errbuf[0]) snprintf(errbuf, errlen, "sim spec: bad value '%s' for '%s'", v, k);
  }
  free(copy);
  return err;
}

/* The job of a published group (group=NAME), calibrated unless asked not to. */
static int model_group(struct sim *s, bool calibrate, char *errbuf, size_t errlen) {
  const struct pflex_twin_paper_group *g = pflex_twin_paper_find(s->group);
  if (!g) {
    snprintf(errbuf, errlen, "sim: no twin group '%s' (see 'pflex twin check' for the names)",
             s->group);
    return -ENOENT;
  }
  s->type = pflex_twin_gpu_find(g->gpu);
  if (!s->type) {
    snprintf(errbuf, errlen, "sim: the twin has no GPU type '%s'", g->gpu);
    return -ENOENT;
  }
  pflex_twin_paper_job(g, &s->job);
  int err = pflex_twin_job_derive(s->type, &s->job);
  if (!err && calibrate) {
    struct pflex_twin_calib c;
    err = pflex_twin_calibrate(g, s->type, &s->job, PFLEX_TWIN_REFERENCE_SEED, &c);
  }
  if (err) {
    snprintf(errbuf, errlen, "sim: cannot model the job of '%s': error %d", s->group, err);
    return err;
  }
  if (!s->n) s->n = g->gpus > SIM_MAX_GPUS ? SIM_MAX_GPUS : (unsigned)g->gpus;
  return 0;
}

/* Job INDEX of the population `pflex twin population --seed SEED` draws
 * (population=SEED:INDEX; H100 and H200), as it draws it. */
static int model_population(struct sim *s, char *errbuf, size_t errlen) {
  size_t n = (size_t)s->pop_index + 1;
  struct pflex_twin_population_opts po = {.jobs = n, .seed = (uint64_t)s->pop_seed};
  const struct pflex_twin_gpu **gpus = calloc(n, sizeof *gpus);
  struct pflex_twin_job *jobs = calloc(n, sizeof *jobs);
  int err = gpus && jobs ? pflex_twin_population_jobs(&po, gpus, jobs) : -ENOMEM;
  if (!err) {
    s->type = gpus[n - 1];
    s->job = jobs[n - 1];
    snprintf(s->group, sizeof s->group, "population %lld:%lld", s->pop_seed, s->pop_index);
  } else
    snprintf(errbuf, errlen, "sim: cannot draw population job %lld of seed %lld: error %d",
             s->pop_index, s->pop_seed, err);
  free(gpus);
  free(jobs);
  if (!err && !s->n) s->n = s->job.gpus > SIM_MAX_GPUS ? SIM_MAX_GPUS : (unsigned)s->job.gpus;
  return err;
}

static int sim_open(const char *spec, void **ret_ctx, char *errbuf, size_t errlen) {
  struct sim *s = calloc(1, sizeof *s);
  if (!s) return -ENOMEM;
  snprintf(s->group, sizeof s->group, "%s", SIM_DEFAULT_GROUP);
  s->virtual_clock = true;
  s->noise = 1;
  s->seed = 1;
  s->warmup_s = 60;
  s->startup_s = 30;
  s->eval_s = 60;
  s->ckpt_s = 45;
  s->avg_s = 1.0;
  s->lag_s = 0.1;
  s->start_at_open = true;
  s->prev_t0 = -1;
  s->pop_index = -1;
  if (errlen) errbuf[0] = '\0';
  int err = parse_spec(s, spec, errbuf, errlen);
  if (err) {
    free(s);
    return err;
  }
  err = s->pop_index >= 0 ? model_population(s, errbuf, errlen)
                          : model_group(s, !(spec && strstr(spec, "calibrate=0")), errbuf, errlen);
  if (err) {
    free(s);
    return err;
  }
  s->rng = gsl_rng_alloc(gsl_rng_mt19937);
  if (!s->rng) {
    free(s);
    return -ENOMEM;
  }
  gsl_rng_set(s->rng, (unsigned long)s->seed);
  for (unsigned i = 0; i < s->n; i++)
    s->g[i].limit_mw = s->g[i].base_mw = (unsigned)lround(s->type->tdp_w * 1000);
  s->real0 = mono();
  if (s->start_at_open) { /* runs = 0 */
    s->job_running = true;
    s->job_t0 = -s->since_s;
  }
  *ret_ctx = s;
  return 0;
}

static void sim_close(void *ctx) {
  struct sim *s = ctx;
  if (!s) return;
  gsl_rng_free(s->rng);
  free(s);
}

static int check(struct sim *s, unsigned i) {
  if (i >= s->n) {
    snprintf(s->err, sizeof s->err, "no simulated GPU %u (there are %u)", i, s->n);
    return -ENODEV;
  }
  return 0;
}

static int sim_count(void *ctx, unsigned *ret_n) {
  *ret_n = ((struct sim *)ctx)->n;
  return 0;
}

static int sim_info(void *ctx, unsigned i, struct pflex_gpu_info *info) {
  struct sim *s = ctx;
  int err = check(s, i);
  if (err) return err;
  snprintf(info->name, sizeof info->name, "%s (simulated)", s->type->long_name);
  snprintf(info->uuid, sizeof info->uuid, "SIM-%s-%llu-%02u", s->type->name, s->seed, i);
  snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "00000000:%02X:00.0", 0x10 + i);
  return 0;
}

static unsigned long long mix(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* The settled point at limit mw for `run` (cached: a few limits per GPU). */
static int point_at(struct sim *s, struct sim_gpu *g, unsigned mw, unsigned run,
                    struct pflex_twin_point *ret) {
  for (unsigned k = 0; k < SIM_POINTS; k++)
    if (g->pt[k].ok && g->pt[k].mw == mw && g->pt[k].run == run) {
      *ret = g->pt[k].p;
      return 0;
    }
  struct pflex_twin_point p;
  int err;
  if (s->noise < 2) {
    err = pflex_twin_eval(s->type, &s->job, mw / 1000.0, &p);
  } else {
    struct pflex_twin_noise nz;
    pflex_twin_noise_default(&nz); /* the paper's repeat-to-repeat CVs */
    unsigned long long seed = mix(s->seed ^ mix((unsigned long long)run * 1000003ull + mw));
    err = pflex_twin_eval_noisy(s->type, &s->job, mw / 1000.0, &nz, seed, &p);
  }
  if (err) {
    snprintf(s->err, sizeof s->err, "the twin cannot settle at %.1f W", mw / 1000.0);
    return err;
  }
  struct sim_point *slot = &g->pt[g->pt_next++ % SIM_POINTS];
  *slot = (struct sim_point){.mw = mw, .run = run, .ok = true, .p = p};
  *ret = p;
  return 0;
}

/* The limit in effect at time t: the newest change that has taken effect. */
static unsigned eff_mw(const struct sim_gpu *g, double t) {
  for (unsigned k = g->nch; k-- > 0;)
    if (g->ch[k].t <= t) return g->ch[k].mw;
  return g->base_mw;
}

static double jitter(struct sim *s) {
  return s->noise ? 1.0 + gsl_ran_gaussian(s->rng, SIM_JITTER) : 1.0;
}

/* What one GPU truly does at time t (noise-free). */
struct sim_draw {
  double power_w, util, mem_util, fb_mib, sm_mhz;
  double sm_active, tensor_active, dram_active; /* fractions */
  bool training, limited;
};

/* The job's phase at time t: warmup, startup, then training with the eval
 * and checkpoint dips. Before the current start, the previous run (if any). */
static int draw_at(struct sim *s, struct sim_gpu *g, double t, struct sim_draw *d) {
  *d = (struct sim_draw){.power_w = s->type->idle_w, .fb_mib = 512, .sm_mhz = s->type->f_max_mhz};
  if (!s->job_running) return 0;
  double t0 = s->job_t0;
  unsigned run = s->runs;
  if (t < t0) {
    if (s->prev_t0 < 0 || run == 0) return 0;
    t0 = s->prev_t0;
    run--;
  }
  double tj = t - t0, tt = tj - s->warmup_s - s->startup_s;
  struct pflex_twin_point p;
  int err = point_at(s, g, eff_mw(g, t), run, &p);
  if (err) return err;
  if (tj < s->warmup_s) {
    d->fb_mib = 512 + 4096 * (tj / (s->warmup_s > 0 ? s->warmup_s : 1)); /* below 10 GiB */
    return 0;
  }
  d->fb_mib = p.metrics[PFLEX_TWIN_M_FB_USED];
  if (tt < 0) {
    d->power_w = s->type->idle_w * 1.1;
    return 0;
  }
  double run_t = fmod(tt, 1800.0); /* the paper's 30-minute run, repeating */
  bool in_eval = s->eval_s > 0 && run_t >= 600 && run_t < 600 + s->eval_s;
  bool in_ckpt = s->ckpt_s > 0 && run_t >= 1200 && run_t < 1200 + s->ckpt_s;
  d->sm_mhz = p.sm_clock_mhz;
  if (in_eval) {
    d->power_w = s->type->idle_w + 0.5 * (p.power_w - s->type->idle_w);
    d->util = 35;
    d->sm_active = 0.35 * p.metrics[PFLEX_TWIN_M_SM_ACTIVE]; /* forward passes only, gaps */
    d->dram_active = 0.5 * p.metrics[PFLEX_TWIN_M_DRAM_ACTIVE];
  } else if (in_ckpt) {
    d->power_w = s->type->idle_w * 1.05;
  } else {
    d->power_w = p.power_w;
    d->util = 100.0 * p.util;
    /* NVML's memory utilization is DCGM's MEM_COPY_UTIL (time the memory
     * was read or written), not DRAM_ACTIVE. */
    d->mem_util = p.metrics[PFLEX_TWIN_M_MEM_COPY_UTIL];
    d->sm_active = p.metrics[PFLEX_TWIN_M_SM_ACTIVE];
    d->tensor_active = p.metrics[PFLEX_TWIN_M_PIPE_TENSOR];
    d->dram_active = p.metrics[PFLEX_TWIN_M_DRAM_ACTIVE];
    d->training = true;
    d->limited = p.limited;
  }
  return 0;
}

/* Mean of the true draw over (t0, t1]: midpoints at most SIM_AVG_STEP apart. */
static int mean_draw(struct sim *s, struct sim_gpu *g, double t0, double t1, double *ret_w) {
  struct sim_draw d;
  if (!(t1 > t0)) {
    int err = draw_at(s, g, t1, &d);
    *ret_w = d.power_w;
    return err;
  }
  int k = (int)ceil((t1 - t0) / SIM_AVG_STEP - 1e-9);
  if (k < 1) k = 1;
  if (k > SIM_AVG_MAX) k = SIM_AVG_MAX;
  double sum = 0, h = (t1 - t0) / k;
  for (int m = 0; m < k; m++) {
    int err = draw_at(s, g, t0 + (m + 0.5) * h, &d);
    if (err) return err;
    sum += d.power_w;
  }
  *ret_w = sum / k;
  return 0;
}

static void fill_static(struct sim *s, const struct sim_gpu *g, double now,
                        struct pflex_gpu_reading *r) {
  r->time_s = now;
  r->valid = PFLEX_GPU_POWER | PFLEX_GPU_ENERGY | PFLEX_GPU_LIMIT | PFLEX_GPU_DEFAULT_LIMIT |
             PFLEX_GPU_CONSTRAINTS | PFLEX_GPU_ENFORCED | PFLEX_GPU_SM_CLOCK | PFLEX_GPU_MEM_CLOCK |
             PFLEX_GPU_UTIL | PFLEX_GPU_THROTTLE | PFLEX_GPU_MEMORY;
  r->limit_mw = g->limit_mw;
  r->enforced_limit_mw = eff_mw(g, now);
  r->default_limit_mw = r->max_limit_mw = (unsigned)lround(s->type->tdp_w * 1000);
  r->min_limit_mw = (unsigned)lround(s->type->cap_min_w * 1000);
  r->mem_clock_mhz = (unsigned)lround(s->type->mem_clock_mhz);
  r->mem_total_bytes = (unsigned long long)(s->type->hbm_gib * 1073741824.0);
}

/* Synchronous training: the slowest GPU (lowest limit in effect) sets the pace. */
static int job_tput(struct sim *s, double now, double *ret) {
  unsigned low = 0;
  for (unsigned k = 1; k < s->n; k++)
    if (eff_mw(&s->g[k], now) < eff_mw(&s->g[low], now)) low = k;
  struct pflex_twin_point p;
  int err = point_at(s, &s->g[low], eff_mw(&s->g[low], now), s->runs, &p);
  if (!err) *ret = p.tokens_per_s * jitter(s);
  return err;
}

static int sim_read(void *ctx, unsigned i, struct pflex_gpu_reading *r) {
  struct sim *s = ctx;
  int err = check(s, i);
  if (err) return err;
  struct sim_gpu *g = &s->g[i];
  double now = sim_time(s), avg_w, energy_w = 0;
  fill_static(s, g, now, r);
  struct sim_draw d;
  err = draw_at(s, g, now, &d);
  /* NVML's reading: the mean draw over the trailing window, with sample noise */
  if (!err) err = mean_draw(s, g, now - s->avg_s, now, &avg_w);
  /* energy integrates the true draw since the previous reading */
  if (!err && g->energy_started && now > g->energy_t)
    err = mean_draw(s, g, g->energy_t, now, &energy_w);
  if (err) return err;
  if (g->energy_started && now > g->energy_t)
    g->energy_mj += (unsigned long long)llround(energy_w * (now - g->energy_t) * 1000.0);
  g->energy_t = now;
  g->energy_started = true;
  r->energy_mj = g->energy_mj;
  r->power_mw = (unsigned)lround(avg_w * jitter(s) * 1000);
  r->sm_clock_mhz = (unsigned)lround(d.sm_mhz);
  r->util_gpu_pct = (unsigned)lround(fmin(100, fmax(0, d.util)));
  r->util_mem_pct = (unsigned)lround(fmin(100, fmax(0, d.mem_util)));
  r->mem_used_bytes = (unsigned long long)(d.fb_mib * 1048576.0);
  r->valid |= PFLEX_GPU_PROF;
  r->sm_active = d.sm_active; /* at the point's clock: not averaged like the power */
  r->pipe_tensor_active = d.tensor_active;
  r->dram_active = d.dram_active;
  if (d.limited) r->throttle_reasons = 0x4; /* sw_power_cap */
  if (d.training) {
    err = job_tput(s, now, &r->tput);
    if (err) return err;
    r->valid |= PFLEX_GPU_TPUT;
  }
  return 0;
}

static int sim_get_limit(void *ctx, unsigned i, unsigned *ret_mw) {
  struct sim *s = ctx;
  int err = check(s, i);
  if (err) return err;
  *ret_mw = s->g[i].limit_mw;
  return 0;
}

static int sim_set_limit(void *ctx, unsigned i, unsigned mw) {
  struct sim *s = ctx;
  int err = check(s, i);
  if (err) return err;
  /* Like the driver: a limit outside the range is refused. */
  if (mw < lround(s->type->cap_min_w * 1000) || mw > lround(s->type->tdp_w * 1000)) {
    snprintf(s->err, sizeof s->err, "%.1f W is outside %.0f-%.0f W", mw / 1000.0,
             s->type->cap_min_w, s->type->tdp_w);
    return -EINVAL;
  }
  struct sim_gpu *g = &s->g[i];
  double now = sim_time(s);
  /* Forget changes the trailing average no longer reaches; keep room for one. */
  while (g->nch > 0 &&
         (g->nch == SIM_CHANGES || (g->nch > 1 && g->ch[1].t <= now - s->avg_s - SIM_AVG_STEP))) {
    g->base_mw = g->ch[0].mw;
    memmove(g->ch, g->ch + 1, (g->nch - 1) * sizeof g->ch[0]);
    g->nch--;
  }
  g->ch[g->nch++] = (struct sim_change){.t = now + s->lag_s, .mw = mw};
  g->limit_mw = mw; /* reported at once; in effect after the lag */
  return 0;
}

static int sim_constraints(void *ctx, unsigned i, unsigned *ret_min, unsigned *ret_max,
                           unsigned *ret_default) {
  struct sim *s = ctx;
  int err = check(s, i);
  if (err) return err;
  *ret_min = (unsigned)lround(s->type->cap_min_w * 1000);
  *ret_max = (unsigned)lround(s->type->tdp_w * 1000);
  if (ret_default) *ret_default = *ret_max;
  return 0;
}

static int sim_now(void *ctx, double *ret_s) {
  *ret_s = sim_time(ctx);
  return 0;
}

static int sim_sleep(void *ctx, double sec) {
  struct sim *s = ctx;
  if (!(sec > 0)) return 0;
  if (s->virtual_clock) {
    s->vnow += sec;
    return 0;
  }
  struct timespec ts = {.tv_sec = (time_t)sec, .tv_nsec = (long)((sec - floor(sec)) * 1e9)};
  return nanosleep(&ts, NULL) == 0 ? 0 : -errno;
}

static bool sim_virtual(void *ctx) {
  return ((struct sim *)ctx)->virtual_clock;
}

static int sim_job_start(void *ctx) {
  struct sim *s = ctx;
  s->prev_t0 = s->job_running ? s->job_t0 : -1;
  s->job_running = true;
  s->job_t0 = sim_time(s);
  s->runs++;
  return 0;
}

static const char *sim_last_error(void *ctx) {
  struct sim *s = ctx;
  return s->err[0] ? s->err : NULL;
}

const struct pflex_gpu_ops pflex__gpu_sim_ops = {
    .name = "sim",
    .summary = "simulated GPUs of the twin running a simulated job (modelled, not measured)",
    .open = sim_open,
    .close = sim_close,
    .count = sim_count,
    .info = sim_info,
    .read = sim_read,
    .get_limit = sim_get_limit,
    .set_limit = sim_set_limit,
    .constraints = sim_constraints,
    .now = sim_now,
    .sleep = sim_sleep,
    .virtual_clock = sim_virtual,
    .job_start = sim_job_start,
    .last_error = sim_last_error,
};
