/* The controller's agents file (ctl_inventory_load) on arbitrary bytes.
 * Checked on every input: an accepted file gives http:// or https:// URLs
 * without spaces or quotes, each once; a refused one names the file and the
 * line and returns nothing. */
#include "fuzz.h"

#include <fcntl.h>

#include <errno.h>

#include "controller/inventory.h"

/* fuzz-link: pflex_controller */
/* fuzz-args: -max_len=16384 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_path(data, size);
  if (!path) return 0;
  struct ctl_inventory inv = {(void *)1, 12345}; /* must stay untouched on refusal */
  char err[512] = "";
  /* the parser, not the trust check: a memfd is mode 0777 behind a symlink */
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  fuzz_check(fd >= 0);
  int rc = ctl_inventory_load_fd(fd, path, &inv, err, sizeof err);
  if (rc == 0) {
    for (size_t i = 0; i < inv.n; i++) {
      const char *u = inv.urls[i];
      fuzz_check(strncmp(u, "http://", 7) == 0 || strncmp(u, "https://", 8) == 0);
      fuzz_check(strlen(u) < CTL_URL_MAX && !strpbrk(u, "\"'\\"));
      for (const char *p = u; *p; p++)
        fuzz_check(*p > ' ' && *p < 0x7f);
      for (size_t j = 0; j < i; j++)
        fuzz_check(strcmp(u, inv.urls[j]) != 0);
    }
    ctl_inventory_release(&inv);
  } else {
    fuzz_check(rc == -EINVAL || rc == -ENOMEM);
    fuzz_check(inv.urls == (void *)1 && inv.n == 12345);
    fuzz_check(strstr(err, path) && (strstr(err, "line ") || strstr(err, "no agent URLs")));
  }
  return 0;
}
