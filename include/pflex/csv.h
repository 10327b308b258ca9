/* The text every pflex CSV writer produces (the runs and series writers and the
 * commands' --csv output): numbers in the shortest form that reads back as the
 * same double, and fields quoted only when they must be (RFC 4180). */
#ifndef PFLEX_CSV_H
#define PFLEX_CSV_H

#include <stddef.h>
#include <stdio.h>

/* Writes v to f as pflex_format_double (pflex/format.h) does, then sep unless sep is 0: 0 or -EIO. */
int pflex_csv_write_double(FILE *f, double v, char sep);

/* Writes s to f, quoted only when it holds a comma, quote, CR or LF or starts or
 * ends with a space or tab, then sep unless sep is 0: 0 or -EIO. */
int pflex_csv_write_field(FILE *f, const char *s, char sep);

#endif
