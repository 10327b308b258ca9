/* CSV files read with libcsv, as a stream of records (csv_table.h). */
#include <csv.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/csv_table.h"

/* The record being parsed: its fields' text one after another in buf, each
 * NUL-terminated, starting at off[i]. Reused from record to record. */
struct pending {
  char *buf;
  size_t len, cap;
  size_t *off;
  char **fields;
  size_t n, fcap;
  size_t line;
};

struct reader {
  const struct pflex__csv_sink *sink;
  const char *path;
  struct pflex_diag *diag;
  struct pending cur;
  struct pflex__csv_record header; /* owned */
  size_t line;                     /* physical line being fed */
  bool in_record;
  bool header_done;
  int err; /* from a callback: -ENOMEM, a check's error or the sink's return */
};

static void record_free(struct pflex__csv_record *r) {
  for (size_t i = 0; i < r->n; i++)
    free(r->fields[i]);
  free(r->fields);
  r->fields = NULL;
  r->n = 0;
}

static int pending_add(struct pending *c, const char *s, size_t len) {
  if (c->len + len + 1 > c->cap) {
    size_t cap = c->cap ? c->cap : 256;
    while (cap < c->len + len + 1)
      cap *= 2;
    char *buf = realloc(c->buf, cap);
    if (!buf) return -ENOMEM;
    c->buf = buf;
    c->cap = cap;
  }
  if (c->n == c->fcap) {
    size_t cap = c->fcap ? 2 * c->fcap : 16;
    size_t *off = realloc(c->off, cap * sizeof *off);
    if (!off) return -ENOMEM;
    c->off = off;
    char **fields = realloc(c->fields, cap * sizeof *fields);
    if (!fields) return -ENOMEM;
    c->fields = fields;
    c->fcap = cap;
  }
  if (len) memcpy(c->buf + c->len, s, len);
  c->buf[c->len + len] = '\0';
  c->off[c->n++] = c->len;
  c->len += len + 1;
  return 0;
}

/* The pending fields as a record (pointers into buf, valid until the next field). */
static struct pflex__csv_record pending_record(struct pending *c) {
  for (size_t i = 0; i < c->n; i++)
    c->fields[i] = c->buf + c->off[i];
  return (struct pflex__csv_record){.fields = c->fields, .n = c->n, .line = c->line};
}

static void on_field(void *s, size_t len, void *data) {
  struct reader *rd = data;
  if (rd->err) return;
  if (!rd->in_record) {
    rd->in_record = true;
    rd->cur.line = rd->line;
  }
  rd->err = pending_add(&rd->cur, s, len);
}

static int record_dup(const struct pflex__csv_record *r, struct pflex__csv_record *ret) {
  struct pflex__csv_record d = {.fields = calloc(r->n ? r->n : 1, sizeof *d.fields),
                                .line = r->line};
  if (!d.fields) return -ENOMEM;
  for (; d.n < r->n; d.n++)
    if (!(d.fields[d.n] = strdup(r->fields[d.n]))) {
      record_free(&d);
      return -ENOMEM;
    }
  *ret = d;
  return 0;
}

/* The header names every column and no column twice. */
static int check_header(const struct pflex__csv_record *h, const char *path,
                        struct pflex_diag *diag) {
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

static bool all_blank(const struct pflex__csv_record *r) {
  for (size_t i = 0; i < r->n; i++)
    if (r->fields[i][0]) return false;
  return true;
}

/* A record is complete: the header (checked, kept), or a row for the sink. */
static int record_done(struct reader *rd, const struct pflex__csv_record *r) {
  if (!rd->header_done) {
    rd->header_done = true;
    int err = check_header(r, rd->path, rd->diag);
    if (!err) err = record_dup(r, &rd->header);
    return err ? err : rd->sink->header ? rd->sink->header(rd->sink->ctx, &rd->header) : 0;
  }
  /* Records that are only empty fields (e.g. ",,,") are skipped. */
  if (all_blank(r)) return 0;
  if (r->n != rd->header.n)
    return pflex_diag_set(rd->diag, -PFLEX_E_PARSE, rd->path, r->line,
                          NULL, "%zu fields where the header has %zu", r->n, rd->header.n);
  return rd->sink->row ? rd->sink->row(rd->sink->ctx, r) : 0;
}

static void on_record(int c, void *data) {
  struct reader *rd = data;
  (void)c;
  if (rd->err) return;
  if (!rd->in_record) return; /* libcsv reports a record for a lone line end: ignore */
  rd->in_record = false;
  struct pflex__csv_record r = pending_record(&rd->cur);
  rd->err = record_done(rd, &r);
  rd->cur.n = rd->cur.len = 0;
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
static int feed_line(struct csv_parser *p, struct reader *rd, char *text, ssize_t len) {
  const char *path = rd->path;
  struct pflex_diag *diag = rd->diag;
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
    return rd->err ? rd->err
                   : pflex_diag_set(diag, -PFLEX_E_PARSE, path, rd->line, NULL, "%s",
                                    csv_error(p) == CSV_EPARSE
                                        ? "malformed quoting: a '\"' inside an unquoted field or "
                                          "text after a closing quote (quote the whole field, "
                                          "double the quotes in it)"
                                        : csv_strerror(csv_error(p)));
  return rd->err;
}

/* Reads every line of f through libcsv into rd's sink. */
static int parse_file(FILE *f, struct reader *rd) {
  struct csv_parser p;
  if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0) return -ENOMEM;
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  int err = 0;
  while (!err && (errno = 0, len = getline(&line, &cap, f)) >= 0) {
    rd->line++;
    err = feed_line(&p, rd, line, len);
  }
  if (!err && ferror(f)) {
    int e = errno ? errno : EIO;
    err = pflex_diag_set(rd->diag, -e, rd->path, rd->line, NULL, "read error: %s", strerror(e));
  }
  if (!err && csv_fini(&p, on_field, on_record, rd) != 0)
    err = rd->err ? rd->err
                  : pflex_diag_set(rd->diag, -PFLEX_E_PARSE, rd->path, rd->line, NULL, "%s",
                                   csv_error(&p) == CSV_EPARSE
                                       ? "unterminated quote: a quoted field runs to the end of "
                                         "the file"
                                       : csv_strerror(csv_error(&p)));
  if (!err) err = rd->err;
  csv_free(&p);
  free(line);
  return err;
}

int pflex__csv_stream(const char *path, const struct pflex__csv_sink *sink,
                      struct pflex_diag *diag) {
  struct reader rd = {.sink = sink, .path = path, .diag = diag};
  FILE *f = NULL;
  int err = open_csv(path, &f, diag);
  if (err) return err;
  err = parse_file(f, &rd);
  fclose(f);
  if (!err && !rd.header_done)
    err = pflex_diag_set(diag, -PFLEX_E_PARSE, path, 0, NULL, "empty file: no header line");
  record_free(&rd.header);
  free(rd.cur.buf);
  free(rd.cur.off);
  free(rd.cur.fields);
  return err;
}

/* The sink of pflex__csv_read: every record kept. */
static int keep_header(void *ctx, const struct pflex__csv_record *h) {
  return record_dup(h, &((struct pflex__csv_table *)ctx)->header);
}

static int keep_row(void *ctx, const struct pflex__csv_record *r) {
  struct pflex__csv_table *t = ctx;
  if ((t->nrows & (t->nrows - 1)) == 0) { /* grow at powers of two */
    struct pflex__csv_record *rows = realloc(t->rows, (t->nrows ? 2 * t->nrows : 1) * sizeof *rows);
    if (!rows) return -ENOMEM;
    t->rows = rows;
  }
  int err = record_dup(r, &t->rows[t->nrows]);
  if (!err) t->nrows++;
  return err;
}

void pflex__csv_release(struct pflex__csv_table *t) {
  if (!t) return;
  record_free(&t->header);
  for (size_t i = 0; i < t->nrows; i++)
    record_free(&t->rows[i]);
  free(t->rows);
  memset(t, 0, sizeof *t);
}

int pflex__csv_read(const char *path, struct pflex__csv_table *ret, struct pflex_diag *diag) {
  struct pflex__csv_table t = {0};
  struct pflex__csv_sink sink = {keep_header, keep_row, &t};
  int err = pflex__csv_stream(path, &sink, diag);
  if (err) {
    pflex__csv_release(&t);
    return err;
  }
  *ret = t;
  return 0;
}

long pflex__csv_column(const struct pflex__csv_record *h, const char *name) {
  for (size_t i = 0; i < h->n; i++)
    if (strcmp(h->fields[i], name) == 0) return (long)i;
  return -1;
}
