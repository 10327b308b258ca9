/* Internal: a whole CSV file read into memory with libcsv, each record with the
 * physical line it starts on. Shared by the readers of runs, series and jobs
 * files (field text: pflex/csv.h; atomic replacement: base/atomic.h). */
#ifndef PFLEX_IO_CSV_TABLE_H
#define PFLEX_IO_CSV_TABLE_H

#include <stdio.h>

#include "pflex/error.h"

/* No real runs or series record comes near this; a longer line is rejected. */
#define PFLEX_CSV_MAX_LINE (64u * 1024u)

struct pflex__csv_record {
  char **fields;
  size_t n;
  size_t line; /* physical line the record starts on, 1-based */
};

struct pflex__csv_table {
  struct pflex__csv_record header;
  struct pflex__csv_record *rows;
  size_t nrows;
};

/* Reads path (RFC 4180, blank lines skipped). Errors: empty file, a line over
 * PFLEX_CSV_MAX_LINE, malformed quoting, duplicate or empty header names,
 * a record whose field count differs from the header's. */
int pflex__csv_read(const char *path, struct pflex__csv_table *ret, struct pflex_diag *diag);
void pflex__csv_release(struct pflex__csv_table *t);

/* Index of a header column, or -1. */
long pflex__csv_column(const struct pflex__csv_table *t, const char *name);

#endif
