/* Unit tests of the study engine (src/core/study.c) on synthetic groups whose
 * measured curves are sampled from the parametric family. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pflex/error.h"
#include "pflex/jobs.h"
#include "pflex/runs.h"
#include "pflex/runs_csv.h"
#include "pflex/study.h"
#include "pflex/study_predict.h"
#include "study_groups.h"

#define NG 12
#define NEAR(a, b, tol) assert_true(fabs((a) - (b)) <= (tol))

struct fixture {
  struct pflex_study_group g[NG];
  struct pflex_curve *c[NG];
  double pfi_true[NG], pfi_bad[NG];
};

static int setup(void **state) {
  struct fixture *f = calloc(1, sizeof *f);
  for (int i = 0; i < NG; i++) {
    study_synthetic_group(i, &f->c[i], &f->g[i], &f->pfi_true[i]);
    f->pfi_bad[i] = 1.5; /* an uninformative prediction */
  }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fixture *f = *state;
  for (int i = 0; i < NG; i++)
    pflex_curve_free(f->c[i]);
  free(f);
  return 0;
}

static const double cuts[] = {0, 0.2, 0.3};

static void opts(struct pflex_study_opts *o) {
  pflex_study_opts_init(o);
  o->workloads = 30;
  o->jobs = 20;
  o->cuts = cuts;
  o->ncuts = 3;
  o->rounds = 2;
}

static const struct pflex_study_result *find(const struct pflex_study_result *r, size_t n, int sc,
                                             int st, int pred, unsigned round, double cut) {
  for (size_t i = 0; i < n; i++)
    if ((int)r[i].scenario == sc && (int)r[i].strategy == st && (int)r[i].prediction == pred &&
        r[i].round == round && r[i].cut == cut)
      return &r[i];
  fail_msg("no result for scenario %d strategy %d pred %d round %u cut %g", sc, st, pred, round,
           cut);
  return NULL;
}

/* The oracle recovers the whole gap and equal none, by definition; the
 * oracle is at least every strategy on every workload; a 0% cut has no gap. */
static void test_definitions_and_oracle(void **state) {
  struct fixture *f = *state;
  struct pflex_study_predset p[2] = {{.mode = PFLEX_PRED_TRUE, .pfi = f->pfi_true}, {.mode = PFLEX_PRED_LOO, .pfi = f->pfi_bad}};
  struct pflex_study_opts o;
  opts(&o);
  struct pflex_study_result *r;
  size_t n;
  assert_int_equal(pflex_study_run(f->g, NG, p, 2, &o, &r, &n), 0);
  /* lines: equal, moe-ft, dram, pfi x 2, optimal x 2 x 3 rounds, oracle = 12 per cell. */
  assert_int_equal(n, 2 * 3 * 12);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(r[i].workloads, 30);
    assert_int_equal(r[i].above_oracle, 0);
    assert_true(r[i].loss_vs_oracle >= -1e-12);
    if (r[i].cut == 0) assert_true(isnan(r[i].gap_recovered));
  }
  for (int sc = 0; sc < 2; sc++) {
    const struct pflex_study_result *orc = find(r, n, sc, PFLEX_ALLOC_ORACLE, 0, 0, 0.3);
    const struct pflex_study_result *eq = find(r, n, sc, PFLEX_ALLOC_EQUAL, 0, 0, 0.3);
    NEAR(orc->gap_recovered, 1, 1e-12);
    NEAR(orc->loss_vs_oracle, 0, 1e-12);
    NEAR(eq->gap_recovered, 0, 1e-12);
    NEAR(eq->gain_per_job, 0, 1e-9);
    assert_true(orc->gain_per_job > 0);
    /* Optimal on curves from the true PFI (the curves are of the family)
     * recovers most of the gap. */
    const struct pflex_study_result *opt =
        find(r, n, sc, PFLEX_ALLOC_OPTIMAL, PFLEX_PRED_TRUE, 0, 0.3);
    assert_true(opt->gap_recovered > 0.5);
  }
  free(r);
}

/* The closed loop: starting from an uninformative prediction, two rounds of
 * observation bring optimal close to the oracle. */
static void test_closed_loop_improves(void **state) {
  struct fixture *f = *state;
  struct pflex_study_predset p[1] = {{.mode = PFLEX_PRED_PRIOR, .pfi = f->pfi_bad}};
  struct pflex_study_opts o;
  opts(&o);
  o.strategies =
      (1u << PFLEX_ALLOC_OPTIMAL) | (1u << PFLEX_ALLOC_EQUAL) | (1u << PFLEX_ALLOC_ORACLE);
  struct pflex_study_result *r;
  size_t n;
  assert_int_equal(pflex_study_run(f->g, NG, p, 1, &o, &r, &n), 0);
  for (int sc = 0; sc < 2; sc++) {
    const struct pflex_study_result *r0 =
        find(r, n, sc, PFLEX_ALLOC_OPTIMAL, PFLEX_PRED_PRIOR, 0, 0.3);
    const struct pflex_study_result *r2 =
        find(r, n, sc, PFLEX_ALLOC_OPTIMAL, PFLEX_PRED_PRIOR, 2, 0.3);
    assert_true(r2->gap_recovered > r0->gap_recovered);
    assert_true(r2->gap_recovered > 0.9);
  }
  free(r);
}

/* The data shape learns a held-out group's curve only from other folds: with
 * every group in one fold there is nothing to learn from, and the family's
 * member is used (the same results as the family shape); with leave-one-out
 * folds and the true PFI, optimal recovers most of the gap. */
static void test_shape_folds(void **state) {
  struct fixture *f = *state;
  int one[NG] = {0}, loo[NG];
  for (int i = 0; i < NG; i++)
    loo[i] = i;
  struct pflex_study_predset p[1] = {{.mode = PFLEX_PRED_TRUE, .pfi = f->pfi_true, .fold = one}};
  struct pflex_study_opts o;
  opts(&o);
  o.rounds = 0;
  o.scenarios = 1u << PFLEX_SCENARIO_RANDOM;
  o.strategies =
      (1u << PFLEX_ALLOC_OPTIMAL) | (1u << PFLEX_ALLOC_EQUAL) | (1u << PFLEX_ALLOC_ORACLE);
  struct pflex_study_result *r, *fam;
  size_t n, nf;
  assert_int_equal(pflex_study_run(f->g, NG, p, 1, &o, &r, &n), 0);
  o.shape = PFLEX_STUDY_SHAPE_FAMILY;
  assert_int_equal(pflex_study_run(f->g, NG, p, 1, &o, &fam, &nf), 0);
  assert_int_equal(n, nf);
  assert_memory_equal(r, fam, n * sizeof *r);
  assert_true(find(fam, nf, 0, PFLEX_ALLOC_OPTIMAL, PFLEX_PRED_TRUE, 0, 0.3)->gap_recovered > 0.5);
  free(r);
  free(fam);
  o.shape = PFLEX_STUDY_SHAPE_DATA;
  p[0].fold = loo;
  assert_int_equal(pflex_study_run(f->g, NG, p, 1, &o, &r, &n), 0);
  assert_true(find(r, n, 0, PFLEX_ALLOC_OPTIMAL, PFLEX_PRED_TRUE, 0, 0.3)->gap_recovered > 0.8);
  free(r);
}

/* Same seed, same output, bit for bit; another seed, other workloads. */
static void test_deterministic(void **state) {
  struct fixture *f = *state;
  struct pflex_study_predset p[1] = {{.mode = PFLEX_PRED_LOO, .pfi = f->pfi_bad}};
  struct pflex_study_opts o;
  opts(&o);
  struct pflex_study_result *a, *b;
  size_t na, nb;
  assert_int_equal(pflex_study_run(f->g, NG, p, 1, &o, &a, &na), 0);
  assert_int_equal(pflex_study_run(f->g, NG, p, 1, &o, &b, &nb), 0);
  assert_int_equal(na, nb);
  assert_memory_equal(a, b, na * sizeof *a);
  free(b);
  o.seed = 2;
  assert_int_equal(pflex_study_run(f->g, NG, p, 1, &o, &b, &nb), 0);
  assert_true(memcmp(a, b, na * sizeof *a) != 0);
  free(a);
  free(b);
}

/* The production mix needs pretraining and fine-tuning groups. */
static void test_production_needs_task(void **state) {
  struct fixture *f = *state;
  struct pflex_study_group g[NG];
  memcpy(g, f->g, sizeof g);
  for (int i = 0; i < NG; i++)
    g[i].task = PFLEX_TASK_UNKNOWN;
  struct pflex_study_opts o;
  opts(&o);
  struct pflex_study_result *r;
  size_t n;
  assert_int_equal(pflex_study_run(g, NG, NULL, 0, &o, &r, &n), -PFLEX_E_DATA);
  o.scenarios = 1u << PFLEX_SCENARIO_RANDOM;
  assert_int_equal(pflex_study_run(g, NG, NULL, 0, &o, &r, &n), 0);
  free(r);
}

/* Groups from a job set carry its curves and metadata over. */
static void test_groups_from_jobs(void **state) {
  struct fixture *f = *state;
  struct pflex_jobset set;
  pflex_jobset_init(&set);
  struct pflex_alloc_job jobs[3];
  struct pflex_curve *curves[3] = {f->c[0], NULL, f->c[2]};
  char *gpu[3] = {"H200", "H200", "H100"};
  for (int i = 0; i < 3; i++) {
    pflex_alloc_job_init(&jobs[i]);
    jobs[i].curve = curves[i];
    jobs[i].gpus = 8 * (i + 1);
    jobs[i].task = PFLEX_TASK_FT;
  }
  set.jobs = jobs;
  set.gpu = gpu;
  set.n = 3;
  struct pflex_study_group *g;
  size_t n;
  assert_int_equal(pflex_study_groups_from_jobs(&set, &g, &n), 0);
  assert_int_equal(n, 2); /* the job without a curve is left out */
  assert_ptr_equal(g[1].curve, f->c[2]);
  assert_int_equal(g[1].gpus, 24);
  assert_string_equal(g[1].gpu, "H100");
  assert_int_equal(g[0].task, PFLEX_TASK_FT);
  free(g);
}


/* The study's pipeline on the reference set: groups of the headline set,
 * the model's three prediction families, folds from the model's own fold
 * builder (LOO: one group each; LOCO: one fold per arch x task cluster),
 * and the refusals naming what is wrong. */
static void test_study_data(void **state) {
  (void)state;
  struct pflex_runset all;
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  assert_int_equal(pflex_runs_read_csv(PFLEX_SOURCE_DIR "/data/reference/runs.csv", NULL, &all,
                                       &diag),
                   0);
  struct pflex_study_data d;
  assert_int_equal(pflex_study_data_build(&all, NULL, NULL, NULL, &d, &diag), 0);
  assert_string_equal(d.set, "headline");
  assert_int_equal(d.ngroups, 25);
  assert_int_equal(d.nsets, 4);
  assert_int_equal(d.sets[0].mode, PFLEX_PRED_TRUE);
  assert_int_equal(d.sets[3].mode, PFLEX_PRED_LOCO);
  assert_ptr_equal(d.sets[3].fold, d.pred.loco_fold);
  assert_non_null(d.pred.in);
  assert_null(d.pred.prior);
  for (size_t i = 0; i < d.ngroups; i++) {
    assert_true(isfinite(d.pred.loo[i]) && isfinite(d.pred.loco[i]));
    for (size_t j = 0; j < d.ngroups; j++) {
      const struct pflex_study_group *a = &d.groups[i], *b = &d.groups[j];
      bool same = strcmp(pflex_cluster_name(a->arch, a->task, PFLEX_LOCO_ARCH_TASK),
                         pflex_cluster_name(b->arch, b->task, PFLEX_LOCO_ARCH_TASK)) == 0;
      assert_int_equal(d.pred.loco_fold[i] == d.pred.loco_fold[j], same);
      assert_int_equal(d.pred.loo_fold[i] == d.pred.loo_fold[j], i == j);
    }
  }
  assert_int_equal(pflex_study_headline_pred(&d), PFLEX_PRED_IN_SAMPLE);
  assert_int_equal(pflex_study_optimal_pred(&d), PFLEX_PRED_LOO);
  pflex_study_data_release(&d);

  /* A model fitted on other runs: true and unseen, shaped by their curves. */
  assert_int_equal(pflex_study_data_build(&all, "validation", &all, NULL, &d, &diag), 0);
  assert_int_equal(d.nsets, 2);
  assert_int_equal(d.sets[1].mode, PFLEX_PRED_UNSEEN);
  assert_true(d.sets[1].ntemplates == 25 && d.sets[1].templates);
  pflex_study_data_release(&d);

  pflex_diag_clear(&diag);
  assert_int_equal(pflex_study_data_build(&all, "nosuch", NULL, NULL, &d, &diag), -ENOENT);
  assert_non_null(strstr(diag.message, "no runs of set 'nosuch'"));
  pflex_runset_release(&all);
}

/* Under the progress objective the oracle is that of progress: no strategy
 * beats it on progress, equal and the oracle are never worse than equal,
 * and `other` holds the tokens numbers against the tokens oracle (whose
 * line, here, is not the oracle's: the tokens oracle is another allocation). */
static void test_objective_progress(void **state) {
  struct fixture *f = *state;
  struct pflex_study_predset p[1] = {{.mode = PFLEX_PRED_LOO, .pfi = f->pfi_bad}};
  struct pflex_study_opts o;
  opts(&o);
  o.rounds = 0;
  o.objective = PFLEX_OBJECTIVE_PROGRESS;
  struct pflex_study_result *r;
  size_t n;
  assert_int_equal(pflex_study_run(f->g, NG, p, 1, &o, &r, &n), 0);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(r[i].above_oracle, 0);
    assert_true(r[i].loss_vs_oracle >= -1e-12);
    assert_true(r[i].progress > 0 && r[i].tokens_per_s > r[i].progress);
    assert_true(r[i].worse_than_equal >= 0 && r[i].worse_than_equal <= 1);
    assert_true(r[i].other.loss_vs_oracle >= -1e-9); /* the tokens oracle bounds tokens */
  }
  const struct pflex_study_result *orc = find(r, n, 1, PFLEX_ALLOC_ORACLE, 0, 0, 0.3);
  const struct pflex_study_result *eq = find(r, n, 1, PFLEX_ALLOC_EQUAL, 0, 0, 0.3);
  NEAR(orc->gap_recovered, 1, 1e-12);
  assert_true(orc->worse_than_equal == 0 && eq->worse_than_equal == 0);
  NEAR(eq->other.gap_recovered, 0, 1e-12);
  assert_true(orc->other.gap_recovered < 1); /* progress's optimum is not tokens' */
  /* The tokens run measures the same allocations: equal's progress agrees. */
  struct pflex_study_result *t;
  size_t nt;
  o.objective = PFLEX_OBJECTIVE_TOKENS;
  assert_int_equal(pflex_study_run(f->g, NG, p, 1, &o, &t, &nt), 0);
  const struct pflex_study_result *teq = find(t, nt, 1, PFLEX_ALLOC_EQUAL, 0, 0, 0.3);
  NEAR(teq->progress, eq->progress, 1e-9 * eq->progress);
  NEAR(teq->tokens_per_s, eq->tokens_per_s, 1e-9 * eq->tokens_per_s);
  free(t);
  free(r);
}

/* With shrinkage and an uninformative prediction (PFI 1.5 for all: the
 * band calibrated on the other groups is wide, and the PFI's SD is 10),
 * optimal stays at the equal cut (never worse), and a group without a
 * prediction (NAN) takes its set's lines off the workloads holding it. */
static void test_shrink_and_unpredicted(void **state) {
  struct fixture *f = *state;
  double sd[NG], pfi[NG];
  for (int i = 0; i < NG; i++) {
    sd[i] = 10;
    pfi[i] = f->pfi_bad[i];
  }
  struct pflex_study_predset p[1] = {{.mode = PFLEX_PRED_PRIOR, .pfi = f->pfi_bad, .sd = sd}};
  struct pflex_study_opts o;
  opts(&o);
  o.rounds = 0;
  o.shrink = 1;
  struct pflex_study_result *r;
  size_t n;
  assert_int_equal(pflex_study_run(f->g, NG, p, 1, &o, &r, &n), 0);
  for (size_t i = 0; i < n; i++)
    if (r[i].strategy == PFLEX_ALLOC_OPTIMAL) {
      assert_true(r[i].worse_than_equal == 0);
      if (r[i].cut > 0) NEAR(r[i].gap_recovered, 0, 1e-6);
    }
  free(r);
  pfi[NG - 1] = NAN; /* group 11 unpredicted */
  p[0] = (struct pflex_study_predset){.mode = PFLEX_PRED_PRIOR, .pfi = pfi};
  o.shrink = 0;
  assert_int_equal(pflex_study_run(f->g, NG, p, 1, &o, &r, &n), 0);
  const struct pflex_study_result *opt = find(r, n, 0, PFLEX_ALLOC_OPTIMAL, PFLEX_PRED_PRIOR, 0, 0.3);
  const struct pflex_study_result *eq = find(r, n, 0, PFLEX_ALLOC_EQUAL, 0, 0, 0.3);
  assert_int_equal(eq->workloads, 30);
  /* 20 jobs from 12 groups: P(no job of group 11) = (11/12)^20 = 18% */
  assert_true(opt->workloads < 30);
  assert_true(find(r, n, 0, PFLEX_ALLOC_PFI, PFLEX_PRED_PRIOR, 0, 0.3)->workloads == opt->workloads);
  free(r);
  pfi[NG - 1] = INFINITY;
  assert_int_equal(pflex_study_run(f->g, NG, p, 1, &o, &r, &n), -EINVAL);
}

/* LOCO honest: without arch/task columns every group is in one cluster,
 * which cannot be left out: no LOCO number, never the prior fitted on all. */
static void test_loco_unfitted(void **state) {
  (void)state;
  struct pflex_runset all, bare;
  struct pflex_diag diag;
  pflex_diag_clear(&diag);
  assert_int_equal(pflex_runs_read_csv(PFLEX_SOURCE_DIR "/data/reference/runs.csv", NULL, &all,
                                       &diag),
                   0);
  assert_int_equal(pflex_study_runs_of_set(&all, "headline", &bare), 0);
  for (size_t i = 0; i < bare.n; i++) {
    bare.runs[i].arch = PFLEX_ARCH_UNKNOWN;
    bare.runs[i].task = PFLEX_TASK_UNKNOWN;
  }
  struct pflex_study_data d;
  assert_int_equal(pflex_study_data_build(&bare, NULL, NULL, NULL, &d, &diag), 0);
  assert_int_equal(d.pred.loco_unfitted, d.ngroups);
  for (size_t i = 0; i < d.ngroups; i++) {
    assert_true(isnan(d.pred.loco[i]));
    assert_true(isfinite(d.pred.loo[i]) && isfinite(d.pred.sd[PFLEX_PRED_LOO][i]));
  }
  struct pflex_study_opts o;
  pflex_study_opts_init(&o);
  o.workloads = 5;
  o.scenarios = 1u << PFLEX_SCENARIO_RANDOM;
  struct pflex_study_result *r;
  size_t n;
  assert_int_equal(pflex_study_run(d.groups, d.ngroups, d.sets, d.nsets, &o, &r, &n), 0);
  for (size_t i = 0; i < n; i++)
    if (r[i].prediction == PFLEX_PRED_LOCO) {
      assert_int_equal(r[i].workloads, 0);
      assert_true(isnan(r[i].gap_recovered) && isnan(r[i].tokens_per_s));
    } else {
      assert_int_equal(r[i].workloads, 5);
    }
  free(r);
  pflex_study_data_release(&d);
  pflex_runset_release(&bare);
  pflex_runset_release(&all);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_definitions_and_oracle),
      cmocka_unit_test(test_closed_loop_improves),
      cmocka_unit_test(test_deterministic),
      cmocka_unit_test(test_shape_folds),
      cmocka_unit_test(test_production_needs_task),
      cmocka_unit_test(test_groups_from_jobs),
      cmocka_unit_test(test_study_data),
      cmocka_unit_test(test_objective_progress),
      cmocka_unit_test(test_shrink_and_unpredicted),
      cmocka_unit_test(test_loco_unfitted),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
