/* UTF-8 validity (RFC 3629), for text read from files that pflex writes back
 * as JSON or CSV: a name that is not UTF-8 is refused where it is read, with
 * its line, not when a later JSON writer cannot encode it. */
#ifndef PFLEX_BASE_UTF8_H
#define PFLEX_BASE_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* True when the NUL-terminated s is valid UTF-8: no stray continuation byte,
 * no truncated or overlong sequence, no UTF-16 surrogate, nothing above
 * U+10FFFF. When not, *ret_offset (may be NULL) is the offset of the first
 * bad byte. */
bool pflex__utf8_valid(const char *s, size_t *ret_offset);

#endif
