/* http_chars.h — character classes of the HTTP/1.1 grammar as 256-entry
 * lookup tables, shared by the parser, the chunked decoder and the writer,
 * plus the small helpers built on them. Constant data: no state. */
#ifndef SPINDLE_HTTP_CHARS_H
#define SPINDLE_HTTP_CHARS_H

#include <stddef.h>
#include <stdint.h>

/* Bits of http_char_class[c]. */
#define HTTP_C_TCHAR  0x01 /* token character, RFC 9110 §5.6.2 */
#define HTTP_C_VALUE  0x02 /* field-value octet: VCHAR, obs-text, SP, HTAB (RFC 9110 §5.5) */
#define HTTP_C_TARGET 0x04 /* request-target octet: visible ASCII (RFC 9112 §3.2, RFC 3986) */
#define HTTP_C_HEX    0x08 /* HEXDIG */
#define HTTP_C_HOST   0x10 /* Host value octet: RFC 3986 reg-name, IP-literal and port */

extern const uint8_t http_char_class[256];

static inline int http_is(unsigned char c, uint8_t cls) {
    return (http_char_class[c] & cls) != 0;
}

/* ASCII lower-case; HTTP names and tokens compare case-insensitively. */
static inline unsigned char http_lower(unsigned char c) {
    return (unsigned char)(c >= 'A' && c <= 'Z' ? c | 0x20 : c);
}

/* The value of a hex digit, or -1. */
static inline int http_hexval(unsigned char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    c = http_lower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* 1 when s[0..n) equals the lower-case literal lit (of length n), ignoring case. */
static inline int http_ieq(const char *s, size_t n, const char *lit, size_t litn) {
    if (n != litn)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (http_lower((unsigned char)s[i]) != (unsigned char)lit[i])
            return 0;
    return 1;
}

#endif
