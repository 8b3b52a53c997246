/* http_trailer.c — trailer fields: the names refused in a trailer section,
 * TE: trailers in a request, and the last chunk that carries them on
 * HTTP/1.1. No state, no allocation. */
#include "http/http_trailer.h"

#include "http/http_chars.h"

#include <string.h>

int http_trailer_name_ok(const char *name, size_t n) {
    /* RFC 9110 §6.5.1: framing, routing, request modifiers, authentication,
     * and what the recipient must know to handle the content (its type,
     * coding and range), plus cookies (most clients drop them there). */
    static const char *const refused[] = {
        "content-length",   "transfer-encoding", "host",       "connection",    "keep-alive",
        "proxy-connection", "upgrade",           "te",         "trailer",       "content-type",
        "content-encoding", "content-range",     "set-cookie", "authorization", "cache-control",
    };
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!http_is((unsigned char)name[i], HTTP_C_TCHAR))
            return 0;
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (http_ieq(name, n, refused[i], strlen(refused[i])))
            return 0;
    return 1;
}

/* One TE list member: "trailers", case-insensitive, maybe with parameters
 * (";q=...") that do not apply to it but do not hide it either. */
static int lists_trailers(const char *p, size_t n) {
    const char *end = p + n;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
            p++;
        const char *s = p;
        while (p < end && *p != ',' && *p != ';' && *p != ' ' && *p != '\t')
            p++;
        if (http_ieq(s, (size_t)(p - s), "trailers", 8))
            return 1;
        while (p < end && *p != ',')
            p++;
    }
    return 0;
}

int http_te_trailers(const http_request *h) {
    for (size_t i = 0; i < h->nfields; i++) {
        const http_field *f = &h->fields[i];
        if (http_ieq(f->name, f->name_len, "te", 2) && lists_trailers(f->value, f->value_len))
            return 1;
    }
    return 0;
}

static int put(char **d, char *end, const char *s, size_t n) {
    if ((size_t)(end - *d) < n)
        return -1;
    memcpy(*d, s, n);
    *d += n;
    return 0;
}

long http_write_last_chunk(const char *const *names, const char *const *values, size_t n, char *out,
                           size_t cap) {
    char *d = out, *end = out + cap;
    if (put(&d, end, "0\r\n", 3) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (put(&d, end, names[i], strlen(names[i])) < 0 || put(&d, end, ": ", 2) < 0 ||
            put(&d, end, values[i], strlen(values[i])) < 0 || put(&d, end, "\r\n", 2) < 0)
            return -1;
    if (put(&d, end, "\r\n", 2) < 0)
        return -1;
    return (long)(d - out);
}
