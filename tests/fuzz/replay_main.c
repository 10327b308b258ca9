/* A stand-in for libFuzzer's main in the ordinary (gcc, ASan, valgrind)
 * builds: runs the harness once on every file named, or in every directory
 * named, in name order, each input in a buffer of exactly its size (so that
 * ASan and valgrind see a read past its end). Exit 0 when every input ran,
 * 1 when one could not be read; a failed property aborts. */
#include "fuzz.h" /* first: it defines _GNU_SOURCE */

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "error: '%s': %s\n", path, strerror(errno));
    return -1;
  }
  size_t cap = 4096, n = 0;
  uint8_t *buf = malloc(cap);
  for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
    n += got;
    if (n == cap) {
      uint8_t *b = realloc(buf, cap *= 2);
      if (!b) free(buf);
      buf = b;
    }
  }
  int bad = ferror(f);
  fclose(f);
  if (!buf || bad) {
    fprintf(stderr, "error: '%s': cannot read\n", path);
    free(buf);
    return -1;
  }
  uint8_t *exact = malloc(n ? n : 1); /* exactly n bytes: an overread is caught */
  if (!exact) {
    free(buf);
    return -1;
  }
  memcpy(exact, buf, n);
  free(buf);
  LLVMFuzzerTestOneInput(exact, n);
  free(exact);
  return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b) {
  return strcmp((*a)->d_name, (*b)->d_name);
}

static int run_dir(const char *dir, size_t *count) {
  struct dirent **ents;
  int n = scandir(dir, &ents, NULL, by_name);
  if (n < 0) {
    fprintf(stderr, "error: '%s': %s\n", dir, strerror(errno));
    return -1;
  }
  int err = 0;
  for (int i = 0; i < n; i++) {
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, ents[i]->d_name);
    if (ents[i]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
      if (run_file(path) != 0) err = -1;
      else (*count)++;
    }
    free(ents[i]);
  }
  free(ents);
  return err;
}

int main(int argc, char **argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  size_t count = 0;
  int err = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
      if (run_dir(argv[i], &count) != 0) err = 1;
    } else if (run_file(argv[i]) != 0) {
      err = 1;
    } else {
      count++;
    }
  }
  printf("%s: %zu inputs ran\n", argv[0], count);
  return err || count == 0;
}
