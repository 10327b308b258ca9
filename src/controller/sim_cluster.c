/* `pflex-controller sim-cluster`: a simulated cluster of real pflexd agents
 * on loopback, each on the fake NVML with this process as its physics
 * (sim_world.h), driven by a real pflex-controller; it fires one event,
 * injects faults, and scores the run (sim_score.h). Everything simulated is
 * labelled so in the JSON ("simulated": true). */
#include "controller/sim_cluster.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "controller/client.h"
#include "controller/controller.h"
#include "controller/sim_host.h"
#include "controller/sim_hosted.h"
#include "controller/sim_model.h"
#include "controller/sim_procs.h"
#include "controller/sim_score.h"
#include "controller/sim_world.h"
#include "pflex/error.h"
#include "pflex/runs_csv.h"
#include "pflex/twin.h"

#define MAX_FAULTS 8
#define MAX_CTL_OPTS 8
#define AGENT_TOKEN "sim-agent-token-0123456789"
#define CTL_TOKEN "sim-controller-token-0123456789"

enum fault_kind { F_AGENT_KILL, F_AGENT_STALL, F_CONTROLLER_KILL };
static const char *const FAULT_NAMES[] = {"agent-kill", "agent-stall", "controller-kill"};

struct fault {
  enum fault_kind kind;
  double at_s;   /* after the event's start */
  double heal_s; /* back after this long; < 0: --heal */
  bool fired, healed;
  double fired_t, healed_t;
  size_t node;
};

struct opts {
  size_t nodes, gpus_per_node, population;
  double cut, duration, ramp, warmup, round_s, churn_s, idle_frac, tick_s, agent_hz, heal_s;
  int lease_rounds;
  unsigned long seed;
  bool json, keep;
  bool hosted; /* --agents hosted: every agent in one host process on the sim backend */
  char pflexd[PATH_MAX], fake_nvml[PATH_MAX], dir[PATH_MAX], self[PATH_MAX], templates[PATH_MAX];
  char model[PATH_MAX]; /* the controller's model_file: "" a fit on the default templates, "none" */
  struct fault faults[MAX_FAULTS];
  size_t nfaults;
  const char *ctl_opts[MAX_CTL_OPTS]; /* --controller-option: handed to pflex-controller */
  size_t nctl_opts;
  int base_port;
};

struct sim {
  struct opts o;
  struct sim_world w;
  pid_t *agent_pid;
  int *agent_port;
  bool *down; /* hosted: agents this sim stalled or killed, not read until healed */
  pid_t ctl_pid, host_pid;
  int host_fd; /* the host's command pipe */
  int ctl_port;
  char ctl_url[64];
  struct ctl_client *agents, *ctl;
  struct ctl_request *reqs;
  char **bodies;
};

static volatile sig_atomic_t interrupted;
static void on_signal(int sig) {
  interrupted = sig;
}

static double now_s(void) {
  return ctl_epoch_now();
}

static void sleep_s(double s) {
  if (s <= 0) return;
  struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
  nanosleep(&ts, NULL);
}

static void usage(FILE *out) {
  fprintf(out,
          "usage: pflex sim-cluster [OPTIONS]\n"
          "       pflex-controller sim-cluster [OPTIONS]   (the same program)\n"
          "A simulated cluster: N real pflexd agents on loopback (by default all in one host\n"
          "process on the sim backend), a real pflex-controller, one event, faults, and the\n"
          "run scored against an equal cut and the oracle (docs/controller.md).\n\n"
          "  --nodes N             nodes (default 20)\n"
          "  --gpus-per-node G     GPUs per node (default 8)\n"
          "  --cut P               event: cut_pct P of the uncapped draw (default 30)\n"
          "  --duration S          event length, s (default 30)\n"
          "  --ramp S              event ramp_s (default 0)\n"
          "  --warmup S            uncapped seconds before the event (default 12)\n"
          "  --seed X              jobs, churn and noise (default 1)\n"
          "  --fault KIND:T[:H]    agent-kill, agent-stall or controller-kill, T s after the\n"
          "                        event's start, back H s later (default --heal; repeatable)\n"
          "  --heal S              a killed/stalled agent or controller returns after S s\n"
          "                        (default: lease + 2 s)\n"
          "  --churn S             mean job lifetime, s (0 = no churn; default 120)\n"
          "  --idle-frac F         share of nodes without a job (default 0.05)\n"
          "  --round-s S           controller round (default 1)\n"
          "  --lease-rounds N      controller lease in rounds (default 5)\n"
          "  --tick S              physics tick (default 0.2)\n"
          "  --agent-hz N          pflexd samples per second (default 2)\n"
          "  --pflexd PATH         pflexd (default: beside this program, or $PFLEXD)\n"
          "  --fake-nvml PATH      fake libnvidia-ml.so.1 (default: the build's tests/fake-nvml)\n"
          "  --dir DIR             work directory (default: a new one under /dev/shm, tmpfs,\n"
          "                        where writable, else /tmp)\n"
          "  --keep                keep the work directory\n"
          "  --base-port N         first loopback port to try (default 20000)\n"
          "  --agents MODE         hosted (default): every pflexd agent in one host process,\n"
          "                        each on its own port and state directory, on the sim\n"
          "                        backend (NVML's 1 s average, 100 ms limit lag); process:\n"
          "                        one pflexd process per node on the fake NVML\n"
          "  --population N        job kinds: N jobs drawn like `pflex twin population --jobs N\n"
          "                        --seed 1000+SEED` (default 100: mixed sizes, dense/MoE,\n"
          "                        PT/FT, H100 and H200, other models than the templates');\n"
          "                        0: the paper's 35 published groups\n"
          "  --templates FILE      runs CSV whose measured curves shape the controller's job\n"
          "                        curves (its templates_file); default: the sweeps of 100\n"
          "                        twin-population jobs (other models than the sim's, seed 7);\n"
          "                        none: the parametric family\n"
          "  --model FILE          the controller's `pflex fit` model (its model_file), which\n"
          "                        predicts a job's PFI from the telemetry its agent reports;\n"
          "                        default with the default templates: a ridge model fitted on\n"
          "                        them (" SIM_MODEL_FEATURES "),\n"
          "                        else none; none: every job's prior at the controller's\n"
          "                        prior_pfi\n"
          "  --controller-option --KEY=VALUE\n"
          "                        a pflex-controller option for its run (repeatable, up to 8;\n"
          "                        e.g. --controller-option --margin-pct=0.2)\n"
          "  --json                print the result as JSON\n");
}

static int parse_fault(const char *arg, struct opts *o) {
  const char *colon = strchr(arg, ':');
  if (!colon || o->nfaults == MAX_FAULTS) return -EINVAL;
  for (size_t k = 0; k < 3; k++)
    if (strncmp(arg, FAULT_NAMES[k], (size_t)(colon - arg)) == 0 &&
        strlen(FAULT_NAMES[k]) == (size_t)(colon - arg)) {
      char *end;
      double t = strtod(colon + 1, &end), heal = -1;
      if (*end == ':') {
        const char *h = end + 1;
        heal = strtod(h, &end);
        if (end == h || !(heal >= 0)) return -EINVAL;
      }
      if (*end || !(t >= 0)) return -EINVAL;
      o->faults[o->nfaults++] =
          (struct fault){.kind = (enum fault_kind)k, .at_s = t, .heal_s = heal};
      return 0;
    }
  return -EINVAL;
}

/* Linux's ephemeral port range: outgoing connections take ports there, so a
 * port the sim picks there may be taken before its agent binds it. */
static bool ephemeral_range(int *lo, int *hi) {
  FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
  bool ok = f && fscanf(f, "%d %d", lo, hi) == 2;
  if (f) fclose(f);
  return ok;
}

/* What the run would refuse or ignore only later (after the warmup), now. */
static int check_opts(const struct opts *o) {
  int lo, hi, last = o->base_port + (int)o->nodes + 1; /* one per agent, then the controller */
  if (ephemeral_range(&lo, &hi) && o->base_port <= hi && last >= lo) {
    fprintf(stderr,
            "error: --base-port %d: ports %d-%d overlap the ephemeral range %d-%d "
            "(/proc/sys/net/ipv4/ip_local_port_range), where an outgoing connection may take "
            "a port before its agent binds it; use a base port of at most %d\n",
            o->base_port, o->base_port, last, lo, hi, lo - (int)o->nodes - 2);
    return 2;
  }
  if (o->ramp > o->duration) {
    fprintf(stderr, "error: --ramp %g: longer than the event (--duration %g)\n", o->ramp,
            o->duration);
    return 2;
  }
  for (size_t i = 0; i < o->nfaults; i++)
    if (o->faults[i].at_s >= o->duration + o->ramp) {
      fprintf(stderr, "error: --fault %s:%g: at or after the event's end (%g s after its start)\n",
              FAULT_NAMES[o->faults[i].kind], o->faults[i].at_s, o->duration + o->ramp);
      return 2;
    }
  return 0;
}

static void default_paths(struct opts *o) {
  ssize_t n = readlink("/proc/self/exe", o->self, sizeof o->self - 1);
  o->self[n > 0 ? n : 0] = '\0';
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", o->self);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = '\0';
  const char *env = getenv("PFLEXD");
  snprintf(o->pflexd, sizeof o->pflexd, "%s", env && *env ? env : dir);
  if (!(env && *env)) strncat(o->pflexd, "/pflexd", sizeof o->pflexd - strlen(o->pflexd) - 1);
  snprintf(o->fake_nvml, sizeof o->fake_nvml, "%.3000s/tests/fake-nvml/libnvidia-ml.so.1", dir);
}

/* The option table: name, has an argument, where it goes. */
enum {
  O_NODES = 256,
  O_GPN,
  O_CUT,
  O_DUR,
  O_RAMP,
  O_WARM,
  O_SEED,
  O_FAULT,
  O_HEAL,
  O_CHURN,
  O_IDLE,
  O_ROUND,
  O_LEASE,
  O_TICK,
  O_HZ,
  O_PFLEXD,
  O_FAKE,
  O_DIR,
  O_KEEP,
  O_PORT,
  O_JSON,
  O_AGENTS,
  O_TEMPLATES,
  O_MODEL,
  O_POPULATION,
  O_CTL_OPT,
  O_HELP
};
/* clang-format off */
static const struct option LONGOPTS[] = {
    {"nodes", 1, 0, O_NODES},        {"gpus-per-node", 1, 0, O_GPN}, {"cut", 1, 0, O_CUT},
    {"duration", 1, 0, O_DUR},       {"ramp", 1, 0, O_RAMP},         {"warmup", 1, 0, O_WARM},
    {"seed", 1, 0, O_SEED},          {"fault", 1, 0, O_FAULT},       {"heal", 1, 0, O_HEAL},
    {"churn", 1, 0, O_CHURN},        {"idle-frac", 1, 0, O_IDLE},    {"round-s", 1, 0, O_ROUND},
    {"lease-rounds", 1, 0, O_LEASE}, {"tick", 1, 0, O_TICK},         {"agent-hz", 1, 0, O_HZ},
    {"pflexd", 1, 0, O_PFLEXD},      {"fake-nvml", 1, 0, O_FAKE},    {"dir", 1, 0, O_DIR},
    {"keep", 0, 0, O_KEEP},          {"base-port", 1, 0, O_PORT},    {"json", 0, 0, O_JSON},
    {"agents", 1, 0, O_AGENTS},      {"help", 0, 0, O_HELP},         {"templates", 1, 0, O_TEMPLATES},
    {"model", 1, 0, O_MODEL},        {"population", 1, 0, O_POPULATION},
    {"controller-option", 1, 0, O_CTL_OPT},                          {0, 0, 0, 0}};
/* clang-format on */

struct num_opt {
  int id;
  double lo, hi;
  size_t off;
  char type; /* 'd' double, 'z' size_t, 'i' int, 'u' unsigned long */
};
#define OO(f) offsetof(struct opts, f)
static const struct num_opt NUMS[] = {
    {O_NODES, 1, 5000, OO(nodes), 'z'},
    {O_GPN, 1, SIM_MAX_GPUS, OO(gpus_per_node), 'z'},
    {O_CUT, 0.1, 90, OO(cut), 'd'},
    {O_DUR, 1, 86400, OO(duration), 'd'},
    {O_RAMP, 0, 3600, OO(ramp), 'd'},
    {O_WARM, 3, 3600, OO(warmup), 'd'},
    {O_SEED, 0, 4e9, OO(seed), 'u'},
    {O_HEAL, 0, 3600, OO(heal_s), 'd'},
    {O_CHURN, 0, 1e6, OO(churn_s), 'd'},
    {O_IDLE, 0, 0.9, OO(idle_frac), 'd'},
    {O_ROUND, 0.05, 60, OO(round_s), 'd'},
    {O_LEASE, 2, 600, OO(lease_rounds), 'i'},
    {O_TICK, 0.05, 2, OO(tick_s), 'd'},
    {O_HZ, 1, 50, OO(agent_hz), 'd'},
    {O_PORT, 1024, 60000, OO(base_port), 'i'},
    {O_POPULATION, 0, 10000, OO(population), 'z'},
};

static int set_num(struct opts *o, const struct num_opt *k, const char *arg, const char *name) {
  char *end;
  double x = strtod(arg, &end);
  if (*end || end == arg || !(x >= k->lo && x <= k->hi) || (k->type != 'd' && x != floor(x))) {
    fprintf(stderr, "error: --%s: '%s' is not a number in [%g, %g]\n", name, arg, k->lo, k->hi);
    return -EINVAL;
  }
  void *p = (char *)o + k->off;
  if (k->type == 'd')
    *(double *)p = x;
  else if (k->type == 'z')
    *(size_t *)p = (size_t)x;
  else if (k->type == 'i')
    *(int *)p = (int)x;
  else
    *(unsigned long *)p = (unsigned long)x;
  return 0;
}

static int parse_args(int argc, char **argv, struct opts *o) {
  *o = (struct opts){.nodes = 20,
                     .gpus_per_node = 8,
                     .cut = 30,
                     .duration = 30,
                     .warmup = 12,
                     .round_s = 1,
                     .churn_s = 120,
                     .idle_frac = 0.05,
                     .tick_s = 0.2,
                     .agent_hz = 2,
                     .heal_s = -1,
                     .lease_rounds = 5,
                     .seed = 1,
                     .population = 100,
                     .base_port = 20000,
                     .hosted = true};
  default_paths(o);
  int c, idx;
  optind = 1;
  while ((c = getopt_long(argc, argv, "", LONGOPTS, &idx)) != -1) {
    const struct num_opt *k = NULL;
    for (size_t i = 0; i < sizeof NUMS / sizeof NUMS[0]; i++)
      if (NUMS[i].id == c) k = &NUMS[i];
    if (k) {
      if (set_num(o, k, optarg, LONGOPTS[idx].name) < 0) return 2;
    } else if (c == O_FAULT) {
      if (parse_fault(optarg, o) < 0) {
        fprintf(stderr,
                "error: --fault: '%s' is not KIND:T[:H] (agent-kill, agent-stall, "
                "controller-kill; T, H >= 0 s), or more than %d faults\n",
                optarg, MAX_FAULTS);
        return 2;
      }
    } else if (c == O_PFLEXD || c == O_FAKE || c == O_DIR || c == O_TEMPLATES || c == O_MODEL) {
      char *dst = c == O_PFLEXD  ? o->pflexd
                  : c == O_FAKE  ? o->fake_nvml
                  : c == O_DIR   ? o->dir
                  : c == O_MODEL ? o->model
                                 : o->templates;
      snprintf(dst, PATH_MAX, "%s", optarg);
    } else if (c == O_CTL_OPT) {
      if (strncmp(optarg, "--", 2) != 0 || !strchr(optarg, '=') || o->nctl_opts == MAX_CTL_OPTS) {
        fprintf(stderr, "error: --controller-option: '%s' is not --KEY=VALUE, or more than %d\n",
                optarg, MAX_CTL_OPTS);
        return 2;
      }
      o->ctl_opts[o->nctl_opts++] = optarg;
    } else if (c == O_KEEP || c == O_JSON) {
      *(c == O_KEEP ? &o->keep : &o->json) = true;
    } else if (c == O_AGENTS) {
      if (strcmp(optarg, "hosted") != 0 && strcmp(optarg, "process") != 0) {
        fprintf(stderr, "error: --agents: '%s' is not hosted or process\n", optarg);
        return 2;
      }
      o->hosted = optarg[0] == 'h';
    } else if (c == O_HELP) {
      usage(stdout);
      return 1;
    } else {
      usage(stderr);
      return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "error: sim-cluster: unexpected argument '%s'\n", argv[optind]);
    return 2;
  }
  if (o->heal_s < 0) o->heal_s = o->lease_rounds * o->round_s + 2;
  return check_opts(o);
}

static int write_secret(const char *path, const char *value) {
  FILE *f = fopen(path, "w");
  if (!f) return -errno;
  fprintf(f, "%s\n", value);
  fclose(f);
  return chmod(path, 0600) < 0 ? -errno : 0;
}

static int make_dir(struct opts *o) {
  if (!o->dir[0]) {
    snprintf(o->dir, sizeof o->dir, "%s/pflex-sim-XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(o->dir)) return -errno;
  } else if (mkdir(o->dir, 0700) < 0 && errno != EEXIST) {
    return -errno;
  }
  chmod(o->dir, 0700);
  char p[PATH_MAX + 32];
  snprintf(p, sizeof p, "%s/agent.token", o->dir);
  int rc = write_secret(p, AGENT_TOKEN);
  snprintf(p, sizeof p, "%s/controller.token", o->dir);
  if (rc == 0) rc = write_secret(p, CTL_TOKEN);
  snprintf(p, sizeof p, "%s/pflexd.conf", o->dir); /* empty: the options say everything */
  return rc < 0 ? rc : write_secret(p, "# sim-cluster: every setting is on the command line");
}

/* Every job is submitted with its kind's class (architecture and task), all
 * four configured alike (weight 1, no floor: the allocation and the oracle
 * it is scored against are unchanged), so that the report can show each. */
#define SIM_NCLASSES 4
static const char *const SIM_CLASS_OPTS[SIM_NCLASSES] = {
    "--class=dense-pt,weight=1,floor_pct=0", "--class=dense-ft,weight=1,floor_pct=0",
    "--class=moe-pt,weight=1,floor_pct=0", "--class=moe-ft,weight=1,floor_pct=0"};

static const char *sim_job_class(const struct sim_kind *k) {
  bool moe = k->job.arch == PFLEX_ARCH_MOE, ft = k->job.task == PFLEX_TASK_FT;
  return moe ? (ft ? "moe-ft" : "moe-pt") : (ft ? "dense-ft" : "dense-pt");
}

static pid_t start_agent(struct sim *s, size_t i) {
  const struct opts *o = &s->o;
  char conf[PATH_MAX + 32], state[PATH_MAX + 32], listen[64], statsd[64], hz[32],
      tok[PATH_MAX + 32], log[PATH_MAX + 32], lib[PATH_MAX + 16];
  snprintf(conf, sizeof conf, "%s/pflexd.conf", o->dir);
  snprintf(state, sizeof state, "%s/agent%04zu", o->dir, i);
  mkdir(state, 0700);
  snprintf(listen, sizeof listen, "127.0.0.1:%d", s->agent_port[i]);
  snprintf(statsd, sizeof statsd, "udp:127.0.0.1:%d", s->agent_port[i]);
  snprintf(hz, sizeof hz, "%g", o->agent_hz);
  snprintf(tok, sizeof tok, "%s/agent.token", o->dir);
  snprintf(log, sizeof log, "%s/agent%04zu.log", o->dir, i);
  snprintf(lib, sizeof lib, "%s", o->fake_nvml);
  static char env[MAX_FAULTS + 1][PATH_MAX + 32];
  static size_t env_i;
  char *e = env[env_i++ % (MAX_FAULTS + 1)];
  snprintf(e, PATH_MAX + 32, "FAKE_NVML_STATE=%s", s->w.nodes[i].path);
  char *argv[] = {(char *)o->pflexd,
                  "--config",
                  conf,
                  "--backend",
                  "nvml",
                  "--nvml-library",
                  lib,
                  "--listen",
                  listen,
                  "--token-file",
                  tok,
                  "--state-dir",
                  state,
                  "--socket",
                  "",
                  "--statsd",
                  statsd,
                  "--hz",
                  hz,
                  NULL};
  return sim_spawn(argv, e, log);
}

static pid_t start_controller(struct sim *s) {
  const struct opts *o = &s->o;
  char agents[PATH_MAX + 32], atok[PATH_MAX + 32], ctok[PATH_MAX + 32], db[PATH_MAX + 32],
      listen[64], round[32], lease[32], timeout[32], log[PATH_MAX + 32];
  snprintf(agents, sizeof agents, "%s/agents", o->dir);
  snprintf(atok, sizeof atok, "%s/agent.token", o->dir);
  snprintf(ctok, sizeof ctok, "%s/controller.token", o->dir);
  snprintf(db, sizeof db, "%s/controller.db", o->dir);
  snprintf(listen, sizeof listen, "127.0.0.1:%d", s->ctl_port);
  snprintf(round, sizeof round, "%g", o->round_s);
  snprintf(lease, sizeof lease, "%d", o->lease_rounds);
  snprintf(timeout, sizeof timeout, "%g", 0.8 * o->round_s);
  snprintf(log, sizeof log, "%s/controller.log", o->dir);
  char *argv[] = {(char *)o->self,
                  "run",
                  "--agents-file",
                  agents,
                  "--agent-token-file",
                  atok,
                  "--token-file",
                  ctok,
                  "--state-db",
                  db,
                  "--listen",
                  listen,
                  "--round-s",
                  round,
                  "--lease-rounds",
                  lease,
                  "--agent-timeout-s",
                  timeout,
                  NULL, /* then --templates-file, --model-file, the --controller-options, */
                  NULL, /* the classes, NULL */
                  NULL,
                  NULL,
                  NULL,
                  NULL,
                  NULL,
                  NULL,
                  NULL,
                  NULL,
                  NULL,
                  NULL,
                  NULL,
                  NULL,
                  NULL,
                  NULL,
                  NULL};
  size_t k = 0;
  while (argv[k])
    k++;
  if (strcmp(o->templates, "none") != 0) {
    argv[k++] = "--templates-file";
    argv[k++] = (char *)o->templates;
  }
  if (strcmp(o->model, "none") != 0) {
    argv[k++] = "--model-file";
    argv[k++] = (char *)o->model;
  }
  for (size_t i = 0; i < o->nctl_opts; i++)
    argv[k++] = (char *)o->ctl_opts[i];
  for (size_t i = 0; i < SIM_NCLASSES; i++)
    argv[k++] = (char *)SIM_CLASS_OPTS[i];
  return sim_spawn(argv, NULL, log);
}

/* One request to the controller; returns the status, the body in s->reqs[0]. */
static long ctl_call(struct sim *s, const char *method, const char *path, const char *body) {
  s->reqs[0] = (struct ctl_request){.method = method, .path = path, .body = body};
  if (ctl_client_run(s->ctl, s->reqs, 2.0) < 0) return 0;
  return s->reqs[0].status;
}

/* Every agent answers /v1/health (at most timeout_s). */
static bool agents_healthy(struct sim *s, double timeout_s) {
  double t0 = now_s();
  size_t n = s->o.nodes;
  while (now_s() - t0 < timeout_s && !interrupted) {
    for (size_t i = 0; i < n; i++)
      s->reqs[i] = (struct ctl_request){.method = "GET", .path = "/v1/health"};
    ctl_client_run(s->agents, s->reqs, 1.0);
    size_t ok = 0;
    for (size_t i = 0; i < n; i++)
      ok += s->reqs[i].status == 200;
    if (ok == n) return true;
    sleep_s(0.2);
  }
  return false;
}

/* Tells the agents which GPUs belong to which job (PUT /v1/jobs/{id}) or
 * that a job ended (DELETE /v1/jobs/{id}), every node of each job at once. */
static void tell_agents(struct sim *s, const struct sim_change *ch, size_t nch) {
  size_t n = s->o.nodes;
  char gpus[512] = "";
  for (size_t g = 0; g < s->o.gpus_per_node; g++)
    snprintf(gpus + strlen(gpus), sizeof gpus - strlen(gpus), "%s%zu", g ? "," : "", g);
  for (size_t i = 0; i < n; i++)
    s->reqs[i] = (struct ctl_request){0};
  for (size_t k = 0; k < nch; k++) {
    const struct sim_job *j = &s->w.jobs[ch[k].job];
    for (size_t nd = j->node0; nd < j->node0 + j->nnodes; nd++) {
      free(s->bodies[nd]);
      s->bodies[nd] = malloc(700);
      if (!s->bodies[nd]) continue;
      char *path = s->bodies[nd] + 600;
      snprintf(s->bodies[nd], 600, "{\"gpus\":[%s],\"class\":\"%s\"}", gpus,
               sim_job_class(j->kind));
      snprintf(path, 100, "/v1/jobs/%s", ch[k].id);
      s->reqs[nd] = (struct ctl_request){.method = ch[k].put ? "PUT" : "DELETE",
                                         .path = path,
                                         .body = ch[k].put ? s->bodies[nd] : NULL};
    }
  }
  ctl_client_run(s->agents, s->reqs, 2.0);
  for (size_t i = 0; i < n; i++)
    if (s->reqs[i].method && s->reqs[i].status != 200)
      fprintf(stderr, "warning: sim: agent %zu: %s %s: HTTP %ld %s\n", i, s->reqs[i].method,
              s->reqs[i].path, s->reqs[i].status, s->reqs[i].error);
}

/* Reads the event back from the controller (its baseline and resolved target). */
static bool read_event(struct sim *s, int64_t id, struct ctl_event *ev) {
  if (ctl_call(s, "GET", "/v1/events", NULL) != 200) return false;
  json_t *root = json_loads(s->reqs[0].response, 0, NULL);
  json_t *arr = json_object_get(root, "events"), *e;
  size_t i;
  bool ok = false;
  json_array_foreach(arr, i, e) {
    if (json_integer_value(json_object_get(e, "id")) != id) continue;
    double start;
    ok = ctl_parse_iso8601(json_string_value(json_object_get(e, "start")), &start) == 0 &&
         json_is_number(json_object_get(e, "baseline_w"));
    if (ok) {
      ev->start = start;
      ev->baseline_w = json_number_value(json_object_get(e, "baseline_w"));
    }
  }
  json_decref(root);
  return ok;
}

static int64_t fire_event(struct sim *s, struct ctl_event *ev) {
  char body[256];
  snprintf(body, sizeof body, "{\"cut_pct\":%g,\"start\":\"now\",\"duration_s\":%g,\"ramp_s\":%g}",
           s->o.cut, s->o.duration, s->o.ramp);
  if (ctl_call(s, "POST", "/v1/events", body) != 201) {
    fprintf(stderr, "error: sim: POST /v1/events: HTTP %ld %s %s\n", s->reqs[0].status,
            s->reqs[0].error, s->reqs[0].response);
    return -1;
  }
  json_t *o = json_loads(s->reqs[0].response, 0, NULL);
  int64_t id = json_integer_value(json_object_get(o, "id"));
  json_decref(o);
  *ev = (struct ctl_event){.id = id,
                           .cut_pct = s->o.cut,
                           .start = now_s(),
                           .duration_s = s->o.duration,
                           .ramp_s = s->o.ramp};
  return id;
}

static void fire_fault(struct sim *s, struct fault *f, double t) {
  size_t n = s->o.nodes;
  f->node = f->kind == F_AGENT_STALL ? (n / 2 + 1) % n : n / 2;
  if (s->o.hosted && f->kind != F_CONTROLLER_KILL) {
    sim_host_command(s->host_fd, f->kind == F_AGENT_KILL ? "kill" : "stall", f->node);
    s->down[f->node] = true;
  } else if (f->kind == F_AGENT_KILL)
    sim_signal(s->agent_pid[f->node], SIGKILL, 2);
  else if (f->kind == F_AGENT_STALL)
    sim_signal(s->agent_pid[f->node], SIGSTOP, 0);
  else
    sim_signal(s->ctl_pid, SIGKILL, 2);
  f->fired = true;
  f->fired_t = t;
  if (f->kind == F_CONTROLLER_KILL)
    fprintf(stderr, "note: sim: %s at %.1f s into the event\n", FAULT_NAMES[f->kind], f->at_s);
  else
    fprintf(stderr, "note: sim: %s (node %zu) at %.1f s into the event\n", FAULT_NAMES[f->kind],
            f->node, f->at_s);
}

static void heal_fault(struct sim *s, struct fault *f, double t) {
  if (s->o.hosted && f->kind != F_CONTROLLER_KILL) {
    sim_host_command(s->host_fd, f->kind == F_AGENT_KILL ? "heal" : "cont", f->node);
    s->down[f->node] = false;
  } else if (f->kind == F_AGENT_KILL)
    s->agent_pid[f->node] = start_agent(s, f->node);
  else if (f->kind == F_AGENT_STALL)
    sim_signal(s->agent_pid[f->node], SIGCONT, 0);
  else
    s->ctl_pid = start_controller(s);
  f->healed = true;
  f->healed_t = t;
}

/* GPUs whose limit (as the fake NVML holds it) is not the default. */
static size_t wrong_limits(struct sim *s) {
  size_t n = 0;
  if (s->o.hosted) {
    sim_hosted_read(&s->w, s->agents, s->reqs, NULL, &n, NULL);
    return n;
  }
  for (size_t i = 0; i < s->o.nodes; i++) {
    sim_node_read_limits(&s->w.nodes[i], now_s(), 0);
    for (size_t g = 0; g < s->w.nodes[i].ngpus; g++)
      n += s->w.nodes[i].g[g].limit_w != s->w.nodes[i].g[g].default_w;
  }
  return n;
}

struct run_state {
  struct sim_score score;
  int64_t event_id;
  double t_event, t_end, caps_applied_s, max_alloc_ms, max_alloc_cpu_ms, max_round_ms;
  bool event_read;
  size_t ctl_samples_over; /* rounds the controller itself saw over target + 1% */
  double ctl_rounds;       /* the controller's round count at the last status poll */
  size_t status_jobs;      /* jobs in the last status poll */
  size_t telemetry_jobs;   /* of those, with their PFI from telemetry */
  double cpu_ctl_s, cpu_host_s, cpu_sim_s; /* CPU time used, read before the teardown */
  FILE *trace;             /* <dir>/power.csv: every tick's totals */
  double write_warned_t;   /* when a state file last could not be written */
};

/* Polls the controller's status once a second: its own view and timings. */
static void poll_status(struct sim *s, struct run_state *rs) {
  if (ctl_call(s, "GET", "/v1/status", NULL) != 200) return;
  json_t *o = json_loads(s->reqs[0].response, 0, NULL);
  if (!o) return;
  rs->max_alloc_ms = fmax(rs->max_alloc_ms, json_number_value(json_object_get(o, "alloc_ms")));
  rs->max_alloc_cpu_ms =
      fmax(rs->max_alloc_cpu_ms, json_number_value(json_object_get(o, "alloc_cpu_ms")));
  rs->max_round_ms = fmax(rs->max_round_ms, json_number_value(json_object_get(o, "round_ms")));
  json_t *acked = json_object_get(o, "caps_acked_epoch");
  if (rs->event_id > 0 && json_is_number(acked) && rs->caps_applied_s < 0 &&
      json_integer_value(json_object_get(o, "event")) == rs->event_id)
    rs->caps_applied_s = json_number_value(acked) - rs->t_event;
  if (json_is_false(json_object_get(o, "compliant"))) rs->ctl_samples_over++;
  rs->ctl_rounds = json_number_value(json_object_get(o, "round"));
  const json_t *jobs = json_object_get(o, "jobs");
  if (json_array_size(jobs)) {
    rs->status_jobs = json_array_size(jobs);
    rs->telemetry_jobs = 0;
    for (size_t i = 0; i < rs->status_jobs; i++) {
      const char *from = json_string_value(json_object_get(json_array_get(jobs, i), "pfi_from"));
      rs->telemetry_jobs += from && strcmp(from, "telemetry") == 0;
    }
  }
  json_decref(o);
}

static void world_step(struct sim *s, struct run_state *rs, double t, double dt, size_t *tick) {
  size_t avg = (size_t)lround(1.0 / s->o.tick_s);
  if (s->o.hosted) { /* the agents' sim backends are the physics: read what they read */
    /* A stalled agent would hold every tick for the read's timeout: it is
     * not asked, and its draw is modelled (sim_world_model_unread). */
    sim_hosted_read(&s->w, s->agents, s->reqs, s->down, NULL, NULL);
    sim_world_model_unread(&s->w, now_s());
    sim_world_update_tput(&s->w);
  } else if (sim_world_tick(&s->w, t, dt, avg, 0.1) < 0 && t - rs->write_warned_t >= 5) {
    /* Each tick while it lasts (a stalled agent holding its lock): say it
     * once every 5 s. */
    fprintf(stderr, "warning: sim: a node's state file could not be written; its readings wait\n");
    rs->write_warned_t = t;
  }
  if (++*tick % (size_t)fmax(1, lround(0.5 / s->o.tick_s)) == 0) sim_world_report_tput(&s->w);
  double idle;
  double total = sim_world_reported_w(&s->w, &idle);
  if (rs->event_id > 0) sim_score_power(&rs->score, t, total);
  if (rs->trace)
    fprintf(rs->trace, "%.3f,%.1f,%.1f,%.1f\n", t - rs->t_event, total, sim_world_limits_w(&s->w),
            idle);
  if (rs->event_read) {
    if (*tick % (size_t)fmax(1, lround(1.0 / s->o.tick_s)) == 0)
      sim_score_tput(&rs->score, &s->w, t, idle, total);
  }
}

static void churn_step(struct sim *s, double t) {
  struct sim_change ch[256];
  size_t n = sim_world_churn(&s->w, t, ch, 256);
  if (n) tell_agents(s, ch, n);
  /* hosted: a job that ended leaves its GPUs idle and the next one loads (the
     sim's warmup = the world's gap, its startup = the world's startup) */
  for (size_t k = 0; s->o.hosted && k < n; k++) {
    const struct sim_job *j = &s->w.jobs[ch[k].job];
    for (size_t nd = j->node0; !ch[k].put && nd < j->node0 + j->nnodes; nd++)
      sim_host_command(s->host_fd, "job", nd);
  }
}

static void fault_step(struct sim *s, struct run_state *rs, double t) {
  for (size_t k = 0; k < s->o.nfaults; k++) {
    struct fault *f = &s->o.faults[k];
    if (!f->fired && rs->event_id > 0 && t >= rs->t_event + f->at_s)
      fire_fault(s, f, t);
    else if (f->fired && !f->healed && t >= f->fired_t + (f->heal_s >= 0 ? f->heal_s : s->o.heal_s))
      heal_fault(s, f, t);
  }
}

/* CPU seconds (user + system) a live child has used so far, from /proc; NAN
 * when it is gone. */
static double proc_cpu_s(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = pid > 0 ? fopen(path, "r") : NULL;
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f) fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
  unsigned long ut, st;
  if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
    return NAN;
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static void read_cpu(const struct sim *s, struct run_state *rs) {
  rs->cpu_ctl_s = proc_cpu_s(s->ctl_pid);
  rs->cpu_host_s = s->o.hosted ? proc_cpu_s(s->host_pid) : NAN;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  rs->cpu_sim_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                  (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* The run: warmup, event, release; one tick of physics at a time. */
/* Prints the last lines of the controller's log (the run directory goes
 * away unless --keep, and its first error is why it stopped). */
static void print_controller_log_tail(const struct sim *s) {
  char path[PATH_MAX + 32], line[512], tail[5][512];
  snprintf(path, sizeof path, "%s/controller.log", s->o.dir);
  FILE *f = fopen(path, "r");
  if (!f) return;
  size_t n = 0;
  while (fgets(line, sizeof line, f))
    snprintf(tail[n++ % 5], sizeof tail[0], "%s", line);
  fclose(f);
  for (size_t i = n > 5 ? n - 5 : 0; i < n; i++)
    fprintf(stderr, "  %s", tail[i % 5]);
}

/* Before the event the controller must be running: one that exited (a bad
 * templates file, a port in use) fails the run at once, with why. */
static bool controller_exited(struct sim *s) {
  if (sim_alive(s->ctl_pid)) return false;
  fprintf(stderr, "error: sim-cluster: the controller exited before the event; the end of its "
                  "log:\n");
  print_controller_log_tail(s);
  s->ctl_pid = 0; /* reaped: nothing to stop at teardown */
  return true;
}

static int run_loop(struct sim *s, struct run_state *rs) {
  double t0 = now_s(), last = t0, next_poll = t0 + 1;
  size_t tick = 0;
  rs->t_event = t0 + s->o.warmup; /* power.csv's t_s: from the event's start, <0 before */
  double stop_at = INFINITY;
  while (!interrupted) {
    double t = now_s();
    world_step(s, rs, t, t - last, &tick);
    last = t;
    churn_step(s, t);
    if (rs->event_id == 0 && controller_exited(s)) return -EIO;
    if (rs->event_id == 0 && t >= t0 + s->o.warmup) {
      struct ctl_event ev;
      rs->event_id = fire_event(s, &ev);
      if (rs->event_id < 0) return -EIO;
      rs->t_event = ev.start;
      rs->score.ev = ev;
      rs->t_end = ev.start + s->o.duration + s->o.ramp;
    }
    if (rs->event_id > 0 && !rs->event_read && t >= rs->t_event + 1.5 * s->o.round_s &&
        read_event(s, rs->event_id, &rs->score.ev)) {
      rs->event_read = true;
      rs->score.held_from = rs->score.ev.start + s->o.ramp + 3 * s->o.round_s;
    }
    fault_step(s, rs, t);
    if (t >= next_poll) {
      poll_status(s, rs);
      next_poll += 1;
    }
    if (rs->event_id > 0 && t >= rs->t_end && stop_at == INFINITY)
      stop_at = t + 3 * s->o.round_s + 2; /* the controller lifts the caps */
    if (t >= stop_at) {
      read_cpu(s, rs);
      return 0;
    }
    sleep_s(s->o.tick_s - (now_s() - t));
  }
  return -EINTR;
}

static json_t *num(double x) {
  return isfinite(x) ? json_real(x) : json_null();
}

static json_t *result_json(struct sim *s, struct run_state *rs, size_t wrong_after,
                           size_t wrong_final) {
  struct sim_result r;
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/score.csv", s->o.dir); /* every held second's score */
  rs->score.trace = fopen(path, "w");
  if (rs->score.trace)
    fprintf(rs->score.trace, "t_s,ctl,equal,oracle,equal_drawn,oracle_drawn,budget_w,drawn_w\n");
  snprintf(path, sizeof path, "%s/jobs.csv", s->o.dir); /* --keep: every held second's jobs */
  rs->score.jobs_trace = s->o.keep ? fopen(path, "w") : NULL;
  if (rs->score.jobs_trace)
    fprintf(rs->score.jobs_trace, "t_s,job,kind,gpus,limit_w,drawn_w,tput,oracle_w,oracle_tput,"
                                  "equal_w,equal_tput,t_max\n");
  if (sim_score_result(&rs->score, &r) < 0)
    fprintf(stderr, "warning: sim: out of memory scoring the throughput\n");
  if (rs->score.trace) fclose(rs->score.trace);
  if (rs->score.jobs_trace) fclose(rs->score.jobs_trace);
  rs->score.trace = rs->score.jobs_trace = NULL;
  size_t gpus = s->o.nodes * s->o.gpus_per_node, jobs = 0;
  for (size_t i = 0; i < s->w.njobs; i++)
    jobs += s->w.jobs[i].running;
  json_t *faults = json_array();
  for (size_t k = 0; k < s->o.nfaults; k++) {
    const struct fault *f = &s->o.faults[k];
    json_array_append_new(
        faults, json_pack("{s:s, s:f, s:b, s:o, s:o}", "kind", FAULT_NAMES[f->kind], "at_s",
                          f->at_s, "fired", f->fired, "node",
                          f->kind == F_CONTROLLER_KILL ? json_null() : json_integer((json_int_t)f->node),
                          "healed_after_s",
                          f->healed ? json_real(f->healed_t - f->fired_t) : json_null()));
  }
  json_t *o = json_pack("{s:b, s:I, s:I, s:I, s:f, s:f}", "simulated", 1, "nodes",
                        (json_int_t)s->o.nodes, "gpus", (json_int_t)gpus, "jobs", (json_int_t)jobs,
                        "cut_pct", s->o.cut, "duration_s", s->o.duration);
  double target = ctl_event_resolved_target(&rs->score.ev);
  json_object_set_new(o, "baseline_w", num(rs->score.ev.baseline_w));
  json_object_set_new(o, "target_w", rs->event_read ? num(target) : json_null());
  json_object_set_new(o, "caps_applied_s",
                      rs->caps_applied_s >= 0 ? json_real(rs->caps_applied_s) : json_null());
  json_object_set_new(o, "compliance_s", num(r.compliance_s));
  json_object_set_new(o, "overshoot_samples", json_integer((json_int_t)r.overshoot_samples));
  json_object_set_new(o, "samples", json_integer((json_int_t)r.samples));
  json_object_set_new(o, "max_over_pct", num(r.max_over_pct));
  json_object_set_new(o, "gap_recovered", num(r.gap_recovered));
  if (r.gap_undefined) json_object_set_new(o, "gap_undefined", json_string(r.gap_undefined));
  json_object_set_new(o, "gap_recovered_drawn", num(r.gap_recovered_drawn));
  json_object_set_new(o, "budget_used", num(r.budget_used));
  json_object_set_new(o, "tput_vs_equal", num(r.vs_equal));
  json_object_set_new(o, "tput_vs_oracle", num(r.vs_oracle));
  json_object_set_new(o, "tput_vs_uncapped", num(r.vs_uncapped));
  json_object_set_new(o, "wrong_limits_after", json_integer((json_int_t)wrong_after));
  json_object_set_new(o, "wrong_limits_final", json_integer((json_int_t)wrong_final));
  json_object_set_new(o, "faults", faults);
  json_object_set_new(o, "churned_jobs", json_integer((json_int_t)s->w.churned));
  json_object_set_new(o, "alloc_ms_max", json_real(rs->max_alloc_ms));
  json_object_set_new(o, "alloc_cpu_ms_max", json_real(rs->max_alloc_cpu_ms));
  json_object_set_new(o, "status_jobs", json_integer((json_int_t)rs->status_jobs));
  json_object_set_new(o, "jobs_pfi_from_telemetry", json_integer((json_int_t)rs->telemetry_jobs));
  json_object_set_new(o, "round_ms_max", json_real(rs->max_round_ms));
  json_object_set_new(o, "controller_rounds_over", json_integer((json_int_t)rs->ctl_samples_over));
  /* CPU: of the controller process running at the end (a controller-kill
   * fault restarts it), of the agent host (hosted), and of the sim itself. */
  json_object_set_new(o, "controller_cpu_s", num(rs->cpu_ctl_s));
  json_object_set_new(o, "controller_rounds", json_integer((json_int_t)rs->ctl_rounds));
  json_object_set_new(o, "controller_cpu_ms_per_round",
                      num(rs->ctl_rounds > 0 ? 1e3 * rs->cpu_ctl_s / rs->ctl_rounds : NAN));
  json_object_set_new(o, "host_cpu_s", num(rs->cpu_host_s));
  json_object_set_new(o, "host_cpu_ms_per_round",
                      num(rs->ctl_rounds > 0 ? 1e3 * rs->cpu_host_s / rs->ctl_rounds : NAN));
  json_object_set_new(o, "sim_cpu_s", num(rs->cpu_sim_s));
  json_object_set_new(o, "event", json_integer(rs->event_id));
  json_object_set_new(o, "dir", json_string(s->o.dir));
  json_object_set_new(o, "templates", json_string(s->o.templates));
  json_object_set_new(o, "model", json_string(s->o.model));
  json_object_set_new(o, "job_kinds", json_string(s->o.population ? "population" : "paper"));
  json_object_set_new(o, "population", json_integer((json_int_t)s->o.population));
  return o;
}

/* Every agent in one host process on the sim backend (sim_host.h). */
static int start_host(struct sim *s, char *err, size_t errlen) {
  struct sim_host_node *nodes = calloc(s->o.nodes, sizeof *nodes);
  if (!nodes) return -ENOMEM;
  int rc = sim_hosted_specs(&s->w, nodes, err, errlen);
  char tok[PATH_MAX + 32];
  snprintf(tok, sizeof tok, "%s/agent.token", s->o.dir);
  struct sim_host_cfg c = {
      .dir = s->o.dir, .token_file = tok, .hz = s->o.agent_hz, .n = s->o.nodes, .nodes = nodes};
  pid_t pid = rc < 0 ? rc : sim_host_spawn(&c, &s->host_fd);
  free(nodes);
  if (pid < 0) {
    if (!err[0]) snprintf(err, errlen, "cannot start the agent host: %s", strerror((int)-pid));
    return (int)pid;
  }
  s->host_pid = pid;
  return 0;
}

/* hosted: what the host counted after releasing every cap (-1: unknown). */
static long host_wrong_final(const struct sim *s) {
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/host.json", s->o.dir);
  json_t *o = json_load_file(path, 0, NULL);
  json_t *v = json_object_get(o, "wrong_limits_final");
  long n = json_is_integer(v) ? (long)json_integer_value(v) : -1;
  json_decref(o);
  return n;
}

/* The default templates: sweeps of jobs drawn like `pflex twin population
 * --jobs 100 --seed 7`, models the sim's jobs (the published groups) are not. */
static int write_templates(struct opts *o, char *err, size_t errlen) {
  bool fit = !o->model[0];
  /* The user's templates: no model (which telemetry they hold is unknown). */
  if (fit && o->templates[0]) snprintf(o->model, sizeof o->model, "none");
  if (o->templates[0]) return 0;
  snprintf(o->templates, sizeof o->templates, "%.3000s/templates.csv", o->dir);
  struct pflex_twin_population_opts po = {.jobs = 100, .seed = 7};
  struct pflex_runset set;
  int rc = pflex_twin_population(&po, &set);
  if (rc == 0) {
    rc = pflex_runs_write_csv(&set, o->templates);
    if (rc < 0) snprintf(err, errlen, "cannot write the templates: %s", pflex_strerror(rc));
    if (rc == 0 && fit) {
      snprintf(o->model, sizeof o->model, "%.3000s/model.json", o->dir);
      rc = sim_model_fit(&set, o->model, err, errlen);
    }
    pflex_runset_release(&set);
  } else {
    snprintf(err, errlen, "cannot make the templates: %s", pflex_strerror(rc));
  }
  return rc;
}

static int setup(struct sim *s, char *err, size_t errlen) {
  struct opts *o = &s->o;
  size_t n = o->nodes;
  if (!o->hosted && (access(o->pflexd, X_OK) < 0 || access(o->fake_nvml, R_OK) < 0)) {
    snprintf(err, errlen,
             "need pflexd ('%.200s') and the fake NVML ('%.200s'): --pflexd, --fake-nvml",
             o->pflexd, o->fake_nvml);
    return -ENOENT;
  }
  int rc = make_dir(o);
  if (rc < 0) {
    snprintf(err, errlen, "cannot make the work directory '%.300s': %s", o->dir, strerror(-rc));
    return rc;
  }
  rc = write_templates(o, err, errlen);
  if (rc < 0) return rc;
  rc = sim_world_init(&s->w, o->dir, n, o->gpus_per_node, o->churn_s, o->idle_frac, o->seed,
                      o->population, now_s(), err, errlen);
  if (rc < 0) return rc;
  s->w.fixed_kinds = s->w.raw_readings = o->hosted;
  s->agent_pid = calloc(n, sizeof *s->agent_pid);
  s->agent_port = calloc(n, sizeof *s->agent_port);
  s->down = calloc(n, sizeof *s->down);
  s->reqs = calloc(n + 1, sizeof *s->reqs);
  s->bodies = calloc(n, sizeof *s->bodies);
  const char **urls = calloc(n, sizeof *urls);
  char(*ubuf)[64] = calloc(n, sizeof *ubuf);
  if (!s->agent_pid || !s->agent_port || !s->down || !s->reqs || !s->bodies || !urls || !ubuf) {
    free(urls);
    free(ubuf);
    return -ENOMEM;
  }
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/agents", o->dir);
  FILE *f = fopen(path, "w");
  if (f) fchmod(fileno(f), 0644); /* the controller refuses one others may write (umask 002) */
  int port = o->base_port;
  for (size_t i = 0; f && i < n; i++) {
    port = sim_free_port(port);
    s->agent_port[i] = port;
    s->w.statsd_port[i] = port;
    port++;
    snprintf(ubuf[i], sizeof ubuf[i], "http://127.0.0.1:%d", s->agent_port[i]);
    urls[i] = ubuf[i];
    fprintf(f, "%s\n", ubuf[i]);
  }
  if (f) fclose(f);
  s->ctl_port = sim_free_port(port);
  snprintf(s->ctl_url, sizeof s->ctl_url, "http://127.0.0.1:%d", s->ctl_port);
  const char *cu = s->ctl_url;
  rc = ctl_client_new(urls, n, AGENT_TOKEN, &s->agents);
  if (rc == 0) rc = ctl_client_new(&cu, 1, CTL_TOKEN, &s->ctl);
  free(urls);
  free(ubuf);
  if (!f || rc < 0) {
    snprintf(err, errlen, "cannot set up the agents file or HTTP clients");
    return -EIO;
  }
  if (o->hosted) {
    rc = start_host(s, err, errlen);
    if (rc < 0) return rc;
  }
  for (size_t i = 0; !o->hosted && i < n; i++)
    s->agent_pid[i] = start_agent(s, i);
  if (!agents_healthy(s, 30 + n * 0.15)) {
    snprintf(err, errlen, "not every pflexd answered /v1/health (logs in '%.300s')", o->dir);
    return -ETIMEDOUT;
  }
  struct sim_change *all = calloc(s->w.njobs + 1, sizeof *all);
  for (size_t i = 0; all && i < s->w.njobs; i++) {
    all[i] = (struct sim_change){.job = i, .put = true};
    snprintf(all[i].id, sizeof all[i].id, "%s", s->w.jobs[i].id);
  }
  tell_agents(s, all, all ? s->w.njobs : 0);
  free(all);
  s->ctl_pid = start_controller(s);
  return 0;
}

static void teardown(struct sim *s) {
  sim_signal(s->ctl_pid, SIGTERM, 5);
  if (s->host_pid > 0) {
    sim_signal(s->host_pid, SIGTERM, 30);
    close(s->host_fd);
  }
  for (size_t i = 0; s->agent_pid && i < s->o.nodes; i++) {
    if (s->agent_pid[i] <= 0) continue; /* hosted, or never started: kill(0) is the group */
    kill(s->agent_pid[i], SIGCONT);
    kill(s->agent_pid[i], SIGTERM);
  }
  for (size_t i = 0; s->agent_pid && i < s->o.nodes; i++)
    sim_signal(s->agent_pid[i], SIGTERM, 5);
  ctl_client_free(s->agents);
  ctl_client_free(s->ctl);
  for (size_t i = 0; s->bodies && i < s->o.nodes; i++)
    free(s->bodies[i]);
  free(s->bodies);
  free(s->reqs);
  free(s->agent_pid);
  free(s->agent_port);
  free(s->down);
}

static void print_human(const json_t *o) {
  static const char *const keys[] = {"nodes",
                                     "gpus",
                                     "jobs",
                                     "target_w",
                                     "caps_applied_s",
                                     "compliance_s",
                                     "overshoot_samples",
                                     "samples",
                                     "max_over_pct",
                                     "gap_recovered",
                                     "tput_vs_equal",
                                     "tput_vs_oracle",
                                     "wrong_limits_after",
                                     "wrong_limits_final",
                                     "churned_jobs",
                                     "alloc_ms_max"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    const json_t *v = json_object_get(o, keys[i]);
    if (json_is_number(v))
      printf("%-20s %.6g\n", keys[i], json_number_value(v));
    else
      printf("%-20s -\n", keys[i]);
  }
  const json_t *why = json_object_get(o, "gap_undefined");
  if (why) printf("(gap_recovered: %s)\n", json_string_value(why));
  size_t k;
  const json_t *f;
  json_array_foreach(json_object_get(o, "faults"), k, f) {
    const json_t *healed = json_object_get(f, "healed_after_s");
    printf("fault %-14s at %gs: %s", json_string_value(json_object_get(f, "kind")),
           json_number_value(json_object_get(f, "at_s")),
           json_is_true(json_object_get(f, "fired")) ? "fired" : "not fired");
    if (json_is_number(healed)) printf(", healed after %.1fs", json_number_value(healed));
    printf("\n");
  }
  printf("(simulated: the twin's jobs on the fake NVML; see docs/controller.md)\n");
}

int ctl_sim_cluster_main(int argc, char **argv) {
  struct sim s;
  memset(&s, 0, sizeof s);
  int prc = parse_args(argc, argv, &s.o);
  if (prc) return prc == 1 ? 0 : 2;
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  char err[512] = "";
  struct run_state rs = {.caps_applied_s = -1, .write_warned_t = -INFINITY};
  sim_score_init(&rs.score);
  int rc = setup(&s, err, sizeof err);
  if (rc == 0) {
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/power.csv", s.o.dir);
    rs.trace = fopen(path, "w");
    if (rs.trace) fprintf(rs.trace, "t_s,reported_w,limits_w,no_job_w\n");
    rc = run_loop(&s, &rs);
    if (rs.trace) fclose(rs.trace);
  } else
    fprintf(stderr, "error: sim-cluster: %s\n", err);
  size_t wrong_after = rc == 0 ? wrong_limits(&s) : 0;
  teardown(&s);
  long hw = s.o.hosted ? host_wrong_final(&s) : 0;
  size_t wrong_final = s.o.hosted  ? (hw < 0 ? s.o.nodes * s.o.gpus_per_node : (size_t)hw)
                       : s.w.nodes ? wrong_limits(&s)
                                   : 0;
  if (rc == 0) {
    json_t *o = result_json(&s, &rs, wrong_after, wrong_final);
    if (s.o.json) {
      json_dumpf(o, stdout, JSON_INDENT(2));
      putchar('\n');
    } else {
      print_human(o);
    }
    json_decref(o);
  } else if (rc == -EINTR) {
    fprintf(stderr, "error: sim-cluster: interrupted\n");
  }
  sim_score_release(&rs.score);
  sim_world_release(&s.w);
  if (!s.o.keep && s.o.dir[0]) {
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", s.o.dir);
    if (strstr(s.o.dir, "pflex-sim-") && system(cmd) != 0)
      fprintf(stderr, "warning: cannot remove '%s'\n", s.o.dir);
  }
  return rc == 0 ? 0 : 1;
}
