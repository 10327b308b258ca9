/* The command line of pflexd: every config key is an option --key-name VALUE
 * (generated from the key table), plus --help and --version. The config file
 * is read first so that the command line overrides it. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config.h"

#define MAX_KEYS 48 /* below getopt's own returns (":" 58, "?" 63) */
#define OPT_HELP 1000
#define OPT_VERSION 1001

static void option_name(const char *key, char *buf, size_t size) {
  snprintf(buf, size, "%s", key);
  for (char *p = buf; *p; p++)
    if (*p == '_') *p = '-';
}

void agent_config_usage(FILE *f) {
  size_t n;
  const struct agent_key *k = agent_config_keys(&n);
  fprintf(f, "usage: pflexd [OPTION VALUE]...\n"
             "The pflex node agent: owns this node's GPU power limits (docs/agent.md).\n"
             "Every option is also a key of the config file (" AGENT_CONFIG_DEFAULT_PATH
             ", key = value).\n\n");
  for (size_t i = 0; i < n; i++) {
    char name[64], left[96];
    option_name(k[i].name, name, sizeof name);
    snprintf(left, sizeof left, "--%s %s", name, k[i].metavar);
    fprintf(f, "  %-28s %s", left, k[i].help);
    if (k[i].dflt[0]) fprintf(f, " [%s]", k[i].dflt);
    fputc('\n', f);
  }
  fprintf(f, "  %-28s %s\n  %-28s %s\n", "--help", "this text", "--version", "the version");
}

/* The value of --config (or --config=FILE) if given, else NULL. */
static const char *find_config(int argc, char **argv) {
  const char *found = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) break;
    if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) found = argv[++i];
    else if (strncmp(argv[i], "--config=", 9) == 0) found = argv[i] + 9;
  }
  return found;
}

static int read_config_file(struct agent_config *c, int argc, char **argv, char *errbuf,
                            size_t errlen) {
  const char *path = find_config(argc, argv);
  bool given = path != NULL;
  if (!given) path = AGENT_CONFIG_DEFAULT_PATH;
  int err = agent_config_load(c, path, errbuf, errlen);
  if (err == -ENOENT && !given) err = 0; /* no config file: defaults and options */
  if (err) return -EINVAL;
  snprintf(c->config, sizeof c->config, "%s", path);
  return 0;
}

int agent_config_parse(struct agent_config *c, int argc, char **argv, char *errbuf,
                       size_t errlen) {
  size_t n;
  const struct agent_key *k = agent_config_keys(&n);
  char names[MAX_KEYS][64];
  struct option opts[MAX_KEYS + 3];
  if (n > MAX_KEYS) return -E2BIG;
  agent_config_defaults(c);
  if (read_config_file(c, argc, argv, errbuf, errlen)) return -EINVAL;
  for (size_t i = 0; i < n; i++) {
    option_name(k[i].name, names[i], sizeof names[i]);
    opts[i] = (struct option){names[i], required_argument, NULL, (int)i};
  }
  opts[n] = (struct option){"help", no_argument, NULL, OPT_HELP};
  opts[n + 1] = (struct option){"version", no_argument, NULL, OPT_VERSION};
  opts[n + 2] = (struct option){0};
  optind = 1;
  opterr = 0;
  int ch;
  while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (ch == OPT_HELP) return agent_config_usage(stdout), 1;
    if (ch == OPT_VERSION) return printf("pflexd %s\n", PFLEX_VERSION), 1;
    if (ch < 0 || (size_t)ch >= n) {
      snprintf(errbuf, errlen, "unknown option or missing value: '%s' (pflexd --help)",
               argv[optind - 1]);
      return -EINVAL;
    }
    char why[512];
    if (strcmp(k[ch].name, "config") == 0) continue; /* read above */
    if (agent_config_set(c, k[ch].name, optarg, why, sizeof why)) {
      snprintf(errbuf, errlen, "--%s: %s", names[ch], why);
      return -EINVAL;
    }
  }
  if (optind < argc) {
    snprintf(errbuf, errlen, "unexpected argument '%s' (pflexd --help)", argv[optind]);
    return -EINVAL;
  }
  return 0;
}
