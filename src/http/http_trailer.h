/* http_trailer.h — trailer fields (RFC 9110 §6.5): which names may be sent
 * in trailers, whether a request's TE says the client takes them, and the
 * last chunk with its trailer section (RFC 9112 §7.1.2). Pure functions. */
#ifndef SPINDLE_HTTP_TRAILER_H
#define SPINDLE_HTTP_TRAILER_H

#include "http/http_parse.h"

#include <stddef.h>

/* 1 when name[0..n) is a token that may be a trailer field: not empty and
 * none of the fields a recipient needs before the body or that frame,
 * route or modify the message (Content-Length, Transfer-Encoding, Host,
 * Connection and the hop-by-hop fields, TE, Trailer, Content-Type,
 * Content-Encoding, Content-Range, Set-Cookie, Authorization). */
int http_trailer_name_ok(const char *name, size_t n);

/* 1 when the request's TE field lists "trailers" (RFC 9110 §10.1.4: the
 * client will not drop trailer fields), over every TE field line. */
int http_te_trailers(const http_request *h);

/* The last chunk and its trailer section: "0\r\n", "name: value\r\n" per
 * field, "\r\n", into out (cap bytes). names[i]/values[i] are NUL-terminated
 * and already checked. The length, or -1 when it does not fit. */
long http_write_last_chunk(const char *const *names, const char *const *values, size_t n, char *out,
                           size_t cap);

#endif
