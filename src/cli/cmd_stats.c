/* `pflex stats RUNS.csv`: each sweep group's PFI, then the paper's Tables 10
 * and 11: groups pooled by architecture x task (dense PT and FT together),
 * their medians and means, the Kruskal-Wallis test and Dunn's pairwise test
 * with Holm's correction (docs/pfi.md). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/commands.h"
#include "cli/pfi_args.h"
#include "cli/reference_notes.h"
#include "cli/util.h"
#include "pflex/parallel.h"
#include "pflex/runs_provenance.h"
#include "pflex/stats.h"

struct args {
  struct cli_pfi_args pfi;
  bool json;
  unsigned threads;
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
    {CLI_COUNT("threads", "N", struct args, threads, 0, CLI_THREADS_MAX, CLI_THREADS_HELP)},
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

/* One stats run: each group's cluster and PFI, and the clusters compared. */
struct stats {
  const struct pflex_runset *set;
  const struct pflex_pfi_opts *opts;
  struct pflex_group *groups;
  size_t ng;
  int *cl;                    /* each group's cluster */
  struct cli_pfi_value *vals; /* each group's PFI */
  struct pflex_stats_compare cmp;
  unsigned threads;
};

/* The PFI of group i (on a worker thread: prints nothing). */
static int group_pfi(void *ctx, unsigned worker, size_t i) {
  (void)worker;
  struct stats *st = ctx;
  return cli_pfi_value_compute(st->set, &st->groups[i], st->opts, &st->vals[i]);
}

/* Why group i has no PFI and which runs the rules left out; -1. */
static int no_pfi(const struct stats *st, size_t i) {
  const struct cli_pfi_value *v = &st->vals[i];
  char what[256];
  cli_error("stats: group '%s' has no PFI: %s", st->groups[i].name, v->why);
  for (size_t k = 0; k < v->n; k++)
    if (v->runs[k].role == PFLEX_PFI_EXCLUDED && v->runs[k].reason != PFLEX_PFI_REASON_GRID) {
      cli_pfi_reason_text(&v->runs[k], st->opts, what, sizeof what);
      fprintf(stderr, "  %g W: %s\n", v->runs[k].cap_w, what);
    }
  return -1;
}

/* Compares the clusters' PFIs (pfi: room for every group's value). */
static int compare_clusters(struct stats *st, double *pfi) {
  const double *cv[NCL];
  size_t cn[NCL], off = 0;
  for (int j = 0; j < NCL; j++) {
    cv[j] = pfi + off;
    cn[j] = 0;
    for (size_t i = 0; i < st->ng; i++)
      if (st->cl[i] == j) pfi[off + cn[j]++] = st->vals[i].res.pfi;
    off += cn[j];
  }
  int err = pflex_stats_compare_groups(cv, cn, NCL, &st->cmp);
  if (err) cli_error("stats: cannot compare the clusters: %s", pflex_strerror(err));
  return err;
}

/* Every group's cluster, then its PFI, then the comparison; -1 after printing why not. */
static int compute(struct stats *st) {
  double *pfi = NULL;
  if (pflex_runset_groups(st->set, &st->groups, &st->ng) ||
      !(st->vals = calloc(st->ng, sizeof *st->vals)) ||
      !(st->cl = calloc(st->ng, sizeof *st->cl)) ||
      !(pfi = malloc((st->ng ? st->ng : 1) * sizeof *pfi))) {
    cli_error("stats: out of memory");
    return -1;
  }
  int err = 0;
  for (size_t i = 0; !err && i < st->ng; i++)
    if ((st->cl[i] = group_cluster(st->set, &st->groups[i])) < 0) err = -1;
  /* The groups' PFIs on the threads; the first group without one (the one
   * a loop would stop at) said here, in order. */
  if (!err && pflex_parallel_for(st->ng, st->threads, group_pfi, st, NULL))
    for (size_t i = 0; !err && i < st->ng; i++)
      if (st->vals[i].err) err = no_pfi(st, i);
  if (!err) err = compare_clusters(st, pfi);
  free(pfi);
  return err ? -1 : 0;
}

static void release(struct stats *st) {
  for (size_t i = 0; st->vals && i < st->ng; i++)
    cli_pfi_value_release(&st->vals[i]);
  free(st->vals);
  free(st->cl);
  pflex_groups_free(st->groups, st->ng);
}

static const char *pair_name(const struct stats *st, size_t q, bool b) {
  const struct pflex_dunn_pair *d = &st->cmp.pairs[q];
  return cl_name[st->cmp.which[b ? d->b : d->a]];
}

static json_t *json_groups(const struct stats *st) {
  json_t *pg = json_array();
  for (size_t i = 0; i < st->ng; i++) {
    const struct pflex_run *r = &st->set->runs[st->groups[i].uncapped];
    json_t *o = json_pack("{s:s, s:s, s:i, s:s, s:s, s:s}", "group", st->groups[i].name, "gpu",
                          r->gpu, "gpus", r->gpus, "arch", pflex_arch_name(r->arch), "task",
                          pflex_task_name(r->task), "cluster", cl_name[st->cl[i]]);
    cli_pfi_value_json(o, "", &st->vals[i]);
    cli_reference_note_json(o, st->set, &st->groups[i]);
    cli_json_provenance(o, pflex_runs_provenance(st->set, st->groups[i].runs, st->groups[i].n));
    json_array_append_new(pg, o);
  }
  return pg;
}

static int print_json(const struct stats *st) {
  const struct pflex_stats_compare *c = &st->cmp;
  json_t *root = json_object(), *cg = json_array(), *dn = json_array();
  for (size_t q = 0; q < c->k; q++)
    json_array_append_new(cg, json_pack("{s:s, s:I, s:f, s:f}", "name", cl_name[c->which[q]], "n",
                                        (json_int_t)c->n[q], "median", c->median[q], "mean",
                                        c->mean[q]));
  for (size_t q = 0; !c->dunn_err && q < c->npairs; q++)
    json_array_append_new(dn, json_pack("{s:s, s:s, s:f, s:f, s:f}", "a", pair_name(st, q, false),
                                        "b", pair_name(st, q, true), "z", c->pairs[q].z, "p_raw",
                                        c->pairs[q].p_raw, "p_holm", c->pairs[q].p_holm));
  const struct pflex_kruskal *kw = &c->kruskal;
  json_object_set_new(root, "definition",
                      json_string(pflex_pfi_definition_name(st->opts->definition)));
  json_object_set_new(root, "exclude", json_string(pflex_pfi_exclude_name(st->opts->exclude)));
  cli_json_provenance(root, pflex_runs_provenance(st->set, NULL, 0));
  json_object_set_new(root, "pfi", json_groups(st));
  json_object_set_new(root, "groups", cg);
  json_object_set_new(root, "kruskal",
                      c->kruskal_err ? json_null()
                                     : json_pack("{s:f, s:f, s:f, s:i, s:f, s:I}", "h", kw->h,
                                                 "h_raw", kw->h_raw, "tie_factor", kw->tie_factor,
                                                 "df", kw->df, "p", kw->p, "n", (json_int_t)kw->n));
  json_object_set_new(root, "dunn", dn);
  return cli_print_json(root, JSON_REAL_PRECISION(10)) ? PFLEX_EXIT_FAIL : PFLEX_EXIT_OK;
}

/* Each group's cluster, PFI and CI, then the notes on the runs left out. */
static void print_groups(const struct stats *st) {
  int w = 5;
  for (size_t i = 0; i < st->ng; i++)
    if ((int)strlen(st->groups[i].name) > w) w = (int)strlen(st->groups[i].name);
  printf("%-*s  %-7s %4s %7s  %s\n", w, "group", "cluster", "runs", "PFI", "95% CI");
  for (size_t i = 0; i < st->ng; i++) {
    const struct pflex_pfi_result *r = &st->vals[i].res;
    printf("%-*s  %-7s %4zu %7.3f  ", w, st->groups[i].name, cl_name[st->cl[i]], r->runs_used,
           r->pfi);
    char ci[64] = "-";
    if (r->have_ci) cli_fmt_interval(ci, sizeof ci, r->ci_low, r->ci_high);
    printf("%s\n", ci);
  }
  for (size_t i = 0; i < st->ng; i++) /* only a CI on fewer draws than asked for: no group failed */
    cli_pfi_value_notes(stdout, st->groups[i].name, &st->vals[i], st->opts, "", false);
  printf("\n(definition %s, exclusion rule %s)\n", pflex_pfi_definition_name(st->opts->definition),
         pflex_pfi_exclude_name(st->opts->exclude));
  cli_print_provenance(stdout, pflex_runs_provenance(st->set, NULL, 0));
  printf("\n");
}

/* The clusters' medians and means, Kruskal-Wallis and Dunn's pairs. */
static void print_tests(const struct stats *st) {
  const struct pflex_stats_compare *c = &st->cmp;
  printf("%-18s %4s %11s %9s\n", "cluster", "n", "median PFI", "mean PFI");
  for (size_t q = 0; q < c->k; q++)
    printf("%-18s %4zu %11.3f %9.3f\n", cl_label[c->which[q]], c->n[q], c->median[q], c->mean[q]);
  if (c->kruskal_err) {
    printf("\nno Kruskal-Wallis test: %s\n", c->k < 2           ? "fewer than two clusters"
                                             : c->total <= c->k ? "too few groups"
                                                                : "every PFI is tied");
    return;
  }
  const struct pflex_kruskal *kw = &c->kruskal;
  printf("\nKruskal-Wallis H = %.3f (tie-corrected; %.3f uncorrected), df = %d, p = %.4f\n", kw->h,
         kw->h_raw, kw->df, kw->p);
  printf("Dunn's test, Holm correction (m = %zu):\n", c->npairs);
  printf("%-20s %8s %8s %8s\n", "pair", "z", "p_raw", "p_holm");
  for (size_t q = 0; !c->dunn_err && q < c->npairs; q++) {
    char pair[48];
    snprintf(pair, sizeof pair, "%s vs %s", pair_name(st, q, false), pair_name(st, q, true));
    printf("%-20s %8.3f %8.4f %8.4f\n", pair, c->pairs[q].z, c->pairs[q].p_raw, c->pairs[q].p_holm);
  }
}

static int run(int argc, char **argv) {
  struct args args = {.threads = CLI_THREADS_UNSET};
  cli_pfi_args_init(&args.pfi);
  struct cli_parsed p;
  int err = cli_parse(&spec, argc, argv, &args, &p);
  if (err) {
    cli_release(&spec, &args);
    return cli_parse_status(err);
  }
  cli_pfi_args_finish(&args.pfi);
  struct pflex_runset set;
  pflex_runset_init(&set);
  struct stats st = {.set = &set, .opts = &args.pfi.opts, .threads = cli_threads(args.threads)};
  int status = PFLEX_EXIT_FAIL;
  if (!cli_load_runs(p.operands[0], &args.pfi.read, &set) && !compute(&st)) {
    if (args.json) {
      status = print_json(&st);
    } else {
      print_groups(&st);
      print_tests(&st);
      status = PFLEX_EXIT_OK;
    }
  }
  release(&st);
  pflex_runset_release(&set);
  cli_release(&spec, &args);
  return status;
}

const struct pflex_cmd pflex_cmd_stats = {
    .name = "stats",
    .run = run,
    .summary = "PFI by cluster (dense, MoE PT, MoE FT): Kruskal-Wallis and Dunn (Tables 10-11)",
    .specs = (const struct cli_spec *const[]){&spec, NULL}};
