/* The job-mapping directory in dcgm-exporter's hpc-job-mapping-dir format (a
 * file per GPU index holding the job id), which pflexd watches (its
 * mapping_dir) and dcgm-exporter reads: the durable copy of the prolog's
 * registration, so that a pflexd restarted while the job runs knows its GPUs
 * again. The directory must be root's and writable by no one else; files are
 * replaced atomically and never through a symlink. Errors are negative errno
 * values with a message. */
#ifndef PFLEX_SLURM_SPANK_MAPDIR_H
#define PFLEX_SLURM_SPANK_MAPDIR_H

#include <stddef.h>

/* DIR/<gpu> := job, for each of gpus (any other job's entry is replaced:
 * Slurm gave these GPUs to this job alone). */
int pflex_spank_mapdir_write(const char *dir, const char *job, const unsigned *gpus, size_t n,
                             char *msg, size_t msglen);

/* Removes every DIR/<index> that names job (and no other). *ret_removed
 * counts them. */
int pflex_spank_mapdir_clear(const char *dir, const char *job, size_t *ret_removed, char *msg,
                             size_t msglen);

#endif
