/* The PFI model file as JSON (include/pflex/model_json.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "base/atomic.h"
#include "io/json_fields.h"
#include "pflex/model_json.h"

static json_t *num(double v) {
  return isfinite(v) ? json_real(v) : json_null();
}

static json_t *num_array(const double *v, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++)
    json_array_append_new(a, num(v[i]));
  return a;
}

static json_t *scores(const struct pflex_scores *s) {
  return json_pack("{s:o, s:o, s:o}", "r2", num(s->r2), "rmse", num(s->rmse), "rho", num(s->rho));
}

static json_t *opt_str(const char *s) {
  return s ? json_string(s) : json_null();
}

/* How the training targets were computed (the PFI engine's options). */
static json_t *target_json(const struct pflex_pfi_opts *o) {
  return json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:o}", "quantity", "pfi", "definition",
                   pflex_pfi_definition_name(o->definition), "exclude",
                   pflex_pfi_exclude_name(o->exclude), "noise_k", num(o->noise_k), "power_cv",
                   num(o->power_cv), "tput_cv", num(o->tput_cv), "grid",
                   o->grid ? num_array(o->grid, o->ngrid) : json_null());
}

int pflex_model_to_json(const struct pflex_model *m, char **ret_json) {
  json_t *feats = json_array(), *cells = json_array(), *groups = json_array();
  if (!feats || !cells || !groups) goto nomem;
  for (size_t j = 0; j < m->feats.n; j++)
    json_array_append_new(feats, json_string(m->feats.names[j]));
  for (size_t k = 0; k < m->nprior; k++)
    json_array_append_new(
        cells, json_pack("{s:s, s:s, s:I, s:o}", "arch", pflex_arch_name(m->prior[k].arch), "task",
                         pflex_task_name(m->prior[k].task), "n", (json_int_t)m->prior[k].n, "mean",
                         num(m->prior[k].mean)));
  for (size_t i = 0; i < m->n; i++) {
    const struct pflex_model_group *g = &m->groups[i];
    json_array_append_new(groups,
                          json_pack("{s:s, s:s, s:o, s:o, s:o, s:o}", "group", g->group, "cluster",
                                    g->cluster, "pfi", num(g->pfi), "fitted", num(g->fitted), "loo",
                                    num(g->loo), "loco", num(g->loco)));
  }
  bool lin = m->kind != PFLEX_MODEL_PRIOR;
  size_t p = lin ? m->lin.p : 0;
  json_t *root = json_pack(
      "{s:i, s:o, s:s, s:o, s:O, s:o, s:o, s:o, s:o, s:o, s:{s:o, s:O}, s:{s:o, s:o, s:I, s:o, "
      "s:O}, s:{s:o, s:o}}",
      "format", PFLEX_MODEL_FORMAT, "pflex_version", opt_str(m->version), "kind",
      pflex_model_kind_name(m->kind), "target", target_json(&m->target), "features", feats,
      "intercept", lin ? num(m->lin.intercept) : json_null(), "coefficients",
      lin ? num_array(m->lin.coef, p) : json_array(), "standardization",
      lin ? json_pack("{s:o, s:o, s:o}", "mean", num_array(m->lin.mean, p), "sd",
                      num_array(m->lin.sd, p), "coefficients", num_array(m->lin.beta_std, p))
          : json_null(),
      "lambda", m->kind == PFLEX_MODEL_RIDGE ? num(m->lin.lambda) : json_null(), "lambda_selection",
      m->kind != PFLEX_MODEL_RIDGE ? json_null()
      : m->lambda_chosen           ? json_string("nested-loo")
                                   : json_string("fixed"),
      "prior", "mean", num(m->prior_mean), "cells", cells, "training", "file", opt_str(m->source),
      "set", opt_str(m->set_filter), "n", (json_int_t)m->n, "r2_in", num(m->r2_in), "groups",
      groups, "cv", "loo", scores(&m->loo), "loco",
      json_pack("{s:s, s:o, s:o, s:o}", "clusters", pflex_loco_name(m->loco_scheme), "r2",
                num(m->loco.r2), "rmse", num(m->loco.rmse), "rho", num(m->loco.rho)));
  json_decref(feats);
  json_decref(cells);
  json_decref(groups);
  if (root && json_object_set_new(root, "provenance", json_string(pflex_provenance_name(m->provenance))))
    json_decref(root), root = NULL;
  if (!root) return -ENOMEM;
  char *s = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
  json_decref(root);
  if (!s) return -ENOMEM;
  *ret_json = s;
  return 0;
nomem:
  json_decref(feats);
  json_decref(cells);
  json_decref(groups);
  return -ENOMEM;
}

int pflex_model_write_json(const struct pflex_model *m, const char *path) {
  char *s;
  int err = pflex_model_to_json(m, &s);
  if (err) return err;
  err = pflex__atomic_write_text(path, s);
  free(s);
  return err;
}

/* Reading, through the io field readers (json_fields.h): every error names the
 * field at fault; a model file that does not read is -PFLEX_E_PARSE throughout. */

static int bad(const struct json_fields *r, const char *field, const char *why) {
  return pflex__json_fail(r, -PFLEX_E_PARSE, field, "%s", why);
}

/* A required number; nullable: null reads as NAN (a score that could not be computed). */
static int get_num(const struct json_fields *r, json_t *o, const char *field, bool nullable,
                   double *ret) {
  json_t *v = json_object_get(o, field);
  if (v && json_is_null(v) && nullable) {
    *ret = NAN;
    return 0;
  }
  return pflex__json_get_number(r, o, field, -INFINITY, INFINITY, JSON_REQUIRED, ret, NULL);
}

static int get_array(const struct json_fields *r, json_t *o, const char *field, size_t n,
                     double *ret) {
  json_t *a = json_object_get(o, field);
  if (!json_is_array(a) || json_array_size(a) != n)
    return bad(r, field, "missing, or not an array with one number per feature");
  for (size_t i = 0; i < n; i++) {
    json_t *v = json_array_get(a, i);
    if (!json_is_number(v)) return bad(r, field, "holds a value that is not a number");
    ret[i] = json_number_value(v);
  }
  return 0;
}

static int get_scores(const struct json_fields *r, json_t *o, struct pflex_scores *s) {
  if (!json_is_object(o)) return bad(r, "cv", "missing scores");
  int err = get_num(r, o, "r2", true, &s->r2);
  if (!err) err = get_num(r, o, "rmse", true, &s->rmse);
  if (!err) err = get_num(r, o, "rho", true, &s->rho);
  return err;
}

static char *dup_str(json_t *v) {
  return json_is_string(v) ? strdup(json_string_value(v)) : NULL;
}

/* "target": how the training targets were computed; absent: the paper's rule
 * (pflex_model_init). */
static int read_target(const struct json_fields *r, json_t *tg, struct pflex_model *m) {
  if (!json_is_object(tg)) return 0;
  struct pflex_pfi_opts o = m->target;
  json_t *d = json_object_get(tg, "definition"), *e = json_object_get(tg, "exclude");
  if (!json_is_string(d) || pflex_pfi_definition_parse(json_string_value(d), &o.definition))
    return bad(r, "definition", "missing, or not ratio, area or elasticity");
  if (!json_is_string(e) || pflex_pfi_exclude_parse(json_string_value(e), &o.exclude))
    return bad(r, "exclude", "missing, or not noise or paper");
  int err = get_num(r, tg, "noise_k", false, &o.noise_k);
  if (!err) err = get_num(r, tg, "power_cv", false, &o.power_cv);
  if (!err) err = get_num(r, tg, "tput_cv", false, &o.tput_cv);
  if (err) return err;
  json_t *g = json_object_get(tg, "grid");
  double grid[64];
  o.grid = NULL;
  o.ngrid = 0;
  if (json_is_array(g)) {
    size_t ng = json_array_size(g);
    if (ng == 0 || ng > 64) return bad(r, "grid", "not a list of 1 to 64 caps");
    err = get_array(r, tg, "grid", ng, grid);
    if (err) return err;
    o.grid = grid;
    o.ngrid = ng;
  } else if (g && !json_is_null(g)) {
    return bad(r, "grid", "not a list of caps");
  }
  return pflex_model_set_target(m, &o);
}

/* "features": the names of the model's inputs, in order. */
static int read_features(const struct json_fields *r, json_t *feats, struct pflex_model *m) {
  if (!json_is_array(feats)) return bad(r, "features", "missing or not an array");
  for (size_t j = 0; j < json_array_size(feats); j++) {
    json_t *f = json_array_get(feats, j);
    if (!json_is_string(f) || !*json_string_value(f))
      return bad(r, "features", "holds a value that is not a name");
    int err = pflex_featlist_add(&m->feats, json_string_value(f));
    if (err) return err;
  }
  return 0;
}

/* An OLS or ridge model's line: intercept, coefficients, standardization, lambda. */
static int read_linear(const struct json_fields *r, json_t *root, struct pflex_model *m) {
  struct pflex_linmodel *l = &m->lin;
  size_t p = m->feats.n, pa = p ? p : 1;
  l->p = p;
  l->coef = calloc(pa, sizeof *l->coef);
  l->mean = calloc(pa, sizeof *l->mean);
  l->sd = calloc(pa, sizeof *l->sd);
  l->beta_std = calloc(pa, sizeof *l->beta_std);
  if (!l->coef || !l->mean || !l->sd || !l->beta_std) return -ENOMEM;
  int err = get_num(r, root, "intercept", false, &l->intercept);
  if (!err) err = get_array(r, root, "coefficients", p, l->coef);
  json_t *st = json_object_get(root, "standardization");
  if (!err && json_is_object(st)) {
    err = get_array(r, st, "mean", p, l->mean);
    if (!err) err = get_array(r, st, "sd", p, l->sd);
    if (!err) err = get_array(r, st, "coefficients", p, l->beta_std);
  }
  if (err || m->kind != PFLEX_MODEL_RIDGE) return err;
  err = get_num(r, root, "lambda", false, &l->lambda);
  if (err) return err;
  json_t *v = json_object_get(root, "lambda_selection");
  m->lambda_chosen = json_is_string(v) && strcmp(json_string_value(v), "nested-loo") == 0;
  return 0;
}

/* "prior": the population mean and the arch x task cells. */
static int read_prior(const struct json_fields *r, json_t *prior, struct pflex_model *m) {
  if (!json_is_object(prior)) return bad(r, "prior", "missing");
  int err = get_num(r, prior, "mean", false, &m->prior_mean);
  if (err) return err;
  json_t *cells = json_object_get(prior, "cells");
  if (!json_is_array(cells) || json_array_size(cells) > 4)
    return bad(r, "cells", "missing or more than 4 arch x task cells");
  for (size_t k = 0; k < json_array_size(cells); k++) {
    json_t *c = json_array_get(cells, k);
    struct pflex_prior_cell *pc = &m->prior[k];
    json_t *a = json_object_get(c, "arch"), *t = json_object_get(c, "task"),
           *n = json_object_get(c, "n");
    if (!json_is_string(a) || pflex_arch_parse(json_string_value(a), &pc->arch) ||
        !json_is_string(t) || pflex_task_parse(json_string_value(t), &pc->task) ||
        !json_is_integer(n) || json_integer_value(n) < 1)
      return bad(r, "cells", "a cell needs arch (dense|moe), task (pt|ft) and n >= 1");
    pc->n = (size_t)json_integer_value(n);
    err = get_num(r, c, "mean", false, &pc->mean);
    if (err) return err;
    m->nprior++;
  }
  return 0;
}

/* "training": the summary is informative only; read what is there. */
static int read_training(const struct json_fields *r, json_t *tr, struct pflex_model *m) {
  if (!json_is_object(tr)) return 0;
  m->source = dup_str(json_object_get(tr, "file"));
  m->set_filter = dup_str(json_object_get(tr, "set"));
  double r2;
  if (get_num(r, tr, "r2_in", true, &r2) == 0) m->r2_in = r2;
  json_t *gs = json_object_get(tr, "groups");
  size_t ng = json_is_array(gs) ? json_array_size(gs) : 0;
  if (!ng) return 0;
  m->groups = calloc(ng, sizeof *m->groups);
  if (!m->groups) return -ENOMEM;
  for (size_t i = 0; i < ng; i++) {
    json_t *g = json_array_get(gs, i);
    struct pflex_model_group *mg = &m->groups[i];
    m->n = i + 1;
    mg->group = dup_str(json_object_get(g, "group"));
    mg->cluster = dup_str(json_object_get(g, "cluster"));
    if (!mg->group || !mg->cluster) return bad(r, "groups", "a group needs group and cluster");
    int err = get_num(r, g, "pfi", true, &mg->pfi);
    if (!err) err = get_num(r, g, "fitted", true, &mg->fitted);
    if (!err) err = get_num(r, g, "loo", true, &mg->loo);
    if (!err) err = get_num(r, g, "loco", true, &mg->loco);
    if (err) return err;
  }
  return 0;
}

/* "cv": the cross-validated scores, when there. */
static int read_cv(const struct json_fields *r, json_t *cv, struct pflex_model *m) {
  if (!json_is_object(cv)) return 0;
  int err = get_scores(r, json_object_get(cv, "loo"), &m->loo);
  if (!err) err = get_scores(r, json_object_get(cv, "loco"), &m->loco);
  if (err) return err;
  json_t *v = json_object_get(json_object_get(cv, "loco"), "clusters");
  if (json_is_string(v)) pflex_loco_parse(json_string_value(v), &m->loco_scheme);
  return 0;
}

static int read_root(const struct json_fields *r, json_t *root, struct pflex_model *m) {
  if (!json_is_object(root)) return bad(r, "", "not a JSON object");
  json_t *v = json_object_get(root, "format");
  if (!json_is_integer(v) || json_integer_value(v) != PFLEX_MODEL_FORMAT)
    return bad(r, "format", "missing, or a model format this pflex does not read");
  v = json_object_get(root, "kind");
  if (!json_is_string(v) || pflex_model_kind_parse(json_string_value(v), &m->kind))
    return bad(r, "kind", "missing, or not ols, ridge or prior");
  m->version = dup_str(json_object_get(root, "pflex_version"));
  /* Absent in files written before provenance: unknown. */
  v = json_object_get(root, "provenance");
  if (v && (!json_is_string(v) || pflex_provenance_parse(json_string_value(v), &m->provenance)))
    return bad(r, "provenance", "not unknown, measured, simulated or reconstructed");
  int err = read_target(r, json_object_get(root, "target"), m);
  if (!err) err = read_features(r, json_object_get(root, "features"), m);
  if (err) return err;
  if (m->kind != PFLEX_MODEL_PRIOR)
    err = read_linear(r, root, m);
  else if (m->feats.n != 0)
    err = bad(r, "features", "a prior model has no features");
  if (!err) err = read_prior(r, json_object_get(root, "prior"), m);
  if (!err) err = read_training(r, json_object_get(root, "training"), m);
  if (!err) err = read_cv(r, json_object_get(root, "cv"), m);
  return err;
}

static int from_json(json_t *root, const char *file, struct pflex_model *ret,
                     struct pflex_diag *diag) {
  struct pflex_model m;
  pflex_model_init(&m);
  struct json_fields r = {.file = file ? file : "", .diag = diag, .data_err = -PFLEX_E_PARSE};
  int err = read_root(&r, root, &m);
  if (err) {
    pflex_model_release(&m);
    return pflex__json_said(diag, err);
  }
  *ret = m;
  return 0;
}

int pflex_model_from_json(const char *text, const char *file, struct pflex_model *ret,
                          struct pflex_diag *diag) {
  json_error_t je;
  json_t *root = json_loads(text, 0, &je);
  if (!root)
    return pflex_diag_set(diag, -PFLEX_E_PARSE, file ? file : "",
                          (size_t)(je.line > 0 ? je.line : 0), "", "not JSON: %s", je.text);
  int err = from_json(root, file, ret, diag);
  json_decref(root);
  return err;
}

int pflex_model_read_json(const char *path, struct pflex_model *ret, struct pflex_diag *diag) {
  struct stat sb;
  if (path && stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) /* jansson would say "not JSON" */
    return pflex_diag_set(diag, -EISDIR, path, 0, "",
                          "is a directory, not a model file (pflex "
                          "fit --out FILE writes one)");
  json_error_t je;
  json_t *root = json_load_file(path, 0, &je);
  if (!root) {
    FILE *f = fopen(path, "r");
    if (!f) return pflex_diag_set(diag, -errno, path, 0, "", "%s", strerror(errno));
    fclose(f);
    return pflex_diag_set(diag, -PFLEX_E_PARSE, path, (size_t)(je.line > 0 ? je.line : 0), "",
                          "not JSON: %s", je.text);
  }
  int err = from_json(root, path, ret, diag);
  json_decref(root);
  return err;
}
