/* `pflex stats RUNS.csv`: each sweep group's PFI, then the paper's Tables 10
 * and 11: groups pooled by architecture x task (dense PT and FT together),
 * their medians and means, the Kruskal-Wallis test and Dunn's pairwise test
 * with Holm's correction (docs/pfi.md). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <jansson.h>

#include "cli/commands.h"
#include "cli/pfi_args.h"
#include "cli/util.h"
#include "pflex/stats.h"

struct args {
  struct cli_pfi_args pfi;
  bool json;
};

static const struct cli_option options[] = {
    {CLI_LIST("grid", "LIST", struct args, pfi.grid, 0, INFINITY,
              "compute each PFI on this sub-grid of caps (the uncapped run kept)"),
     .flags = CLI_OPEN_MIN, .expect = "a list of caps in W (e.g. 200,500,600,700)"},
    {CLI_INCLUDE(struct args, pfi, cli_pfi_target_options)},
    {CLI_INCLUDE(struct args, pfi, cli_pfi_ci_options)},
    {CLI_INCLUDE(struct args, pfi, cli_pfi_set_option)},
    {CLI_INCLUDE(struct args, pfi, cli_pfi_read_options)},
    {CLI_FLAG("json", struct args, json, "JSON object: pfi (per group), groups, kruskal, dunn")},
    {CLI_END}};

static const struct cli_spec spec = {
    .name = "stats",
    .usage = "pflex stats RUNS.csv [options]",
    .about = "Computes each group's PFI and compares the clusters dense (PT + FT pooled), MoE PT "
             "and MoE FT, as the paper's Tables 10 and 11: n, median and mean PFI per cluster, "
             "Kruskal-Wallis H (tie-corrected) with its chi-square p, Dunn's z per pair with raw "
             "and Holm p. Every group needs arch (dense|moe) and task (pt|ft) columns.",
    .options = options,
    .operands = "RUNS.csv",
    .min_operands = 1,
    .max_operands = 1};

enum { CL_DENSE, CL_MOE_PT, CL_MOE_FT, NCL };
static const char *const cl_name[NCL] = {"dense", "moe-pt", "moe-ft"};
static const char *const cl_label[NCL] = {"Dense (PT + FT)", "MoE pretraining", "MoE fine-tuning"};

struct cluster {
  double *v;
  size_t n;
  double median, mean;
  size_t index; /* position among the non-empty clusters */
};

/* The cluster of group g, or -1 after printing why it has none. */
static int group_cluster(const struct pflex_runset *set, const struct pflex_group *g) {
  const struct pflex_run *r0 = &set->runs[g->runs[0]];
  for (size_t k = 1; k < g->n; k++) {
    const struct pflex_run *r = &set->runs[g->runs[k]];
    if (r->arch != r0->arch || r->task != r0->task) {
      cli_error("stats: group '%s' mixes arch or task values across its runs", g->name);
      return -1;
    }
  }
  if (r0->arch == PFLEX_ARCH_UNKNOWN || r0->task == PFLEX_TASK_UNKNOWN) {
    cli_error("stats: group '%s' has no %s; stats groups by arch (dense|moe) x task (pt|ft)",
              g->name, r0->arch == PFLEX_ARCH_UNKNOWN ? "arch" : "task");
    return -1;
  }
  if (r0->arch == PFLEX_ARCH_DENSE) return CL_DENSE;
  return r0->task == PFLEX_TASK_PT ? CL_MOE_PT : CL_MOE_FT;
}

static int run(int argc, char **argv) {
  struct args args = {0};
  cli_pfi_args_init(&args.pfi);
  struct cli_pfi_args a; /* the values parsed, once parsed */
  int status;
  struct pflex_runset set;
  struct pflex_group *groups = NULL;
  size_t ng = 0;
  struct cli_pfi_value *vals = NULL;
  int *cl = NULL;
  struct cluster clusters[NCL] = {0};
  json_t *root = NULL;
  pflex_runset_init(&set);
  struct cli_parsed p;
  int err = cli_parse(&spec, argc, argv, &args, &p);
  if (err) {
    status = cli_parse_status(err);
    goto out;
  }
  cli_pfi_args_finish(&args.pfi);
  a = args.pfi;
  bool json = args.json;
  gsl_set_error_handler_off();
  status = PFLEX_EXIT_FAIL;
  if (cli_load_runs(p.operands[0], &a.read, &set)) goto out;
  if (pflex_runset_groups(&set, &groups, &ng) || !(vals = calloc(ng, sizeof *vals)) ||
      !(cl = calloc(ng, sizeof *cl))) {
    cli_error("stats: out of memory");
    goto out;
  }
  for (size_t i = 0; i < ng; i++)
    if ((cl[i] = group_cluster(&set, &groups[i])) < 0) goto out;
  for (size_t i = 0; i < ng; i++) {
    if (cli_pfi_value_compute(&set, &groups[i], &a.opts, &vals[i])) {
      char what[256];
      cli_error("stats: group '%s' has no PFI: %s", groups[i].name, vals[i].why);
      for (size_t k = 0; k < vals[i].n; k++)
        if (vals[i].runs[k].role == PFLEX_PFI_EXCLUDED &&
            vals[i].runs[k].reason != PFLEX_PFI_REASON_GRID) {
          cli_pfi_reason_text(&vals[i].runs[k], &a.opts, what, sizeof what);
          fprintf(stderr, "  %g W: %s\n", vals[i].runs[k].cap_w, what);
        }
      goto out;
    }
    struct cluster *k = &clusters[cl[i]];
    double *nv = realloc(k->v, (k->n + 1) * sizeof *nv);
    if (!nv) goto out;
    k->v = nv;
    k->v[k->n++] = vals[i].res.pfi;
  }

  /* The non-empty clusters, in the paper's order. */
  const double *gv[NCL];
  size_t gn[NCL], nk = 0, total = 0;
  int which[NCL];
  for (int j = 0; j < NCL; j++) {
    if (!clusters[j].n) continue;
    pflex_stats_median_mean(clusters[j].v, clusters[j].n, &clusters[j].median, &clusters[j].mean);
    clusters[j].index = nk;
    gv[nk] = clusters[j].v;
    gn[nk] = clusters[j].n;
    which[nk++] = j;
    total += clusters[j].n;
  }
  struct pflex_kruskal kw;
  struct pflex_dunn_pair pairs[NCL * (NCL - 1) / 2];
  int kerr = nk >= 2 ? pflex_stats_kruskal(gv, gn, nk, &kw) : -EINVAL;
  int derr = kerr ? kerr : pflex_stats_dunn(gv, gn, nk, pairs);
  size_t np = nk * (nk - 1) / 2;
  const char *why_none = nk < 2        ? "fewer than two clusters"
                         : total <= nk ? "too few groups"
                                       : "every PFI is tied";

  if (json) {
    root = json_object();
    json_t *pg = json_array(), *cg = json_array(), *dn = json_array();
    for (size_t i = 0; i < ng; i++) {
      const struct pflex_run *r = &set.runs[groups[i].uncapped];
      json_t *o = json_pack("{s:s, s:s, s:i, s:s, s:s, s:s}", "group", groups[i].name, "gpu",
                            r->gpu, "gpus", r->gpus, "arch", pflex_arch_name(r->arch), "task",
                            pflex_task_name(r->task), "cluster", cl_name[cl[i]]);
      cli_pfi_value_json(o, "", &vals[i]);
      json_array_append_new(pg, o);
    }
    for (size_t q = 0; q < nk; q++) {
      const struct cluster *k = &clusters[which[q]];
      json_array_append_new(cg, json_pack("{s:s, s:i, s:f, s:f}", "name", cl_name[which[q]], "n",
                                          (json_int_t)k->n, "median", k->median, "mean", k->mean));
    }
    for (size_t q = 0; !derr && q < np; q++)
      json_array_append_new(dn,
                            json_pack("{s:s, s:s, s:f, s:f, s:f}", "a", cl_name[which[pairs[q].a]],
                                      "b", cl_name[which[pairs[q].b]], "z", pairs[q].z, "p_raw",
                                      pairs[q].p_raw, "p_holm", pairs[q].p_holm));
    json_object_set_new(root, "definition",
                        json_string(pflex_pfi_definition_name(a.opts.definition)));
    json_object_set_new(root, "exclude", json_string(pflex_pfi_exclude_name(a.opts.exclude)));
    json_object_set_new(root, "pfi", pg);
    json_object_set_new(root, "groups", cg);
    json_object_set_new(root, "kruskal",
                        kerr ? json_null()
                             : json_pack("{s:f, s:f, s:f, s:i, s:f, s:i}", "h", kw.h, "h_raw",
                                         kw.h_raw, "tie_factor", kw.tie_factor, "df", kw.df, "p",
                                         kw.p, "n", (json_int_t)kw.n));
    json_object_set_new(root, "dunn", dn);
    int jr = cli_print_json(root, JSON_REAL_PRECISION(10));
    root = NULL; /* cli_print_json dropped it */
    if (jr) goto out;
    status = PFLEX_EXIT_OK;
    goto out;
  }

  int w = 5;
  for (size_t i = 0; i < ng; i++)
    if ((int)strlen(groups[i].name) > w) w = (int)strlen(groups[i].name);
  printf("%-*s  %-7s %4s %7s  %s\n", w, "group", "cluster", "runs", "PFI", "95% CI");
  for (size_t i = 0; i < ng; i++) {
    const struct pflex_pfi_result *r = &vals[i].res;
    printf("%-*s  %-7s %4zu %7.3f  ", w, groups[i].name, cl_name[cl[i]], r->runs_used, r->pfi);
    if (r->have_ci)
      printf("%.3f-%.3f\n", r->ci_low, r->ci_high);
    else
      printf("-\n");
  }
  for (size_t i = 0; i < ng; i++) /* only a CI on fewer draws than asked for: no group failed */
    cli_pfi_value_notes(stdout, groups[i].name, &vals[i], &a.opts, "", false);
  printf("\n(definition %s, exclusion rule %s)\n\n", pflex_pfi_definition_name(a.opts.definition),
         pflex_pfi_exclude_name(a.opts.exclude));
  printf("%-18s %4s %11s %9s\n", "cluster", "n", "median PFI", "mean PFI");
  for (size_t q = 0; q < nk; q++) {
    const struct cluster *k = &clusters[which[q]];
    printf("%-18s %4zu %11.3f %9.3f\n", cl_label[which[q]], k->n, k->median, k->mean);
  }
  if (kerr) {
    printf("\nno Kruskal-Wallis test: %s\n", why_none);
  } else {
    printf("\nKruskal-Wallis H = %.3f (tie-corrected; %.3f uncorrected), df = %d, p = %.4f\n", kw.h,
           kw.h_raw, kw.df, kw.p);
    printf("Dunn's test, Holm correction (m = %zu):\n", np);
    printf("%-20s %8s %8s %8s\n", "pair", "z", "p_raw", "p_holm");
    for (size_t q = 0; !derr && q < np; q++) {
      char pair[48];
      snprintf(pair, sizeof pair, "%s vs %s", cl_name[which[pairs[q].a]],
               cl_name[which[pairs[q].b]]);
      printf("%-20s %8.3f %8.4f %8.4f\n", pair, pairs[q].z, pairs[q].p_raw, pairs[q].p_holm);
    }
  }
  status = PFLEX_EXIT_OK;
out:
  json_decref(root);
  for (size_t i = 0; vals && i < ng; i++)
    cli_pfi_value_release(&vals[i]);
  for (int j = 0; j < NCL; j++)
    free(clusters[j].v);
  free(vals);
  free(cl);
  pflex_groups_free(groups, ng);
  pflex_runset_release(&set);
  cli_release(&spec, &args);
  return status;
}

const struct pflex_cmd pflex_cmd_stats = {
    .name = "stats",
    .run = run,
    .summary = "PFI by cluster (dense, MoE PT, MoE FT): Kruskal-Wallis and Dunn (Tables 10-11)",
    .specs = (const struct cli_spec *const[]){&spec, NULL}};
