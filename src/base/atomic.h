/* Atomic replacement of a file (internal to the library): write a temporary
 * file beside it, then commit (flush, fsync, rename, fsync the directory) or
 * abort (unlink). Used by every writer that replaces a file: runs CSV/JSON,
 * model JSON, restore records. */
#ifndef PFLEX_BASE_ATOMIC_H
#define PFLEX_BASE_ATOMIC_H

#include <stdio.h>

struct pflex__atomic_file {
  FILE *f;
  char *path;
  char *tmp;
};

/* Opens a temporary file beside path (mode 0644) for writing. */
int pflex__atomic_begin(const char *path, struct pflex__atomic_file *ret);
/* Flushes, fsyncs and renames the temporary file over path, then fsyncs the
 * directory; on failure the temporary file is removed. Frees af's strings. */
int pflex__atomic_commit(struct pflex__atomic_file *af);
/* Removes the temporary file and frees; accepts an aborted or zeroed af. */
void pflex__atomic_abort(struct pflex__atomic_file *af);
/* Replaces path atomically with text, plus a final newline when text lacks one. */
int pflex__atomic_write_text(const char *path, const char *text);

#endif
