/* http_write.h — the HTTP/1.1 response writer: a pure function from a
 * response description to a head in the caller's buffer and an iovec for one
 * writev, plus chunk framing and the cached Date text. Nothing allocated. */
#ifndef SPINDLE_HTTP_WRITE_H
#define SPINDLE_HTTP_WRITE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <time.h>

#include "http/http_parse.h"

/* IMF-fixdate, RFC 9110 §5.6.7: "Sun, 06 Nov 1994 08:49:37 GMT". */
#define HTTP_DATE_LEN 29

/* The Date text for one second; the caller refreshes it when the second
 * changes (http_date_update), so the formatting costs once a second. */
typedef struct http_date_cache {
    time_t sec;
    char text[HTTP_DATE_LEN + 1];
} http_date_cache;

/* Formats t into c (always; cheap enough for once a second). */
void http_date_update(http_date_cache *c, time_t t);

/* How the body that follows a written head is delimited. */
typedef enum http_out_framing {
    HTTP_OUT_NONE = 0, /* no body may follow: 1xx, 204, 304, HEAD */
    HTTP_OUT_LENGTH,   /* exactly content_length octets follow */
    HTTP_OUT_CHUNKED,  /* chunks (http_chunk_iov), then HTTP_LAST_CHUNK */
    HTTP_OUT_CLOSE,    /* raw octets, ended by closing (HTTP/1.0 streaming) */
} http_out_framing;

typedef struct http_response {
    int status;               /* 100-599 */
    int minor_version;        /* the request's: 0 or 1 */
    int head_request;         /* the request was HEAD: head only */
    int keep_alive;           /* the driver wants the connection kept */
    int64_t content_length;   /* body length when known, -1 when streaming */
    const http_field *fields; /* the application's fields, sent in order */
    size_t nfields;
    const char *date;   /* HTTP_DATE_LEN octets (a cache's text), or NULL */
    int fields_checked; /* the caller already applied the field rules below
                           to every field (sp_res_header does): skip them */
} http_response;

/* What the head committed to: the body framing and whether the connection
 * stays open afterwards (a close-delimited body forces it closed). */
typedef struct http_out {
    http_out_framing framing;
    int keep_alive;
} http_out;

/* Writes the status line and header section into buf[0..cap).
 * Content-Length when the length is known (also on HEAD and 304, RFC 9110
 * §8.6), chunked when streaming to HTTP/1.1, close-delimited when streaming
 * to HTTP/1.0 (RFC 9112 §6.3), neither on 1xx and 204 (RFC 9112 §6.1, RFC
 * 9110 §8.6). Connection: close / keep-alive as needed (RFC 9112 §9.3).
 * Returns the head's length, -EINVAL for an invalid response (status out of
 * range, 1xx to HTTP/1.0, a field name not a token, a value with CR, LF, NUL
 * or other controls or surrounding whitespace, or an application field the
 * writer owns: Content-Length, Transfer-Encoding, Date, and Connection except
 * on 101), or -ENOSPC when buf is too small. Nothing is written on error. */
int http_write_head(const http_response *r, char *buf, size_t cap, http_out *out);

/* http_write_head into head, then iov[0] = the head and, when the framing
 * is HTTP_OUT_LENGTH, iov[1] = body (body_len must equal content_length, else
 * -EINVAL). Returns the iovec count (1 or 2) or a negative errno; iov needs
 * room for 2. */
int http_write_response(const http_response *r, char *head, size_t cap, const void *body,
                        size_t body_len, struct iovec *iov, http_out *out);

/* Longest chunk size line: 16 hex digits and CRLF. */
#define HTTP_CHUNK_LINE_MAX 18
/* The last chunk with an empty trailer section (RFC 9112 §7.1). */
#define HTTP_LAST_CHUNK     "0\r\n\r\n"
#define HTTP_LAST_CHUNK_LEN 5

/* Writes "<hex n>\r\n" into line; returns its length. */
size_t http_chunk_line(char line[HTTP_CHUNK_LINE_MAX], uint64_t n);

/* One chunk as three iovecs: size line (in line), the data, CRLF. Returns 3,
 * or 0 when n is 0: an empty chunk would end the body. */
int http_chunk_iov(char line[HTTP_CHUNK_LINE_MAX], const void *data, size_t n, struct iovec iov[3]);

/* The reason phrase for a status, "" for an unknown one (RFC 9110 §15). */
const char *http_reason(int status);

#endif
