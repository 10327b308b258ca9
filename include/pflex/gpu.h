/* GPU access through interchangeable backends (docs/gpu.md).
 *
 * A backend is a table of functions (struct pflex_gpu_ops): `nvml` talks to
 * the NVIDIA driver through libnvidia-ml.so.1 loaded at run time, `sim`
 * simulates GPUs of the twin running a training job. Programs open a backend
 * by name with pflex_gpu_open() and use the wrappers below, so the same code
 * path serves real and simulated GPUs.
 *
 * Readings carry a validity bitset: a value whose bit is clear was not
 * available (unsupported by the device or the driver) and must not be used;
 * no reading is ever signalled by a sentinel number.
 *
 * Changing power limits goes through pflex_restore_apply_limits()
 * (pflex/restore.h), which records the original limits durably first. */
#ifndef PFLEX_GPU_H
#define PFLEX_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bits of pflex_gpu_reading.valid. */
enum pflex_gpu_field {
  PFLEX_GPU_POWER = 1u << 0,         /* power_mw */
  PFLEX_GPU_ENERGY = 1u << 1,        /* energy_mj */
  PFLEX_GPU_LIMIT = 1u << 2,         /* limit_mw */
  PFLEX_GPU_DEFAULT_LIMIT = 1u << 3, /* default_limit_mw */
  PFLEX_GPU_CONSTRAINTS = 1u << 4,   /* min_limit_mw, max_limit_mw */
  PFLEX_GPU_ENFORCED = 1u << 5,      /* enforced_limit_mw */
  PFLEX_GPU_SM_CLOCK = 1u << 6,      /* sm_clock_mhz */
  PFLEX_GPU_MEM_CLOCK = 1u << 7,     /* mem_clock_mhz */
  PFLEX_GPU_UTIL = 1u << 8,          /* util_gpu_pct, util_mem_pct */
  PFLEX_GPU_THROTTLE = 1u << 9,      /* throttle_reasons */
  PFLEX_GPU_MEMORY = 1u << 10,       /* mem_used_bytes, mem_total_bytes */
  PFLEX_GPU_TPUT = 1u << 11,         /* tput: the simulated job's throughput (sim only) */
  PFLEX_GPU_PROF = 1u << 12,         /* sm_active, pipe_tensor_active, dram_active */
};

/* Identity of one GPU. Strings are NUL-terminated, empty when unknown. */
struct pflex_gpu_info {
  char name[96];
  char uuid[96];
  char pci_bus_id[32];
};

/* One sample of one GPU. Only fields whose bit is set in `valid` hold data. */
struct pflex_gpu_reading {
  unsigned valid;               /* enum pflex_gpu_field bits */
  double time_s;                /* backend clock (pflex_gpu_now) when sampled */
  unsigned power_mw;            /* board power, mW (NVML: about a 1 s average) */
  unsigned long long energy_mj; /* energy since driver load, mJ */
  unsigned limit_mw;            /* power management limit, mW */
  unsigned default_limit_mw;
  unsigned min_limit_mw, max_limit_mw; /* settable range, mW */
  unsigned enforced_limit_mw;          /* includes out-of-band limits */
  unsigned sm_clock_mhz, mem_clock_mhz;
  unsigned util_gpu_pct, util_mem_pct;
  unsigned long long throttle_reasons; /* NVML clocks-event reason bits */
  unsigned long long mem_used_bytes, mem_total_bytes;
  double tput; /* job throughput (sim backend), job unit per second */
  /* Profiling activities, fractions 0-1 of the sample period: DCGM's
   * DCGM_FI_PROF_SM_ACTIVE, _PIPE_TENSOR_ACTIVE and _DRAM_ACTIVE. The sim
   * backend models them (the twin); the nvml backend reads them with NVML's
   * GPM (Hopper and newer) when its spec says gpm=on, from a GPU's second
   * read on. */
  double sm_active, pipe_tensor_active, dram_active;
};

/* A backend. Every function returns 0 or a negative errno; `ctx` is what open
 * returned. Functions a backend lacks are NULL and the wrappers return
 * -EOPNOTSUPP. Indexes run from 0 to count-1. */
struct pflex_gpu_ops {
  const char *name;
  const char *summary; /* one line for listings */
  /* spec: backend-specific options (sim: job spec), may be NULL. On failure,
   * errbuf receives a one-line reason. */
  int (*open)(const char *spec, void **ret_ctx, char *errbuf, size_t errlen);
  void (*close)(void *ctx);
  int (*count)(void *ctx, unsigned *ret_n);
  int (*info)(void *ctx, unsigned index, struct pflex_gpu_info *ret_info);
  int (*read)(void *ctx, unsigned index, struct pflex_gpu_reading *ret_reading);
  int (*get_limit)(void *ctx, unsigned index, unsigned *ret_mw);
  int (*set_limit)(void *ctx, unsigned index, unsigned mw);
  int (*constraints)(void *ctx, unsigned index, unsigned *ret_min_mw, unsigned *ret_max_mw,
                     unsigned *ret_default_mw);
  /* Clock in seconds (monotonic; virtual for a simulated clock). */
  int (*now)(void *ctx, double *ret_s);
  /* Waits s seconds, or advances a virtual clock by s. */
  int (*sleep)(void *ctx, double s);
  /* True when now/sleep run on a virtual clock (sleep returns at once). */
  bool (*virtual_clock)(void *ctx);
  /* Tells a simulated backend that the job was (re)started on the GPUs. */
  int (*job_start)(void *ctx);
  /* Backend-specific text of the last error, or NULL. */
  const char *(*last_error)(void *ctx);
};

/* An open backend. */
struct pflex_gpu {
  const struct pflex_gpu_ops *ops;
  void *ctx;
};

/* The registered backends, in order; *ret_n receives their number. */
const struct pflex_gpu_ops *const *pflex_gpu_backends(size_t *ret_n);

/* The backend named `name`, or NULL. */
const struct pflex_gpu_ops *pflex_gpu_backend_find(const char *name);

/* Opens backend `backend` (NULL or "": "nvml") with its spec (nvml:
 * "lib=PATH" names the library, default libnvidia-ml.so.1; sim: the job, see
 * docs/gpu.md). The library reads no environment: programs pass what they
 * take from PFLEX_GPU_BACKEND and PFLEX_NVML_LIB. On failure returns -ENOENT
 * for an unknown backend, -ELIBACC when the NVML library cannot be loaded (the
 * program may add how its user names another one), or the backend's error,
 * and writes a one-line reason into errbuf. Free with pflex_gpu_close. */
int pflex_gpu_open(const char *backend, const char *spec, struct pflex_gpu **ret_gpu, char *errbuf,
                   size_t errlen);

/* Closes and frees; accepts NULL. */
void pflex_gpu_close(struct pflex_gpu *gpu);

/* Name of the open backend. */
const char *pflex_gpu_backend_name(const struct pflex_gpu *gpu);

/* Number of GPUs the backend sees; indexes run from 0 to *ret_n - 1. */
int pflex_gpu_count(struct pflex_gpu *gpu, unsigned *ret_n);
/* Name, UUID and PCI bus id of GPU `index` (-ENODEV for a lost or missing GPU). */
int pflex_gpu_info(struct pflex_gpu *gpu, unsigned index, struct pflex_gpu_info *ret_info);
/* Reads everything the backend offers; fields it cannot give are left invalid. */
int pflex_gpu_read(struct pflex_gpu *gpu, unsigned index, struct pflex_gpu_reading *ret_reading);
/* The power limit now in effect on GPU `index`, in mW. */
int pflex_gpu_get_limit(struct pflex_gpu *gpu, unsigned index, unsigned *ret_mw);
/* The settable limit range of GPU `index` and (ret_default_mw non-NULL) its default, in mW. */
int pflex_gpu_constraints(struct pflex_gpu *gpu, unsigned index, unsigned *ret_min_mw,
                          unsigned *ret_max_mw, unsigned *ret_default_mw);
/* The backend's monotonic clock in seconds (virtual on a simulated clock). */
int pflex_gpu_now(struct pflex_gpu *gpu, double *ret_s);
/* Waits s seconds, or advances a virtual clock by s; may return early on a signal. */
int pflex_gpu_sleep(struct pflex_gpu *gpu, double s);
/* True when the backend's clock is virtual (a simulation running faster than real time). */
bool pflex_gpu_virtual_clock(struct pflex_gpu *gpu);
/* -EOPNOTSUPP on backends without a simulated job (nvml). */
int pflex_gpu_job_start(struct pflex_gpu *gpu);
/* The backend's own text for its last error (e.g. NVML's), or NULL. */
const char *pflex_gpu_last_error(struct pflex_gpu *gpu);

/* Parses a GPU index list such as "0-3,6" into a sorted set without duplicates
 * (freed by the caller). -EINVAL on malformed input or an index above 1023. */
int pflex_gpu_parse_indexes(const char *s, unsigned **ret_idx, size_t *ret_n);

/* Clamp decision for a requested limit against [min, max]. */
enum pflex_limit_fit { PFLEX_LIMIT_INSIDE = 0, PFLEX_LIMIT_BELOW, PFLEX_LIMIT_ABOVE };

/* Where `mw` lies relative to [min_mw, max_mw]; *ret_clamped receives the nearest value inside. */
enum pflex_limit_fit pflex_gpu_limit_fit(unsigned mw, unsigned min_mw, unsigned max_mw,
                                         unsigned *ret_clamped);

/* Names the throttle (clocks-event) reason bits set in `reasons` as a
 * comma-separated list into buf ("none" when 0). */
void pflex_gpu_throttle_names(unsigned long long reasons, char *buf, size_t size);

#endif
