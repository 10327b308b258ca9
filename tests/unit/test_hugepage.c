/* Tests of the huge-page advice for large arrays (src/base/hugepage.c):
 * the arrays work as malloc's do, sizes that overflow are refused, and
 * where the kernel gives huge pages on request ("madvise" or "always" in
 * /sys/kernel/mm/transparent_hugepage/enabled) an advised array's mapping
 * is eligible for them, while a small one is left alone. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sys/mman.h>

#include "base/hugepage.h"

static void test_arrays_work(void **state) {
  (void)state;
  size_t n = (PFLEX__HUGEPAGE_MIN / sizeof(double)) * 3;
  double *a = pflex__hugepage_calloc(n, sizeof *a);
  assert_non_null(a);
  for (size_t i = 0; i < n; i++)
    if (a[i] != 0) fail_msg("calloc'd element %zu is %g", i, a[i]);
  for (size_t i = 0; i < n; i++)
    a[i] = (double)i;
  double *b = pflex__hugepage_realloc(a, 2 * n, sizeof *b);
  assert_non_null(b);
  for (size_t i = 0; i < n; i++)
    if (b[i] != (double)i) fail_msg("realloc lost element %zu", i);
  b[2 * n - 1] = 1;
  free(b);
  unsigned char *big = pflex__hugepage_malloc(PFLEX__HUGEPAGE_MIN + 1, 1);
  assert_non_null(big);
  assert_int_equal((uintptr_t)big % ((uintptr_t)2 << 20), 0); /* on a huge page's boundary */
  big[PFLEX__HUGEPAGE_MIN] = 1;
  free(big);
  int *s = pflex__hugepage_malloc(10, sizeof *s); /* below the threshold: plain malloc */
  assert_non_null(s);
  s[9] = 3;
  free(s);
  void *z = pflex__hugepage_malloc(0, 8); /* like malloc(0): freeable */
  free(z);
}

static void test_overflow_refused(void **state) {
  (void)state;
  assert_null(pflex__hugepage_malloc(SIZE_MAX / 2, 4));
  assert_null(pflex__hugepage_calloc(SIZE_MAX / 2, 4));
  void *p = malloc(16);
  assert_non_null(p);
  assert_null(pflex__hugepage_realloc(p, SIZE_MAX / 4, 8)); /* p is still the caller's */
  free(p);
  assert_ptr_equal(pflex__hugepage_advise(NULL, PFLEX__HUGEPAGE_MIN), NULL);
}

/* Whether the kernel gives huge pages to ranges that ask (or to all);
 * *only_asked: to those only ("madvise"). */
static bool thp_on_request(bool *only_asked) {
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  char line[128] = "";
  *only_asked = false;
  if (!f) return false;
  bool ok = fgets(line, sizeof line, f) && (strstr(line, "[madvise]") || strstr(line, "[always]"));
  *only_asked = strstr(line, "[madvise]") != NULL;
  fclose(f);
  return ok;
}

/* The THPeligible flag of the mapping holding address a (-1: not found). */
static int thp_eligible(const void *a) {
  FILE *f = fopen("/proc/self/smaps", "r");
  char line[512];
  int in = 0, flag = -1;
  if (!f) return -1;
  while (flag < 0 && fgets(line, sizeof line, f)) {
    uintptr_t lo, hi;
    if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2 &&
        strchr(line, '-') < strchr(line, ' '))
      in = (uintptr_t)a >= lo && (uintptr_t)a < hi;
    else if (in && sscanf(line, "THPeligible: %d", &flag) == 1)
      break;
  }
  fclose(f);
  return flag;
}

static void test_advice_reaches_the_kernel(void **state) {
  (void)state;
  bool only_asked = false;
  if (!thp_on_request(&only_asked)) skip();
  size_t bytes = 4 * PFLEX__HUGEPAGE_MIN;
  unsigned char *a = pflex__hugepage_malloc(bytes, 1);
  assert_non_null(a);
  /* An address in the advised, 2 MiB-aligned interior. */
  const unsigned char *mid = a + bytes / 2;
  int eligible = thp_eligible(mid);
  if (eligible < 0) {
    free(a);
    skip(); /* a kernel without the flag in smaps */
  }
  assert_int_equal(eligible, 1);
  free(a);
  if (!only_asked) return;
  /* The control: a fresh mapping of the same size, not advised, is not
   * eligible (malloc's could be a heap range advised before). */
  unsigned char *plain =
      mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(plain != MAP_FAILED);
  assert_int_equal(thp_eligible(plain + bytes / 2), 0);
  munmap(plain, bytes);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_arrays_work),
      cmocka_unit_test(test_overflow_refused),
      cmocka_unit_test(test_advice_reaches_the_kernel),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
