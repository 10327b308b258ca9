/* Tests of throughput input from a training job: StatsD parsing, the UDP
 * and Unix datagram receivers, the counter/gauge/timing meter, and the log
 * regex (src/telemetry/statsd.c, src/telemetry/tput_regex.c). */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "assert_near.h"

#include "pflex/tput.h"

static int parse(const char *line, struct pflex_statsd_metric *m) {
  return pflex_statsd_parse_line(line, strlen(line), m);
}

static void test_statsd_lines(void **state) {
  (void)state;
  struct pflex_statsd_metric m;
  assert_int_equal(parse("tokens:8192|c", &m), 0);
  assert_string_equal(m.name, "tokens");
  assert_near(m.value, 8192, 0);
  assert_int_equal(m.type, PFLEX_STATSD_COUNTER);
  assert_near(m.sample_rate, 1.0, 0);

  assert_int_equal(parse("train.tokens_per_s:51234.5|g", &m), 0);
  assert_string_equal(m.name, "train.tokens_per_s");
  assert_int_equal(m.type, PFLEX_STATSD_GAUGE);
  assert_false(m.delta);
  assert_int_equal(parse("queue:-3|g", &m), 0);
  assert_true(m.delta);
  assert_near(m.value, -3, 0);

  assert_int_equal(parse("step_time:812.5|ms", &m), 0);
  assert_int_equal(m.type, PFLEX_STATSD_TIMING);
  assert_near(m.value, 812.5, 0);
  assert_int_equal(parse("step_time:1e3|h", &m), 0);
  assert_int_equal(m.type, PFLEX_STATSD_HISTOGRAM);
  assert_near(m.value, 1000, 0);

  assert_int_equal(parse("tokens:100|c|@0.1", &m), 0);
  assert_near(m.sample_rate, 0.1, 0);
  assert_int_equal(parse("tokens:100|c|#job:llama,rank:0|@0.5", &m), 0); /* DogStatsD tags */
  assert_near(m.sample_rate, 0.5, 0);
  assert_int_equal(parse("tokens:100|c\r", &m), 0);

  const char *bad[] = {
      "",
      "tokens",
      "tokens:",
      "tokens:|c",
      ":5|c",
      "tokens:5",
      "tokens:5|",
      "tokens:5|x",
      "tokens:5|cc",
      "tokens:5|c|@0",
      "tokens:5|c|@1.5",
      "tokens:5|c|@-1",
      "tokens:nan|c",
      "tokens:inf|g",
      "tokens:0x10|c",
      "tok ens:1|c",
      "tokens:1e|c",
      "tokens:5|c|@0.5|@0.5",
      "tokens:5|c|junk",
      "tokens:1:2|c",
      "tokens:5|s",
      "tokens:.|c",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (parse(bad[i], &m) != -EINVAL) fail_msg("accepted malformed line '%s'", bad[i]);
  char longname[200];
  memset(longname, 'a', 150);
  strcpy(longname + 150, ":1|c");
  assert_int_equal(parse(longname, &m), -EINVAL);
}

struct collected {
  char names[16][PFLEX_STATSD_NAME_MAX];
  double values[16];
  double times[16];
  size_t n;
};

static int collect(const struct pflex_statsd_metric *m, double time_s, void *ud) {
  struct collected *c = ud;
  if (c->n < 16) {
    strcpy(c->names[c->n], m->name);
    c->values[c->n] = m->value;
    c->times[c->n] = time_s;
    c->n++;
  }
  return 0;
}

static void test_statsd_packet(void **state) {
  (void)state;
  const char pkt[] = "tokens:4096|c\nloss:2.5|g\n\nnot a metric\nstep_time:850|ms\r\ntokens:1|q\n";
  struct collected c = {0};
  size_t bad = 0;
  assert_int_equal(pflex_statsd_parse_packet(pkt, strlen(pkt), 42.0, collect, &c, &bad), 0);
  assert_int_equal(c.n, 3);
  assert_int_equal(bad, 2);
  assert_string_equal(c.names[0], "tokens");
  assert_string_equal(c.names[1], "loss");
  assert_string_equal(c.names[2], "step_time");
  assert_near(c.times[2], 42.0, 0);
}

static void test_meter_counter(void **state) {
  (void)state;
  struct pflex_tput_meter mt;
  struct pflex_statsd_metric m;
  double t, v;
  pflex_tput_meter_init(&mt, NULL, 0);
  assert_string_equal(mt.name, "tokens");
  assert_int_equal(parse("tokens:1000|c", &m), 0);
  /* The first counter only starts the clock. */
  assert_int_equal(pflex_tput_meter_feed(&mt, &m, 10.0, &t, &v), -EAGAIN);
  /* 1000 tokens in 0.5 s -> 2000 tokens/s, each step. */
  assert_int_equal(pflex_tput_meter_feed(&mt, &m, 10.5, &t, &v), 0);
  assert_near(t, 10.5, 0);
  assert_near(v, 2000, 1e-9);
  /* Sampled at 0.5: 500 counts for 1000 tokens; 1000 in 0.25 s -> 4000/s. */
  assert_int_equal(parse("tokens:500|c|@0.5", &m), 0);
  assert_int_equal(pflex_tput_meter_feed(&mt, &m, 10.75, &t, &v), 0);
  assert_near(v, 4000, 1e-9);
  assert_near(mt.total, 3000, 1e-9);
  struct pflex_statsd_metric other;
  assert_int_equal(parse("loss:1|g", &other), 0);
  assert_int_equal(pflex_tput_meter_feed(&mt, &other, 11, &t, &v), -ENOENT);
  assert_int_equal(parse("tokens:-5|c", &m), 0);
  assert_int_equal(pflex_tput_meter_feed(&mt, &m, 11, &t, &v), -EINVAL);

  /* min_interval 1 s: steps every 0.5 s of 1000 tokens give one sample per
   * second, 2000 tokens over 1 s. */
  pflex_tput_meter_init(&mt, "tokens", 1.0);
  assert_int_equal(parse("tokens:1000|c", &m), 0);
  int samples = 0;
  for (int i = 0; i <= 4; i++) {
    int r = pflex_tput_meter_feed(&mt, &m, 0.5 * i, &t, &v);
    if (r == 0) {
      samples++;
      assert_near(v, 2000, 1e-9);
      assert_near(t, samples * 1.0, 1e-12);
    } else {
      assert_int_equal(r, -EAGAIN);
    }
  }
  assert_int_equal(samples, 2);
}

static void test_meter_gauge_timing(void **state) {
  (void)state;
  struct pflex_tput_meter mt;
  struct pflex_statsd_metric m;
  double t, v;
  pflex_tput_meter_init(&mt, "tps", 0);
  mt.scale = 8; /* per-GPU gauge of an 8-GPU job */
  assert_int_equal(parse("tps:6135|g", &m), 0);
  assert_int_equal(pflex_tput_meter_feed(&mt, &m, 1, &t, &v), 0);
  assert_near(v, 49080, 1e-9);
  assert_int_equal(parse("tps:+5|g", &m), 0);
  assert_int_equal(pflex_tput_meter_feed(&mt, &m, 1, &t, &v), -EINVAL);

  pflex_tput_meter_init(&mt, "step_time", 0);
  assert_int_equal(parse("step_time:800|ms", &m), 0);
  assert_int_equal(pflex_tput_meter_feed(&mt, &m, 2, &t, &v), 0);
  assert_near(v, 1.25, 1e-12); /* 1000 / 800 ms = 1.25 steps/s */
  assert_int_equal(parse("step_time:0|ms", &m), 0);
  assert_int_equal(pflex_tput_meter_feed(&mt, &m, 2, &t, &v), -EINVAL);
}

/* Polls until `want` datagrams arrived or about 5 s passed (generous: this is
 * loopback, it normally takes microseconds). */
static void drain_until(struct pflex_statsd_server *srv, size_t want, struct collected *c,
                        size_t *packets, size_t *bad) {
  for (int i = 0; i < 50 && *packets < want; i++)
    assert_int_equal(pflex_statsd_poll(srv, 100, collect, c, packets, bad), 0);
}

static void test_udp_round_trip(void **state) {
  (void)state;
  struct pflex_statsd_server *srv;
  assert_int_equal(pflex_statsd_open("udp:127.0.0.1:0", &srv), 0);
  char addr[128];
  assert_int_equal(pflex_statsd_address(srv, addr, sizeof addr), 0);
  unsigned port = 0;
  assert_int_equal(sscanf(addr, "udp:127.0.0.1:%u", &port), 1);
  assert_true(port > 0 && port < 65536);

  /* Nothing queued: drain returns at once. */
  struct collected c = {0};
  size_t packets = 0, bad = 0;
  assert_int_equal(pflex_statsd_drain(srv, collect, &c, &packets, &bad), 0);
  assert_int_equal(packets, 0);

  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  assert_true(fd >= 0);
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_port = htons((unsigned short)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  double before = pflex_tput_now();
  const char *p1 = "tokens:4096|c\ntokens:4096|c";
  const char *p2 = "garbage\nstep_time:812|ms\n";
  assert_true(sendto(fd, p1, strlen(p1), 0, (struct sockaddr *)&sa, sizeof sa) > 0);
  assert_true(sendto(fd, p2, strlen(p2), 0, (struct sockaddr *)&sa, sizeof sa) > 0);
  close(fd);
  drain_until(srv, 2, &c, &packets, &bad);
  double after = pflex_tput_now();
  assert_int_equal(packets, 2);
  assert_int_equal(c.n, 3);
  assert_int_equal(bad, 1);
  assert_string_equal(c.names[2], "step_time");
  assert_near(c.values[0], 4096, 0);
  /* The receive time is on the CLOCK_REALTIME scale, between sending and
   * reading (1 s of slack: this checks the clock, not speed). */
  for (size_t i = 0; i < c.n; i++)
    assert_true(c.times[i] >= before - 1 && c.times[i] <= after + 1);
  pflex_statsd_close(srv);
}

static void test_unix_round_trip(void **state) {
  (void)state;
  char dir[] = "/tmp/pflex-test-tput-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[128], address[160];
  snprintf(path, sizeof path, "%s/statsd.sock", dir);
  snprintf(address, sizeof address, "unix:%s", path);

  /* An existing file that is not a socket is not replaced. */
  FILE *fp = fopen(path, "w");
  assert_non_null(fp);
  fclose(fp);
  struct pflex_statsd_server *srv;
  assert_int_equal(pflex_statsd_open(address, &srv), -EEXIST);
  unlink(path);

  assert_int_equal(pflex_statsd_open(address, &srv), 0);
  char got[160];
  assert_int_equal(pflex_statsd_address(srv, got, sizeof got), 0);
  assert_string_equal(got, address);

  int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
  assert_true(fd >= 0);
  struct sockaddr_un sa = {0};
  sa.sun_family = AF_UNIX;
  strcpy(sa.sun_path, path);
  const char *p = "tokens:2048|c\n";
  for (int i = 0; i < 3; i++)
    assert_true(sendto(fd, p, strlen(p), 0, (struct sockaddr *)&sa, sizeof sa) > 0);
  close(fd);
  struct collected c = {0};
  size_t packets = 0, bad = 0;
  drain_until(srv, 3, &c, &packets, &bad);
  assert_int_equal(packets, 3);
  assert_int_equal(c.n, 3);
  assert_int_equal(bad, 0);
  assert_near(c.values[2], 2048, 0);
  pflex_statsd_close(srv);
  struct stat st;
  assert_int_equal(stat(path, &st), -1); /* the socket file is removed */
  rmdir(dir);
}

static void test_bad_addresses(void **state) {
  (void)state;
  const char *bad[] = {"tcp:127.0.0.1:8125",
                       "udp:127.0.0.1",
                       "udp:127.0.0.1:abc",
                       "udp:127.0.0.1:70000",
                       "udp::",
                       "unix:",
                       "8125",
                       "udp:[::1:5"};
  struct pflex_statsd_server *srv;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (pflex_statsd_open(bad[i], &srv) != -EINVAL) fail_msg("accepted address '%s'", bad[i]);
}

/* ---- regex ---- */

static int rx(const struct pflex_tput_regex *re, const char *line, double *v) {
  return pflex_tput_regex_match(re, line, v);
}

static void test_regex_default(void **state) {
  (void)state;
  struct pflex_tput_regex re;
  assert_int_equal(pflex_tput_regex_init(&re, NULL, NULL, 0), 0);
  double v;
  /* torchtitan (coloured, thousands separator; tps is per GPU there). */
  assert_int_equal(
      rx(&re,
         "[rank0]:[titan] 2026-11-30 12:00:05,123 - root - INFO - \033[31mstep: 20  "
         "\033[32mloss:  7.2345  \033[33mmemory: 61.20GiB(43.82%)  \033[34mtps: 6,135  "
         "\033[36mtflops: 355.34  \033[35mmfu: 35.93%\033[39m",
         &v),
      0);
  assert_near(v, 6135, 0);
  /* Hugging Face Trainer summary with include_tokens_per_second=True. */
  assert_int_equal(rx(&re,
                      "{'train_runtime': 1805.3, 'train_samples_per_second': 17.7, "
                      "'train_steps_per_second': 0.277, 'train_tokens_per_second': 72450.5, "
                      "'train_loss': 1.93, 'epoch': 1.0}",
                      &v),
                   0);
  assert_near(v, 72450.5, 1e-9);
  /* A custom per-step line and JSON. */
  assert_int_equal(rx(&re, "step 120 | loss 2.31 | tokens/s=51234 | lr 3.0e-04", &v), 0);
  assert_near(v, 51234, 0);
  assert_int_equal(rx(&re, "{\"step\": 7, \"tokens_per_sec\": 1.25e5, \"loss\": 3.2}", &v), 0);
  assert_near(v, 125000, 0);
  assert_int_equal(rx(&re, "it 40: Tokens per second: 98,765.4", &v), 0);
  assert_near(v, 98765.4, 1e-9);
  assert_int_equal(rx(&re, "tok/s: 4100", &v), 0);
  assert_near(v, 4100, 0);

  /* Lines that must not give a throughput. Megatron prints no tokens/s
   * (TFLOP/s must not be taken for it); torchtitan's evaluation line is skipped. */
  const char *no[] = {
      " [2026-11-30 12:00:01] iteration      100/  500000 | consumed samples:        12800 | "
      "elapsed time per iteration (ms): 1523.4 | throughput per GPU (TFLOP/s/GPU): 412.7 | "
      "learning rate: 2.999999E-04 | global batch size:   128 | lm loss: 2.345678E+00 |",
      "evaluation:  step: 100  loss:  2.1000  memory: 30.00GiB(21.48%)  tps: 20,000  mfu: 40.00%",
      "{'eval_loss': 2.0, 'eval_runtime': 10.0, 'eval_samples_per_second': 50.0, "
      "'eval_tokens_per_second': 90000.0}",
      "https://example.com:443/steps: 100",
      "outputs: 5  steps: 12",
      "tps: n/a",
      "",
  };
  for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
    if (rx(&re, no[i], &v) != -ENOENT) fail_msg("matched '%s'", no[i]);
  assert_int_equal(rx(&re, "tps: 0", &v), -EINVAL); /* matched, but no usable rate */
  pflex_tput_regex_release(&re);

  /* Without the skip pattern the evaluation line counts. */
  struct pflex_tput_regex_opts o = {.skip = ""};
  assert_int_equal(pflex_tput_regex_init(&re, &o, NULL, 0), 0);
  assert_int_equal(rx(&re, no[1], &v), 0);
  assert_near(v, 20000, 0);
  pflex_tput_regex_release(&re);
}

static void test_regex_user(void **state) {
  (void)state;
  struct pflex_tput_regex re;
  char err[128] = "";
  /* Megatron: time per iteration in ms -> steps/s with per_step_time and scale 1000. */
  struct pflex_tput_regex_opts o = {.pattern = "elapsed time per iteration \\(ms\\): ([0-9.]+)",
                                    .per_step_time = true,
                                    .scale = 1000};
  assert_int_equal(pflex_tput_regex_init(&re, &o, err, sizeof err), 0);
  double v;
  assert_int_equal(rx(&re,
                      " [2026-11-30 12:00:01] iteration      100/  500000 | consumed samples:   "
                      "     12800 | elapsed time per iteration (ms): 1600.0 | learning rate: "
                      "3.0E-04 |",
                      &v),
                   0);
  assert_near(v, 0.625, 1e-12); /* 1000 / 1600 */
  pflex_tput_regex_release(&re);

  o = (struct pflex_tput_regex_opts){.pattern = "no group here"};
  assert_int_equal(pflex_tput_regex_init(&re, &o, err, sizeof err), -EINVAL);
  assert_non_null(strstr(err, "capture group"));
  pflex_tput_regex_release(&re); /* safe after a failed init */
  o.pattern = "(unbalanced";
  assert_int_equal(pflex_tput_regex_init(&re, &o, err, sizeof err), -EINVAL);
  assert_true(err[0] != '\0');
}

struct values {
  double v[16];
  size_t n;
};

static int keep(double time_s, double value, void *ud) {
  (void)time_s;
  struct values *vs = ud;
  if (vs->n < 16) vs->v[vs->n++] = value;
  return 0;
}

static void test_regex_feed(void **state) {
  (void)state;
  struct pflex_tput_regex re;
  assert_int_equal(pflex_tput_regex_init(&re, NULL, NULL, 0), 0);
  struct values vs = {0};
  /* Lines split across reads, CRLF, tqdm-style '\r' rewrites, an unmatched
   * line, and a last line without newline flushed by len 0. */
  const char *chunks[] = {"step 1 tps: 10", "0\r\nstep 2 loss 3\nstep 3 tps",
                          ": 300\r 40%|####  | tps: 400", "\nstep 5 tps: 500"};
  for (size_t i = 0; i < 4; i++)
    assert_int_equal(pflex_tput_regex_feed(&re, chunks[i], strlen(chunks[i]), 1.0, keep, &vs), 0);
  assert_int_equal(vs.n, 3);
  assert_int_equal(pflex_tput_regex_feed(&re, NULL, 0, 1.0, keep, &vs), 0);
  assert_int_equal(vs.n, 4);
  assert_near(vs.v[0], 100, 0);
  assert_near(vs.v[1], 300, 0);
  assert_near(vs.v[2], 400, 0);
  assert_near(vs.v[3], 500, 0);
  assert_int_equal(re.matched, 4);
  pflex_tput_regex_release(&re);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_statsd_lines),   cmocka_unit_test(test_statsd_packet),
      cmocka_unit_test(test_meter_counter),  cmocka_unit_test(test_meter_gauge_timing),
      cmocka_unit_test(test_udp_round_trip), cmocka_unit_test(test_unix_round_trip),
      cmocka_unit_test(test_bad_addresses),  cmocka_unit_test(test_regex_default),
      cmocka_unit_test(test_regex_user),     cmocka_unit_test(test_regex_feed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
