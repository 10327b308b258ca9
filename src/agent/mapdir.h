/* The dcgm-exporter hpc-job-mapping directory: one file per GPU index (named
 * "0", "1", ...) whose first line is the id of the job on that GPU. Written
 * by the workload manager's prolog; watched with inotify. Files that another
 * user could write, symlinks and invalid ids are ignored with a warning. */
#ifndef PFLEX_AGENT_MAPDIR_H
#define PFLEX_AGENT_MAPDIR_H

#include <stdbool.h>
#include <stddef.h>

#include "agent/body.h"
#include "agent/config.h"

struct agent_mapdir {
  char path[AGENT_PATH_MAX];
  int inotify_fd; /* -1: no directory configured */
  unsigned long long scans, ignored;
};

/* Watches path (created, mode 0755, if missing; refused when another user
 * can write it). An empty path: nothing watched, fd -1. */
int agent_mapdir_open(struct agent_mapdir *m, const char *path, char *errbuf, size_t errlen);
void agent_mapdir_close(struct agent_mapdir *m);

/* Reads the pending inotify events; true when the directory changed. */
bool agent_mapdir_changed(struct agent_mapdir *m);

/* Reads the job of every GPU below n into dir_job ("" none). */
int agent_mapdir_scan(struct agent_mapdir *m, unsigned n, char (*dir_job)[AGENT_JOB_ID_MAX + 1]);

#endif
