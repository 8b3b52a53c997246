/* path_norm.h — turns a request-target into the normalized path that routes
 * are matched against: the path of origin- or absolute-form, unreserved
 * characters percent-decoded, hex escapes upper-cased, runs of '/' merged
 * and dot-segments removed, so "/x/../admin" and "/%61dmin" both become
 * "/admin" and cannot slip past a prefix route. Pure; no allocation. */
#ifndef SPINDLE_PATH_NORM_H
#define SPINDLE_PATH_NORM_H

#include <stddef.h>

/* Normalizes the path of target[0..len) into out (capacity cap >= len + 1;
 * a normalized path is never longer than its source), NUL-terminated.
 * *query / *query_len get the query (after '?', without it; empty when
 * absent) as a slice of target. "*" (asterisk-form) normalizes to "*".
 * Returns the normalized length, or -1 when the target is not a valid
 * path (bad percent-escape, an encoded NUL, no leading '/', a fragment),
 * which the caller answers with 400. */
long path_normalize(const char *target, size_t len, char *out, size_t cap, const char **query,
                    size_t *query_len);

/* Decodes every percent-escape of in[0..len) into out (cap >= len + 1),
 * NUL-terminated; for route parameters and PATH_INFO. Returns the length or
 * -1 on a malformed escape. An encoded NUL is refused (-1) too. */
long path_percent_decode(const char *in, size_t len, char *out, size_t cap);

#endif
