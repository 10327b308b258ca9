/* Helpers shared by the GPU commands (see gpu_cli.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/gpu_cli.h"
#include "cli/util.h"

int cli_gpu_open(const char *backend, const char *spec, const char *nvml_opts,
                 struct pflex_gpu **ret_gpu) {
  const char *env = getenv("PFLEX_GPU_BACKEND");
  if (!backend || !*backend) backend = env && *env ? env : "nvml";
  /* The nvml backend: nvml_opts (gpm=on), then its library from env
   * PFLEX_NVML_LIB (lib= is the last option); spec is the sim's. */
  char nvml_spec[4200];
  if (strcmp(backend, "nvml") == 0) {
    const char *lib = getenv("PFLEX_NVML_LIB");
    bool opts = nvml_opts && *nvml_opts, has_lib = lib && *lib;
    snprintf(nvml_spec, sizeof nvml_spec, "%s%s%s%s", opts ? nvml_opts : "",
             opts && has_lib ? "," : "", has_lib ? "lib=" : "", has_lib ? lib : "");
    spec = nvml_spec;
  }
  char msg[512];
  int err = pflex_gpu_open(backend, spec, ret_gpu, msg, sizeof msg);
  /* The library names the file; the program names its own ways around it. */
  const char *hint = err == -ELIBACC ? "; PFLEX_NVML_LIB=FILE loads another library, "
                                       "--backend sim simulates GPUs"
                                     : "";
  if (err) cli_error("cannot open GPU backend: %s%s", msg[0] ? msg : pflex_strerror(err), hint);
  return err;
}

const char *cli_state_dir(const char *state_dir) {
  const char *env = getenv("PFLEX_STATE_DIR");
  if (state_dir && *state_dir) return state_dir;
  return env && *env ? env : NULL;
}

void cli_restore_opts(const char *state_dir, struct pflex_restore_opts *o) {
  pflex_restore_opts_init(o);
  o->state_dir = cli_state_dir(state_dir);
  const char *t = getenv("PFLEX_LOCK_TIMEOUT_S");
  if (t && *t) {
    char *end;
    double v = strtod(t, &end);
    if (!*end && v >= 0 && v <= 86400) o->lock_timeout_s = v;
    else cli_warn("ignoring PFLEX_LOCK_TIMEOUT_S='%s': expected seconds, 0-86400", t);
  }
}

int cli_restore_open(struct pflex_gpu *gpu, const char *state_dir, bool hold,
                     struct pflex_restore **ret) {
  struct pflex_restore_opts o;
  cli_restore_opts(state_dir, &o);
  o.hold = hold;
  char why[512] = "";
  int err;
  if (strcmp(pflex_gpu_backend_name(gpu), "sim") == 0 && !o.state_dir)
    err = pflex_restore_open_memory(ret);
  else
    err = pflex_restore_open_opts(&o, ret, why, sizeof why);
  if (err) {
    const char *dir = o.state_dir ? o.state_dir : PFLEX_RESTORE_DEFAULT_DIR;
    if (why[0])
      cli_error("refusing the restore state directory '%s': %s", dir, why);
    else
      cli_error("cannot open the restore state directory '%s': %s%s", dir, pflex_strerror(err),
                err == -EACCES || err == -EPERM || err == -EROFS
                    ? " (pflex must record original limits before changing them: run as root, "
                      "or pass --state-dir / PFLEX_STATE_DIR)"
                    : "");
  }
  return err;
}

void cli_gpu_error(struct pflex_gpu *gpu, const char *what, unsigned index, int err) {
  const char *detail = gpu ? pflex_gpu_last_error(gpu) : NULL;
  const char *hint = "";
  switch (-err) {
  case EPERM:
  case EACCES: hint = "; changing power limits needs root or CAP_SYS_ADMIN (try sudo)"; break;
  case ENODEV:
    hint = "; the GPU is lost or gone (fallen off the bus?): check 'nvidia-smi' and dmesg; "
           "a reset or reboot may be needed";
    break;
  case EOPNOTSUPP: hint = "; this GPU or driver does not support it"; break;
  case ENXIO: hint = "; NVML is not initialised or the driver is not loaded"; break;
  default:
    if (err == -PFLEX_E_RESTORE) hint = "; nothing was changed";
    break;
  }
  if (detail)
    cli_error("%s GPU %u: %s (%s)%s", what, index, pflex_strerror(err), detail, hint);
  else
    cli_error("%s GPU %u: %s%s", what, index, pflex_strerror(err), hint);
}

int cli_gpu_list_check(const char *arg, void *field) {
  unsigned *idx = NULL;
  size_t n = 0;
  if (pflex_gpu_parse_indexes(arg, &idx, &n) != 0) return -EINVAL;
  free(idx);
  *(const char **)field = arg;
  return 0;
}

int cli_gpu_select(struct pflex_gpu *gpu, const char *list, unsigned **ret_idx, size_t *ret_n) {
  unsigned count;
  int err = pflex_gpu_count(gpu, &count);
  if (err) {
    cli_error("cannot count GPUs: %s", pflex_strerror(err));
    return err;
  }
  unsigned *idx;
  size_t n;
  if (!list) {
    idx = malloc((count ? count : 1) * sizeof *idx);
    if (!idx) return -ENOMEM;
    for (unsigned i = 0; i < count; i++)
      idx[i] = i;
    n = count;
  } else {
    err = pflex_gpu_parse_indexes(list, &idx, &n);
    if (err) {
      cli_error("invalid GPU list '%s': expected indexes such as 0,1 or 0-7", list);
      return err;
    }
    for (size_t i = 0; i < n; i++)
      if (idx[i] >= count) {
        cli_error("no GPU %u: the %s backend has %u GPU%s (0-%u)", idx[i],
                  pflex_gpu_backend_name(gpu), count, count == 1 ? "" : "s", count ? count - 1 : 0);
        free(idx);
        return -ENODEV;
      }
  }
  if (n == 0) {
    cli_error("no GPUs found by the %s backend", pflex_gpu_backend_name(gpu));
    free(idx);
    return -ENODEV;
  }
  *ret_idx = idx;
  *ret_n = n;
  return 0;
}
