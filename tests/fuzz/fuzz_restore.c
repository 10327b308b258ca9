/* The restore records (src/gpu/restore.c): arbitrary bytes as restore.json in
 * a private state directory, read through pflex_restore_list as pflex cap
 * restore does. It either fails (-PFLEX_E_PARSE) or gives records whose
 * limits are the file's: a power limit the file states (in mW) must never be
 * read as a different one (a value above UINT_MAX wrapped), or a GPU would be
 * restored to a wrong limit. */
#include "fuzz.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
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

/* A limit field as the file states it when it is an integer in 1..UINT_MAX, else 0. */
static json_int_t stated_mw(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  json_int_t x = json_is_integer(v) ? json_integer_value(v) : 0;
  return x >= 1 && x <= UINT_MAX ? x : 0;
}

/* Each limit read is the file's, or 0 (not read: unknown, or a record the
 * store marks malformed and never uses); never another number. */
static void check_records(const uint8_t *data, size_t size,
                          const struct pflex_restore_record *rec, size_t n) {
  json_t *root = json_loadb((const char *)data, size, 0, NULL);
  json_t *arr = json_object_get(root, "records");
  fuzz_check(json_array_size(arr) == n);
  for (size_t i = 0; i < n; i++) {
    json_t *o = json_array_get(arr, i);
    json_int_t orig = stated_mw(o, "original_limit_mw");
    if (rec[i].original_mw != 0 && rec[i].original_mw != orig)
      fprintf(stderr, "record %zu: original_limit_mw read as %u\n", i, rec[i].original_mw);
    fuzz_check(rec[i].original_mw == 0 || rec[i].original_mw == orig);
    json_int_t set = stated_mw(o, "set_limit_mw"), prev = stated_mw(o, "prev_set_limit_mw");
    fuzz_check(rec[i].set_mw == 0 || rec[i].set_mw == set);
    fuzz_check(rec[i].prev_set_mw == 0 || rec[i].prev_set_mw == prev);
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
