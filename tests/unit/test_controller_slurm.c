/* Unit tests of the controller's discovery from Slurm: the parsers of
 * `sinfo --json` and `squeue --json` on output captured from Slurm 22.05.8
 * on the test bed (tests/unit/slurm/captured-22.05/, README there), every
 * malformed field refused by name, Slurm's own "errors" refused, the agents'
 * URLs from the template, the bounded runs of the commands (fake sinfo and
 * squeue scripts: success, exit status, time limit, too much output, a
 * missing program), and a new inventory applied to a controller: state
 * carried by URL, a departed node kept while it may hold our caps. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "controller/controller.h"
#include "controller/discover_slurm.h"
#include "controller/run_cmd.h"
#include "controller/slurm_json.h"

#define FIXTURES PFLEX_SOURCE_DIR "/tests/unit/slurm/captured-22.05/"

static char *slurp(const char *name, size_t *ret_len) {
  char path[512];
  snprintf(path, sizeof path, FIXTURES "%s", name);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  char *buf = malloc(1 << 20);
  assert_non_null(buf);
  size_t n = fread(buf, 1, (1 << 20) - 1, f);
  fclose(f);
  buf[n] = '\0';
  *ret_len = n;
  return buf;
}

static int nodes_of(const char *fixture, struct ctl_slurm_nodes *ret, char *err) {
  size_t len;
  char *s = slurp(fixture, &len);
  int rc = ctl_slurm_parse_nodes(s, len, ret, err, 256);
  free(s);
  return rc;
}

static void captured_nodes_parse(void **state) {
  (void)state;
  static const struct {
    const char *fixture, *state;
    bool drain;
  } cases[] = {
      {"sinfo_idle.json", "idle", false},         {"sinfo_allocated.json", "allocated", false},
      {"sinfo_draining.json", "allocated", true}, {"sinfo_drained.json", "idle", true},
      {"sinfo_down.json", "down", true},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct ctl_slurm_nodes n;
    char err[256] = "";
    assert_int_equal(nodes_of(cases[i].fixture, &n, err), 0);
    assert_int_equal(n.n, 1);
    assert_string_equal(n.v[0].addr, "127.0.0.1");
    assert_string_equal(n.v[0].state, cases[i].state);
    assert_true(n.v[0].drain == cases[i].drain);
    assert_true(n.v[0].gpus);
    /* A down or drained node is still an agent: its GPUs may need restoring. */
    assert_true(ctl_discovery_is_agent(&n.v[0]));
    ctl_slurm_nodes_release(&n);
  }
}

static void captured_jobs_parse(void **state) {
  (void)state;
  size_t len;
  char *s = slurp("squeue_running.json", &len);
  struct ctl_slurm_jobs j;
  char err[256] = "";
  assert_int_equal(ctl_slurm_parse_jobs(s, len, &j, err, sizeof err), 0);
  free(s);
  /* Jobs 1 (gpu:1) and 2 (gpu:2) run on the node; job 3 is pending. */
  assert_int_equal(j.n, 2);
  assert_string_equal(j.v[0].id, "1");
  assert_string_equal(j.v[1].id, "2");
  for (size_t i = 0; i < 2; i++) {
    assert_int_equal(j.v[i].count, 1);
    assert_true(j.v[i].gpus);
    assert_true(j.v[i].start_time > 1.7e9);
  }
  char host[64];
  size_t hl;
  char *idle = slurp("sinfo_idle.json", &hl);
  json_t *o = json_loads(idle, 0, NULL);
  snprintf(host, sizeof host, "%s",
           json_string_value(json_object_get(json_array_get(json_object_get(o, "nodes"), 0), "name")));
  json_decref(o);
  free(idle);
  assert_string_equal(j.names[j.v[0].first], host);
  ctl_slurm_jobs_release(&j);
  /* Cancelled jobs (kept by slurmctld for MinJobAge) and an empty queue: no running jobs. */
  const char *none[] = {"squeue_cancelled.json", "squeue_empty.json"};
  for (size_t k = 0; k < 2; k++) {
    s = slurp(none[k], &len);
    assert_int_equal(ctl_slurm_parse_jobs(s, len, &j, err, sizeof err), 0);
    assert_int_equal(j.n, 0);
    ctl_slurm_jobs_release(&j);
    free(s);
  }
}

/* Slurm 22.05 without slurmctld: exit 0, an "errors" entry and empty lists. */
static void slurm_errors_are_failures(void **state) {
  (void)state;
  struct ctl_slurm_nodes n;
  char err[256] = "";
  assert_int_equal(nodes_of("sinfo_no_slurmctld.json", &n, err), -EPROTO);
  assert_non_null(strstr(err, "sinfo --json reports an error: Unspecified error"));
  size_t len;
  char *s = slurp("squeue_no_slurmctld.json", &len);
  struct ctl_slurm_jobs j;
  assert_int_equal(ctl_slurm_parse_jobs(s, len, &j, err, sizeof err), -EPROTO);
  assert_non_null(strstr(err, "slurm_load_jobs: Failed while looking for jobs"));
  free(s);
}

/* The captured document with one change (a jansson path edit), re-serialised. */
static char *edited(const char *fixture, void (*edit)(json_t *root)) {
  size_t len;
  char *s = slurp(fixture, &len);
  json_t *root = json_loads(s, 0, NULL);
  free(s);
  assert_non_null(root);
  edit(root);
  char *out = json_dumps(root, JSON_COMPACT);
  json_decref(root);
  return out;
}

static json_t *node0(json_t *r) {
  return json_array_get(json_object_get(r, "nodes"), 0);
}
static json_t *job0(json_t *r) {
  return json_array_get(json_object_get(r, "jobs"), 0);
}
static void no_name(json_t *r) {
  json_object_del(node0(r), "name");
}
static void slash_name(json_t *r) {
  json_object_set_new(node0(r), "name", json_string("gpu1/../x"));
}
static void numeric_state(json_t *r) {
  json_object_set_new(node0(r), "state", json_integer(3));
}
static void flags_string(json_t *r) {
  json_object_set_new(node0(r), "state_flags", json_string("DRAIN"));
}
static void no_gres(json_t *r) {
  json_object_del(node0(r), "gres");
}
static void no_nodes(json_t *r) {
  json_object_del(r, "nodes");
}
static void twice(json_t *r) {
  json_array_append(json_object_get(r, "nodes"), node0(r));
}
static void errors_object(json_t *r) {
  json_object_set_new(r, "errors", json_object());
}
static void job_id_string(json_t *r) {
  json_object_set_new(job0(r), "job_id", json_string("1"));
}
static void no_resources(json_t *r) {
  json_object_del(job0(r), "job_resources");
}
static void nodename_number(json_t *r) {
  json_t *an = json_object_get(json_object_get(job0(r), "job_resources"), "allocated_nodes");
  json_object_set_new(json_array_get(an, 0), "nodename", json_integer(1));
}
static void no_state(json_t *r) {
  json_object_del(job0(r), "job_state");
}
static void gres_detail_string(json_t *r) {
  json_object_set_new(job0(r), "gres_detail", json_string("gpu:1"));
}

static void malformed_fields_are_named(void **state) {
  (void)state;
  static const struct {
    const char *fixture;
    void (*edit)(json_t *);
    const char *want;
  } cases[] = {
      {"sinfo_idle.json", no_name, "nodes[0].name: missing or not a string"},
      {"sinfo_idle.json", slash_name, "nodes[0].name: not a usable name"},
      {"sinfo_idle.json", numeric_state, "nodes[0].state: missing or not a string"},
      {"sinfo_idle.json", flags_string, "nodes[0].state_flags: not an array"},
      {"sinfo_idle.json", no_gres, "nodes[0].gres: missing"},
      {"sinfo_idle.json", no_nodes, "sinfo --json: nodes: missing or not an array"},
      {"sinfo_idle.json", twice, "listed twice"},
      {"sinfo_idle.json", errors_object, "errors: not an array"},
      {"squeue_running.json", job_id_string, "jobs[0].job_id: missing or not a positive integer"},
      {"squeue_running.json", no_resources,
       "jobs[0].job_resources.allocated_nodes: missing or empty for a running job"},
      {"squeue_running.json", nodename_number,
       "jobs[0].job_resources.allocated_nodes[0].nodename"},
      {"squeue_running.json", no_state, "jobs[0].job_state: missing or not a string"},
      {"squeue_running.json", gres_detail_string, "jobs[0].gres_detail: not an array"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *doc = edited(cases[i].fixture, cases[i].edit);
    char err[256] = "";
    int rc;
    if (cases[i].fixture[1] == 'i') {
      struct ctl_slurm_nodes n = {0};
      rc = ctl_slurm_parse_nodes(doc, strlen(doc), &n, err, sizeof err);
      assert_null(n.v); /* nothing written on failure */
    } else {
      struct ctl_slurm_jobs j = {0};
      rc = ctl_slurm_parse_jobs(doc, strlen(doc), &j, err, sizeof err);
      assert_null(j.v);
    }
    free(doc);
    if (rc != -EINVAL || !strstr(err, cases[i].want))
      fail_msg("case %zu: rc %d, err '%s', want '%s'", i, rc, err, cases[i].want);
  }
  char err[256];
  struct ctl_slurm_nodes n;
  assert_int_equal(ctl_slurm_parse_nodes("{\"nodes\":[", 10, &n, err, sizeof err), -EINVAL);
  assert_non_null(strstr(err, "sinfo --json: malformed JSON"));
  assert_int_equal(ctl_slurm_parse_nodes("[]", 2, &n, err, sizeof err), -EINVAL);
  assert_non_null(strstr(err, "not a JSON object"));
}

static void set_state_future(json_t *r) {
  json_object_set_new(node0(r), "state", json_string("future"));
}
static void set_powered_down(json_t *r) {
  json_array_append_new(json_object_get(node0(r), "state_flags"), json_string("POWERED_DOWN"));
}
static void set_cpu_only(json_t *r) {
  json_object_set_new(node0(r), "gres", json_string(""));
}
static void set_other_gres(json_t *r) {
  json_object_set_new(node0(r), "gres", json_string("gpux:1,fpga:2"));
}
static void set_typed_gpu(json_t *r) {
  json_object_set_new(node0(r), "gres", json_string("fpga:1,gpu:h100:8(S:0-1)"));
}

/* Which nodes are agents (the captured node, edited). */
static void agents_are_gpu_nodes_in_service(void **state) {
  (void)state;
  static const struct {
    void (*edit)(json_t *);
    bool agent;
  } cases[] = {{set_state_future, false},
               {set_powered_down, false},
               {set_cpu_only, false},
               {set_other_gres, false},
               {set_typed_gpu, true}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *doc = edited("sinfo_idle.json", cases[i].edit);
    struct ctl_slurm_nodes n;
    char err[256];
    assert_int_equal(ctl_slurm_parse_nodes(doc, strlen(doc), &n, err, sizeof err), 0);
    free(doc);
    if (ctl_discovery_is_agent(&n.v[0]) != cases[i].agent) fail_msg("case %zu", i);
    ctl_slurm_nodes_release(&n);
  }
}

static void urls_from_the_template(void **state) {
  (void)state;
  char err[256];
  assert_int_equal(ctl_discovery_template_check("http://{node}:9400", err, sizeof err), 0);
  assert_int_equal(ctl_discovery_template_check("https://{addr}:9400/", err, sizeof err), 0);
  const char *bad[] = {"http://gpu:9400", "ftp://{node}:1", "http://{host}:1", "http://{node} :1"};
  for (size_t i = 0; i < 4; i++) {
    assert_int_equal(ctl_discovery_template_check(bad[i], err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "agent_url_template"));
  }
  struct ctl_slurm_node nd = {.name = "gpu007", .addr = "10.1.2.7", .gpus = true};
  char url[CTL_URL_MAX];
  assert_true(ctl_discovery_node_url("http://{node}.cluster:9400", &nd, url, sizeof url));
  assert_string_equal(url, "http://gpu007.cluster:9400");
  assert_true(ctl_discovery_node_url("http://{addr}:9400", &nd, url, sizeof url));
  assert_string_equal(url, "http://10.1.2.7:9400");
  snprintf(nd.addr, sizeof nd.addr, "fd00::7");
  assert_true(ctl_discovery_node_url("http://{addr}:9400", &nd, url, sizeof url));
  assert_string_equal(url, "http://[fd00::7]:9400");
  assert_false(ctl_discovery_node_url("http://{node}:9400", &nd, url, 16));
  /* Sorted, without duplicates, only agents. */
  struct ctl_slurm_node v[3] = {{.name = "b", .addr = "h", .state = "idle", .gpus = true},
                                {.name = "a", .addr = "h", .state = "down", .gpus = true},
                                {.name = "c", .addr = "h", .state = "idle", .gpus = false}};
  struct ctl_slurm_nodes nodes = {v, 3};
  struct ctl_inventory inv;
  assert_int_equal(ctl_discovery_urls(&nodes, "http://{node}:1", &inv, err, sizeof err), 0);
  assert_int_equal(inv.n, 2);
  assert_string_equal(inv.urls[0], "http://a:1");
  assert_string_equal(inv.urls[1], "http://b:1");
  ctl_inventory_release(&inv);
  assert_int_equal(ctl_discovery_urls(&nodes, "http://{addr}:1", &inv, err, sizeof err), 0);
  assert_int_equal(inv.n, 1);
  ctl_inventory_release(&inv);
}

/* A directory of fake sinfo/squeue scripts. */
static char bindir[64];

static void fake(const char *name, const char *script) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", bindir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "#!/bin/sh\n%s\n", script);
  fclose(f);
  chmod(path, 0755);
}

static int setup_bindir(void **state) {
  (void)state;
  snprintf(bindir, sizeof bindir, "/tmp/pflex-slurm-XXXXXX");
  return mkdtemp(bindir) ? 0 : -1;
}

static int teardown_bindir(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", bindir);
  return system(cmd) == 0 ? 0 : -1;
}

static struct ctl_config poll_cfg(double timeout_s) {
  struct ctl_config cfg;
  ctl_config_defaults(&cfg);
  snprintf(cfg.slurm_bin_dir, sizeof cfg.slurm_bin_dir, "%s", bindir);
  cfg.slurm_timeout_s = timeout_s;
  cfg.slurm_max_output_mb = 1;
  return cfg;
}

static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Running, as opposed to gone or a zombie waiting for init to reap it. */
static bool alive(int pid) {
  char path[64], buf[256];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f) return false;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')');
  return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

static int poll_with(const char *sinfo, const char *squeue, double timeout_s, char *err) {
  fake("sinfo", sinfo);
  fake("squeue", squeue);
  struct ctl_config cfg = poll_cfg(timeout_s);
  struct ctl_slurm_nodes n;
  struct ctl_slurm_jobs j;
  int rc = ctl_discovery_poll(&cfg, &n, &j, err, 512);
  if (rc == 0) {
    assert_int_equal(n.n, 1);
    assert_int_equal(j.n, 2);
    ctl_slurm_nodes_release(&n);
    ctl_slurm_jobs_release(&j);
  }
  return rc;
}

static void polls_fail_clearly(void **state) {
  (void)state;
  char err[512] = "";
  const char *sinfo_ok = "cat " FIXTURES "sinfo_idle.json";
  const char *squeue_ok = "cat " FIXTURES "squeue_running.json";
  assert_int_equal(poll_with(sinfo_ok, squeue_ok, 5, err), 0);
  assert_int_equal(poll_with(sinfo_ok, "echo 'squeue: error: boom' >&2; exit 3", 5, err), -EIO);
  assert_string_equal(err, "squeue --json: exit status 3: squeue: error: boom");
  assert_int_equal(poll_with(sinfo_ok, "cat " FIXTURES "squeue_no_slurmctld.json", 5, err),
                   -EPROTO);
  assert_int_equal(poll_with("echo '{\"nodes\":['", squeue_ok, 5, err), -EINVAL);
  assert_non_null(strstr(err, "sinfo --json: malformed JSON"));
  /* A slow command is killed at the time limit, with whatever it started. */
  char pidfile[128], script[256];
  snprintf(pidfile, sizeof pidfile, "%s/sleeper.pid", bindir);
  snprintf(script, sizeof script, "sleep 30 & echo $! > %s; wait", pidfile);
  double t0 = mono();
  assert_int_equal(poll_with(script, squeue_ok, 0.3, err), -ETIMEDOUT);
  assert_true(mono() - t0 < 3);
  assert_non_null(strstr(err, "sinfo --json: no answer within 0.3 s"));
  FILE *f = fopen(pidfile, "r");
  int pid = 0;
  assert_non_null(f);
  assert_int_equal(fscanf(f, "%d", &pid), 1);
  fclose(f);
  for (int i = 0; i < 100 && alive(pid); i++)
    usleep(10000);
  assert_false(alive(pid)); /* the whole process group went */
  /* Output past slurm_max_output_mb (1 MiB here). */
  assert_int_equal(poll_with("head -c 3000000 /dev/zero", squeue_ok, 5, err), -EFBIG);
  assert_non_null(strstr(err, "more than 1 MiB of output"));
  /* No program there. */
  char gone[128];
  snprintf(gone, sizeof gone, "%s/squeue", bindir);
  fake("sinfo", sinfo_ok);
  unlink(gone);
  struct ctl_config cfg = poll_cfg(5);
  struct ctl_slurm_nodes n;
  struct ctl_slurm_jobs j;
  assert_int_equal(ctl_discovery_poll(&cfg, &n, &j, err, sizeof err), -ENOENT);
  assert_non_null(strstr(err, "cannot run"));
  /* A Slurm whose nodes have no GPU is no inventory. */
  assert_int_equal(poll_with("cat " FIXTURES "sinfo_idle.json | sed 's/\"gpu:4\"/\"\"/'",
                             squeue_ok, 5, err),
                   -ENODEV);
}

/* A controller with nodes at these URLs (no thread, a discovery by hand). */
static void controller_with(struct ctl_controller *c, const char *const *urls, size_t n) {
  memset(c, 0, sizeof *c);
  ctl_config_defaults(&c->cfg);
  snprintf(c->cfg.agent_url_template, sizeof c->cfg.agent_url_template, "http://{node}:1");
  pthread_mutex_init(&c->lock, NULL);
  c->nodes = calloc(n, sizeof *c->nodes);
  c->reqs = calloc(2 * n, sizeof *c->reqs);
  c->bodies = calloc(n, sizeof *c->bodies);
  c->nnodes = n;
  for (size_t i = 0; i < n; i++)
    snprintf(c->nodes[i].url, sizeof c->nodes[i].url, "%s", urls[i]);
  assert_int_equal(ctl_client_new(urls, n, NULL, &c->client), 0);
  c->disc = calloc(1, sizeof *c->disc);
  c->disc->cfg = c->cfg;
  pthread_mutex_init(&c->disc->lock, NULL);
  pthread_cond_init(&c->disc->wake, NULL);
}

static void controller_free(struct ctl_controller *c) {
  ctl_discovery_close(c->disc);
  ctl_client_free(c->client);
  free(c->nodes);
  free(c->reqs);
  free(c->bodies);
  ctl_inventory_release(&c->inv);
  pthread_mutex_destroy(&c->lock);
}

/* The thread's next result: these node names, all GPU nodes. */
static void publish(struct ctl_controller *c, const char *const *names, size_t n) {
  struct ctl_discovery *d = c->disc;
  ctl_slurm_nodes_release(&d->new_nodes);
  d->new_nodes.v = calloc(n + 1, sizeof *d->new_nodes.v);
  d->new_nodes.n = n;
  for (size_t i = 0; i < n; i++) {
    snprintf(d->new_nodes.v[i].name, CTL_SLURM_NAME_MAX, "%s", names[i]);
    snprintf(d->new_nodes.v[i].state, sizeof d->new_nodes.v[i].state, "idle");
    d->new_nodes.v[i].gpus = true;
  }
  d->st.generation++;
}

static struct ctl_node *node(struct ctl_controller *c, const char *url) {
  for (size_t i = 0; i < c->nnodes; i++)
    if (strcmp(c->nodes[i].url, url) == 0) return &c->nodes[i];
  return NULL;
}

static void departed_nodes_stay_until_restored(void **state) {
  (void)state;
  struct ctl_controller c;
  const char *urls[] = {"http://a:1", "http://b:1", "http://c:1"};
  controller_with(&c, urls, 3);
  for (size_t i = 0; i < 3; i++)
    c.nodes[i].seen = true;
  c.nodes[0].failures = 7;                                /* some state to carry */
  c.nodes[1].has_acked = c.nodes[1].restore_pending = true; /* b holds our caps */
  /* b and c leave, d joins. */
  publish(&c, (const char *[]){"a", "d"}, 2);
  ctl_discovery_apply(&c);
  assert_int_equal(c.nnodes, 3);
  assert_int_equal(node(&c, "http://a:1")->failures, 7);
  assert_false(node(&c, "http://a:1")->departed);
  assert_true(node(&c, "http://d:1")->restore_pending); /* unknown until it answers */
  assert_true(node(&c, "http://b:1")->departed);         /* kept: it holds our caps */
  assert_null(node(&c, "http://c:1"));                   /* held none: gone */
  /* Nothing new, b still pending: it stays. */
  ctl_discovery_apply(&c);
  assert_non_null(node(&c, "http://b:1"));
  /* Its lift confirmed (lift_caps clears both): it goes at the next round. */
  node(&c, "http://b:1")->restore_pending = false;
  node(&c, "http://b:1")->has_acked = false;
  ctl_discovery_apply(&c);
  assert_null(node(&c, "http://b:1"));
  assert_int_equal(c.nnodes, 2);
  assert_int_equal(c.inv.n, 2);
  controller_free(&c);
}

static void a_departed_node_that_returns_is_an_agent_again(void **state) {
  (void)state;
  struct ctl_controller c;
  const char *urls[] = {"http://a:1", "http://b:1"};
  controller_with(&c, urls, 2);
  c.nodes[1].seen = c.nodes[1].restore_pending = true;
  c.nodes[1].acked_w[0] = 300;
  publish(&c, (const char *[]){"a"}, 1);
  ctl_discovery_apply(&c);
  assert_true(node(&c, "http://b:1")->departed);
  publish(&c, (const char *[]){"a", "b"}, 2);
  ctl_discovery_apply(&c);
  assert_false(node(&c, "http://b:1")->departed);
  assert_true(node(&c, "http://b:1")->acked_w[0] == 300);
  /* Never answered and gone: dropped at once (it holds nothing of ours). */
  publish(&c, (const char *[]){"b"}, 1);
  ctl_discovery_apply(&c);
  assert_null(node(&c, "http://a:1"));
  assert_int_equal(c.nnodes, 1);
  controller_free(&c);
}

/* Slurm's running jobs against what the agents list: a job with GPUs that
 * no answering agent of its nodes registered, past the grace after its
 * start, is unregistered; one whose node did not answer, one just started,
 * one without GPUs or one registered is not. */
static void unregistered_jobs_are_reported(void **state) {
  (void)state;
  struct ctl_controller c;
  const char *urls[] = {"http://a:1", "http://b:1"};
  controller_with(&c, urls, 2);
  c.nodes[0].reachable = true; /* b does not answer */
  struct ctl_discovery *d = c.disc;
  publish(&c, (const char *[]){"a", "b"}, 2);
  ctl_discovery_apply(&c);
  double now = 2e9;
  static const struct {
    const char *id, *node;
    bool gpus;
    double age_s;
  } jobs[] = {{"10", "a", true, 600}, {"11", "b", true, 600}, {"12", "a", true, 5},
              {"13", "a", false, 600}, {"14", "a", true, 600}};
  size_t nj = sizeof jobs / sizeof jobs[0];
  d->jobs.v = calloc(nj, sizeof *d->jobs.v);
  d->jobs.names = calloc(nj, sizeof *d->jobs.names);
  for (size_t i = 0; i < nj; i++) {
    snprintf(d->jobs.names[i], CTL_SLURM_NAME_MAX, "%s", jobs[i].node);
    d->jobs.v[i] = (struct ctl_slurm_job){.first = i, .count = 1, .gpus = jobs[i].gpus,
                                          .start_time = now - jobs[i].age_s};
    snprintf(d->jobs.v[i].id, sizeof d->jobs.v[i].id, "%s", jobs[i].id);
  }
  d->jobs.n = d->jobs.nnames = nj;
  /* pflexd lists job 14. */
  ctl_jobset_init(&c.jobs);
  c.jobs.v = calloc(1, sizeof *c.jobs.v);
  snprintf(c.jobs.v[0].id, sizeof c.jobs.v[0].id, "14");
  c.jobs.v[0].present = true;
  c.jobs.n = c.jobs.cap = 1;
  json_t *o = ctl_discovery_json(&c, now);
  assert_non_null(o);
  char *un = json_dumps(json_object_get(o, "unregistered"), JSON_COMPACT);
  assert_string_equal(un, "[\"10\"]");
  free(un);
  json_t *j14 = json_array_get(json_object_get(o, "jobs"), 4);
  assert_string_equal(json_string_value(json_object_get(j14, "id")), "14");
  assert_true(json_is_true(json_object_get(j14, "registered")));
  assert_int_equal(d->unregistered, 1);
  char *m = ctl_discovery_metrics(&c, now);
  assert_non_null(strstr(m, "\npflex_controller_slurm_jobs_unregistered 1\n"));
  assert_non_null(strstr(m, "\npflex_controller_slurm_jobs 5\n"));
  free(m);
  json_decref(o);
  ctl_jobset_release(&c.jobs);
  controller_free(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(captured_nodes_parse),
      cmocka_unit_test(captured_jobs_parse),
      cmocka_unit_test(slurm_errors_are_failures),
      cmocka_unit_test(malformed_fields_are_named),
      cmocka_unit_test(agents_are_gpu_nodes_in_service),
      cmocka_unit_test(urls_from_the_template),
      cmocka_unit_test_setup_teardown(polls_fail_clearly, setup_bindir, teardown_bindir),
      cmocka_unit_test(departed_nodes_stay_until_restored),
      cmocka_unit_test(a_departed_node_that_returns_is_an_agent_again),
      cmocka_unit_test(unregistered_jobs_are_reported),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
