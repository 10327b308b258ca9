/* The NVML backend: the one place pflex loads libnvidia-ml.so.1.
 *
 * The library is opened with dlopen at run time (no build dependency on
 * NVIDIA packages); the spec "lib=PATH" names another file (the programs take
 * it from env PFLEX_NVML_LIB; tests use the fake in tests/fake-nvml/). Only the types and functions used are declared here,
 * with the layouts of nvml.h. Versioned entry points are looked up newest
 * first. Required symbols missing -> the backend refuses to open (dlclose,
 * clear error); optional ones missing -> their readings stay invalid.
 * NVML return codes become negative errno values here and nowhere else. */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/backends.h"
#include "pflex/error.h"
#include "pflex/gpu.h"

/* ---- The subset of nvml.h that pflex uses. ---- */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_GPU_NOT_FOUND = 28,
  NVML_ERROR_UNKNOWN = 999,
};

enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };

#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96

typedef struct {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;

typedef struct {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

typedef struct {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;

/* NVML_STRUCT_VERSION(Memory, 2) */
#define NVML_MEMORY_V2_VERSION ((unsigned int)(sizeof(nvmlMemory_v2_t) | (2u << 24)))

/* GPU Performance Monitoring (GPM, Hopper and newer): a metric is computed
 * between two samples of the device's counters. Version 1 of
 * nvmlGpmMetricsGet_t has NVML_GPM_METRIC_MAX (98) metric slots. */
typedef struct {
  struct nvmlGpmSample_st *handle;
} nvmlGpmSample_t;

typedef struct {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char *shortName, *longName, *unit;
  } metricInfo;
} nvmlGpmMetric_t;

#define NVML_GPM_METRIC_MAX 98
#define NVML_GPM_METRICS_GET_VERSION 1
#define NVML_GPM_SUPPORT_VERSION 1

typedef struct {
  unsigned int version;
  unsigned int numMetrics;
  nvmlGpmSample_t sample1, sample2;
  nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

typedef struct {
  unsigned int version;
  unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

/* The metrics read, in percent 0-100: DCGM's PROF_SM_ACTIVE,
 * PROF_PIPE_TENSOR_ACTIVE and PROF_DRAM_ACTIVE as fractions. */
enum {
  NVML_GPM_METRIC_SM_UTIL = 2,
  NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,
  NVML_GPM_METRIC_DRAM_BW_UTIL = 10
};

/* Per device: unknown until asked, then supported (two samples, the newer
 * one `cur`) or not. */
enum gpm_support { GPM_UNKNOWN = 0, GPM_YES, GPM_NO };
struct gpm_dev {
  enum gpm_support support;
  nvmlGpmSample_t s[2];
  int cur;        /* index of the newest sample in s */
  bool have_cur;  /* s[cur] holds a sample taken since the last failure */
};

/* ---- The loaded library. ---- */
struct nvml {
  void *dl;
  unsigned count;
  nvmlDevice_t *dev;
  bool gpm;                /* the spec asked for the profiling activities */
  struct gpm_dev *gpm_dev; /* per device, when gpm */
  nvmlGpmMetricsGet_t *mg; /* the request (4 KB), when gpm */
  char last_error[256];

  nvmlReturn_t (*init)(void);
  nvmlReturn_t (*shutdown)(void);
  const char *(*error_string)(nvmlReturn_t);
  nvmlReturn_t (*get_count)(unsigned int *);
  nvmlReturn_t (*get_handle)(unsigned int, nvmlDevice_t *);
  nvmlReturn_t (*get_name)(nvmlDevice_t, char *, unsigned int);
  nvmlReturn_t (*get_uuid)(nvmlDevice_t, char *, unsigned int);
  nvmlReturn_t (*get_pci)(nvmlDevice_t, nvmlPciInfo_t *);
  nvmlReturn_t (*get_power)(nvmlDevice_t, unsigned int *);
  nvmlReturn_t (*get_energy)(nvmlDevice_t, unsigned long long *);
  nvmlReturn_t (*get_limit)(nvmlDevice_t, unsigned int *);
  nvmlReturn_t (*get_default_limit)(nvmlDevice_t, unsigned int *);
  nvmlReturn_t (*get_constraints)(nvmlDevice_t, unsigned int *, unsigned int *);
  nvmlReturn_t (*get_enforced)(nvmlDevice_t, unsigned int *);
  nvmlReturn_t (*set_limit)(nvmlDevice_t, unsigned int);
  nvmlReturn_t (*get_clock)(nvmlDevice_t, int, unsigned int *);
  nvmlReturn_t (*get_util)(nvmlDevice_t, nvmlUtilization_t *);
  nvmlReturn_t (*get_reasons)(nvmlDevice_t, unsigned long long *);
  nvmlReturn_t (*get_memory_v2)(nvmlDevice_t, nvmlMemory_v2_t *);
  nvmlReturn_t (*get_memory)(nvmlDevice_t, nvmlMemory_t *);
  nvmlReturn_t (*gpm_support)(nvmlDevice_t, nvmlGpmSupport_t *);
  nvmlReturn_t (*gpm_alloc)(nvmlGpmSample_t *);
  nvmlReturn_t (*gpm_free)(nvmlGpmSample_t);
  nvmlReturn_t (*gpm_sample)(nvmlDevice_t, nvmlGpmSample_t);
  nvmlReturn_t (*gpm_metrics)(nvmlGpmMetricsGet_t *);
};

/* The one mapping of NVML return codes to errno values. */
static int nvml_errno(nvmlReturn_t r) {
  switch (r) {
  case NVML_SUCCESS: return 0;
  case NVML_ERROR_UNINITIALIZED: return -ENXIO;
  case NVML_ERROR_INVALID_ARGUMENT: return -EINVAL;
  case NVML_ERROR_NOT_SUPPORTED: return -EOPNOTSUPP;
  case NVML_ERROR_NO_PERMISSION: return -EPERM;
  case NVML_ERROR_ALREADY_INITIALIZED: return -EALREADY;
  case NVML_ERROR_NOT_FOUND: return -ENOENT;
  case NVML_ERROR_INSUFFICIENT_SIZE: return -ENOBUFS;
  case NVML_ERROR_INSUFFICIENT_POWER: return -EIO;
  case NVML_ERROR_DRIVER_NOT_LOADED: return -ENXIO;
  case NVML_ERROR_TIMEOUT: return -ETIMEDOUT;
  case NVML_ERROR_IRQ_ISSUE: return -EIO;
  case NVML_ERROR_LIBRARY_NOT_FOUND: return -ELIBACC;
  case NVML_ERROR_FUNCTION_NOT_FOUND: return -ENOSYS;
  case NVML_ERROR_CORRUPTED_INFOROM: return -EIO;
  case NVML_ERROR_GPU_IS_LOST: return -ENODEV;
  case NVML_ERROR_RESET_REQUIRED: return -EIO;
  case NVML_ERROR_OPERATING_SYSTEM: return -EIO;
  case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return -ELIBBAD;
  case NVML_ERROR_IN_USE: return -EBUSY;
  case NVML_ERROR_MEMORY: return -ENOMEM;
  case NVML_ERROR_NO_DATA: return -ENODATA;
  case NVML_ERROR_INSUFFICIENT_RESOURCES: return -ENOSPC;
  case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return -EPROTO;
  case NVML_ERROR_NOT_READY: return -EAGAIN;
  case NVML_ERROR_GPU_NOT_FOUND: return -ENODEV;
  default: return -PFLEX_E_NVML;
  }
}

/* Maps r and remembers NVML's own text for it. */
static int fail(struct nvml *n, const char *what, nvmlReturn_t r) {
  const char *s = n->error_string ? n->error_string(r) : NULL;
  snprintf(n->last_error, sizeof n->last_error, "%s: %s (NVML code %d)", what,
           s ? s : "unknown error", r);
  return nvml_errno(r);
}

struct sym {
  const char *names[3]; /* newest first */
  size_t offset;        /* of the function pointer in struct nvml */
  int required;
};

#define SYM(field, req, ...)                                                                       \
  { {__VA_ARGS__}, offsetof(struct nvml, field), req }
static const struct sym syms[] = {
    SYM(init, 1, "nvmlInit_v2", "nvmlInit"),
    SYM(shutdown, 1, "nvmlShutdown"),
    SYM(error_string, 0, "nvmlErrorString"),
    SYM(get_count, 1, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"),
    SYM(get_handle, 1, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"),
    SYM(get_name, 1, "nvmlDeviceGetName"),
    SYM(get_uuid, 1, "nvmlDeviceGetUUID"),
    SYM(get_pci, 0, "nvmlDeviceGetPciInfo_v3"),
    SYM(get_power, 1, "nvmlDeviceGetPowerUsage"),
    SYM(get_energy, 0, "nvmlDeviceGetTotalEnergyConsumption"),
    SYM(get_limit, 1, "nvmlDeviceGetPowerManagementLimit"),
    SYM(get_default_limit, 0, "nvmlDeviceGetPowerManagementDefaultLimit"),
    SYM(get_constraints, 1, "nvmlDeviceGetPowerManagementLimitConstraints"),
    SYM(get_enforced, 0, "nvmlDeviceGetEnforcedPowerLimit"),
    SYM(set_limit, 1, "nvmlDeviceSetPowerManagementLimit"),
    SYM(get_clock, 0, "nvmlDeviceGetClockInfo"),
    SYM(get_util, 0, "nvmlDeviceGetUtilizationRates"),
    SYM(get_reasons, 0, "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetCurrentClocksThrottleReasons"),
    SYM(get_memory_v2, 0, "nvmlDeviceGetMemoryInfo_v2"),
    SYM(get_memory, 0, "nvmlDeviceGetMemoryInfo"),
    SYM(gpm_support, 0, "nvmlGpmQueryDeviceSupport"),
    SYM(gpm_alloc, 0, "nvmlGpmSampleAlloc"),
    SYM(gpm_free, 0, "nvmlGpmSampleFree"),
    SYM(gpm_sample, 0, "nvmlGpmSampleGet"),
    SYM(gpm_metrics, 0, "nvmlGpmMetricsGet"),
};

/* The spec: [gpm=on|off,][lib=PATH], lib last (the rest of the spec,
 * commas included). */
static int parse_spec(const char *spec, const char **ret_path, bool *ret_gpm, char *errbuf,
                      size_t errlen) {
  *ret_path = "libnvidia-ml.so.1";
  *ret_gpm = false;
  if (!spec) return 0;
  const char *p = spec;
  if (strncmp(p, "gpm=", 4) == 0) {
    size_t len = strcspn(p + 4, ",");
    bool on = len == 2 && strncmp(p + 4, "on", 2) == 0;
    if (!on && !(len == 3 && strncmp(p + 4, "off", 3) == 0)) {
      snprintf(errbuf, errlen, "invalid nvml backend option '%.*s': expected gpm=on or gpm=off",
               (int)(len + 4), p);
      return -EINVAL;
    }
    *ret_gpm = on;
    p += 4 + len;
    if (*p == ',')
      p++;
    else
      return 0;
  }
  if (!*p && p == spec) return 0;
  if (strncmp(p, "lib=", 4) != 0 || !p[4]) {
    snprintf(errbuf, errlen, "invalid nvml backend option '%s': expected [gpm=on|off,][lib=PATH]",
             p);
    return -EINVAL;
  }
  *ret_path = p + 4;
  return 0;
}

static int nvml_open(const char *spec, void **ret_ctx, char *errbuf, size_t errlen) {
  const char *path;
  bool gpm;
  int perr = parse_spec(spec, &path, &gpm, errbuf, errlen);
  if (perr) return perr;
  struct nvml *n = calloc(1, sizeof *n);
  if (!n) return -ENOMEM;
  n->gpm = gpm;
  n->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!n->dl) {
    const char *e = dlerror();
    snprintf(errbuf, errlen,
             "cannot load NVML '%s': %s (is the NVIDIA driver installed?)",
             path, e ? e : "unknown reason");
    free(n);
    return -ELIBACC;
  }
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    void *f = NULL;
    for (size_t k = 0; k < 3 && syms[i].names[k] && !f; k++)
      f = dlsym(n->dl, syms[i].names[k]);
    if (!f && syms[i].required) {
      snprintf(errbuf, errlen, "NVML '%s' lacks the required function %s (driver too old?)", path,
               syms[i].names[0]);
      dlclose(n->dl);
      free(n);
      return -ELIBBAD;
    }
    /* POSIX guarantees that object and function pointers convert through dlsym. */
    memcpy((char *)n + syms[i].offset, &f, sizeof f);
  }
  nvmlReturn_t r = n->init();
  int err = 0;
  if (r != NVML_SUCCESS) {
    err = fail(n, "nvmlInit", r);
    goto fail;
  }
  r = n->get_count(&n->count);
  if (r != NVML_SUCCESS) {
    err = fail(n, "nvmlDeviceGetCount", r);
    n->shutdown();
    goto fail;
  }
  n->dev = calloc(n->count ? n->count : 1, sizeof *n->dev);
  if (n->gpm) {
    n->gpm_dev = calloc(n->count ? n->count : 1, sizeof *n->gpm_dev);
    n->mg = calloc(1, sizeof *n->mg);
  }
  if (!n->dev || (n->gpm && (!n->gpm_dev || !n->mg))) {
    free(n->dev);
    free(n->gpm_dev);
    free(n->mg);
    n->shutdown();
    err = -ENOMEM;
    snprintf(n->last_error, sizeof n->last_error, "out of memory");
    goto fail;
  }
  *ret_ctx = n;
  return 0;
fail:
  snprintf(errbuf, errlen, "%s", n->last_error);
  dlclose(n->dl);
  free(n);
  return err;
}

static void nvml_close(void *ctx) {
  struct nvml *n = ctx;
  if (!n) return;
  for (unsigned i = 0; n->gpm_dev && i < n->count; i++)
    for (int k = 0; k < 2; k++)
      if (n->gpm_dev[i].s[k].handle) n->gpm_free(n->gpm_dev[i].s[k]);
  free(n->gpm_dev);
  free(n->mg);
  n->shutdown();
  dlclose(n->dl);
  free(n->dev);
  free(n);
}

/* Handles are fetched lazily so that one lost GPU does not stop the others. */
static int handle(struct nvml *n, unsigned i, nvmlDevice_t *ret) {
  if (i >= n->count) {
    snprintf(n->last_error, sizeof n->last_error, "no GPU %u (NVML sees %u)", i, n->count);
    return -ENODEV;
  }
  if (!n->dev[i]) {
    nvmlReturn_t r = n->get_handle(i, &n->dev[i]);
    if (r != NVML_SUCCESS) {
      n->dev[i] = NULL;
      return fail(n, "nvmlDeviceGetHandleByIndex", r);
    }
  }
  *ret = n->dev[i];
  return 0;
}

static int nvml_count(void *ctx, unsigned *ret_n) {
  *ret_n = ((struct nvml *)ctx)->count;
  return 0;
}

static int nvml_info(void *ctx, unsigned i, struct pflex_gpu_info *info) {
  struct nvml *n = ctx;
  nvmlDevice_t d = NULL;
  int err = handle(n, i, &d);
  if (err) return err;
  nvmlReturn_t r = n->get_name(d, info->name, sizeof info->name);
  if (r != NVML_SUCCESS) return fail(n, "nvmlDeviceGetName", r);
  r = n->get_uuid(d, info->uuid, sizeof info->uuid);
  if (r != NVML_SUCCESS) return fail(n, "nvmlDeviceGetUUID", r);
  info->name[sizeof info->name - 1] = info->uuid[sizeof info->uuid - 1] = '\0';
  if (n->get_pci) {
    nvmlPciInfo_t pci;
    memset(&pci, 0, sizeof pci);
    r = n->get_pci(d, &pci);
    if (r == NVML_ERROR_GPU_IS_LOST) return fail(n, "nvmlDeviceGetPciInfo", r);
    if (r == NVML_SUCCESS) {
      pci.busId[sizeof pci.busId - 1] = '\0';
      snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "%s", pci.busId);
    }
  }
  return 0;
}

/* An optional reading: success sets the bit; not supported (or any other
 * failure but a lost GPU) leaves it clear; a lost GPU fails the whole read. */
#define OPTIONAL(fn, bit, what, ...)                                                               \
  do {                                                                                             \
    if (n->fn) {                                                                                   \
      nvmlReturn_t r_ = n->fn(d, __VA_ARGS__);                                                     \
      if (r_ == NVML_SUCCESS)                                                                      \
        out->valid |= (bit);                                                                       \
      else if (r_ == NVML_ERROR_GPU_IS_LOST || r_ == NVML_ERROR_UNINITIALIZED)                     \
        return fail(n, what, r_);                                                                  \
    }                                                                                              \
  } while (0)

static int nvml_now(void *ctx, double *ret_s);

/* Whether device i's profiling activities can be read: GPM's entry points,
 * the device's support (asked once) and two samples. */
static bool gpm_ready(struct nvml *n, unsigned i, nvmlDevice_t d) {
  struct gpm_dev *g = &n->gpm_dev[i];
  if (g->support == GPM_UNKNOWN) {
    nvmlGpmSupport_t sup = {.version = NVML_GPM_SUPPORT_VERSION};
    bool ok = n->gpm_support && n->gpm_alloc && n->gpm_free && n->gpm_sample && n->gpm_metrics &&
              n->gpm_support(d, &sup) == NVML_SUCCESS && sup.isSupportedDevice;
    for (int k = 0; ok && k < 2; k++)
      ok = n->gpm_alloc(&g->s[k]) == NVML_SUCCESS;
    if (!ok)
      for (int k = 0; k < 2; k++)
        if (g->s[k].handle) n->gpm_free(g->s[k]), g->s[k].handle = NULL;
    g->support = ok ? GPM_YES : GPM_NO;
  }
  return g->support == GPM_YES;
}

/* The profiling activities over the time since the previous read of the
 * device (the first read of a device has none). A failure leaves them
 * invalid and starts the pair afresh. */
static void gpm_read(struct nvml *n, unsigned i, nvmlDevice_t d, struct pflex_gpu_reading *out) {
  if (!gpm_ready(n, i, d)) return;
  struct gpm_dev *g = &n->gpm_dev[i];
  int next = g->have_cur ? 1 - g->cur : 0;
  if (n->gpm_sample(d, g->s[next]) != NVML_SUCCESS) {
    g->have_cur = false;
    return;
  }
  bool pair = g->have_cur; /* s[1 - next] holds the earlier sample */
  g->cur = next;
  g->have_cur = true;
  if (!pair) return;
  static const unsigned ids[] = {NVML_GPM_METRIC_SM_UTIL, NVML_GPM_METRIC_ANY_TENSOR_UTIL,
                                 NVML_GPM_METRIC_DRAM_BW_UTIL};
  nvmlGpmMetricsGet_t *mg = n->mg;
  memset(mg, 0, sizeof *mg);
  mg->version = NVML_GPM_METRICS_GET_VERSION;
  mg->numMetrics = 3;
  mg->sample1 = g->s[1 - g->cur];
  mg->sample2 = g->s[g->cur];
  for (unsigned k = 0; k < 3; k++)
    mg->metrics[k].metricId = ids[k];
  bool ok = n->gpm_metrics(mg) == NVML_SUCCESS;
  for (unsigned k = 0; ok && k < 3; k++)
    ok = mg->metrics[k].nvmlReturn == NVML_SUCCESS && mg->metrics[k].value >= 0 &&
         mg->metrics[k].value <= 100;
  if (!ok) return;
  out->valid |= PFLEX_GPU_PROF;
  out->sm_active = mg->metrics[0].value / 100.0;
  out->pipe_tensor_active = mg->metrics[1].value / 100.0;
  out->dram_active = mg->metrics[2].value / 100.0;
}

static int nvml_read(void *ctx, unsigned i, struct pflex_gpu_reading *out) {
  struct nvml *n = ctx;
  nvmlDevice_t d = NULL;
  int err = handle(n, i, &d);
  if (err) return err;
  nvml_now(ctx, &out->time_s);
  /* Power is the reading a sweep cannot do without: its failure is an error. */
  nvmlReturn_t r = n->get_power(d, &out->power_mw);
  if (r != NVML_SUCCESS) return fail(n, "nvmlDeviceGetPowerUsage", r);
  out->valid |= PFLEX_GPU_POWER;
  OPTIONAL(get_energy, PFLEX_GPU_ENERGY, "nvmlDeviceGetTotalEnergyConsumption", &out->energy_mj);
  OPTIONAL(get_limit, PFLEX_GPU_LIMIT, "nvmlDeviceGetPowerManagementLimit", &out->limit_mw);
  OPTIONAL(get_default_limit, PFLEX_GPU_DEFAULT_LIMIT, "nvmlDeviceGetPowerManagementDefaultLimit",
           &out->default_limit_mw);
  OPTIONAL(get_constraints, PFLEX_GPU_CONSTRAINTS, "nvmlDeviceGetPowerManagementLimitConstraints",
           &out->min_limit_mw, &out->max_limit_mw);
  OPTIONAL(get_enforced, PFLEX_GPU_ENFORCED, "nvmlDeviceGetEnforcedPowerLimit",
           &out->enforced_limit_mw);
  OPTIONAL(get_clock, PFLEX_GPU_SM_CLOCK, "nvmlDeviceGetClockInfo", NVML_CLOCK_SM,
           &out->sm_clock_mhz);
  OPTIONAL(get_clock, PFLEX_GPU_MEM_CLOCK, "nvmlDeviceGetClockInfo", NVML_CLOCK_MEM,
           &out->mem_clock_mhz);
  nvmlUtilization_t u;
  OPTIONAL(get_util, PFLEX_GPU_UTIL, "nvmlDeviceGetUtilizationRates", &u);
  if (out->valid & PFLEX_GPU_UTIL) {
    out->util_gpu_pct = u.gpu;
    out->util_mem_pct = u.memory;
  }
  OPTIONAL(get_reasons, PFLEX_GPU_THROTTLE, "nvmlDeviceGetCurrentClocksEventReasons",
           &out->throttle_reasons);
  nvmlMemory_v2_t m2;
  memset(&m2, 0, sizeof m2);
  m2.version = NVML_MEMORY_V2_VERSION;
  OPTIONAL(get_memory_v2, PFLEX_GPU_MEMORY, "nvmlDeviceGetMemoryInfo_v2", &m2);
  if (out->valid & PFLEX_GPU_MEMORY) {
    out->mem_used_bytes = m2.used;
    out->mem_total_bytes = m2.total;
  } else {
    nvmlMemory_t m;
    OPTIONAL(get_memory, PFLEX_GPU_MEMORY, "nvmlDeviceGetMemoryInfo", &m);
    if (out->valid & PFLEX_GPU_MEMORY) {
      out->mem_used_bytes = m.used;
      out->mem_total_bytes = m.total;
    }
  }
  if (n->gpm) gpm_read(n, i, d, out);
  return 0;
}

static int nvml_get_limit(void *ctx, unsigned i, unsigned *ret_mw) {
  struct nvml *n = ctx;
  nvmlDevice_t d = NULL;
  int err = handle(n, i, &d);
  if (err) return err;
  unsigned mw;
  nvmlReturn_t r = n->get_limit(d, &mw);
  if (r != NVML_SUCCESS) return fail(n, "nvmlDeviceGetPowerManagementLimit", r);
  *ret_mw = mw;
  return 0;
}

static int nvml_set_limit(void *ctx, unsigned i, unsigned mw) {
  struct nvml *n = ctx;
  nvmlDevice_t d = NULL;
  int err = handle(n, i, &d);
  if (err) return err;
  nvmlReturn_t r = n->set_limit(d, mw);
  if (r != NVML_SUCCESS) return fail(n, "nvmlDeviceSetPowerManagementLimit", r);
  return 0;
}

static int nvml_constraints(void *ctx, unsigned i, unsigned *ret_min, unsigned *ret_max,
                            unsigned *ret_default) {
  struct nvml *n = ctx;
  nvmlDevice_t d = NULL;
  int err = handle(n, i, &d);
  if (err) return err;
  unsigned lo, hi, def = 0;
  nvmlReturn_t r = n->get_constraints(d, &lo, &hi);
  if (r != NVML_SUCCESS) return fail(n, "nvmlDeviceGetPowerManagementLimitConstraints", r);
  if (ret_default) {
    if (!n->get_default_limit) {
      snprintf(n->last_error, sizeof n->last_error,
               "nvmlDeviceGetPowerManagementDefaultLimit is not available");
      return -EOPNOTSUPP;
    }
    r = n->get_default_limit(d, &def);
    if (r != NVML_SUCCESS) return fail(n, "nvmlDeviceGetPowerManagementDefaultLimit", r);
    *ret_default = def;
  }
  *ret_min = lo;
  *ret_max = hi;
  return 0;
}

static int nvml_now(void *ctx, double *ret_s) {
  (void)ctx;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  *ret_s = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
  return 0;
}

static int nvml_sleep(void *ctx, double s) {
  (void)ctx;
  if (s <= 0) return 0;
  struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
  /* An interrupted sleep returns early: the caller rechecks its clock and signals. */
  if (nanosleep(&ts, NULL) != 0) return -errno;
  return 0;
}

static const char *nvml_last_error(void *ctx) {
  struct nvml *n = ctx;
  return n->last_error[0] ? n->last_error : NULL;
}

const struct pflex_gpu_ops pflex__gpu_nvml_ops = {
    .name = "nvml",
    .summary = "NVIDIA GPUs through NVML (libnvidia-ml.so.1, loaded at run time)",
    .open = nvml_open,
    .close = nvml_close,
    .count = nvml_count,
    .info = nvml_info,
    .read = nvml_read,
    .get_limit = nvml_get_limit,
    .set_limit = nvml_set_limit,
    .constraints = nvml_constraints,
    .now = nvml_now,
    .sleep = nvml_sleep,
    .last_error = nvml_last_error,
};
