/* CSV files read whole with libcsv (csv_table.h). */
#include <csv.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/csv_table.h"

struct reader {
  struct pflex__csv_table *t;
  struct pflex__csv_record cur;
  size_t cur_cap;
  size_t line; /* physical line being fed */
  bool in_record;
  bool header_done;
  int err; /* -ENOMEM from a callback */
};

static void record_free(struct pflex__csv_record *r) {
  for (size_t i = 0; i < r->n; i++)
    free(r->fields[i]);
  free(r->fields);
  r->fields = NULL;
  r->n = 0;
}

static void on_field(void *s, size_t len, void *data) {
  struct reader *rd = data;
  if (rd->err) return;
  if (!rd->in_record) {
    rd->in_record = true;
    rd->cur.line = rd->line;
  }
  if (rd->cur.n == rd->cur_cap) {
    size_t cap = rd->cur_cap ? 2 * rd->cur_cap : 16;
    char **f = realloc(rd->cur.fields, cap * sizeof *f);
    if (!f) {
      rd->err = -ENOMEM;
      return;
    }
    rd->cur.fields = f;
    rd->cur_cap = cap;
  }
  char *v = malloc(len + 1);
  if (!v) {
    rd->err = -ENOMEM;
    return;
  }
  if (len) memcpy(v, s, len);
  v[len] = '\0';
  rd->cur.fields[rd->cur.n++] = v;
}

static void on_record(int c, void *data) {
  struct reader *rd = data;
  (void)c;
  if (rd->err) return;
  if (!rd->in_record) { /* libcsv reports a record for a lone line end: ignore */
    return;
  }
  rd->in_record = false;
  if (!rd->header_done) {
    rd->t->header = rd->cur;
    rd->header_done = true;
  } else {
    struct pflex__csv_table *t = rd->t;
    if ((t->nrows & (t->nrows - 1)) == 0) { /* grow at powers of two */
      struct pflex__csv_record *rows =
          realloc(t->rows, (t->nrows ? 2 * t->nrows : 1) * sizeof *rows);
      if (!rows) {
        rd->err = -ENOMEM;
        record_free(&rd->cur);
        return;
      }
      t->rows = rows;
    }
    t->rows[t->nrows++] = rd->cur;
  }
  rd->cur = (struct pflex__csv_record){0};
  rd->cur_cap = 0;
}

void pflex__csv_release(struct pflex__csv_table *t) {
  if (!t) return;
  record_free(&t->header);
  for (size_t i = 0; i < t->nrows; i++)
    record_free(&t->rows[i]);
  free(t->rows);
  memset(t, 0, sizeof *t);
}

static bool all_blank(const struct pflex__csv_record *r) {
  for (size_t i = 0; i < r->n; i++)
    if (r->fields[i][0]) return false;
  return true;
}

/* Opens path for reading. fopen accepts a directory on Linux; the first read
 * would fail with a bare EISDIR, so say what it is. */
static int open_csv(const char *path, FILE **ret, struct pflex_diag *diag) {
  FILE *f = fopen(path, "r");
  if (!f) return pflex_diag_set(diag, -errno, path, 0, NULL, "%s", strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
    fclose(f);
    return pflex_diag_set(diag, -EISDIR, path, 0, NULL, "is a directory, not a CSV file");
  }
  *ret = f;
  return 0;
}

/* Feeds physical line rd->line (len bytes) to libcsv, refusing an over-long
 * line, a NUL byte and malformed quoting. */
static int feed_line(struct csv_parser *p, struct reader *rd, char *text, ssize_t len,
                     const char *path, struct pflex_diag *diag) {
  /* A UTF-8 byte order mark (Excel's "CSV UTF-8") is not part of the first column's name. */
  if (rd->line == 1 && len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
    text += 3;
    len -= 3;
  }
  if ((size_t)len > PFLEX_CSV_MAX_LINE)
    return pflex_diag_set(diag, -PFLEX_E_PARSE, path, rd->line, NULL,
                          "line is %zd bytes long, more than the %u allowed", len,
                          PFLEX_CSV_MAX_LINE);
  if (memchr(text, '\0', (size_t)len))
    return pflex_diag_set(diag, -PFLEX_E_PARSE, path, rd->line, NULL, "NUL byte: not a text file");
  if (csv_parse(p, text, (size_t)len, on_field, on_record, rd) != (size_t)len)
    return pflex_diag_set(diag, -PFLEX_E_PARSE, path, rd->line, NULL, "%s",
                          csv_error(p) == CSV_EPARSE
                              ? "malformed quoting: a '\"' inside an unquoted field or text after "
                                "a closing quote (quote the whole field, double the quotes in it)"
                              : csv_strerror(csv_error(p)));
  return rd->err;
}

/* Reads every line of f through libcsv into rd's table (header and records). */
static int parse_file(FILE *f, const char *path, struct reader *rd, struct pflex_diag *diag) {
  struct csv_parser p;
  if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0) return -ENOMEM;
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  int err = 0;
  while (!err && (errno = 0, len = getline(&line, &cap, f)) >= 0) {
    rd->line++;
    err = feed_line(&p, rd, line, len, path, diag);
  }
  if (!err && ferror(f)) {
    int e = errno ? errno : EIO;
    err = pflex_diag_set(diag, -e, path, rd->line, NULL, "read error: %s", strerror(e));
  }
  if (!err && csv_fini(&p, on_field, on_record, rd) != 0)
    err = pflex_diag_set(diag, -PFLEX_E_PARSE, path, rd->line, NULL, "%s",
                         csv_error(&p) == CSV_EPARSE
                             ? "unterminated quote: a quoted field runs to the end of the file"
                             : csv_strerror(csv_error(&p)));
  if (!err) err = rd->err;
  record_free(&rd->cur);
  csv_free(&p);
  free(line);
  return err;
}

/* The header is there, names every column and no column twice. */
static int check_header(const struct reader *rd, const char *path, struct pflex_diag *diag) {
  if (!rd->header_done)
    return pflex_diag_set(diag, -PFLEX_E_PARSE, path, 0, NULL, "empty file: no header line");
  const struct pflex__csv_record *h = &rd->t->header;
  for (size_t i = 0; i < h->n; i++) {
    if (!h->fields[i][0])
      return pflex_diag_set(diag, -PFLEX_E_PARSE, path, h->line, NULL,
                            "header field %zu has no name%s", i + 1,
                            i + 1 == h->n ? " (a trailing comma?)" : "");
    for (size_t j = 0; j < i; j++)
      if (strcmp(h->fields[i], h->fields[j]) == 0)
        return pflex_diag_set(diag, -PFLEX_E_PARSE, path, h->line, h->fields[i],
                              "column appears twice in the header");
  }
  return 0;
}

/* Drops records that are only empty fields (e.g. ",,,"); every other one
 * must have the header's number of fields. */
static int keep_rows(struct pflex__csv_table *t, const char *path, struct pflex_diag *diag) {
  size_t kept = 0;
  for (size_t i = 0; i < t->nrows; i++) {
    if (all_blank(&t->rows[i])) {
      record_free(&t->rows[i]);
      continue;
    }
    if (t->rows[i].n != t->header.n) {
      int err = pflex_diag_set(diag, -PFLEX_E_PARSE, path, t->rows[i].line, NULL,
                               "%zu fields where the header has %zu", t->rows[i].n, t->header.n);
      for (size_t j = i; j < t->nrows; j++)
        record_free(&t->rows[j]);
      t->nrows = kept;
      return err;
    }
    t->rows[kept++] = t->rows[i];
  }
  t->nrows = kept;
  return 0;
}

int pflex__csv_read(const char *path, struct pflex__csv_table *ret, struct pflex_diag *diag) {
  struct pflex__csv_table t = {0};
  struct reader rd = {.t = &t};
  FILE *f = NULL;
  int err = open_csv(path, &f, diag);
  if (err) return err;
  err = parse_file(f, path, &rd, diag);
  fclose(f);
  if (!err) err = check_header(&rd, path, diag);
  if (!err) err = keep_rows(&t, path, diag);
  if (err) {
    pflex__csv_release(&t);
    return err;
  }
  *ret = t;
  return 0;
}

long pflex__csv_column(const struct pflex__csv_table *t, const char *name) {
  for (size_t i = 0; i < t->header.n; i++)
    if (strcmp(t->header.fields[i], name) == 0) return (long)i;
  return -1;
}
