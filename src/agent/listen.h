/* Listening sockets of the API: a Unix socket that only root and a chosen
 * group may use, and a TCP socket. */
#ifndef PFLEX_AGENT_LISTEN_H
#define PFLEX_AGENT_LISTEN_H

#include <stdbool.h>
#include <sys/types.h>

/* Binds a Unix stream socket at path, mode 0660, group `group` ("" leaves
 * root's). Its directory is created (0755) if missing and must be root's
 * alone; a stale socket file is replaced, a live one (another pflexd
 * answering) or any other file is refused. *ret_dev and *ret_ino identify the
 * socket file for agent_unlink_socket. Logs why on failure. */
int agent_listen_unix(const char *path, const char *group, int *ret_fd, dev_t *ret_dev,
                      ino_t *ret_ino);

/* Binds and listens on "HOST:PORT" or "[V6]:PORT" (port 0: any free one;
 * the address is logged). Logs why on failure. */
int agent_listen_tcp(const char *hostport, int *ret_fd);

/* Whether the listening socket fd is bound to a loopback address only
 * (127.0.0.0/8 or ::1). */
bool agent_listen_is_loopback(int fd);

/* Removes path only when it is still the socket file we made. */
void agent_unlink_socket(const char *path, dev_t dev, ino_t ino);

#endif
