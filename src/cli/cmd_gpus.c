/* `pflex gpus`: lists the GPUs of a backend with their power, limits,
 * constraints, clocks and utilization (read-only). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/commands.h"
#include "cli/gpu_cli.h"
#include "cli/util.h"

struct args {
  const char *backend, *spec, *gpus;
  bool json, profiling;
  double watch, hz;
};

static const struct cli_option options[] = {
    {CLI_STRING("backend", "NAME", struct args, backend,
                "GPU backend: nvml (default; env PFLEX_GPU_BACKEND) or sim")},
    {CLI_STRING("sim-job", "SPEC", struct args, spec,
                "sim backend: GPUs and job to simulate (see docs/gpu.md)")},
    {CLI_FLAG("json", struct args, json,
              "one JSON object per GPU in an array; readings the GPU cannot give are absent")},
    {CLI_DOUBLE(
        "watch", "S", struct args, watch, 0, 1e7,
        "sample for S seconds and write a telemetry series CSV to stdout (time_s, gpu, "
        "power_w, gpu_util, mem_copy_util, fb_used_mib, sm_clock_mhz, mem_clock_mhz, limit_w, "
        "enforced_limit_w, energy_j, throttle, sm_active, pipe_tensor_active, dram_active); "
        "empty cells: not available")},
    {CLI_FLAG("profiling", struct args, profiling,
              "nvml with --watch: the SM, tensor and DRAM activity from NVML's GPM (Hopper and "
              "newer; from the second sample on)"),
     .needs = "watch"},
    {CLI_DOUBLE("hz", "N", struct args, hz, 0.1, 10,
                "samples per second with --watch, 0.1-10 (default 1)"),
     .needs = "watch"},
    {CLI_CUSTOM("gpus", "LIST", struct args, gpus, cli_gpu_list_check, CLI_GPU_LIST_EXPECT,
                "GPUs to watch (default: all)"),
     .needs = "watch"},
    {CLI_END}};

static const char *const exclusive[] = {"json watch", NULL};

static const struct cli_spec spec = {
    .name = "gpus",
    .usage = "pflex gpus [--backend nvml|sim] [--sim-job SPEC] [--json | --watch S [--hz N] "
             "[--gpus LIST] [--profiling]]",
    .about = "Shows index, name, UUID, PCI bus id, power, limit (enforced), default limit, "
             "settable range, SM and memory clocks, utilization, memory used and throttle "
             "reasons. A '*' after the limit: the enforced limit is lower (an out-of-band "
             "limit). Changes nothing.",
    .options = options,
    .exclusive = exclusive};

static const struct cli_spec *const specs[] = {&spec, NULL};

static void fmt_w(char *buf, size_t size, int ok, unsigned mw) {
  if (ok)
    snprintf(buf, size, "%.1f", mw / 1000.0);
  else
    snprintf(buf, size, "-");
}

static void fmt_u(char *buf, size_t size, int ok, unsigned v) {
  if (ok)
    snprintf(buf, size, "%u", v);
  else
    snprintf(buf, size, "-");
}

static json_t *reading_json(unsigned i, const struct pflex_gpu_info *info,
                            const struct pflex_gpu_reading *r) {
  json_t *o = json_object();
  json_object_set_new(o, "index", json_integer(i));
  json_object_set_new(o, "name", json_string(info->name));
  json_object_set_new(o, "uuid", json_string(info->uuid));
  if (info->pci_bus_id[0]) json_object_set_new(o, "pci_bus_id", json_string(info->pci_bus_id));
  unsigned v = r->valid;
  if (v & PFLEX_GPU_POWER) json_object_set_new(o, "power_w", json_real(r->power_mw / 1000.0));
  if (v & PFLEX_GPU_ENERGY)
    json_object_set_new(o, "energy_j", json_real((double)r->energy_mj / 1000.0));
  if (v & PFLEX_GPU_LIMIT) json_object_set_new(o, "limit_w", json_real(r->limit_mw / 1000.0));
  if (v & PFLEX_GPU_ENFORCED)
    json_object_set_new(o, "enforced_limit_w", json_real(r->enforced_limit_mw / 1000.0));
  if (v & PFLEX_GPU_DEFAULT_LIMIT)
    json_object_set_new(o, "default_limit_w", json_real(r->default_limit_mw / 1000.0));
  if (v & PFLEX_GPU_CONSTRAINTS) {
    json_object_set_new(o, "min_limit_w", json_real(r->min_limit_mw / 1000.0));
    json_object_set_new(o, "max_limit_w", json_real(r->max_limit_mw / 1000.0));
  }
  if (v & PFLEX_GPU_SM_CLOCK) json_object_set_new(o, "sm_clock_mhz", json_integer(r->sm_clock_mhz));
  if (v & PFLEX_GPU_MEM_CLOCK)
    json_object_set_new(o, "mem_clock_mhz", json_integer(r->mem_clock_mhz));
  if (v & PFLEX_GPU_UTIL) {
    json_object_set_new(o, "gpu_util", json_integer(r->util_gpu_pct));
    json_object_set_new(o, "mem_util", json_integer(r->util_mem_pct));
  }
  if (v & PFLEX_GPU_MEMORY) {
    json_object_set_new(o, "mem_used_mib", json_real((double)r->mem_used_bytes / 1048576.0));
    json_object_set_new(o, "mem_total_mib", json_real((double)r->mem_total_bytes / 1048576.0));
  }
  if (v & PFLEX_GPU_THROTTLE) {
    char names[256];
    pflex_gpu_throttle_names(r->throttle_reasons, names, sizeof names);
    json_object_set_new(o, "throttle_reasons", json_string(names));
  }
  if (v & PFLEX_GPU_TPUT) json_object_set_new(o, "job_tput", json_real(r->tput));
  return o;
}

/* --watch: a telemetry series CSV of the selected GPUs, read-only. */
static int watch(struct pflex_gpu *gpu, const char *list, double seconds, double hz) {
  unsigned *idx;
  size_t n;
  if (cli_gpu_select(gpu, list, &idx, &n)) return PFLEX_EXIT_FAIL;
  printf("time_s,gpu,power_w,gpu_util,mem_copy_util,fb_used_mib,sm_clock_mhz,mem_clock_mhz,limit_w,"
         "enforced_limit_w,energy_j,throttle,sm_active,pipe_tensor_active,dram_active\n");
  double t0, now;
  pflex_gpu_now(gpu, &t0);
  int status = PFLEX_EXIT_OK;
  for (double next = t0; status == PFLEX_EXIT_OK; next += 1.0 / hz) {
    if (next - t0 > seconds + 1e-9) break;
    pflex_gpu_now(gpu, &now);
    if (next > now) pflex_gpu_sleep(gpu, next - now);
    for (size_t k = 0; k < n; k++) {
      struct pflex_gpu_reading r;
      int err = pflex_gpu_read(gpu, idx[k], &r);
      if (err) {
        cli_gpu_error(gpu, "cannot read", idx[k], err);
        status = PFLEX_EXIT_FAIL;
        break;
      }
      char c[13][32];
      memset(c, 0, sizeof c);
      unsigned v = r.valid;
      if (v & PFLEX_GPU_POWER) snprintf(c[0], 32, "%.3f", r.power_mw / 1e3);
      if (v & PFLEX_GPU_UTIL)
        snprintf(c[1], 32, "%u", r.util_gpu_pct), snprintf(c[2], 32, "%u", r.util_mem_pct);
      if (v & PFLEX_GPU_MEMORY) snprintf(c[3], 32, "%.1f", (double)r.mem_used_bytes / 1048576.0);
      if (v & PFLEX_GPU_SM_CLOCK) snprintf(c[4], 32, "%u", r.sm_clock_mhz);
      if (v & PFLEX_GPU_MEM_CLOCK) snprintf(c[5], 32, "%u", r.mem_clock_mhz);
      if (v & PFLEX_GPU_LIMIT) snprintf(c[6], 32, "%.3f", r.limit_mw / 1e3);
      if (v & PFLEX_GPU_ENFORCED) snprintf(c[7], 32, "%.3f", r.enforced_limit_mw / 1e3);
      if (v & PFLEX_GPU_ENERGY) snprintf(c[8], 32, "%.3f", (double)r.energy_mj / 1e3);
      if (v & PFLEX_GPU_THROTTLE) snprintf(c[9], 32, "0x%llx", r.throttle_reasons);
      if (v & PFLEX_GPU_PROF)
        snprintf(c[10], 32, "%.4f", r.sm_active), snprintf(c[11], 32, "%.4f", r.pipe_tensor_active),
            snprintf(c[12], 32, "%.4f", r.dram_active);
      printf("%.3f,%u,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", r.time_s - t0, idx[k], c[0], c[1],
             c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11], c[12]);
    }
    fflush(stdout);
  }
  free(idx);
  return status;
}

/* The table (or JSON) of every GPU. */
static int list_gpus(struct pflex_gpu *gpu, bool json) {
  unsigned n;
  int err = pflex_gpu_count(gpu, &n), status = PFLEX_EXIT_OK;
  if (err) {
    cli_error("cannot count GPUs: %s", pflex_strerror(err));
    return PFLEX_EXIT_FAIL;
  }
  json_t *arr = json ? json_array() : NULL;
  if (!json && strcmp(pflex_gpu_backend_name(gpu), "sim") == 0)
    printf("# simulated GPUs (sim backend): modelled readings, not measurements\n");
  if (!json)
    printf("%-3s %-34s %-40s %8s %8s %8s %-11s %6s %6s %5s %9s %s\n", "idx", "name", "uuid",
           "power_W", "limit_W", "default", "range_W", "sm_MHz", "mem_MHz", "util%", "mem_MiB",
           "throttle");
  for (unsigned i = 0; i < n; i++) {
    struct pflex_gpu_info info;
    struct pflex_gpu_reading r;
    err = pflex_gpu_info(gpu, i, &info);
    if (!err) err = pflex_gpu_read(gpu, i, &r);
    if (err) {
      cli_gpu_error(gpu, "cannot read", i, err);
      status = PFLEX_EXIT_FAIL;
      continue;
    }
    if (json) {
      json_array_append_new(arr, reading_json(i, &info, &r));
      continue;
    }
    char p[16], l[16], d[16], range[32], sm[16], mem[16], u[16], mu[24], th[256];
    fmt_w(p, sizeof p, r.valid & PFLEX_GPU_POWER, r.power_mw);
    fmt_w(l, sizeof l, r.valid & PFLEX_GPU_LIMIT, r.limit_mw);
    fmt_w(d, sizeof d, r.valid & PFLEX_GPU_DEFAULT_LIMIT, r.default_limit_mw);
    if (r.valid & PFLEX_GPU_CONSTRAINTS)
      snprintf(range, sizeof range, "%.0f-%.0f", r.min_limit_mw / 1000.0, r.max_limit_mw / 1000.0);
    else
      snprintf(range, sizeof range, "-");
    fmt_u(sm, sizeof sm, r.valid & PFLEX_GPU_SM_CLOCK, r.sm_clock_mhz);
    fmt_u(mem, sizeof mem, r.valid & PFLEX_GPU_MEM_CLOCK, r.mem_clock_mhz);
    fmt_u(u, sizeof u, r.valid & PFLEX_GPU_UTIL, r.util_gpu_pct);
    if (r.valid & PFLEX_GPU_MEMORY)
      snprintf(mu, sizeof mu, "%.0f", (double)r.mem_used_bytes / 1048576.0);
    else
      snprintf(mu, sizeof mu, "-");
    if (r.valid & PFLEX_GPU_THROTTLE)
      pflex_gpu_throttle_names(r.throttle_reasons, th, sizeof th);
    else
      snprintf(th, sizeof th, "-");
    if ((r.valid & PFLEX_GPU_ENFORCED) && (r.valid & PFLEX_GPU_LIMIT) &&
        r.enforced_limit_mw != r.limit_mw)
      snprintf(l + strlen(l), sizeof l - strlen(l), "*");
    printf("%-3u %-34s %-40s %8s %8s %8s %-11s %6s %6s %5s %9s %s\n", i, info.name, info.uuid, p, l,
           d, range, sm, mem, u, mu, th);
  }
  if (json) {
    if (cli_print_json(arr, JSON_PRESERVE_ORDER)) status = PFLEX_EXIT_FAIL;
  } else if (n == 0) {
    printf("(no GPUs)\n");
  }
  return status;
}

static int run(int argc, char **argv) {
  struct args a = {.hz = 1};
  struct cli_parsed p;
  int err = cli_parse(&spec, argc, argv, &a, &p);
  if (err) return cli_parse_status(err);
  struct pflex_gpu *gpu;
  err = cli_gpu_open(a.backend, a.spec, a.profiling ? "gpm=on" : NULL, &gpu);
  if (err) return err == -ENOENT ? PFLEX_EXIT_USAGE : PFLEX_EXIT_FAIL;
  int status = cli_given(&p, "watch") ? watch(gpu, a.gpus, a.watch, a.hz) : list_gpus(gpu, a.json);
  pflex_gpu_close(gpu);
  return status;
}

const struct pflex_cmd pflex_cmd_gpus = {.name = "gpus",
                                         .run = run,
                                         .summary = "list GPUs: power, limits, clocks, utilization",
                                         .specs = specs};
