/* chat_text.c — the chat example's small helpers on bytes and requests: a
 * growing buffer with JSON strings, UTF-8 and percent-decoding checks,
 * cookies, the same-origin check, bus ids, small text bodies, and the
 * visitor's id and nickname cookies. */
#include "chat_text.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

static int buf_grow(buf *b, size_t more) {
    if (b->len + more + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p)
        return -ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

int buf_add(buf *b, const void *data, size_t len) {
    if (buf_grow(b, len) < 0)
        return -ENOMEM;
    memcpy(b->p + b->len, data, len);
    b->len += len;
    b->p[b->len] = 0;
    return 0;
}

int buf_str(buf *b, const char *s) {
    return buf_add(b, s, strlen(s));
}

int buf_fmt(buf *b, const char *fmt, ...) {
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    return n < 0 ? -EINVAL : buf_add(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* A JSON string (quotes included) from valid UTF-8. */
int buf_json_str(buf *b, const char *s, size_t len) {
    static const char hex[] = "0123456789abcdef";
    if (buf_add(b, "\"", 1) < 0)
        return -ENOMEM;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[7] = {'\\', 0};
        size_t n = 2;
        if (c == '"' || c == '\\')
            esc[1] = (char)c;
        else if (c == '\n')
            esc[1] = 'n';
        else if (c < 0x20 || c == 0x7f || c == '<' || c == '>' || c == '&') {
            /* controls, and what could end a <script> if someone inlines it */
            esc[1] = 'u', esc[2] = '0', esc[3] = '0', esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
            n = 6;
        } else {
            if (buf_add(b, &s[i], 1) < 0)
                return -ENOMEM;
            continue;
        }
        if (buf_add(b, esc, n) < 0)
            return -ENOMEM;
    }
    return buf_add(b, "\"", 1);
}

int64_t wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Valid UTF-8 without control characters. */
int utf8_ok(const unsigned char *s, size_t len) {
    for (size_t i = 0; i < len;) {
        unsigned c = s[i];
        size_t n;
        unsigned cp;
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7f)
                return 0;
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0)
            n = 1, cp = c & 0x1f;
        else if ((c & 0xf0) == 0xe0)
            n = 2, cp = c & 0x0f;
        else if ((c & 0xf8) == 0xf0)
            n = 3, cp = c & 0x07;
        else
            return 0;
        if (i + n >= len)
            return 0;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
            cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp < 0xa0))
            return 0;
        i += n + 1;
    }
    return 1;
}

int hexval(int c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decodes src into out (NUL-terminated); -1 if malformed or too long. */
int pct_decode(sp_str src, char *out, size_t cap) {
    size_t n = 0;
    for (size_t i = 0; i < src.len; i++) {
        int c = (unsigned char)src.ptr[i];
        if (c == '%') {
            if (i + 2 >= src.len)
                return -1;
            int h = hexval(src.ptr[i + 1]), l = hexval(src.ptr[i + 2]);
            if (h < 0 || l < 0)
                return -1;
            c = h << 4 | l;
            i += 2;
        }
        if (n + 1 >= cap)
            return -1;
        out[n++] = (char)c;
    }
    out[n] = 0;
    return (int)n;
}

/* The value of cookie `name` among the request's Cookie fields. */
sp_str cookie(const sp_req *req, const char *name) {
    size_t nlen = strlen(name);
    sp_str k, v;
    for (size_t i = 0; sp_req_header_at(req, i, &k, &v); i++) {
        if (k.len != 6 || strncasecmp(k.ptr, "cookie", 6) != 0)
            continue;
        const char *p = v.ptr, *end = v.ptr + v.len;
        while (p < end) {
            while (p < end && (*p == ' ' || *p == ';'))
                p++;
            const char *semi = memchr(p, ';', (size_t)(end - p));
            const char *item_end = semi ? semi : end;
            if ((size_t)(item_end - p) > nlen && memcmp(p, name, nlen) == 0 && p[nlen] == '=')
                return (sp_str){p + nlen + 1, (size_t)(item_end - p - nlen - 1)};
            p = item_end;
        }
    }
    return (sp_str){NULL, 0};
}

/* A cross-site page may not post or open a WebSocket in a visitor's name:
 * an Origin header, when there is one, must name this host. */
int same_origin(const sp_req *req) {
    sp_str o = sp_req_header(req, "Origin"), h = sp_req_header(req, "Host");
    if (!o.ptr)
        return 1;
    if (!h.ptr)
        return 0;
    const char *sep = o.len > 3 ? memchr(o.ptr, ':', o.len) : NULL;
    if (!sep || (size_t)(o.ptr + o.len - sep) < 3 || sep[1] != '/' || sep[2] != '/')
        return 0;
    const char *host = sep + 3;
    size_t hlen = (size_t)(o.ptr + o.len - host);
    return hlen == h.len && strncasecmp(host, h.ptr, hlen) == 0;
}

static int parse_u64(const char *s, size_t len, uint64_t *out) {
    if (len == 0 || len > 19)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return 0;
}

int id_parse(const char *s, size_t len, chat_id *out) {
    const char *dash = memchr(s, '-', len);
    chat_id id = {0, 0};
    if (parse_u64(s, dash ? (size_t)(dash - s) : len, &id.ms) < 0)
        return -1;
    if (dash && parse_u64(dash + 1, len - (size_t)(dash + 1 - s), &id.seq) < 0)
        return -1;
    *out = id;
    return 0;
}

void id_format(chat_id id, char out[SP_BUS_ID_MAX]) {
    snprintf(out, SP_BUS_ID_MAX, "%" PRIu64 "-%" PRIu64, id.ms, id.seq);
}

int id_cmp(chat_id a, chat_id b) {
    if (a.ms != b.ms)
        return a.ms < b.ms ? -1 : 1;
    return a.seq != b.seq ? (a.seq < b.seq ? -1 : 1) : 0;
}

int query_id(const sp_req *req, const char *name, chat_id *out) {
    sp_str v = sp_req_query_param(req, name);
    if (!v.ptr || v.len == 0)
        return 0;
    return id_parse(v.ptr, v.len, out) < 0 ? -1 : 1;
}

/* Reads a small text body, trimmed of surrounding white space. The length,
 * or -EMSGSIZE, or -errno from sp_read. */
ssize_t read_text(sp_req *req, char *out, size_t cap) {
    size_t n = 0;
    for (;;) {
        char tmp[512];
        ssize_t r = sp_read(req, tmp, sizeof tmp);
        if (r < 0)
            return r;
        if (r == 0)
            break;
        if (n + (size_t)r >= cap)
            return -EMSGSIZE;
        memcpy(out + n, tmp, (size_t)r);
        n += (size_t)r;
    }
    while (n &&
           (out[n - 1] == ' ' || out[n - 1] == '\n' || out[n - 1] == '\r' || out[n - 1] == '\t'))
        n--;
    size_t s = 0;
    while (s < n && (out[s] == ' ' || out[s] == '\n' || out[s] == '\r' || out[s] == '\t'))
        s++;
    memmove(out, out + s, n - s);
    out[n - s] = 0;
    return (ssize_t)(n - s);
}

/* Chat text: valid UTF-8, newlines and tabs allowed, other controls not. */
int text_ok(const char *t, size_t len) {
    char tmp[TEXT_MAX + 1];
    if (len == 0 || len > TEXT_MAX)
        return 0;
    memcpy(tmp, t, len);
    for (size_t i = 0; i < len; i++)
        if (tmp[i] == '\n' || tmp[i] == '\t')
            tmp[i] = ' ';
    return utf8_ok((const unsigned char *)tmp, len);
}

/* Gives a visitor without a chat_id cookie one. */
void ensure_id(const sp_req *req, sp_res *res) {
    sp_str c = cookie(req, "chat_id");
    if (c.ptr && c.len == ID_LEN)
        return;
    unsigned char rnd[ID_LEN / 2];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        return;
    char hdr[96];
    int n = snprintf(hdr, sizeof hdr, "chat_id=");
    for (size_t i = 0; i < sizeof rnd; i++)
        n += snprintf(hdr + n, sizeof hdr - (size_t)n, "%02x", rnd[i]);
    snprintf(hdr + n, sizeof hdr - (size_t)n, "; Path=/; HttpOnly; SameSite=Lax; Max-Age=31536000");
    sp_res_header(res, "Set-Cookie", hdr);
}

/* The visitor's nickname from its cookie, or "anonymous". */
void nickname(const sp_req *req, char out[NICK_MAX + 1]) {
    sp_str c = cookie(req, "nick");
    int n = c.ptr ? pct_decode(c, out, NICK_MAX + 1) : -1;
    if (n <= 0 || !utf8_ok((const unsigned char *)out, (size_t)n))
        strcpy(out, "anonymous");
}
