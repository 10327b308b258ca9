/* Tests of the string arena (src/base/arena.c): what is allocated keeps
 * its bytes while more is allocated, blocks are aligned for any object and
 * do not overlap, large requests get chunks of their own, and a request
 * that cannot be sized is refused. */
#include <setjmp.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/arena.h"

static void test_blocks_keep_their_bytes(void **state) {
  (void)state;
  struct pflex__arena *a = NULL;
  enum { N = 20000 };
  static unsigned char *blk[N];
  static size_t len[N];
  for (size_t i = 0; i < N; i++) {
    len[i] = 1 + (i * 7919) % 300;        /* 1-300 bytes */
    if (i % 1000 == 999) len[i] = 200000; /* now and then one larger than a chunk */
    blk[i] = pflex__arena_alloc(&a, len[i]);
    assert_non_null(blk[i]);
    assert_int_equal((uintptr_t)blk[i] % alignof(max_align_t), 0);
    memset(blk[i], (int)(i & 0xff), len[i]);
  }
  for (size_t i = 0; i < N; i++)
    for (size_t b = 0; b < len[i]; b += 97)
      if (blk[i][b] != (unsigned char)(i & 0xff)) fail_msg("block %zu lost byte %zu", i, b);
  size_t used = 0;
  for (size_t i = 0; i < N; i++)
    used += len[i];
  size_t held = pflex__arena_bytes(a);
  assert_true(held >= used);
  assert_true(held < 2 * used); /* chunks filled, not one per request */
  pflex__arena_free(a);
}

static void test_refusals(void **state) {
  (void)state;
  struct pflex__arena *a = NULL;
  assert_null(pflex__arena_alloc(&a, 0));
  assert_null(pflex__arena_alloc(&a, SIZE_MAX));
  assert_null(pflex__arena_alloc(&a, SIZE_MAX - 8));
  char *s = pflex__arena_alloc(&a, 3); /* still usable after a refusal */
  assert_non_null(s);
  memcpy(s, "ok", 3);
  assert_string_equal(s, "ok");
  pflex__arena_free(a);
  pflex__arena_free(NULL);
  assert_int_equal(pflex__arena_bytes(NULL), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_blocks_keep_their_bytes),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
