/* The plugin's client of the local pflexd (docs/agent.md): registers a job's
 * GPUs (PUT /v1/jobs/{id} {"gpus":[...]}) and unregisters them (DELETE
 * /v1/jobs/{id}, after which pflexd restores those GPUs' original limits),
 * over pflexd's Unix socket with libcurl. Errors are negative errno values,
 * with what happened in msg:
 *   -ECONNREFUSED  pflexd is not there (no socket, nobody listening, timeout)
 *   -EPERM         the socket is not root's, or sits in a directory others can
 *                  change: not used
 *   -ENOENT        DELETE of a job pflexd does not know (404)
 *   -EBUSY         PUT of a GPU another job holds (409)
 *   -EPROTO        any other answer than 200 (msg holds pflexd's error)
 *   -ENOMEM        out of memory */
#ifndef PFLEX_SLURM_SPANK_AGENT_H
#define PFLEX_SLURM_SPANK_AGENT_H

#include <stddef.h>

#include "spank_args.h"
#include "spank_reply.h"

/* PUT /v1/jobs/{job} {"gpus":[...]} with the options given (opts may be
 * NULL): "class", "weight", "min_throughput". */
int pflex_spank_agent_put_job(const struct pflex_spank_conf *c, const char *job,
                              const unsigned *gpus, size_t n,
                              const struct pflex_spank_job_opts *opts, char *msg, size_t msglen);
int pflex_spank_agent_delete_job(const struct pflex_spank_conf *c, const char *job, char *msg,
                                 size_t msglen);

/* The ids of the jobs other than job that pflexd lists on any of gpus (GET
 * /v1/jobs), at most max of them, into ret_ids. */
int pflex_spank_agent_holders(const struct pflex_spank_conf *c, const char *job,
                              const unsigned *gpus, size_t n,
                              char (*ret_ids)[PFLEX_SPANK_JOB_ID_MAX + 1], size_t max,
                              size_t *ret_n, char *msg, size_t msglen);

#endif
