/* assert_near(a, b, tol): |a - b| <= tol in double precision, for the unit
 * tests. Debian 12's cmocka 1.1.5 has no double comparison, and its
 * assert_float_equal converts to float: 4576.0 and 4576.0002 compare equal
 * there whatever tolerance the test names. */
#ifndef PFLEX_TEST_ASSERT_NEAR_H
#define PFLEX_TEST_ASSERT_NEAR_H

#include <math.h>

#define assert_near(a, b, tol)                                                                     \
  do {                                                                                             \
    double a_ = (a), b_ = (b);                                                                     \
    if (!(fabs(a_ - b_) <= (tol)))                                                                 \
      fail_msg("%s = %.17g, expected %.17g +/- %g", #a, a_, b_, (double)(tol));                    \
  } while (0)

#endif
