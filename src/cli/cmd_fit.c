/* `pflex fit`: fits a PFI predictor on the sweep groups of a runs file and
 * writes the model file (docs/prediction.md). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/pfi_args.h"
#include "cli/predict_common.h"
#include "cli/util.h"
#include "pflex/model_json.h"
#include "pflex/predict.h"

static const char usage[] =
    "pflex fit RUNS.csv [options]\n"
    "  --features LIST   comma-separated features (default dram_copy): dram_copy, "
    "arith_intensity,\n"
    "                    arch_moe, task_ft, log_gpus, any telemetry column; 'meta' = arch_moe,\n"
    "                    task_ft,log_gpus; 'dcgm' = every numeric telemetry column\n"
    "  --model KIND      ols (default), ridge (lambda by nested leave-one-out), or prior\n"
    "                    (mean PFI per arch x task, for jobs without telemetry)\n"
    "  --lambda L        ridge: use this penalty instead of choosing it\n"
    "  --set NAME        use only runs whose set column is NAME (e.g. headline)\n"
    "  --loco SCHEME     clusters for leave-one-cluster-out: arch-task (default) or "
    "pooled-dense\n" PC_PFI_USAGE "  --out FILE        write the model file (JSON) to FILE\n"
    "  --json            print the model file to stdout instead of the summary";

static void print_summary(const struct pflex_model *m, const struct pflex_dataset *d) {
  printf("model: %s, %zu feature%s, fitted on %zu groups", pflex_model_kind_name(m->kind),
         m->feats.n, m->feats.n == 1 ? "" : "s", m->n);
  if (m->set_filter) printf(" (set %s)", m->set_filter);
  printf("\n");
  pc_target_line(stdout, &m->target);
  if (m->kind == PFLEX_MODEL_PRIOR) {
    printf("prior: overall mean PFI %.3f\n", m->prior_mean);
    for (size_t k = 0; k < m->nprior; k++)
      printf("  %-9s n=%-3zu mean %.3f\n",
             pflex_cluster_name(m->prior[k].arch, m->prior[k].task, PFLEX_LOCO_ARCH_TASK),
             m->prior[k].n, m->prior[k].mean);
  } else {
    printf("  %-24s %12.6g\n", "intercept", m->lin.intercept);
    for (size_t j = 0; j < m->feats.n; j++)
      printf("  %-24s %12.6g  (standardized %.4g)\n", m->feats.names[j], m->lin.coef[j],
             m->lin.beta_std[j]);
    if (m->kind == PFLEX_MODEL_RIDGE)
      printf("  lambda %.4g (%s)\n", m->lin.lambda,
             m->lambda_chosen ? "chosen by leave-one-out on the grid 1e-3..1e4" : "given");
  }
  printf("in-sample R^2 ");
  pc_num(stdout, 0, m->r2_in);
  printf("\nLOO:  ");
  pc_scores(stdout, &m->loo);
  printf("\nLOCO: ");
  pc_scores(stdout, &m->loco);
  printf("  (clusters %s)\n\n", pflex_loco_name(m->loco_scheme));
  printf("%-44s %-9s %7s %7s %7s %7s\n", "group", "cluster", "pfi", "fitted", "loo", "loco");
  for (size_t i = 0; i < m->n; i++) {
    const struct pflex_model_group *g = &m->groups[i];
    printf("%-44s %-9s", g->group, g->cluster);
    pc_num(stdout, 8, g->pfi);
    pc_num(stdout, 8, g->fitted);
    pc_num(stdout, 8, g->loo);
    pc_num(stdout, 8, g->loco);
    printf("\n");
  }
  (void)d;
}

static int run(int argc, char **argv) {
  static const struct option opts[] = {{"features", required_argument, NULL, 'f'},
                                       {"model", required_argument, NULL, 'm'},
                                       {"lambda", required_argument, NULL, 'l'},
                                       {"set", required_argument, NULL, 's'},
                                       {"loco", required_argument, NULL, 'c'},
                                       {"out", required_argument, NULL, 'o'},
                                       {"json", no_argument, NULL, 'j'},
                                       PFI_LONG_OPTIONS,
                                       {NULL, 0, NULL, 0}};
  const char *features = "dram_copy", *set_filter = NULL, *out = NULL;
  struct pflex_fit_opts fo = {.kind = PFLEX_MODEL_OLS, .lambda = -1};
  enum pflex_loco loco = PFLEX_LOCO_ARCH_TASK;
  struct cli_pfi_args pa;
  cli_pfi_args_init(&pa);
  bool json = false, features_given = false;
  int rc = PFLEX_EXIT_USAGE, err;
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
    case 'f':
      features = optarg;
      features_given = true;
      break;
    case 'm':
      if (pflex_model_kind_parse(optarg, &fo.kind)) {
        cli_error("unknown model '%s' (ols, ridge or prior)", optarg);
        goto early;
      }
      break;
    case 'l':
      if (cli_parse_double("--lambda", optarg, 0, INFINITY, &fo.lambda)) goto early;
      break;
    case 's': set_filter = optarg; break;
    case 'c':
      if (pflex_loco_parse(optarg, &loco)) {
        cli_error("unknown --loco '%s' (arch-task or pooled-dense)", optarg);
        goto early;
      }
      break;
    case 'o': out = optarg; break;
    case 'j': json = true; break;
    default:
      err = c == '?' ? 1 : pc_pfi_option(&pa, c, optarg);
      if (err == 1) fprintf(stderr, "usage: %s\n", usage);
      if (err) goto early;
    }
  }
  if (optind != argc - 1) {
    fprintf(stderr, "usage: %s\n", usage);
    goto early;
  }
  if (fo.kind == PFLEX_MODEL_PRIOR && features_given) {
    cli_error("a prior model uses no features: drop --features");
    goto early;
  }
  if (fo.kind != PFLEX_MODEL_RIDGE && fo.lambda >= 0) {
    cli_error("--lambda is for --model ridge");
    goto early;
  }
  pa.opts.draws = 0;
  const char *path = argv[optind];
  struct pflex_runset set;
  pflex_runset_init(&set);
  struct pflex_dataset d;
  pflex_dataset_init(&d);
  struct pflex_model m;
  pflex_model_init(&m);
  rc = PFLEX_EXIT_FAIL;
  if (cli_load_runs(path, &pa.read, &set)) goto out;
  if (fo.kind == PFLEX_MODEL_PRIOR) {
    struct pflex_featlist none;
    struct pflex_diag diag;
    pflex_diag_clear(&diag);
    pflex_featlist_init(&none);
    err = pflex_dataset_build(&set, set_filter, &none, &pa.opts, true, &d, &diag);
    if (err) cli_error_diag("cannot use", &diag, err);
  } else {
    err = pc_dataset(&set, set_filter, features, &pa.opts, true, &d);
  }
  if (err) goto out;
  err = pflex_model_fit(&d, &fo, loco, &m);
  if (err) {
    cli_error("cannot fit on '%s': %s%s", path, pflex_strerror(err),
              err == -PFLEX_E_NOPOINTS ? " (at least 3 groups with a PFI are needed)" : "");
    goto out;
  }
  if (pflex_model_set_target(&m, &pa.opts)) {
    cli_error("out of memory");
    goto out;
  }
  m.source = strdup(path);
  m.set_filter = set_filter ? strdup(set_filter) : NULL;
  m.version = strdup(PFLEX_VERSION);
  if (!m.source || !m.version || (set_filter && !m.set_filter)) {
    cli_error("out of memory");
    goto out;
  }
  if (out) {
    err = pflex_model_write_json(&m, out);
    if (err) {
      cli_error("cannot write '%s': %s", out, pflex_strerror(err));
      goto out;
    }
  }
  if (json) {
    char *s;
    err = pflex_model_to_json(&m, &s);
    if (err) {
      cli_error("%s", pflex_strerror(err));
      goto out;
    }
    printf("%s\n", s);
    free(s);
  } else {
    print_summary(&m, &d);
    if (out) printf("\nmodel written to '%s'\n", out);
  }
  rc = PFLEX_EXIT_OK;
out:
  pflex_model_release(&m);
  pflex_dataset_release(&d);
  pflex_runset_release(&set);
early:
  cli_pfi_args_release(&pa);
  return rc;
}

const struct pflex_cmd pflex_cmd_fit = {
    .name = "fit",
    .run = run,
    .summary = "fit a PFI predictor on sweep groups and write a model file",
    .usage = usage,
};
