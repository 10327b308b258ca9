/* Shortest round-trip number text (include/pflex/format.h). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pflex/format.h"

/* The fast path's result for v in [1e-4, 1e6) with at most 15 significant
 * digits, which is most of what pflex writes (caps, powers, throughputs): the
 * smallest d such that m / 10^d == v for an integer m. m and 10^d are exact
 * doubles (m < 10^15, d <= 15), so that quotient is correctly rounded, as is
 * strtod of the decimal m * 10^-d: the text reads back as v, and no text with
 * fewer digits does (it would have a smaller d). For such v, %.*g at that
 * many digits prints exactly this decimal in fixed notation (the exponent
 * lies in [-4, 6)), trailing zeros stripped, and no fewer digits round-trip:
 * so the text is the loop's below, character for character
 * (test_format_fast_path_matches_the_loop checks it on millions of values).
 * false: v is outside that range, or needs more digits. */
static bool format_fixed(char *buf, size_t size, double v) {
  static const double p10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                               1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
  double a = v < 0 ? -v : v; /* NaN fails the range test */
  if (!(a >= 1e-4 && a < 1e6) || size < PFLEX_FORMAT_NUM_MAX) return false;
  for (int d = 0; d < 16; d++) {
    double x = a * p10[d];
    if (x >= 1e15) return false;
    double m = (double)(uint64_t)(x + 0.5); /* the nearest integer, checked below */
    if (m / p10[d] != a) continue;
    /* The digits of m, right to left, with the point d digits in. */
    char digits[24], *p = digits + sizeof digits;
    uint64_t im = (uint64_t)m;
    for (int k = 0; im || k <= d; k++) {
      if (k == d && d) *--p = '.';
      *--p = (char)('0' + im % 10);
      im /= 10;
    }
    if (v < 0) *--p = '-';
    size_t len = (size_t)(digits + sizeof digits - p);
    memcpy(buf, p, len);
    buf[len] = '\0';
    return true;
  }
  return false;
}

void pflex_format_double(char *buf, size_t size, double v) {
  if (format_fixed(buf, size, v)) return;
  for (int prec = 6; prec <= 17; prec++) {
    snprintf(buf, size, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) return;
  }
}
