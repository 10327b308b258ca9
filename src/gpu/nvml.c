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

/* ---- The loaded library. ---- */
struct nvml {
  void *dl;
  unsigned count;
  nvmlDevice_t *dev;
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
};

static int nvml_open(const char *spec, void **ret_ctx, char *errbuf, size_t errlen) {
  /* The one option: lib=PATH (the rest of the spec, commas included). */
  const char *path = "libnvidia-ml.so.1";
  if (spec && *spec) {
    if (strncmp(spec, "lib=", 4) != 0 || !spec[4]) {
      snprintf(errbuf, errlen, "invalid nvml backend option '%s': expected lib=PATH", spec);
      return -EINVAL;
    }
    path = spec + 4;
  }
  struct nvml *n = calloc(1, sizeof *n);
  if (!n) return -ENOMEM;
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
  if (!n->dev) {
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
