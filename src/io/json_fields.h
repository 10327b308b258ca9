/* Reading the fields of a JSON object (jansson) with errors that name the
 * file, the place in it and the field: the one field-reader family of the
 * runs JSON, jobs JSON and model file readers (internal to io). Every
 * function returns 0 or the error it set in the diag:
 *
 *   'jobs.json': field 'weight': job 3 ('llama'): negative
 *
 * A type error (a string where a number belongs) is -PFLEX_E_PARSE; a
 * missing, unknown or out-of-range field is f->data_err (-PFLEX_E_DATA
 * unless the reader says otherwise). */
#ifndef PFLEX_IO_JSON_FIELDS_H
#define PFLEX_IO_JSON_FIELDS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "pflex/error.h"

struct json_fields {
  const char *file;        /* the file's name in messages */
  struct pflex_diag *diag; /* may be NULL */
  char where[128];         /* the object: "run 2", "job 3 ('x')"; "" for the top level */
  int data_err;            /* 0: -PFLEX_E_DATA */
};

/* Flags of pflex__json_get_number. */
enum {
  JSON_REQUIRED = 1u << 0,    /* absent is an error */
  JSON_NULL_ABSENT = 1u << 1, /* null counts as absent */
  JSON_OPEN_MIN = 1u << 2,    /* min itself is not allowed */
};

/* Loads path with jansson's flags into *ret; on failure the diag names the
 * file and line: -PFLEX_E_PARSE for malformed JSON, -ENOENT when unreadable. */
int pflex__json_load(const char *path, size_t flags, json_t **ret, struct pflex_diag *diag);

/* Marks a diag set while reading a JSON file as naming a field, not a
 * column (the runs' checks shared with CSV set a column); returns err. */
int pflex__json_said(struct pflex_diag *diag, int err);

/* Sets the diag (message prefixed by f->where) and returns err. */
int pflex__json_fail(const struct json_fields *f, int err, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Refuses a key of obj that is not in known (NULL-terminated), naming it; hint
 * (may be NULL) follows "unknown field". */
int pflex__json_check_keys(const struct json_fields *f, json_t *obj, const char *const *known,
                           const char *hint);

/* A string field; required: present and not empty. Absent: *ret NULL. */
int pflex__json_get_string(const struct json_fields *f, json_t *obj, const char *key, bool required,
                           const char **ret);

/* A finite number in [min, max] (see JSON_OPEN_MIN; max may be INFINITY).
 * *ret_have (may be NULL) says whether it was given; absent leaves *ret. */
int pflex__json_get_number(const struct json_fields *f, json_t *obj, const char *key, double min,
                           double max, unsigned flags, double *ret, bool *ret_have);

/* A JSON integer in [min, max]; absent: *ret_have false (required: error). */
int pflex__json_get_int(const struct json_fields *f, json_t *obj, const char *key, long long min,
                        long long max, bool required, long long *ret, bool *ret_have);

/* true or false; absent: *ret_have false. */
int pflex__json_get_bool(const struct json_fields *f, json_t *obj, const char *key, bool *ret,
                         bool *ret_have);

#endif
