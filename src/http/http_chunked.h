/* http_chunked.h — the incremental decoder for the chunked transfer coding
 * (RFC 9112 §7.1): bytes in any split, body data reported as slices of the
 * caller's buffer so it can be streamed to a handler without a copy. */
#ifndef SPINDLE_HTTP_CHUNKED_H
#define SPINDLE_HTTP_CHUNKED_H

#include <stddef.h>
#include <stdint.h>

#define HTTP_CHUNK_LINE_MAX_DEFAULT    4096 /* size line with its extensions → 400 */
#define HTTP_CHUNK_TRAILER_MAX_DEFAULT 8192 /* trailer section → 431 */

/* Decoder state: a few words, no pointers into the input, so the caller may
 * discard consumed bytes between calls. Initialise with http_chunked_init. */
typedef struct http_chunked {
    uint64_t remaining; /* data octets left in the current chunk */
    uint64_t total;     /* data octets so far */
    uint64_t body_max;  /* limit on total → 413 */
    uint32_t line_len;  /* octets of the current size line or trailer section */
    uint32_t line_max;
    uint32_t trailer_max;
    uint8_t state;
    uint8_t digits; /* significant hex digits of the size so far */
} http_chunked;

/* body_max bounds the decoded body (UINT64_MAX: none); line_max bounds a size
 * line with its extensions and trailer_max the trailer section, 0 meaning
 * the defaults above. */
void http_chunked_init(http_chunked *d, uint64_t body_max, uint32_t line_max, uint32_t trailer_max);

/* Decodes from buf[0..len), continuing where the last call stopped. Returns
 * the octets consumed (the caller passes the rest next time), or minus the
 * status to answer: -400 bad framing (size, extension, missing CRLF, bad
 * trailer field, size line over line_max), -413 body over body_max, -431
 * trailers over trailer_max. When body data is found the call stops after
 * it and sets *data / *data_len to that slice of buf; otherwise *data_len is
 * 0. It consumes everything given unless it stops after data or at the end
 * of the body; once http_chunked_done() it consumes nothing more (what
 * follows is the next request). Trailer fields are checked with the header
 * rules (RFC 9112 §7.1.2, §5) and discarded, which §7.1.2 permits. */
long http_chunked_decode(http_chunked *d, const char *buf, size_t len, const char **data,
                         size_t *data_len);

/* http_chunked_decode that copies: the body data of as many chunks as fit
 * go into out[0..cap), so a body of tiny chunks costs one call per buffer
 * rather than one per chunk. Returns the octets of buf consumed, or minus
 * the status as above; *out_len is the data copied. It stops when out is
 * full, buf is consumed, or the body has ended (what follows is left). */
long http_chunked_decode_copy(http_chunked *d, const char *buf, size_t len, char *out, size_t cap,
                              size_t *out_len);

/* 1 once the last chunk, the trailers and the final CRLF have been read. */
int http_chunked_done(const http_chunked *d);

#endif
