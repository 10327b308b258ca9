/* Declarative command-line options: the parser and the help printer (options.h). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/options.h"

#define HELP_WIDTH 80  /* columns of `pflex help` */
#define HELP_COLUMN 24 /* where an option's help text starts, at most */

/* ---- numbers ---- */

int cli_decimal(const char *s, double *ret) {
  /* strtod also reads hex, "inf", "nan" and leading spaces: allow only the
   * characters of a decimal number, then let strtod check the order. */
  if (!*s || s[strspn(s, "0123456789+-.eE")] != '\0') return -EINVAL;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (*end || errno || !isfinite(v)) return -EINVAL;
  *ret = v;
  return 0;
}

int cli_decimal_count(const char *s, unsigned long long *ret) {
  /* strtoull takes "-1" as a huge number and skips spaces: digits only. */
  if (!*s || s[strspn(s, "0123456789")] != '\0') return -EINVAL;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end || errno) return -EINVAL;
  *ret = v;
  return 0;
}

/* The number in [s, end) as cli_decimal reads it. */
static int decimal_span(const char *s, const char *end, double *ret) {
  char buf[64];
  size_t len = (size_t)(end - s);
  if (len == 0 || len >= sizeof buf) return -EINVAL;
  memcpy(buf, s, len);
  buf[len] = '\0';
  return cli_decimal(buf, ret);
}

/* One item of a list: "a" or "a:b" or "a:b:step" into *a, *b, *step. */
static int list_item(const char *p, const char *end, double *a, double *b, double *step) {
  const char *c1 = memchr(p, ':', (size_t)(end - p));
  *step = 1;
  if (!c1) {
    int err = decimal_span(p, end, a);
    *b = *a;
    return err;
  }
  const char *c2 = memchr(c1 + 1, ':', (size_t)(end - c1 - 1));
  if (decimal_span(p, c1, a) || decimal_span(c1 + 1, c2 ? c2 : end, b) ||
      (c2 && decimal_span(c2 + 1, end, step)))
    return -EINVAL;
  if (*step <= 0 || *b < *a || (*b - *a) / *step > 1e6) return -EINVAL;
  return 0;
}

int cli_decimal_list(const char *s, double **ret_values, size_t *ret_n) {
  double *v = NULL;
  size_t n = 0, cap = 0;
  const char *p = s;
  while (*p) {
    const char *comma = strchr(p, ',');
    const char *end = comma ? comma : p + strlen(p);
    double a, b, step;
    if (list_item(p, end, &a, &b, &step)) {
      free(v);
      return -EINVAL;
    }
    /* a + i * step, not repeated addition: 0.1 steps must not drift past b. */
    size_t count = (size_t)floor((b - a) / step + 1e-9) + 1;
    for (size_t i = 0; i < count; i++) {
      if (n == cap) {
        cap = cap ? 2 * cap : 16;
        double *nv = realloc(v, cap * sizeof *nv);
        if (!nv) {
          free(v);
          return -ENOMEM;
        }
        v = nv;
      }
      v[n++] = a + (double)i * step;
    }
    p = comma ? comma + 1 : end;
  }
  if (n == 0) {
    free(v);
    return -EINVAL;
  }
  *ret_values = v;
  *ret_n = n;
  return 0;
}

/* ---- the rows of a table, INCLUDEs resolved ---- */

static int flatten(const struct cli_option *t, size_t base, struct cli_parsed *p) {
  for (; t && t->kind != CLI_KIND_END; t++) {
    if (t->kind == CLI_KIND_INCLUDE) {
      if (flatten(t->include, base + t->offset, p)) return -E2BIG;
      continue;
    }
    if (p->nrows == CLI_MAX_ROWS) return -E2BIG;
    p->rows[p->nrows] = t;
    p->base[p->nrows] = base + t->offset;
    p->given[p->nrows++] = false;
  }
  return 0;
}

static void resolve(const struct cli_spec *spec, struct cli_parsed *p) {
  memset(p, 0, sizeof *p);
  if (flatten(spec->options, 0, p)) abort(); /* a table over CLI_MAX_ROWS is a programming error */
}

static long find_row(const struct cli_parsed *p, const char *name, size_t len) {
  for (size_t i = 0; i < p->nrows; i++)
    if (strlen(p->rows[i]->name) == len && strncmp(p->rows[i]->name, name, len) == 0)
      return (long)i;
  return -1;
}

bool cli_given(const struct cli_parsed *p, const char *name) {
  long i = find_row(p, name, strlen(name));
  return i >= 0 && p->given[i];
}

/* ---- messages ---- */

static const char *help_cmd(const struct cli_spec *spec) {
  return spec->help_cmd ? spec->help_cmd : spec->name;
}

static void verror(const struct cli_spec *spec, const char *fmt, va_list ap) {
  fputs("error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\ntry 'pflex help %s'\n", help_cmd(spec));
}

void cli_usage_error(const struct cli_spec *spec, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  verror(spec, fmt, ap);
  va_end(ap);
}

int cli_subcommand_error(const char *cmd, const char *given, const char *choices) {
  if (given)
    fprintf(stderr, "error: unknown subcommand '%s' (%s)\n", given, choices);
  else
    fprintf(stderr, "error: missing subcommand (%s)\n", choices);
  fprintf(stderr, "try 'pflex help %s'\n", cmd);
  return 2;
}

int cli_parse_status(int err) {
  return err == -EINVAL ? 2 : 1;
}

static unsigned long long count_type_max(size_t size) {
  return size >= sizeof(unsigned long long) ? ULLONG_MAX : (1ULL << (8 * size)) - 1;
}

/* "a number from 0 to 100", "a number > 0", "a number in [0, 1)". */
static void range_text(char *buf, size_t size, const char *what, double lo, double hi,
                       unsigned flags) {
  bool open_lo = flags & CLI_OPEN_MIN, open_hi = flags & CLI_OPEN_MAX;
  if (isinf(hi) && isinf(lo))
    snprintf(buf, size, "%s", what);
  else if (isinf(hi))
    snprintf(buf, size, "%s %s %g", what, open_lo ? ">" : ">=", lo);
  else if (!open_lo && !open_hi)
    snprintf(buf, size, "%s from %g to %g", what, lo, hi);
  else
    snprintf(buf, size, "%s in %c%g, %g%c", what, open_lo ? '(' : '[', lo, hi, open_hi ? ')' : ']');
}

static void enum_text(char *buf, size_t size, const struct cli_option *o) {
  size_t used = (size_t)snprintf(buf, size, "one of ");
  for (int i = 0; used < size; i++) {
    const char *name = o->choices ? o->choices[i].name : o->choice_name(i);
    if (!name) break;
    used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "", name);
  }
}

/* What option o's argument must be, for "--NAME: 'ARG' is not ...". */
static void expect_text(const struct cli_option *o, char *buf, size_t size) {
  if (o->expect) {
    snprintf(buf, size, "%s", o->expect);
    return;
  }
  switch (o->kind) {
  case CLI_KIND_DOUBLE: range_text(buf, size, "a number", o->min, o->max, o->flags); break;
  case CLI_KIND_LIST:
    range_text(buf, size, "a list of numbers", o->min, o->max, o->flags);
    snprintf(buf + strlen(buf), size - strlen(buf), " (e.g. 1,2,5 or 0:40:5)");
    break;
  case CLI_KIND_COUNT: {
    unsigned long long hi = o->cmax < count_type_max(o->size) ? o->cmax : count_type_max(o->size);
    if (hi == ULLONG_MAX && o->cmin == 0)
      snprintf(buf, size, "a whole number");
    else if (hi == ULLONG_MAX)
      snprintf(buf, size, "a whole number >= %llu", o->cmin);
    else
      snprintf(buf, size, "a whole number from %llu to %llu", o->cmin, hi);
    break;
  }
  case CLI_KIND_ENUM: enum_text(buf, size, o); break;
  default: snprintf(buf, size, "valid"); break;
  }
}

/* ---- values ---- */

static bool in_range(double v, const struct cli_option *o) {
  if (o->flags & CLI_OPEN_MIN ? !(v > o->min) : !(v >= o->min)) return false;
  if (o->flags & CLI_OPEN_MAX ? !(v < o->max) : !(v <= o->max)) return false;
  return true;
}

static int set_count(const struct cli_option *o, void *field, const char *arg) {
  unsigned long long v, hi = o->cmax < count_type_max(o->size) ? o->cmax : count_type_max(o->size);
  if (cli_decimal_count(arg, &v) || v < o->cmin || v > hi) return -EINVAL;
  switch (o->size) {
  case 1: *(unsigned char *)field = (unsigned char)v; break;
  case 2: *(unsigned short *)field = (unsigned short)v; break;
  case 4: *(uint32_t *)field = (uint32_t)v; break;
  default: *(uint64_t *)field = v; break;
  }
  return 0;
}

static int set_enum(const struct cli_option *o, void *field, const char *arg) {
  for (int i = 0;; i++) {
    const char *name = o->choices ? o->choices[i].name : o->choice_name(i);
    if (!name) return -EINVAL;
    if (strcmp(name, arg) == 0) {
      int v = o->choices ? o->choices[i].value : i;
      memcpy(field, &v, sizeof v); /* int or an int-sized enum (checked when compiling) */
      return 0;
    }
  }
}

static int set_list(const struct cli_option *o, struct cli_list *l, const char *arg) {
  double *v;
  size_t n;
  int err = cli_decimal_list(arg, &v, &n);
  if (err) return err;
  for (size_t i = 0; i < n; i++)
    if (!in_range(v[i], o)) {
      free(v);
      return -EINVAL;
    }
  free(l->v); /* given again: the last one counts */
  l->v = v;
  l->n = n;
  return 0;
}

static int append_string(struct cli_strings *s, const char *arg) {
  const char **nv = realloc(s->v, (s->n + 1) * sizeof *nv);
  if (!nv) return -ENOMEM;
  s->v = nv;
  s->v[s->n++] = arg;
  return 0;
}

/* Stores arg into option o's field: 0, -EINVAL (bad value), -ENOMEM. */
static int set_value(const struct cli_option *o, void *field, const char *arg) {
  double d;
  switch (o->kind) {
  case CLI_KIND_FLAG: *(bool *)field = true; return 0;
  case CLI_KIND_STRING: *(const char **)field = arg; return 0;
  case CLI_KIND_STRINGS: return append_string(field, arg);
  case CLI_KIND_DOUBLE:
    if (cli_decimal(arg, &d) || !in_range(d, o)) return -EINVAL;
    *(double *)field = d;
    return 0;
  case CLI_KIND_COUNT: return set_count(o, field, arg);
  case CLI_KIND_LIST: return set_list(o, field, arg);
  case CLI_KIND_ENUM: return set_enum(o, field, arg);
  case CLI_KIND_CUSTOM: return o->parse(arg, field) ? -EINVAL : 0;
  default: return -EINVAL;
  }
}

/* ---- parsing ---- */

static void usage_error(const struct cli_spec *spec, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void usage_error(const struct cli_spec *spec, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  verror(spec, fmt, ap);
  va_end(ap);
}

/* The getopt tables of p's rows: long options valued 256 + row, and the
 * short letters. */
static void getopt_tables(const struct cli_spec *spec, const struct cli_parsed *p,
                          struct option *lo, char *shorts) {
  char *s = shorts;
  if (spec->in_order) *s++ = '+';
  *s++ = ':'; /* a missing argument comes back as ':' */
  for (size_t i = 0; i < p->nrows; i++) {
    const struct cli_option *o = p->rows[i];
    int has = o->kind == CLI_KIND_FLAG ? no_argument : required_argument;
    lo[i] = (struct option){o->name, has, NULL, 256 + (int)i};
    if (o->short_name) {
      *s++ = o->short_name;
      if (has) *s++ = ':';
    }
  }
  lo[p->nrows] = (struct option){NULL, 0, NULL, 0};
  *s = '\0';
}

static long row_of_short(const struct cli_parsed *p, int c) {
  for (size_t i = 0; i < p->nrows; i++)
    if (p->rows[i]->short_name && p->rows[i]->short_name == c) return (long)i;
  return -1;
}

/* Reports what getopt_long refused: arg is the word it stopped at. */
static void report_refused(const struct cli_spec *spec, const struct cli_parsed *p, int c,
                           const char *arg) {
  long row = optopt >= 256 ? optopt - 256 : optopt ? row_of_short(p, optopt) : -1;
  if (c == ':' && row >= 0) {
    const struct cli_option *o = p->rows[row];
    usage_error(spec, "--%s needs a value (%s)", o->name, o->arg ? o->arg : "an argument");
  } else if (row >= 0 && p->rows[row]->kind == CLI_KIND_FLAG) {
    usage_error(spec, "--%s takes no value", p->rows[row]->name);
  } else if (optopt && optopt < 256) {
    usage_error(spec, "unknown option '-%c'", optopt);
  } else {
    /* An unknown long option, or a prefix of several. */
    const char *name = arg + 2;
    size_t len = strcspn(name, "="), matches = 0;
    for (size_t i = 0; i < p->nrows; i++)
      matches += strncmp(p->rows[i]->name, name, len) == 0;
    usage_error(spec, matches > 1 ? "ambiguous option '--%.*s'" : "unknown option '--%.*s'",
                (int)len, name);
  }
}

/* The checks after every option was read: operands, required, needs, exclusive. */
static int check_parsed(const struct cli_spec *spec, const struct cli_parsed *p) {
  const char *what = spec->operands ? spec->operands : "argument";
  if (p->noperands > spec->max_operands) {
    if (spec->max_operands == 0)
      usage_error(spec, "unexpected argument '%s'", p->operands[0]);
    else {
      char count[32];
      snprintf(count, sizeof count, "%u", spec->max_operands);
      usage_error(spec, "unexpected argument '%s' (expected %s%s %s)",
                  p->operands[spec->max_operands],
                  spec->min_operands == spec->max_operands ? "" : "at most ",
                  spec->max_operands == 1 ? "one" : count, what);
    }
    return -EINVAL;
  }
  if (p->noperands < spec->min_operands) {
    usage_error(spec, "missing %s", what);
    return -EINVAL;
  }
  for (size_t i = 0; i < p->nrows; i++) {
    const struct cli_option *o = p->rows[i];
    if ((o->flags & CLI_REQUIRED) && !p->given[i]) {
      usage_error(spec, "--%s %s is required", o->name, o->arg ? o->arg : "");
      return -EINVAL;
    }
    if (o->needs && p->given[i] && !cli_given(p, o->needs)) {
      usage_error(spec, "--%s needs --%s", o->name, o->needs);
      return -EINVAL;
    }
  }
  for (size_t g = 0; spec->exclusive && spec->exclusive[g]; g++) {
    const char *first = NULL, *s = spec->exclusive[g];
    size_t first_len = 0;
    while (*s) {
      size_t len = strcspn(s, " ");
      long r = find_row(p, s, len);
      if (r >= 0 && p->given[r]) {
        if (first) {
          usage_error(spec, "--%.*s and --%.*s exclude each other", (int)first_len, first, (int)len,
                      s);
          return -EINVAL;
        }
        first = s;
        first_len = len;
      }
      s += len + strspn(s + len, " ");
    }
  }
  return 0;
}

int cli_parse(const struct cli_spec *spec, int argc, char **argv, void *args,
              struct cli_parsed *ret) {
  resolve(spec, ret);
  struct option lo[CLI_MAX_ROWS + 1];
  char shorts[3 * CLI_MAX_ROWS + 3];
  getopt_tables(spec, ret, lo, shorts);
  optind = 0; /* glibc: start afresh (a command may parse more than once) */
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
    long row = c >= 256 ? c - 256 : row_of_short(ret, c);
    if (c == '?' || c == ':' || row < 0) {
      report_refused(spec, ret, c, argv[optind - 1]);
      return -EINVAL;
    }
    const struct cli_option *o = ret->rows[row];
    int err = set_value(o, (char *)args + ret->base[row], optarg);
    if (err == -ENOMEM) {
      fprintf(stderr, "error: out of memory\n");
      return err;
    }
    if (err) {
      char want[512];
      expect_text(o, want, sizeof want);
      usage_error(spec, "--%s: '%s' is not %s", o->name, optarg, want);
      return err;
    }
    ret->given[row] = true;
  }
  ret->operands = argv + optind;
  ret->noperands = (size_t)(argc - optind);
  return check_parsed(spec, ret);
}

void cli_release(const struct cli_spec *spec, void *args) {
  struct cli_parsed p;
  resolve(spec, &p);
  for (size_t i = 0; i < p.nrows; i++) {
    void *field = (char *)args + p.base[i];
    if (p.rows[i]->kind == CLI_KIND_LIST) {
      struct cli_list *l = field;
      free(l->v);
      *l = (struct cli_list){0};
    } else if (p.rows[i]->kind == CLI_KIND_STRINGS) {
      struct cli_strings *s = field;
      free(s->v);
      *s = (struct cli_strings){0};
    }
  }
}

/* ---- help ---- */

/* Prints text from column col, wrapped at HELP_WIDTH with continuation lines
 * indented by indent; '\n' in text breaks the line (its leading spaces kept).
 * Ends without a newline. */
static void wrap(FILE *out, const char *s, int col, int indent) {
  bool fresh = true, pending = false; /* nothing on this line yet; indent still to print */
  while (*s) {
    if (*s == '\n') {
      fputc('\n', out);
      pending = fresh = true;
      col = indent;
      s++;
      size_t lead = strspn(s, " ");
      if (lead && s[lead] && s[lead] != '\n') {
        fprintf(out, "%*s", indent + (int)lead, "");
        pending = false;
        col += (int)lead;
      }
      s += lead;
      continue;
    }
    if (*s == ' ') {
      s++;
      continue;
    }
    int w = (int)strcspn(s, " \n");
    if (!fresh && col + 1 + w > HELP_WIDTH) {
      fputc('\n', out);
      pending = fresh = true;
      col = indent;
    }
    if (pending) fprintf(out, "%*s", indent, "");
    pending = false;
    if (!fresh) {
      fputc(' ', out);
      col++;
    }
    fwrite(s, 1, (size_t)w, out);
    col += w;
    fresh = false;
    s += w;
  }
}

/* "  -o, --out FILE"; pad: the table has short names, align the long ones. */
static int left_text(char *buf, size_t size, const struct cli_option *o, bool pad) {
  char sh[8] = "";
  if (o->short_name)
    snprintf(sh, sizeof sh, "-%c, ", o->short_name);
  else if (pad)
    snprintf(sh, sizeof sh, "    ");
  return snprintf(buf, size, "  %s--%s%s%s", sh, o->name, o->arg ? " " : "", o->arg ? o->arg : "");
}

void cli_help(FILE *out, const struct cli_spec *spec, int indent) {
  struct cli_parsed p;
  resolve(spec, &p);
  fprintf(out, "%*susage: %s\n", indent, "", spec->usage);
  if (spec->about) {
    fprintf(out, "%*s", indent, "");
    wrap(out, spec->about, indent, indent);
    fputc('\n', out);
  }
  int col = 0;
  char left[256];
  bool pad = false;
  for (size_t i = 0; i < p.nrows; i++)
    pad |= p.rows[i]->short_name != 0;
  /* The help column: just right of the longest option that fits before HELP_COLUMN. */
  for (size_t i = 0; i < p.nrows; i++) {
    int w = left_text(left, sizeof left, p.rows[i], pad) + 2;
    if (p.rows[i]->help && w > col && w <= HELP_COLUMN) col = w;
  }
  if (col == 0) col = HELP_COLUMN;
  bool any = false;
  for (size_t i = 0; i < p.nrows; i++) {
    const struct cli_option *o = p.rows[i];
    if (!o->help) continue;
    if (!any) fprintf(out, "\n%*soptions:\n", indent, "");
    any = true;
    int w = left_text(left, sizeof left, o, pad);
    fprintf(out, "%*s%s", indent, "", left);
    if (w + 2 > col) {
      fprintf(out, "\n%*s", indent + col, "");
    } else {
      fprintf(out, "%*s", col - w, "");
    }
    wrap(out, o->help, indent + col, indent + col);
    fputc('\n', out);
  }
  if (spec->notes) {
    fprintf(out, "\n%*s", indent, "");
    wrap(out, spec->notes, indent, indent);
    fputc('\n', out);
  }
}
