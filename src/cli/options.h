/* Declarative command-line options, git's parse-options as the model: a
 * command describes each option once, in a table row (long name, argument
 * name, kind, destination field, help text), and the same table drives the
 * parser (built on getopt_long) and the text of `pflex help <command>`.
 *
 * A command keeps its option values in a struct of its own; each row names a
 * field of it by offset (the CLI_* row macros below check the field's type at
 * compile time). The parser writes the fields and reports every usage error
 * in one wording on stderr:
 *
 *   error: --cut: '0x1e' is not a number from 0 to 100
 *   try 'pflex help allocate'
 *
 * and the caller exits PFLEX_EXIT_USAGE (2). Numbers are decimal only (no
 * hex, no inf/nan). Example:
 *
 *   struct args { bool json; double cut; const char *out; };
 *   static const struct cli_option rows[] = {
 *       {CLI_DOUBLE("cut", "PCT", struct args, cut, 0, 100, "cut PCT percent of the power")},
 *       {CLI_STRING("out", "FILE", struct args, out, "write to FILE"), .flags = CLI_REQUIRED},
 *       {CLI_FLAG("json", struct args, json, "print JSON")},
 *       {CLI_END}};
 *   static const struct cli_spec spec = {.name = "demo", .usage = "pflex demo FILE [options]",
 *       .options = rows, .operands = "FILE", .min_operands = 1, .max_operands = 1};
 *   struct args a = {.cut = 10};
 *   struct cli_parsed p;
 *   int err = cli_parse(&spec, argc, argv, &a, &p);
 *   if (err) return cli_parse_status(err);   // 2 usage (already reported), 1 out of memory
 *   ... p.operands[0] ...
 *   cli_release(&spec, &a);                  // frees LIST and STRINGS fields
 */
#ifndef PFLEX_CLI_OPTIONS_H
#define PFLEX_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum cli_kind {
  CLI_KIND_END,     /* ends a table */
  CLI_KIND_FLAG,    /* bool: true when given; no argument */
  CLI_KIND_STRING,  /* const char *: the argument (points into argv) */
  CLI_KIND_STRINGS, /* struct cli_strings: each use appends its argument (repeatable) */
  CLI_KIND_DOUBLE,  /* double: a finite decimal number in [min, max] (see CLI_OPEN_*) */
  CLI_KIND_COUNT,   /* an unsigned integer field: a decimal whole number in [cmin, cmax] */
  CLI_KIND_LIST,    /* struct cli_list: numbers and a:b:step ranges, each in [min, max] */
  CLI_KIND_ENUM,    /* an int-sized field (int or an enum): the value of one allowed name */
  CLI_KIND_CUSTOM,  /* the row's parse function fills the field */
  CLI_KIND_INCLUDE, /* the rows of another table, their fields inside the field at offset */
};

/* Row flags. */
enum {
  CLI_REQUIRED = 1u << 0, /* the option must be given */
  CLI_OPEN_MIN = 1u << 1, /* DOUBLE/LIST: min itself is not allowed (> min) */
  CLI_OPEN_MAX = 1u << 2, /* DOUBLE/LIST: max itself is not allowed (< max) */
};

/* An allowed name of an ENUM option and the value it stores. */
struct cli_choice {
  const char *name;
  int value;
};

/* A LIST field: the numbers given, in order (malloc'd; cli_release frees). */
struct cli_list {
  double *v;
  size_t n;
};

/* A STRINGS field: every argument of a repeated option, in order (the array
 * is malloc'd, the strings point into argv; cli_release frees the array). */
struct cli_strings {
  const char **v;
  size_t n;
};

struct cli_option {
  enum cli_kind kind;
  const char *name; /* long name without "--" */
  char short_name;  /* optional one-letter alias (-o), 0 for none */
  const char *arg;  /* argument name shown in help and errors ("FILE"); NULL for a flag */
  size_t offset;    /* destination field: offset in the command's struct */
  size_t size;      /* and its size */
  double min, max;  /* DOUBLE, LIST: the allowed range (max may be INFINITY) */
  unsigned long long cmin, cmax;    /* COUNT: the allowed range (clamped to the field's type) */
  unsigned flags;                   /* CLI_REQUIRED, CLI_OPEN_MIN, CLI_OPEN_MAX */
  const struct cli_choice *choices; /* ENUM: the allowed names, ended by {NULL} ... */
  const char *(*choice_name)(int value);      /* ... or a name per value 0, 1, ... (NULL ends) */
  int (*parse)(const char *arg, void *field); /* CUSTOM: 0, or -EINVAL (the parser reports) */
  const char *expect; /* what a bad argument is not, e.g. "a list of GPU indexes such as 0,1 or
                         0-7"; NULL: said from the kind and range */
  const char *needs;  /* the name of an option this one needs ("out" for --append) */
  const struct cli_option *include; /* INCLUDE: the other table */
  const char *help; /* help text, wrapped by the printer; '\n' starts a new line; NULL hides it */
};

/* A command's (or subcommand's) options and help. */
struct cli_spec {
  const char *name;     /* "pfi", "twin check": names the command in help */
  const char *help_cmd; /* what 'pflex help X' needs for it ("twin"); NULL: name */
  const char *usage;    /* "pflex pfi RUNS.csv [options]" */
  const char *about;    /* what the command does, printed under the usage line; may be NULL */
  const struct cli_option *options; /* ended by {CLI_END}; may be NULL */
  const char *operands;             /* the operands' name in errors ("RUNS.csv") */
  unsigned min_operands, max_operands;
  bool in_order; /* stop at the first operand (options after it are operands too) */
  /* Groups of option names, space-separated, at most one of which may be
   * given ("json csv"); the array ends with NULL. */
  const char *const *exclusive;
  const char *notes; /* printed after the options (exit statuses, examples); may be NULL */
};

/* What cli_parse found besides the fields. */
#define CLI_MAX_ROWS 64
struct cli_parsed {
  char **operands; /* the arguments that are not options, in order (point into argv) */
  size_t noperands;
  /* internal: the rows of the table with INCLUDEs resolved, and which were given */
  size_t nrows;
  const struct cli_option *rows[CLI_MAX_ROWS];
  size_t base[CLI_MAX_ROWS];
  bool given[CLI_MAX_ROWS];
};

/* Parses argv[1..argc) (argv[0] is the command's name; getopt_long may permute
 * argv) into the fields of args by spec. 0; -EINVAL: a usage error, already
 * reported ("error: ..." and "try 'pflex help CMD'"); -ENOMEM (reported).
 * LIST/STRINGS fields may hold memory even on failure: call cli_release. */
int cli_parse(const struct cli_spec *spec, int argc, char **argv, void *args,
              struct cli_parsed *ret);

/* The exit status for cli_parse's error: 2 (usage) for -EINVAL, else 1. */
int cli_parse_status(int err);

/* True when option name (no "--") was given. */
bool cli_given(const struct cli_parsed *p, const char *name);

/* Frees the LIST and STRINGS fields of args (and zeroes them). */
void cli_release(const struct cli_spec *spec, void *args);

/* Reports a usage error found by the command itself, in the parser's wording:
 * "error: <message>" and "try 'pflex help CMD'". */
void cli_usage_error(const struct cli_spec *spec, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A command with subcommands given none (given NULL) or an unknown one, in
 * the parser's wording: "error: missing subcommand (CHOICES)" or "error:
 * unknown subcommand 'GIVEN' (CHOICES)", then "try 'pflex help CMD'".
 * Returns the usage exit status, 2. */
int cli_subcommand_error(const char *cmd, const char *given, const char *choices);

/* Prints spec's help: the usage line, the about text, the options (name,
 * argument, help wrapped at 80 columns) and the notes, every line prefixed by
 * indent spaces. */
void cli_help(FILE *out, const struct cli_spec *spec, int indent);

/* A finite decimal number (digits, sign, point, exponent: no hex, inf, nan,
 * spaces): 0 or -EINVAL. */
int cli_decimal(const char *s, double *ret);

/* A decimal whole number without sign: 0 or -EINVAL (also on overflow). */
int cli_decimal_count(const char *s, unsigned long long *ret);

/* A comma-separated list of decimal numbers and a:b:step ranges (step
 * default 1) into a malloc'd array: 0, -EINVAL, -ENOMEM. */
int cli_decimal_list(const char *s, double **ret_values, size_t *ret_n);

/* ---- row macros: the designators of one row, to be written inside braces;
 * more designators may follow (.flags, .needs, .expect, .short_name). ---- */

/* The field's offset, compiled only when the field has one of the types. */
#define CLI_FIELD_(T, F, ...) (offsetof(T, F) + 0 * sizeof(_Generic(((T *)0)->F, __VA_ARGS__)))
#define CLI_SIZE_(T, F) sizeof(((T *)0)->F)
/* The offset of an int-sized field (an int or an enum), else a compile error. */
#define CLI_INT_FIELD_(T, F)                                                                       \
  (offsetof(T, F) + 0 * sizeof(char[CLI_SIZE_(T, F) == sizeof(int) ? 1 : -1]))

#define CLI_END .kind = CLI_KIND_END

#define CLI_FLAG(NAME, T, F, HELP)                                                                 \
  .kind = CLI_KIND_FLAG, .name = NAME, .offset = CLI_FIELD_(T, F, bool : 1),                       \
  .size = CLI_SIZE_(T, F), .help = HELP

#define CLI_STRING(NAME, ARG, T, F, HELP)                                                          \
  .kind = CLI_KIND_STRING, .name = NAME, .arg = ARG, .offset = CLI_FIELD_(T, F, const char * : 1), \
  .size = CLI_SIZE_(T, F), .help = HELP

#define CLI_STRINGS(NAME, ARG, T, F, HELP)                                                         \
  .kind = CLI_KIND_STRINGS, .name = NAME, .arg = ARG,                                              \
  .offset = CLI_FIELD_(T, F, struct cli_strings : 1), .size = CLI_SIZE_(T, F), .help = HELP

#define CLI_DOUBLE(NAME, ARG, T, F, MIN, MAX, HELP)                                                \
  .kind = CLI_KIND_DOUBLE, .name = NAME, .arg = ARG, .offset = CLI_FIELD_(T, F, double : 1),       \
  .size = CLI_SIZE_(T, F), .min = (MIN), .max = (MAX), .help = HELP

#define CLI_COUNT(NAME, ARG, T, F, MIN, MAX, HELP)                                                 \
  .kind = CLI_KIND_COUNT, .name = NAME, .arg = ARG,                                                \
  .offset = CLI_FIELD_(T, F, unsigned char : 1, unsigned short : 1, unsigned : 1,                  \
                       unsigned long : 1, unsigned long long : 1),                                 \
  .size = CLI_SIZE_(T, F), .cmin = (MIN), .cmax = (MAX), .help = HELP

#define CLI_LIST(NAME, ARG, T, F, MIN, MAX, HELP)                                                  \
  .kind = CLI_KIND_LIST, .name = NAME, .arg = ARG,                                                 \
  .offset = CLI_FIELD_(T, F, struct cli_list : 1), .size = CLI_SIZE_(T, F), .min = (MIN),          \
  .max = (MAX), .help = HELP

/* F is an int or an enum (int-sized, checked when compiling); CHOICES a
 * struct cli_choice array ended by {NULL}. */
#define CLI_ENUM(NAME, ARG, T, F, CHOICES, HELP)                                                   \
  .kind = CLI_KIND_ENUM, .name = NAME, .arg = ARG, .offset = CLI_INT_FIELD_(T, F),                 \
  .size = CLI_SIZE_(T, F), .choices = (CHOICES), .help = HELP

/* As CLI_ENUM, the names from a function: NAMEFN(0), NAMEFN(1), ... until NULL. */
#define CLI_ENUM_FN(NAME, ARG, T, F, NAMEFN, HELP)                                                 \
  .kind = CLI_KIND_ENUM, .name = NAME, .arg = ARG, .offset = CLI_INT_FIELD_(T, F),                 \
  .size = CLI_SIZE_(T, F), .choice_name = (NAMEFN), .help = HELP

/* PARSE(arg, &field) fills the field: 0, or -EINVAL and the parser says
 * "--NAME: 'ARG' is not EXPECT". */
#define CLI_CUSTOM(NAME, ARG, T, F, PARSE, EXPECT, HELP)                                           \
  .kind = CLI_KIND_CUSTOM, .name = NAME, .arg = ARG, .offset = offsetof(T, F),                     \
  .size = CLI_SIZE_(T, F), .parse = (PARSE), .expect = EXPECT, .help = HELP

/* The rows of TABLE, whose fields live in field F of T. */
#define CLI_INCLUDE(T, F, TABLE)                                                                   \
  .kind = CLI_KIND_INCLUDE, .offset = offsetof(T, F), .size = CLI_SIZE_(T, F), .include = (TABLE)

#endif
