/* `pflex ablation`: the form of the paper's Table 3 on any runs file: the
 * seven predictor sets fitted by least squares (and ridge), scored in sample,
 * by leave-one-out and by leave-one-cluster-out (docs/prediction.md). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/commands.h"
#include "cli/pfi_args.h"
#include "cli/predict_common.h"
#include "cli/util.h"
#include "pflex/csv.h"
#include "pflex/predict.h"
#include "pflex/runs_provenance.h"

struct args {
  struct cli_pfi_args pfi;
  const char *set;
  enum pflex_loco loco;
  bool paper, json, csv;
};

#define A struct args
static const struct cli_option options[] = {
    {CLI_STRING("set", "NAME", A, set, "use only runs whose set column is NAME (e.g. headline)")},
    {CLI_ENUM_FN("loco", "SCHEME", A, loco, cli_loco_name,
                 "clusters for leave-one-cluster-out: arch-task (default) or pooled-dense")},
    {CLI_LIST("grid", "LIST", A, pfi.grid, 0, INFINITY,
              "compute the target PFI on these caps only (e.g. 200,500,600,700)"),
     .flags = CLI_OPEN_MIN, .expect = "a list of caps in W (e.g. 200,500,600,700)"},
    {CLI_INCLUDE(A, pfi, cli_pfi_target_options)},
    {CLI_INCLUDE(A, pfi, cli_pfi_read_options)},
    {CLI_FLAG("paper", A, paper, "show the paper's Table 3 values under each row (and in JSON)")},
    {CLI_FLAG("json", A, json, "JSON output")},
    {CLI_FLAG("csv", A, csv, "CSV output")},
    {CLI_END}};
#undef A

static const struct cli_spec spec = {
    .name = "ablation",
    .usage = "pflex ablation RUNS.csv [options]",
    .about = "The form of the paper's Table 3 on any runs file: the seven predictor sets fitted "
             "by least squares (and ridge), scored in sample, by leave-one-out and by "
             "leave-one-cluster-out (docs/prediction.md).",
    .options = options,
    .operands = "RUNS.csv",
    .min_operands = 1,
    .max_operands = 1,
    .exclusive = (const char *const[]){"json csv", NULL}};

/* The paper's seven predictor sets (Table 3), then the population prior. */
static const struct {
  const char *id, *label, *spec;
} sets[] = {
    {"i", "DRAM copy product", "dram_copy"},
    {"ii", "arithmetic intensity", "arith_intensity"},
    {"iii", "(i)+(ii)", "dram_copy,arith_intensity"},
    {"iv", "job metadata", "meta"},
    {"v", "(i)+(iv)", "dram_copy,meta"},
    {"vi", "all DCGM metrics", "dcgm"},
    {"vii", "all DCGM + metadata", "dcgm,meta"},
    {"prior", "prior: arch x task mean", NULL},
};
#define NSETS (sizeof sets / sizeof sets[0])

/* The paper's Table 3 (Colangelo et al., arXiv 2609.11542, section 5; restated
 * in paper.md): p, R2 in, LOO R2/RMSE/rho, LOCO R2/RMSE/rho for sets (i)-(vii),
 * OLS on the 25 headline H200 groups. Shown with --paper, never used to fit. */
static const double paper_table3[7][8] = {
    {1, 0.675, 0.524, 0.241, 0.489, 0.246, 0.303, 0.515},
    {1, 0.381, 0.238, 0.305, 0.482, -1.652, 0.569, 0.311},
    {2, 0.676, 0.462, 0.256, 0.435, -0.588, 0.440, 0.357},
    {3, 0.519, 0.310, 0.290, 0.377, -4.106, 0.789, 0.188},
    {4, 0.687, 0.350, 0.282, 0.386, -2.391, 0.643, 0.208},
    {13, 0.885, -0.187, 0.381, 0.323, -18.483, 1.542, 0.077},
    {16, 0.942, -0.010, 0.351, 0.412, -104, 3.572, -0.508},
};

struct result {
  char error[1024];
  size_t p;
  struct pflex_featlist feats;
  struct pflex_model ols, ridge;
  bool have_ridge;
};

static int evaluate(const struct pflex_runset *set, const char *filter, const char *features,
                    const struct pflex_pfi_opts *pfi, enum pflex_loco loco, struct result *r) {
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  struct pflex_featlist none;
  pflex_featlist_init(&none);
  struct pflex_dataset g, d;
  pflex_dataset_init(&d);
  int err = pflex_dataset_build(set, filter, &none, pfi, true, &g, &diag);
  if (!err && features) {
    err = pflex_featlist_parse(features, set, g.uncapped, g.n, &r->feats, &diag);
    pflex_dataset_release(&g);
    if (!err) err = pflex_dataset_build(set, filter, &r->feats, pfi, true, &d, &diag);
  } else if (!err) {
    d = g;
  }
  if (!err) {
    r->p = d.feats.n;
    struct pflex_fit_opts o = {.kind = features ? PFLEX_MODEL_OLS : PFLEX_MODEL_PRIOR,
                               .lambda = -1};
    err = pflex_model_fit(&d, &o, loco, &r->ols);
    if (!err && features) {
      o.kind = PFLEX_MODEL_RIDGE;
      err = pflex_model_fit(&d, &o, loco, &r->ridge);
      r->have_ridge = !err;
    }
    if (err) pflex_diag_set(&diag, err, "", 0, "", "cannot fit: %s", pflex_strerror(err));
  }
  pflex_dataset_release(&d);
  if (err) {
    if (diag.message[0])
      pflex_diag_format(&diag, r->error, sizeof r->error);
    else
      snprintf(r->error, sizeof r->error, "%s", pflex_strerror(err));
  }
  return err;
}

static json_t *jnum(double v) {
  return isfinite(v) ? json_real(v) : json_null();
}

static json_t *jscores(const struct pflex_scores *s) {
  return json_pack("{s:o, s:o, s:o}", "r2", jnum(s->r2), "rmse", jnum(s->rmse), "rho",
                   jnum(s->rho));
}

static json_t *jmodel(const struct pflex_model *m) {
  json_t *o = json_pack("{s:s, s:o, s:o, s:o}", "model", pflex_model_kind_name(m->kind), "r2_in",
                        jnum(m->r2_in), "loo", jscores(&m->loo), "loco", jscores(&m->loco));
  if (o && m->kind == PFLEX_MODEL_RIDGE) json_object_set_new(o, "lambda", jnum(m->lin.lambda));
  return o;
}

static void csv_scores(const struct pflex_model *m, bool have) {
  const double v[] = {m->r2_in,   m->loo.r2,    m->loo.rmse, m->loo.rho,
                      m->loco.r2, m->loco.rmse, m->loco.rho};
  for (size_t k = 0; k < 7; k++) {
    putchar(',');
    if (have && isfinite(v[k])) pflex_csv_write_double(stdout, v[k], 0);
  }
}

/* One ablation: the groups, their clusters and every set's result. */
struct ablation {
  const char *path, *filter;
  enum pflex_loco loco;
  bool paper;
  const struct pflex_pfi_opts *opts;
  struct pflex_dataset groups;
  struct pflex_clusters clusters;
  struct result res[NSETS];
  enum pflex_provenance provenance; /* of the runs */
};

/* Fits every predictor set; returns how many could be fitted. Failures are
 * kept in each result (and warned about when the output is a table). */
static size_t evaluate_sets(const struct pflex_runset *set, struct ablation *ab, bool warn) {
  size_t nok = 0;
  for (size_t s = 0; s < NSETS; s++) {
    struct result *r = &ab->res[s];
    memset(r, 0, sizeof *r);
    pflex_featlist_init(&r->feats);
    pflex_model_init(&r->ols);
    pflex_model_init(&r->ridge);
    if (evaluate(set, ab->filter, sets[s].spec, ab->opts, ab->loco, r) == 0)
      nok++;
    else if (warn)
      cli_warn("set (%s) %s: %s", sets[s].id, sets[s].label, r->error);
  }
  return nok;
}

static void release_sets(struct ablation *ab) {
  for (size_t s = 0; s < NSETS; s++) {
    pflex_featlist_release(&ab->res[s].feats);
    pflex_model_release(&ab->res[s].ols);
    pflex_model_release(&ab->res[s].ridge);
  }
}

/* The DCGM columns that set (vi) used. */
static const struct pflex_featlist *dcgm_columns(const struct ablation *ab) {
  return &ab->res[5].feats;
}

static json_t *json_paper_row(const double *t) {
  return json_pack("{s:i, s:f, s:{s:f, s:f, s:f}, s:{s:f, s:f, s:f}}", "p", (int)t[0], "r2_in",
                   t[1], "loo", "r2", t[2], "rmse", t[3], "rho", t[4], "loco", "r2", t[5], "rmse",
                   t[6], "rho", t[7]);
}

static json_t *json_names(const struct pflex_featlist *f) {
  json_t *a = json_array();
  for (size_t j = 0; j < f->n; j++)
    json_array_append_new(a, json_string(f->names[j]));
  return a;
}

static json_t *json_row(const struct ablation *ab, size_t s) {
  const struct result *r = &ab->res[s];
  json_t *row = json_pack("{s:s, s:s, s:o, s:I}", "id", sets[s].id, "label", sets[s].label,
                          "features", json_names(&r->feats), "p", (json_int_t)r->p);
  if (ab->paper && s < 7) json_object_set_new(row, "paper", json_paper_row(paper_table3[s]));
  if (r->error[0]) {
    json_object_set_new(row, "error", json_string(r->error));
  } else {
    json_object_set_new(row, sets[s].spec ? "ols" : "prior", jmodel(&r->ols));
    if (r->have_ridge) json_object_set_new(row, "ridge", jmodel(&r->ridge));
  }
  return row;
}

static int print_json(const struct ablation *ab) {
  json_t *rows = json_array(), *cl = json_array();
  for (size_t k = 0; k < ab->clusters.n; k++)
    json_array_append_new(cl, json_pack("{s:s, s:I}", "name", ab->clusters.name[k], "n",
                                        (json_int_t)ab->clusters.count[k]));
  for (size_t s = 0; s < NSETS; s++)
    json_array_append_new(rows, json_row(ab, s));
  json_t *root =
      json_pack("{s:s, s:o, s:I, s:s, s:o, s:o, s:s, s:o}", "runs", ab->path, "set",
                ab->filter ? json_string(ab->filter) : json_null(), "n", (json_int_t)ab->groups.n,
                "loco_clusters", pflex_loco_name(ab->loco), "clusters", cl, "dcgm_columns",
                json_names(dcgm_columns(ab)), "ridge_lambda",
                "nested: chosen in each fold by leave-one-out on 1e-3..1e4", "rows", rows);
  if (root && cli_json_provenance(root, ab->provenance)) json_decref(root), root = NULL;
  if (root)
    json_object_set_new(root, "target",
                        json_pack("{s:s, s:s, s:o}", "definition",
                                  pflex_pfi_definition_name(ab->opts->definition), "exclude",
                                  pflex_pfi_exclude_name(ab->opts->exclude), "noise_k",
                                  json_real(ab->opts->noise_k)));
  return cli_print_json(root, JSON_REAL_PRECISION(17)) ? PFLEX_EXIT_FAIL : PFLEX_EXIT_OK;
}

static void print_csv(const struct ablation *ab) {
  printf("id,label,p,r2_in,loo_r2,loo_rmse,loo_rho,loco_r2,loco_rmse,loco_rho,"
         "ridge_r2_in,ridge_loo_r2,ridge_loo_rmse,ridge_loo_rho,ridge_loco_r2,ridge_loco_rmse,"
         "ridge_loco_rho,ridge_lambda,error,provenance\n");
  for (size_t s = 0; s < NSETS; s++) {
    const struct result *r = &ab->res[s];
    printf("%s,", sets[s].id);
    pflex_csv_write_field(stdout, sets[s].label, 0);
    printf(",%zu", r->p);
    csv_scores(&r->ols, !r->error[0]);
    csv_scores(&r->ridge, r->have_ridge);
    printf(",");
    if (r->have_ridge) pflex_csv_write_double(stdout, r->ridge.lin.lambda, 0);
    printf(",");
    pflex_csv_write_field(stdout, r->error, 0);
    printf(",%s\n", pflex_provenance_name(ab->provenance));
  }
}

/* The seven numbers of a table row: R2 in | LOO R2, RMSE, rho | LOCO R2, RMSE, rho. */
static void table_scores(const double v[7]) {
  cli_num(stdout, 9, v[0]);
  printf(" |");
  cli_num(stdout, 10, v[1]);
  cli_num(stdout, 9, v[2]);
  cli_num(stdout, 8, v[3]);
  printf(" |");
  cli_num(stdout, 10, v[4]);
  cli_num(stdout, 9, v[5]);
  cli_num(stdout, 8, v[6]);
  printf(" |");
}

static void table_row(const struct ablation *ab, size_t s) {
  const struct result *r = &ab->res[s];
  char label[64];
  snprintf(label, sizeof label, "(%s) %s", sets[s].id, sets[s].label);
  if (!sets[s].spec) snprintf(label, sizeof label, "%s", sets[s].label);
  printf("%-28s %3zu", label, r->p);
  if (r->error[0]) {
    printf("  error (see above)\n");
    return;
  }
  const struct pflex_model *m = &r->ols;
  table_scores((const double[7]){m->r2_in, m->loo.r2, m->loo.rmse, m->loo.rho, m->loco.r2,
                                 m->loco.rmse, m->loco.rho});
  if (r->have_ridge) {
    cli_num(stdout, 11, r->ridge.loo.r2);
    cli_num(stdout, 11, r->ridge.loco.r2);
    printf(" %8.3g", r->ridge.lin.lambda);
  }
  printf("\n");
  if (ab->paper && s < 7) {
    const double *t = paper_table3[s];
    printf("%-28s %3.0f", "  paper", t[0]);
    table_scores(t + 1);
    printf("\n");
  }
}

static void print_table(const struct ablation *ab) {
  printf("PFI predictors on '%s'%s%s: %zu groups; OLS unless noted\n", ab->path,
         ab->filter ? ", set " : "", ab->filter ? ab->filter : "", ab->groups.n);
  cli_target_line(stdout, ab->opts);
  cli_print_provenance(stdout, ab->provenance);
  printf("LOCO clusters (%s):", pflex_loco_name(ab->loco));
  const struct pflex_clusters *cl = &ab->clusters;
  for (size_t k = 0; k < cl->n; k++)
    printf(" %s %zu%s", cl->name[k], cl->count[k], k + 1 < cl->n ? "," : "");
  const struct pflex_featlist *dcgm = dcgm_columns(ab);
  printf("\nDCGM columns (vi): ");
  for (size_t j = 0; j < dcgm->n; j++)
    printf("%s%s", j ? ", " : "", dcgm->names[j]);
  printf("%s\n\n", dcgm->n ? "" : "none");
  printf("%-28s %3s %8s | %-26s | %-26s | %-30s\n", "", "", "", "LOO", "LOCO", "ridge");
  printf("%-28s %3s %8s | %9s %8s %7s | %9s %8s %7s | %10s %10s %8s\n", "predictors", "p", "R2 in",
         "R2", "RMSE", "rho", "R2", "RMSE", "rho", "LOO R2", "LOCO R2", "lambda");
  for (size_t s = 0; s < NSETS; s++)
    table_row(ab, s);
  if (ab->paper)
    printf("\npaper: Table 3 of Colangelo et al. (arXiv 2609.11542), OLS on the 25 measured "
           "headline groups; compare only on that set.");
  printf("\nR2 out of sample = 1 - SSE/SST (SST about the mean of all groups' PFI); rho = "
         "Spearman.\nridge: lambda re-chosen in every fold by inner leave-one-out (for LOO, "
         "by the other groups' LOO errors on all groups, the held-out group's own left out); "
         "the lambda shown is the one chosen on all groups.\n");
}

/* Builds the groups (without features) and their clusters, for the header. */
static int build_groups(const struct pflex_runset *set, struct ablation *ab) {
  struct pflex_featlist none;
  pflex_featlist_init(&none);
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  int err = pflex_dataset_build(set, ab->filter, &none, ab->opts, true, &ab->groups, &diag);
  if (err) {
    cli_error_diag("cannot use", &diag, err);
    return err;
  }
  pflex_clusters_count(&ab->groups, ab->loco, &ab->clusters);
  return 0;
}

static int run(int argc, char **argv) {
  struct args args = {.loco = PFLEX_LOCO_ARCH_TASK};
  cli_pfi_args_init(&args.pfi);
  struct cli_parsed p;
  int err = cli_parse(&spec, argc, argv, &args, &p);
  if (err) {
    cli_release(&spec, &args);
    return cli_parse_status(err);
  }
  cli_pfi_args_finish(&args.pfi);
  args.pfi.opts.draws = 0;
  struct ablation ab = {.path = p.operands[0],
                        .filter = args.set,
                        .loco = args.loco,
                        .paper = args.paper,
                        .opts = &args.pfi.opts};
  struct pflex_runset set;
  pflex_runset_init(&set);
  if (cli_load_runs(ab.path, &args.pfi.read, &set)) {
    cli_release(&spec, &args);
    return PFLEX_EXIT_FAIL;
  }
  ab.provenance = pflex_runs_provenance(&set, NULL, 0);
  if (build_groups(&set, &ab)) {
    pflex_runset_release(&set);
    cli_release(&spec, &args);
    return PFLEX_EXIT_FAIL;
  }
  int rc = evaluate_sets(&set, &ab, !args.json && !args.csv) ? PFLEX_EXIT_OK : PFLEX_EXIT_FAIL;
  if (args.json) {
    if (print_json(&ab)) rc = PFLEX_EXIT_FAIL;
  } else if (args.csv) {
    print_csv(&ab);
  } else {
    print_table(&ab);
  }
  release_sets(&ab);
  pflex_dataset_release(&ab.groups);
  pflex_runset_release(&set);
  cli_release(&spec, &args);
  return rc;
}

const struct pflex_cmd pflex_cmd_ablation = {
    .name = "ablation",
    .run = run,
    .summary = "compare the paper's seven PFI predictor sets (Table 3) on a runs file",
    .specs = (const struct cli_spec *const[]){&spec, NULL},
};
