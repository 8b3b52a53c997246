/* http_parse.h — the HTTP/1.1 request-head parser: a pure function from a
 * byte range to a verdict (need more, a complete head, or the HTTP status to
 * answer). Fields are slices of the caller's buffer; nothing is allocated.
 * The rules are RFC 9112's, applied strictly (see http_parse.c). */
#ifndef SPINDLE_HTTP_PARSE_H
#define SPINDLE_HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* Returned by the parsers when the input ends before a verdict is possible.
 * Every other negative return is minus an HTTP status (-400, -431, ...). */
#define HTTP_NEED_MORE (-1)

/* One header (or trailer) field line: slices into the parsed buffer, value
 * with surrounding whitespace trimmed. */
typedef struct http_field {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
} http_field;

/* Common methods get an id so the driver need not compare strings. */
typedef enum http_method {
    HTTP_M_OTHER = 0,
    HTTP_M_GET,
    HTTP_M_HEAD,
    HTTP_M_POST,
    HTTP_M_PUT,
    HTTP_M_DELETE,
    HTTP_M_CONNECT,
    HTTP_M_OPTIONS,
    HTTP_M_TRACE,
    HTTP_M_PATCH,
} http_method;

/* Where the request body ends (RFC 9112 §6.3). */
typedef enum http_framing {
    HTTP_BODY_NONE = 0, /* no body: zero length */
    HTTP_BODY_LENGTH,   /* content_length bytes follow the head */
    HTTP_BODY_CHUNKED,  /* chunked coding follows: feed it to http_chunked_decode */
} http_framing;

/* Limits, checked while parsing. Zero in any field means its default. */
typedef struct http_limits {
    size_t head_max;   /* request line + fields + blank line; default 8192 → 431 */
    size_t target_max; /* request-target bytes; default 8000 (RFC 9112 §3) → 414 */
    size_t fields_max; /* field lines; default 100, never above fields_cap → 431 */
} http_limits;

/* The longest method accepted: IANA's longest registered one has 17
 * octets; longer ones are answered 501 (RFC 9112 §3). */
#define HTTP_METHOD_MAX 64

#define HTTP_HEAD_MAX_DEFAULT   8192
#define HTTP_TARGET_MAX_DEFAULT 8000
#define HTTP_FIELDS_MAX_DEFAULT 100

/* A parsed request head. The caller sets fields and fields_cap before the
 * call; everything else is output. All slices point into the parsed buffer
 * and stay valid as long as it does. */
typedef struct http_request {
    http_field *fields; /* in: caller's array; out: nfields entries, in order */
    size_t fields_cap;  /* in: its capacity */
    size_t nfields;

    const char *method;
    size_t method_len;
    http_method method_id;
    const char *target;
    size_t target_len;
    int minor_version; /* 0 or 1; HTTP/1.2+ is handled as 1.1 (RFC 9110 §2.5) */

    http_framing framing;
    uint64_t content_length; /* valid when framing == HTTP_BODY_LENGTH */

    /* The request's authority (RFC 9112 §3.2.2, §3.3): an absolute-form
     * target's (host_from_target; Host is then checked but ignored), else
     * the one Host value; NULL when neither (HTTP/1.0 only). Never empty. */
    const char *host;
    size_t host_len;

    unsigned keep_alive : 1;        /* per version and Connection (RFC 9112 §9.3) */
    unsigned conn_close : 1;        /* Connection: close seen */
    unsigned conn_upgrade : 1;      /* Connection: upgrade seen */
    unsigned expect_continue : 1;   /* Expect: 100-continue (RFC 9110 §10.1.1) */
    unsigned host_from_target : 1;  /* host is the absolute-form target's authority */
    unsigned websocket_connect : 1; /* HTTP/2 extended CONNECT, :protocol websocket
                                       (RFC 8441): the method reads as GET */
} http_request;

/* Parses the request head at buf[0..len).
 *
 * prev_checked is the len of the previous call on the same (grown) buffer
 * that returned HTTP_NEED_MORE, 0 on the first: the parser then only scans
 * the new bytes for the end of the head (a blank line or a bare LF) before
 * parsing it whole, so a head arriving in pieces costs little. The verdict
 * on a complete head, or on head_max bytes, is the same however it arrived;
 * only an error inside a still unfinished head may be reported later than
 * a call with prev_checked 0 would report it.
 *
 * Returns the head's length in bytes (> 0; the body, if any, starts there),
 * HTTP_NEED_MORE, or minus the status to answer: -400 malformed, -414 target
 * too long, -431 head or field count over the limit, -501 unknown transfer
 * coding or a method over HTTP_METHOD_MAX, -505 HTTP major version not 1,
 * -417 unsupported Expect. On error
 * the connection must be closed after the answer: framing is unknown.
 * lim may be NULL for the defaults. Never reads outside buf[0..len). */
int http_parse_request(const char *buf, size_t len, size_t prev_checked, http_request *out,
                       const http_limits *lim);

/* Which copy of the parser runs: on x86-64 CPUs with AVX2 (and BMI1/2, which
 * come with it) one scanning 32 octets a step, chosen once at start-up
 * unless SPINDLE_HTTP_NO_AVX2 is set (non-empty, not "0") in the
 * environment; else the baseline one (SSE2 on x86-64, portable elsewhere).
 * Both give the same verdict and fields on every input. For tests and
 * benchmarks: on != 0 selects AVX2, 0 the baseline. Returns the previous
 * choice (1 or 0), or -1 (nothing changed) when AVX2 is asked for and
 * absent. Not thread-safe: call before parsing starts. */
int http_parse_set_avx2(int on);

/* The method's id (HTTP_M_OTHER for one the parser does not name), for a
 * head that came another way (an HTTP/2 stream's :method). */
http_method http_method_of(const char *m, size_t n);

/* A slice into [old, old + len] moves to the same offset in nb, where
 * those bytes were copied (a NULL or a slice elsewhere stays). */
static inline void http_slice_rebase(const char **p, const char *old, size_t len, const char *nb) {
    if (*p && *p >= old && *p <= old + len)
        *p = nb + (*p - old);
}

/* The same for every slice of the head: method, target, host and each
 * field's name and value (the fields array itself stays where it is). */
void http_request_rebase(http_request *h, const char *old, size_t len, const char *nb);

#endif
