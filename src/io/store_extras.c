/* Packing and unpacking a run's extra cells as JSON (io/store_extras.h). */
#include "io/store_extras.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "pflex/error.h"

int pflex__extras_packer_init(struct pflex__extras_packer *p, size_t n) {
  memset(p, 0, sizeof *p);
  json_t *a = json_array();
  if (!a) return -ENOMEM;
  p->cells = a;
  p->n = n;
  for (size_t k = 0; k < n; k++)
    if (json_array_append_new(a, json_string("")) != 0) return -ENOMEM;
  return 0;
}

void pflex__extras_packer_release(struct pflex__extras_packer *p) {
  json_decref(p->cells);
  free(p->buf);
  memset(p, 0, sizeof *p);
}

/* Dumps a compactly into p->buf (grown as needed): its length, or 0 on failure. */
static size_t dump(struct pflex__extras_packer *p, const json_t *a) {
  for (;;) {
    size_t len = json_dumpb(a, p->buf, p->cap, JSON_COMPACT);
    if (len == 0 || len <= p->cap) return len;
    char *g = realloc(p->buf, len);
    if (!g) return 0;
    p->buf = g;
    p->cap = len;
  }
}

int pflex__extras_pack(struct pflex__extras_packer *p, char *const *vals, size_t *ret_len,
                       size_t *ret_bad) {
  json_t *a = p->cells;
  for (size_t k = 0; k < p->n; k++) {
    const char *v = vals && vals[k] ? vals[k] : "";
    if (json_string_set(json_array_get(a, k), v) != 0) {
      *ret_bad = k; /* jansson refuses strings that are not UTF-8 */
      return -EILSEQ;
    }
  }
  size_t len = dump(p, a);
  if (!len) return -ENOMEM;
  *ret_len = len;
  return 0;
}

int pflex__extras_names_json(char *const *names, size_t n, char **ret_json, size_t *ret_bad) {
  json_t *a = json_array();
  int err = a ? 0 : -ENOMEM;
  for (size_t k = 0; !err && k < n; k++) {
    json_t *s = json_string(names[k]);
    if (!s) {
      *ret_bad = k;
      err = -EILSEQ;
    } else if (json_array_append_new(a, s) != 0) {
      err = -ENOMEM;
    }
  }
  char *text = err ? NULL : json_dumps(a, JSON_COMPACT);
  json_decref(a);
  if (!err && !text) err = -ENOMEM;
  *ret_json = text;
  return err;
}

/* Parses text as JSON: the value, or NULL with why filled. */
static json_t *load(const char *text, size_t len, char *why, size_t why_size) {
  json_error_t e;
  json_t *v = json_loadb(text, len, 0, &e);
  if (!v) snprintf(why, why_size, "not JSON (%s at character %d)", e.text, e.position);
  return v;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Whether the n strings of v (sorted here, v is scratch) are distinct. */
static bool distinct(const char **v, size_t n) {
  qsort(v, n, sizeof *v, cmp_str);
  for (size_t k = 1; k < n; k++)
    if (strcmp(v[k - 1], v[k]) == 0) return false;
  return true;
}

/* Copies the n strings of array a into one allocation: the pointers, then the text. */
static char **copy_strings(const json_t *a, size_t n) {
  size_t bytes = n * sizeof(char *);
  for (size_t k = 0; k < n; k++)
    bytes += json_string_length(json_array_get(a, k)) + 1;
  char **v = malloc(bytes ? bytes : 1);
  if (!v) return NULL;
  char *text = (char *)(v + n);
  for (size_t k = 0; k < n; k++) {
    const json_t *s = json_array_get(a, k);
    size_t len = json_string_length(s);
    memcpy(text, json_string_value(s), len + 1);
    v[k] = text;
    text += len + 1;
  }
  return v;
}

int pflex__extras_parse_names(const char *json, char ***ret_names, size_t *ret_n, char *why,
                              size_t why_size) {
  json_t *a = load(json, strlen(json), why, why_size);
  if (!a) return -PFLEX_E_SCHEMA;
  int err = 0;
  size_t n = json_is_array(a) ? json_array_size(a) : 0;
  if (!json_is_array(a)) {
    snprintf(why, why_size, "not a JSON array");
    err = -PFLEX_E_SCHEMA;
  }
  for (size_t k = 0; !err && k < n; k++)
    if (!json_is_string(json_array_get(a, k))) {
      snprintf(why, why_size, "name %zu is not a string", k + 1);
      err = -PFLEX_E_SCHEMA;
    }
  char **names = err ? NULL : copy_strings(a, n);
  if (!err && !names) err = -ENOMEM;
  const char **scratch = err ? NULL : malloc((n ? n : 1) * sizeof *scratch);
  if (!err && !scratch) err = -ENOMEM;
  if (!err) {
    memcpy(scratch, names, n * sizeof *scratch);
    if (!distinct(scratch, n)) {
      snprintf(why, why_size, "a name appears twice");
      err = -PFLEX_E_SCHEMA;
    }
  }
  free(scratch);
  json_decref(a);
  if (err) {
    free(names);
    return err;
  }
  *ret_names = names;
  *ret_n = n;
  return 0;
}

int pflex__extras_parse_cells(const char *json, size_t len, size_t n, const char **vals,
                              void **ret_owner, size_t *ret_bad, char *why, size_t why_size) {
  *ret_owner = NULL;
  *ret_bad = SIZE_MAX;
  json_t *a = load(json, len, why, why_size);
  if (!a) return -PFLEX_E_SCHEMA;
  if (!json_is_array(a) || json_array_size(a) != n) {
    snprintf(why, why_size, "not a JSON array of %zu strings (one per extra column)", n);
    json_decref(a);
    return -PFLEX_E_SCHEMA;
  }
  for (size_t k = 0; k < n; k++) {
    vals[k] = json_string_value(json_array_get(a, k));
    if (!vals[k]) {
      *ret_bad = k;
      snprintf(why, why_size, "cell %zu is not a string", k + 1);
      json_decref(a);
      return -PFLEX_E_SCHEMA;
    }
  }
  *ret_owner = a;
  return 0;
}

void pflex__extras_free(void *owner) {
  json_decref(owner);
}
