/* Token file and bearer check (auth.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "agent/auth.h"
#include "agent/trust.h"

static size_t trim(char *s, size_t n) {
  size_t start = 0;
  while (start < n && isspace((unsigned char)s[start]))
    start++;
  size_t end = start;
  while (end < n && s[end] != '\n' && s[end] != '\r')
    end++;
  while (end > start && isspace((unsigned char)s[end - 1]))
    end--;
  memmove(s, s + start, end - start);
  s[end - start] = '\0';
  return end - start;
}

int agent_token_load(struct agent_token *t, const char *path, char *errbuf, size_t errlen) {
  char why[256], buf[AGENT_TOKEN_MAX + 2];
  int fd = -1, err = agent_trust_open_secret(path, &fd, why, sizeof why);
  if (err && err != -EPERM) {
    snprintf(errbuf, errlen, "cannot open token file '%s': %s", path, why);
    return err;
  }
  ssize_t n = err ? 0 : read(fd, buf, sizeof buf - 1);
  if (!err && n < 0) err = -errno, snprintf(why, sizeof why, "%s", strerror(errno));
  if (fd >= 0) close(fd);
  if (err) {
    snprintf(errbuf, errlen, "refusing token file '%s': %s", path, why);
    return err;
  }
  size_t len = trim(buf, (size_t)n);
  const char *bad = len == 0                   ? "empty"
                    : len < AGENT_TOKEN_MIN    ? "token shorter than 16 bytes"
                    : (size_t)n >= sizeof buf - 1 ? "token longer than 511 bytes"
                    : strpbrk(buf, " \t\v\f") ? "token holds spaces or tabs"
                                               : NULL;
  if (bad) {
    snprintf(errbuf, errlen, "token file '%s': %s (make one with: openssl rand -hex 32)", path,
             bad);
    return -EINVAL;
  }
  memcpy(t->text, buf, len + 1);
  t->len = len;
  return 0;
}

bool agent_token_equal(const char *a, size_t alen, const char *b, size_t blen) {
  /* Every byte of a is compared (against b, or against itself past b's end),
   * so the time depends on alen only, never on where the first difference is. */
  volatile unsigned char diff = (unsigned char)(alen != blen);
  for (size_t i = 0; i < alen; i++) {
    unsigned char other = i < blen ? (unsigned char)b[i] : (unsigned char)~a[i];
    diff |= (unsigned char)(a[i] ^ other);
  }
  return diff == 0;
}

bool agent_auth_bearer_ok(const struct agent_token *t, const char *header) {
  if (!header || t->len == 0) return false;
  if (strncasecmp(header, "Bearer ", 7) != 0) return false;
  const char *tok = header + 7;
  while (*tok == ' ')
    tok++;
  size_t len = strlen(tok);
  while (len > 0 && (tok[len - 1] == ' ' || tok[len - 1] == '\t'))
    len--;
  return agent_token_equal(t->text, t->len, tok, len);
}
