/* http_chunked.c — the chunked-coding decoder (RFC 9112 §7.1): a byte-at-a-
 * time state machine for size lines, extensions and trailers, and a bulk
 * step for chunk data, so any split of the input gives the same result. */
#include "http/http_chunked.h"

#include "http/http_chars.h"
#include "http/http_parse.h"

#include <string.h>

enum {
    S_SIZE_FIRST,  /* chunk-size needs at least one HEXDIG */
    S_SIZE,        /* more HEXDIG, or what follows the size */
    S_EXT_SEMI,    /* BWS before ";" */
    S_EXT_PRENAME, /* BWS after ";" */
    S_EXT_NAME,    /* chunk-ext-name = token */
    S_EXT_POSTNAME,
    S_EXT_PREVAL,
    S_EXT_VAL,  /* token value */
    S_EXT_QVAL, /* quoted-string value */
    S_EXT_QESC, /* after a backslash in it */
    S_EXT_POSTQ,
    S_SIZE_LF,
    S_DATA,
    S_DATA_CR,
    S_DATA_LF,
    S_TR_START, /* start of a trailer line, or the final CRLF */
    S_TR_NAME,
    S_TR_VALUE,
    S_TR_LF,
    S_END_LF,
    S_DONE,
};

void http_chunked_init(http_chunked *d, uint64_t body_max, uint32_t line_max,
                       uint32_t trailer_max) {
    *d = (http_chunked){0};
    d->body_max = body_max;
    d->line_max = line_max ? line_max : HTTP_CHUNK_LINE_MAX_DEFAULT;
    d->trailer_max = trailer_max ? trailer_max : HTTP_CHUNK_TRAILER_MAX_DEFAULT;
    d->state = S_SIZE_FIRST;
}

int http_chunked_done(const http_chunked *d) {
    return d->state == S_DONE;
}

static int is_ws(unsigned char c) {
    return c == ' ' || c == '\t';
}

static unsigned hex_value(unsigned char c) {
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

/* qdtext = HTAB / SP / %x21 / %x23-5B / %x5D-7E / obs-text (RFC 9110 §5.6.4) */
static int qdtext(unsigned char c) {
    return c != '"' && c != '\\' && http_is(c, HTTP_C_VALUE);
}

/* After an extension name (and BWS): more BWS, "=" value, or the next ";". */
static int after_name(unsigned char c) {
    return is_ws(c) ? S_EXT_POSTNAME : c == '=' ? S_EXT_PREVAL : c == ';' ? S_EXT_PRENAME : -400;
}

/* After an extension value: the end of the line, BWS, or the next ";". */
static int after_value(unsigned char c) {
    return c == '\r' ? S_SIZE_LF : c == ';' ? S_EXT_PRENAME : is_ws(c) ? S_EXT_SEMI : -400;
}

/* One octet of a size line, extension or trailer: the next state, or -status.
 * Grammar (RFC 9112 §7.1.1): chunk = chunk-size [ chunk-ext ] CRLF ...;
 * chunk-ext = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] ). */
static int step(http_chunked *d, unsigned char c) {
    switch (d->state) {
    case S_SIZE_FIRST:
    case S_SIZE:
        if (http_is(c, HTTP_C_HEX)) {
            /* Leading zeros are free; past 16 significant digits the size
             * would overflow 64 bits. No sign, no "0x": not HEXDIG. */
            if (d->digits || c != '0')
                d->digits++;
            if (d->digits > 16)
                return -400;
            d->remaining = d->remaining << 4 | hex_value(c);
            return S_SIZE;
        }
        if (d->state == S_SIZE_FIRST)
            return -400;
        /* §7.1: the body limit is known to be crossed as soon as the size is. */
        if (d->remaining > d->body_max - d->total)
            return -413;
        return c == '\r' ? S_SIZE_LF : c == ';' ? S_EXT_PRENAME : is_ws(c) ? S_EXT_SEMI : -400;
    case S_EXT_SEMI:
        return is_ws(c) ? S_EXT_SEMI : c == ';' ? S_EXT_PRENAME : -400;
    case S_EXT_PRENAME:
        return is_ws(c) ? S_EXT_PRENAME : http_is(c, HTTP_C_TCHAR) ? S_EXT_NAME : -400;
    case S_EXT_NAME:
        if (http_is(c, HTTP_C_TCHAR))
            return S_EXT_NAME;
        return c == '\r' ? S_SIZE_LF : after_name(c);
    case S_EXT_POSTNAME:
        return after_name(c);
    case S_EXT_PREVAL:
        if (c == '"')
            return S_EXT_QVAL;
        return is_ws(c) ? S_EXT_PREVAL : http_is(c, HTTP_C_TCHAR) ? S_EXT_VAL : -400;
    case S_EXT_VAL:
        return http_is(c, HTTP_C_TCHAR) ? S_EXT_VAL : after_value(c);
    case S_EXT_POSTQ:
        return after_value(c);
    case S_EXT_QVAL:
        return c == '"' ? S_EXT_POSTQ : c == '\\' ? S_EXT_QESC : qdtext(c) ? S_EXT_QVAL : -400;
    case S_EXT_QESC:
        /* quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text ) */
        return http_is(c, HTTP_C_VALUE) ? S_EXT_QVAL : -400;
    case S_SIZE_LF:
        if (c != '\n')
            return -400;
        d->line_len = 0;
        return d->remaining ? S_DATA : S_TR_START;
    case S_DATA_CR:
        return c == '\r' ? S_DATA_LF : -400;
    case S_DATA_LF:
        if (c != '\n')
            return -400;
        d->line_len = 0;
        d->digits = 0;
        return S_SIZE_FIRST;
    case S_TR_START:
        /* A trailer line starting with whitespace is obs-fold: refused. */
        if (c == '\r')
            return S_END_LF;
        return http_is(c, HTTP_C_TCHAR) ? S_TR_NAME : -400;
    case S_TR_NAME:
        return http_is(c, HTTP_C_TCHAR) ? S_TR_NAME : c == ':' ? S_TR_VALUE : -400;
    case S_TR_VALUE:
        return c == '\r' ? S_TR_LF : http_is(c, HTTP_C_VALUE) ? S_TR_VALUE : -400;
    case S_TR_LF:
        return c == '\n' ? S_TR_START : -400;
    case S_END_LF:
        return c == '\n' ? S_DONE : -400;
    }
    return -400;
}

long http_chunked_decode(http_chunked *d, const char *buf, size_t len, const char **data,
                         size_t *data_len) {
    size_t i = 0;
    *data = NULL;
    *data_len = 0;
    while (i < len && d->state != S_DONE) {
        if (d->state == S_DATA) {
            uint64_t n = len - i < d->remaining ? len - i : d->remaining;
            *data = buf + i;
            *data_len = (size_t)n;
            d->remaining -= n;
            d->total += n;
            if (d->remaining == 0)
                d->state = S_DATA_CR;
            return (long)(i + n);
        }
        int in_trailers = d->state >= S_TR_START;
        if (++d->line_len > (in_trailers ? d->trailer_max : d->line_max))
            return in_trailers ? -431 : -400;
        int s = step(d, (unsigned char)buf[i++]);
        if (s < 0)
            return s;
        d->state = (uint8_t)s;
    }
    return (long)i;
}

long http_chunked_decode_copy(http_chunked *d, const char *buf, size_t len, char *out, size_t cap,
                              size_t *out_len) {
    size_t i = 0, o = 0;
    while (i < len && o < cap && d->state != S_DONE) {
        /* Data never outgrows its input: giving at most the room left means
         * no slice is consumed that out cannot take. */
        size_t in = len - i < cap - o ? len - i : cap - o;
        const char *data;
        size_t dlen;
        long used = http_chunked_decode(d, buf + i, in, &data, &dlen);
        if (used < 0)
            return used;
        if (dlen)
            memcpy(out + o, data, dlen);
        o += dlen;
        i += (size_t)used;
    }
    *out_len = o;
    return (long)i;
}
