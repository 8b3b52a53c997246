/* h2_head.h — an HTTP/2 request's header list made into the head the rest
 * of the server reads (RFC 9113 §8.3): the pseudo-header fields checked and
 * taken as method, target and authority, the fields HTTP/2 forbids refused,
 * Content-Length parsed. Pure: the caller owns every byte it passes in, and
 * the head points into them. */
#ifndef SPINDLE_H2_HEAD_H
#define SPINDLE_H2_HEAD_H

#include "http/http_parse.h"

#include <stddef.h>

typedef struct h2_head {
    http_request *req; /* out; its fields and fields_cap set by the caller */
    size_t target_max;
    const char *scheme, *authority, *host, *protocol;
    size_t scheme_len, authority_len, host_len, protocol_len;
    unsigned regular_seen : 1; /* a regular field came: no pseudo-header after it */
    unsigned cl_seen : 1;
    unsigned chars_checked : 1; /* the caller's decoder checked every byte of names
                                   and values (RFC 9113 §8.2.1): not scanned again */
} h2_head;

/* Begins a head into req (whose fields array the caller set), with paths
 * longer than target_max refused (414; 0: no limit). */
void h2_head_init(h2_head *h, http_request *req, size_t target_max);
/* Takes one decoded field, in the order received. 0, or minus the status
 * to refuse the request with: -400 malformed (a pseudo-header after a
 * regular field, twice, or unknown; an upper-case name; a connection-
 * specific field; TE other than "trailers"; a bad Content-Length; a second
 * Host), -431 more fields than fields_cap, -414 a :path over target_max. */
int h2_head_add(h2_head *h, const char *name, size_t nl, const char *value, size_t vl);
/* Ends the head (end_stream: no body follows). 0, or -400 (a pseudo-header
 * missing or a :path that is neither absolute nor "*" for OPTIONS, :authority
 * and Host naming different hosts, neither present, a Content-Length on a
 * request that ended), -431 (no room for the Host the authority becomes),
 * -501 (a plain CONNECT: no tunnels; an extended CONNECT whose :protocol is
 * not "websocket"), -400 (:protocol without CONNECT). An extended CONNECT
 * for a WebSocket (RFC 8441 §4: :scheme, :path and :authority as for any
 * request) becomes a GET with websocket_connect set, no body framing (the
 * stream's DATA are the WebSocket's). The request then has HTTP/1.1 semantics: a
 * host, a target, framing by length, none, or "unknown" (HTTP_BODY_CHUNKED,
 * ended by the stream's end). */
int h2_head_end(h2_head *h, int end_stream);

#endif
