/* The SPANK plugin's input checks (src/slurm/spank_args.c) and its reading
 * of pflexd's replies (src/slurm/spank_reply.c) on arbitrary bytes. The
 * first byte picks the parser: 0 SLURM_JOB_GPUS lists, 1 plugstack.conf
 * arguments (one per line), 2 a classes file, 3 the three job options (one
 * value per line), 4 a pflexd error reply, 5 a GET /v1/jobs reply, 6
 * pflex-controller's config file (its [class NAME] sections).
 * Contract: an accepted GPU list is ascending, distinct, below 1024 and at
 * most the maximum; a refused input leaves a message and, for arguments, the
 * configuration as it was; an accepted configuration or option holds only
 * values in the documented ranges; the jobs a reply names as holders are
 * valid job ids other than the asking job, at most the maximum. */
#include "fuzz.h"

#include <errno.h>
#include <sys/stat.h>

/* The plugin's sources are not a library of the project (the plugin is
 * built apart, against Slurm): the harness compiles the checks it fuzzes. */
#include "slurm/spank_args.c"
#include "slurm/spank_reply.c"

/* fuzz-link: pflex_spank_parse_libs */
/* fuzz-args: -max_len=2048 */

static void check_msg(const char *msg) {
  fuzz_check(msg[0] != '\0' && strlen(msg) < PFLEX_SPANK_MSG_MAX);
}

static void fuzz_gpus(const char *s) {
  unsigned g[PFLEX_SPANK_MAX_GPUS];
  size_t n = 0;
  char msg[PFLEX_SPANK_MSG_MAX] = "";
  int err = pflex_spank_parse_gpus(s, g, PFLEX_SPANK_MAX_GPUS, &n, msg, sizeof msg);
  if (err) {
    fuzz_check(err == -EINVAL || err == -E2BIG);
    check_msg(msg);
    return;
  }
  fuzz_check(n <= PFLEX_SPANK_MAX_GPUS);
  for (size_t k = 0; k < n; k++) {
    fuzz_check(g[k] < 1024);
    fuzz_check(k == 0 || g[k] > g[k - 1]);
  }
}

static void check_conf(const struct pflex_spank_conf *c) {
  fuzz_check(c->socket[0] == '/');
  fuzz_check(c->nclasses >= 1 && c->nclasses <= PFLEX_SPANK_MAX_CLASSES);
  for (size_t k = 0; k < c->nclasses; k++)
    fuzz_check(class_name_ok(c->classes[k], strlen(c->classes[k])));
  fuzz_check(c->timeout_ms >= 100 && c->timeout_ms <= 60000);
}

/* Lines as arguments; classes_file= and controller_config= are left out:
 * they would open any path (and a missing one is -ENOENT, not -EINVAL).
 * Modes 2 and 6 give them files. */
static void fuzz_args(char *s) {
  char *argv[16];
  int argc = 0;
  for (char *line = strtok(s, "\n"); line && argc < 16; line = strtok(NULL, "\n"))
    if (strncmp(line, "classes_file", 12) != 0 && strncmp(line, "controller_config", 17) != 0)
      argv[argc++] = line;
  struct pflex_spank_conf c, before;
  pflex_spank_conf_init(&c);
  memcpy(&before, &c, sizeof c);
  char msg[PFLEX_SPANK_MSG_MAX] = "";
  int err = pflex_spank_conf_parse(&c, argc, argv, msg, sizeof msg);
  if (err) {
    fuzz_check(err == -EINVAL);
    check_msg(msg);
    fuzz_check(memcmp(&c, &before, sizeof c) == 0);
    return;
  }
  check_conf(&c);
}

static void fuzz_classes_file(const char *key, const uint8_t *data, size_t size) {
  const char *path = fuzz_path(data, size);
  if (!path || chmod(path, 0600) != 0) return;
  char arg[96];
  snprintf(arg, sizeof arg, "%s=%s", key, path);
  char *argv[] = {arg};
  struct pflex_spank_conf c, before;
  pflex_spank_conf_init(&c);
  memcpy(&before, &c, sizeof c);
  char msg[PFLEX_SPANK_MSG_MAX] = "";
  if (pflex_spank_conf_parse(&c, 1, argv, msg, sizeof msg)) {
    check_msg(msg);
    fuzz_check(memcmp(&c, &before, sizeof c) == 0);
    return;
  }
  check_conf(&c);
}

static void fuzz_options(char *s) {
  struct pflex_spank_conf c;
  pflex_spank_conf_init(&c);
  struct pflex_spank_job_opts o = {0};
  char msg[PFLEX_SPANK_MSG_MAX];
  char *v[3] = {s, NULL, NULL};
  for (int k = 1; k < 3 && v[k - 1]; k++) {
    char *nl = strchr(v[k - 1], '\n');
    if (nl) {
      *nl = '\0';
      v[k] = nl + 1;
    }
  }
  if (pflex_spank_opt_class(&c, v[0], &o, msg, sizeof msg) == 0)
    fuzz_check(o.has_class && class_name_ok(o.class_name, strlen(o.class_name)));
  else {
    check_msg(msg);
    fuzz_check(!o.has_class);
  }
  if (pflex_spank_opt_weight(v[1], &o, msg, sizeof msg) == 0)
    fuzz_check(o.has_weight && o.weight > 0 && o.weight <= PFLEX_SPANK_WEIGHT_MAX);
  else {
    check_msg(msg);
    fuzz_check(!o.has_weight);
  }
  if (pflex_spank_opt_min_tput(v[2], &o, msg, sizeof msg) == 0)
    fuzz_check(o.has_min_tput && o.min_tput > 0 && o.min_tput <= 1);
  else {
    check_msg(msg);
    fuzz_check(!o.has_min_tput);
  }
}

static void fuzz_replies(int which, const uint8_t *data, size_t size) {
  char msg[PFLEX_SPANK_MSG_MAX] = "";
  if (which == 4) {
    pflex_spank_reply_error((const char *)data, size, 500, msg, sizeof msg);
    fuzz_check(strncmp(msg, "pflexd answered 500", 19) == 0);
    return;
  }
  char ids[4][PFLEX_SPANK_JOB_ID_MAX + 1];
  unsigned gpus[] = {0, 2};
  size_t n = 99;
  if (pflex_spank_reply_holders((const char *)data, size, "42", gpus, 2, ids, 4, &n, msg,
                                sizeof msg)) {
    check_msg(msg);
    return;
  }
  fuzz_check(n <= 4);
  for (size_t k = 0; k < n; k++)
    fuzz_check(pflex_spank_job_id_ok(ids[k]) && strcmp(ids[k], "42") != 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  int mode = data[0] % 7;
  if (mode == 4 || mode == 5) {
    fuzz_replies(mode, data + 1, size - 1);
    return 0;
  }
  if (mode == 2 || mode == 6) {
    fuzz_classes_file(mode == 2 ? "classes_file" : "controller_config", data + 1, size - 1);
    return 0;
  }
  char *s = fuzz_cstr(data + 1, size - 1);
  if (!s) return 0;
  switch (mode) {
  case 0: fuzz_gpus(s); break;
  case 1: fuzz_args(s); break;
  default: fuzz_options(s); break;
  }
  free(s);
  return 0;
}
