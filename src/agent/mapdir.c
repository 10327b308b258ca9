/* The job-mapping directory (mapdir.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "agent/log.h"
#include "agent/mapdir.h"
#include "agent/trust.h"

#define WATCH_MASK                                                                                 \
  (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE | IN_ATTRIB |              \
   IN_DELETE_SELF | IN_MOVE_SELF)

int agent_mapdir_open(struct agent_mapdir *m, const char *path, char *errbuf, size_t errlen) {
  memset(m, 0, sizeof *m);
  m->inotify_fd = -1;
  if (!path || !*path) return 0;
  char why[256];
  int err = agent_trust_dir(path, true, why, sizeof why);
  if (err) {
    snprintf(errbuf, errlen, "job mapping directory '%s': %s", path, why);
    return err;
  }
  snprintf(m->path, sizeof m->path, "%s", path);
  m->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (m->inotify_fd < 0 || inotify_add_watch(m->inotify_fd, path, WATCH_MASK | IN_ONLYDIR) < 0) {
    err = -errno;
    snprintf(errbuf, errlen, "cannot watch '%s': %s", path, strerror(errno));
    agent_mapdir_close(m);
    return err;
  }
  return 0;
}

void agent_mapdir_close(struct agent_mapdir *m) {
  if (m->inotify_fd >= 0) close(m->inotify_fd);
  m->inotify_fd = -1;
}

bool agent_mapdir_changed(struct agent_mapdir *m) {
  char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
  bool changed = false;
  if (m->inotify_fd < 0) return false;
  while (read(m->inotify_fd, buf, sizeof buf) > 0)
    changed = true;
  return changed;
}

/* The first line of file `name` in dirfd when it is a trusted regular file
 * holding a valid job id; else "" (and a warning when it is not absent). */
static void read_job(struct agent_mapdir *m, int dirfd, const char *name,
                     char job[AGENT_JOB_ID_MAX + 1]) {
  char buf[AGENT_JOB_ID_MAX + 64], why[256] = "";
  job[0] = '\0';
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) snprintf(why, sizeof why, "%s", strerror(errno));
  } else if (agent_trust_fd(fd, false, why, sizeof why) == 0) {
    ssize_t n = read(fd, buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = '\0';
    buf[strcspn(buf, "\r\n \t")] = '\0';
    if (agent_job_id_valid(buf))
      memcpy(job, buf, strlen(buf) + 1); /* valid: at most 64 characters */
    else if (buf[0])
      snprintf(why, sizeof why, "'%.40s' is not a job id", buf);
  }
  if (fd >= 0) close(fd);
  if (why[0]) {
    m->ignored++;
    agent_log("warning", "job mapping '%s/%s' ignored: %s", m->path, name, why);
  }
}

int agent_mapdir_scan(struct agent_mapdir *m, unsigned n, char (*dir_job)[AGENT_JOB_ID_MAX + 1]) {
  for (unsigned i = 0; i < n; i++)
    dir_job[i][0] = '\0';
  if (m->inotify_fd < 0) return 0;
  int dirfd = open(m->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dirfd < 0) {
    agent_log("warning", "job mapping directory '%s': %s", m->path, strerror(errno));
    return -errno;
  }
  char why[256];
  int err = agent_trust_fd(dirfd, true, why, sizeof why);
  if (err) {
    agent_log("warning", "job mapping directory '%s' ignored: %s", m->path, why);
    close(dirfd);
    return err;
  }
  for (unsigned i = 0; i < n; i++) {
    char name[16];
    snprintf(name, sizeof name, "%u", i);
    read_job(m, dirfd, name, dir_job[i]);
  }
  close(dirfd);
  m->scans++;
  return 0;
}
