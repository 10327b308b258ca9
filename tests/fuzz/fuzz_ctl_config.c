/* The controller's configuration file (ctl_config_load, INI through
 * libinih) on arbitrary bytes. Checked on every input: an accepted file
 * leaves every setting in the range its key allows and the classes named,
 * distinct and in range; a refused one names the file and line and leaves
 * the configuration as it was (nothing half-applied). */
#include "fuzz.h"

#include <fcntl.h>

#include <errno.h>
#include <math.h>

#include "controller/config.h"

/* fuzz-link: pflex_controller */
/* fuzz-args: -max_len=4096 */

static void check_accepted(const struct ctl_config *c) {
  fuzz_check(c->round_s >= 0.05 && c->round_s <= 60);
  fuzz_check(c->lease_rounds >= 2 && c->lease_rounds <= 600);
  fuzz_check(c->agent_timeout_s >= 0.01 && c->agent_timeout_s <= 60);
  fuzz_check(c->prior_pfi >= 0.6 && c->prior_pfi <= 6);
  fuzz_check(c->gain_up >= 0 && c->gain_up <= 1 && c->gain_down >= 0 && c->gain_down <= 1);
  fuzz_check(c->margin_pct >= 0 && c->margin_pct <= 10);
  fuzz_check(c->objective == CTL_OBJECTIVE_TOKENS || c->objective == CTL_OBJECTIVE_PROGRESS);
  fuzz_check(c->nclasses <= CTL_MAX_CLASSES);
  for (size_t i = 0; i < c->nclasses; i++) {
    const struct ctl_class *k = &c->classes[i];
    fuzz_check(k->name[0] && k->weight > 0 && k->weight <= 1000);
    fuzz_check(k->floor_pct >= 0 && k->floor_pct < 100);
    for (size_t j = 0; j < i; j++)
      fuzz_check(strcmp(k->name, c->classes[j].name) != 0);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_path(data, size);
  if (!path) return 0;
  static struct ctl_config cfg, before;
  ctl_config_defaults(&cfg);
  before = cfg;
  char err[512] = "";
  /* the parser, not the trust check: a memfd is mode 0777 behind a symlink */
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  fuzz_check(fd >= 0);
  int rc = ctl_config_load_fd(&cfg, fd, path, err, sizeof err);
  if (rc == 0) {
    check_accepted(&cfg);
    fuzz_check(strcmp(cfg.config_file, path) == 0);
  } else {
    fuzz_check(rc == -EINVAL);
    fuzz_check(strstr(err, path) && strstr(err, "line "));
    fuzz_check(memcmp(&cfg, &before, sizeof cfg) == 0);
  }
  return 0;
}
