/* Tests of the PLplot wrapper (include/pflex/plot.h). The cairo driver's font
 * stack (fontconfig, pango) keeps one-time allocations until exit, which
 * valgrind reports as leaks that are not pflex's: under valgrind the tests
 * that render are skipped (say so), unless valgrind is given
 * tests/valgrind-plplot.supp and PFLEX_PLOT_UNDER_VALGRIND=1. LeakSanitizer
 * is told below. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "pflex/curves_figure.h"
#include "pflex/plot.h"
#include "pflex/runs.h"

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define PFLEX_ON_VALGRIND() (RUNNING_ON_VALGRIND)
#endif
#endif
#ifndef PFLEX_ON_VALGRIND
#define PFLEX_ON_VALGRIND() 0
#endif

static void skip_render_under_valgrind(void) {
  const char *force = getenv("PFLEX_PLOT_UNDER_VALGRIND");
  if (PFLEX_ON_VALGRIND() && !(force && strcmp(force, "1") == 0)) {
    fprintf(stderr, "skipped under valgrind: the cairo font stack keeps allocations to exit "
                    "(run with --suppressions=tests/valgrind-plplot.supp and "
                    "PFLEX_PLOT_UNDER_VALGRIND=1)\n");
    skip();
  }
}

/* Argument checks that return before PLplot is touched. */
static void test_plot_args(void **state) {
  (void)state;
  assert_string_equal(pflex_plot_device("a.PNG"), "pngcairo");
  assert_string_equal(pflex_plot_device("dir.v/a.svg"), "svg");
  assert_string_equal(pflex_plot_device("a.pdf"), "pdfcairo");
  assert_null(pflex_plot_device("a.jpg"));
  assert_null(pflex_plot_device("noext"));
  double x[] = {0, 1}, y[] = {0, 1};
  struct pflex_plot_series s[] = {{.x = x, .y = y, .n = 2}};
  struct pflex_plot_panel p[3];
  for (int i = 0; i < 3; i++)
    p[i] = (struct pflex_plot_panel){
        .xmin = NAN, .xmax = NAN, .ymin = NAN, .ymax = NAN, .series = s, .nseries = 1};
  struct pflex_plot fig = {.cols = 1, .rows = 2, .panels = p, .npanels = 3};
  /* a grid too small for the panels */
  assert_int_equal(pflex_plot_render(&fig, "/tmp/pflex-never.svg"), -EINVAL);
  fig.cols = 2;
  assert_int_equal(pflex_plot_render(&fig, "/tmp/x.jpg"), -EINVAL);
  fig.npanels = 0;
  assert_int_equal(pflex_plot_render(&fig, "/tmp/pflex-never.svg"), -EINVAL);
  assert_int_equal(pflex_plot_render(NULL, "/tmp/pflex-never.svg"), -EINVAL);
  fig.npanels = 1;
  /* an output that cannot be created */
  assert_int_equal(pflex_plot_render(&fig, "/nonexistent-dir/x.svg"), -EIO);
}

/* Under LeakSanitizer: fontconfig/cairo (loaded by PLplot's cairo driver)
 * keep one-time allocations to exit; they are not pflex's. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
  return "leak:libfontconfig\nleak:libcairo\nleak:libpango\nleak:libglib\nleak:libgobject\n"
         "leak:libharfbuzz\nleak:libplplot\nleak:libfreetype\n";
}

/* Renders fig to a fresh SVG file and returns its text (NUL-terminated,
 * free it), its length in *ret_len; the file is removed. */
static char *render_svg(const struct pflex_plot *fig, size_t *ret_len) {
  char path[] = "/tmp/pflex-test-plot-XXXXXX.svg";
  int fd = mkstemps(path, 4);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(pflex_plot_render(fig, path), 0);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  char *buf = calloc(1, 1 << 20);
  assert_non_null(buf);
  size_t n = fread(buf, 1, (1 << 20) - 1, f);
  fclose(f);
  unlink(path);
  assert_true(n > 0);
  *ret_len = n;
  return buf;
}

static void test_plot(void **state) {
  (void)state;
  skip_render_under_valgrind();
  double x[] = {0, 0.5, 1}, y[] = {0, 0.7, 1};
  struct pflex_plot_series s[] = {
      {.label = "curve", .x = x, .y = y, .n = 3, .style = PFLEX_PLOT_LINE_POINTS, .color = -1}};
  struct pflex_plot_panel p = {.title = "t",
                               .xlabel = "x",
                               .ylabel = "y",
                               .xmin = NAN,
                               .xmax = NAN,
                               .ymin = 0,
                               .ymax = 1,
                               .series = s,
                               .nseries = 1,
                               .legend = true};
  struct pflex_plot fig = {.panels = &p, .npanels = 1};
  size_t n;
  char *svg = render_svg(&fig, &n);
  assert_non_null(strstr(svg, "<svg"));
  free(svg);
}

static void test_multi_panel_png(void **state) {
  (void)state;
  skip_render_under_valgrind();
  char path[] = "/tmp/pflex-test-plot-XXXXXX.png";
  int fd = mkstemps(path, 4);
  assert_true(fd >= 0);
  close(fd);
  double x[] = {0, 1, 2}, y1[] = {1, 2, 3}, y2[] = {3, NAN, 1};
  struct pflex_plot_series s[] = {{.label = "a", .x = x, .y = y1, .n = 3},
                                  {.label = "b",
                                   .x = x,
                                   .y = y2,
                                   .n = 3,
                                   .style = PFLEX_PLOT_POINTS,
                                   .dash = PFLEX_PLOT_DOTTED,
                                   .color = 3}};
  struct pflex_plot_panel p[3];
  for (int i = 0; i < 3; i++)
    p[i] = (struct pflex_plot_panel){.title = "p",
                                     .xmin = NAN,
                                     .xmax = NAN,
                                     .ymin = NAN,
                                     .ymax = NAN,
                                     .series = s,
                                     .nseries = 2,
                                     .legend = i == 0,
                                     .grid = true};
  struct pflex_plot fig = {
      .title = "three panels", .cols = 2, .rows = 2, .panels = p, .npanels = 3};
  assert_int_equal(pflex_plot_render(&fig, path), 0);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  unsigned char sig[8] = {0};
  assert_int_equal(fread(sig, 1, 8, f), 8);
  fclose(f);
  /* the PNG signature */
  assert_memory_equal(sig, "\x89PNG\r\n\x1a\n", 8);
  unlink(path);
}

/* Each legend position draws a different picture: the legend box moves (and
 * OUTSIDE_RIGHT narrows the panel), so no two SVGs are byte-identical. */
static char *render_svg_with_legend(enum pflex_plot_legend_pos pos, size_t *ret_len) {
  double x[] = {0, 0.5, 1}, y[] = {0, 0.7, 1};
  struct pflex_plot_series s[] = {{.label = "a", .x = x, .y = y, .n = 3, .color = -1}};
  struct pflex_plot_panel p = {.xmin = NAN, .xmax = NAN, .ymin = 0, .ymax = 1, .series = s,
                               .nseries = 1, .legend = true, .legend_pos = pos};
  struct pflex_plot fig = {.panels = &p, .npanels = 1};
  size_t n;
  char *buf = render_svg(&fig, &n);
  /* cairo numbers its surfaces per process ("surface6"): drop those digits so
   * that only the drawing is compared. */
  buf[n] = '\0';
  size_t out = 0;
  for (size_t i = 0; i < n; i++) {
    buf[out++] = buf[i];
    if (out >= 7 && memcmp(buf + out - 7, "surface", 7) == 0)
      while (i + 1 < n && buf[i + 1] >= '0' && buf[i + 1] <= '9') i++;
  }
  *ret_len = out;
  return buf;
}

static void test_legend_positions(void **state) {
  (void)state;
  skip_render_under_valgrind();
  enum pflex_plot_legend_pos pos[] = {PFLEX_PLOT_LEGEND_TOP_LEFT, PFLEX_PLOT_LEGEND_TOP_RIGHT,
                                      PFLEX_PLOT_LEGEND_BOTTOM_LEFT,
                                      PFLEX_PLOT_LEGEND_BOTTOM_RIGHT,
                                      PFLEX_PLOT_LEGEND_OUTSIDE_RIGHT};
  char *svg[5];
  size_t len[5];
  for (int i = 0; i < 5; i++) svg[i] = render_svg_with_legend(pos[i], &len[i]);
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < i; j++)
      assert_false(len[i] == len[j] && memcmp(svg[i], svg[j], len[i]) == 0);
  /* ... while the same position twice draws the same picture. */
  size_t again_len;
  char *again = render_svg_with_legend(pos[0], &again_len);
  assert_true(again_len == len[0] && memcmp(again, svg[0], len[0]) == 0);
  free(again);
  for (int i = 0; i < 5; i++) free(svg[i]);
}

/* The normalized-curve figure: three groups (two dense PT, one MoE FT), each
 * run relative to its group's uncapped run, in the arch x task panels, each
 * panel led by the diagonal. */
static void add_run(struct pflex_runset *set, const char *group, enum pflex_arch arch,
                    enum pflex_task task, double cap, double power, double tput) {
  struct pflex_run r = {.group = (char *)group,
                        .gpu = "H200",
                        .gpus = 8,
                        .cap_w = cap,
                        .power_w = power,
                        .tput = tput,
                        .arch = arch,
                        .task = task};
  assert_int_equal(pflex_runset_append(set, &r), 0);
}

static void test_curves_figure(void **state) {
  (void)state;
  struct pflex_runset set;
  pflex_runset_init(&set);
  add_run(&set, "a", PFLEX_ARCH_DENSE, PFLEX_TASK_PT, 700, 5000, 1000);
  add_run(&set, "a", PFLEX_ARCH_DENSE, PFLEX_TASK_PT, 350, 2500, 800);
  add_run(&set, "b", PFLEX_ARCH_DENSE, PFLEX_TASK_PT, 700, 4000, 500);
  add_run(&set, "m", PFLEX_ARCH_MOE, PFLEX_TASK_FT, 700, 6000, 300);
  add_run(&set, "m", PFLEX_ARCH_MOE, PFLEX_TASK_FT, 200, 1500, 150);
  struct pflex_group *groups;
  size_t ng;
  assert_int_equal(pflex_runset_groups(&set, &groups, &ng), 0);
  struct pflex_curves_figure f;
  assert_int_equal(pflex_curves_figure_build(&set, groups, ng, "t", &f), 0);
  assert_string_equal(f.plot.title, "t");
  assert_int_equal(f.plot.npanels, 4);
  assert_string_equal(f.panels[0].title, "Dense pretraining (2 groups)");
  assert_string_equal(f.panels[1].title, "Dense LoRA fine-tuning (0 groups)");
  assert_string_equal(f.panels[3].title, "MoE LoRA fine-tuning (1 groups)");
  assert_int_equal(f.panels[0].nseries, 3);
  assert_int_equal(f.panels[1].nseries, 1);
  assert_int_equal(f.panels[3].nseries, 2);
  for (int k = 0; k < 4; k++)
    assert_string_equal(f.panels[k].series[0].label, "P/Pmax = T/Tmax");
  /* Group a: caps ascending, relative to the 700 W run. */
  const struct pflex_plot_series *a = &f.panels[0].series[1];
  assert_int_equal(a->n, 2);
  assert_true(a->x[0] == 0.5 && a->y[0] == 0.8 && a->x[1] == 1 && a->y[1] == 1);
  const struct pflex_plot_series *m = &f.panels[3].series[1];
  assert_true(m->x[0] == 0.25 && m->y[0] == 0.5);
  pflex_curves_figure_release(&f);
  pflex_groups_free(groups, ng);
  pflex_runset_release(&set);
}

/* "&#xNN;" for every character of the ASCII text s: how PLplot's svg driver
 * writes the characters of a <text> element. */
static void svg_encode(const char *s, char *out, size_t size) {
  size_t o = 0;
  for (; *s && o + 8 < size; s++) o += (size_t)snprintf(out + o, size - o, "&#x%x;", (unsigned char)*s);
  out[o] = '\0';
}

/* SVG text is text: the title, the note, a legend entry and an x tick label
 * are <text> elements, not glyph outlines. */
static void test_svg_text(void **state) {
  (void)state;
  skip_render_under_valgrind();
  double x[] = {1, 2, 3}, y[] = {1, 0.5, 0.8};
  const char *ticks[] = {"group one", "group two", "group three"};
  struct pflex_plot_series s[] = {{.label = "series label", .x = x, .y = y, .n = 3,
                                   .style = PFLEX_PLOT_LINE_POINTS, .color = 2,
                                   .dash = PFLEX_PLOT_DASHDOT, .marker = "\u25B2"}};
  struct pflex_plot_panel p = {.xmin = 0.5, .xmax = 3.5, .ymin = NAN, .ymax = NAN, .series = s,
                               .nseries = 1, .legend = true, .xticks = ticks, .nxticks = 3,
                               .bottom = 0.3};
  struct pflex_plot fig = {.title = "figure title", .panels = &p, .npanels = 1,
                           .note = "data: simulated"};
  size_t n;
  char *buf = render_svg(&fig, &n);
  assert_non_null(strstr(buf, "<text"));
  const char *want[] = {"figure title", "data: simulated", "series label", "group three"};
  for (size_t k = 0; k < 4; k++) {
    char enc[512];
    svg_encode(want[k], enc, sizeof enc);
    assert_non_null(strstr(buf, enc));
  }
  char tri[64];
  snprintf(tri, sizeof tri, "&#x%x;", 0x25B2); /* the marker: in the plot and the legend */
  char *first = strstr(buf, tri);
  assert_non_null(first);
  assert_non_null(strstr(first + 1, tri));
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plot_args), cmocka_unit_test(test_svg_text),
      cmocka_unit_test(test_plot),
      cmocka_unit_test(test_multi_panel_png),
      cmocka_unit_test(test_legend_positions),
      cmocka_unit_test(test_curves_figure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
