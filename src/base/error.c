/* Error codes and diagnostics (see include/pflex/error.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pflex/error.h"

static const struct {
  int code;
  const char *text;
} pflex_errors[] = {
    {PFLEX_E_PARSE, "malformed input"},
    {PFLEX_E_DATA, "invalid data"},
    {PFLEX_E_NOUNCAPPED, "sweep group has no uncapped run"},
    {PFLEX_E_NOPOINTS, "too few usable points"},
    {PFLEX_E_SCHEMA, "unsupported store schema"},
    {PFLEX_E_RESTORE, "restore record could not be made durable"},
    {PFLEX_E_INFEASIBLE, "target is infeasible"},
    {PFLEX_E_NVML, "NVML error"},
    {PFLEX_E_HELD, "the GPU is held by another running pflex process (a sweep), which restores "
                   "it when it ends"},
    {PFLEX_E_LOCKED, "another pflex process holds the restore lock and did not let go in time"},
    {PFLEX_E_FORMAT, "a file of another pflex format"},
};

const char *pflex_strerror(int err) {
  int code = err < 0 ? -err : err;
  if (code >= PFLEX_E_BASE) {
    for (size_t i = 0; i < sizeof pflex_errors / sizeof pflex_errors[0]; i++)
      if (pflex_errors[i].code == code) return pflex_errors[i].text;
    return "unknown pflex error";
  }
  return strerror(code);
}

void pflex_diag_clear(struct pflex_diag *diag) {
  if (diag) memset(diag, 0, sizeof *diag);
}

int pflex_diag_set(struct pflex_diag *diag, int err, const char *file, size_t line,
                   const char *column, const char *fmt, ...) {
  if (!diag) return err;
  pflex_diag_clear(diag);
  if (file) snprintf(diag->file, sizeof diag->file, "%s", file);
  diag->line = line;
  if (column) snprintf(diag->column, sizeof diag->column, "%s", column);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(diag->message, sizeof diag->message, fmt, ap);
  va_end(ap);
  return err;
}

void pflex_diag_format(const struct pflex_diag *diag, char *buf, size_t size) {
  size_t off = 0;
  if (size) buf[0] = '\0';
#define PFLEX_APPEND(...)                                                                          \
  do {                                                                                             \
    /* Past the end, only count: buf + off itself would be out of bounds. */                       \
    int n_ = off < size ? snprintf(buf + off, size - off, __VA_ARGS__)                             \
                        : snprintf(NULL, 0, __VA_ARGS__);                                          \
    if (n_ > 0) off += (size_t)n_;                                                                 \
  } while (0)
  if (diag->file[0]) PFLEX_APPEND("'%s'", diag->file);
  if (diag->line) PFLEX_APPEND("%sline %zu", off ? ": " : "", diag->line);
  if (diag->column[0])
    PFLEX_APPEND("%s%s '%s'", off ? (diag->line ? ", " : ": ") : "",
                 diag->is_field ? "field" : "column", diag->column);
  PFLEX_APPEND("%s%s", off ? ": " : "", diag->message[0] ? diag->message : "error");
#undef PFLEX_APPEND
}
