/* The jobs JSON file (docs/allocation.md), read into a job set (src/io/jobs.c). */
#ifndef PFLEX_JOBS_JSON_H
#define PFLEX_JOBS_JSON_H

#include "pflex/error.h"
#include "pflex/jobs.h"

/* Reads a jobs JSON file (docs/allocation.md). All or nothing; diag names the
 * file, the job and the field at fault. A runs JSON file (an object whose
 * "format" is "pflex-runs", as pflex export writes) is -PFLEX_E_FORMAT, so
 * that a program taking either kind parses a jobs file once. */
int pflex_jobs_read_json(const char *path, struct pflex_jobset *ret_set, struct pflex_diag *diag);

#endif
