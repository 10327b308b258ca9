/* Throughput from a training job over StatsD (include/pflex/tput.h).
 *
 * A training job sends one line per step (`tokens:8192|c`) in a datagram to
 * a socket pflex listens on. The receiver never blocks: a sampling loop polls
 * its fd or drains it once per tick. Each datagram is stamped with the time
 * the kernel received it (SO_TIMESTAMP), so the rate computed from counters
 * does not depend on how late the loop gets around to reading. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "pflex/tput.h"

double pflex_tput_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- parsing ---- */

/* A StatsD number: optional sign, digits, optional fraction and exponent.
 * strtod alone would also take "nan", "inf" and hex. */
static int parse_number(const char *s, size_t len, double *ret, bool *ret_signed) {
  char buf[64];
  if (len == 0 || len >= sizeof buf) return -EINVAL;
  size_t i = 0;
  bool sign = s[0] == '+' || s[0] == '-';
  if (sign) i++;
  size_t digits = 0;
  while (i < len && s[i] >= '0' && s[i] <= '9')
    i++, digits++;
  if (i < len && s[i] == '.') {
    i++;
    while (i < len && s[i] >= '0' && s[i] <= '9')
      i++, digits++;
  }
  if (!digits) return -EINVAL;
  if (i < len && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < len && (s[i] == '+' || s[i] == '-')) i++;
    size_t ed = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9')
      i++, ed++;
    if (!ed) return -EINVAL;
  }
  if (i != len) return -EINVAL;
  memcpy(buf, s, len);
  buf[len] = '\0';
  double v = strtod(buf, NULL);
  if (!isfinite(v)) return -EINVAL;
  *ret = v;
  *ret_signed = sign;
  return 0;
}

int pflex_statsd_parse_line(const char *line, size_t len, struct pflex_statsd_metric *ret_metric) {
  while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
    len--;
  const char *colon = memchr(line, ':', len);
  if (!colon || colon == line) return -EINVAL;
  size_t nlen = (size_t)(colon - line);
  if (nlen >= PFLEX_STATSD_NAME_MAX) return -EINVAL;
  for (size_t i = 0; i < nlen; i++) {
    unsigned char c = (unsigned char)line[i];
    if (c == '|' || c <= ' ' || c == 0x7f) return -EINVAL;
  }
  const char *val = colon + 1, *end = line + len;
  const char *bar = memchr(val, '|', (size_t)(end - val));
  if (!bar) return -EINVAL;
  struct pflex_statsd_metric m = {0};
  memcpy(m.name, line, nlen);
  m.name[nlen] = '\0';
  bool sign;
  if (parse_number(val, (size_t)(bar - val), &m.value, &sign) < 0) return -EINVAL;
  m.sample_rate = 1.0;

  const char *type = bar + 1;
  const char *tend = memchr(type, '|', (size_t)(end - type));
  if (!tend) tend = end;
  size_t tlen = (size_t)(tend - type);
  if (tlen == 1 && type[0] == 'c')
    m.type = PFLEX_STATSD_COUNTER;
  else if (tlen == 1 && type[0] == 'g')
    m.type = PFLEX_STATSD_GAUGE;
  else if (tlen == 2 && type[0] == 'm' && type[1] == 's')
    m.type = PFLEX_STATSD_TIMING;
  else if (tlen == 1 && type[0] == 'h')
    m.type = PFLEX_STATSD_HISTOGRAM;
  else
    return -EINVAL;
  m.delta = m.type == PFLEX_STATSD_GAUGE && sign;

  /* Optional sections: |@rate and |#tags (DogStatsD), in any order, once each. */
  bool have_rate = false, have_tags = false;
  const char *sec = tend;
  while (sec < end) {
    sec++; /* the '|' */
    const char *send = memchr(sec, '|', (size_t)(end - sec));
    if (!send) send = end;
    size_t slen = (size_t)(send - sec);
    if (slen >= 2 && sec[0] == '@' && !have_rate) {
      double rate;
      bool rs;
      if (parse_number(sec + 1, slen - 1, &rate, &rs) < 0 || rs || !(rate > 0 && rate <= 1))
        return -EINVAL;
      m.sample_rate = rate;
      have_rate = true;
    } else if (slen >= 1 && sec[0] == '#' && !have_tags) {
      have_tags = true;
    } else {
      return -EINVAL;
    }
    sec = send;
  }
  *ret_metric = m;
  return 0;
}

int pflex_statsd_parse_packet(const char *buf, size_t len, double time_s, pflex_statsd_fn fn,
                              void *userdata, size_t *ret_bad) {
  size_t bad = 0;
  int r = 0;
  const char *p = buf, *end = buf + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *lend = nl ? nl : end;
    size_t llen = (size_t)(lend - p);
    if (llen && !(llen == 1 && p[0] == '\r')) {
      struct pflex_statsd_metric m;
      if (pflex_statsd_parse_line(p, llen, &m) < 0)
        bad++;
      else if (fn && (r = fn(&m, time_s, userdata)) != 0)
        break;
    }
    p = nl ? nl + 1 : end;
  }
  if (ret_bad) *ret_bad += bad;
  return r;
}

/* ---- the receiver ---- */

struct pflex_statsd_server {
  int fd;
  bool is_unix;
  char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
  int dir_fd;         /* unix: the directory the socket was bound in */
  char name[256];     /* unix: the socket's name in it */
  dev_t dev;          /* unix: the socket file pflex made, to remove it and nothing else */
  ino_t ino;
  char buf[65536]; /* the largest datagram */
};

static int open_udp(const char *spec, struct pflex_statsd_server *srv) {
  /* HOST:PORT, HOST may be [v6]. */
  char host[256];
  const char *colon = strrchr(spec, ':');
  if (!colon || colon == spec || !colon[1]) return -EINVAL;
  size_t hlen = (size_t)(colon - spec);
  if (spec[0] == '[') {
    if (hlen < 3 || spec[hlen - 1] != ']') return -EINVAL;
    spec++;
    hlen -= 2;
  }
  if (hlen >= sizeof host) return -EINVAL;
  memcpy(host, spec, hlen);
  host[hlen] = '\0';
  const char *port = colon + 1;
  for (const char *c = port; *c; c++)
    if (*c < '0' || *c > '9') return -EINVAL;
  if (atol(port) > 65535) return -EINVAL;

  struct addrinfo hints = {0}, *res = NULL;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  int gr = getaddrinfo(host, port, &hints, &res);
  if (gr != 0) return gr == EAI_SYSTEM ? -errno : -EADDRNOTAVAIL;
  int r = -EADDRNOTAVAIL;
  for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      r = -errno;
      continue;
    }
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
      srv->fd = fd;
      r = 0;
      break;
    }
    r = -errno;
    close(fd);
  }
  freeaddrinfo(res);
  return r;
}

/* The directory of a unix socket, held open: the socket is bound and later
 * removed through it (/proc/self/fd/N/NAME, unlinkat), so a directory or
 * symlink swapped in its place afterwards cannot make pflex remove another
 * file. A directory others may write is refused unless sticky (/tmp), where
 * they cannot rename or remove our entry. */
static int open_socket_dir(const char *path, struct pflex_statsd_server *srv) {
  const char *slash = strrchr(path, '/');
  const char *name = slash ? slash + 1 : path;
  if (!*name || strlen(name) >= sizeof srv->name || strcmp(name, ".") == 0 ||
      strcmp(name, "..") == 0)
    return -EINVAL;
  char dir[sizeof srv->path];
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else if (slash == path)
    snprintf(dir, sizeof dir, "/");
  else
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return -errno;
  struct stat st;
  int err = fstat(dfd, &st) == 0 ? 0 : -errno;
  if (!err && (st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) err = -EPERM;
  if (err) {
    close(dfd);
    return err;
  }
  srv->dir_fd = dfd;
  snprintf(srv->name, sizeof srv->name, "%s", name);
  return 0;
}

static int open_unix(const char *path, struct pflex_statsd_server *srv) {
  struct sockaddr_un sa = {0};
  sa.sun_family = AF_UNIX;
  if (!path[0] || strlen(path) >= sizeof sa.sun_path) return -EINVAL;
  int err = open_socket_dir(path, srv);
  if (err) return err;
  /* A stale socket of ours from an earlier run is replaced; anything else
   * (another user's socket, a file) is not ours to remove. */
  struct stat st;
  if (fstatat(srv->dir_fd, srv->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid()) return -EEXIST;
    if (unlinkat(srv->dir_fd, srv->name, 0) < 0) return -errno;
  }
  int n = snprintf(sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d/%s", srv->dir_fd, srv->name);
  if (n < 0 || (size_t)n >= sizeof sa.sun_path) return -ENAMETOOLONG;
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
      fstatat(srv->dir_fd, srv->name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
    int e = -errno;
    close(fd);
    return e;
  }
  srv->fd = fd;
  srv->is_unix = true;
  srv->dev = st.st_dev;
  srv->ino = st.st_ino;
  strcpy(srv->path, path);
  return 0;
}

int pflex_statsd_open(const char *address, struct pflex_statsd_server **ret_server) {
  if (!address) return -EINVAL;
  struct pflex_statsd_server *srv = calloc(1, sizeof *srv);
  if (!srv) return -ENOMEM;
  srv->fd = srv->dir_fd = -1;
  int r;
  /* The URL forms udp://HOST:PORT and unix://PATH are StatsD clients' usual
   * spelling; they mean the same. */
  if (strncmp(address, "udp://", 6) == 0)
    r = open_udp(address + 6, srv);
  else if (strncmp(address, "udp:", 4) == 0)
    r = open_udp(address + 4, srv);
  else if (strncmp(address, "unix://", 7) == 0)
    r = open_unix(address + 7, srv);
  else if (strncmp(address, "unix:", 5) == 0)
    r = open_unix(address + 5, srv);
  else
    r = -EINVAL;
  if (r < 0) {
    if (srv->dir_fd >= 0) close(srv->dir_fd);
    free(srv);
    return r;
  }
  int on = 1;
  /* Best effort: without it, the time of reading stands in for the receive time. */
  (void)setsockopt(srv->fd, SOL_SOCKET, SO_TIMESTAMP, &on, sizeof on);
  /* A job sends a line per step; a deep queue rides out a slow sampling tick. */
  int rcvbuf = 1 << 20;
  (void)setsockopt(srv->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  *ret_server = srv;
  return 0;
}

void pflex_statsd_close(struct pflex_statsd_server *server) {
  if (!server) return;
  if (server->fd >= 0) close(server->fd);
  /* Only the socket pflex made, in the directory it made it in. */
  struct stat st;
  if (server->is_unix &&
      fstatat(server->dir_fd, server->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISSOCK(st.st_mode) && st.st_dev == server->dev && st.st_ino == server->ino)
    unlinkat(server->dir_fd, server->name, 0);
  if (server->dir_fd >= 0) close(server->dir_fd);
  free(server);
}

int pflex_statsd_fd(const struct pflex_statsd_server *server) {
  return server->fd;
}

int pflex_statsd_address(const struct pflex_statsd_server *server, char *buf, size_t size) {
  int n;
  if (server->is_unix) {
    n = snprintf(buf, size, "unix:%s", server->path);
  } else {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(server->fd, (struct sockaddr *)&ss, &len) < 0) return -errno;
    char host[INET6_ADDRSTRLEN];
    if (ss.ss_family == AF_INET) {
      struct sockaddr_in *in = (struct sockaddr_in *)&ss;
      inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
      n = snprintf(buf, size, "udp:%s:%u", host, (unsigned)ntohs(in->sin_port));
    } else if (ss.ss_family == AF_INET6) {
      struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
      inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
      n = snprintf(buf, size, "udp:[%s]:%u", host, (unsigned)ntohs(in6->sin6_port));
    } else {
      return -EAFNOSUPPORT;
    }
  }
  if (n < 0 || (size_t)n >= size) return -ENOBUFS;
  return 0;
}

int pflex_statsd_drain(struct pflex_statsd_server *server, pflex_statsd_fn fn, void *userdata,
                       size_t *ret_packets, size_t *ret_bad) {
  char *buf = server->buf;
  size_t packets = 0, bad = 0;
  int r = 0;
  for (;;) {
    union {
      struct cmsghdr align;
      char data[CMSG_SPACE(sizeof(struct timeval))];
    } ctl;
    struct iovec iov = {buf, sizeof server->buf};
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctl.data;
    msg.msg_controllen = sizeof ctl.data;
    ssize_t n = recvmsg(server->fd, &msg, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) r = -errno;
      break;
    }
    packets++;
    double t = NAN;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMP) {
        struct timeval tv;
        memcpy(&tv, CMSG_DATA(c), sizeof tv);
        t = (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
      }
    if (isnan(t)) t = pflex_tput_now();
    if (msg.msg_flags & MSG_TRUNC) {
      bad++; /* a cut datagram's last line is not trustworthy: skip it all */
      continue;
    }
    r = pflex_statsd_parse_packet(buf, (size_t)n, t, fn, userdata, &bad);
    if (r != 0) break;
  }
  if (ret_packets) *ret_packets += packets;
  if (ret_bad) *ret_bad += bad;
  return r;
}

int pflex_statsd_poll(struct pflex_statsd_server *server, int timeout_ms, pflex_statsd_fn fn,
                      void *userdata, size_t *ret_packets, size_t *ret_bad) {
  struct pollfd pfd = {.fd = server->fd, .events = POLLIN};
  int n = poll(&pfd, 1, timeout_ms);
  if (n < 0) return -errno;
  if (n == 0) return 0;
  return pflex_statsd_drain(server, fn, userdata, ret_packets, ret_bad);
}

/* ---- meter ---- */

void pflex_tput_meter_init(struct pflex_tput_meter *m, const char *name, double min_interval_s) {
  memset(m, 0, sizeof *m);
  snprintf(m->name, sizeof m->name, "%s", name && name[0] ? name : "tokens");
  m->min_interval_s = min_interval_s > 0 ? min_interval_s : 0;
  m->scale = 1.0;
}

int pflex_tput_meter_feed(struct pflex_tput_meter *m, const struct pflex_statsd_metric *metric,
                          double time_s, double *ret_time_s, double *ret_value) {
  if (strcmp(metric->name, m->name) != 0) return -ENOENT;
  double v = metric->value;
  switch (metric->type) {
  case PFLEX_STATSD_COUNTER: {
    double count = v / metric->sample_rate;
    if (v < 0 || !isfinite(m->total + count)) { /* a huge value over a tiny rate */
      m->ignored++;
      return -EINVAL;
    }
    m->total += count;
    if (!m->started) {
      m->started = true;
      m->last_time_s = time_s;
      return -EAGAIN;
    }
    m->pending += count;
    double dt = time_s - m->last_time_s;
    if (dt <= 0 || dt < m->min_interval_s) return -EAGAIN;
    double rate = m->pending / dt * m->scale;
    if (!isfinite(rate)) return -EAGAIN; /* too short a window for a finite rate: keep counting */
    *ret_time_s = time_s;
    *ret_value = rate;
    m->pending = 0;
    m->last_time_s = time_s;
    return 0;
  }
  case PFLEX_STATSD_GAUGE:
    if (metric->delta || v < 0 || !isfinite(v * m->scale)) {
      m->ignored++;
      return -EINVAL;
    }
    *ret_time_s = time_s;
    *ret_value = v * m->scale;
    return 0;
  case PFLEX_STATSD_TIMING:
  case PFLEX_STATSD_HISTOGRAM:
    /* a step time so small (1e-310 ms) that its inverse is no finite rate is unusable too */
    if (!(v > 0) || !isfinite(1000.0 / v * m->scale)) {
      m->ignored++;
      return -EINVAL;
    }
    *ret_time_s = time_s;
    *ret_value = 1000.0 / v * m->scale;
    return 0;
  }
  return -EINVAL;
}
