/* Shortest round-trip number text (include/pflex/format.h). */
#include <stdio.h>
#include <stdlib.h>

#include "pflex/format.h"

void pflex_format_double(char *buf, size_t size, double v) {
  for (int prec = 6; prec <= 17; prec++) {
    snprintf(buf, size, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) return;
  }
}
