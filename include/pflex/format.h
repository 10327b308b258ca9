/* Number text shared by every writer of the library (CSV, JSON-free tables,
 * telemetry runs): the shortest form that reads back as the same double. */
#ifndef PFLEX_FORMAT_H
#define PFLEX_FORMAT_H

#include <stddef.h>

/* Room for any text of pflex_format_double ("-1.2345678901234567e-308"). */
#define PFLEX_FORMAT_NUM_MAX 32

/* Writes into buf the shortest %g text (6 to 17 significant digits) that reads
 * back as exactly v ("nan", "inf", "-inf" for non-finite v). */
void pflex_format_double(char *buf, size_t size, double v);

#endif
