/* pflexd's replies as the plugin reads them: the error text of a refused
 * request, and which other jobs hold some of a job's GPUs (GET /v1/jobs).
 * Pure parsing (jansson), shared by the plugin, its unit test and its fuzz
 * harness. */
#ifndef PFLEX_SLURM_SPANK_REPLY_H
#define PFLEX_SLURM_SPANK_REPLY_H

#include <stddef.h>

#define PFLEX_SPANK_JOB_ID_MAX 64

/* "pflexd answered STATUS: FIELD: ERROR" from {"error":..., "field":...},
 * or "pflexd answered STATUS" when the body says nothing usable. */
void pflex_spank_reply_error(const char *body, size_t len, long status, char *msg, size_t msglen);

/* From a GET /v1/jobs body {"jobs":[{"id":..., "gpus":[...]}, ...]}: the ids
 * of the jobs other than job listed on any of gpus (at most max; only ids
 * fit for a request path). -EPROTO with a message when the body is not such
 * a list. */
int pflex_spank_reply_holders(const char *body, size_t len, const char *job, const unsigned *gpus,
                              size_t n, char (*ret_ids)[PFLEX_SPANK_JOB_ID_MAX + 1], size_t max,
                              size_t *ret_n, char *msg, size_t msglen);

#endif
