/* The restore records (src/gpu/restore.c): arbitrary bytes as restore.json in
 * a private state directory, read through pflex_restore_list as pflex cap
 * restore does. It either fails (-PFLEX_E_PARSE) or gives records whose
 * limits are exactly the file's: a power limit the file states (in mW) must
 * never be read as a different one, or a GPU would be restored to a wrong
 * limit. */
#include "fuzz.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdbool.h>

#include "pflex/error.h"
#include "pflex/restore.h"

/* fuzz-args: -max_len=4096 */

static char dir[64];
static char file[128];
static struct pflex_restore *store;

static void cleanup(void) {
  pflex_restore_free(store);
  char lock[128];
  snprintf(lock, sizeof lock, "%s/restore.lock", dir);
  unlink(file);
  unlink(lock);
  rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/pflex-fuzz-XXXXXX", tmp && *tmp && strlen(tmp) < 40 ? tmp : "/tmp");
  if (!mkdtemp(dir) || pflex_restore_open(dir, &store) != 0) {
    fprintf(stderr, "fuzz_restore: cannot make a state directory in %s\n", dir);
    exit(1);
  }
  snprintf(file, sizeof file, "%s/%s", dir, PFLEX_RESTORE_FILE);
  atexit(cleanup);
  return 0;
}

/* The record's limit field as the file states it, when it is an integer. */
static bool stated(json_t *o, const char *key, json_int_t *ret) {
  json_t *v = json_object_get(o, key);
  if (!json_is_integer(v)) return false;
  *ret = json_integer_value(v);
  return true;
}

static void check_records(const uint8_t *data, size_t size,
                          const struct pflex_restore_record *rec, size_t n) {
  json_t *root = json_loadb((const char *)data, size, 0, NULL);
  json_t *arr = json_object_get(root, "records");
  fuzz_check(json_array_size(arr) == n);
  for (size_t i = 0; i < n; i++) {
    json_t *o = json_array_get(arr, i);
    json_int_t v;
    fuzz_check(stated(o, "original_limit_mw", &v) && v > 0);
    if (rec[i].original_mw != v)
      fprintf(stderr, "record %zu: original_limit_mw %lld read as %u\n", i, (long long)v,
              rec[i].original_mw);
    fuzz_check(rec[i].original_mw == v);
    if (stated(o, "set_limit_mw", &v) && v > 0) fuzz_check(rec[i].set_mw == v);
    if (stated(o, "prev_set_limit_mw", &v) && v > 0) fuzz_check(rec[i].prev_set_mw == v);
  }
  json_decref(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return 0;
  bool ok = write(fd, data, size) == (ssize_t)size;
  close(fd);
  if (!ok) return 0;
  struct pflex_restore_record *rec = NULL;
  size_t n = 0;
  int err = pflex_restore_list(store, &rec, &n);
  fuzz_check(err == 0 || err == -PFLEX_E_PARSE || err == -ENOMEM);
  if (err == 0) {
    check_records(data, size, rec, n);
    free(rec);
  }
  return 0;
}
