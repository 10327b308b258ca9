/* Helpers shared by the commands that touch GPUs (gpus, cap, sweep): opening
 * a backend and the restore store, and explaining GPU errors to a person. */
#ifndef PFLEX_CLI_GPU_CLI_H
#define PFLEX_CLI_GPU_CLI_H

#include <stdbool.h>

#include "pflex/gpu.h"
#include "pflex/restore.h"

/* Opens the backend (NULL: env PFLEX_GPU_BACKEND, else nvml; nvml's library
 * from env PFLEX_NVML_LIB) and prints why not. spec: the sim backend's;
 * nvml_opts: the nvml backend's options but its library (e.g. "gpm=on"), or NULL. */
int cli_gpu_open(const char *backend, const char *spec, const char *nvml_opts,
                 struct pflex_gpu **ret_gpu);

/* The state directory given: --state-dir, else env PFLEX_STATE_DIR, else NULL
 * (the library's default). */
const char *cli_state_dir(const char *state_dir);

/* Restore options from --state-dir and the environment (PFLEX_STATE_DIR,
 * PFLEX_LOCK_TIMEOUT_S). */
void cli_restore_opts(const char *state_dir, struct pflex_restore_opts *o);

/* Opens the restore store for gpu: the state directory (--state-dir, env
 * PFLEX_STATE_DIR, /var/lib/pflex); for the sim backend with neither given, a
 * memory store (simulated GPUs vanish with the process). `hold`: this process
 * keeps the GPUs it sets until it restores them (a sweep). Prints why not. */
int cli_restore_open(struct pflex_gpu *gpu, const char *state_dir, bool hold,
                     struct pflex_restore **ret);

/* Prints "error: <what> GPU <index>: <reason>" with a hint of what is needed
 * (root or CAP_SYS_ADMIN for -EPERM, a lost GPU for -ENODEV, ...). */
void cli_gpu_error(struct pflex_gpu *gpu, const char *what, unsigned index, int err);

/* The parse function of a --gpus LIST row (CLI_CUSTOM on a const char *
 * field): a list pflex_gpu_parse_indexes reads, so a bad one is a usage error
 * (exit 2) before any GPU is opened; the field keeps the text. */
int cli_gpu_list_check(const char *arg, void *field);
#define CLI_GPU_LIST_EXPECT "a list of GPU indexes such as 0,1 or 0-7"

/* Resolves --gpus (NULL = all) against the backend's count; prints errors. */
int cli_gpu_select(struct pflex_gpu *gpu, const char *list, unsigned **ret_idx, size_t *ret_n);

#endif
