/* A fake libnvidia-ml.so.1 for tests: the NVML C ABI of the entry points
 * pflex uses, backed by a text state file named by env FAKE_NVML_STATE.
 *
 * The state file holds one `key=value` per line (`#` starts a comment):
 *
 *   gpu0.name=NVIDIA H200          gpu0.uuid=GPU-...        gpu0.pci=00000000:18:00.0
 *   gpu0.power_mw=650000           gpu0.energy_mj=1000000
 *   gpu0.limit_mw=700000           gpu0.default_mw=700000
 *   gpu0.min_mw=200000             gpu0.max_mw=700000       gpu0.enforced_mw=... (default: limit)
 *   gpu0.sm_mhz=1980  gpu0.mem_mhz=3201  gpu0.util_gpu=97  gpu0.util_mem=60
 *   gpu0.throttle=0   gpu0.mem_used=...  gpu0.mem_total=...
 *
 * The fake keeps the parsed state in memory and reads the file again only when
 * it changed (see "state file" below): a call costs about what a driver call
 * does, and an edit a test makes from the shell is seen on the next call.
 *
 * A GPU exists when its `uuid` key does; the count is the highest such index + 1.
 * Reported power is min(power_mw, limit_mw), so a cap shows in the readings.
 *
 * Error injection (values: no_permission, not_supported, gpu_lost,
 * invalid_argument, uninitialized, unknown):
 *   fail.init=E                 nvmlInit fails
 *   gpuN.fail=E                 every call on GPU N fails
 *   gpuN.fail.CALL=E            one call fails; CALL is one of handle, name, uuid, pci,
 *                               power, energy, limit, default_limit, constraints,
 *                               enforced, clock, util, reasons, memory, set_limit, gpm
 *   gpuN.lost_after=K           after K calls on GPU N (counted per process), every
 *                               call on it returns GPU_IS_LOST
 *
 * nvmlDeviceSetPowerManagementLimit checks the range like the driver
 * (INVALID_ARGUMENT outside [min, max]), then writes gpuN.limit_mw back to the
 * state file (atomically, under flock) and increments gpuN.set_count.
 *   gpuN.set_delay_ms=MS        each set call on GPU N takes MS milliseconds (a slow
 *                               driver; lets a test run two pflex processes into each other)
 *   gpuN.signal_on_set=SIG      after a successful set on GPU N the fake raises signal
 *                               SIG (a number) in the calling process: a SIGTERM that
 *                               arrives in the middle of a multi-GPU change
 *
 * Restore-before-change check: when env FAKE_NVML_RESTORE_CHECK names a file,
 * every set call first reads it and requires the GPU's UUID to appear in it;
 * otherwise the call fails, prints "fake-nvml: VIOLATION ..." to stderr and
 * records gpuN.violation=1 in the state file, so a test can prove that no
 * limit changed before its restore record was on disk.
 *
 * GPM (the profiling metrics of Hopper and newer): a GPU with gpuN.gpm_dram
 * supports it; gpuN.gpm_sm, gpuN.gpm_tensor and gpuN.gpm_dram are its SM,
 * tensor and DRAM bandwidth utilization in percent (fractions allowed).
 * nvmlGpmSampleGet records the state's values and the time; nvmlGpmMetricsGet
 * gives the mean of its two samples' values, and refuses (INVALID_ARGUMENT)
 * samples of two GPUs, a sample never taken, or a sample2 not later than
 * sample1, as the driver does; other metric ids answer NOT_SUPPORTED in
 * their slot. CALL gpm injects a failure into GPM's device calls.
 *
 * Only the older name nvmlDeviceGetCurrentClocksThrottleReasons is exported
 * (not ...ClocksEventReasons), to exercise the loader's fallback. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

#define EXPORT __attribute__((visibility("default")))

enum {
  OK = 0,
  E_UNINITIALIZED = 1,
  E_INVALID_ARGUMENT = 2,
  E_NOT_SUPPORTED = 3,
  E_NO_PERMISSION = 4,
  E_INSUFFICIENT_SIZE = 7,
  E_GPU_IS_LOST = 15,
  E_UNKNOWN = 999,
};

typedef struct {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;
typedef struct {
  unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
  unsigned int version;
  unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

#define MAXGPU 64
struct nvmlDevice_st {
  unsigned index;
};
static struct nvmlDevice_st devices[MAXGPU];
static unsigned calls[MAXGPU];
static int initialized;

/* ---- state file ----
 * The parsed state lives in memory, like a driver's; every call first checks
 * (one stat) whether the file changed, so a test's shell edits are seen on the
 * next call. "Changed" is a different inode, size, mtime or ctime (in ns); a
 * file whose ctime is within RACY_NS of when it was read is read again on
 * every call until it is older (git's racy-clean rule: the kernel's file
 * clock is coarse, so a same-size rewrite within one tick would otherwise
 * keep its old identity). Calls are serialised by one mutex. */
#define MAXKEYS 1024
#define RACY_NS 100000000LL /* 100 ms, well above the coarse clock's tick */
struct state {
  char *buf;                         /* the file's text, keys and values cut in place */
  char *key[MAXKEYS], *val[MAXKEYS]; /* key: after "gpuN." for GPU keys */
  int gpu[MAXKEYS];                  /* N for "gpuN.field" keys, -1 otherwise */
  int prev[MAXKEYS];                 /* the entry before this one of the same GPU, or -1 */
  int last[MAXGPU];                  /* each GPU's last entry, or -1: lookups walk one GPU */
  size_t n;
  unsigned count; /* highest index with a uuid + 1 */
  int valid;      /* buf holds the file as identified by st */
  struct stat st;
};
static struct state cache;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *state_path(void) {
  const char *p = getenv("FAKE_NVML_STATE");
  return p && *p ? p : NULL;
}

static int same_time(struct timespec a, struct timespec b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static int same_file(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
         same_time(a->st_mtim, b->st_mtim) && same_time(a->st_ctim, b->st_ctim);
}

/* Cuts one line ("key=value", leading blanks, '#' comments) into entry n. */
static int parse_line(struct state *s, char *p) {
  p[strcspn(p, "\r")] = '\0';
  while (*p == ' ' || *p == '\t')
    p++;
  if (!*p || *p == '#') return 0;
  char *eq = strchr(p, '=');
  if (!eq) return 0;
  *eq = '\0';
  char *dot = NULL;
  unsigned long g = 0;
  if (strncmp(p, "gpu", 3) == 0 && p[3] >= '0' && p[3] <= '9') g = strtoul(p + 3, &dot, 10);
  /* only the spelling the lookups used to build: "gpu%u." (so not "gpu01.") */
  int is_gpu = dot && *dot == '.' && g < MAXGPU && (p[3] != '0' || dot == p + 4);
  s->gpu[s->n] = is_gpu ? (int)g : -1;
  s->key[s->n] = is_gpu ? dot + 1 : p;
  s->val[s->n] = eq + 1;
  if (is_gpu && strcmp(dot + 1, "uuid") == 0 && g + 1 > s->count) s->count = (unsigned)g + 1;
  s->prev[s->n] = is_gpu ? s->last[g] : -1;
  if (is_gpu) s->last[g] = (int)s->n;
  s->n++;
  return 0;
}

static int state_read(struct state *s, const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  char *buf = NULL;
  ssize_t got = 0;
  if (fstat(fd, &st) == 0 && (buf = malloc((size_t)st.st_size + 1)))
    while (got < st.st_size) {
      ssize_t r = read(fd, buf + got, (size_t)(st.st_size - got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += r;
    }
  close(fd);
  if (!buf) return -1;
  buf[got] = '\0';
  free(s->buf);
  *s = (struct state){.buf = buf, .st = st};
  for (unsigned g = 0; g < MAXGPU; g++)
    s->last[g] = -1;
  for (char *line = buf, *next; line && s->n < MAXKEYS; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = '\0';
    parse_line(s, line);
  }
  /* Racy: changed so recently that a same-size rewrite could keep this identity. */
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  long long age = (now.tv_sec - st.st_ctim.tv_sec) * 1000000000LL + (now.tv_nsec - st.st_ctim.tv_nsec);
  s->valid = age > RACY_NS;
  return 0;
}

/* Brings the cache up to date with the file; call with cache_lock held. */
static int state_refresh(void) {
  const char *path = state_path();
  struct stat st;
  if (!path || stat(path, &st) != 0) {
    cache.valid = 0;
    return -1;
  }
  if (cache.valid && same_file(&st, &cache.st)) return 0;
  return state_read(&cache, path);
}

/* The cache goes with the library (dlclose, exit), so valgrind sees no leak. */
__attribute__((destructor)) static void state_drop(void) {
  free(cache.buf);
  cache = (struct state){0};
}

static const char *state_get(const char *key) {
  for (size_t i = cache.n; i-- > 0;)
    if (cache.gpu[i] < 0 && strcmp(cache.key[i], key) == 0) return cache.val[i];
  return NULL;
}

static const char *gpu_get(unsigned g, const char *field) {
  for (int i = g < MAXGPU && cache.n ? cache.last[g] : -1; i >= 0; i = cache.prev[i])
    if (strcmp(cache.key[i], field) == 0) return cache.val[i];
  return NULL;
}

static unsigned long long gpu_num(unsigned i, const char *field, unsigned long long dflt) {
  const char *v = gpu_get(i, field);
  return v ? strtoull(v, NULL, 10) : dflt;
}

static unsigned gpu_count(void) { return cache.count; }

static nvmlReturn_t parse_err(const char *v) {
  if (!v || !*v || strcmp(v, "none") == 0) return OK;
  if (strcmp(v, "no_permission") == 0) return E_NO_PERMISSION;
  if (strcmp(v, "not_supported") == 0) return E_NOT_SUPPORTED;
  if (strcmp(v, "gpu_lost") == 0) return E_GPU_IS_LOST;
  if (strcmp(v, "invalid_argument") == 0) return E_INVALID_ARGUMENT;
  if (strcmp(v, "uninitialized") == 0) return E_UNINITIALIZED;
  return E_UNKNOWN;
}

/* Rewrites the state file with key=value replaced or appended. */
static int state_update(const char *key, const char *value) {
  const char *path = state_path();
  if (!path) return -1;
  int lock = open(path, O_RDONLY);
  if (lock < 0) return -1;
  flock(lock, LOCK_EX);
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.fake-tmp.%d", path, (int)getpid());
  FILE *in = fopen(path, "r"), *out = fopen(tmp, "w");
  int found = 0;
  if (in && out) {
    char line[1024];
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, in)) {
      if (strncmp(line, key, klen) == 0 && line[klen] == '=') {
        fprintf(out, "%s=%s\n", key, value);
        found = 1;
      } else {
        fputs(line, out);
        if (!strchr(line, '\n')) fputc('\n', out);
      }
    }
    if (!found) fprintf(out, "%s=%s\n", key, value);
  }
  int rc = -1;
  if (in) fclose(in);
  if (out) {
    if (fflush(out) == 0 && fsync(fileno(out)) == 0) rc = 0;
    fclose(out);
  }
  if (rc == 0) rc = rename(tmp, path);
  if (rc) unlink(tmp);
  flock(lock, LOCK_UN);
  close(lock);
  pthread_mutex_lock(&cache_lock); /* the new file has a new inode anyway; be explicit */
  cache.valid = 0;
  pthread_mutex_unlock(&cache_lock);
  return rc;
}

/* One counted call on GPU i (the state current, cache_lock held): its index,
 * lost_after and injected failures. */
static nvmlReturn_t check(unsigned i, const char *call) {
  nvmlReturn_t r = OK;
  if (i >= gpu_count()) r = E_INVALID_ARGUMENT;
  unsigned long long lost_after = gpu_num(i, "lost_after", 0);
  calls[i]++;
  if (!r && gpu_get(i, "lost_after") && calls[i] > lost_after) r = E_GPU_IS_LOST;
  if (!r) r = parse_err(gpu_get(i, "fail"));
  if (!r) {
    char f[64];
    snprintf(f, sizeof f, "fail.%s", call);
    r = parse_err(gpu_get(i, f));
  }
  return r;
}

/* Common prologue of every per-GPU call: initialised, valid handle, injected
 * failures. On OK it returns with the state current and cache_lock held: the
 * caller reads what it needs (an entry point that used to make two lookups
 * calls check() again, so lost_after counts as it always did) and calls end(). */
static nvmlReturn_t begin(nvmlDevice_t d, const char *call, unsigned *ret_i) {
  if (!initialized) return E_UNINITIALIZED;
  if (!d || d < devices || d >= devices + MAXGPU) return E_INVALID_ARGUMENT;
  unsigned i = d->index;
  pthread_mutex_lock(&cache_lock);
  nvmlReturn_t r = state_refresh() != 0 ? E_UNKNOWN : check(i, call);
  if (r) {
    pthread_mutex_unlock(&cache_lock);
    return r;
  }
  *ret_i = i;
  return OK;
}

static void end(void) { pthread_mutex_unlock(&cache_lock); }

EXPORT nvmlReturn_t nvmlInit_v2(void) {
  pthread_mutex_lock(&cache_lock);
  nvmlReturn_t r = E_UNKNOWN; /* no state file: like a driver that is not loaded */
  if (state_refresh() == 0) r = parse_err(state_get("fail.init"));
  pthread_mutex_unlock(&cache_lock);
  if (r) return r;
  for (unsigned i = 0; i < MAXGPU; i++)
    devices[i].index = i;
  initialized++;
  return OK;
}

EXPORT nvmlReturn_t nvmlShutdown(void) {
  if (!initialized) return E_UNINITIALIZED;
  initialized--;
  return OK;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
  case OK: return "Success";
  case E_UNINITIALIZED: return "Uninitialized";
  case E_INVALID_ARGUMENT: return "Invalid Argument";
  case E_NOT_SUPPORTED: return "Not Supported";
  case E_NO_PERMISSION: return "Insufficient Permissions";
  case E_GPU_IS_LOST: return "GPU is lost";
  default: return "Unknown Error";
  }
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) {
  if (!initialized) return E_UNINITIALIZED;
  if (!n) return E_INVALID_ARGUMENT;
  pthread_mutex_lock(&cache_lock);
  int rc = state_refresh();
  if (rc == 0) *n = gpu_count();
  pthread_mutex_unlock(&cache_lock);
  return rc == 0 ? OK : E_UNKNOWN;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) {
  if (!initialized) return E_UNINITIALIZED;
  if (!d || i >= MAXGPU) return E_INVALID_ARGUMENT;
  unsigned idx;
  nvmlReturn_t r = begin(&devices[i], "handle", &idx);
  if (r) return r;
  end();
  *d = &devices[i];
  return OK;
}

static nvmlReturn_t get_string(nvmlDevice_t d, const char *call, const char *field, char *buf,
                               unsigned len) {
  unsigned i;
  if (!buf) return E_INVALID_ARGUMENT;
  nvmlReturn_t r = begin(d, call, &i);
  if (r) return r;
  const char *v = gpu_get(i, field);
  if (!v) v = "";
  if (strlen(v) + 1 > len)
    r = E_INSUFFICIENT_SIZE;
  else
    memcpy(buf, v, strlen(v) + 1);
  end();
  return r;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int len) {
  return get_string(d, "name", "name", name, len);
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int len) {
  return get_string(d, "uuid", "uuid", uuid, len);
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *pci) {
  if (!pci) return E_INVALID_ARGUMENT;
  memset(pci, 0, sizeof *pci);
  return get_string(d, "pci", "pci", pci->busId, sizeof pci->busId);
}

/* One unsigned field of GPU i (cache_lock held), optionally transformed. */
static nvmlReturn_t num_locked(unsigned i, const char *field, unsigned long long *ret) {
  if (!gpu_get(i, field)) return E_NOT_SUPPORTED;
  unsigned long long v = gpu_num(i, field, 0);
  if (strcmp(field, "power_mw") == 0) {
    unsigned long long lim = gpu_num(i, "limit_mw", v);
    if (v > lim) v = lim;
  }
  *ret = v;
  return OK;
}

/* One or two fields of a call (two: counted as two calls, as it always was). */
static nvmlReturn_t get_nums(nvmlDevice_t d, const char *call, const char *field,
                             unsigned long long *ret, const char *field2,
                             unsigned long long *ret2) {
  unsigned i;
  if (!ret) return E_INVALID_ARGUMENT;
  nvmlReturn_t r = begin(d, call, &i);
  if (r) return r;
  r = num_locked(i, field, ret);
  if (!r && field2) r = check(i, call);
  if (!r && field2) r = num_locked(i, field2, ret2);
  end();
  return r;
}

static nvmlReturn_t get_num(nvmlDevice_t d, const char *call, const char *field,
                            unsigned long long *ret) {
  return get_nums(d, call, field, ret, NULL, NULL);
}

#define GET_UINT(fn, call, field)                                                                  \
  EXPORT nvmlReturn_t fn(nvmlDevice_t d, unsigned int *out) {                                      \
    unsigned long long v;                                                                          \
    if (!out) return E_INVALID_ARGUMENT;                                                           \
    nvmlReturn_t r = get_num(d, call, field, &v);                                                  \
    if (!r) *out = (unsigned)v;                                                                    \
    return r;                                                                                      \
  }

GET_UINT(nvmlDeviceGetPowerUsage, "power", "power_mw")
GET_UINT(nvmlDeviceGetPowerManagementLimit, "limit", "limit_mw")
GET_UINT(nvmlDeviceGetPowerManagementDefaultLimit, "default_limit", "default_mw")

EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *out) {
  unsigned long long v;
  unsigned i;
  if (!out) return E_INVALID_ARGUMENT;
  /* enforced follows the limit unless the state pins it (an out-of-band limit). */
  nvmlReturn_t r = begin(d, "enforced", &i);
  if (r) return r;
  r = num_locked(i, "limit_mw", &v);
  if (!r && check(i, "enforced") == OK && gpu_get(i, "enforced_mw")) {
    unsigned long long e = gpu_num(i, "enforced_mw", v);
    if (e < v) v = e;
  }
  end();
  if (!r) *out = (unsigned)v;
  return r;
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *e) {
  return get_num(d, "energy", "energy_mj", e);
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t d, unsigned int *lo,
                                                                 unsigned int *hi) {
  unsigned i;
  if (!lo || !hi) return E_INVALID_ARGUMENT;
  nvmlReturn_t r = begin(d, "constraints", &i);
  if (r) return r;
  if (!gpu_get(i, "min_mw") || !gpu_get(i, "max_mw"))
    r = E_NOT_SUPPORTED;
  else {
    *lo = (unsigned)gpu_num(i, "min_mw", 0);
    *hi = (unsigned)gpu_num(i, "max_mw", 0);
  }
  end();
  return r;
}

EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *clock) {
  unsigned long long v;
  if (!clock) return E_INVALID_ARGUMENT;
  const char *field = type == 1 ? "sm_mhz" : type == 2 ? "mem_mhz" : NULL;
  if (!field) return E_INVALID_ARGUMENT;
  nvmlReturn_t r = get_num(d, "clock", field, &v);
  if (!r) *clock = (unsigned)v;
  return r;
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
  unsigned long long g, m;
  if (!u) return E_INVALID_ARGUMENT;
  nvmlReturn_t r = get_nums(d, "util", "util_gpu", &g, "util_mem", &m);
  if (!r) u->gpu = (unsigned)g, u->memory = (unsigned)m;
  return r;
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d,
                                                              unsigned long long *reasons) {
  return get_num(d, "reasons", "throttle", reasons);
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m) {
  unsigned long long used, total;
  if (!m) return E_INVALID_ARGUMENT;
  if (m->version != ((unsigned)sizeof(nvmlMemory_v2_t) | (2u << 24)))
    return 25; /* VERSION_MISMATCH */
  nvmlReturn_t r = get_nums(d, "memory", "mem_used", &used, "mem_total", &total);
  if (!r) {
    m->used = used;
    m->total = total;
    m->reserved = 0;
    m->free = total > used ? total - used : 0;
  }
  return r;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m) {
  nvmlMemory_v2_t m2 = {.version = (unsigned)sizeof(nvmlMemory_v2_t) | (2u << 24)};
  if (!m) return E_INVALID_ARGUMENT;
  nvmlReturn_t r = nvmlDeviceGetMemoryInfo_v2(d, &m2);
  if (!r) m->total = m2.total, m->used = m2.used, m->free = m2.free;
  return r;
}

/* ---- GPM ---- */
struct nvmlGpmSample_st {
  unsigned gpu;
  int taken;
  struct timespec t;
  double v[3]; /* sm, tensor, dram: percent */
};
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
typedef struct {
  unsigned int version;
  unsigned int numMetrics;
  nvmlGpmSample_t sample1, sample2;
  nvmlGpmMetric_t metrics[98];
} nvmlGpmMetricsGet_t;
typedef struct {
  unsigned int version;
  unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

static double gpu_real(unsigned i, const char *field) {
  const char *v = gpu_get(i, field);
  return v ? strtod(v, NULL) : 0;
}

EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t d, nvmlGpmSupport_t *sup) {
  unsigned i;
  if (!sup) return E_INVALID_ARGUMENT;
  if (sup->version != 1) return 25; /* ARGUMENT_VERSION_MISMATCH */
  nvmlReturn_t r = begin(d, "gpm", &i);
  if (r) return r;
  sup->isSupportedDevice = gpu_get(i, "gpm_dram") != NULL;
  end();
  return OK;
}

EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *s) {
  if (!initialized) return E_UNINITIALIZED;
  if (!s) return E_INVALID_ARGUMENT;
  s->handle = calloc(1, sizeof *s->handle);
  return s->handle ? OK : 20; /* NVML_ERROR_MEMORY */
}

EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s) {
  if (!s.handle) return E_INVALID_ARGUMENT;
  free(s.handle);
  return OK;
}

EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t d, nvmlGpmSample_t s) {
  unsigned i;
  if (!s.handle) return E_INVALID_ARGUMENT;
  nvmlReturn_t r = begin(d, "gpm", &i);
  if (r) return r;
  if (!gpu_get(i, "gpm_dram")) {
    end();
    return E_NOT_SUPPORTED;
  }
  s.handle->gpu = i;
  s.handle->taken = 1;
  clock_gettime(CLOCK_MONOTONIC, &s.handle->t);
  s.handle->v[0] = gpu_real(i, "gpm_sm");
  s.handle->v[1] = gpu_real(i, "gpm_tensor");
  s.handle->v[2] = gpu_real(i, "gpm_dram");
  end();
  return OK;
}

static int later(struct timespec a, struct timespec b) {
  return b.tv_sec > a.tv_sec || (b.tv_sec == a.tv_sec && b.tv_nsec > a.tv_nsec);
}

EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *m) {
  if (!initialized) return E_UNINITIALIZED;
  if (!m) return E_INVALID_ARGUMENT;
  if (m->version != 1) return 25;
  const struct nvmlGpmSample_st *a = m->sample1.handle, *b = m->sample2.handle;
  if (m->numMetrics > 98 || !a || !b || !a->taken || !b->taken || a->gpu != b->gpu ||
      !later(a->t, b->t))
    return E_INVALID_ARGUMENT;
  for (unsigned k = 0; k < m->numMetrics; k++) {
    unsigned id = m->metrics[k].metricId;
    int slot = id == 2 ? 0 : id == 5 ? 1 : id == 10 ? 2 : -1;
    m->metrics[k].nvmlReturn = slot < 0 ? E_NOT_SUPPORTED : OK;
    m->metrics[k].value = slot < 0 ? 0 : (a->v[slot] + b->v[slot]) / 2;
  }
  return OK;
}

/* True when the restore file (if one is being checked) lists this UUID. */
static int restore_recorded(const char *uuid) {
  const char *path = getenv("FAKE_NVML_RESTORE_CHECK");
  if (!path || !*path) return 1;
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  char quoted[128];
  snprintf(quoted, sizeof quoted, "\"%s\"", uuid);
  return strstr(buf, quoted) != NULL;
}

EXPORT nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t d, unsigned int mw) {
  unsigned i;
  nvmlReturn_t r = begin(d, "set_limit", &i);
  if (r) return r;
  unsigned long long lo = gpu_num(i, "min_mw", 0), hi = gpu_num(i, "max_mw", ~0ULL);
  const char *uuid = gpu_get(i, "uuid");
  char key[64], val[64];
  if (mw < lo || mw > hi) {
    end();
    return E_INVALID_ARGUMENT;
  }
  if (!restore_recorded(uuid ? uuid : "")) {
    fprintf(stderr,
            "fake-nvml: VIOLATION: set_limit on GPU %u (%s) to %u mW without a restore "
            "record in '%s'\n",
            i, uuid ? uuid : "?", mw, getenv("FAKE_NVML_RESTORE_CHECK"));
    snprintf(key, sizeof key, "gpu%u.violation", i);
    end();
    state_update(key, "1");
    return E_UNKNOWN;
  }
  unsigned long long count = gpu_num(i, "set_count", 0) + 1;
  unsigned long long delay_ms = gpu_num(i, "set_delay_ms", 0);
  int signo = (int)gpu_num(i, "signal_on_set", 0);
  end();
  if (delay_ms)
    nanosleep(&(struct timespec){.tv_sec = (time_t)(delay_ms / 1000),
                                 .tv_nsec = (long)(delay_ms % 1000) * 1000000L},
              NULL);
  snprintf(key, sizeof key, "gpu%u.limit_mw", i);
  snprintf(val, sizeof val, "%u", mw);
  if (state_update(key, val) != 0) return E_UNKNOWN;
  snprintf(key, sizeof key, "gpu%u.set_count", i);
  snprintf(val, sizeof val, "%llu", count);
  state_update(key, val);
  if (signo > 0) raise(signo);
  return OK;
}
