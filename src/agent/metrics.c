/* The Prometheus exposition (metrics.h): one table of GPU gauges, then the
 * counters, each family with HELP and TYPE. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/caps.h"
#include "agent/metrics.h"

struct gpu_family {
  const char *name, *type, *help;
  unsigned need; /* PFLEX_GPU_* bits the value needs (0: always there) */
  double (*value)(const struct agent *a, unsigned i);
};

static const struct pflex_gpu_reading *rd(const struct agent *a, unsigned i) {
  return &a->samp[i].last;
}
static double v_power(const struct agent *a, unsigned i) { return rd(a, i)->power_mw / 1e3; }
static double v_energy(const struct agent *a, unsigned i) { return rd(a, i)->energy_mj / 1e3; }
static double v_limit(const struct agent *a, unsigned i) { return rd(a, i)->limit_mw / 1e3; }
static double v_enf(const struct agent *a, unsigned i) { return rd(a, i)->enforced_limit_mw / 1e3; }
static double v_dflt(const struct agent *a, unsigned i) { return rd(a, i)->default_limit_mw / 1e3; }
static double v_min(const struct agent *a, unsigned i) { return rd(a, i)->min_limit_mw / 1e3; }
static double v_max(const struct agent *a, unsigned i) { return rd(a, i)->max_limit_mw / 1e3; }
static double v_sm(const struct agent *a, unsigned i) { return rd(a, i)->sm_clock_mhz * 1e6; }
static double v_thr(const struct agent *a, unsigned i) { return (double)rd(a, i)->throttle_reasons; }
static double v_up(const struct agent *a, unsigned i) {
  return a->samp[i].have_last && a->samp[i].last_err == 0;
}
static double v_capped(const struct agent *a, unsigned i) {
  return a->g[i].lease.state == AGENT_LEASE_HELD || a->g[i].lease.state == AGENT_LEASE_FALLBACK;
}
static double v_left(const struct agent *a, unsigned i) {
  double left = agent_lease_left(&a->g[i].lease, agent_now());
  return left > 0 ? left : 0;
}

static const struct gpu_family gpu_families[] = {
    {"pflex_gpu_up", "gauge", "1 when the latest read of the GPU succeeded", 0, v_up},
    {"pflex_gpu_power_watts", "gauge", "Board power (NVML: about a 1 s average)", PFLEX_GPU_POWER,
     v_power},
    {"pflex_gpu_energy_joules_total", "counter", "Energy since the driver loaded",
     PFLEX_GPU_ENERGY, v_energy},
    {"pflex_gpu_power_limit_watts", "gauge", "Power management limit", PFLEX_GPU_LIMIT, v_limit},
    {"pflex_gpu_enforced_power_limit_watts", "gauge",
     "Enforced power limit (includes out-of-band limits)", PFLEX_GPU_ENFORCED, v_enf},
    {"pflex_gpu_default_power_limit_watts", "gauge", "Default power limit",
     PFLEX_GPU_DEFAULT_LIMIT, v_dflt},
    {"pflex_gpu_min_power_limit_watts", "gauge", "Lowest settable power limit",
     PFLEX_GPU_CONSTRAINTS, v_min},
    {"pflex_gpu_max_power_limit_watts", "gauge", "Highest settable power limit",
     PFLEX_GPU_CONSTRAINTS, v_max},
    {"pflex_gpu_sm_clock_hertz", "gauge", "SM clock", PFLEX_GPU_SM_CLOCK, v_sm},
    {"pflex_gpu_throttle_reasons", "gauge", "NVML clocks-event reason bits", PFLEX_GPU_THROTTLE,
     v_thr},
    {"pflex_gpu_capped", "gauge", "1 when pflexd holds the limit (a lease or its fallback)", 0,
     v_capped},
    {"pflex_gpu_lease_seconds_left", "gauge", "Seconds until the lease falls back (0: none)", 0,
     v_left},
};

/* A label value with \, " and newline escaped. */
static void label(FILE *f, const char *name, const char *value) {
  fprintf(f, "%s=\"", name);
  for (const char *p = value; *p; p++) {
    if (*p == '\\' || *p == '"')
      fputc('\\', f), fputc(*p, f);
    else if (*p == '\n')
      fputs("\\n", f);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

static void head(FILE *f, const char *name, const char *type, const char *help) {
  fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void gpu_series(FILE *f, const struct agent *a, const struct gpu_family *fam) {
  head(f, fam->name, fam->type, fam->help);
  for (unsigned i = 0; i < a->n; i++) {
    if (fam->need && (!a->samp[i].have_last || (rd(a, i)->valid & fam->need) != fam->need))
      continue;
    fprintf(f, "%s{gpu=\"%u\",", fam->name, i);
    label(f, "uuid", a->g[i].info.uuid);
    const struct agent_job *job = agent_jobs_of_gpu(&a->jobs, i);
    if (a->cfg.metrics_job_label && job) fputc(',', f), label(f, "job", job->id);
    fprintf(f, "} %.10g\n", fam->value(a, i));
  }
}

static void job_series(FILE *f, const struct agent *a) {
  head(f, "pflex_job_gpus", "gauge", "GPUs of the job on this node");
  for (size_t k = 0; k < a->jobs.n; k++) {
    fputs("pflex_job_gpus{", f);
    label(f, "job", a->jobs.v[k].id);
    fprintf(f, "} %d\n", __builtin_popcountll(agent_job_gpus(&a->jobs, &a->jobs.v[k])));
  }
  head(f, "pflex_job_throughput", "gauge",
       "Latest throughput sample of the job (its unit per second, e.g. tokens/s)");
  for (size_t k = 0; k < a->jobs.n; k++) {
    const struct agent_tput_sample *s = agent_job_tput_last(&a->jobs.v[k]);
    if (!s) continue;
    fputs("pflex_job_throughput{", f);
    label(f, "job", a->jobs.v[k].id);
    fprintf(f, "} %.10g\n", s->value);
  }
}

static void counter(FILE *f, const char *name, const char *help, unsigned long long v) {
  head(f, name, "counter", help);
  fprintf(f, "%s %llu\n", name, v);
}

static void agent_series(FILE *f, const struct agent *a) {
  head(f, "pflex_agent_info", "gauge", "pflexd's version and GPU backend");
  fprintf(f, "pflex_agent_info{version=\"%s\",", PFLEX_VERSION);
  label(f, "backend", pflex_gpu_backend_name(a->gpu));
  fputs("} 1\n", f);
  counter(f, "pflex_samples_total", "GPU samples taken", a->sampler.samples);
  counter(f, "pflex_samples_dropped_total", "GPU samples lost (failed reads, late ticks)",
          a->sampler.dropped);
  counter(f, "pflex_api_requests_total", "API requests answered", a->c.requests);
  head(f, "pflex_api_errors_total", "counter", "API requests refused or failed, by HTTP status");
  for (int k = 0; k < AGENT_ERROR_CODES && a->c.error_code[k]; k++)
    fprintf(f, "pflex_api_errors_total{code=\"%d\"} %llu\n", a->c.error_code[k], a->c.errors[k]);
  counter(f, "pflex_lease_expiries_total", "Leases that ran out and fell back",
          a->c.lease_expiries);
  counter(f, "pflex_limit_failures_total", "Power limit changes or restores that failed",
          a->c.limit_failures);
  counter(f, "pflex_statsd_packets_total", "StatsD datagrams received", a->c.statsd_packets);
  counter(f, "pflex_statsd_bad_lines_total", "Malformed StatsD lines", a->c.statsd_bad);
  counter(f, "pflex_statsd_unattributed_total", "Throughput metrics for no known job",
          a->c.statsd_unattributed);
}

int agent_metrics_render(struct agent *a, char **ret, size_t *ret_len) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return -ENOMEM;
  for (size_t k = 0; k < sizeof gpu_families / sizeof gpu_families[0]; k++)
    gpu_series(f, a, &gpu_families[k]);
  job_series(f, a);
  agent_series(f, a);
  if (fclose(f) != 0) {
    free(buf);
    return -ENOMEM;
  }
  *ret = buf;
  *ret_len = len;
  return 0;
}
