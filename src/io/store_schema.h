/* The store's migrations: the ordered list of schema changes (store_schema.c). */
#ifndef PFLEX_IO_STORE_SCHEMA_H
#define PFLEX_IO_STORE_SCHEMA_H

#include <stddef.h>

struct pflex__store_migration {
  int version;         /* the schema version this migration produces: 1, 2, ... */
  const char *summary; /* one line, recorded in schema_version */
  const char *sql;     /* statements run inside the migration's transaction */
};

extern const struct pflex__store_migration pflex__store_migrations[];
extern const size_t pflex__store_nmigrations;

#endif
