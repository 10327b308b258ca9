/* Reading telemetry series CSV files (docs/telemetry.md) with libcsv.
 *
 * Long format: a header naming `time_s`, `gpu` and any number of metric
 * columns, then one row per sample per GPU; rows with an empty `gpu` carry
 * the job's throughput in the throughput column (tokens_per_s by default).
 * Files are fed to libcsv one physical line at a time so that every error can
 * name the line it was found on; everything is loaded into a scratch series
 * that replaces the caller's only when the whole file is good. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <csv.h>

#include "pflex/series.h"

/* No real line comes near this; a longer one is a wrong file, not telemetry. */
#define MAX_LINE (64 * 1024)

enum mode { MODE_SERIES, MODE_TPUT };

struct reader {
  const char *path;
  enum mode mode;
  const char *tput_name;
  bool per_step_time;
  struct pflex_diag *diag;
  int err;

  size_t line;       /* physical line being fed */
  size_t row_line;   /* line the current row started on */
  char **fields;     /* current row */
  size_t nfields, cap_fields;

  bool have_header;
  char **header;
  size_t ncols;
  long col_time, col_gpu, col_tput; /* -1 when absent */
  size_t *metric_of; /* [col] metric index in the series (SIZE_MAX: not a metric) */

  struct pflex_series s;
  size_t rows;
};

static int fail(struct reader *rd, int err, size_t line, const char *column, const char *msg,
                const char *detail) {
  if (rd->err) return rd->err;
  rd->err = pflex_diag_set(rd->diag, err, rd->path, line, column, "%s%s%s", msg,
                           detail ? ": " : "", detail ? detail : "");
  return rd->err;
}

static void on_field(void *data, size_t len, void *ud) {
  struct reader *rd = ud;
  if (rd->err) return;
  if (rd->nfields == 0) rd->row_line = rd->line;
  if (rd->nfields == rd->cap_fields) {
    size_t cap = rd->cap_fields ? 2 * rd->cap_fields : 16;
    char **f = realloc(rd->fields, cap * sizeof *f);
    if (!f) {
      fail(rd, -ENOMEM, rd->line, NULL, "out of memory", NULL);
      return;
    }
    rd->fields = f;
    rd->cap_fields = cap;
  }
  char *copy = malloc(len + 1);
  if (!copy) {
    fail(rd, -ENOMEM, rd->line, NULL, "out of memory", NULL);
    return;
  }
  if (len) memcpy(copy, data, len);
  copy[len] = '\0';
  rd->fields[rd->nfields++] = copy;
}

static void clear_fields(struct reader *rd) {
  for (size_t k = 0; k < rd->nfields; k++) free(rd->fields[k]);
  rd->nfields = 0;
}

/* Strict number: the whole cell, finite. Leading/trailing blanks are allowed. */
static int parse_num(const char *text, double *ret) {
  while (*text == ' ' || *text == '\t') text++;
  if (!*text) return -ENODATA;
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  while (*end == ' ' || *end == '\t' || *end == '\r') end++;
  if (end == text || *end || errno == ERANGE || !isfinite(v)) return -EINVAL;
  *ret = v;
  return 0;
}

static bool blank(const char *text) {
  while (*text == ' ' || *text == '\t' || *text == '\r') text++;
  return !*text;
}

static void do_header(struct reader *rd) {
  rd->ncols = rd->nfields;
  rd->header = rd->fields;
  rd->fields = NULL;
  rd->nfields = rd->cap_fields = 0;
  rd->have_header = true;
  rd->col_time = rd->col_gpu = rd->col_tput = -1;
  rd->metric_of = malloc(rd->ncols * sizeof *rd->metric_of);
  if (!rd->metric_of) {
    fail(rd, -ENOMEM, rd->row_line, NULL, "out of memory", NULL);
    return;
  }
  for (size_t c = 0; c < rd->ncols; c++) {
    const char *name = rd->header[c];
    rd->metric_of[c] = SIZE_MAX;
    if (blank(name)) {
      fail(rd, -PFLEX_E_PARSE, rd->row_line, NULL, "empty column name in the header", NULL);
      return;
    }
    for (size_t d = 0; d < c; d++)
      if (strcmp(rd->header[d], name) == 0) {
        fail(rd, -PFLEX_E_PARSE, rd->row_line, name, "column appears twice in the header", NULL);
        return;
      }
    if (strcmp(name, "time_s") == 0)
      rd->col_time = (long)c;
    else if (strcmp(name, "gpu") == 0)
      rd->col_gpu = (long)c;
    else if (strcmp(name, rd->tput_name) == 0)
      rd->col_tput = (long)c;
    else if (rd->mode == MODE_SERIES) {
      int r = pflex_series_metric(&rd->s, name, &rd->metric_of[c]);
      if (r < 0) {
        fail(rd, r, rd->row_line, name, "out of memory", NULL);
        return;
      }
    }
  }
  if (rd->col_time < 0)
    fail(rd, -PFLEX_E_PARSE, rd->row_line, "time_s", "missing required column", NULL);
  else if (rd->mode == MODE_SERIES && rd->col_gpu < 0)
    fail(rd, -PFLEX_E_PARSE, rd->row_line, "gpu", "missing required column", NULL);
  else if (rd->mode == MODE_TPUT && rd->col_tput < 0)
    fail(rd, -PFLEX_E_PARSE, rd->row_line, rd->tput_name, "missing required column", NULL);
}

static int add_tput(struct reader *rd, double t, const char *cell) {
  const char *col = rd->tput_name;
  double v;
  int r = parse_num(cell, &v);
  if (r == -ENODATA)
    return fail(rd, -PFLEX_E_DATA, rd->row_line, col, "empty throughput on a throughput row",
                NULL);
  if (r < 0) return fail(rd, -PFLEX_E_PARSE, rd->row_line, col, "not a number", cell);
  if (rd->per_step_time) {
    if (!(v > 0))
      return fail(rd, -PFLEX_E_DATA, rd->row_line, col, "a time per step must be > 0", cell);
    v = 1.0 / v;
  } else if (v < 0) {
    return fail(rd, -PFLEX_E_DATA, rd->row_line, col, "negative throughput", cell);
  }
  r = pflex_series_add_tput(&rd->s, t, v);
  return r < 0 ? fail(rd, r, rd->row_line, col, "cannot add sample", NULL) : 0;
}

static void do_row(struct reader *rd) {
  if (rd->nfields != rd->ncols) {
    char detail[64];
    snprintf(detail, sizeof detail, "%zu fields, the header has %zu", rd->nfields, rd->ncols);
    fail(rd, -PFLEX_E_PARSE, rd->row_line, NULL, "wrong number of fields", detail);
    return;
  }
  rd->rows++;
  char **f = rd->fields;
  double t;
  int r = parse_num(f[rd->col_time], &t);
  if (r < 0) {
    fail(rd, -PFLEX_E_PARSE, rd->row_line, "time_s", r == -ENODATA ? "empty" : "not a number",
         r == -ENODATA ? NULL : f[rd->col_time]);
    return;
  }
  if (rd->mode == MODE_TPUT) {
    add_tput(rd, t, f[rd->col_tput]);
    return;
  }
  const char *gcell = f[rd->col_gpu];
  if (blank(gcell)) {
    /* A throughput row: only time and throughput may be set. */
    if (rd->col_tput < 0) {
      fail(rd, -PFLEX_E_DATA, rd->row_line, "gpu",
           "empty gpu, but the file has no throughput column", rd->tput_name);
      return;
    }
    for (size_t c = 0; c < rd->ncols; c++)
      if (rd->metric_of[c] != SIZE_MAX && !blank(f[c])) {
        fail(rd, -PFLEX_E_DATA, rd->row_line, rd->header[c],
             "a throughput row (empty gpu) cannot carry GPU metrics", NULL);
        return;
      }
    add_tput(rd, t, f[rd->col_tput]);
    return;
  }
  double g;
  r = parse_num(gcell, &g);
  if (r < 0 || g < 0 || g != floor(g) || g > 1e6) {
    fail(rd, -PFLEX_E_PARSE, rd->row_line, "gpu", "not a GPU index (integer >= 0)", gcell);
    return;
  }
  if (rd->col_tput >= 0 && !blank(f[rd->col_tput])) {
    fail(rd, -PFLEX_E_DATA, rd->row_line, rd->tput_name,
         "throughput goes on its own rows, with gpu empty", NULL);
    return;
  }
  r = pflex_series_add_row(&rd->s, t, (int)g, NULL);
  if (r < 0) {
    fail(rd, r, rd->row_line, NULL, "cannot add sample", NULL);
    return;
  }
  size_t i = rd->s.n - 1;
  for (size_t c = 0; c < rd->ncols; c++) {
    size_t m = rd->metric_of[c];
    if (m == SIZE_MAX) continue;
    double v;
    r = parse_num(f[c], &v);
    if (r == -ENODATA) continue; /* not sampled: stays NAN */
    if (r < 0) {
      fail(rd, -PFLEX_E_PARSE, rd->row_line, rd->header[c], "not a number", f[c]);
      return;
    }
    rd->s.values[m][i] = v;
  }
}

static void on_row(int term, void *ud) {
  (void)term;
  struct reader *rd = ud;
  if (!rd->err) {
    if (!rd->have_header)
      do_header(rd);
    else
      do_row(rd);
  }
  clear_fields(rd);
}

static void reader_release(struct reader *rd) {
  clear_fields(rd);
  free(rd->fields);
  if (rd->header)
    for (size_t c = 0; c < rd->ncols; c++) free(rd->header[c]);
  free(rd->header);
  free(rd->metric_of);
  pflex_series_release(&rd->s);
}

static int read_file(struct reader *rd) {
  FILE *fp = fopen(rd->path, "r");
  if (!fp) {
    int e = -errno;
    return fail(rd, e, 0, NULL, strerror(-e), NULL);
  }
  struct csv_parser p;
  if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL) != 0) {
    fclose(fp);
    return fail(rd, -ENOMEM, 0, NULL, "out of memory", NULL);
  }
  char *buf = NULL;
  size_t bufcap = 0;
  ssize_t len;
  while (!rd->err && (len = getline(&buf, &bufcap, fp)) >= 0) {
    rd->line++;
    if ((size_t)len > MAX_LINE) {
      char detail[64];
      snprintf(detail, sizeof detail, "%zd bytes, at most %d allowed", len, MAX_LINE);
      fail(rd, -PFLEX_E_PARSE, rd->line, NULL, "line too long", detail);
      break;
    }
    if (csv_parse(&p, buf, (size_t)len, on_field, on_row, rd) != (size_t)len && !rd->err)
      fail(rd, -PFLEX_E_PARSE, rd->line, NULL, "malformed CSV", csv_strerror(csv_error(&p)));
  }
  if (!rd->err && ferror(fp)) fail(rd, -EIO, rd->line, NULL, "read error", NULL);
  if (!rd->err && csv_fini(&p, on_field, on_row, rd) != 0)
    fail(rd, -PFLEX_E_PARSE, rd->line, NULL, "malformed CSV", csv_strerror(csv_error(&p)));
  csv_free(&p);
  free(buf);
  fclose(fp);
  if (rd->err) return rd->err;
  if (!rd->have_header) return fail(rd, -PFLEX_E_PARSE, 0, NULL, "empty file", NULL);
  if (rd->rows == 0) return fail(rd, -PFLEX_E_PARSE, 0, NULL, "no data rows after the header", NULL);
  if (rd->mode == MODE_SERIES && rd->s.n == 0)
    return fail(rd, -PFLEX_E_DATA, 0, "gpu", "no GPU samples (every row has an empty gpu)", NULL);
  return 0;
}

static void reader_init(struct reader *rd, const char *path, enum mode mode,
                        const struct pflex_series_read_opts *opts, struct pflex_diag *diag) {
  memset(rd, 0, sizeof *rd);
  rd->path = path;
  rd->mode = mode;
  rd->diag = diag;
  rd->tput_name = opts && opts->tput_column && opts->tput_column[0] ? opts->tput_column
                                                                    : PFLEX_SERIES_TPUT;
  rd->per_step_time = opts && opts->per_step_time;
  pflex_series_init(&rd->s);
  pflex_diag_clear(diag);
}

int pflex_series_read_csv(const char *path, const struct pflex_series_read_opts *opts,
                          struct pflex_series *ret_s, struct pflex_diag *diag) {
  struct reader rd;
  reader_init(&rd, path, MODE_SERIES, opts, diag);
  int r = read_file(&rd);
  if (r == 0) {
    *ret_s = rd.s;
    pflex_series_init(&rd.s);
  }
  reader_release(&rd);
  return r;
}

int pflex_series_read_tput_csv(const char *path, const struct pflex_series_read_opts *opts,
                               struct pflex_series *s, struct pflex_diag *diag) {
  struct reader rd;
  reader_init(&rd, path, MODE_TPUT, opts, diag);
  int r = read_file(&rd);
  /* Make room first, so that appending cannot fail half-way. */
  if (r == 0 && s->ntput + rd.s.ntput > s->cap_tput) {
    size_t cap = s->ntput + rd.s.ntput;
    double *t = realloc(s->tput_time_s, cap * sizeof *t);
    if (t) s->tput_time_s = t;
    double *v = t ? realloc(s->tput, cap * sizeof *v) : NULL;
    if (v) {
      s->tput = v;
      s->cap_tput = cap;
    } else {
      r = pflex_diag_set(diag, -ENOMEM, path, 0, NULL, "out of memory");
    }
  }
  if (r == 0)
    for (size_t j = 0; j < rd.s.ntput; j++) pflex_series_add_tput(s, rd.s.tput_time_s[j], rd.s.tput[j]);
  reader_release(&rd);
  return r;
}
