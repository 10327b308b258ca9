/* Listening sockets (listen.h). */
#include <errno.h>
#include <grp.h>
#include <libgen.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "agent/listen.h"
#include "agent/log.h"
#include "agent/trust.h"

/* Clears the way for a new socket at path: -EADDRINUSE when a server answers
 * there, -EEXIST when it is not a socket. */
static int clear_path(const char *path, const struct sockaddr_un *sa) {
  struct stat st;
  if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -errno;
  if (!S_ISSOCK(st.st_mode)) return -EEXIST;
  int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int live = probe >= 0 && connect(probe, (const struct sockaddr *)sa, sizeof *sa) == 0;
  if (probe >= 0) close(probe);
  if (live) return -EADDRINUSE;
  return unlink(path) == 0 ? 0 : -errno;
}

static int socket_owner(const char *path, const char *group) {
  gid_t gid = (gid_t)-1;
  if (group[0]) {
    struct group *g = getgrnam(group);
    if (!g) {
      agent_log("error", "socket group '%s': no such group", group);
      return -ENOENT;
    }
    gid = g->gr_gid;
  }
  if ((gid != (gid_t)-1 && chown(path, (uid_t)-1, gid) != 0) || chmod(path, 0660) != 0) {
    int err = -errno;
    agent_log("error", "socket '%s': cannot set group and mode: %s", path, strerror(errno));
    return err;
  }
  return 0;
}

static int bind_unix(const char *path, const struct sockaddr_un *sa, int *ret_fd) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -errno;
  mode_t old = umask(0177); /* never reachable by others, not even for an instant */
  int err =
      bind(fd, (const struct sockaddr *)sa, sizeof *sa) == 0 && listen(fd, 64) == 0 ? 0 : -errno;
  umask(old);
  if (err) {
    close(fd);
    agent_log("error", "cannot listen on '%s': %s", path, strerror(-err));
    return err;
  }
  *ret_fd = fd;
  return 0;
}

int agent_listen_unix(const char *path, const char *group, int *ret_fd, dev_t *ret_dev,
                      ino_t *ret_ino) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  char dir[sizeof sa.sun_path], why[256];
  if (strlen(path) >= sizeof sa.sun_path) {
    agent_log("error", "socket path '%s' is too long (max %zu)", path, sizeof sa.sun_path - 1);
    return -ENAMETOOLONG;
  }
  memcpy(sa.sun_path, path, strlen(path) + 1);
  snprintf(dir, sizeof dir, "%s", path);
  int err = agent_trust_dir(dirname(dir), true, why, sizeof why);
  if (err) {
    agent_log("error", "socket directory of '%s': %s", path, why);
    return err;
  }
  if ((err = clear_path(path, &sa))) {
    agent_log("error", "socket '%s': %s", path,
              err == -EADDRINUSE ? "another server (pflexd?) answers there"
              : err == -EEXIST   ? "exists and is not a socket"
                                 : strerror(-err));
    return err;
  }
  int fd = -1;
  if ((err = bind_unix(path, &sa, &fd))) return err;
  struct stat st;
  if ((err = socket_owner(path, group)) || (lstat(path, &st) != 0 && (err = -errno))) {
    close(fd);
    unlink(path);
    return err;
  }
  *ret_fd = fd;
  *ret_dev = st.st_dev;
  *ret_ino = st.st_ino;
  return 0;
}

static int split_hostport(const char *s, char *host, size_t hsize, char *port, size_t psize) {
  const char *colon = strrchr(s, ':');
  if (!colon || colon == s || !colon[1]) return -EINVAL;
  const char *h = s;
  size_t hl = (size_t)(colon - s);
  if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']') h++, hl -= 2;
  if (hl >= hsize || strlen(colon + 1) >= psize) return -EINVAL;
  memcpy(host, h, hl);
  host[hl] = '\0';
  snprintf(port, psize, "%s", colon + 1);
  return 0;
}

static void log_bound(int fd) {
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  char host[NI_MAXHOST], port[NI_MAXSERV];
  if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0 &&
      getnameinfo((struct sockaddr *)&ss, len, host, sizeof host, port, sizeof port,
                  NI_NUMERICHOST | NI_NUMERICSERV) == 0)
    agent_log("note", "listening on %s%s%s:%s", ss.ss_family == AF_INET6 ? "[" : "", host,
              ss.ss_family == AF_INET6 ? "]" : "", port);
}

int agent_listen_tcp(const char *hostport, int *ret_fd) {
  char host[256], port[16];
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res = NULL;
  if (split_hostport(hostport, host, sizeof host, port, sizeof port) ||
      getaddrinfo(host, port, &hints, &res) != 0) {
    agent_log("error", "--listen '%s': expected HOST:PORT (e.g. 127.0.0.1:9400)", hostport);
    return -EINVAL;
  }
  int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;
  int err = fd < 0 ? -errno : 0;
  if (!err) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (!err && (bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 64) != 0)) err = -errno;
  freeaddrinfo(res);
  if (err) {
    agent_log("error", "cannot listen on '%s': %s", hostport, strerror(-err));
    if (fd >= 0) close(fd);
    return err;
  }
  log_bound(fd);
  *ret_fd = fd;
  return 0;
}

bool agent_listen_is_loopback(int fd) {
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;
  if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0) return false;
  if (ss.ss_family == AF_INET)
    return (ntohl(((const struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
  if (ss.ss_family == AF_INET6)
    return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)&ss)->sin6_addr);
  return false;
}

void agent_unlink_socket(const char *path, dev_t dev, ino_t ino) {
  struct stat st;
  if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == dev && st.st_ino == ino)
    unlink(path);
}
