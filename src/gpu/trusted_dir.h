/* Internal to src/gpu: directories and files a root process may trust
 * (trusted_dir.c), as sshd's StrictModes judges them. */
#ifndef PFLEX_GPU_TRUSTED_DIR_H
#define PFLEX_GPU_TRUSTED_DIR_H

#include <stdbool.h>
#include <stddef.h>

/* Opens directory `path` (creating it with mode 0755 when `create`, its
 * parent then fsync'd) and checks it and every directory above it: each owned
 * by root or the effective user; the directory itself not writable by group
 * or others; those above it likewise unless sticky (/tmp). -EPERM with the
 * reason in why otherwise. *ret_fd is an O_DIRECTORY descriptor. */
int pflex__trusted_dir_open(const char *path, bool create, int *ret_fd, char *why, size_t whylen);

/* Checks an open file of that directory: a regular file owned by root or the
 * effective user and not writable by group or others. */
int pflex__trusted_file_check(int fd, const char *name, char *why, size_t whylen);

#endif
