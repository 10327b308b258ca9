/* The agents file and secret files (inventory.h). */
#include "controller/inventory.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "agent/auth.h"
#include "agent/trust.h"

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  size_t n = strlen(s);
  while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
    s[--n] = '\0';
  return s;
}

/* 0, or -1 (not http(s)), -2 (too long, or a byte no URL holds), or -3
 * with libcurl's reason in *why (a port past 65535, no host, ...). */
static int check_url(const char *u, const char **why) {
  if (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0) return -1;
  if (strlen(u) >= CTL_URL_MAX || strpbrk(u, "\"'\\")) return -2;
  for (const unsigned char *p = (const unsigned char *)u; *p; p++)
    if (*p <= ' ' || *p >= 0x7f) return -2; /* a space, control byte or non-ASCII */
  CURLU *h = curl_url();
  CURLUcode rc = h ? curl_url_set(h, CURLUPART_URL, u, 0) : CURLUE_OUT_OF_MEMORY;
  curl_url_cleanup(h);
  *why = curl_url_strerror(rc);
  return rc == CURLUE_OK ? 0 : -3;
}

static int add_url(struct ctl_inventory *inv, size_t *cap, const char *u) {
  if (inv->n == *cap) {
    size_t nc = *cap ? *cap * 2 : 64;
    void *p = realloc(inv->urls, nc * sizeof *inv->urls);
    if (!p) return -ENOMEM;
    inv->urls = p;
    *cap = nc;
  }
  snprintf(inv->urls[inv->n++], CTL_URL_MAX, "%s", u);
  return 0;
}

static size_t url_len(const char *u) {
  size_t n = strlen(u);
  return n && u[n - 1] == '/' ? n - 1 : n; /* "http://h:1/" and "http://h:1" are one agent */
}

static bool is_duplicate(const struct ctl_inventory *inv, const char *u) {
  for (size_t i = 0; i < inv->n; i++)
    if (url_len(inv->urls[i]) == url_len(u) && strncmp(inv->urls[i], u, url_len(u)) == 0)
      return true;
  return false;
}

/* The file opened by agent_trust_open (or _secret), its refusal in err. */
static int open_trusted(const char *path, bool secret, char *err, size_t errlen) {
  char why[PATH_MAX + 96];
  int fd = -1, rc = secret ? agent_trust_open_secret(path, &fd, why, sizeof why)
                           : agent_trust_open(path, &fd, why, sizeof why);
  if (rc < 0)
    snprintf(err, errlen, rc == -EPERM ? "'%s': %s" : "cannot read '%s': %s", path, why);
  return rc < 0 ? rc : fd;
}

int ctl_open_trusted(const char *path, char *err, size_t errlen) {
  return open_trusted(path, false, err, errlen);
}

int ctl_open_trusted_name(const char *path, char *fdpath, size_t size, char *err, size_t errlen) {
  int fd = ctl_open_trusted(path, err, errlen);
  if (fd >= 0) snprintf(fdpath, size, "/proc/self/fd/%d", fd);
  return fd;
}

int ctl_inventory_load(const char *path, struct ctl_inventory *ret, char *err, size_t errlen) {
  int fd = ctl_open_trusted(path, err, errlen);
  return fd < 0 ? fd : ctl_inventory_load_fd(fd, path, ret, err, errlen);
}

int ctl_inventory_load_fd(int fd, const char *path, struct ctl_inventory *ret, char *err,
                          size_t errlen) {
  FILE *f = fdopen(fd, "r");
  if (!f) {
    close(fd);
    snprintf(err, errlen, "cannot read '%s': %s", path, strerror(ENOMEM));
    return -ENOMEM;
  }
  struct ctl_inventory inv = {0};
  size_t cap = 0, lineno = 0, linecap = 0;
  char *line = NULL; /* a whole line, however long (a long comment is one line) */
  ssize_t len;
  int rc = 0;
  while (rc == 0 && (len = getline(&line, &linecap, f)) >= 0) {
    lineno++;
    if (strlen(line) != (size_t)len) {
      snprintf(err, errlen, "'%s': line %zu: holds a NUL byte", path, lineno);
      rc = -EINVAL;
      break;
    }
    char *u = trim(line);
    if (!*u || *u == '#') continue;
    const char *why = NULL;
    int bad = check_url(u, &why);
    if (bad) {
      snprintf(err, errlen, "'%s': line %zu: %s%s", path, lineno,
               bad == -1   ? "not an http:// or https:// URL"
               : bad == -2 ? "URL too long or holds a space, quote, control byte or non-ASCII"
                           : "not a valid URL: ",
               bad == -3 ? why : "");
      rc = -EINVAL;
    } else if (is_duplicate(&inv, u)) {
      snprintf(err, errlen, "'%s': line %zu: agent '%s' listed twice", path, lineno, u);
      rc = -EINVAL;
    } else if (inv.n == CTL_MAX_AGENTS) {
      snprintf(err, errlen, "'%s': line %zu: more than %d agents", path, lineno, CTL_MAX_AGENTS);
      rc = -EINVAL;
    } else {
      rc = add_url(&inv, &cap, u);
    }
  }
  free(line);
  fclose(f);
  if (rc == 0 && inv.n == 0) {
    snprintf(err, errlen, "'%s': no agent URLs", path);
    rc = -EINVAL;
  }
  if (rc < 0) {
    ctl_inventory_release(&inv);
    return rc;
  }
  *ret = inv;
  return 0;
}

void ctl_inventory_release(struct ctl_inventory *inv) {
  free(inv->urls);
  inv->urls = NULL;
  inv->n = 0;
}

int ctl_read_secret(const char *path, char *buf, size_t size, char *err, size_t errlen) {
  struct agent_token t;
  int rc = agent_token_load(&t, path, err, errlen);
  if (rc == 0 && t.len >= size) {
    snprintf(err, errlen, "token file '%s': token longer than %zu bytes", path, size - 1);
    rc = -EINVAL;
  }
  if (rc == 0) memcpy(buf, t.text, t.len + 1);
  explicit_bzero(&t, sizeof t);
  return rc;
}
