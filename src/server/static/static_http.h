/* static_http.h — the pure HTTP parts of static file serving: mapping a
 * normalized path to a relative file name, Range (RFC 9110 §14), HTTP-dates
 * (§5.6.7), entity-tags and conditional requests (§8.8, §13), and
 * Accept-Encoding (§12.5.3). No I/O, no allocation: unit-tested alone. */
#ifndef SPINDLE_STATIC_HTTP_H
#define SPINDLE_STATIC_HTTP_H

#include "spindle.h"

#include <stddef.h>
#include <stdint.h>

/* Longest relative path under a root that is served (bytes, with NUL). */
#define STATIC_PATH_MAX 4096
/* "Sun, 06 Nov 1994 08:49:37 GMT" and its NUL. */
#define STATIC_DATE_CAP 30
/* '"' 16 hex '-' 16 hex "-gz" '"' and NUL. */
#define STATIC_ETAG_CAP 48

/* Turns the part of a normalized path below the mount prefix (rest[0..len),
 * no leading '/') into a relative file name in out: each segment percent-
 * decoded. Refused (-1, answered 404): a segment that decodes to contain
 * '/' or NUL ("%2F", "%00"), a segment starting with '.' (dotfiles such as
 * .git and .env, and "." / ".." however encoded), an empty segment other
 * than a trailing one, a malformed escape, a name longer than cap - 1.
 * An empty rest gives ".". *trailing_slash says whether rest ended in '/'.
 * Returns the length of out. */
long static_rel_path(const char *rest, size_t len, char *out, size_t cap, int *trailing_slash);

/* The outcome of a Range field for a representation of a given size. */
typedef enum static_range {
    STATIC_RANGE_NONE,          /* absent, malformed, or another unit: send 200 */
    STATIC_RANGE_ONE,           /* one satisfiable range: 206 with *start, *count */
    STATIC_RANGE_MULTI,         /* several range-specs: spindle sends 200 whole */
    STATIC_RANGE_UNSATISFIABLE, /* 416 with Content-Range: bytes * / size */
} static_range;

/* Parses a Range field value (RFC 9110 §14.1.2: "bytes=a-b", "bytes=a-",
 * "bytes=-n", comma-separated, OWS around commas and after '=' allowed).
 * Numbers too large for 64 bits saturate (a huge first-pos is past the end,
 * a huge last-pos or suffix-length means "to the end"/"everything"). A
 * range-spec whose last-pos is below its first-pos ("bytes=5-2"), a first-
 * pos at or past the end, and "bytes=-0" are unsatisfiable (§14.1.1). With
 * several range-specs of which at least one is satisfiable: MULTI. */
static_range static_range_parse(const char *v, size_t len, uint64_t size, uint64_t *start,
                                uint64_t *count);

/* Parses an HTTP-date in any of the three formats a recipient must accept
 * (RFC 9110 §5.6.7: IMF-fixdate, RFC 850 with a two-digit year read as
 * 1970..2069, asctime). 0 and *t (seconds since the epoch) or -1. */
int static_date_parse(const char *v, size_t len, int64_t *t);

/* Formats t as an IMF-fixdate into out (STATIC_DATE_CAP bytes). */
void static_date_format(int64_t t, char *out);

/* A strong entity-tag from a file's size and modification time in
 * nanoseconds: "\"SIZEHEX-MTIMEHEX\"", with "-gz" before the closing quote
 * for the precompressed variant (a different content coding is a different
 * representation, RFC 9110 §8.8.3). Returns its length. */
size_t static_etag_format(char *out, uint64_t size, uint64_t mtime_ns, int gz);

/* Whether the entity-tag etag matches a member of the If-Match/If-None-
 * Match lists vals[0..n) (repeated field lines): "*" matches; weak
 * comparison (W/ ignored on both sides) when weak, else strong (a weak tag
 * never matches). 1 or 0; a malformed member ends that line's scan. */
int static_etag_match(const sp_str *vals, size_t n, const char *etag, size_t etag_len, int weak);

/* The request's validator fields, ptr NULL when absent. */
typedef struct static_cond {
    const sp_str *if_match, *if_none_match; /* all lines of each */
    size_t n_if_match, n_if_none_match;
    sp_str if_modified_since, if_unmodified_since;
} static_cond;

/* Evaluates preconditions for a GET or HEAD of a representation with this
 * etag and Last-Modified (seconds) in the order of RFC 9110 §13.2.2:
 * If-Match (strong; false → 412), else If-Unmodified-Since (modified since
 * → 412); If-None-Match (weak; matches → 304), else If-Modified-Since (not
 * modified since → 304). Invalid dates are ignored. Returns 0 (serve), 304
 * or 412. */
int static_preconditions(const static_cond *c, const char *etag, size_t etag_len,
                         int64_t last_modified);

/* If-Range (RFC 9110 §13.1.5): whether a Range may be honored. An entity-
 * tag must match etag strongly; an HTTP-date must equal last_modified, and
 * last_modified must be a strong validator (at least a second before now,
 * §8.8.2.2). Anything else: 0 (send the whole representation). */
int static_if_range(sp_str v, const char *etag, size_t etag_len, int64_t last_modified,
                    int64_t now);

/* Whether the Accept-Encoding lines vals[0..n) allow gzip (RFC 9110
 * §12.5.3): "gzip" or "x-gzip" with q > 0, or, when neither is listed,
 * "*" with q > 0. No field at all (n == 0): 0, since identity is what
 * such clients expect from a file server. */
int static_accepts_gzip(const sp_str *vals, size_t n);

#endif
