/* Unit tests of where a job's curve comes from (src/controller/jobs.c,
 * templates.c): with a `pflex fit` model, a job whose agent reports the
 * model's telemetry starts from the PFI the model predicts from it (dram_copy
 * computed from dram_active and mem_copy_util as for a runs file), one
 * without telemetry from the model's population prior, and without a model
 * every job from prior_pfi; templates from a runs file make the curves
 * data-shaped, and a file without two groups is refused. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "assert_near.h"
#include "controller/jobs.h"
#include "controller/templates.h"

static void node_init(struct ctl_node *nd, const char *job, double dram, double copy) {
  memset(nd, 0, sizeof *nd);
  nd->reachable = nd->seen = true;
  nd->ngpus = 8;
  for (size_t g = 0; g < 8; g++) {
    struct ctl_gpu_state *s = &nd->gpu[g];
    s->index = (unsigned)g;
    s->power_w = 650;
    s->limit_w = s->enforced_w = s->default_w = s->max_w = 700;
    s->min_w = 200;
    s->lease_s_left = -1;
    snprintf(s->job, sizeof s->job, "%s", job);
  }
  nd->njobs = 1;
  struct ctl_job_tput *t = &nd->jobs[0];
  snprintf(t->id, sizeof t->id, "%s", job);
  t->has_tput = true;
  t->tput = 10000;
  t->tput_time = 1;
  t->meta.min_tput = -1;
  if (dram >= 0) {
    t->telemetry.n = 2;
    snprintf(t->telemetry.name[0], sizeof t->telemetry.name[0], "dram_active");
    snprintf(t->telemetry.name[1], sizeof t->telemetry.name[1], "mem_copy_util");
    t->telemetry.value[0] = dram;
    t->telemetry.value[1] = copy;
  }
}

/* PFI = 1 + 2 x dram_copy; population prior 1.7. */
static void model_init(struct pflex_model *m) {
  pflex_model_init(m);
  m->kind = PFLEX_MODEL_OLS;
  assert_int_equal(pflex_featlist_add(&m->feats, "dram_copy"), 0);
  m->lin.p = 1;
  m->lin.intercept = 1.0;
  m->lin.coef = calloc(1, sizeof(double));
  m->lin.mean = calloc(1, sizeof(double));
  m->lin.sd = calloc(1, sizeof(double));
  m->lin.beta_std = calloc(1, sizeof(double));
  m->lin.coef[0] = 2.0;
  m->lin.sd[0] = 1;
  m->prior_mean = 1.7;
}

static void learn(struct ctl_jobset *js, struct ctl_node *nodes, size_t n,
                  const struct ctl_config *cfg) {
  for (int r = 0; r < 4; r++) {
    assert_int_equal(ctl_jobset_gather(js, nodes, n, r, 120), 0);
    ctl_jobset_learn(js, cfg);
  }
}

static void model_pfi_from_telemetry(void **state) {
  (void)state;
  struct ctl_config cfg;
  ctl_config_defaults(&cfg);
  struct pflex_model m;
  model_init(&m);
  struct ctl_jobset js;
  ctl_jobset_init(&js);
  js.model = &m;
  struct ctl_node nodes[2];
  node_init(&nodes[0], "seen", 50, 40); /* percent: dram_copy = 0.5 x 0.4 = 0.2 */
  node_init(&nodes[1], "dark", -1, -1);
  learn(&js, nodes, 2, &cfg);
  const struct ctl_job *a = ctl_jobset_find(&js, "seen"), *b = ctl_jobset_find(&js, "dark");
  assert_non_null(a);
  assert_non_null(b);
  assert_near(a->prior_pfi, 1.4, 1e-9);
  assert_near(a->model_pfi, 1.4, 1e-9);
  assert_near(b->prior_pfi, 1.7, 1e-9);
  assert_true(b->model_pfi == 0);
  assert_non_null(ctl_job_curve(a));
  ctl_jobset_release(&js);
  js.model = NULL; /* without a model: the configured prior */
  learn(&js, nodes, 2, &cfg);
  assert_near(ctl_jobset_find(&js, "seen")->prior_pfi, cfg.prior_pfi, 1e-12);
  ctl_jobset_release(&js);
  pflex_model_release(&m);
}

static void templates_shape_the_curves(void **state) {
  (void)state;
  struct ctl_templates t;
  char err[512];
  assert_int_equal(
      ctl_templates_load(PFLEX_SOURCE_DIR "/data/reference/runs.csv", &t, err, sizeof err), 0);
  assert_true(t.n >= 2);
  struct ctl_config cfg;
  ctl_config_defaults(&cfg);
  struct ctl_jobset js;
  ctl_jobset_init(&js);
  js.templates = t.curves;
  js.ntemplates = t.n;
  struct ctl_node nodes[1];
  node_init(&nodes[0], "job", -1, -1);
  learn(&js, nodes, 1, &cfg);
  const struct pflex_curve *c = ctl_job_curve(ctl_jobset_find(&js, "job"));
  assert_non_null(c);
  assert_near(pflex_curve_t_max(c), 10000, 1);
  double p = 0.6 * pflex_curve_p_max(c), shaped = pflex_curve_eval(c, p);
  ctl_jobset_release(&js);
  ctl_jobset_init(&js); /* the same job on the family alone: another curve */
  learn(&js, nodes, 1, &cfg);
  double family = pflex_curve_eval(ctl_job_curve(ctl_jobset_find(&js, "job")), p);
  assert_true(fabs(shaped - family) > 1e-3 * family);
  ctl_jobset_release(&js);
  ctl_templates_release(&t);
  FILE *f = fopen("/tmp/pflex-ctl-one-group.csv", "w");
  assert_non_null(f);
  fprintf(f, "group,gpu,gpus,cap_w,power_w,tokens_per_s\na,H100,8,700,5000,100\na,H100,8,400,3000,80\n");
  fclose(f);
  assert_true(ctl_templates_load("/tmp/pflex-ctl-one-group.csv", &t, err, sizeof err) < 0);
  assert_non_null(strstr(err, "at least two sweep groups"));
  unlink("/tmp/pflex-ctl-one-group.csv");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(model_pfi_from_telemetry),
      cmocka_unit_test(templates_shape_the_curves),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
