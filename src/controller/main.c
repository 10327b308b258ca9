/* pflex-controller: holds a power target across a cluster of pflexd agents
 * (docs/controller.md).
 *
 *   pflex-controller [run] [OPTIONS]        the controller (default)
 *   pflex-controller report EVENT [--config F] [--state-db F] [--plot FILE.svg|.png|.pdf]
 *   pflex-controller sim-cluster [OPTIONS]  a simulated cluster to prove it
 *
 * Exit status: 0 success, 1 failure, 2 usage error. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <curl/curl.h>
#include <jansson.h>

#include "controller/api.h"
#include "controller/controller.h"
#include "controller/log.h"
#include "controller/report.h"
#include "controller/sim_cluster.h"
#include "pflex/error.h"
#include "pflex/plot.h"

static volatile int stop_flag, reload_flag;

static void on_signal(int sig) {
  stop_flag = sig;
}

static void on_hup(int sig) {
  reload_flag = sig;
}

#define REPORT_USAGE                                                                               \
  "usage: pflex-controller report EVENT [--config FILE] [--state-db FILE] "                        \
  "[--plot FILE.svg|.png|.pdf]\n"

static void usage(FILE *out) {
  fprintf(out,
          "usage: pflex-controller [run] [OPTIONS]\n"
          "       pflex-controller report EVENT [--config FILE] [--state-db FILE]\n"
          "                                     [--plot FILE.svg|.png|.pdf]\n"
          "       pflex-controller sim-cluster [OPTIONS] (pflex-controller sim-cluster --help)\n"
          "Holds a cluster power target through the pflexd agents (docs/controller.md).\n\n");
  ctl_config_usage(out);
}

/* Many agents: one connection each, two per round. */
static void raise_nofile(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

/* Whether a start-up error is the configuration's: a file it names that is
 * missing, refused (owner, mode, link) or malformed. Exit 2, as a bad key;
 * anything else (memory, I/O, the store) is a failure, exit 1. */
static bool config_error(int rc) {
  static const int codes[] = {EPERM,        EACCES, EINVAL,      ENOENT,      ENOTDIR,
                              ENAMETOOLONG, ELOOP,  EISDIR,      PFLEX_E_DATA};
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
    if (rc == -codes[i]) return true;
  return false;
}

static int run(int argc, char **argv) {
  struct ctl_config cfg;
  char err[512];
  ctl_config_defaults(&cfg);
  int first = ctl_config_parse_args(&cfg, argc, argv, err, sizeof err);
  if (first < 0) {
    fprintf(stderr, "error: %s\n", err);
    return 2;
  }
  if (first < argc) {
    fprintf(stderr, "error: unexpected argument '%s'\n", argv[first]);
    return 2;
  }
  if (ctl_config_check(&cfg, err, sizeof err) < 0) { /* keys that do not go together */
    if (cfg.config_file[0])
      fprintf(stderr, "error: %s (the settings of '%s' and the options)\n", err, cfg.config_file);
    else
      fprintf(stderr, "error: %s\n", err);
    return 2;
  }
  raise_nofile();
  struct ctl_controller c;
  int orc = ctl_controller_open(&c, &cfg, err, sizeof err);
  if (orc < 0) {
    fprintf(stderr, "error: %s\n", err);
    ctl_controller_close(&c);
    return config_error(orc) ? 2 : 1;
  }
  struct ctl_api *api = NULL;
  if (cfg.listen[0] && ctl_api_start(&c, &api, err, sizeof err) < 0) {
    fprintf(stderr, "error: %s\n", err);
    ctl_controller_close(&c);
    return 1;
  }
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  struct sigaction hup = {.sa_handler = on_hup};
  sigaction(SIGHUP, &hup, NULL);
  c.reload = &reload_flag;
  signal(SIGPIPE, SIG_IGN);
  ctl_log("note", "pflex-controller %s: %zu agents, round %.3g s, lease %d rounds%s%s",
          PFLEX_VERSION, c.nnodes, cfg.round_s, cfg.lease_rounds, cfg.listen[0] ? ", API on " : "",
          cfg.listen);
  int rc = ctl_controller_run(&c, &stop_flag);
  if (stop_flag) ctl_log("note", "signal %d: stopping", stop_flag);
  ctl_api_stop(api);
  ctl_controller_close(&c);
  return rc < 0 ? 1 : 0;
}

/* report's store: --state-db, else the --config file's state_db, else the
 * default; an existing regular file only (a wrong path must not create an
 * empty store and then find no event in it). Exit status, 0 when found. */
static int report_store(const char *db, const char *conf, char *path, size_t size) {
  struct ctl_config cfg;
  char err[512];
  ctl_config_defaults(&cfg);
  if (conf && ctl_config_load(&cfg, conf, err, sizeof err) < 0) {
    fprintf(stderr, "error: %s\n", err);
    return 2;
  }
  snprintf(path, size, "%s", db ? db : cfg.state_db);
  struct stat st;
  int e = stat(path, &st) != 0 ? errno : S_ISREG(st.st_mode) ? 0 : -1;
  if (e) {
    fprintf(stderr, "error: cannot open '%s': %s\n", path,
            e > 0 ? strerror(e) : "not a regular file");
    return 1;
  }
  return 0;
}

static int report(int argc, char **argv) {
  const char *db = NULL, *conf = NULL, *plot = NULL, *event = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--state-db") == 0 && i + 1 < argc)
      db = argv[++i];
    else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
      conf = argv[++i];
    else if (strcmp(argv[i], "--plot") == 0 && i + 1 < argc)
      plot = argv[++i];
    else if (argv[i][0] != '-' && !event)
      event = argv[i];
    else {
      fprintf(stderr, "error: report: unexpected '%s'\n%s", argv[i], REPORT_USAGE);
      return 2;
    }
  }
  char *end;
  long long id = event ? strtoll(event, &end, 10) : 0;
  if (!event || *end || id <= 0) {
    fprintf(stderr, "error: report: give the event id (a positive integer)\n%s", REPORT_USAGE);
    return 2;
  }
  if (plot && !pflex_plot_device(plot)) {
    fprintf(stderr,
            "error: report: --plot '%s': the format follows the extension: .svg, .png or .pdf\n",
            plot);
    return 2;
  }
  char path[sizeof((struct ctl_config *)0)->state_db], err[512];
  int rc = report_store(db, conf, path, sizeof path);
  if (rc) return rc;
  struct ctl_store *st;
  if (ctl_store_open_readonly(path, &st, err, sizeof err) < 0) {
    fprintf(stderr, "error: %s\n", err);
    return 1;
  }
  json_t *o;
  rc = ctl_report_json(st, id, &o, err, sizeof err);
  if (rc == 0 && plot) rc = ctl_report_plot(st, id, plot, err, sizeof err);
  ctl_store_close(st);
  if (rc < 0) {
    fprintf(stderr, "error: %s\n", err);
    return 1;
  }
  json_dumpf(o, stdout, JSON_INDENT(2));
  putchar('\n');
  json_decref(o);
  return 0;
}

int main(int argc, char **argv) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  int rc;
  if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    usage(stdout);
    rc = 0;
  } else if (argc > 1 && strcmp(argv[1], "--version") == 0) {
    printf("pflex-controller %s\n", PFLEX_VERSION);
    rc = 0;
  } else if (argc > 1 && strcmp(argv[1], "report") == 0) {
    rc = report(argc - 1, argv + 1);
  } else if (argc > 1 && strcmp(argv[1], "sim-cluster") == 0) {
    rc = ctl_sim_cluster_main(argc - 1, argv + 1);
  } else if (argc > 1 && strcmp(argv[1], "run") == 0) {
    rc = run(argc - 1, argv + 1);
  } else {
    rc = run(argc, argv);
  }
  curl_global_cleanup();
  return rc;
}
