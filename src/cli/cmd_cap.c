/* `pflex cap set|get|restore`: per-GPU power limits, changed only after the
 * original limit is recorded durably, and brought back with one command. */
#include <errno.h>
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
#include "pflex/caps_plan.h"

/* The options every subcommand takes. */
struct common {
  const char *gpus, *backend, *spec, *state_dir;
};

struct opts {
  struct common c;
  double watts;
  const char *from, *node;
  bool clamp, dry_run, json, force;
};

static const struct cli_option common_options[] = {
    {CLI_CUSTOM("gpus", "LIST", struct common, gpus, cli_gpu_list_check, CLI_GPU_LIST_EXPECT,
                "GPU indexes such as 0,1 or 0-7 (default: all)")},
    {CLI_STRING("backend", "NAME", struct common, backend,
                "nvml (default; env PFLEX_GPU_BACKEND) or sim")},
    {CLI_STRING("sim-job", "SPEC", struct common, spec,
                "sim backend: GPUs and job to simulate (docs/gpu.md)")},
    {CLI_STRING("state-dir", "DIR", struct common, state_dir,
                "where restore.json lives (env PFLEX_STATE_DIR; default /var/lib/pflex); "
                "refused when another user owns it or may write it")},
    {CLI_END}};

static const struct cli_option set_options[] = {
    {CLI_DOUBLE("watts", "W", struct opts, watts, 0, 100000, "the new per-GPU limit in watts"),
     .flags = CLI_OPEN_MIN},
    {CLI_STRING("from", "FILE", struct opts, from,
                "a caps file ('pflex allocate --mapping M --caps-out FILE'): each of this "
                "node's GPUs gets its own cap, all or nothing")},
    {CLI_STRING("node", "NAME", struct opts, node,
                "with --from: the node whose caps to apply (default: this host's name)")},
    {CLI_FLAG("clamp", struct opts, clamp,
              "a limit outside a GPU's range is set to the nearest end of the range (default: "
              "refuse, and change nothing)")},
    {CLI_FLAG("dry-run", struct opts, dry_run, "say what would change, change nothing")},
    {CLI_INCLUDE(struct opts, c, common_options)},
    {CLI_END}};

static const struct cli_option get_options[] = {
    {CLI_FLAG("json", struct opts, json, "machine-readable output")},
    {CLI_INCLUDE(struct opts, c, common_options)},
    {CLI_END}};

static const struct cli_option restore_options[] = {
    {CLI_FLAG("force", struct opts, force,
              "restore also GPUs whose limit someone else changed after pflex set it (default: "
              "leave those as they are and keep their records)")},
    {CLI_INCLUDE(struct opts, c, common_options)},
    {CLI_END}};

static const struct cli_spec set_spec = {
    .name = "cap set",
    .help_cmd = "cap",
    .usage = "pflex cap set (--watts W [--gpus LIST] | --from FILE [--node NAME]) [--clamp] "
             "[--dry-run] [options]",
    .about = "Sets the power limit of each selected GPU to W watts (or, with --from, each GPU "
             "of this node in a caps file to its own cap), all or nothing: every "
             "original limit is written durably to the restore file first, and when one GPU "
             "fails the others go back. Needs root or CAP_SYS_ADMIN. Limits do not survive a "
             "reboot or driver reload; run 'pflex cap restore' after one to clear the records.",
    .options = set_options,
    .exclusive = (const char *const[]){"watts from", "gpus from", NULL}};

static const struct cli_spec get_spec = {
    .name = "cap get",
    .help_cmd = "cap",
    .usage = "pflex cap get [--gpus LIST] [--json] [options]",
    .about = "Shows limits, enforced limits, defaults, ranges and recorded originals.",
    .options = get_options};

static const struct cli_spec restore_spec = {
    .name = "cap restore",
    .help_cmd = "cap",
    .usage = "pflex cap restore [--gpus LIST] [--force] [options]",
    .about = "Brings every recorded GPU (or those in --gpus) back to its original limit.",
    .options = restore_options};

static const struct cli_spec *const specs[] = {&set_spec, &get_spec, &restore_spec, NULL};

/* A dry run needs no state directory: without one, nothing is recorded to check against. */
static int open_for_set(struct pflex_gpu *gpu, const struct opts *o, struct pflex_restore **rs) {
  if (!o->dry_run) return cli_restore_open(gpu, o->c.state_dir, false, rs);
  struct pflex_restore_opts ro;
  cli_restore_opts(o->c.state_dir, &ro);
  ro.no_create = true;
  if (strcmp(pflex_gpu_backend_name(gpu), "sim") == 0 && !ro.state_dir)
    return pflex_restore_open_memory(rs);
  int err = pflex_restore_open_opts(&ro, rs, NULL, 0);
  if (err == -ENOENT) err = pflex_restore_open_memory(rs);
  return err ? cli_restore_open(gpu, o->c.state_dir, false, rs) : 0;
}

static void say_range(struct pflex_gpu *gpu, const struct pflex_limit_change *c, bool refused) {
  unsigned lo = 0, hi = 0;
  pflex_gpu_constraints(gpu, c->index, &lo, &hi, NULL);
  if (refused)
    cli_error("GPU %u: %.1f W is outside its settable range %.1f-%.1f W; refused, nothing "
              "changed (--clamp sets the nearest limit in range instead)",
              c->index, c->mw / 1000.0, lo / 1000.0, hi / 1000.0);
  else
    printf("GPU %u: %.1f W is %s the settable range %.1f-%.1f W: clamped to %.1f W (--clamp)\n",
           c->index, c->mw / 1000.0, c->mw < c->applied_mw ? "below" : "above", lo / 1000.0,
           hi / 1000.0, c->applied_mw / 1000.0);
}

/* Malformed records block changes: name them. */
static void say_malformed(struct pflex_restore *rs) {
  struct pflex_restore_record *v = NULL;
  size_t n = 0;
  if (pflex_restore_list(rs, &v, &n) != 0) return;
  for (size_t i = 0; i < n; i++)
    if (v[i].problem[0])
      fprintf(stderr, "  '%s': %s; kept as it is (it may hold a GPU's true original limit): "
                      "fix or remove it by hand\n",
              pflex_restore_path(rs), v[i].problem);
  free(v);
}

/* Why an all-or-nothing set failed, and what the GPUs are at now. */
static void say_failure(struct pflex_gpu *gpu, struct pflex_restore *rs,
                        const struct pflex_limit_change *c, size_t n, size_t failed, int err) {
  if (err == -ERANGE && failed < n) {
    say_range(gpu, &c[failed], true);
    return;
  }
  if (failed >= n) {
    cli_error("cannot record the original limits in '%s': %s; no limit was changed%s",
              pflex_restore_path(rs), pflex_strerror(err),
              err == -EACCES || err == -EPERM || err == -EROFS
                  ? " (changing limits needs root or CAP_SYS_ADMIN, and a writable state "
                    "directory: --state-dir)"
              : err == -PFLEX_E_LOCKED ? " (another pflex is setting or restoring limits now)"
                                       : "");
    if (err == -PFLEX_E_PARSE) say_malformed(rs);
    return;
  }
  cli_gpu_error(gpu, "cannot set the power limit of", c[failed].index, err);
  if (err == -PFLEX_E_PARSE) say_malformed(rs);
  bool left = false;
  for (size_t k = 0; k < failed; k++) {
    if (c[k].left) {
      cli_error("GPU %u: cannot put it back to %.1f W", c[k].index, c[k].before_mw / 1000.0);
      left = true;
    } else {
      printf("GPU %u: rolled back to %.1f W\n", c[k].index, c[k].before_mw / 1000.0);
    }
  }
  if (left)
    fprintf(stderr, "some GPUs keep the new limit: 'pflex cap restore' brings them back to "
                    "their recorded originals\n");
  else if (failed)
    fprintf(stderr, "GPU %u failed: no limit was changed (GPUs set before it were rolled back)\n",
            c[failed].index);
}

/* The GPUs of --gpus, each at --watts. */
static int changes_from_watts(struct pflex_gpu *gpu, const struct opts *o,
                              struct pflex_limit_change **ret, size_t *ret_n) {
  unsigned *idx;
  size_t n;
  if (cli_gpu_select(gpu, o->c.gpus, &idx, &n)) return -EINVAL;
  struct pflex_limit_change *c = calloc(n ? n : 1, sizeof *c);
  if (!c) {
    free(idx);
    cli_error("out of memory");
    return -ENOMEM;
  }
  unsigned req = (unsigned)lround(o->watts * 1000.0);
  for (size_t k = 0; k < n; k++)
    c[k] = (struct pflex_limit_change){.index = idx[k], .mw = req};
  free(idx);
  *ret = c;
  *ret_n = n;
  return 0;
}

/* This node's entries of the caps file; none is an error naming the nodes it has. */
static int pick_node(const struct pflex_caps_plan *plan, const char *path, const char *node,
                     unsigned ngpus, struct pflex_limit_change *c, size_t *ret_n) {
  size_t n = 0;
  for (size_t i = 0; i < plan->n; i++) {
    const struct pflex_gpu_cap *e = &plan->caps[i];
    if (strcmp(e->node, node) != 0) continue;
    if (e->gpu >= ngpus) {
      cli_error("'%s': node '%s' GPU %u (job '%s'): this node has %u GPUs; nothing changed",
                path, node, e->gpu, e->job, ngpus);
      return -ENODEV;
    }
    c[n++] = (struct pflex_limit_change){.index = e->gpu, .mw = (unsigned)lround(e->cap_w * 1e3)};
  }
  if (n == 0) {
    cli_error("'%s' has no caps for node '%s' (it has node '%s'%s; --node NAME picks one)", path,
              node, plan->n ? plan->caps[0].node : "", plan->n > 1 ? " and others" : "");
    return -ENOENT;
  }
  *ret_n = n;
  return 0;
}

/* The GPUs of this node in the caps file --from, each at its own cap. */
static int changes_from_file(struct pflex_gpu *gpu, const struct opts *o,
                             struct pflex_limit_change **ret, size_t *ret_n) {
  char host[256] = "";
  const char *node = o->node;
  if (!node) {
    if (gethostname(host, sizeof host - 1) != 0) {
      cli_error("cannot tell this host's name: %s; give --node NAME", strerror(errno));
      return -errno;
    }
    node = host;
  }
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  struct pflex_caps_plan plan;
  int err = pflex_caps_plan_read_json(o->from, &plan, &diag);
  if (err) {
    cli_error_diag("cannot read", &diag, err);
    return err;
  }
  struct pflex_limit_change *c = calloc(plan.n ? plan.n : 1, sizeof *c);
  unsigned ngpus = 0;
  if (!c) {
    err = -ENOMEM;
    cli_error("out of memory");
  } else if ((err = pflex_gpu_count(gpu, &ngpus))) {
    cli_error("cannot count the GPUs: %s", pflex_strerror(err));
  }
  if (!err) err = pick_node(&plan, o->from, node, ngpus, c, ret_n);
  pflex_caps_plan_release(&plan);
  if (err) {
    free(c);
    return err;
  }
  *ret = c;
  return 0;
}

static int cap_set(struct pflex_gpu *gpu, const struct opts *o) {
  struct pflex_limit_change *c = NULL;
  size_t n = 0;
  int err = o->from ? changes_from_file(gpu, o, &c, &n) : changes_from_watts(gpu, o, &c, &n);
  if (err) return PFLEX_EXIT_FAIL;
  struct pflex_restore *rs = NULL;
  int status = PFLEX_EXIT_FAIL;
  if (open_for_set(gpu, o, &rs)) goto out;
  /* All or nothing: every original recorded first; when one GPU cannot be set
   * (GPU 3 of 0-7), those set before it go back and their new records go. */
  size_t failed;
  err = pflex_restore_apply_limits(rs, gpu, c, n,
                                       (o->clamp ? PFLEX_APPLY_CLAMP : 0u) |
                                           (o->dry_run ? PFLEX_APPLY_DRY_RUN : 0u),
                                       &failed);
  if (err) {
    say_failure(gpu, rs, c, n, failed, err);
    goto out;
  }
  for (size_t k = 0; k < n; k++) {
    if (c[k].clamped) say_range(gpu, &c[k], false);
    printf("GPU %u: power limit %.1f W -> %.1f W%s\n", c[k].index, c[k].before_mw / 1000.0,
           c[k].applied_mw / 1000.0, o->dry_run ? " (dry run: not changed)" : "");
  }
  if (!o->dry_run && pflex_restore_path(rs)[0])
    printf("original limits recorded in '%s'; 'pflex cap restore' brings them back\n",
           pflex_restore_path(rs));
  if (!o->dry_run && strcmp(pflex_gpu_backend_name(gpu), "sim") == 0)
    fprintf(stderr, "note: simulated GPUs live in this process only: these limits end with it, "
                    "and a later 'pflex cap get --backend sim' shows the defaults (a pflexd "
                    "with backend = sim keeps its simulated GPUs while it runs)\n");
  status = PFLEX_EXIT_OK;
out:
  pflex_restore_free(rs);
  free(c);
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
  if (cli_gpu_select(gpu, o->c.gpus, &idx, &n)) return PFLEX_EXIT_FAIL;
  /* Recorded originals are shown when the state directory can be read. */
  struct pflex_restore *rs = NULL;
  struct pflex_restore_record *recs = NULL;
  size_t nrecs = 0;
  /* Reading must not create the state directory. */
  struct pflex_restore_opts ro;
  cli_restore_opts(o->c.state_dir, &ro);
  ro.no_create = true;
  char why[512] = "";
  int rerr = pflex_restore_open_opts(&ro, &rs, why, sizeof why);
  if (!rerr) rerr = pflex_restore_list(rs, &recs, &nrecs);
  if (rerr && rerr != -ENOENT)
    cli_warn("recorded originals not shown: '%s': %s", ro.state_dir ? ro.state_dir
                                                                    : PFLEX_RESTORE_DEFAULT_DIR,
             why[0] ? why : pflex_strerror(rerr));
  if (rerr) recs = NULL, nrecs = 0;
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

/* What happened to one record; 1 when it is not done. */
static int say_restored(struct pflex_gpu *gpu, struct pflex_restore *rs,
                        const struct pflex_restore_result *x) {
  const struct pflex_restore_record *rec = &x->record;
  if (!x->err) {
    printf("GPU %u (%s): power limit %.1f W -> %.1f W (original), record cleared\n", x->index,
           rec->uuid, x->was_mw / 1e3, rec->original_mw / 1e3);
    return 0;
  }
  if (rec->problem[0])
    cli_error("'%s': %s; kept as it is and not used (it may hold a GPU's true original limit): "
              "fix or remove it by hand",
              pflex_restore_path(rs), rec->problem);
  else if (x->restored)
    cli_error("GPU %u (%s): power limit %.1f W -> %.1f W (original), but its record could not be "
              "cleared from '%s': %s; a later 'pflex cap restore' finds it done",
              x->index, rec->uuid, x->was_mw / 1e3, rec->original_mw / 1e3,
              pflex_restore_path(rs), pflex_strerror(x->err));
  else if (x->changed)
    cli_error("GPU %u (%s): its limit is %.1f W, neither the original %.1f W nor the %.1f W "
              "pflex set: someone changed it since; left as it is, record kept ('pflex cap "
              "restore --force' sets %.1f W anyway)",
              x->index, rec->uuid, x->was_mw / 1e3, rec->original_mw / 1e3, rec->set_mw / 1e3,
              rec->original_mw / 1e3);
  else if (!x->found && x->err == -ENODEV)
    cli_error("GPU %s (index %u when recorded) is not present; its record (original %.1f W) is "
              "kept",
              rec->uuid, rec->index, rec->original_mw / 1e3);
  else {
    cli_gpu_error(gpu, "cannot restore the power limit of", x->found ? x->index : rec->index,
                  x->err);
    fprintf(stderr, "  its record (original %.1f W) is kept in '%s'\n", rec->original_mw / 1e3,
            pflex_restore_path(rs));
  }
  return 1;
}

static int cap_restore(struct pflex_gpu *gpu, const struct opts *o) {
  unsigned *idx = NULL;
  size_t n = 0;
  if (o->c.gpus && cli_gpu_select(gpu, o->c.gpus, &idx, &n)) return PFLEX_EXIT_FAIL;
  struct pflex_restore *rs;
  if (cli_restore_open(gpu, o->c.state_dir, false, &rs)) {
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
  for (size_t i = 0; i < nres; i++)
    if (say_restored(gpu, rs, &res[i])) status = PFLEX_EXIT_FAIL;
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

static const struct {
  const char *name;
  const struct cli_spec *spec;
  int (*fn)(struct pflex_gpu *, const struct opts *);
} subcommands[] = {{"set", &set_spec, cap_set},
                   {"get", &get_spec, cap_get},
                   {"restore", &restore_spec, cap_restore}};
#define NSUB (sizeof subcommands / sizeof subcommands[0])

static int run(int argc, char **argv) {
  size_t k = 0;
  while (argc >= 2 && k < NSUB && strcmp(argv[1], subcommands[k].name) != 0)
    k++;
  if (argc < 2 || k == NSUB)
    return cli_subcommand_error("cap", argc < 2 ? NULL : argv[1], "set, get, restore");
  /* Usage errors before opening the backend, so they are not hidden behind a
   * missing driver. */
  struct opts o = {.watts = NAN};
  struct cli_parsed p;
  int err = cli_parse(subcommands[k].spec, argc - 1, argv + 1, &o, &p);
  if (err) return cli_parse_status(err);
  if (subcommands[k].fn == cap_set && isnan(o.watts) && !o.from) {
    cli_usage_error(&set_spec, "give --watts W or --from FILE");
    return PFLEX_EXIT_USAGE;
  }
  if (o.node && !o.from) {
    cli_usage_error(&set_spec, "--node needs --from");
    return PFLEX_EXIT_USAGE;
  }
  struct pflex_gpu *gpu;
  err = cli_gpu_open(o.c.backend, o.c.spec, NULL, &gpu);
  if (err) return err == -ENOENT ? PFLEX_EXIT_USAGE : PFLEX_EXIT_FAIL;
  int status = subcommands[k].fn(gpu, &o);
  pflex_gpu_close(gpu);
  return status;
}

const struct pflex_cmd pflex_cmd_cap = {.name = "cap",
                                        .run = run,
                                        .summary = "set, show and restore GPU power limits",
                                        .specs = specs,
                                        .usage = "pflex cap set|get|restore [options]"};
