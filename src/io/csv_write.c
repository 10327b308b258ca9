/* CSV output text shared by every writer (include/pflex/csv.h). */
#include <csv.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pflex/csv.h"
#include "pflex/format.h"

int pflex_csv_write_double(FILE *f, double v, char sep) {
  char num[PFLEX_FORMAT_NUM_MAX];
  pflex_format_double(num, sizeof num, v);
  if (fputs(num, f) < 0) return -EIO;
  if (sep && fputc(sep, f) == EOF) return -EIO;
  return 0;
}

int pflex_csv_write_field(FILE *f, const char *s, char sep) {
  size_t len = strlen(s);
  /* libcsv's reader trims unquoted leading and trailing blanks: keep them by quoting. */
  bool quote = len && (s[0] == ' ' || s[len - 1] == ' ' || s[0] == '\t' || s[len - 1] == '\t');
  quote = quote || strpbrk(s, ",\"\r\n") != NULL;
  if (quote ? csv_fwrite(f, s, len) != 0 : fputs(s, f) < 0) return -EIO;
  if (sep && fputc(sep, f) == EOF) return -EIO;
  return 0;
}
