/* ws_ext.c — permessage-deflate's negotiation (ws_ext.h): the extension
 * list of a Sec-WebSocket-Extensions value walked once to check its
 * syntax, then each permessage-deflate offer's parameters checked and
 * answered. Pure: bytes in, a verdict and a response's text out. */
#include "server/ws/ws_ext.h"

#include "http/http_chars.h"

#include <stdio.h>
#include <string.h>

typedef struct ext_cursor {
    const char *v;
    size_t len, i;
} ext_cursor;

static int is_tchar(unsigned char ch) {
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static void skip_ows(ext_cursor *c) {
    while (c->i < c->len && (c->v[c->i] == ' ' || c->v[c->i] == '\t'))
        c->i++;
}

/* A token at the cursor: its start and length (0: none there). */
static size_t take_token(ext_cursor *c, const char **start) {
    *start = c->v + c->i;
    size_t n = 0;
    while (c->i < c->len && is_tchar((unsigned char)c->v[c->i]))
        c->i++, n++;
    return n;
}

/* A parameter's value, token or quoted-string, unquoted into out (at most
 * cap - 1 bytes; a longer value is kept cut, which no valid value is).
 * -1 on bad syntax, else its (unquoted) length. */
static int take_value(ext_cursor *c, char *out, size_t cap) {
    size_t n = 0;
    if (c->i < c->len && c->v[c->i] == '"') {
        c->i++;
        for (;;) {
            if (c->i >= c->len)
                return -1; /* no closing quote */
            char ch = c->v[c->i++];
            if (ch == '"')
                break;
            if (ch == '\\') {
                if (c->i >= c->len)
                    return -1;
                ch = c->v[c->i++];
            }
            /* RFC 6455 §9.1: unquoted, the value must still be a token. */
            if (!is_tchar((unsigned char)ch))
                return -1;
            if (n + 1 < cap)
                out[n] = ch;
            n++;
        }
    } else {
        const char *s;
        size_t t = take_token(c, &s);
        if (!t)
            return -1;
        for (size_t k = 0; k < t; k++, n++)
            if (n + 1 < cap)
                out[n] = s[k];
    }
    out[n + 1 < cap ? n : cap - 1] = '\0';
    return n > 64 ? 64 : (int)n;
}

/* 8..15 written without leading zeros, else -1. */
static int window_value(const char *s, int n) {
    if (n == 1 && s[0] >= '8' && s[0] <= '9')
        return s[0] - '0';
    if (n == 2 && s[0] == '1' && s[1] >= '0' && s[1] <= '5')
        return 10 + s[1] - '0';
    return -1;
}

enum { P_SNCT, P_CNCT, P_SBITS, P_CBITS, P_COUNT };
static const char *const param_names[P_COUNT] = {
    "server_no_context_takeover", "client_no_context_takeover", "server_max_window_bits",
    "client_max_window_bits"};

/* One offer's parameters, as sent. bits: -1 absent, 0 present without a
 * value (client_max_window_bits only), else 8..15. */
typedef struct offer {
    int is_deflate, bad;
    int seen[P_COUNT];
    int sbits, cbits;
} offer;

static void offer_param(offer *o, const char *name, size_t nlen, int has_value, const char *val,
                        int vlen) {
    int k = 0;
    while (k < P_COUNT && !http_ieq(name, nlen, param_names[k], strlen(param_names[k])))
        k++;
    if (k == P_COUNT || o->seen[k]++) {
        o->bad = 1; /* unknown, or twice */
        return;
    }
    int bits = has_value ? window_value(val, vlen) : 0;
    switch (k) {
    case P_SNCT:
    case P_CNCT:
        o->bad |= has_value;
        break;
    case P_SBITS:
        o->bad |= !has_value || bits < 0;
        o->sbits = bits;
        break;
    default:
        o->bad |= bits < 0;
        o->cbits = bits;
        break;
    }
}

/* Walks the list, calling the offer check on each extension at its end.
 * Returns -1 on a syntax error (then nothing is accepted), 1 when an
 * offer was accepted into *acc, else 0. */
static int walk(ext_cursor *c, offer *acc) {
    int found = 0, items = 0;
    for (;;) {
        skip_ows(c);
        if (c->i == c->len)
            return items ? found : -1;
        if (c->v[c->i] == ',') { /* empty list elements are allowed (RFC 9110 §5.6.1) */
            c->i++;
            continue;
        }
        const char *name;
        size_t nlen = take_token(c, &name);
        if (!nlen)
            return -1;
        items++;
        offer o = {
            .is_deflate = http_ieq(name, nlen, "permessage-deflate", 18), .sbits = -1, .cbits = -1};
        for (;;) {
            skip_ows(c);
            if (c->i == c->len || c->v[c->i] == ',')
                break;
            if (c->v[c->i] != ';')
                return -1;
            c->i++;
            skip_ows(c);
            const char *pname;
            size_t plen = take_token(c, &pname);
            if (!plen)
                return -1;
            skip_ows(c);
            char val[16];
            int vlen = 0, has_value = 0;
            if (c->i < c->len && c->v[c->i] == '=') {
                c->i++;
                skip_ows(c);
                if ((vlen = take_value(c, val, sizeof val)) < 0)
                    return -1;
                has_value = 1;
            }
            if (o.is_deflate)
                offer_param(&o, pname, plen, has_value, val, vlen);
        }
        /* zlib cannot compress with a 256-byte window (its 8 becomes 9). */
        if (o.is_deflate && !o.bad && o.sbits != 8 && !found) {
            *acc = o;
            found = 1;
        }
    }
}

int ws_ext_negotiate(const char *v, size_t len, int window_bits, ws_deflate_params *out,
                     char resp[WS_EXT_RESP_MAX]) {
    ext_cursor c = {v, len, 0};
    offer o;
    if (window_bits < 9 || window_bits > 15 || walk(&c, &o) != 1)
        return 0;
    int sbits = o.sbits > 0 && o.sbits < window_bits ? o.sbits : window_bits;
    int cbits = 15; /* the client may use any window unless it let us choose */
    if (o.cbits == 0)
        cbits = window_bits;
    else if (o.cbits > 0)
        cbits = o.cbits < window_bits ? o.cbits : window_bits;
    *out = (ws_deflate_params){.server_no_context_takeover = (uint8_t)o.seen[P_SNCT],
                               .client_no_context_takeover = (uint8_t)o.seen[P_CNCT],
                               .server_bits = (uint8_t)sbits,
                               .client_bits = (uint8_t)cbits};
    int n = snprintf(resp, WS_EXT_RESP_MAX, "permessage-deflate%s%s",
                     o.seen[P_SNCT] ? "; server_no_context_takeover" : "",
                     o.seen[P_CNCT] ? "; client_no_context_takeover" : "");
    /* Our window is said whenever the client asked or it is below 15; the
     * client's only when the offer allowed it (§7.1.2.2). */
    if (o.sbits > 0 || sbits < 15)
        n += snprintf(resp + n, WS_EXT_RESP_MAX - (size_t)n, "; server_max_window_bits=%d", sbits);
    if (o.cbits > 0 || (o.cbits == 0 && cbits < 15))
        snprintf(resp + n, WS_EXT_RESP_MAX - (size_t)n, "; client_max_window_bits=%d", cbits);
    return 1;
}
