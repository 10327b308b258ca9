/* The StatsD receiver's unix socket (src/telemetry/statsd.c) is removed at
 * close only if it is still the socket pflex made, in the directory pflex
 * bound it in: a directory swapped for a symlink, or the socket replaced by
 * another file, must not make a root process delete someone else's file
 * (issue 8 item 4). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "pflex/tput.h"

static char dir[256];

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/pflex-test-statsd-XXXXXX");
  assert_non_null(mkdtemp(dir));
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

static void path_of(char *buf, size_t size, const char *rel) {
  snprintf(buf, size, "%s/%s", dir, rel);
}

static void touch(const char *rel) {
  char p[512];
  path_of(p, sizeof p, rel);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fclose(f);
}

static bool exists(const char *rel) {
  char p[512];
  struct stat st;
  path_of(p, sizeof p, rel);
  return lstat(p, &st) == 0;
}

/* Receives a datagram sent to the path the user named. */
static void test_socket_works(void **state) {
  (void)state;
  char p[512], addr[600];
  path_of(p, sizeof p, "s.sock");
  snprintf(addr, sizeof addr, "unix:%s", p);
  struct pflex_statsd_server *srv;
  assert_int_equal(pflex_statsd_open(addr, &srv), 0);
  int c = socket(AF_UNIX, SOCK_DGRAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  assert_true(strlen(p) < sizeof sa.sun_path);
  memcpy(sa.sun_path, p, strlen(p) + 1);
  assert_int_equal(sendto(c, "tokens:5|c", 10, 0, (struct sockaddr *)&sa, sizeof sa), 10);
  close(c);
  char buf[64];
  assert_int_equal(recv(pflex_statsd_fd(srv), buf, sizeof buf, 0), 10);
  pflex_statsd_close(srv);
  assert_false(exists("s.sock")); /* its own socket is removed */
}

/* The socket's directory is replaced by a symlink to a directory holding a
 * victim file of the same name: close must not remove the victim. */
static void test_swapped_directory(void **state) {
  (void)state;
  char p[512], addr[600], a[512], b[512];
  path_of(p, sizeof p, "run");
  assert_int_equal(mkdir(p, 0755), 0);
  path_of(p, sizeof p, "victim");
  assert_int_equal(mkdir(p, 0755), 0);
  touch("victim/s.sock");
  path_of(p, sizeof p, "run/s.sock");
  snprintf(addr, sizeof addr, "unix:%s", p);
  struct pflex_statsd_server *srv;
  assert_int_equal(pflex_statsd_open(addr, &srv), 0);
  path_of(a, sizeof a, "run");
  path_of(b, sizeof b, "run.old");
  assert_int_equal(rename(a, b), 0);
  path_of(b, sizeof b, "victim");
  assert_int_equal(symlink(b, a), 0);
  pflex_statsd_close(srv);
  assert_true(exists("victim/s.sock"));   /* not deleted through the symlink */
  assert_false(exists("run.old/s.sock")); /* ours, removed where it was made */
}

/* The socket is replaced by another file at the same name: it stays. */
static void test_replaced_socket(void **state) {
  (void)state;
  char p[512], addr[600];
  path_of(p, sizeof p, "s.sock");
  snprintf(addr, sizeof addr, "unix:%s", p);
  struct pflex_statsd_server *srv;
  assert_int_equal(pflex_statsd_open(addr, &srv), 0);
  assert_int_equal(unlink(p), 0);
  touch("s.sock");
  pflex_statsd_close(srv);
  assert_true(exists("s.sock"));
  /* A file that is not a socket is never replaced at open either. */
  assert_int_equal(pflex_statsd_open(addr, &srv), -EEXIST);
  assert_true(exists("s.sock"));
}

/* A directory others may write (not sticky) is refused. */
static void test_writable_directory(void **state) {
  (void)state;
  char p[512], addr[600];
  path_of(p, sizeof p, "open");
  assert_int_equal(mkdir(p, 0755), 0);
  assert_int_equal(chmod(p, 0777), 0);
  path_of(p, sizeof p, "open/s.sock");
  snprintf(addr, sizeof addr, "unix:%s", p);
  struct pflex_statsd_server *srv;
  assert_int_equal(pflex_statsd_open(addr, &srv), -EPERM);
  assert_false(exists("open/s.sock"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_socket_works, setup, teardown),
      cmocka_unit_test_setup_teardown(test_swapped_directory, setup, teardown),
      cmocka_unit_test_setup_teardown(test_replaced_socket, setup, teardown),
      cmocka_unit_test_setup_teardown(test_writable_directory, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
