/* Internal: CSV files read with libcsv, as a stream of records or whole into
 * memory, each record with the physical line it starts on. Shared by the
 * readers of runs, series and jobs files (field text: pflex/csv.h; atomic
 * replacement: base/atomic.h). */
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

/* A CSV file read as a stream: header(ctx, h) once with the checked header,
 * then row(ctx, r) for every record in file order (records of only empty
 * fields skipped, every other one with the header's number of fields). The
 * header stays valid until the read returns; a record's fields only during
 * its call. A nonzero return of a callback stops the read and is returned. */
struct pflex__csv_sink {
  int (*header)(void *ctx, const struct pflex__csv_record *h);
  int (*row)(void *ctx, const struct pflex__csv_record *r);
  void *ctx;
};

/* Reads path (RFC 4180, blank lines skipped) into sink, holding one record at
 * a time. Errors: empty file, a line over PFLEX_CSV_MAX_LINE, malformed
 * quoting, duplicate or empty header names, a record whose field count
 * differs from the header's; each names the file and line. */
int pflex__csv_stream(const char *path, const struct pflex__csv_sink *sink,
                      struct pflex_diag *diag);

/* The whole file in memory (pflex__csv_stream's records, kept). */
int pflex__csv_read(const char *path, struct pflex__csv_table *ret, struct pflex_diag *diag);
void pflex__csv_release(struct pflex__csv_table *t);

/* Index of a column of header h, or -1. */
long pflex__csv_column(const struct pflex__csv_record *h, const char *name);

#endif
