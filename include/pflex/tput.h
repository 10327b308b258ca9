/* Throughput from a running training job: StatsD lines and log regexes.
 *
 * Two ways for a job to tell pflex how fast it trains (docs/telemetry.md):
 *
 * 1. StatsD lines (`tokens:8192|c`) sent to a datagram socket pflex listens
 *    on (UDP `udp:HOST:PORT`, or a Unix datagram socket `unix:PATH`). The
 *    receiver is non-blocking: a sampling loop polls its fd (or calls drain
 *    each tick) and gets every metric with the time the kernel received it.
 *    A pflex_tput_meter turns a counter (tokens per step), a gauge (a rate)
 *    or a timer (a step time) into throughput samples.
 * 2. A POSIX extended regular expression applied to each line the job prints;
 *    a default pattern knows common trainer formats (tokens_per_second,
 *    tokens/s, tok/s, tps).
 *
 * Times are CLOCK_REALTIME seconds (pflex_tput_now()); a sampler that
 * records GPU samples into a pflex_series must use the same clock. */
#ifndef PFLEX_TPUT_H
#define PFLEX_TPUT_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

/* CLOCK_REALTIME now, in seconds. */
double pflex_tput_now(void);

/* ---- StatsD ---- */

enum pflex_statsd_type {
  PFLEX_STATSD_COUNTER = 0, /* |c  */
  PFLEX_STATSD_GAUGE,       /* |g  */
  PFLEX_STATSD_TIMING,      /* |ms */
  PFLEX_STATSD_HISTOGRAM,   /* |h  (treated like a timing) */
};

#define PFLEX_STATSD_NAME_MAX 128

struct pflex_statsd_metric {
  char name[PFLEX_STATSD_NAME_MAX];
  double value;       /* as sent (a counter's value is NOT yet divided by the sample rate) */
  double sample_rate; /* |@rate, in (0, 1]; 1 when absent */
  enum pflex_statsd_type type;
  bool delta; /* a gauge sent with an explicit sign (+3 / -3): a change, not a value */
};

/* Parses one StatsD line `name:value|type[|@rate][|#tags]` (no newline).
 * Tags are accepted and ignored. -EINVAL for a malformed line (empty name,
 * name with ':' '|' or whitespace, no or bad value, unknown type, rate outside
 * (0, 1], non-finite value, a name longer than PFLEX_STATSD_NAME_MAX - 1). */
int pflex_statsd_parse_line(const char *line, size_t len, struct pflex_statsd_metric *ret_metric);

/* Called once per metric; a non-zero return stops the parse and is returned. */
typedef int (*pflex_statsd_fn)(const struct pflex_statsd_metric *metric, double time_s,
                               void *userdata);

/* Parses a packet of newline-separated lines (empty lines and a trailing
 * newline are fine), calling fn for each valid line with time_s. Malformed
 * lines are skipped and added to *ret_bad (may be NULL; not reset). Returns 0 or fn's
 * non-zero return. */
int pflex_statsd_parse_packet(const char *buf, size_t len, double time_s, pflex_statsd_fn fn,
                              void *userdata, size_t *ret_bad);

struct pflex_statsd_server;

/* Opens a non-blocking datagram receiver at `address`:
 *   "udp:HOST:PORT"  IPv4/IPv6 host or name ("udp:127.0.0.1:8125"; port 0 picks
 *                    a free port, see pflex_statsd_address); "udp:[::1]:8125"
 *   "unix:PATH"      Unix datagram socket; an existing socket file at PATH is
 *                    replaced, and the file is removed by pflex_statsd_close.
 * -EINVAL for a malformed address, else a negative errno from the socket calls. */
int pflex_statsd_open(const char *address, struct pflex_statsd_server **ret_server);

/* Closes the receiver (and removes its Unix socket file). Accepts NULL. */
void pflex_statsd_close(struct pflex_statsd_server *server);

/* The socket's file descriptor, to poll() for POLLIN alongside other fds. */
int pflex_statsd_fd(const struct pflex_statsd_server *server);

/* The bound address in the form pflex_statsd_open accepts (the real port
 * when port 0 was asked for), for handing to the job (e.g. in its env). */
int pflex_statsd_address(const struct pflex_statsd_server *server, char *buf, size_t size);

/* Reads every datagram queued now, without blocking, and parses each with
 * pflex_statsd_parse_packet, time_s being the kernel's receive time
 * (SO_TIMESTAMP) when available, else the time of reading. Adds the malformed
 * lines to *ret_bad and the datagrams to *ret_packets (either may be NULL; the
 * caller sets them to 0 once, so they can accumulate over a run).
 * Returns 0, fn's non-zero return, or a negative errno. */
int pflex_statsd_drain(struct pflex_statsd_server *server, pflex_statsd_fn fn, void *userdata,
                       size_t *ret_packets, size_t *ret_bad);

/* Waits up to timeout_ms (-1 = forever, 0 = not at all) for datagrams and
 * drains them. -EINTR when a signal interrupted the wait. */
int pflex_statsd_poll(struct pflex_statsd_server *server, int timeout_ms, pflex_statsd_fn fn,
                      void *userdata, size_t *ret_packets, size_t *ret_bad);

/* ---- From StatsD metrics to throughput samples ---- */

/* A meter watches one metric name and turns it into throughput samples:
 *  - counter (tokens per step, `tokens:8192|c`): the tokens received since the
 *    previous sample divided by the time since it, one sample once at least
 *    min_interval_s has passed (the first counter only starts the clock:
 *    the start of the step it counts is unknown). value / sample_rate is counted.
 *    Use a window of at least a step (e.g. the sampling interval) when several
 *    ranks send, or per-step jitter matters: the top 10% of jittery per-step
 *    rates is biased upward.
 *  - gauge (a rate, `tokens_per_s:51234|g`): the value itself.
 *  - timing (a step time, `step_time:812|ms`): 1000 / value, steps per second
 *    (a relative unit: only ratios are meaningful).
 * Metrics of other names are ignored. */
struct pflex_tput_meter {
  char name[PFLEX_STATSD_NAME_MAX];
  double min_interval_s; /* counters: shortest window of one sample (0 = every step) */
  double scale;          /* every sample is multiplied by this (1) */
  /* state */
  bool started;
  double last_time_s;
  double pending; /* counted since last_time_s */
  double total;   /* every count received (value / sample_rate) */
  size_t ignored; /* metrics of the watched name with an unusable value */
};

/* name NULL = "tokens"; min_interval_s 0 gives one sample per received counter. */
void pflex_tput_meter_init(struct pflex_tput_meter *m, const char *name, double min_interval_s);

/* Feeds one metric received at time_s. 0 and a throughput sample in
 * *ret_time_s / *ret_value when one is complete; -EAGAIN when the metric was
 * taken but no sample is complete yet; -ENOENT when it is not the watched
 * name; -EINVAL when its value is unusable (negative count, zero timing...). */
int pflex_tput_meter_feed(struct pflex_tput_meter *m, const struct pflex_statsd_metric *metric,
                          double time_s, double *ret_time_s, double *ret_value);

/* ---- Regular expression over log lines ---- */

/* The default pattern (POSIX ERE, case-insensitive): a tokens-per-second key
 * (tokens_per_second, tokens_per_sec, tokens/s, tok/s, tps, tgs, ...)
 * followed by ':' or '=' and a number; thousands separators are allowed. */
extern const char pflex_tput_default_pattern[];

/* Lines matching this (POSIX ERE, case-insensitive) are skipped by default:
 * evaluation passes print their own, different, speed (torchtitan's
 * `evaluation: ... tps: N`, Hugging Face's `eval_..._per_second`). */
extern const char pflex_tput_default_skip[];

struct pflex_tput_regex_opts {
  const char *skip;    /* lines to ignore: NULL = pflex_tput_default_skip, "" = none */
  const char *pattern; /* NULL = pflex_tput_default_pattern; a user pattern needs one capture
                          group: the number is capture group 1 */
  bool icase;          /* case-insensitive matching of a user pattern (default always is) */
  bool per_step_time;  /* the number is a time per step: the sample is 1 / number */
  double scale;        /* every sample is multiplied by this; 0 means 1 (e.g. the GPU count
                          for torchtitan's per-GPU tps) */
};

struct pflex_tput_regex {
  regex_t re;
  regex_t skip;
  bool has_skip;
  int group; /* capture group of the number */
  bool per_step_time;
  double scale;
  char *line; /* partial line carried between pflex_tput_regex_feed calls */
  size_t len, cap;
  size_t matched, bad; /* lines that gave a value / matched but held no usable number */
};

/* Compiles the patterns. -EINVAL with a message in errbuf (if not NULL) for a
 * pattern that does not compile or has no capture group. opts may be NULL. */
int pflex_tput_regex_init(struct pflex_tput_regex *re, const struct pflex_tput_regex_opts *opts,
                          char *errbuf, size_t errsize);
void pflex_tput_regex_release(struct pflex_tput_regex *re);

/* Extracts the throughput from one line: 0 and *ret_value on a match,
 * -ENOENT when the line does not match or matches the skip pattern, -EINVAL when it matches but the
 * captured text is no positive finite number. ANSI colour codes are ignored. */
int pflex_tput_regex_match(const struct pflex_tput_regex *re, const char *line, double *ret_value);

/* Called with each throughput value extracted by pflex_tput_regex_feed. */
typedef int (*pflex_tput_fn)(double time_s, double value, void *userdata);

/* Feeds raw output bytes of the job (e.g. what a read() of its stdout pipe
 * returned); each complete line is matched and every value passed to fn with
 * time_s. Partial lines are kept for the next call; pass len 0 at end of
 * output to flush the last line. Returns 0, fn's non-zero return, or -ENOMEM. */
int pflex_tput_regex_feed(struct pflex_tput_regex *re, const char *data, size_t len, double time_s,
                          pflex_tput_fn fn, void *userdata);

#endif
