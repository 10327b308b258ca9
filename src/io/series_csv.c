/* Reading telemetry series CSV files (docs/telemetry.md) with libcsv.
 *
 * Long format: a header naming `time_s`, `gpu` and any number of metric
 * columns, then one row per sample per GPU; rows with an empty `gpu` carry
 * the job's throughput in the throughput column (tokens_per_s by default).
 * The shared reader (io/csv_table.c, libcsv) gives every record with its
 * line, so errors name file, line and column; everything is loaded into a
 * scratch series that replaces the caller's only when the whole file is good. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/csv_table.h"
#include "pflex/series.h"
#include "pflex/series_csv.h"

enum mode { MODE_SERIES, MODE_TPUT };

struct reader {
  const char *path;
  enum mode mode;
  const char *tput_name;
  bool per_step_time;
  struct pflex_diag *diag;
  int err;

  size_t row_line; /* line the current row starts on */
  char **fields;   /* current row */
  size_t nfields;

  char **header;
  size_t ncols;
  long col_time, col_gpu, col_tput; /* -1 when absent */
  size_t *metric_of;                /* [col] metric index in the series (SIZE_MAX: not a metric) */

  struct pflex_series s;
};

static int fail(struct reader *rd, int err, size_t line, const char *column, const char *msg,
                const char *detail) {
  if (rd->err) return rd->err;
  rd->err = pflex_diag_set(rd->diag, err, rd->path, line, column, "%s%s%s", msg, detail ? ": " : "",
                           detail ? detail : "");
  return rd->err;
}

/* Strict number: the whole cell, finite. Leading/trailing blanks are allowed. */
static int parse_num(const char *text, double *ret) {
  while (*text == ' ' || *text == '\t')
    text++;
  if (!*text) return -ENODATA;
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  while (*end == ' ' || *end == '\t' || *end == '\r')
    end++;
  /* strtod's ERANGE also flags an underflow: that is a number (as the runs
   * readers take it); only an overflow (HUGE_VAL) is not. */
  if (end == text || *end || !isfinite(v)) return -EINVAL;
  *ret = v;
  return 0;
}

static bool blank(const char *text) {
  while (*text == ' ' || *text == '\t' || *text == '\r')
    text++;
  return !*text;
}

static void do_header(struct reader *rd) {
  rd->col_time = rd->col_gpu = rd->col_tput = -1;
  rd->metric_of = malloc(rd->ncols * sizeof *rd->metric_of);
  if (!rd->metric_of) {
    fail(rd, -ENOMEM, rd->row_line, NULL, "out of memory", NULL);
    return;
  }
  for (size_t c = 0; c < rd->ncols; c++) {
    const char *name = rd->header[c];
    rd->metric_of[c] = SIZE_MAX;
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
    return fail(rd, -PFLEX_E_DATA, rd->row_line, col, "empty throughput on a throughput row", NULL);
  if (r < 0) return fail(rd, -PFLEX_E_PARSE, rd->row_line, col, "not a number", cell);
  if (rd->per_step_time) {
    if (!(v > 0))
      return fail(rd, -PFLEX_E_DATA, rd->row_line, col, "a time per step must be > 0", cell);
    v = 1.0 / v;
    if (!isfinite(v))
      return fail(rd, -PFLEX_E_DATA, rd->row_line, col,
                  "too small a time per step (its throughput is infinite)", cell);
  } else if (v < 0) {
    return fail(rd, -PFLEX_E_DATA, rd->row_line, col, "negative throughput", cell);
  }
  r = pflex_series_add_tput(&rd->s, t, v);
  return r < 0 ? fail(rd, r, rd->row_line, col, "cannot add sample", NULL) : 0;
}

/* Metrics with a physical range: a value outside it is a corrupt file or a
 * unit mix-up (a sentinel such as -500, milliwatts), not a sample. */
static const struct {
  const char *name;
  double min, max;
  const char *what;
} metric_ranges[] = {
    {"power_w", 0, INFINITY, "a power must be >= 0 W"},
    {"gpu_util", 0, 100, "a utilization must be from 0 to 100 (%)"},
    {"fb_used_mib", 0, INFINITY, "a frame-buffer use must be >= 0 MiB"},
};

/* 0, or the failure (said) of column c's value v out of its range. */
static int check_range(struct reader *rd, size_t c, double v, const char *cell) {
  for (size_t k = 0; k < sizeof metric_ranges / sizeof *metric_ranges; k++)
    if (strcmp(rd->header[c], metric_ranges[k].name) == 0 &&
        !(v >= metric_ranges[k].min && v <= metric_ranges[k].max))
      return fail(rd, -PFLEX_E_DATA, rd->row_line, rd->header[c], metric_ranges[k].what, cell);
  return 0;
}

static void do_row(struct reader *rd) {
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
    if (check_range(rd, c, v, f[c])) return;
    rd->s.values[m][i] = v;
  }
}

static void reader_release(struct reader *rd) {
  free(rd->metric_of);
  pflex_series_release(&rd->s);
}

/* Loads the file with the shared CSV reader (which checks quoting, line
 * length, header names and field counts), then interprets it. */
static int read_file(struct reader *rd) {
  struct pflex__csv_table t;
  int r = pflex__csv_read(rd->path, &t, rd->diag);
  if (r < 0) return rd->err = r;
  rd->header = t.header.fields;
  rd->ncols = t.header.n;
  rd->row_line = t.header.line;
  do_header(rd);
  for (size_t i = 0; !rd->err && i < t.nrows; i++) {
    rd->fields = t.rows[i].fields;
    rd->nfields = t.rows[i].n;
    rd->row_line = t.rows[i].line;
    do_row(rd);
  }
  if (!rd->err && t.nrows == 0)
    fail(rd, -PFLEX_E_PARSE, 0, NULL, "no data rows after the header", NULL);
  if (!rd->err && rd->mode == MODE_SERIES && rd->s.n == 0)
    fail(rd, -PFLEX_E_DATA, 0, "gpu", "no GPU samples (every row has an empty gpu)", NULL);
  pflex__csv_release(&t);
  return rd->err;
}

static void reader_init(struct reader *rd, const char *path, enum mode mode,
                        const struct pflex_series_read_opts *opts, struct pflex_diag *diag) {
  memset(rd, 0, sizeof *rd);
  rd->path = path;
  rd->mode = mode;
  rd->diag = diag;
  rd->tput_name =
      opts && opts->tput_column && opts->tput_column[0] ? opts->tput_column : PFLEX_SERIES_TPUT;
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
    for (size_t j = 0; j < rd.s.ntput; j++)
      pflex_series_add_tput(s, rd.s.tput_time_s[j], rd.s.tput[j]);
  reader_release(&rd);
  return r;
}
