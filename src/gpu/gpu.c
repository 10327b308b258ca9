/* The GPU backend registry and the wrappers every caller goes through
 * (include/pflex/gpu.h). Backends are listed in one explicit static table. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/backends.h"
#include "pflex/gpu.h"

static const struct pflex_gpu_ops *const backends[] = {
    &pflex__gpu_nvml_ops,
    &pflex__gpu_sim_ops,
};
#define NBACKENDS (sizeof backends / sizeof backends[0])

const struct pflex_gpu_ops *const *pflex_gpu_backends(size_t *ret_n) {
  *ret_n = NBACKENDS;
  return backends;
}

const struct pflex_gpu_ops *pflex_gpu_backend_find(const char *name) {
  for (size_t i = 0; i < NBACKENDS; i++)
    if (strcmp(backends[i]->name, name) == 0) return backends[i];
  return NULL;
}

int pflex_gpu_open(const char *backend, const char *spec, struct pflex_gpu **ret_gpu, char *errbuf,
                   size_t errlen) {
  if (errlen) errbuf[0] = '\0';
  if (!backend || !*backend) backend = "nvml";
  const struct pflex_gpu_ops *ops = pflex_gpu_backend_find(backend);
  if (!ops) {
    snprintf(errbuf, errlen, "unknown GPU backend '%s' (known: nvml, sim)", backend);
    return -ENOENT;
  }
  struct pflex_gpu *gpu = calloc(1, sizeof *gpu);
  if (!gpu) return -ENOMEM;
  int err = ops->open(spec, &gpu->ctx, errbuf, errlen);
  if (err) {
    free(gpu);
    return err;
  }
  gpu->ops = ops;
  *ret_gpu = gpu;
  return 0;
}

void pflex_gpu_close(struct pflex_gpu *gpu) {
  if (!gpu) return;
  if (gpu->ops && gpu->ops->close) gpu->ops->close(gpu->ctx);
  free(gpu);
}

const char *pflex_gpu_backend_name(const struct pflex_gpu *gpu) {
  return gpu->ops->name;
}

#define CALL(fn, ...) (gpu->ops->fn ? gpu->ops->fn(gpu->ctx, __VA_ARGS__) : -EOPNOTSUPP)

int pflex_gpu_count(struct pflex_gpu *gpu, unsigned *ret_n) {
  return CALL(count, ret_n);
}

int pflex_gpu_info(struct pflex_gpu *gpu, unsigned index, struct pflex_gpu_info *ret_info) {
  struct pflex_gpu_info info;
  memset(&info, 0, sizeof info);
  int err = CALL(info, index, &info);
  if (!err) *ret_info = info;
  return err;
}

int pflex_gpu_read(struct pflex_gpu *gpu, unsigned index, struct pflex_gpu_reading *ret_reading) {
  struct pflex_gpu_reading r;
  memset(&r, 0, sizeof r);
  int err = CALL(read, index, &r);
  if (!err) *ret_reading = r;
  return err;
}

int pflex_gpu_get_limit(struct pflex_gpu *gpu, unsigned index, unsigned *ret_mw) {
  return CALL(get_limit, index, ret_mw);
}

int pflex_gpu_constraints(struct pflex_gpu *gpu, unsigned index, unsigned *ret_min_mw,
                          unsigned *ret_max_mw, unsigned *ret_default_mw) {
  return CALL(constraints, index, ret_min_mw, ret_max_mw, ret_default_mw);
}

int pflex_gpu_now(struct pflex_gpu *gpu, double *ret_s) {
  return CALL(now, ret_s);
}

int pflex_gpu_sleep(struct pflex_gpu *gpu, double s) {
  return CALL(sleep, s);
}

bool pflex_gpu_virtual_clock(struct pflex_gpu *gpu) {
  return gpu->ops->virtual_clock ? gpu->ops->virtual_clock(gpu->ctx) : false;
}

int pflex_gpu_job_start(struct pflex_gpu *gpu) {
  return gpu->ops->job_start ? gpu->ops->job_start(gpu->ctx) : -EOPNOTSUPP;
}

const char *pflex_gpu_last_error(struct pflex_gpu *gpu) {
  return gpu->ops->last_error ? gpu->ops->last_error(gpu->ctx) : NULL;
}

int pflex__gpu_set_limit_unrecorded(struct pflex_gpu *gpu, unsigned index, unsigned mw) {
  return CALL(set_limit, index, mw);
}

static int cmp_unsigned(const void *a, const void *b) {
  unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
  return (x > y) - (x < y);
}

static int parse_uint(const char *s, const char *end, unsigned *ret) {
  if (s == end) return -EINVAL;
  unsigned long v = 0;
  for (const char *p = s; p < end; p++) {
    if (*p < '0' || *p > '9') return -EINVAL;
    v = v * 10 + (unsigned long)(*p - '0');
    if (v > 1023) return -EINVAL;
  }
  *ret = (unsigned)v;
  return 0;
}

int pflex_gpu_parse_indexes(const char *s, unsigned **ret_idx, size_t *ret_n) {
  unsigned *v = NULL;
  size_t n = 0;
  const char *p = s;
  if (!*s) return -EINVAL;
  while (*p) {
    const char *comma = strchr(p, ',');
    const char *end = comma ? comma : p + strlen(p);
    const char *dash = memchr(p, '-', (size_t)(end - p));
    unsigned a, b;
    int err = parse_uint(p, dash ? dash : end, &a);
    if (!err) err = dash ? parse_uint(dash + 1, end, &b) : (b = a, 0);
    if (!err && b < a) err = -EINVAL;
    if (err) {
      free(v);
      return err;
    }
    unsigned *nv = realloc(v, (n + (b - a) + 1) * sizeof *nv);
    if (!nv) {
      free(v);
      return -ENOMEM;
    }
    v = nv;
    for (unsigned i = a; i <= b; i++)
      v[n++] = i;
    p = comma ? comma + 1 : end;
    if (comma && !*p) {
      free(v);
      return -EINVAL;
    }
  }
  qsort(v, n, sizeof *v, cmp_unsigned);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (k == 0 || v[k - 1] != v[i]) v[k++] = v[i];
  *ret_idx = v;
  *ret_n = k;
  return 0;
}

enum pflex_limit_fit pflex_gpu_limit_fit(unsigned mw, unsigned min_mw, unsigned max_mw,
                                         unsigned *ret_clamped) {
  if (mw < min_mw) {
    *ret_clamped = min_mw;
    return PFLEX_LIMIT_BELOW;
  }
  if (mw > max_mw) {
    *ret_clamped = max_mw;
    return PFLEX_LIMIT_ABOVE;
  }
  *ret_clamped = mw;
  return PFLEX_LIMIT_INSIDE;
}

void pflex_gpu_throttle_names(unsigned long long reasons, char *buf, size_t size) {
  /* Bit values of nvmlClocksEventReason* in nvml.h. */
  static const struct {
    unsigned long long bit;
    const char *name;
  } names[] = {
      {0x1ULL, "gpu_idle"},    {0x2ULL, "app_clocks"},      {0x4ULL, "sw_power_cap"},
      {0x8ULL, "hw_slowdown"}, {0x10ULL, "sync_boost"},     {0x20ULL, "sw_thermal"},
      {0x40ULL, "hw_thermal"}, {0x80ULL, "hw_power_brake"}, {0x100ULL, "display_clocks"},
  };
  size_t off = 0;
  if (size) buf[0] = '\0';
  if (!reasons) {
    snprintf(buf, size, "none");
    return;
  }
  unsigned long long rest = reasons;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (!(reasons & names[i].bit)) continue;
    rest &= ~names[i].bit;
    int w = snprintf(buf + off, off < size ? size - off : 0, "%s%s", off ? "," : "", names[i].name);
    if (w > 0) off += (size_t)w;
  }
  if (rest) snprintf(buf + off, off < size ? size - off : 0, "%s0x%llx", off ? "," : "", rest);
}
