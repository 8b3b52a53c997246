/* access_format.c — the access log line (see access_format.h). Letters
 * follow gunicorn's (which follow Apache's), with spindle's %f referer and
 * %a user agent as gunicorn has them: %h %l %u %t %r %m %U %q %H %s %b %B
 * %f %a %T %D %M %L %p %%, and %{Name}i / %{Name}o for headers. */
#include "server/access_format.h"

#include <string.h>
#include <strings.h>
#include <time.h>

#define FIELD_MAX 1024 /* bytes of one client-supplied string that are logged */

typedef struct obuf {
    char *p;
    size_t len, cap; /* cap excludes the byte kept for '\n' */
} obuf;

static const char hexd[] = "0123456789abcdef";

static void put(obuf *o, const char *s, size_t n) {
    if (n > o->cap - o->len)
        n = o->cap - o->len;
    memcpy(o->p + o->len, s, n);
    o->len += n;
}

static void putc1(obuf *o, char c) {
    if (o->len < o->cap)
        o->p[o->len++] = c;
}

static void put_num(obuf *o, uint64_t v) {
    char tmp[24];
    int n = 0;
    do {
        tmp[sizeof tmp - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put(o, tmp + sizeof tmp - n, (size_t)n);
}

/* Client-supplied text in the %-format: quotes, backslashes and
 * non-printables as \xNN, so a request cannot forge log lines. */
static void put_escaped(obuf *o, const char *s, size_t n) {
    if (!s || !n) {
        putc1(o, '-');
        return;
    }
    if (n > FIELD_MAX)
        n = FIELD_MAX;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
            putc1(o, (char)c);
        } else {
            char e[4] = {'\\', 'x', hexd[c >> 4], hexd[c & 15]};
            put(o, e, 4);
        }
    }
}

static const http_field *find(const http_field *f, size_t n, const char *name, size_t len) {
    for (size_t i = 0; i < n; i++)
        if (f[i].name_len == len && strncasecmp(f[i].name, name, len) == 0)
            return &f[i];
    return NULL;
}

static void put_header(obuf *o, const http_field *f, size_t n, const char *name, size_t len) {
    const http_field *h = find(f, n, name, len);
    put_escaped(o, h ? h->value : NULL, h ? h->value_len : 0);
}

static void fill_clock(access_clock *ck, int64_t ms) {
    int64_t sec = ms / 1000;
    if (ck->valid && ck->sec == sec)
        return;
    time_t t = (time_t)sec;
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(ck->clf, sizeof ck->clf, "[%d/%b/%Y:%H:%M:%S %z]", &tm);
    gmtime_r(&t, &tm);
    strftime(ck->iso, sizeof ck->iso, "%Y-%m-%dT%H:%M:%S", &tm);
    ck->sec = sec;
    ck->valid = 1;
}

static void put_proto(obuf *o, const access_entry *e) {
    if (e->proto) {
        put(o, e->proto, strlen(e->proto));
        return;
    }
    put(o, e->minor_version ? "HTTP/1.1" : "HTTP/1.0", 8);
}

/* The target's path (before '?') or query (after it, without it). */
static void put_target_part(obuf *o, const access_entry *e, int query) {
    const char *q = e->target ? memchr(e->target, '?', e->target_len) : NULL;
    if (!query)
        put_escaped(o, e->target, q ? (size_t)(q - e->target) : e->target_len);
    else if (q && (size_t)(q + 1 - e->target) < e->target_len)
        put_escaped(o, q + 1, e->target_len - (size_t)(q + 1 - e->target));
    else
        putc1(o, '-');
}

/* Microseconds as seconds with six decimals (gunicorn's %(L)s). */
static void put_seconds(obuf *o, uint64_t us) {
    char frac[7];
    put_num(o, us / 1000000);
    putc1(o, '.');
    uint64_t f = us % 1000000;
    for (int i = 5; i >= 0; i--, f /= 10)
        frac[i] = (char)('0' + f % 10);
    put(o, frac, 6);
}

/* One %-letter; returns 0 if the letter is not one. */
static int put_atom(obuf *o, char letter, const access_entry *e, access_clock *ck) {
    switch (letter) {
    case 'h':
        put(o, e->client, strlen(e->client));
        break;
    case 'l':
    case 'u':
        putc1(o, '-');
        break;
    case 't':
        fill_clock(ck, e->time_ms);
        put(o, ck->clf, strlen(ck->clf));
        break;
    case 'r':
        put_escaped(o, e->method, e->method_len);
        putc1(o, ' ');
        put_escaped(o, e->target, e->target_len);
        putc1(o, ' ');
        put_proto(o, e);
        break;
    case 'm':
        put_escaped(o, e->method, e->method_len);
        break;
    case 'U':
        put_target_part(o, e, 0);
        break;
    case 'q':
        put_target_part(o, e, 1);
        break;
    case 'H':
        put_proto(o, e);
        break;
    case 's':
        put_num(o, (uint64_t)e->status);
        break;
    case 'b':
        if (e->bytes)
            put_num(o, e->bytes);
        else
            putc1(o, '-');
        break;
    case 'B':
        put_num(o, e->bytes);
        break;
    case 'f':
        put_header(o, e->req_fields, e->req_nfields, "Referer", 7);
        break;
    case 'a':
        put_header(o, e->req_fields, e->req_nfields, "User-Agent", 10);
        break;
    case 'T':
        put_num(o, e->duration_us / 1000000);
        break;
    case 'D':
        put_num(o, e->duration_us);
        break;
    case 'M':
        put_num(o, e->duration_us / 1000);
        break;
    case 'L':
        put_seconds(o, e->duration_us);
        break;
    case 'p':
        put_num(o, (uint64_t)e->pid);
        break;
    case '%':
        putc1(o, '%');
        break;
    default:
        return 0;
    }
    return 1;
}

/* %{Name}i or %{Name}o at p (just past the '%'): the length of the atom,
 * or 0 if it is not one. */
static size_t header_atom(const char *p, const char **name, size_t *len, char *which) {
    if (*p != '{')
        return 0;
    const char *end = strchr(p + 1, '}');
    if (!end || end == p + 1 || (end[1] != 'i' && end[1] != 'o'))
        return 0;
    *name = p + 1;
    *len = (size_t)(end - p - 1);
    *which = end[1];
    return (size_t)(end + 2 - p);
}

static size_t finish(obuf *o) {
    o->p[o->len++] = '\n'; /* the byte kept for it */
    return o->len;
}

size_t access_format_text(const char *fmt, const access_entry *e, access_clock *ck, char *out,
                          size_t cap) {
    obuf o = {.p = out, .cap = cap - 1};
    for (const char *p = fmt; *p; p++) {
        if (*p != '%') {
            putc1(&o, *p);
            continue;
        }
        const char *name;
        size_t len, n;
        char which;
        if ((n = header_atom(p + 1, &name, &len, &which)) > 0) {
            if (which == 'i')
                put_header(&o, e->req_fields, e->req_nfields, name, len);
            else
                put_header(&o, e->res_fields, e->res_nfields, name, len);
            p += n;
        } else if (!p[1]) {
            break;
        } else {
            put_atom(&o, *++p, e, ck); /* checked at start-up: an unknown one is skipped */
        }
    }
    return finish(&o);
}

int access_log_check_format(const char *fmt, char *bad) {
    if (strcmp(fmt, ACCESS_FORMAT_JSON) == 0)
        return 0;
    static const char letters[] = "hlutrmUqHsbBfaTDMLp%";
    for (const char *p = fmt; *p; p++) {
        if (*p != '%')
            continue;
        const char *name;
        size_t len, n;
        char which;
        if ((n = header_atom(p + 1, &name, &len, &which)) > 0) {
            p += n;
            continue;
        }
        p++;
        if (!*p || *p == '{' || !strchr(letters, *p)) {
            *bad = *p ? *p : '%';
            return -1;
        }
    }
    return 0;
}

/* ---- JSON --------------------------------------------------------------- */

/* The length of the valid UTF-8 sequence at s[0..n) of 2 to 4 bytes, or 0
 * (overlong forms, surrogates and code points past U+10FFFF are not). */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    size_t len = c >= 0xc2 && c <= 0xdf   ? 2
                 : c >= 0xe0 && c <= 0xef ? 3
                 : c >= 0xf0 && c <= 0xf4 ? 4
                                          : 0;
    if (!len || len > n)
        return 0;
    unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range */
    if (c == 0xe0)
        lo = 0xa0;
    else if (c == 0xed)
        hi = 0x9f;
    else if (c == 0xf0)
        lo = 0x90;
    else if (c == 0xf4)
        hi = 0x8f;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

static void put_json_str(obuf *o, const char *str, size_t n) {
    if (!str) {
        put(o, "null", 4);
        return;
    }
    if (n > FIELD_MAX)
        n = FIELD_MAX;
    const unsigned char *s = (const unsigned char *)str;
    putc1(o, '"');
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        size_t l;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            put(o, e, 2);
            i++;
        } else if (c >= 0x20 && c < 0x7f) {
            putc1(o, (char)c);
            i++;
        } else if (c >= 0x80 && (l = utf8_seq(s + i, n - i)) > 0) {
            put(o, str + i, l);
            i += l;
        } else { /* control, DEL, or a byte outside valid UTF-8 */
            char e[6] = {'\\', 'u', '0', '0', hexd[c >> 4], hexd[c & 15]};
            put(o, e, 6);
            i++;
        }
    }
    putc1(o, '"');
}

static void put_json_header(obuf *o, const access_entry *e, const char *name, size_t len) {
    const http_field *h = find(e->req_fields, e->req_nfields, name, len);
    put_json_str(o, h ? h->value : NULL, h ? h->value_len : 0);
}

#define KEY(o, k) put(o, k, sizeof k - 1)

size_t access_format_json(const access_entry *e, access_clock *ck, char *out, size_t cap) {
    obuf o = {.p = out, .cap = cap - 1};
    fill_clock(ck, e->time_ms);
    uint64_t ms = (uint64_t)(e->time_ms % 1000);
    char frac[5] = {'.', (char)('0' + ms / 100), (char)('0' + ms / 10 % 10), (char)('0' + ms % 10),
                    'Z'};
    KEY(&o, "{\"client\":");
    put_json_str(&o, e->client, strlen(e->client));
    KEY(&o, ",\"time\":\"");
    put(&o, ck->iso, strlen(ck->iso));
    put(&o, frac, sizeof frac);
    KEY(&o, "\",\"method\":");
    put_json_str(&o, e->method, e->method_len);
    KEY(&o, ",\"target\":");
    put_json_str(&o, e->target, e->target_len);
    KEY(&o, ",\"protocol\":\"");
    put_proto(&o, e);
    KEY(&o, "\",\"status\":");
    put_num(&o, (uint64_t)e->status);
    KEY(&o, ",\"bytes\":");
    put_num(&o, e->bytes);
    KEY(&o, ",\"referer\":");
    put_json_header(&o, e, "Referer", 7);
    KEY(&o, ",\"user_agent\":");
    put_json_header(&o, e, "User-Agent", 10);
    KEY(&o, ",\"duration_us\":");
    put_num(&o, e->duration_us);
    KEY(&o, ",\"pid\":");
    put_num(&o, (uint64_t)e->pid);
    putc1(&o, '}');
    return finish(&o);
}
