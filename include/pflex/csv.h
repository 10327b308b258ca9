/* The text every pflex CSV writer produces (the runs and series writers and the
 * commands' --csv output): numbers in the shortest form that reads back as the
 * same double, and fields quoted only when they must be (RFC 4180). */
#ifndef PFLEX_CSV_H
#define PFLEX_CSV_H

#include <stddef.h>
#include <stdio.h>

/* Room for any text of pflex_csv_format_double ("-1.2345678901234567e-308"). */
#define PFLEX_CSV_NUM_MAX 32

/* Writes into buf the shortest %g text (6 to 17 significant digits) that reads
 * back as exactly v ("nan", "inf", "-inf" for non-finite v). */
void pflex_csv_format_double(char *buf, size_t size, double v);

/* Writes v to f as pflex_csv_format_double does, then sep unless sep is 0: 0 or -EIO. */
int pflex_csv_write_double(FILE *f, double v, char sep);

/* Writes s to f, quoted only when it holds a comma, quote, CR or LF or starts or
 * ends with a space or tab, then sep unless sep is 0: 0 or -EIO. */
int pflex_csv_write_field(FILE *f, const char *s, char sep);

#endif
