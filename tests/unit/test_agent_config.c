/* Tests of pflexd's configuration (src/agent/config.c, config_cli.c), its
 * token handling (src/agent/auth.c) and trust checks (src/agent/trust.c). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/auth.h"
#include "agent/config.h"
#include "agent/listen.h"

static char dir[] = "/tmp/test_agent_config.XXXXXX";

static const char *write_file(const char *name, const char *text, mode_t mode) {
  static char path[128];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  chmod(path, mode);
  return path;
}

static void test_defaults(void **state) {
  (void)state;
  struct agent_config c;
  agent_config_defaults(&c);
  assert_string_equal(c.backend, "nvml");
  assert_string_equal(c.state_dir, "/var/lib/pflex");
  assert_string_equal(c.socket, "/run/pflex/pflexd.sock");
  assert_true(c.hz == 10);
  assert_int_equal(c.max_body, 65536);
  assert_false(c.read_auth);
  assert_false(c.keep_caps);
  /* every key's default parses and every key has help */
  size_t n;
  const struct agent_key *k = agent_config_keys(&n);
  char why[256];
  for (size_t i = 0; i < n; i++) {
    assert_true(k[i].help && k[i].help[0]);
    if (strcmp(k[i].name, "config") != 0)
      assert_int_equal(agent_config_set(&c, k[i].name, k[i].dflt, why, sizeof why), 0);
  }
}

static void test_set_values(void **state) {
  (void)state;
  struct agent_config c;
  char why[256];
  agent_config_defaults(&c);
  assert_int_equal(agent_config_set(&c, "hz", "2.5", why, sizeof why), 0);
  assert_true(c.hz == 2.5);
  assert_int_equal(agent_config_set(&c, "hz", "0", why, sizeof why), -EINVAL);
  assert_non_null(strstr(why, "hz"));
  assert_int_equal(agent_config_set(&c, "hz", "10x", why, sizeof why), -EINVAL);
  assert_int_equal(agent_config_set(&c, "ring", "3.5", why, sizeof why), -EINVAL);
  assert_int_equal(agent_config_set(&c, "ring", "100", why, sizeof why), 0);
  assert_int_equal(c.ring, 100);
  assert_int_equal(agent_config_set(&c, "keep_caps", "yes", why, sizeof why), 0);
  assert_true(c.keep_caps);
  assert_int_equal(agent_config_set(&c, "keep_caps", "sometimes", why, sizeof why), -EINVAL);
  assert_int_equal(agent_config_set(&c, "nope", "1", why, sizeof why), -ENOENT);
  char longv[200];
  memset(longv, 'x', sizeof longv - 1);
  longv[sizeof longv - 1] = '\0';
  assert_int_equal(agent_config_set(&c, "socket_group", longv, why, sizeof why), -EINVAL);
}

static void test_file_and_argv(void **state) {
  (void)state;
  struct agent_config c;
  char why[512];
  const char *good =
      write_file("good.conf", "; comment\n[pflexd]\nhz = 4\nlisten = 127.0.0.1:9\n", 0644);
  char goodp[128];
  snprintf(goodp, sizeof goodp, "%s", good);
  char *argv[] = {"pflexd", "--config", goodp, "--hz", "8", "--read-auth", "true", NULL};
  assert_int_equal(agent_config_parse(&c, 7, argv, why, sizeof why), 0);
  assert_true(c.hz == 8); /* the command line wins */
  assert_string_equal(c.listen, "127.0.0.1:9");
  assert_true(c.read_auth);

  agent_config_defaults(&c);
  const char *bad = write_file("bad.conf", "hz = 4\n\nbogus = 1\n", 0644);
  assert_int_equal(agent_config_load(&c, bad, why, sizeof why), -EINVAL);
  assert_non_null(strstr(why, "line 3"));
  assert_non_null(strstr(why, "bogus"));
  const char *sect = write_file("sect.conf", "[other]\nhz = 4\n", 0644);
  assert_int_equal(agent_config_load(&c, sect, why, sizeof why), -EINVAL);
  assert_non_null(strstr(why, "[other]"));
  const char *open = write_file("open.conf", "hz = 4\n", 0666);
  assert_int_equal(agent_config_load(&c, open, why, sizeof why), -EPERM);

  char *bad_argv[] = {"pflexd", "--config", goodp, "--hz", NULL};
  assert_int_equal(agent_config_parse(&c, 4, bad_argv, why, sizeof why), -EINVAL);
  char *extra[] = {"pflexd", "--config", goodp, "stray", NULL};
  assert_int_equal(agent_config_parse(&c, 4, extra, why, sizeof why), -EINVAL);
  assert_non_null(strstr(why, "stray"));
}

static void test_token(void **state) {
  (void)state;
  struct agent_token t = {0};
  char why[512];
  const char *p = write_file("tok", "  s3cret-token-0123 \n second line\n", 0600);
  assert_int_equal(agent_token_load(&t, p, why, sizeof why), 0);
  assert_string_equal(t.text, "s3cret-token-0123");
  assert_true(agent_auth_bearer_ok(&t, "Bearer s3cret-token-0123"));
  assert_true(agent_auth_bearer_ok(&t, "bearer  s3cret-token-0123 "));
  assert_false(agent_auth_bearer_ok(&t, "Bearer s3cret-token-012"));
  assert_false(agent_auth_bearer_ok(&t, "Bearer s3cret-token-01232"));
  assert_false(agent_auth_bearer_ok(&t, "Basic s3cret-token-0123"));
  assert_false(agent_auth_bearer_ok(&t, NULL));
  struct agent_token none = {0};
  assert_false(agent_auth_bearer_ok(&none, "Bearer "));
  p = write_file("tok644", "x\n", 0644);
  assert_int_equal(agent_token_load(&t, p, why, sizeof why), -EPERM);
  assert_non_null(strstr(why, "read"));
  p = write_file("tok640", "x\n", 0640);
  assert_int_equal(agent_token_load(&t, p, why, sizeof why), -EPERM);
  p = write_file("tokempty", "\n\n", 0600);
  assert_int_equal(agent_token_load(&t, p, why, sizeof why), -EINVAL);
  p = write_file("tokshort", "fifteen-bytes-x\n", 0600);
  assert_int_equal(agent_token_load(&t, p, why, sizeof why), -EINVAL);
  assert_non_null(strstr(why, "shorter than 16 bytes"));
  p = write_file("tokspace", "two halves-of a-token\n", 0600);
  assert_int_equal(agent_token_load(&t, p, why, sizeof why), -EINVAL);
  assert_non_null(strstr(why, "spaces or tabs"));
  p = write_file("toktab", "sixteen-bytes-ok\tmore\n", 0600);
  assert_int_equal(agent_token_load(&t, p, why, sizeof why), -EINVAL);
  char link[160];
  snprintf(link, sizeof link, "%s/toklink", dir);
  assert_int_equal(symlink("tok", link), 0);
  assert_int_equal(agent_token_load(&t, link, why, sizeof why), -ELOOP);
}

static void test_token_equal(void **state) {
  (void)state;
  assert_true(agent_token_equal("abc", 3, "abc", 3));
  assert_false(agent_token_equal("abc", 3, "abd", 3));
  assert_false(agent_token_equal("abc", 3, "ab", 2));
  assert_false(agent_token_equal("abc", 3, "abcd", 4));
  assert_false(agent_token_equal("abc", 3, "", 0));
}

static int setup(void **state) {
  (void)state;
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

/* Whether a socket bound (never listening: nothing here accepts a
 * connection) to ADDR, port 0, is loopback-only: 1 or 0; -1 where the
 * address cannot be bound (no IPv6). */
static int bound_loopback(int family, const char *addr) {
  int fd = socket(family, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_storage ss = {0};
  socklen_t len;
  if (family == AF_INET) {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    a->sin_family = AF_INET;
    assert_int_equal(inet_pton(AF_INET, addr, &a->sin_addr), 1);
    len = sizeof *a;
  } else {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    a->sin6_family = AF_INET6;
    assert_int_equal(inet_pton(AF_INET6, addr, &a->sin6_addr), 1);
    len = sizeof *a;
  }
  int lo = bind(fd, (struct sockaddr *)&ss, len) == 0 ? agent_listen_is_loopback(fd) : -1;
  close(fd);
  return lo;
}

static void test_loopback(void **state) {
  (void)state;
  assert_int_equal(bound_loopback(AF_INET, "127.0.0.1"), 1);
  assert_int_equal(bound_loopback(AF_INET, "127.0.0.2"), 1);
  assert_int_equal(bound_loopback(AF_INET, "0.0.0.0"), 0);
  if (bound_loopback(AF_INET6, "::1") >= 0) { /* where the kernel has IPv6 */
    assert_int_equal(bound_loopback(AF_INET6, "::1"), 1);
    assert_int_equal(bound_loopback(AF_INET6, "::"), 0);
  }
  assert_false(agent_listen_is_loopback(-1));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_defaults),      cmocka_unit_test(test_set_values),
      cmocka_unit_test(test_file_and_argv), cmocka_unit_test(test_token),
      cmocka_unit_test(test_token_equal),   cmocka_unit_test(test_loopback),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
