/* http_write.c — builds response heads: status line from the reason table,
 * the application's fields after checking them (no header injection), then
 * the framing fields the writer alone decides (RFC 9112 §6, §9.3). */
#include "http/http_write.h"

#include <errno.h>
#include <string.h>

#include "http/http_chars.h"

const char *http_reason(int status) {
    switch (status) {
    case 100:
        return "Continue";
    case 101:
        return "Switching Protocols";
    case 103:
        return "Early Hints";
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 203:
        return "Non-Authoritative Information";
    case 204:
        return "No Content";
    case 205:
        return "Reset Content";
    case 206:
        return "Partial Content";
    case 300:
        return "Multiple Choices";
    case 301:
        return "Moved Permanently";
    case 302:
        return "Found";
    case 303:
        return "See Other";
    case 304:
        return "Not Modified";
    case 307:
        return "Temporary Redirect";
    case 308:
        return "Permanent Redirect";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 406:
        return "Not Acceptable";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    case 411:
        return "Length Required";
    case 412:
        return "Precondition Failed";
    case 413:
        return "Content Too Large";
    case 414:
        return "URI Too Long";
    case 415:
        return "Unsupported Media Type";
    case 416:
        return "Range Not Satisfiable";
    case 417:
        return "Expectation Failed";
    case 421:
        return "Misdirected Request";
    case 422:
        return "Unprocessable Content";
    case 426:
        return "Upgrade Required";
    case 428:
        return "Precondition Required";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    case 505:
        return "HTTP Version Not Supported";
    }
    return "";
}

static void two_digits(char *p, int v) {
    p[0] = (char)('0' + v / 10);
    p[1] = (char)('0' + v % 10);
}

/* By hand rather than strftime: day and month names must not follow the
 * locale (RFC 9110 §5.6.7 fixes them in English). */
void http_date_update(http_date_cache *c, time_t t) {
    static const char days[] = "SunMonTueWedThuFriSat";
    static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    struct tm tm;
    gmtime_r(&t, &tm);
    char *p = c->text;
    memcpy(p, days + 3 * tm.tm_wday, 3);
    memcpy(p + 3, ", ", 2);
    two_digits(p + 5, tm.tm_mday);
    p[7] = ' ';
    memcpy(p + 8, months + 3 * tm.tm_mon, 3);
    p[11] = ' ';
    int y = tm.tm_year + 1900;
    two_digits(p + 12, y / 100 % 100);
    two_digits(p + 14, y % 100);
    p[16] = ' ';
    two_digits(p + 17, tm.tm_hour);
    p[19] = ':';
    two_digits(p + 20, tm.tm_min);
    p[22] = ':';
    two_digits(p + 23, tm.tm_sec);
    memcpy(p + 25, " GMT", 5);
    c->sec = t;
}

/* field-name = token; field-value = *field-content, which neither starts nor
 * ends with whitespace and holds no CR, LF, NUL or other control (RFC 9110
 * §5.1, §5.5). Framing fields belong to the writer. */
static int field_ok(const http_field *f, int status) {
    if (f->name_len == 0)
        return 0;
    for (size_t i = 0; i < f->name_len; i++)
        if (!http_is((unsigned char)f->name[i], HTTP_C_TCHAR))
            return 0;
    for (size_t i = 0; i < f->value_len; i++)
        if (!http_is((unsigned char)f->value[i], HTTP_C_VALUE))
            return 0;
    if (f->value_len && (f->value[0] == ' ' || f->value[0] == '\t' ||
                         f->value[f->value_len - 1] == ' ' || f->value[f->value_len - 1] == '\t'))
        return 0;
    if (http_ieq(f->name, f->name_len, "content-length", 14) ||
        http_ieq(f->name, f->name_len, "transfer-encoding", 17) ||
        http_ieq(f->name, f->name_len, "date", 4))
        return 0;
    return status == 101 || !http_ieq(f->name, f->name_len, "connection", 10);
}

/* Appends to a bounded buffer; *len passes cap once anything is cut off. */
typedef struct out_buf {
    char *p;
    size_t cap, len;
} out_buf;

static void put(out_buf *b, const char *s, size_t n) {
    if (n <= b->cap - b->len && b->len <= b->cap)
        memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void put_str(out_buf *b, const char *s) {
    put(b, s, strlen(s));
}

static void put_u64(out_buf *b, uint64_t v) {
    char t[20];
    size_t i = sizeof t;
    do {
        t[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put(b, t + i, sizeof t - i);
}

int http_write_head(const http_response *r, char *buf, size_t cap, http_out *out) {
    int st = r->status;
    int no_content = (st >= 100 && st < 200) || st == 204;
    /* RFC 9110 §15.2: no 1xx to an HTTP/1.0 client. */
    if (st < 100 || st > 599 || (st < 200 && r->minor_version == 0))
        return -EINVAL;
    for (size_t i = 0; !r->fields_checked && i < r->nfields; i++)
        if (!field_ok(&r->fields[i], st))
            return -EINVAL;

    http_out o = {HTTP_OUT_NONE, r->keep_alive};
    out_buf b = {buf, cap, 0};
    char code[4] = {(char)('0' + st / 100), (char)('0' + st / 10 % 10), (char)('0' + st % 10), ' '};
    put_str(&b, r->minor_version == 0 ? "HTTP/1.0 " : "HTTP/1.1 ");
    put(&b, code, 4);
    put_str(&b, http_reason(st));
    put(&b, "\r\n", 2);
    if (r->date) {
        put(&b, "Date: ", 6);
        put(&b, r->date, HTTP_DATE_LEN);
        put(&b, "\r\n", 2);
    }
    for (size_t i = 0; i < r->nfields; i++) {
        put(&b, r->fields[i].name, r->fields[i].name_len);
        put(&b, ": ", 2);
        put(&b, r->fields[i].value, r->fields[i].value_len);
        put(&b, "\r\n", 2);
    }
    if (!no_content && r->content_length >= 0) {
        /* Also on HEAD and 304: the length a GET / 200 would have had. */
        put(&b, "Content-Length: ", 16);
        put_u64(&b, (uint64_t)r->content_length);
        put(&b, "\r\n", 2);
        if (!r->head_request && st != 304)
            o.framing = HTTP_OUT_LENGTH;
    } else if (!no_content && !r->head_request && st != 304) {
        if (r->minor_version == 1) {
            put_str(&b, "Transfer-Encoding: chunked\r\n");
            o.framing = HTTP_OUT_CHUNKED;
        } else {
            o.framing = HTTP_OUT_CLOSE;
            o.keep_alive = 0;
        }
    }
    if (st >= 200) {
        if (!o.keep_alive)
            put_str(&b, "Connection: close\r\n");
        else if (r->minor_version == 0)
            put_str(&b, "Connection: keep-alive\r\n");
    }
    put(&b, "\r\n", 2);
    if (b.len > cap)
        return -ENOSPC;
    *out = o;
    return (int)b.len;
}

int http_write_response(const http_response *r, char *head, size_t cap, const void *body,
                        size_t body_len, struct iovec *iov, http_out *out) {
    http_out o;
    int n = http_write_head(r, head, cap, &o);
    if (n < 0)
        return n;
    iov[0] = (struct iovec){head, (size_t)n};
    *out = o;
    if (o.framing != HTTP_OUT_LENGTH)
        return 1;
    if ((uint64_t)r->content_length != body_len)
        return -EINVAL;
    iov[1] = (struct iovec){(void *)body, body_len};
    return 2;
}

size_t http_chunk_line(char line[HTTP_CHUNK_LINE_MAX], uint64_t n) {
    static const char hex[] = "0123456789abcdef";
    int digits = 1;
    while (digits < 16 && n >> (4 * digits))
        digits++;
    for (int i = 0; i < digits; i++)
        line[i] = hex[(n >> (4 * (digits - 1 - i))) & 15];
    line[digits] = '\r';
    line[digits + 1] = '\n';
    return (size_t)digits + 2;
}

int http_chunk_iov(char line[HTTP_CHUNK_LINE_MAX], const void *data, size_t n,
                   struct iovec iov[3]) {
    if (n == 0)
        return 0;
    iov[0] = (struct iovec){line, http_chunk_line(line, n)};
    iov[1] = (struct iovec){(void *)data, n};
    iov[2] = (struct iovec){(void *)"\r\n", 2};
    return 3;
}
