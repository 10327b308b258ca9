/* HTTP to many agents at once (libcurl multi): one request per agent per
 * batch, all in flight together, each with its own timeout. One easy handle
 * per agent is kept between batches so connections are reused. */
#ifndef CTL_CLIENT_H
#define CTL_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

struct ctl_client;

struct ctl_request {
  /* in */
  const char *method; /* "GET", "PUT", "DELETE"; NULL: skip this agent */
  const char *path;   /* e.g. "/v1/gpus" */
  const char *body;   /* JSON body or NULL */
  /* out */
  long status;    /* HTTP status, 0 when no answer */
  char *response; /* body (NUL-terminated), owned by the client until the next batch */
  size_t len;
  double elapsed_s;
  char error[128]; /* transport error, "" when an answer came */
};

/* urls: n agent base URLs (copied); token: bearer token or NULL. */
int ctl_client_new(const char *const *urls, size_t n, const char *token, struct ctl_client **ret);
void ctl_client_free(struct ctl_client *c);

/* Runs reqs[i] against agent i (n as at creation) in parallel and waits for
 * all, each bounded by timeout_s. Responses over 4 MiB are cut off and the
 * request fails. Returns 0, or -ENOMEM / -EIO when the batch itself fails. */
int ctl_client_run(struct ctl_client *c, struct ctl_request *reqs, double timeout_s);

#endif
