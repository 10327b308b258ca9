/* `pflex cap set|get|restore`: per-GPU power limits, changed only after the
 * original limit is recorded durably, and brought back with one command. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/commands.h"
#include "cli/gpu_cli.h"
#include "cli/util.h"

static const char usage[] =
    "pflex cap set --watts W [--gpus LIST] [--clamp] [--dry-run] [options]\n"
    "       pflex cap get [--gpus LIST] [--json] [options]\n"
    "       pflex cap restore [--gpus LIST] [--force] [options]\n"
    "  set              set the power limit of each selected GPU to W watts; the original limit\n"
    "                   is written durably to the restore file first\n"
    "  get              show limits, enforced limits, defaults, ranges and recorded originals\n"
    "  restore          bring every recorded GPU (or those in --gpus) back to its original limit\n"
    "  --watts W        the new per-GPU limit in watts (set)\n"
    "  --gpus LIST      GPU indexes such as 0,1 or 0-7 (default: all)\n"
    "  --clamp          a limit outside a GPU's range is set to the nearest end of the range\n"
    "                   (default: refuse, and change nothing)\n"
    "  --dry-run        say what would change, change nothing (set)\n"
    "  --force          restore also GPUs whose limit someone else changed after pflex set it\n"
    "                   (default: leave those as they are and keep their records) (restore)\n"
    "  --json           machine-readable output (get)\n"
    "  --backend NAME   nvml (default; env PFLEX_GPU_BACKEND) or sim\n"
    "  --sim-job SPEC   sim backend: GPUs and job to simulate (docs/gpu.md)\n"
    "  --state-dir DIR  where restore.json lives (env PFLEX_STATE_DIR; default /var/lib/pflex)\n"
    "Setting limits needs root or CAP_SYS_ADMIN. Limits do not survive a reboot or driver\n"
    "reload; run 'pflex cap restore' after one to clear the records.";

struct opts {
  const char *backend, *spec, *state_dir, *gpus;
  double watts;
  int have_watts, clamp, dry_run, json, force;
};

static int parse(int argc, char **argv, struct opts *o) {
  static const struct option lopts[] = {
      {"backend", required_argument, NULL, 'b'},   {"sim-job", required_argument, NULL, 's'},
      {"state-dir", required_argument, NULL, 'd'}, {"gpus", required_argument, NULL, 'g'},
      {"watts", required_argument, NULL, 'w'},     {"clamp", no_argument, NULL, 'c'},
      {"dry-run", no_argument, NULL, 'n'},         {"json", no_argument, NULL, 'j'},
      {"force", no_argument, NULL, 'f'},           {NULL, 0, NULL, 0}};
  memset(o, 0, sizeof *o);
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
    switch (c) {
    case 'b': o->backend = optarg; break;
    case 's': o->spec = optarg; break;
    case 'd': o->state_dir = optarg; break;
    case 'g': o->gpus = optarg; break;
    case 'w': {
      char *end;
      o->watts = strtod(optarg, &end);
      if (*end || !isfinite(o->watts) || o->watts <= 0 || o->watts > 100000) {
        cli_error("invalid --watts '%s': expected a positive number of watts", optarg);
        return -EINVAL;
      }
      o->have_watts = 1;
      break;
    }
    case 'c': o->clamp = 1; break;
    case 'n': o->dry_run = 1; break;
    case 'j': o->json = 1; break;
    case 'f': o->force = 1; break;
    default: return -EINVAL;
    }
  }
  if (optind < argc) {
    cli_error("unexpected argument '%s'", argv[optind]);
    return -EINVAL;
  }
  return 0;
}

static int cap_set(struct pflex_gpu *gpu, const struct opts *o) {
  if (!o->have_watts) {
    cli_error("'cap set' needs --watts");
    return PFLEX_EXIT_USAGE;
  }
  unsigned *idx;
  size_t n;
  if (cli_gpu_select(gpu, o->gpus, &idx, &n)) return PFLEX_EXIT_FAIL;
  unsigned req = (unsigned)lround(o->watts * 1000.0);
  unsigned *target = calloc(n, sizeof *target), *old = calloc(n, sizeof *old);
  int status = PFLEX_EXIT_OK, refused = 0;
  if (!target || !old) {
    cli_error("out of memory");
    status = PFLEX_EXIT_FAIL;
    goto out;
  }
  /* Check every GPU first: a refused request changes nothing anywhere. */
  for (size_t k = 0; k < n; k++) {
    unsigned i = idx[k], lo, hi;
    int err = pflex_gpu_constraints(gpu, i, &lo, &hi, NULL);
    if (!err) err = pflex_gpu_get_limit(gpu, i, &old[k]);
    if (err) {
      cli_gpu_error(gpu, "cannot read the power limit range of", i, err);
      status = PFLEX_EXIT_FAIL;
      goto out;
    }
    enum pflex_limit_fit fit = pflex_gpu_limit_fit(req, lo, hi, &target[k]);
    if (fit == PFLEX_LIMIT_INSIDE) continue;
    if (o->clamp) {
      printf("GPU %u: %.1f W is %s the settable range %.1f-%.1f W: clamped to %.1f W (--clamp)\n",
             i, req / 1000.0, fit == PFLEX_LIMIT_BELOW ? "below" : "above", lo / 1000.0,
             hi / 1000.0, target[k] / 1000.0);
    } else {
      cli_error("GPU %u: %.1f W is outside its settable range %.1f-%.1f W; refused, nothing "
                "changed (--clamp sets the nearest limit in range instead)",
                i, req / 1000.0, lo / 1000.0, hi / 1000.0);
      refused = 1;
    }
  }
  if (refused) {
    status = PFLEX_EXIT_FAIL;
    goto out;
  }
  if (o->dry_run) {
    for (size_t k = 0; k < n; k++)
      printf("GPU %u: power limit %.1f W -> %.1f W (dry run: not changed)\n", idx[k],
             old[k] / 1000.0, target[k] / 1000.0);
    goto out;
  }
  struct pflex_restore *rs;
  if (cli_restore_open(gpu, o->state_dir, &rs)) {
    status = PFLEX_EXIT_FAIL;
    goto out;
  }
  /* All or nothing: when one GPU cannot be set (GPU 3 of 0-7 fails after 0-2
   * were changed), the GPUs changed by this command go back to the limits they
   * had before it, so the node is never left half at the new limit. */
  size_t done = 0;
  for (size_t k = 0; k < n; k++) {
    /* Recording first (and separately) tells a failed record from a failed set. */
    int err = pflex_restore_record(rs, gpu, idx[k]);
    if (err) {
      cli_error("GPU %u: cannot record its original limit in '%s': %s; limit not changed%s", idx[k],
                pflex_restore_path(rs), pflex_strerror(err),
                err == -EACCES || err == -EPERM || err == -EROFS
                    ? " (changing limits needs root or CAP_SYS_ADMIN, and a writable state "
                      "directory: --state-dir)"
                    : "");
      status = PFLEX_EXIT_FAIL;
      break;
    }
    err = pflex_restore_set_limit(rs, gpu, idx[k], target[k]);
    if (err) {
      cli_gpu_error(gpu, "cannot set the power limit of", idx[k], err);
      status = PFLEX_EXIT_FAIL;
      break;
    }
    printf("GPU %u: power limit %.1f W -> %.1f W\n", idx[k], old[k] / 1000.0, target[k] / 1000.0);
    done++;
  }
  if (status != PFLEX_EXIT_OK) {
    int left = 0;
    for (size_t k = 0; k < done; k++) {
      int err = pflex_restore_set_limit(rs, gpu, idx[k], old[k]);
      if (err) {
        cli_gpu_error(gpu, "cannot roll back the power limit of", idx[k], err);
        left = 1;
      } else {
        printf("GPU %u: rolled back to %.1f W\n", idx[k], old[k] / 1000.0);
      }
    }
    if (left)
      fprintf(stderr, "some GPUs keep the new limit: 'pflex cap restore' brings them back to "
                      "their recorded originals\n");
    else if (done)
      fprintf(stderr, "GPU %u failed: no limit was changed (GPUs set before it were rolled back)\n",
              idx[done]);
  } else if (pflex_restore_path(rs)[0]) {
    printf("original limits recorded in '%s'; 'pflex cap restore' brings them back\n",
           pflex_restore_path(rs));
  }
  pflex_restore_free(rs);
out:
  free(idx);
  free(target);
  free(old);
  return status;
}

static const struct pflex_restore_record *find_rec(const struct pflex_restore_record *v, size_t n,
                                                   const char *backend, const char *uuid) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(v[i].backend, backend) == 0 && strcmp(v[i].uuid, uuid) == 0) return &v[i];
  return NULL;
}

static int cap_get(struct pflex_gpu *gpu, const struct opts *o) {
  unsigned *idx;
  size_t n;
  if (cli_gpu_select(gpu, o->gpus, &idx, &n)) return PFLEX_EXIT_FAIL;
  /* Recorded originals are shown when the state directory can be read. */
  struct pflex_restore *rs = NULL;
  struct pflex_restore_record *recs = NULL;
  size_t nrecs = 0;
  const char *env = getenv("PFLEX_STATE_DIR");
  /* Reading must not create the default directory: look only if it is there. */
  bool have_dir = o->state_dir || (env && *env) ||
                  access(PFLEX_RESTORE_DEFAULT_DIR "/" PFLEX_RESTORE_FILE, R_OK) == 0;
  if (have_dir && pflex_restore_open(o->state_dir, &rs) == 0)
    if (pflex_restore_list(rs, &recs, &nrecs) != 0) recs = NULL, nrecs = 0;
  json_t *arr = o->json ? json_array() : NULL;
  int status = PFLEX_EXIT_OK;
  if (!o->json)
    printf("%-3s %-40s %8s %9s %8s %-11s %s\n", "idx", "uuid", "limit_W", "enforced", "default",
           "range_W", "original_W");
  for (size_t k = 0; k < n; k++) {
    struct pflex_gpu_info info;
    struct pflex_gpu_reading r;
    int err = pflex_gpu_info(gpu, idx[k], &info);
    if (!err) err = pflex_gpu_read(gpu, idx[k], &r);
    if (err) {
      cli_gpu_error(gpu, "cannot read", idx[k], err);
      status = PFLEX_EXIT_FAIL;
      continue;
    }
    const struct pflex_restore_record *rec =
        find_rec(recs, nrecs, pflex_gpu_backend_name(gpu), info.uuid);
    if (o->json) {
      json_t *obj = json_object();
      json_object_set_new(obj, "index", json_integer(idx[k]));
      json_object_set_new(obj, "uuid", json_string(info.uuid));
      if (r.valid & PFLEX_GPU_LIMIT)
        json_object_set_new(obj, "limit_w", json_real(r.limit_mw / 1e3));
      if (r.valid & PFLEX_GPU_ENFORCED)
        json_object_set_new(obj, "enforced_limit_w", json_real(r.enforced_limit_mw / 1e3));
      if (r.valid & PFLEX_GPU_DEFAULT_LIMIT)
        json_object_set_new(obj, "default_limit_w", json_real(r.default_limit_mw / 1e3));
      if (r.valid & PFLEX_GPU_CONSTRAINTS) {
        json_object_set_new(obj, "min_limit_w", json_real(r.min_limit_mw / 1e3));
        json_object_set_new(obj, "max_limit_w", json_real(r.max_limit_mw / 1e3));
      }
      if (rec) json_object_set_new(obj, "original_limit_w", json_real(rec->original_mw / 1e3));
      json_array_append_new(arr, obj);
      continue;
    }
    char l[16] = "-", e[16] = "-", d[16] = "-", range[32] = "-", orig[16] = "-";
    if (r.valid & PFLEX_GPU_LIMIT) snprintf(l, sizeof l, "%.1f", r.limit_mw / 1e3);
    if (r.valid & PFLEX_GPU_ENFORCED) snprintf(e, sizeof e, "%.1f", r.enforced_limit_mw / 1e3);
    if (r.valid & PFLEX_GPU_DEFAULT_LIMIT) snprintf(d, sizeof d, "%.1f", r.default_limit_mw / 1e3);
    if (r.valid & PFLEX_GPU_CONSTRAINTS)
      snprintf(range, sizeof range, "%.0f-%.0f", r.min_limit_mw / 1e3, r.max_limit_mw / 1e3);
    if (rec) snprintf(orig, sizeof orig, "%.1f", rec->original_mw / 1e3);
    printf("%-3u %-40s %8s %9s %8s %-11s %s\n", idx[k], info.uuid, l, e, d, range, orig);
  }
  if (o->json && cli_print_json(arr, JSON_PRESERVE_ORDER)) status = PFLEX_EXIT_FAIL;
  free(recs);
  pflex_restore_free(rs);
  free(idx);
  return status;
}

static int cap_restore(struct pflex_gpu *gpu, const struct opts *o) {
  unsigned *idx = NULL;
  size_t n = 0;
  if (o->gpus && cli_gpu_select(gpu, o->gpus, &idx, &n)) return PFLEX_EXIT_FAIL;
  struct pflex_restore *rs;
  if (cli_restore_open(gpu, o->state_dir, &rs)) {
    free(idx);
    return PFLEX_EXIT_FAIL;
  }
  struct pflex_restore_result *res = NULL;
  size_t nres = 0;
  int err = pflex_restore_apply(rs, gpu, idx, n, o->force ? PFLEX_RESTORE_FORCE : 0, &res, &nres);
  int status = PFLEX_EXIT_OK;
  if (err && !res) {
    cli_error("cannot read the restore records in '%s': %s", pflex_restore_path(rs),
              pflex_strerror(err));
    status = PFLEX_EXIT_FAIL;
  }
  for (size_t i = 0; i < nres; i++) {
    const struct pflex_restore_result *x = &res[i];
    if (!x->err) {
      printf("GPU %u (%s): power limit %.1f W -> %.1f W (original), record cleared\n", x->index,
             x->record.uuid, x->was_mw / 1e3, x->record.original_mw / 1e3);
    } else if (x->changed) {
      cli_error("GPU %u (%s): its limit is %.1f W, neither the original %.1f W nor the %.1f W "
                "pflex set: someone changed it since; left as it is, record kept ('pflex cap "
                "restore --force' sets %.1f W anyway)",
                x->index, x->record.uuid, x->was_mw / 1e3, x->record.original_mw / 1e3,
                x->record.set_mw / 1e3, x->record.original_mw / 1e3);
      status = PFLEX_EXIT_FAIL;
    } else if (!x->found && x->err == -ENODEV) {
      cli_error("GPU %s (index %u when recorded) is not present; its record (original %.1f W) is "
                "kept",
                x->record.uuid, x->record.index, x->record.original_mw / 1e3);
      status = PFLEX_EXIT_FAIL;
    } else {
      cli_gpu_error(gpu, "cannot restore the power limit of", x->found ? x->index : x->record.index,
                    x->err);
      fprintf(stderr, "  its record (original %.1f W) is kept in '%s'\n",
              x->record.original_mw / 1e3, pflex_restore_path(rs));
      status = PFLEX_EXIT_FAIL;
    }
  }
  if (err && res && status == PFLEX_EXIT_OK) {
    cli_error("cannot update '%s': %s", pflex_restore_path(rs), pflex_strerror(err));
    status = PFLEX_EXIT_FAIL;
  }
  if (nres == 0 && status == PFLEX_EXIT_OK) printf("nothing to restore\n");
  free(res);
  pflex_restore_free(rs);
  free(idx);
  return status;
}

static int run(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s\n", usage);
    return PFLEX_EXIT_USAGE;
  }
  const char *sub = argv[1];
  struct opts o;
  if (parse(argc - 1, argv + 1, &o)) {
    fprintf(stderr, "usage: %s\n", usage);
    return PFLEX_EXIT_USAGE;
  }
  int (*fn)(struct pflex_gpu *, const struct opts *) = strcmp(sub, "set") == 0       ? cap_set
                                                       : strcmp(sub, "get") == 0     ? cap_get
                                                       : strcmp(sub, "restore") == 0 ? cap_restore
                                                                                     : NULL;
  if (!fn) {
    cli_error("unknown 'cap' subcommand '%s' (set, get, restore)", sub);
    return PFLEX_EXIT_USAGE;
  }
  /* Usage errors before opening the backend, so they are not hidden behind a
   * missing driver. */
  if (fn == cap_set && !o.have_watts) {
    cli_error("'cap set' needs --watts");
    fprintf(stderr, "usage: %s\n", usage);
    return PFLEX_EXIT_USAGE;
  }
  if (fn != cap_set && (o.have_watts || o.clamp || o.dry_run)) {
    cli_error("--watts, --clamp and --dry-run belong to 'cap set'");
    return PFLEX_EXIT_USAGE;
  }
  if (fn != cap_restore && o.force) {
    cli_error("--force belongs to 'cap restore'");
    return PFLEX_EXIT_USAGE;
  }
  struct pflex_gpu *gpu;
  int oerr = cli_gpu_open(o.backend, o.spec, &gpu);
  if (oerr) return oerr == -ENOENT ? PFLEX_EXIT_USAGE : PFLEX_EXIT_FAIL;
  int status = fn(gpu, &o);
  pflex_gpu_close(gpu);
  return status;
}

const struct pflex_cmd pflex_cmd_cap = {
    .name = "cap", .run = run, .summary = "set, show and restore GPU power limits", .usage = usage};
