/* pflex-controller's settings: the key table, the INI reader, the options (config.h). */
#include "controller/config.h"

#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "controller/discover_slurm.h"
#include "controller/inventory.h"

enum key_type { K_STRING, K_DOUBLE, K_INT, K_CHOICE };

struct key {
  const char *name; /* INI key in [controller]; option --name with '_' -> '-' */
  enum key_type type;
  size_t offset;
  size_t size;         /* K_STRING buffer size */
  double lo, hi;       /* K_DOUBLE / K_INT range */
  const char *choices; /* K_CHOICE: "a|b|c", stored as the index */
  const char *defval;  /* default, as text */
  const char *help;
};

#define OFF(f) offsetof(struct ctl_config, f)
#define STR(f) K_STRING, OFF(f), sizeof(((struct ctl_config *)0)->f), 0, 0, NULL
#define DBL(f, lo, hi) K_DOUBLE, OFF(f), 0, lo, hi, NULL
#define INT(f, lo, hi) K_INT, OFF(f), 0, lo, hi, NULL
#define CHO(f, c) K_CHOICE, OFF(f), 0, 0, 0, c

static const struct key KEYS[] = {
    {"listen", STR(listen), "127.0.0.1:9180", "API address HOST:PORT (\"\" = no API)"},
    {"token_file", STR(token_file), "", "bearer token file for writes to the API"},
    {"read_auth", CHO(read_auth, "open|token"), "open", "reads of the API: open or token"},
    {"inventory", CHO(inventory, "file|slurm"), "file",
     "where the agents come from: agents_file, or discovery from Slurm (sinfo, squeue)"},
    {"agents_file", STR(agents_file), "/etc/pflex/agents", "agent URLs, one per line"},
    {"agent_url_template", STR(agent_url_template), "http://{node}:9400",
     "inventory = slurm: a node's pflexd URL ({node}: its name, {addr}: its NodeAddr)"},
    {"slurm_bin_dir", STR(slurm_bin_dir), "/usr/bin", "directory of Slurm's sinfo and squeue"},
    {"slurm_poll_s", DBL(slurm_poll_s, 1, 3600), "30", "re-discovery from Slurm every this, s"},
    {"slurm_timeout_s", DBL(slurm_timeout_s, 0.1, 600), "15",
     "time limit of one sinfo/squeue run, s (then killed; the last good inventory stays)"},
    {"slurm_max_output_mb", INT(slurm_max_output_mb, 1, 4096), "256",
     "largest sinfo/squeue output read, MiB"},
    {"agent_token_file", STR(agent_token_file), "", "bearer token the agents expect"},
    {"state_db", STR(state_db), "/var/lib/pflex-controller/controller.db", "SQLite state file"},
    {"schedule_file", STR(schedule_file), "", "planned events (JSON), \"\" = none"},
    {"model_file", STR(model_file), "",
     "`pflex fit` model: a job's prior PFI from its telemetry (\"\" = prior_pfi for all)"},
    {"templates_file", STR(templates_file), "",
     "runs CSV of measured sweeps whose curves shape every job's (\"\" = the parametric family)"},
    {"round_s", DBL(round_s, 0.05, 60), "1", "control round period, s"},
    {"lease_rounds", INT(lease_rounds, 2, 600), "5", "a cap's lease, in rounds"},
    {"agent_timeout_s", DBL(agent_timeout_s, 0.01, 60), "0.5", "timeout of one agent request, s"},
    {"objective", CHO(objective, "tokens|progress"), "tokens",
     "maximize total tokens/s, or total progress (throughput relative to uncapped)"},
    {"unassigned", CHO(unassigned, "min|default"), "min",
     "cap of GPUs without a job during an event"},
    {"prior_pfi", DBL(prior_pfi, 0.6, 6.0), "1.38",
     "PFI of the population prior curve (median of the paper's 32 groups)"},
    {"gain_up", DBL(gain_up, 0, 1), "0.14", "feedback gain while under target"},
    {"gain_down", DBL(gain_down, 0, 1), "0.5", "feedback gain while over target"},
    {"margin_pct", DBL(margin_pct, 0, 10), "0.5", "feedback setpoint below target, %"},
    {"max_over_pct", DBL(max_over_pct, 0, 10), "1",
     "the allocation's budget at most target + this %; raises fill only to the target "
     "(docs/controller.md)"},
    {"baseline_rounds", INT(baseline_rounds, 1, 600), "3",
     "rounds averaged for the uncapped baseline of cut_pct"},
    {"max_rounds", INT(max_rounds, 0, 1000000000), "0", "stop after N rounds (0 = run)"},
};
#define NKEYS (sizeof KEYS / sizeof KEYS[0])

static const struct key *key_find(const char *name) {
  for (size_t i = 0; i < NKEYS; i++)
    if (strcmp(KEYS[i].name, name) == 0) return &KEYS[i];
  return NULL;
}

static int choice_index(const char *choices, const char *v) {
  size_t n = strlen(v);
  int i = 0;
  for (const char *p = choices; *p; i++) {
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    if (len == n && strncmp(p, v, n) == 0) return i;
    if (!bar) break;
    p = bar + 1;
  }
  return -1;
}

/* Sets one key from text; on error writes the reason, without the key or
 * option it came from (the caller names that). */
static int key_set(struct ctl_config *cfg, const struct key *k, const char *v, char *err,
                   size_t errlen) {
  char *base = (char *)cfg + k->offset;
  char *end;
  switch (k->type) {
  case K_STRING:
    if (strlen(v) >= k->size) {
      snprintf(err, errlen, "longer than %zu characters", k->size - 1);
      return -EINVAL;
    }
    memcpy(base, v, strlen(v) + 1);
    return 0;
  case K_DOUBLE:
  case K_INT: {
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x) || x < k->lo || x > k->hi ||
        (k->type == K_INT && x != floor(x))) {
      snprintf(err, errlen, "'%s' is not %s in [%g, %g]", v,
               k->type == K_INT ? "an integer" : "a number", k->lo, k->hi);
      return -EINVAL;
    }
    if (k->type == K_INT)
      *(int *)base = (int)x;
    else
      *(double *)base = x;
    return 0;
  }
  case K_CHOICE: {
    int i = choice_index(k->choices, v);
    if (i < 0) {
      snprintf(err, errlen, "'%s' is not one of %s", v, k->choices);
      return -EINVAL;
    }
    *(int *)base = i;
    return 0;
  }
  }
  return -EINVAL;
}

void ctl_config_defaults(struct ctl_config *cfg) {
  char err[64];
  memset(cfg, 0, sizeof *cfg);
  for (size_t i = 0; i < NKEYS; i++)
    (void)key_set(cfg, &KEYS[i], KEYS[i].defval, err, sizeof err);
}

static struct ctl_class *class_get(struct ctl_config *cfg, const char *name, char *err,
                                   size_t errlen) {
  for (size_t i = 0; i < cfg->nclasses; i++)
    if (strcmp(cfg->classes[i].name, name) == 0) return &cfg->classes[i];
  if (cfg->nclasses == CTL_MAX_CLASSES || strlen(name) >= sizeof cfg->classes[0].name || !*name) {
    snprintf(err, errlen, "class '%s': empty, too long, or more than %d classes", name,
             CTL_MAX_CLASSES);
    return NULL;
  }
  struct ctl_class *c = &cfg->classes[cfg->nclasses++];
  memset(c, 0, sizeof *c);
  snprintf(c->name, sizeof c->name, "%s", name);
  c->match[0] = '\0'; /* no match key: the class is only chosen by name */
  c->weight = 1;
  return c;
}

static int class_set(struct ctl_class *c, const char *key, const char *v, char *err,
                     size_t errlen) {
  char *end;
  if (strcmp(key, "match") == 0) {
    if (strlen(v) >= sizeof c->match || !*v) {
      snprintf(err, errlen, "class '%s': match: empty or too long", c->name);
      return -EINVAL;
    }
    snprintf(c->match, sizeof c->match, "%s", v);
    return 0;
  }
  bool weight = strcmp(key, "weight") == 0;
  if (!weight && strcmp(key, "floor_pct") != 0) {
    snprintf(err, errlen, "class '%s': unknown key '%s' (match, weight, floor_pct)", c->name, key);
    return -EINVAL;
  }
  errno = 0;
  double x = strtod(v, &end);
  bool ok = !errno && end != v && !*end && isfinite(x) &&
            (weight ? x > 0 && x <= 1000 : x >= 0 && x < 100);
  if (!ok) {
    snprintf(err, errlen, "class '%s': %s: '%s' is not a number in %s", c->name, key, v,
             weight ? "(0, 1000]" : "[0, 100)");
    return -EINVAL;
  }
  *(weight ? &c->weight : &c->floor_pct) = x;
  return 0;
}

struct ini_ctx {
  struct ctl_config *cfg;
  struct ctl_config tmp[1]; /* what the file sets, kept only if all of it is good */
  char err[256];
};

static int on_ini_key(void *user, const char *section, const char *name, const char *value) {
  struct ini_ctx *ctx = user;
  if (strncmp(section, "class ", 6) == 0) {
    struct ctl_class *c = class_get(ctx->cfg, section + 6, ctx->err, sizeof ctx->err);
    return c && class_set(c, name, value, ctx->err, sizeof ctx->err) == 0;
  }
  if (strcmp(section, "controller") != 0) { /* section_line() finds them first */
    snprintf(ctx->err, sizeof ctx->err, "unknown section [%s] ([controller], [class NAME])",
             section);
    return 0;
  }
  const struct key *k = key_find(name);
  if (!k) {
    snprintf(ctx->err, sizeof ctx->err, "unknown key '%s'", name);
    return 0;
  }
  char why[200];
  if (key_set(ctx->cfg, k, value, why, sizeof why) == 0) return 1;
  snprintf(ctx->err, sizeof ctx->err, "'%s': %s", name, why);
  return 0;
}

/* libinih reads a line in pieces of INI_MAX_LINE (200) bytes and takes each
 * piece as a line (the tail of a long comment could set a key), and stops at
 * a NUL byte: both are refused first, naming the line. */
#define INI_LINE_MAX 197
#define CONFIG_FILE_MAX (1 << 20)

static size_t bad_line(const char *text, size_t n, const char **why) {
  size_t line = 1, col = 0;
  for (size_t i = 0; i < n; i++, col++) {
    if (text[i] == '\n') {
      line++;
      col = (size_t)-1;
    } else if (text[i] == '\0') {
      *why = "holds a NUL byte";
      return line;
    } else if (col >= INI_LINE_MAX) {
      *why = "longer than 197 characters";
      return line;
    }
  }
  return 0;
}

/* The whole file open on fd, NUL-terminated (free() it); -errno, -EFBIG over
 * 1 MiB. Closes fd. */
static int read_text(int fd, char **ret, size_t *ret_n) {
  FILE *f = fdopen(fd, "r");
  if (!f) {
    close(fd);
    return -ENOMEM;
  }
  struct stat st;
  int rc = fstat(fileno(f), &st) < 0 ? -errno : st.st_size > CONFIG_FILE_MAX ? -EFBIG : 0;
  size_t want = rc == 0 && st.st_size > 0 ? (size_t)st.st_size : 4096; /* a pipe: read to EOF */
  char *buf = rc == 0 ? malloc(want + 1) : NULL;
  size_t n = 0;
  while (buf && rc == 0) {
    n += fread(buf + n, 1, want - n, f);
    if (ferror(f)) rc = -EIO;
    if (rc || n < want) break;
    char *p = want < CONFIG_FILE_MAX ? realloc(buf, 2 * want + 1) : NULL;
    if (!p) {
      rc = want < CONFIG_FILE_MAX ? -ENOMEM : -EFBIG;
      break;
    }
    buf = p;
    want *= 2;
  }
  if (!buf && rc == 0) rc = -ENOMEM;
  fclose(f);
  if (rc < 0) {
    free(buf);
    return rc;
  }
  buf[n] = '\0';
  *ret = buf;
  *ret_n = n;
  return 0;
}

/* Whether the header [name] (n bytes) came before, among seen (its line in
 * *ret_line); else it is kept there while room lasts. */
struct header_seen {
  const char *name[CTL_MAX_CLASSES + 1];
  int len[CTL_MAX_CLASSES + 1];
  size_t line[CTL_MAX_CLASSES + 1];
  size_t n;
};

static bool header_repeats(struct header_seen *s, const char *name, int n, size_t line,
                           size_t *ret_line) {
  for (size_t i = 0; i < s->n; i++)
    if (s->len[i] == n && strncmp(s->name[i], name, (size_t)n) == 0) {
      *ret_line = s->line[i];
      return true;
    }
  if (s->n < CTL_MAX_CLASSES + 1) {
    s->name[s->n] = name, s->len[s->n] = n, s->line[s->n] = line;
    s->n++;
  }
  return false;
}

/* The line of the first section header other than [controller] and [class
 * NAME], or of one given twice (libinih would merge the two silently), 0 if
 * none, with the message in why. libinih reports a section only at its first
 * key (the line after the header), and a section without keys never. The
 * name is taken as libinih does: up to the first ']'. */
static size_t section_line(const char *text, char *why, size_t whylen) {
  size_t line = 1, first;
  struct header_seen seen = {.n = 0};
  for (const char *p = text; *p; line++) {
    const char *eol = strchr(p, '\n'), *q = p;
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    while (q < p + len && (*q == ' ' || *q == '\t'))
      q++;
    const char *close = *q == '[' ? memchr(q, ']', len - (size_t)(q - p)) : NULL;
    if (close) {
      int n = (int)(close - q - 1);
      bool known = (n == 10 && strncmp(q + 1, "controller", 10) == 0) ||
                   (n > 6 && strncmp(q + 1, "class ", 6) == 0);
      if (!known) {
        snprintf(why, whylen, "unknown section [%.*s] ([controller], [class NAME])", n, q + 1);
        return line;
      }
      if (header_repeats(&seen, q + 1, n, line, &first)) {
        snprintf(why, whylen, "section [%.*s] given twice (first at line %zu)", n, q + 1, first);
        return line;
      }
    }
    p += len + (eol != NULL);
  }
  return 0;
}

/* Settings change only when the whole file is good. */
int ctl_config_load(struct ctl_config *cfg, const char *path, char *err, size_t errlen) {
  int fd = ctl_open_trusted(path, err, errlen);
  return fd < 0 ? fd : ctl_config_load_fd(cfg, fd, path, err, errlen);
}

int ctl_config_load_fd(struct ctl_config *cfg, int fd, const char *path, char *err,
                       size_t errlen) {
  char *text = NULL;
  size_t n = 0;
  int rc = read_text(fd, &text, &n);
  if (rc < 0) {
    snprintf(err, errlen, "cannot read '%s': %s", path,
             rc == -EFBIG ? "larger than 1 MiB" : strerror(-rc));
    return rc;
  }
  const char *why = NULL;
  char section[256];
  size_t bad = bad_line(text, n, &why);
  if (!bad && (bad = section_line(text, section, sizeof section))) why = section;
  struct ini_ctx *ctx = bad ? NULL : calloc(1, sizeof *ctx);
  int line = bad ? (int)bad : -1;
  if (ctx) {
    ctx->cfg = ctx->tmp;
    *ctx->tmp = *cfg;
    line = ini_parse_string(text, on_ini_key, ctx);
    if (line == 0) *cfg = *ctx->tmp;
  }
  free(text);
  if (line != 0) {
    snprintf(err, errlen, "'%s': line %d: %s", path, line,
             why ? why : !ctx ? "out of memory" : ctx->err[0] ? ctx->err : "syntax error");
    free(ctx);
    return -EINVAL;
  }
  free(ctx);
  snprintf(cfg->config_file, sizeof cfg->config_file, "%s", path);
  return 0;
}

/* --class "NAME,key=value,..." */
static int class_arg(struct ctl_config *cfg, const char *arg, char *err, size_t errlen) {
  char buf[512];
  if (strlen(arg) >= sizeof buf) {
    snprintf(err, errlen, "--class: too long");
    return -EINVAL;
  }
  snprintf(buf, sizeof buf, "%s", arg);
  char *save, *name = strtok_r(buf, ",", &save);
  struct ctl_class *c = name ? class_get(cfg, name, err, errlen) : NULL;
  if (!c) {
    if (!name) snprintf(err, errlen, "--class: give NAME,match=GLOB,weight=W,floor_pct=F");
    return -EINVAL;
  }
  for (char *kv = strtok_r(NULL, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(kv, '=');
    if (!eq) {
      snprintf(err, errlen, "--class %s: '%s' is not key=value", c->name, kv);
      return -EINVAL;
    }
    *eq = '\0';
    if (class_set(c, kv, eq + 1, err, errlen) < 0) return -EINVAL;
  }
  return 0;
}

#define OPT_CONFIG 1000
#define OPT_CLASS 1001
#define OPT_KEY0 2000

static void option_name(const struct key *k, char *buf, size_t size) {
  snprintf(buf, size, "%s", k->name);
  for (char *p = buf; *p; p++)
    if (*p == '_') *p = '-';
}

int ctl_config_parse_args(struct ctl_config *cfg, int argc, char **argv, char *err, size_t errlen) {
  static char names[NKEYS][48];
  struct option opts[NKEYS + 3];
  for (size_t i = 0; i < NKEYS; i++) {
    option_name(&KEYS[i], names[i], sizeof names[i]);
    opts[i] = (struct option){names[i], required_argument, NULL, OPT_KEY0 + (int)i};
  }
  opts[NKEYS] = (struct option){"config", required_argument, NULL, OPT_CONFIG};
  opts[NKEYS + 1] = (struct option){"class", required_argument, NULL, OPT_CLASS};
  opts[NKEYS + 2] = (struct option){0};
  /* Pass 1: the config file, so that options override it wherever they stand. */
  opterr = 0;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1)
    if (c == OPT_CONFIG && ctl_config_load(cfg, optarg, err, errlen) < 0) return -EINVAL;
  optind = 1;
  while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
    if (c == OPT_CONFIG) continue;
    if (c == OPT_CLASS) {
      if (class_arg(cfg, optarg, err, errlen) < 0) return -EINVAL;
      continue;
    }
    if (c < OPT_KEY0 || (size_t)(c - OPT_KEY0) >= NKEYS) {
      snprintf(err, errlen, "unknown or incomplete option '%s'", argv[optind - 1]);
      return -EINVAL;
    }
    char why[200];
    if (key_set(cfg, &KEYS[c - OPT_KEY0], optarg, why, sizeof why) < 0) {
      snprintf(err, errlen, "--%s: %s", names[c - OPT_KEY0], why);
      return -EINVAL;
    }
  }
  return optind;
}

int ctl_config_check(const struct ctl_config *cfg, char *err, size_t errlen) {
  if (cfg->inventory == CTL_INVENTORY_FILE && !cfg->agents_file[0]) {
    snprintf(err, errlen, "no agents_file (--agents-file)");
    return -EINVAL;
  }
  if (cfg->inventory == CTL_INVENTORY_SLURM && cfg->slurm_bin_dir[0] != '/') {
    snprintf(err, errlen, "slurm_bin_dir '%s': want an absolute path", cfg->slurm_bin_dir);
    return -EINVAL;
  }
  if (cfg->inventory == CTL_INVENTORY_SLURM &&
      ctl_discovery_template_check(cfg->agent_url_template, err, errlen) < 0)
    return -EINVAL;
  if (!cfg->state_db[0]) {
    snprintf(err, errlen, "no state_db (--state-db)");
    return -EINVAL;
  }
  if (cfg->listen[0] && !cfg->token_file[0]) {
    snprintf(err, errlen, "the API (listen) needs token_file (--token-file) for writes");
    return -EINVAL;
  }
  if (cfg->agent_timeout_s >= cfg->round_s * cfg->lease_rounds) {
    snprintf(err, errlen,
             "agent_timeout_s %g must be shorter than a lease (round_s %g x lease_rounds %d = "
             "%g s)",
             cfg->agent_timeout_s, cfg->round_s, cfg->lease_rounds,
             cfg->round_s * cfg->lease_rounds);
    return -EINVAL;
  }
  return 0;
}

void ctl_config_usage(FILE *out) {
  char name[48];
  fprintf(out,
          "  --config FILE              INI file ([controller] keys as below, [class NAME])\n");
  fprintf(out, "  --class NAME,match=GLOB,weight=W,floor_pct=F   a job class\n");
  for (size_t i = 0; i < NKEYS; i++) {
    option_name(&KEYS[i], name, sizeof name);
    fprintf(out, "  --%-24s %s (default: %s)\n", name, KEYS[i].help,
            KEYS[i].defval[0] ? KEYS[i].defval : "none");
  }
}

const struct ctl_class *ctl_config_class_named(const struct ctl_config *cfg, const char *name) {
  for (size_t i = 0; i < cfg->nclasses; i++)
    if (strcmp(cfg->classes[i].name, name) == 0) return &cfg->classes[i];
  return NULL;
}

const struct ctl_class *ctl_config_class_for(const struct ctl_config *cfg, const char *job) {
  for (size_t i = 0; i < cfg->nclasses; i++)
    if (cfg->classes[i].match[0] && fnmatch(cfg->classes[i].match, job, 0) == 0)
      return &cfg->classes[i];
  return NULL;
}
