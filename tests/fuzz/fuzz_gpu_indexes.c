/* pflex_gpu_parse_indexes (--gpus 0,2-3): never crashes, and what it accepts
 * is a sorted list of distinct indexes 0..1023 each of which the text names. */
#include "fuzz.h"

#include <errno.h>

#include "pflex/gpu.h"

/* fuzz-args: -max_len=256 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = fuzz_cstr(data, size);
  if (!s) return 0;
  unsigned *idx = NULL;
  size_t n = 0;
  int err = pflex_gpu_parse_indexes(s, &idx, &n);
  fuzz_check(err == 0 || err == -EINVAL || err == -ENOMEM);
  if (err == 0) {
    fuzz_check(n >= 1);
    for (size_t i = 0; i < n; i++) {
      fuzz_check(idx[i] <= 1023);
      fuzz_check(i == 0 || idx[i - 1] < idx[i]);
    }
    free(idx);
  }
  free(s);
  return 0;
}
