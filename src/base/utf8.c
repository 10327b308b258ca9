/* UTF-8 validity (src/base/utf8.h). */
#include "base/utf8.h"

/* The length of the sequence that starts with lead byte b (0: not a lead). */
static int seq_len(unsigned char b) {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2; /* C0, C1: overlong two-byte forms */
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4; /* F5-FF: above U+10FFFF */
  return 0;
}

/* Whether the second byte c fits lead b: this rules out the overlong three-
 * and four-byte forms, the surrogates (ED A0-BF) and code points past U+10FFFF. */
static bool second_ok(unsigned char b, unsigned char c) {
  if (b == 0xE0) return c >= 0xA0 && c <= 0xBF;
  if (b == 0xED) return c >= 0x80 && c <= 0x9F;
  if (b == 0xF0) return c >= 0x90 && c <= 0xBF;
  if (b == 0xF4) return c >= 0x80 && c <= 0x8F;
  return c >= 0x80 && c <= 0xBF;
}

bool pflex__utf8_valid(const char *s, size_t *ret_offset) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  while (p[i]) {
    int n = seq_len(p[i]);
    bool ok = n > 0 && (n == 1 || second_ok(p[i], p[i + 1]));
    for (int k = 2; ok && k < n; k++)
      ok = p[i + k] >= 0x80 && p[i + k] <= 0xBF;
    if (!ok) {
      if (ret_offset) *ret_offset = i;
      return false;
    }
    i += (size_t)n;
  }
  return true;
}
