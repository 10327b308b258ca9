/* Errors and diagnostics.
 *
 * Every fallible function returns 0 on success or a negative errno value
 * (-EINVAL, -ENOMEM, -ENODEV, -EPERM, -ERANGE, ...). Codes specific to pflex
 * live above PFLEX_E_BASE and are described, like the errno ones, by
 * pflex_strerror(). Functions that read files also fill a struct pflex_diag
 * naming file, line and column, so that programs can print one clear line. */
#ifndef PFLEX_ERROR_H
#define PFLEX_ERROR_H

#include <stddef.h>

#define PFLEX_E_BASE 10000

enum pflex_errcode {
  PFLEX_E_PARSE = PFLEX_E_BASE + 1, /* malformed input */
  PFLEX_E_DATA,                     /* well-formed input that breaks a rule */
  PFLEX_E_NOUNCAPPED,               /* a sweep group without an uncapped run */
  PFLEX_E_NOPOINTS,                 /* too few usable points for the computation */
  PFLEX_E_SCHEMA,                   /* a store with a newer or unknown schema */
  PFLEX_E_RESTORE,                  /* a restore record could not be made durable */
  PFLEX_E_INFEASIBLE,               /* a target below what the bounds allow */
  PFLEX_E_NVML,                     /* an NVML failure with no errno equivalent */
  PFLEX_E_LOCKED,                   /* another pflex process holds the lock, past the wait limit */
  PFLEX_E_HELD,                     /* the GPU's limit belongs to another running pflex process */
  PFLEX_E_FORMAT,                   /* a file of another pflex format than the one asked for */
};

/* Human-readable description of a (negative) pflex or errno code; never NULL. */
const char *pflex_strerror(int err);

/* Where and why an input was rejected. Any field may be empty/zero. */
struct pflex_diag {
  char file[512];
  size_t line;     /* 1-based physical line; 0 when not line-specific */
  char column[64]; /* column (field) name, when one is to blame */
  int is_field;    /* nonzero: column names a field of a JSON file ("field 'x'") */
  char message[256];
};

/* Clears a diagnostic. Accepts NULL. */
void pflex_diag_clear(struct pflex_diag *diag);

/* Fills a diagnostic (printf-style message) and returns err, so callers can
 * write `return pflex_diag_set(d, -PFLEX_E_PARSE, file, line, "power_w", "not a number")`.
 * Accepts a NULL diag (then it only returns err). */
int pflex_diag_set(struct pflex_diag *diag, int err, const char *file, size_t line,
                   const char *column, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* Formats a diagnostic as "'FILE': line N, column 'C': MESSAGE" into buf
 * ("field 'C'" when is_field is set). */
void pflex_diag_format(const struct pflex_diag *diag, char *buf, size_t size);

#endif
