/* Tests of the UTF-8 validity check (src/base/utf8.c) against RFC 3629's
 * rules: each case is a byte string and the offset of its first bad byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/utf8.h"

static void test_valid(void **state) {
  (void)state;
  const char *const good[] = {
      "",
      "plain ASCII, group 1",
      "\xc3\xa9t\xc3\xa9",              /* "été": two-byte sequences */
      "\xe2\x82\xac 100",               /* U+20AC, three bytes */
      "\xf0\x9f\x98\x80",               /* U+1F600, four bytes */
      "\xed\x9f\xbf",                   /* U+D7FF, just below the surrogates */
      "\xee\x80\x80",                   /* U+E000, just above them */
      "\xf4\x8f\xbf\xbf",               /* U+10FFFF, the last code point */
      "\xc2\x80 \xdf\xbf \xe0\xa0\x80", /* the lowest non-overlong forms */
  };
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    size_t at = 12345;
    if (!pflex__utf8_valid(good[i], &at)) fail_msg("case %zu refused at %zu", i, at);
    assert_int_equal(at, 12345); /* untouched when valid */
  }
}

static void test_invalid(void **state) {
  (void)state;
  const struct {
    const char *s;
    size_t at;
  } bad[] = {
      {"ab\xff", 2},            /* never in UTF-8 */
      {"\x80", 0},              /* a stray continuation byte */
      {"a\xc3", 1},             /* truncated at the end */
      {"\xc3(", 0},             /* a lead without its continuation */
      {"\xc0\xaf", 0},          /* overlong '/' */
      {"\xc1\xbf", 0},          /* overlong two-byte form */
      {"\xe0\x80\xaf", 0},      /* overlong three-byte form */
      {"\xf0\x80\x80\xaf", 0},  /* overlong four-byte form */
      {"ok \xed\xa0\x80", 3},   /* U+D800, a surrogate */
      {"\xed\xbf\xbf", 0},      /* U+DFFF */
      {"\xf4\x90\x80\x80", 0},  /* U+110000, past the last code point */
      {"\xf5\x80\x80\x80", 0},  /* a lead byte past U+10FFFF */
      {"\xe2\x82", 0},          /* a three-byte sequence cut short */
      {"x\xe2\x82(", 1},        /* ... by an ASCII byte */
      {"\xc3\xa9\xe9t\xe9", 2}, /* Latin-1 "été" after a good character */
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    size_t at = 12345;
    if (pflex__utf8_valid(bad[i].s, &at)) fail_msg("case %zu accepted", i);
    if (at != bad[i].at) fail_msg("case %zu: bad byte at %zu, expected %zu", i, at, bad[i].at);
  }
  assert_false(pflex__utf8_valid("\xff", NULL)); /* the offset is optional */
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_valid), cmocka_unit_test(test_invalid)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
