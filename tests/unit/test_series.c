/* Tests of telemetry series: phases, top-10% aggregation and the series CSV
 * reader (src/telemetry/series.c, src/io/series_csv.c). Expected values are
 * worked out by hand in the comments. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "assert_near.h"

#include "pflex/runs.h"
#include "pflex/series.h"
#include "pflex/series_csv.h"

#define NGPU 8
#define DT 5.0
#define N_WARM 12
#define N_START 12
#define N_TRAIN 200
#define N_TAIL 6
#define T_TRAIN0 (DT * (N_WARM + N_START)) /* 120 s */

/* Power of GPU g at training step j (0-based within training), or the dips.
 *  - base 500 + 10 g W, plus a pattern w_j = 2 (j mod 20) W: 0, 2, ..., 38.
 *  - eval at steps 80..91 (60 s): utilization 30%, 300 W per GPU.
 *  - checkpoint at steps 150..157 (40 s): utilization 0, 150 W per GPU.
 * Neither dip covers a step with j mod 20 in {18, 19}. */
static bool in_eval(int j) {
  return j >= 80 && j <= 91;
}
static bool in_ckpt(int j) {
  return j >= 150 && j <= 157;
}

static double train_power(int g, int j) {
  if (in_eval(j)) return 300;
  if (in_ckpt(j)) return 150;
  return 500 + 10 * g + 2 * (j % 20);
}

/* The synthetic 8-GPU run: warmup, startup, training with an eval and a
 * checkpoint dip, teardown. GPU g is stamped g * 10 ms after the step, as a
 * loop reading the GPUs one by one would. reverse = insert in reverse order. */
static void build_run(struct pflex_series *s, bool reverse) {
  const char *names[] = {"power_w", "gpu_util", "fb_used_mib", "sm_clock"};
  int total = N_WARM + N_START + N_TRAIN + N_TAIL;
  for (int idx = 0; idx < total * NGPU; idx++) {
    int k = reverse ? total * NGPU - 1 - idx : idx;
    int step = k / NGPU, g = k % NGPU;
    double t = step * DT + g * 0.01;
    double v[4];
    if (step < N_WARM) {
      v[0] = 80, v[1] = 0, v[2] = 2000, v[3] = 210;
    } else if (step < N_WARM + N_START) {
      v[0] = 110, v[1] = 0, v[2] = 60000, v[3] = 1980;
    } else if (step < N_WARM + N_START + N_TRAIN) {
      int j = step - N_WARM - N_START;
      v[0] = train_power(g, j);
      v[1] = in_eval(j) ? 30 : in_ckpt(j) ? 0 : 95;
      v[2] = 70000;
      v[3] = 1980 - 10 * g;
    } else {
      v[0] = 100, v[1] = 0, v[2] = 70000, v[3] = 1980;
    }
    assert_int_equal(pflex_series_add_sample(s, t, g, 4, names, v), 0);
  }
  /* Throughput every 10 s from 120 s: 10000 + i tokens/s for i = 0..99
   * (t = 120 .. 1110, inside the training window), plus two outliers
   * outside it (t = 50 in warmup, t = 1200 in teardown) that must not count. */
  for (int i = 0; i < 100; i++)
    assert_int_equal(pflex_series_add_tput(s, T_TRAIN0 + 10.0 * i, 10000 + i), 0);
  assert_int_equal(pflex_series_add_tput(s, 50, 99999), 0);
  assert_int_equal(pflex_series_add_tput(s, 1200, 99999), 0);
}

static void check_run_aggregate(bool reverse) {
  struct pflex_series s;
  pflex_series_init(&s);
  build_run(&s, reverse);
  struct pflex_series_agg a;
  struct pflex_diag d;
  assert_int_equal(pflex_series_aggregate(&s, NULL, &a, &d), 0);
  assert_int_equal(a.gpus, 8);
  assert_near(a.step_s, 5.0, 1e-9);

  /* Phases, counted in steps: 12 warmup, 12 startup, 200 training (dips
   * included: they lie between sustained runs), 6 teardown = other. */
  assert_int_equal(a.phase_steps[PFLEX_PHASE_WARMUP], 12);
  assert_int_equal(a.phase_steps[PFLEX_PHASE_STARTUP], 12);
  assert_int_equal(a.phase_steps[PFLEX_PHASE_TRAINING], 200);
  assert_int_equal(a.phase_steps[PFLEX_PHASE_OTHER], 6);
  assert_int_equal(a.phase_samples[PFLEX_PHASE_TRAINING], 1600);
  assert_int_equal(a.phase_samples[PFLEX_PHASE_WARMUP], 96);
  assert_near(a.train_start_s, 120.0, 1e-9);
  assert_near(a.train_end_s, 120.0 + 199 * 5.0, 1e-9);

  /* Power: per step the sum over 8 GPUs is 8*500 + 10*(0+...+7) + 8 w_j =
   * 4280 + 8 w_j outside the dips (dips: 2400 and 1200 W). 200 training
   * steps -> top 10% = 20 steps: the 10 steps with w = 38 (4584 W) and the
   * 10 with w = 36 (4568 W). Mean 4576 W. Sample SD: deviations +-8 on 20
   * values -> sqrt(20 * 64 / 19) = 8.2078. SE of an upper-tail mean (series.c):
   * tail threshold q = 4568, p = 20/200 = 0.1,
   * SE = sqrt((64*20/19 + 0.9 * (4576 - 4568)^2) / 20) = sqrt(124.968 / 20) = 2.49968.
   * (The plain training mean would be far lower: the dips and w = 0..34.) */
  assert_true(a.power.valid);
  assert_near(a.power.value, 4576.0, 1e-9);
  assert_int_equal(a.power.k, 20);
  assert_int_equal(a.power.n, 200);
  assert_near(a.power.sd, sqrt(20.0 * 64.0 / 19.0), 1e-9);
  assert_near(a.power.se, sqrt((20.0 * 64.0 / 19.0 + 0.9 * 64.0) / 20.0), 1e-9);
  assert_int_equal(a.incomplete_steps, 0);

  /* Throughput: the 100 samples inside the window are 10000..10099; top 10
   * are 10090..10099, mean 10094.5. The 99999 outliers lie outside. */
  assert_true(a.tput.valid);
  assert_int_equal(a.tput.n, 100);
  assert_int_equal(a.tput.k, 10);
  assert_near(a.tput.value, 10094.5, 1e-9);

  /* Other metrics: top 10% per GPU, mean over GPUs. sm_clock is 1980 - 10 g
   * on GPU g during training: mean over g = 1980 - 35 = 1945. gpu_util is 95
   * on every GPU's top 20 samples -> 95. */
  size_t m;
  assert_int_equal(pflex_series_find_metric(&s, "sm_clock", &m), 0);
  assert_string_equal(a.metrics[m].name, "sm_clock");
  assert_int_equal(a.metrics[m].kind, PFLEX_AGG_MEAN);
  assert_near(a.metrics[m].agg.value, 1945.0, 1e-9);
  assert_int_equal(pflex_series_find_metric(&s, "gpu_util", &m), 0);
  assert_near(a.metrics[m].agg.value, 95.0, 1e-9);
  assert_int_equal(pflex_series_find_metric(&s, "power_w", &m), 0);
  assert_int_equal(a.metrics[m].kind, PFLEX_AGG_SUM);
  assert_near(a.metrics[m].agg.value, 4576.0, 1e-9);

  /* As a run row: power and throughput, their standard errors, the other
   * metrics as extra columns (power is not repeated as one). */
  struct pflex_runset set;
  pflex_runset_init(&set);
  assert_int_equal(pflex_series_agg_append_run(&a, "g", "H200", 700, &set), 0);
  assert_int_equal(set.n, 1);
  assert_int_equal(set.runs[0].gpus, 8);
  assert_near(set.runs[0].power_w, 4576.0, 1e-9);
  assert_near(set.runs[0].tput, 10094.5, 1e-9);
  assert_near(set.runs[0].power_sd, a.power.se, 0);
  assert_near(set.runs[0].cap_w, 700, 0);
  double v;
  assert_int_equal(pflex_runset_metric(&set, 0, "sm_clock", &v), 0);
  assert_near(v, 1945.0, 1e-9);
  assert_int_equal(pflex_runset_metric(&set, 0, "power_w", &v), -ENOENT);
  assert_int_equal(pflex_series_agg_append_run(&a, "g", "H200", 0, &set), -EINVAL);
  pflex_runset_release(&set);

  pflex_series_agg_release(&a);
  pflex_series_release(&s);
}

static void test_aggregate_8gpu(void **state) {
  (void)state;
  check_run_aggregate(false);
}

/* Same samples inserted in reverse time order: same answer. */
static void test_aggregate_unsorted(void **state) {
  (void)state;
  check_run_aggregate(true);
}

static void test_phases_per_sample(void **state) {
  (void)state;
  struct pflex_series s;
  pflex_series_init(&s);
  build_run(&s, false);
  enum pflex_phase *ph = NULL;
  assert_int_equal(pflex_series_phases(&s, NULL, &ph, NULL), 0);
  /* Samples are stored step-major: step = i / 8. */
  assert_int_equal(ph[0], PFLEX_PHASE_WARMUP);
  assert_int_equal(ph[12 * 8 + 3], PFLEX_PHASE_STARTUP);
  assert_int_equal(ph[24 * 8], PFLEX_PHASE_TRAINING);
  assert_int_equal(ph[(24 + 85) * 8 + 7], PFLEX_PHASE_TRAINING);  /* eval dip */
  assert_int_equal(ph[(24 + 152) * 8 + 1], PFLEX_PHASE_TRAINING); /* checkpoint dip */
  assert_int_equal(ph[(24 + 200) * 8], PFLEX_PHASE_OTHER);
  free(ph);
  pflex_series_release(&s);
}

/* A thresholds change moves the boundaries: with fb threshold 65000 MiB the
 * startup steps (60000 MiB) count as warmup. */
static void test_phase_options(void **state) {
  (void)state;
  struct pflex_series s;
  pflex_series_init(&s);
  build_run(&s, false);
  struct pflex_phase_opts o;
  pflex_phase_opts_default(&o);
  assert_near(o.fb_threshold_mib, 10240.0, 0);
  assert_near(o.util_threshold, 50.0, 0);
  assert_near(o.top, 0.10, 0);
  o.fb_threshold_mib = 65000;
  struct pflex_series_agg a;
  assert_int_equal(pflex_series_aggregate(&s, &o, &a, NULL), 0);
  assert_int_equal(a.phase_steps[PFLEX_PHASE_WARMUP], 24);
  assert_int_equal(a.phase_steps[PFLEX_PHASE_STARTUP], 0);
  pflex_series_agg_release(&a);
  /* top = 1: the mean of all 200 step sums. Sum over j of 8 w_j outside the
   * dips: w pattern sums to 2*(0+...+19) = 380 per 20 steps, 10 periods =
   * 3800, minus the dip steps' w (eval j=80..91: w=0..22 (j%20=0..11) sum
   * 2*66=132; ckpt j=150..157: j%20=10..17, 2*(10+...+17)=216). Non-dip
   * steps: 180, sum of sums = 180*4280 + 8*(3800-132-216) = 770400 + 27616
   * = 798016; dips: 12*2400 + 8*1200 = 38400. Mean = 836416/200 = 4182.08. */
  pflex_phase_opts_default(&o);
  o.top = 1.0;
  assert_int_equal(pflex_series_aggregate(&s, &o, &a, NULL), 0);
  assert_near(a.power.value, 4182.08, 1e-9);
  pflex_series_agg_release(&a);
  o.top = 0;
  assert_int_equal(pflex_series_aggregate(&s, &o, &a, NULL), -EINVAL);
  pflex_series_release(&s);
}

/* One GPU, samples given out of order, with a short busy burst before
 * training that is not sustained (15 s < 30 s). */
static void test_single_gpu_unsorted(void **state) {
  (void)state;
  struct pflex_series s;
  pflex_series_init(&s);
  size_t mp, mu, mf;
  assert_int_equal(pflex_series_metric(&s, "power_w", &mp), 0);
  assert_int_equal(pflex_series_metric(&s, "gpu_util", &mu), 0);
  assert_int_equal(pflex_series_metric(&s, "fb_used_mib", &mf), 0);
  /* steps 0-3 warmup, 4-7 startup (util 0), 8-10 burst (util 90, 15 s: not
   * sustained -> other), 11-12 util 0 -> startup, 13-32 training with power
   * 100..119 W, 33-34 util 0 after training -> other. */
  int order[35];
  for (int i = 0; i < 35; i++)
    order[i] = (i * 13) % 35; /* 13 and 35 coprime: a permutation */
  for (int i = 0; i < 35; i++) {
    int k = order[i];
    double v[3];
    v[mf] = k < 4 ? 1000 : 20000;
    v[mu] = (k >= 8 && k <= 10) ? 90 : (k >= 13 && k <= 32) ? 80 : 0;
    v[mp] = (k >= 13 && k <= 32) ? 100 + (k - 13) : 60;
    assert_int_equal(pflex_series_add_row(&s, 1000.0 + 5.0 * k, 0, v), 0);
  }
  struct pflex_series_agg a;
  assert_int_equal(pflex_series_aggregate(&s, NULL, &a, NULL), 0);
  assert_int_equal(a.gpus, 1);
  assert_int_equal(a.phase_steps[PFLEX_PHASE_WARMUP], 4);
  assert_int_equal(a.phase_steps[PFLEX_PHASE_STARTUP], 6);
  assert_int_equal(a.phase_steps[PFLEX_PHASE_TRAINING], 20);
  assert_int_equal(a.phase_steps[PFLEX_PHASE_OTHER], 5);
  /* 20 training samples 100..119: k = 2, mean (119 + 118) / 2 = 118.5. */
  assert_int_equal(a.power.k, 2);
  assert_near(a.power.value, 118.5, 1e-9);
  assert_false(a.tput.valid); /* no throughput samples given */
  pflex_series_agg_release(&a);

  /* With sustain_s = 10 the burst (15 s) is training too: training then spans
   * steps 8..32 (25 steps), the util-0 steps 11-12 inside it included. */
  struct pflex_phase_opts o;
  pflex_phase_opts_default(&o);
  o.sustain_s = 10;
  assert_int_equal(pflex_series_aggregate(&s, &o, &a, NULL), 0);
  assert_int_equal(a.phase_steps[PFLEX_PHASE_TRAINING], 25);
  pflex_series_agg_release(&a);
  pflex_series_release(&s);
}

static void test_no_training(void **state) {
  (void)state;
  struct pflex_series s;
  pflex_series_init(&s);
  const char *names[] = {"power_w", "gpu_util", "fb_used_mib"};
  for (int k = 0; k < 40; k++)
    for (int g = 0; g < 2; g++) {
      double v[] = {90, k % 10 == 0 ? 70 : 0, 30000}; /* isolated busy samples only */
      assert_int_equal(pflex_series_add_sample(&s, 5.0 * k, g, 3, names, v), 0);
    }
  struct pflex_series_agg a;
  struct pflex_diag d;
  memset(&a, 0x5a, sizeof a);
  assert_int_equal(pflex_series_aggregate(&s, NULL, &a, &d), -PFLEX_E_NOPOINTS);
  assert_non_null(strstr(d.message, "no training phase"));
  enum pflex_phase *ph;
  assert_int_equal(pflex_series_phases(&s, NULL, &ph, NULL), 0);
  for (size_t i = 0; i < s.n; i++)
    assert_int_not_equal(ph[i], PFLEX_PHASE_TRAINING);
  free(ph);
  pflex_series_release(&s);

  /* Empty series and a series without a frame-buffer metric. */
  pflex_series_init(&s);
  assert_int_equal(pflex_series_aggregate(&s, NULL, &a, NULL), -PFLEX_E_NOPOINTS);
  const char *n2[] = {"power_w", "gpu_util"};
  double v2[] = {100, 90};
  assert_int_equal(pflex_series_add_sample(&s, 0, 0, 2, n2, v2), 0);
  assert_int_equal(pflex_series_aggregate(&s, NULL, &a, &d), -PFLEX_E_DATA);
  assert_string_equal(d.column, "fb_used_mib");
  pflex_series_release(&s);
}

/* A training step where one GPU's power reading is missing is left out of
 * the power sum (it would look like a dip of ~500 W) and counted. */
static void test_incomplete_step(void **state) {
  (void)state;
  struct pflex_series s;
  pflex_series_init(&s);
  const char *names[] = {"power_w", "gpu_util", "fb_used_mib"};
  for (int k = 0; k < 20; k++)
    for (int g = 0; g < 2; g++) {
      /* Step 7 is the hottest (2 x 400 W) but GPU 1 has no power reading. */
      double p = k == 7 ? (g == 1 ? NAN : 400) : 300 + k;
      double v[] = {p, 90, 30000};
      assert_int_equal(pflex_series_add_sample(&s, 5.0 * k, g, 3, names, v), 0);
    }
  struct pflex_series_agg a;
  assert_int_equal(pflex_series_aggregate(&s, NULL, &a, NULL), 0);
  assert_int_equal(a.incomplete_steps, 1);
  /* 19 complete steps, sums 2 (300 + k), k != 7; top 10%: k = ceil(1.9) = 2:
   * k = 19 and 18 -> (638 + 636) / 2 = 637. */
  assert_int_equal(a.power.k, 2);
  assert_near(a.power.value, 637.0, 1e-9);
  pflex_series_agg_release(&a);
  pflex_series_release(&s);
}

/* Power is summed per time step BEFORE the top fraction is taken. Two GPUs
 * in anti-phase: GPU 0 draws 300 + k W, GPU 1 319 - k W at step k (k = 0..19),
 * so every step sums to 619 W and the aggregate is 619 W. Summing each GPU's
 * own top 10% (k = 2: (319 + 318) / 2 each) would claim 637 W, a power the
 * job never drew. */
static void test_power_sum_per_step(void **state) {
  (void)state;
  struct pflex_series s;
  pflex_series_init(&s);
  const char *names[] = {"power_w", "gpu_util", "fb_used_mib"};
  for (int k = 0; k < 20; k++)
    for (int g = 0; g < 2; g++) {
      double v[] = {g == 0 ? 300 + k : 319 - k, 90, 30000};
      assert_int_equal(pflex_series_add_sample(&s, 5.0 * k + 0.003 * g, g, 3, names, v), 0);
    }
  struct pflex_series_agg a;
  assert_int_equal(pflex_series_aggregate(&s, NULL, &a, NULL), 0);
  assert_near(a.power.value, 619.0, 1e-9);
  assert_near(a.power.sd, 0.0, 1e-9);
  pflex_series_agg_release(&a);

  /* GPU 1 is stamped 3 ms after GPU 0. With an alignment tolerance of 1 ms
   * no step holds both GPUs, and no step has every GPU's power. */
  struct pflex_phase_opts o;
  pflex_phase_opts_default(&o);
  o.align_s = 0.001;
  struct pflex_diag d;
  assert_int_equal(pflex_series_aggregate(&s, &o, &a, &d), -PFLEX_E_NOPOINTS);
  assert_non_null(strstr(d.message, "power reading of every GPU"));
  pflex_series_release(&s);
}

static void test_top_mean(void **state) {
  (void)state;
  double x[100];
  for (int i = 0; i < 100; i++)
    x[i] = (i * 37) % 100; /* a permutation of 0..99 */
  struct pflex_agg_value v;
  /* 0.1 * 100 must give 10 samples (90..99, mean 94.5), not 11. */
  assert_int_equal(pflex_top_mean(x, 100, 0.10, &v), 0);
  assert_int_equal(v.k, 10);
  assert_near(v.value, 94.5, 1e-12);
  /* 0.25 of 10 -> ceil(2.5) = 3 samples. x[0..9] = 0,37,74,11,48,85,22,59,96,33
   * -> top 3: 96, 85, 74, mean 85. */
  assert_int_equal(pflex_top_mean(x, 10, 0.25, &v), 0);
  assert_int_equal(v.k, 3);
  assert_near(v.value, 85.0, 1e-12);
  assert_near(v.sd, 11.0, 1e-12); /* deviations 11, 0, -11: sqrt(242/2) = 11 */
  assert_int_equal(pflex_top_mean(x, 1, 0.10, &v), 0);
  assert_int_equal(v.k, 1);
  assert_near(v.sd, 0.0, 0);
  assert_int_equal(pflex_top_mean(x, 0, 0.10, &v), -PFLEX_E_NOPOINTS);
  assert_int_equal(pflex_top_mean(x, 5, 1.5, &v), -EINVAL);
}

/* ---- CSV ---- */

static char tmpdir[64];

static int setup_dir(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/pflex-test-series-XXXXXX");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

static const char *write_file(const char *name, const char *text) {
  static char path[128];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  FILE *fp = fopen(path, "w");
  assert_non_null(fp);
  fputs(text, fp);
  fclose(fp);
  return path;
}

static void test_csv_good(void **state) {
  (void)state;
  const char *p =
      write_file("good.csv", "time_s,gpu,power_w,gpu_util,fb_used_mib,tokens_per_s,dram_active\n"
                             "0,0,100,0,500,,\n"
                             "0,1,101,0,500,,0.1\n"
                             "5.5,0,400.5,97,70000,,0.5\n"
                             "5.5,1,410,96,70000,,\n"
                             "6,,,,,12345.5,\n"
                             "\"7\",\"1\",1e2,1,2,,3\r\n");
  struct pflex_series s;
  struct pflex_diag d;
  assert_int_equal(pflex_series_read_csv(p, NULL, &s, &d), 0);
  assert_int_equal(s.n, 5);
  assert_int_equal(s.ntput, 1);
  assert_near(s.tput[0], 12345.5, 0);
  assert_near(s.tput_time_s[0], 6, 0);
  assert_int_equal(s.nmetrics, 4); /* power_w gpu_util fb_used_mib dram_active */
  size_t m;
  assert_int_equal(pflex_series_find_metric(&s, "dram_active", &m), 0);
  assert_true(isnan(s.values[m][0]));
  assert_near(s.values[m][2], 0.5, 0);
  assert_int_equal(pflex_series_find_metric(&s, "power_w", &m), 0);
  assert_near(s.values[m][2], 400.5, 0);
  assert_near(s.values[m][4], 100, 0);
  assert_int_equal(s.gpu[4], 1);
  assert_near(s.time_s[4], 7, 0);
  assert_int_equal(pflex_series_find_metric(&s, "tokens_per_s", NULL), -ENOENT);
  pflex_series_release(&s);

  /* A separate throughput file with a step time, appended to a series. */
  p = write_file("tput.csv", "time_s,step_time_s\n1,0.5\n2,0.25\n");
  pflex_series_init(&s);
  struct pflex_series_read_opts ro = {.tput_column = "step_time_s", .per_step_time = true};
  assert_int_equal(pflex_series_read_tput_csv(p, &ro, &s, &d), 0);
  assert_int_equal(s.ntput, 2);
  assert_near(s.tput[0], 2.0, 0);
  assert_near(s.tput[1], 4.0, 0);
  pflex_series_release(&s);
  /* A subnormal step time has no finite throughput: named, not "cannot add". */
  p = write_file("tput_tiny.csv", "time_s,step_time_s\n1,0.5\n2,1e-320\n");
  pflex_series_init(&s);
  assert_int_equal(pflex_series_read_tput_csv(p, &ro, &s, &d), -PFLEX_E_DATA);
  assert_int_equal(d.line, 3);
  assert_non_null(strstr(d.message, "too small a time per step"));
  pflex_series_release(&s);
}

struct bad_case {
  const char *text;
  int err;
  size_t line;
  const char *column;
  const char *message_part;
};

static void test_csv_errors(void **state) {
  (void)state;
  static char longline[70000 + 64];
  memset(longline, 0, sizeof longline);
  strcpy(longline, "time_s,gpu,power_w\n0,0,");
  memset(longline + strlen(longline), '1', 70000);
  strcat(longline, "\n");
  const struct bad_case cases[] = {
      {"", -PFLEX_E_PARSE, 0, "", "empty file"},
      {"time_s,gpu,power_w\n", -PFLEX_E_PARSE, 0, "", "no data rows"},
      {"gpu,power_w\n0,1\n", -PFLEX_E_PARSE, 1, "time_s", "missing required column"},
      {"time_s,power_w\n0,1\n", -PFLEX_E_PARSE, 1, "gpu", "missing required column"},
      {"time_s,gpu,power_w\n0,0,1\n5,0,abc\n", -PFLEX_E_PARSE, 3, "power_w", "not a number"},
      {"time_s,gpu,power_w\n0,0,1\n5,0,nan\n", -PFLEX_E_PARSE, 3, "power_w", "not a number"},
      {"time_s,gpu,power_w\n0,0,1\n5,0,inf\n", -PFLEX_E_PARSE, 3, "power_w", "not a number"},
      {"time_s,gpu,power_w\n0,0,1\n5,0\n", -PFLEX_E_PARSE, 3, "", "fields where the header has 3"},
      {"time_s,gpu,power_w\n0,0,1\n\n,0,1\n", -PFLEX_E_PARSE, 4, "time_s", "empty"},
      {"time_s,gpu,power_w\n0,-1,1\n", -PFLEX_E_PARSE, 2, "gpu", "not a GPU index"},
      {"time_s,gpu,power_w\n0,1.5,1\n", -PFLEX_E_PARSE, 2, "gpu", "not a GPU index"},
      {"time_s,gpu,power_w,power_w\n0,1,1,1\n", -PFLEX_E_PARSE, 1, "power_w", "twice"},
      {"time_s,gpu,power_w,tokens_per_s\n0,0,1,5\n", -PFLEX_E_DATA, 2, "tokens_per_s", "own rows"},
      {"time_s,gpu,power_w,tokens_per_s\n0,0,1,\n1,,1,5\n", -PFLEX_E_DATA, 3, "power_w",
       "cannot carry GPU metrics"},
      {"time_s,gpu,power_w,tokens_per_s\n0,0,1,\n1,,,-5\n", -PFLEX_E_DATA, 3, "tokens_per_s",
       "negative"},
      {"time_s,gpu,power_w\n0,0,1\n5,0,-500\n", -PFLEX_E_DATA, 3, "power_w", ">= 0 W: -500"},
      {"time_s,gpu,power_w,gpu_util\n0,0,1,101\n", -PFLEX_E_DATA, 2, "gpu_util", "from 0 to 100"},
      {"time_s,gpu,fb_used_mib\n0,0,-1\n", -PFLEX_E_DATA, 2, "fb_used_mib", ">= 0 MiB"},
      {"time_s,gpu,power_w\n0,,1\n", -PFLEX_E_DATA, 2, "gpu", "no throughput column"},
      {"time_s,gpu,power_w,tokens_per_s\n0,,,5\n", -PFLEX_E_DATA, 0, "gpu", "no GPU samples"},
      {"time_s,gpu,power_w\n0,0,\"1\n", -PFLEX_E_PARSE, 2, "", "unterminated quote"},
      {longline, -PFLEX_E_PARSE, 2, "", "more than the"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *p = write_file("bad.csv", cases[i].text);
    struct pflex_series s;
    memset(&s, 0x5a, sizeof s); /* must stay untouched: nothing half-loaded */
    struct pflex_diag d;
    int r = pflex_series_read_csv(p, NULL, &s, &d);
    if (r != cases[i].err || d.line != cases[i].line || strcmp(d.column, cases[i].column) ||
        !strstr(d.message, cases[i].message_part))
      fail_msg("case %zu: got %d line %zu column '%s' message '%s'", i, r, d.line, d.column,
               d.message);
    assert_string_equal(d.file, p);
    unsigned char *b = (unsigned char *)&s;
    for (size_t k = 0; k < sizeof s; k++)
      assert_int_equal(b[k], 0x5a);
  }
  struct pflex_series s;
  struct pflex_diag d;
  assert_int_equal(pflex_series_read_csv("/nonexistent/x.csv", NULL, &s, &d), -ENOENT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_top_mean),
      cmocka_unit_test(test_aggregate_8gpu),
      cmocka_unit_test(test_aggregate_unsorted),
      cmocka_unit_test(test_phases_per_sample),
      cmocka_unit_test(test_phase_options),
      cmocka_unit_test(test_single_gpu_unsorted),
      cmocka_unit_test(test_no_training),
      cmocka_unit_test(test_incomplete_step),
      cmocka_unit_test(test_power_sum_per_step),
      cmocka_unit_test_setup_teardown(test_csv_good, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(test_csv_errors, setup_dir, teardown_dir),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
