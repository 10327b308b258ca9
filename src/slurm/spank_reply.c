/* pflexd's replies, read (spank_reply.h). */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "spank_args.h"
#include "spank_reply.h"

void pflex_spank_reply_error(const char *body, size_t len, long status, char *msg, size_t msglen) {
  json_t *root = json_loadb(body, len, 0, NULL);
  const char *err = json_string_value(json_object_get(root, "error"));
  const char *field = json_string_value(json_object_get(root, "field"));
  if (err)
    snprintf(msg, msglen, "pflexd answered %ld: %.60s%s%.120s", status, field ? field : "",
             field ? ": " : "", err);
  else
    snprintf(msg, msglen, "pflexd answered %ld", status);
  json_decref(root);
}

static bool holds_any(json_t *list, const unsigned *gpus, size_t n) {
  size_t k;
  json_t *g;
  json_array_foreach(list, k, g) {
    for (size_t j = 0; j < n; j++)
      if (json_is_integer(g) && json_integer_value(g) == (json_int_t)gpus[j]) return true;
  }
  return false;
}

int pflex_spank_reply_holders(const char *body, size_t len, const char *job, const unsigned *gpus,
                              size_t n, char (*ret_ids)[PFLEX_SPANK_JOB_ID_MAX + 1], size_t max,
                              size_t *ret_n, char *msg, size_t msglen) {
  json_t *root = json_loadb(body, len, 0, NULL), *jobs = json_object_get(root, "jobs"), *o;
  if (!json_is_array(jobs)) {
    json_decref(root);
    snprintf(msg, msglen, "pflexd's GET /v1/jobs: no \"jobs\" list in the reply");
    return -EPROTO;
  }
  size_t k, found = 0;
  json_array_foreach(jobs, k, o) {
    const char *id = json_string_value(json_object_get(o, "id"));
    if (!id || !pflex_spank_job_id_ok(id) || strcmp(id, job) == 0) continue;
    if (found < max && holds_any(json_object_get(o, "gpus"), gpus, n))
      snprintf(ret_ids[found++], PFLEX_SPANK_JOB_ID_MAX + 1, "%s", id);
  }
  json_decref(root);
  *ret_n = found;
  return 0;
}
