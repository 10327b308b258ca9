/* The jobs JSON file (docs/allocation.md) read into a job set: each job's
 * bounds, data for the strategies, and a curve from measured points,
 * parametric parameters or a PFI value, in that order of preference. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "core/jobset_internal.h"
#include "io/json_fields.h"
#include "pflex/gpu_models.h"
#include "pflex/jobs.h"
#include "pflex/jobs_json.h"
#include "pflex/pfi.h"

/* The reader of job index (0-based) named name: errors say "job N ('name')". */
static void job_fields(struct json_fields *f, size_t index, const char *name) {
  snprintf(f->where, sizeof f->where, "job %zu ('%s')", index + 1, name ? name : "");
}

static int bad(const struct json_fields *f, const char *field, const char *what) {
  return pflex__json_fail(f, -PFLEX_E_DATA, field, "%s", what);
}

/* An optional number field (null = absent) in [min, max]. */
static int number(const struct json_fields *f, json_t *o, const char *field, double min,
                  double max, unsigned flags, double *ret, bool *present) {
  return pflex__json_get_number(f, o, field, min, max, flags | JSON_NULL_ABSENT, ret, present);
}

static const char *const job_keys[] = {"name",      "gpu",       "gpus",   "p_max",    "p_min",
                                       "t_max",     "pfi",       "weight", "min_tput", "dram_copy",
                                       "cap_min_w", "cap_max_w", "arch",   "task",     "points",
                                       "params",    NULL};
static const char *const param_keys[] = {"c", "knee", "idle_frac", "vratio", NULL};
static const char *const root_keys[] = {"jobs", "unit", "provenance", NULL};

/* Throughput that falls as power rises, against the point at the highest
 * power (the uncapped one), by pfi's noise rule with its default throughput
 * noise (docs/pfi.md): beyond noise the points are refused (a curve through
 * them would promise more than the job's uncapped speed); within noise the
 * point counts at the uncapped throughput, so t_max is never above it. */
static int check_falling(const struct json_fields *r, struct pflex_curve_point *p, size_t n) {
  size_t top = 0;
  for (size_t i = 1; i < n; i++)
    if (p[i].power_w > p[top].power_w) top = i;
  struct pflex_pfi_opts o;
  pflex_pfi_opts_init(&o);
  for (size_t i = 0; i < n; i++) {
    double ratio = p[i].tput / p[top].tput;
    if (ratio <= 1) continue;
    double se = ratio * sqrt(2) * o.tput_cv; /* SE of T_i / T_max, both at the default noise */
    if (ratio - 1 <= o.noise_k * se) {
      p[i].tput = p[top].tput;
      continue;
    }
    return pflex__json_fail(r, -PFLEX_E_DATA, "points",
                            "point %zu ([%g, %g]) has %.2f%% more throughput than the point at "
                            "the highest power (%g W): throughput must not fall as power rises "
                            "(beyond noise, %g x %.2f%%)",
                            i + 1, p[i].power_w, p[i].tput, 100 * (ratio - 1), p[top].power_w,
                            o.noise_k, 100 * se);
  }
  return 0;
}

static int read_points(const struct json_fields *r, json_t *arr, struct pflex_curve **ret) {
  size_t n = json_array_size(arr);
  if (!json_is_array(arr) || n == 0)
    return bad(r, "points",
               "must be a non-empty array of [power_w, tput] or [power_w, tput, cap_w]");
  struct pflex_curve_point *p = calloc(n, sizeof *p);
  if (!p) return -ENOMEM;
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_array_get(arr, i);
    size_t m = json_array_size(e);
    if (!json_is_array(e) || m < 2 || m > 3) {
      free(p);
      return bad(r, "points", "each point must be [power_w, tput] or [power_w, tput, cap_w]");
    }
    double v[3] = {0, 0, 0};
    for (size_t k = 0; k < m; k++) {
      json_t *x = json_array_get(e, k);
      v[k] = json_is_number(x) ? json_number_value(x) : NAN;
      if (!isfinite(v[k]) || v[k] <= 0) {
        free(p);
        return bad(r, "points", "point values must be positive numbers");
      }
      double max = k == 1 ? PFLEX_ALLOC_MAX_TPUT : PFLEX_ALLOC_MAX_W;
      if (v[k] > max) {
        free(p);
        return pflex__json_fail(r, -PFLEX_E_DATA, "points",
                                "point %zu: %s %g%s is above the allocator's limit %g%s",
                                i + 1, k == 1 ? "throughput" : "power", v[k], k == 1 ? "" : " W",
                                max, k == 1 ? "" : " W");
      }
    }
    p[i] = (struct pflex_curve_point){v[0], v[1], v[2]};
  }
  int err = check_falling(r, p, n);
  if (!err) err = pflex_curve_new_measured(p, n, PFLEX_INTERP_STEFFEN, ret);
  free(p);
  if (err == -EINVAL) return bad(r, "points", "not a valid curve");
  return err;
}

/* Which of a job's optional bounds the file gives. */
struct given {
  bool p_max, p_min, t_max, pfi;
};

/* The job's name (default "jobN"), GPU type (default H200) and GPU count;
 * from here on errors name the job. */
static int read_identity(struct json_fields *r, json_t *o, struct pflex_jobset *set, size_t i) {
  struct pflex_alloc_job *j = &set->jobs[i];
  json_t *name = json_object_get(o, "name");
  char buf[32];
  snprintf(buf, sizeof buf, "job%zu", i + 1);
  if (name && !json_is_string(name)) return bad(r, "name", "not a string");
  job_fields(r, i, name ? json_string_value(name) : buf);
  /* A typo ("wieght") must not be lost silently. */
  int err = pflex__json_check_keys(r, o, job_keys, NULL);
  if (err) return err;
  if (!(set->names[i] = strdup(name ? json_string_value(name) : buf))) return -ENOMEM;
  j->name = set->names[i];
  json_t *gpu = json_object_get(o, "gpu");
  if (gpu && !json_is_string(gpu)) return bad(r, "gpu", "not a string");
  if (!(set->gpu[i] = strdup(gpu ? json_string_value(gpu) : "H200"))) return -ENOMEM;
  double gpus = 1;
  bool have;
  if ((err = number(r, o, "gpus", 1, 1e7, 0, &gpus, &have))) return err;
  if (!have) return bad(r, "gpus", "missing (the job's GPU count)");
  if (gpus != floor(gpus)) return bad(r, "gpus", "must be a whole number");
  j->gpus = (int)gpus;
  return 0;
}

/* The bounds, the strategies' data and the arch x task labels. */
static int read_numbers(const struct json_fields *r, json_t *o, struct pflex_alloc_job *j,
                        struct given *g) {
  int err;
  /* The upper limits are the allocator's (pflex/alloc.h): a file beyond them
   * is refused here, where the message can name the field. */
  const double W = PFLEX_ALLOC_MAX_W, T = PFLEX_ALLOC_MAX_TPUT, K = PFLEX_ALLOC_MAX_WEIGHT;
  if ((err = number(r, o, "p_max", 0, W, JSON_OPEN_MIN, &j->p_max, &g->p_max)) ||
      (err = number(r, o, "p_min", 0, W, JSON_OPEN_MIN, &j->p_min, &g->p_min)) ||
      (err = number(r, o, "t_max", 0, T, JSON_OPEN_MIN, &j->t_max, &g->t_max)) ||
      (err = number(r, o, "pfi", -INFINITY, INFINITY, 0, &j->pfi, &g->pfi)) ||
      (err = number(r, o, "weight", 0, K, 0, &j->weight, NULL)) ||
      (err = number(r, o, "min_tput", 0, T, 0, &j->min_tput, NULL)) ||
      (err = number(r, o, "dram_copy", 0, K, 0, &j->dram_copy, NULL)) ||
      (err = number(r, o, "cap_min_w", 0, W, JSON_OPEN_MIN, &j->cap_min_w, NULL)) ||
      (err = number(r, o, "cap_max_w", 0, W, JSON_OPEN_MIN, &j->cap_max_w, NULL)))
    return err;
  /* Checked here, before a curve is built on them, so the message names them. */
  if (g->p_min && g->p_max && j->p_min > j->p_max) return bad(r, "p_min", "above p_max");
  double cap_min = j->cap_min_w > 0 ? j->cap_min_w : PFLEX_ALLOC_CAP_MIN_W;
  double cap_max = j->cap_max_w > 0 ? j->cap_max_w : PFLEX_ALLOC_CAP_MAX_W;
  if (cap_min > cap_max)
    return bad(r, j->cap_min_w > 0 ? "cap_min_w" : "cap_max_w",
               j->cap_min_w > 0 && j->cap_max_w > 0 ? "above cap_max_w"
               : j->cap_min_w > 0                   ? "above the default cap_max_w (700 W)"
                                                    : "below the default cap_min_w (200 W)");
  if (!json_object_get(o, "dram_copy")) j->dram_copy = NAN;
  if (!g->pfi) j->pfi = NAN;
  json_t *arch = json_object_get(o, "arch"), *task = json_object_get(o, "task");
  if (arch) {
    const char *a = json_is_string(arch) ? json_string_value(arch) : "";
    if (pflex_arch_parse(a, &j->arch)) return bad(r, "arch", "must be \"dense\" or \"moe\"");
  }
  if (task) {
    const char *t = json_is_string(task) ? json_string_value(task) : "";
    if (pflex_task_parse(t, &j->task)) return bad(r, "task", "must be \"pt\" or \"ft\"");
  }
  return 0;
}

/* A parametric curve from "params" (the GPU type's defaults for what it omits). */
static int read_params(const struct json_fields *r, json_t *params, struct pflex_curve_params *q,
                       const struct pflex_alloc_job *j, struct pflex_curve **ret) {
  if (!json_is_object(params)) return bad(r, "params", "not an object");
  int err = pflex__json_check_keys(r, params, param_keys, "in params");
  if (err) return err;
  if ((err = number(r, params, "c", 0, INFINITY, JSON_OPEN_MIN, &q->c, NULL)) ||
      (err = number(r, params, "knee", 0, INFINITY, 0, &q->knee, NULL)) ||
      (err = number(r, params, "idle_frac", 0, INFINITY, 0, &q->idle_frac, NULL)) ||
      (err = number(r, params, "vratio", 1, INFINITY, 0, &q->vratio, NULL)))
    return err;
  err = pflex_curve_new_parametric(q, j->p_min, j->p_max, j->t_max, ret);
  if (err == -EINVAL)
    return bad(r, "params",
               "out of range (c in (0, 1], knee in [0, 1), idle_frac in [0, 1), "
               "vratio >= 1, p_min <= p_max)");
  return err;
}

/* The curve of the family with the job's PFI on the paper's cap grid (in
 * its GPU's limit range). */
static int pfi_curve(const struct json_fields *r, const struct pflex_alloc_job *j, const char *gpu,
                     struct pflex_curve_params *q, struct pflex_curve **ret) {
  double grid[5];
  size_t ng = pflex_jobs_gpu_grid(gpu, j->cap_min_w, j->cap_max_w, j->gpus, j->p_max, grid);
  int err = pflex_curve_from_pfi(j->pfi, j->p_min, j->p_max, j->t_max, grid, ng, q, ret);
  if (err == -ERANGE || err == -PFLEX_E_NOPOINTS || err == -EINVAL)
    return bad(r, "pfi",
               "no curve of the family has this PFI on the paper's cap grid "
               "(it must exceed 1 - idle power share, and p_max must exceed "
               "the GPU's lowest limit per GPU)");
  return err;
}

/* The per-GPU cap limits a file omits: its GPU's lowest and default limit
 * (pflex/gpu_models.h); a type pflex does not know needs both in the file. */
static int cap_limits(const struct json_fields *r, struct pflex_jobset *set, size_t i) {
  struct pflex_alloc_job *j = &set->jobs[i];
  const struct pflex_gpu_model *m = pflex_gpu_model_find(set->gpu[i]);
  if (!m && !(j->cap_min_w > 0 && j->cap_max_w > 0))
    return bad(r, j->cap_min_w > 0 ? "cap_max_w" : "cap_min_w",
               "missing: the job's GPU type is not in pflex's GPU table, so its per-GPU cap "
               "limits cap_min_w and cap_max_w must be given");
  if (!(j->cap_min_w > 0)) j->cap_min_w = m->limit_min_w;
  if (!(j->cap_max_w > 0)) j->cap_max_w = m->default_limit_w;
  if (j->cap_min_w > j->cap_max_w) return bad(r, "cap_min_w", "above cap_max_w");
  return 0;
}

/* The job's curve, in the order of preference: measured points, parametric
 * parameters, a PFI value; none at all needs p_max. */
static int read_curve(const struct json_fields *r, json_t *o, struct pflex_jobset *set, size_t i,
                      const struct given *g) {
  struct pflex_alloc_job *j = &set->jobs[i];
  json_t *points = json_object_get(o, "points"), *params = json_object_get(o, "params");
  if (points) return read_points(r, points, &set->curves[i]);
  if (!params && !g->pfi)
    return g->p_max ? 0 : bad(r, "p_max", "missing (a job needs p_max, or points)");
  if (!g->p_max) return bad(r, "p_max", "missing (needed for a parametric curve)");
  if (!g->t_max) return bad(r, "t_max", "missing (needed for a parametric curve)");
  if (!g->p_min) j->p_min = fmin(j->p_max, j->gpus * j->cap_min_w);
  struct pflex_curve_params q;
  pflex_curve_params_default(set->gpu[i], j->gpus, j->p_max, &q);
  return params ? read_params(r, params, &q, j, &set->curves[i])
                : pfi_curve(r, j, set->gpu[i], &q, &set->curves[i]);
}

/* A curve from points sets the bounds unless the file narrows them, and
 * gives the job's PFI when the file gives none. */
static int curve_bounds(const struct json_fields *r, struct pflex_jobset *set, size_t i,
                        const struct given *g, bool points) {
  struct pflex_alloc_job *j = &set->jobs[i];
  if (!g->p_max) j->p_max = 0;
  if (!g->p_min) j->p_min = 0;
  if (!g->t_max) j->t_max = 0;
  if (j->p_max > 0 && j->p_max > pflex_curve_p_max(j->curve) * (1 + 1e-9) && points)
    return bad(r, "p_max", "above the highest measured power");
  if (!g->pfi && points) {
    double grid[5];
    size_t ng = pflex_jobs_gpu_grid(set->gpu[i], j->cap_min_w, j->cap_max_w, j->gpus,
                                    pflex_curve_p_max(j->curve), grid);
    double v;
    if (pflex_curve_pfi(j->curve, grid, ng, &v) == 0) j->pfi = v;
    set->pfi_true[i] = j->pfi;
  }
  return 0;
}

static int read_job(struct json_fields *r, json_t *o, struct pflex_jobset *set, size_t i) {
  struct pflex_alloc_job *j = &set->jobs[i];
  struct given g = {0};
  job_fields(r, i, NULL);
  if (!json_is_object(o)) return bad(r, "", "not an object");
  int err = read_identity(r, o, set, i);
  if (!err) err = read_numbers(r, o, j, &g);
  if (!err) err = cap_limits(r, set, i);
  if (!err) err = read_curve(r, o, set, i, &g);
  if (err) return err;
  j->curve = set->curves[i];
  if (j->curve && (err = curve_bounds(r, set, i, &g, json_object_get(o, "points") != NULL)))
    return err;
  if (j->p_min > 0 && j->p_max > 0 && j->p_min > j->p_max) return bad(r, "p_min", "above p_max");
  return 0;
}

struct named {
  const char *name;
  size_t index;
};

static int cmp_named(const void *a, const void *b) {
  const struct named *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* No job name twice (caps, output and mappings go by name): sorted, so
 * O(n log n) for the largest files; the later job of a pair is blamed. */
static int check_names(struct json_fields *f, const struct pflex_jobset *set) {
  if (set->n < 2) return 0;
  struct named *v = malloc(set->n * sizeof *v);
  if (!v) return -ENOMEM;
  for (size_t i = 0; i < set->n; i++)
    v[i] = (struct named){set->names[i], i};
  qsort(v, set->n, sizeof *v, cmp_named);
  int err = 0;
  for (size_t k = 1; !err && k < set->n; k++) {
    if (strcmp(v[k - 1].name, v[k].name) != 0) continue;
    job_fields(f, v[k].index, v[k].name);
    err = pflex__json_fail(f, -PFLEX_E_DATA, "name",
                           "the same name as job %zu: job names must be distinct",
                           v[k - 1].index + 1);
  }
  free(v);
  return err;
}

int pflex_jobs_read_json(const char *path, struct pflex_jobset *ret_set, struct pflex_diag *diag) {
  json_t *root;
  int err = pflex__json_load(path, 0, &root, diag);
  if (err) return err;
  json_t *arr = json_is_array(root) ? root : json_object_get(root, "jobs");
  const char *format = json_string_value(json_object_get(root, "format"));
  struct pflex_jobset set;
  pflex_jobset_init(&set);
  if (format && strcmp(format, "pflex-runs") == 0) {
    err = pflex_diag_set(diag, -PFLEX_E_FORMAT, path, 0, "format",
                         "a runs file (\"pflex-runs\"), not a jobs file");
    goto out;
  }
  if (!json_is_array(arr)) {
    err = pflex_diag_set(diag, -PFLEX_E_DATA, path, 0, "jobs",
                         "expected an array of jobs or an object with a \"jobs\" array");
    goto out;
  }
  struct json_fields f = {.file = path, .diag = diag};
  if (json_is_object(root) && (err = pflex__json_check_keys(&f, root, root_keys, NULL))) goto out;
  if ((err = pflex__jobset_alloc(&set, json_array_size(arr)))) goto out;
  set.unit = PFLEX_TPUT_TOKENS_PER_S;
  json_t *unit = json_is_object(root) ? json_object_get(root, "unit") : NULL;
  if (unit) {
    /* The unit names of the one unit table; a time per step is not a rate a jobs file holds. */
    const char *u = json_is_string(unit) ? json_string_value(unit) : "";
    if (pflex_tput_unit_parse(u, &set.unit) || set.unit == PFLEX_TPUT_PER_STEP_TIME) {
      err = pflex_diag_set(diag, -PFLEX_E_DATA, path, 0, "unit",
                           "must be \"tokens\", \"samples\" or \"steps\"");
      goto out;
    }
  }
  json_t *prov = json_is_object(root) ? json_object_get(root, "provenance") : NULL;
  if (prov && (!json_is_string(prov) ||
               pflex_provenance_parse(json_string_value(prov), &set.provenance))) {
    err = pflex_diag_set(diag, -PFLEX_E_DATA, path, 0, "provenance",
                         "must be \"measured\", \"simulated\", \"reconstructed\" or \"unknown\"");
    goto out;
  }
  for (size_t i = 0; i < set.n; i++) {
    if ((err = read_job(&f, json_array_get(arr, i), &set, i))) goto out;
  }
  if ((err = check_names(&f, &set))) goto out;
  *ret_set = set;
  pflex_jobset_init(&set);
  err = 0;
out:
  pflex_jobset_release(&set);
  json_decref(root);
  return pflex__json_said(diag, err);
}
