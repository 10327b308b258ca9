/* Internal to the library: building a job set, shared by the core's builder
 * from runs (jobset.c) and the jobs JSON reader (src/io/jobs.c). */
#ifndef PFLEX_CORE_JOBSET_INTERNAL_H
#define PFLEX_CORE_JOBSET_INTERNAL_H

#include <stddef.h>

#include "pflex/jobs.h"

/* Allocates the arrays for n jobs, zeroed, jobs at their defaults. */
int pflex__jobset_alloc(struct pflex_jobset *set, size_t n);

#endif
