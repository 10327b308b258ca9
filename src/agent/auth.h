/* Bearer-token authentication of API requests over TCP: the token comes from
 * a root-only file and is compared in constant time. */
#ifndef PFLEX_AGENT_AUTH_H
#define PFLEX_AGENT_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#define AGENT_TOKEN_MAX 512
/* A bearer token shorter than this is refused: 16 bytes of random hex or
 * base64 are at least 64 bits, beyond guessing over HTTP. */
#define AGENT_TOKEN_MIN 16

struct agent_token {
  char text[AGENT_TOKEN_MAX];
  size_t len; /* 0: no token loaded, every authenticated request is refused */
};

/* Reads the token (its first line, surrounding whitespace removed) from a
 * regular file owned by root with mode 0600 or 0400, opened without
 * following symlinks. -EPERM for a file others may read or write, -EINVAL
 * for a token shorter than AGENT_TOKEN_MIN, longer than 511 bytes or with
 * spaces or tabs inside; the reason is in errbuf. The one token rule of
 * pflexd and pflex-controller (its API token and the agents'). */
int agent_token_load(struct agent_token *t, const char *path, char *errbuf, size_t errlen);

/* True when a and b (lengths given) are equal; takes the same time for any
 * two inputs of a given length of a, whatever their content. */
bool agent_token_equal(const char *a, size_t alen, const char *b, size_t blen);

/* True when an Authorization header value is "Bearer <token>" with the
 * loaded token. NULL header: false. */
bool agent_auth_bearer_ok(const struct agent_token *t, const char *header);

#endif
