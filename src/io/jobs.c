/* The jobs JSON file (docs/allocation.md) read into a job set: each job's
 * bounds, data for the strategies, and a curve from measured points,
 * parametric parameters or a PFI value, in that order of preference. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "io/json_fields.h"
#include "pflex/jobs.h"

int pflex__jobset_alloc(struct pflex_jobset *set, size_t n);

/* The reader of job index (0-based) named name: errors say "job N ('name')". */
static void job_fields(struct json_fields *f, size_t index, const char *name) {
  snprintf(f->where, sizeof f->where, "job %zu ('%s')", index + 1, name ? name : "");
}

static int bad(const struct json_fields *f, const char *field, const char *what) {
  return json_fail(f, -PFLEX_E_DATA, field, "%s", what);
}

/* An optional number field (null = absent) in [min, max]. */
static int number(const struct json_fields *f, json_t *o, const char *field, double min,
                  unsigned flags, double *ret, bool *present) {
  return json_get_number(f, o, field, min, INFINITY, flags | JSON_NULL_ABSENT, ret, present);
}

static const char *const job_keys[] = {"name",      "gpu",       "gpus",   "p_max",    "p_min",
                                       "t_max",     "pfi",       "weight", "min_tput", "dram_copy",
                                       "cap_min_w", "cap_max_w", "arch",   "task",     "points",
                                       "params",    NULL};
static const char *const param_keys[] = {"c", "knee", "idle_frac", "vratio", NULL};
static const char *const root_keys[] = {"jobs", "unit", NULL};

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
    }
    p[i] = (struct pflex_curve_point){v[0], v[1], v[2]};
  }
  int err = pflex_curve_new_measured(p, n, PFLEX_INTERP_STEFFEN, ret);
  free(p);
  if (err == -EINVAL) return bad(r, "points", "not a valid curve");
  return err;
}

static int read_job(struct json_fields *r, json_t *o, struct pflex_jobset *set, size_t i) {
  struct pflex_alloc_job *j = &set->jobs[i];
  int err;
  job_fields(r, i, NULL);
  if (!json_is_object(o)) return bad(r, "", "not an object");
  json_t *name = json_object_get(o, "name");
  char buf[32];
  snprintf(buf, sizeof buf, "job%zu", i + 1);
  if (name && !json_is_string(name)) return bad(r, "name", "not a string");
  job_fields(r, i, name ? json_string_value(name) : buf);
  /* A typo ("wieght") must not be lost silently. */
  if ((err = json_check_keys(r, o, job_keys, NULL))) return err;
  if (!(set->names[i] = strdup(name ? json_string_value(name) : buf))) return -ENOMEM;
  j->name = set->names[i];
  json_t *gpu = json_object_get(o, "gpu");
  if (gpu && !json_is_string(gpu)) return bad(r, "gpu", "not a string");
  if (!(set->gpu[i] = strdup(gpu ? json_string_value(gpu) : "H200"))) return -ENOMEM;
  double gpus = 1;
  bool have;
  if ((err = number(r, o, "gpus", 1, 0, &gpus, &have))) return err;
  if (!have) return bad(r, "gpus", "missing (the job's GPU count)");
  if (gpus != floor(gpus) || gpus > 1e7) return bad(r, "gpus", "must be a whole number");
  j->gpus = (int)gpus;
  bool have_pmax, have_pmin, have_tmax, have_pfi;
  if ((err = number(r, o, "p_max", 0, JSON_OPEN_MIN, &j->p_max, &have_pmax)) ||
      (err = number(r, o, "p_min", 0, JSON_OPEN_MIN, &j->p_min, &have_pmin)) ||
      (err = number(r, o, "t_max", 0, JSON_OPEN_MIN, &j->t_max, &have_tmax)) ||
      (err = number(r, o, "pfi", -INFINITY, 0, &j->pfi, &have_pfi)) ||
      (err = number(r, o, "weight", 0, 0, &j->weight, NULL)) ||
      (err = number(r, o, "min_tput", 0, 0, &j->min_tput, NULL)) ||
      (err = number(r, o, "dram_copy", 0, 0, &j->dram_copy, NULL)) ||
      (err = number(r, o, "cap_min_w", 0, JSON_OPEN_MIN, &j->cap_min_w, NULL)) ||
      (err = number(r, o, "cap_max_w", 0, JSON_OPEN_MIN, &j->cap_max_w, NULL)))
    return err;
  if (!json_object_get(o, "dram_copy")) j->dram_copy = NAN;
  if (!have_pfi) j->pfi = NAN;
  json_t *arch = json_object_get(o, "arch"), *task = json_object_get(o, "task");
  if (arch) {
    const char *a = json_is_string(arch) ? json_string_value(arch) : "";
    if (pflex_arch_parse(a, &j->arch)) return bad(r, "arch", "must be \"dense\" or \"moe\"");
  }
  if (task) {
    const char *t = json_is_string(task) ? json_string_value(task) : "";
    if (pflex_task_parse(t, &j->task)) return bad(r, "task", "must be \"pt\" or \"ft\"");
  }
  double cap_min = j->cap_min_w > 0 ? j->cap_min_w : PFLEX_ALLOC_CAP_MIN_W;
  json_t *points = json_object_get(o, "points"), *params = json_object_get(o, "params");
  if (points) {
    if ((err = read_points(r, points, &set->curves[i]))) return err;
  } else if (params || have_pfi) {
    if (!have_pmax) return bad(r, "p_max", "missing (needed for a parametric curve)");
    if (!have_tmax) return bad(r, "t_max", "missing (needed for a parametric curve)");
    if (!have_pmin) j->p_min = fmin(j->p_max, j->gpus * cap_min);
    struct pflex_curve_params q;
    pflex_curve_params_default(set->gpu[i], j->gpus, j->p_max, &q);
    if (params) {
      if (!json_is_object(params)) return bad(r, "params", "not an object");
      if ((err = json_check_keys(r, params, param_keys, "in params"))) return err;
      if ((err = number(r, params, "c", 0, JSON_OPEN_MIN, &q.c, NULL)) ||
          (err = number(r, params, "knee", 0, 0, &q.knee, NULL)) ||
          (err = number(r, params, "idle_frac", 0, 0, &q.idle_frac, NULL)) ||
          (err = number(r, params, "vratio", 1, 0, &q.vratio, NULL)))
        return err;
      err = pflex_curve_new_parametric(&q, j->p_min, j->p_max, j->t_max, &set->curves[i]);
      if (err == -EINVAL)
        return bad(r, "params",
                   "out of range (c in (0, 1], knee in [0, 1), idle_frac in [0, 1), "
                   "vratio >= 1, p_min <= p_max)");
      if (err) return err;
    } else {
      double grid[5];
      size_t ng = pflex_jobs_paper_grid(j->gpus, j->p_max, grid);
      err =
          pflex_curve_from_pfi(j->pfi, j->p_min, j->p_max, j->t_max, grid, ng, &q, &set->curves[i]);
      if (err == -ERANGE || err == -PFLEX_E_NOPOINTS || err == -EINVAL)
        return bad(r, "pfi",
                   "no curve of the family has this PFI on the paper's cap grid "
                   "(it must exceed 1 - idle power share, and p_max must exceed "
                   "200 W per GPU)");
      if (err) return err;
    }
  } else if (!have_pmax) {
    return bad(r, "p_max", "missing (a job needs p_max, or points)");
  }
  j->curve = set->curves[i];
  if (j->curve) {
    /* A curve from points sets the bounds unless the file narrows them. */
    if (!have_pmax) j->p_max = 0;
    if (!have_pmin) j->p_min = j->curve ? 0 : j->p_min;
    if (!have_tmax) j->t_max = 0;
    if (j->p_max > 0 && j->p_max > pflex_curve_p_max(j->curve) * (1 + 1e-9) && points)
      return bad(r, "p_max", "above the highest measured power");
    /* The PFI of the job's own curve when none is given. */
    if (!have_pfi && points) {
      double grid[5];
      size_t ng = pflex_jobs_paper_grid(j->gpus, pflex_curve_p_max(j->curve), grid);
      double v;
      if (pflex_curve_pfi(j->curve, grid, ng, &v) == 0) j->pfi = v;
      set->pfi_true[i] = j->pfi;
    }
  }
  if (j->p_min > 0 && j->p_max > 0 && j->p_min > j->p_max) return bad(r, "p_min", "above p_max");
  return 0;
}

int pflex_jobs_read_json(const char *path, struct pflex_jobset *ret_set, struct pflex_diag *diag) {
  json_error_t jerr;
  json_t *root = json_load_file(path, 0, &jerr);
  if (!root)
    return pflex_diag_set(diag, jerr.line > 0 ? -PFLEX_E_PARSE : -ENOENT, path,
                          jerr.line > 0 ? (size_t)jerr.line : 0, NULL, "%s", jerr.text);
  json_t *arr = json_is_array(root) ? root : json_object_get(root, "jobs");
  struct pflex_jobset set;
  pflex_jobset_init(&set);
  int err;
  if (!json_is_array(arr)) {
    err = pflex_diag_set(diag, -PFLEX_E_DATA, path, 0, "jobs",
                         "expected an array of jobs or an object with a \"jobs\" array");
    goto out;
  }
  struct json_fields f = {.file = path, .diag = diag};
  if (json_is_object(root) && (err = json_check_keys(&f, root, root_keys, NULL))) goto out;
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
  for (size_t i = 0; i < set.n; i++) {
    if ((err = read_job(&f, json_array_get(arr, i), &set, i))) goto out;
  }
  *ret_set = set;
  pflex_jobset_init(&set);
  err = 0;
out:
  pflex_jobset_release(&set);
  json_decref(root);
  return err;
}
