/* The PFI model file: a fitted struct pflex_model as JSON (jansson), the
 * output of `pflex fit` and the input of `pflex predict`. The fields are
 * described in docs/prediction.md. Numbers that are undefined (NAN) are
 * written as null. */
#ifndef PFLEX_MODEL_JSON_H
#define PFLEX_MODEL_JSON_H

#include "pflex/error.h"
#include "pflex/predict.h"

/* The model file's format version (field "format"). */
#define PFLEX_MODEL_FORMAT 1

/* Serializes a model; *ret_json is a NUL-terminated string the caller frees. */
int pflex_model_to_json(const struct pflex_model *m, char **ret_json);

/* Writes the model file atomically (temporary file, fsync, rename). */
int pflex_model_write_json(const struct pflex_model *m, const char *path);

/* Parses a model from JSON text; `file` only names the source in diag. On
 * error *ret is untouched and diag names the field at fault. */
int pflex_model_from_json(const char *text, const char *file, struct pflex_model *ret,
                          struct pflex_diag *diag);

/* Reads a model file. -errno when it cannot be read, -PFLEX_E_PARSE when it
 * is not a valid model (diag says which field). */
int pflex_model_read_json(const char *path, struct pflex_model *ret, struct pflex_diag *diag);

#endif
