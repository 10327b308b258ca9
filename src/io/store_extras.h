/* A run's extra cells packed as JSON for the store (schema version 2,
 * docs/store.md): runs.extras is a JSON array of the cells as strings, in the
 * order of the column names in extra_columns.names, itself a JSON array.
 * jansson reads both and writes the names; the cells are written by SQLite's
 * json_array (store.c), by the packer here only past SQLite's limit of
 * function arguments. Nothing escapes JSON by hand. */
#ifndef PFLEX_IO_STORE_EXTRAS_H
#define PFLEX_IO_STORE_EXTRAS_H

#include <stddef.h>

/* Packs rows of n cells, reusing one JSON array and one output buffer. */
struct pflex__extras_packer {
  void *cells; /* json_t array of n strings */
  size_t n;
  char *buf; /* the last packed row, not NUL-terminated */
  size_t cap;
};

/* 0, or -ENOMEM. */
int pflex__extras_packer_init(struct pflex__extras_packer *p, size_t n);
void pflex__extras_packer_release(struct pflex__extras_packer *p);

/* Packs vals[0..n) (vals NULL, or a NULL value: "") into p->buf, *ret_len bytes.
 * -EILSEQ with *ret_bad the index of a value that is not UTF-8, or -ENOMEM. */
int pflex__extras_pack(struct pflex__extras_packer *p, char *const *vals, size_t *ret_len,
                       size_t *ret_bad);

/* names[0..n) as a NUL-terminated JSON array in *ret_json (free() it). -EILSEQ
 * with *ret_bad for a name that is not UTF-8, or -ENOMEM. */
int pflex__extras_names_json(char *const *names, size_t n, char **ret_json, size_t *ret_bad);

/* Parses a names array: *ret_names (n strings in one allocation: free() it).
 * -PFLEX_E_SCHEMA with why filled when it is not a JSON array of distinct
 * strings, or -ENOMEM. */
int pflex__extras_parse_names(const char *json, char ***ret_names, size_t *ret_n, char *why,
                              size_t why_size);

/* Parses a row's cells, which must be a JSON array of n strings: vals[k] points
 * into *ret_owner (release it with pflex__extras_free). -PFLEX_E_SCHEMA with why
 * filled and *ret_bad the cell to blame (SIZE_MAX: the whole value), or -ENOMEM. */
int pflex__extras_parse_cells(const char *json, size_t len, size_t n, const char **vals,
                              void **ret_owner, size_t *ret_bad, char *why, size_t why_size);
void pflex__extras_free(void *owner);

#endif
