/* The controller's schedule file (ctl_schedule_read) on arbitrary bytes.
 * Checked on every input: an accepted file gives only events not yet over,
 * each valid as a POST /v1/events body with a time (not "now") and marked
 * as from the schedule; a refused one says so naming the file, and returns
 * nothing. */
#include "fuzz.h"

#include <fcntl.h>

#include <errno.h>
#include <math.h>

#include "controller/schedule.h"

/* fuzz-link: pflex_controller */
/* fuzz-args: -max_len=8192 */

#define NOW 1.8e9

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_path(data, size);
  if (!path) return 0;
  struct ctl_event *v = (struct ctl_event *)1; /* must stay untouched on refusal */
  size_t n = 12345;
  char err[512] = "";
  /* the parser, not the trust check: a memfd is mode 0777 behind a symlink */
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  fuzz_check(fd >= 0);
  int rc = ctl_schedule_read_fd(fd, path, NOW, &v, &n, err, sizeof err);
  if (rc == 0) {
    for (size_t i = 0; i < n; i++) {
      const struct ctl_event *e = &v[i];
      fuzz_check((e->target_w > 0) != (e->cut_pct > 0));
      fuzz_check(e->duration_s > 0 && e->ramp_s >= 0 && e->ramp_s <= e->duration_s);
      fuzz_check(isfinite(e->start) && e->start + e->duration_s > NOW);
      fuzz_check(strcmp(e->source, "schedule") == 0 && e->id == 0);
    }
    free(v);
  } else {
    fuzz_check(rc == -EINVAL || rc == -ENOMEM);
    fuzz_check(v == (struct ctl_event *)1 && n == 12345);
    fuzz_check(strncmp(err, "'", 1) == 0 && strstr(err, path));
  }
  return 0;
}
