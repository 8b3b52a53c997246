/* proxy_proto.c — the PROXY protocol header, v1 and v2 (see proxy_proto.h
 * and HAProxy's proxy-protocol.txt). Strict on purpose: the header comes
 * from a proxy we trust, never from a person typing, so anything that is
 * not exactly what the spec draws is refused rather than guessed at. */
#include "http/proxy_proto.h"

#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>

static const uint8_t v1_sig[6] = {'P', 'R', 'O', 'X', 'Y', ' '};
static const uint8_t v2_sig[12] = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D,
                                   0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};

/* 1: buf starts with sig; 0: buf is a proper prefix of it; -1: neither. */
static int starts_with(const uint8_t *buf, size_t len, const uint8_t *sig, size_t n) {
    size_t k = len < n ? len : n;
    if (memcmp(buf, sig, k) != 0)
        return -1;
    return len >= n;
}

/* ---- v1: "PROXY TCP4 1.2.3.4 5.6.7.8 1234 80\r\n" ------------------------ */

/* The next token of [*p, end): up to a space or the end, never empty; a
 * token that is not the last must be followed by exactly one space. */
static int token(const uint8_t **p, const uint8_t *end, const uint8_t **tok, size_t *n, int last) {
    const uint8_t *s = *p, *e = s;
    while (e < end && *e != ' ')
        e++;
    if (e == s)
        return -1;
    *tok = s;
    *n = (size_t)(e - s);
    if (last) {
        if (e != end)
            return -1;
        *p = e;
    } else {
        if (e == end)
            return -1;
        *p = e + 1;
    }
    return 0;
}

static int v1_addr(const uint8_t *t, size_t n, int family, uint8_t out[16]) {
    char tmp[48];
    if (n >= sizeof tmp)
        return -1;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = t[i];
        int ok =
            (c >= '0' && c <= '9') || c == '.' ||
            (family == AF_INET6 && (c == ':' || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')));
        if (!ok)
            return -1;
    }
    memcpy(tmp, t, n);
    tmp[n] = '\0';
    memset(out, 0, 16);
    return inet_pton(family, tmp, out) == 1 ? 0 : -1;
}

/* 0..65535 in decimal, no sign, no leading zero (but "0"). */
static int v1_port(const uint8_t *t, size_t n, uint16_t *out) {
    if (n == 0 || n > 5 || (n > 1 && t[0] == '0'))
        return -1;
    uint32_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i] < '0' || t[i] > '9')
            return -1;
        v = v * 10 + (uint32_t)(t[i] - '0');
    }
    if (v > 65535)
        return -1;
    *out = (uint16_t)v;
    return 0;
}

/* The fields of a complete line (between "PROXY " and CRLF). */
static int v1_fields(const uint8_t *p, const uint8_t *end, proxy_hdr *h) {
    const uint8_t *t;
    size_t n;
    if ((size_t)(end - p) >= 7 && memcmp(p, "UNKNOWN", 7) == 0 && (end - p == 7 || p[7] == ' ')) {
        h->family = AF_UNSPEC; /* the rest of the line says nothing we use */
        return 0;
    }
    if (token(&p, end, &t, &n, 0) < 0 || n != 4 ||
        (memcmp(t, "TCP4", 4) != 0 && memcmp(t, "TCP6", 4) != 0))
        return -1;
    h->family = t[3] == '4' ? AF_INET : AF_INET6;
    if (token(&p, end, &t, &n, 0) < 0 || v1_addr(t, n, h->family, h->src) < 0)
        return -1;
    if (token(&p, end, &t, &n, 0) < 0 || v1_addr(t, n, h->family, h->dst) < 0)
        return -1;
    if (token(&p, end, &t, &n, 0) < 0 || v1_port(t, n, &h->src_port) < 0)
        return -1;
    if (token(&p, end, &t, &n, 1) < 0 || v1_port(t, n, &h->dst_port) < 0)
        return -1;
    return 0;
}

static int parse_v1(const uint8_t *buf, size_t len, proxy_hdr *out) {
    int sig = starts_with(buf, len, v1_sig, sizeof v1_sig);
    if (sig <= 0)
        return sig < 0 ? PROXY_BAD : PROXY_NEED_MORE;
    size_t scan = len < PROXY_V1_MAX ? len : PROXY_V1_MAX;
    size_t i = sizeof v1_sig;
    for (; i < scan && buf[i] != '\r'; i++)
        if (buf[i] < 0x20 || buf[i] > 0x7e)
            return PROXY_BAD; /* a control byte or a bare LF inside the line */
    if (i + 2 > PROXY_V1_MAX)
        return PROXY_BAD; /* no CRLF within the longest line */
    if (i + 2 > len)
        return PROXY_NEED_MORE;
    if (buf[i + 1] != '\n')
        return PROXY_BAD;
    proxy_hdr h = {.version = 1};
    if (v1_fields(buf + sizeof v1_sig, buf + i, &h) < 0)
        return PROXY_BAD;
    *out = h;
    return (int)(i + 2);
}

/* ---- v2: signature, ver/cmd, family/protocol, length, block ------------- */

/* The TLVs after the addresses: type, 16-bit length, value, tiling the rest
 * of the block exactly. Their meaning is not ours to use: only the shape. */
static int v2_tlvs(const uint8_t *p, size_t n) {
    while (n) {
        if (n < 3)
            return -1;
        size_t vlen = (size_t)p[1] << 8 | p[2];
        if (vlen > n - 3)
            return -1;
        p += 3 + vlen;
        n -= 3 + vlen;
    }
    return 0;
}

static int parse_v2(const uint8_t *buf, size_t len, proxy_hdr *out) {
    int sig = starts_with(buf, len, v2_sig, sizeof v2_sig);
    if (sig < 0)
        return PROXY_BAD;
    /* Refuse a bad version or command as soon as its byte is there. */
    if (len > 12 && ((buf[12] >> 4) != 2 || (buf[12] & 0x0f) > 1))
        return PROXY_BAD;
    if (len < PROXY_V2_MIN)
        return PROXY_NEED_MORE;
    size_t blen = (size_t)buf[14] << 8 | buf[15];
    if (len < PROXY_V2_MIN + blen)
        return PROXY_NEED_MORE;
    const uint8_t *b = buf + PROXY_V2_MIN;
    proxy_hdr h = {.version = 2, .family = AF_UNSPEC};
    if ((buf[12] & 0x0f) == 0) { /* LOCAL: the block is discarded, family included */
        *out = h;
        return (int)(PROXY_V2_MIN + blen);
    }
    size_t alen;
    switch (buf[13]) {
    case 0x00:
        alen = 0;
        break; /* UNSPEC: the real endpoints stand */
    case 0x11:
        h.family = AF_INET;
        alen = 12;
        break;
    case 0x21:
        h.family = AF_INET6;
        alen = 36;
        break;
    case 0x31:
        h.family = AF_UNIX;
        alen = 216;
        break;
    default:
        return PROXY_BAD; /* datagrams, or a family the spec does not name */
    }
    if (blen < alen || v2_tlvs(b + alen, blen - alen) < 0)
        return PROXY_BAD;
    if (h.family == AF_INET || h.family == AF_INET6) {
        size_t w = h.family == AF_INET ? 4 : 16;
        memcpy(h.src, b, w);
        memcpy(h.dst, b + w, w);
        h.src_port = (uint16_t)(b[2 * w] << 8 | b[2 * w + 1]);
        h.dst_port = (uint16_t)(b[2 * w + 2] << 8 | b[2 * w + 3]);
    }
    *out = h;
    return (int)(PROXY_V2_MIN + blen);
}

int proxy_parse(const uint8_t *buf, size_t len, proxy_hdr *out) {
    if (len == 0)
        return PROXY_NEED_MORE;
    if (buf[0] == 'P')
        return parse_v1(buf, len, out);
    if (buf[0] == '\r')
        return parse_v2(buf, len, out);
    return PROXY_BAD;
}
