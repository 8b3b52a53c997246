/* http_parse.c — the strict HTTP/1.1 request-head parser (RFC 9112 §2-§6,
 * §9.3): one pass over the head, fields recorded as slices, and the framing
 * verdict — where the body ends — decided here so the connection driver never
 * re-scans. Strictness is the defence against request smuggling. */
#include "http/http_parse.h"

#include <string.h>

#include "http/http_chars.h"
#include "http/http_scan.h"

static inline uint32_t load4(const char *s) {
    uint32_t x;
    memcpy(&x, s, 4);
    return x;
}
static inline uint16_t load2(const char *s) {
    uint16_t x;
    memcpy(&x, s, 2);
    return x;
}
static inline uint64_t load8(const char *s) {
    uint64_t x;
    memcpy(&x, s, 8);
    return x;
}

/* s[0..n) equals lit, n >= 4 octets of lower-case letters, digits and '-',
 * ignoring ASCII case: a word at a time, OR 0x20 folding the case. Exact for
 * tokens and field values: of the octets OR 0x20 maps onto lit's, only
 * upper-case letters (wanted) and 0x0d or 0x10-0x19 (never in a token or a
 * value, whose controls stop at HTAB) are not lit's own. */
static inline int ieq_lit(const char *s, const char *lit, size_t n) {
    if (n < 8)
        return (((load4(s) | 0x20202020u) ^ load4(lit)) |
                ((load4(s + n - 4) | 0x20202020u) ^ load4(lit + n - 4))) == 0;
    for (size_t i = 0; i + 8 < n; i += 8)
        if ((load8(s + i) | 0x2020202020202020u) != load8(lit + i))
            return 0;
    return (load8(s + n - 8) | 0x2020202020202020u) == load8(lit + n - 8);
}

/* Per-head facts gathered while scanning, judged when the head is complete. */
typedef struct head_state {
    unsigned hosts;
    unsigned cl_seen : 1;
    unsigned te_seen : 1;
    unsigned te_last_chunked : 1; /* the last coding seen so far is chunked */
    unsigned te_bad : 1;          /* a coding after chunked, or chunked with parameters */
    unsigned te_unknown : 1;      /* a coding spindle does not decode */
    unsigned expect_bad : 1;
    unsigned conn_keep_alive : 1;
} head_state;

static http_method method_id(const char *m, size_t n) {
    switch (n) {
    case 3:
        if (m[0] == 'G' && m[1] == 'E' && m[2] == 'T')
            return HTTP_M_GET;
        if (m[0] == 'P' && m[1] == 'U' && m[2] == 'T')
            return HTTP_M_PUT;
        break;
    case 4:
        if (m[0] == 'P' && m[1] == 'O' && m[2] == 'S' && m[3] == 'T')
            return HTTP_M_POST;
        if (m[0] == 'H' && m[1] == 'E' && m[2] == 'A' && m[3] == 'D')
            return HTTP_M_HEAD;
        break;
    case 5:
        if (m[0] == 'P' && m[1] == 'A' && m[2] == 'T' && m[3] == 'C' && m[4] == 'H')
            return HTTP_M_PATCH;
        if (m[0] == 'T' && m[1] == 'R' && m[2] == 'A' && m[3] == 'C' && m[4] == 'E')
            return HTTP_M_TRACE;
        break;
    case 6:
        if (m[0] == 'D' && m[1] == 'E' && m[2] == 'L' && m[3] == 'E' && m[4] == 'T' && m[5] == 'E')
            return HTTP_M_DELETE;
        break;
    case 7:
        if (m[0] == 'O' && m[1] == 'P' && m[2] == 'T' && m[3] == 'I' && m[4] == 'O' &&
            m[5] == 'N' && m[6] == 'S')
            return HTTP_M_OPTIONS;
        if (m[0] == 'C' && m[1] == 'O' && m[2] == 'N' && m[3] == 'N' && m[4] == 'E' &&
            m[5] == 'C' && m[6] == 'T')
            return HTTP_M_CONNECT;
        break;
    }
    return HTTP_M_OTHER;
}

http_method http_method_of(const char *m, size_t n) {
    return method_id(m, n);
}

/* RFC 9112 §3.2: origin-form ("/..."), absolute-form (scheme ":" ...),
 * authority-form only for CONNECT (§3.2.3: host ":" port, no userinfo) and
 * asterisk-form only for OPTIONS (§3.2.4). The octets were already checked.
 * An absolute-form target's authority becomes r's host (§3.2.2). */
static int target_form_ok(http_method m, const char *t, size_t n, http_request *r) {
    if (m == HTTP_M_CONNECT) {
        size_t colon = n;
        for (size_t i = 0; i < n; i++) {
            if (t[i] == '/' || t[i] == '?' || t[i] == '#' || t[i] == '@')
                return 0;
            if (t[i] == ':')
                colon = i;
        }
        if (colon == 0 || colon + 1 >= n)
            return 0;
        for (size_t i = colon + 1; i < n; i++)
            if (t[i] < '0' || t[i] > '9')
                return 0;
        return 1;
    }
    if (t[0] == '/')
        return 1;
    if (n == 1 && t[0] == '*')
        return m == HTTP_M_OPTIONS;
    /* absolute-form: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ),
     * then "://" authority: the only absolute URIs an HTTP server serves are
     * http and https ones, which have an authority (RFC 9110 §4.2.1-4.2.2);
     * so "example.com:443" is not read as scheme "example.com". */
    if (!((t[0] | 0x20) >= 'a' && (t[0] | 0x20) <= 'z'))
        return 0;
    size_t i = 1;
    for (; i < n && t[i] != ':'; i++) {
        unsigned char c = (unsigned char)t[i];
        if (!(((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
              c == '-' || c == '.'))
            return 0;
    }
    if (n - i < 3 || t[i + 1] != '/' || t[i + 2] != '/')
        return 0;
    /* RFC 9110 §4.2.4: userinfo in an http(s) URI is treated as an error;
     * §4.2.1: so is an empty host. The rest must be host and port octets. */
    size_t a = i + 3;
    for (i = a; i < n && t[i] != '/' && t[i] != '?' && t[i] != '#'; i++)
        if (!http_is((unsigned char)t[i], HTTP_C_HOST))
            return 0;
    if (i == a || t[a] == ':')
        return 0;
    r->host = t + a;
    r->host_len = i - a;
    r->host_from_target = 1;
    return 1;
}

/* Calls fn(state, element, len) for each element of a comma-separated list
 * (RFC 9110 §5.6.1), OWS trimmed, empty elements skipped as §5.6.1 asks. */
typedef void (*list_fn)(void *st, const char *e, size_t n);
static void for_each_element(const char *v, size_t n, list_fn fn, void *st) {
    size_t i = 0;
    while (i < n) {
        size_t s = i;
        while (i < n && v[i] != ',')
            i++;
        size_t e = i;
        while (s < e && (v[s] == ' ' || v[s] == '\t'))
            s++;
        while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
            e--;
        if (e > s)
            fn(st, v + s, e - s);
        i++;
    }
}

/* One transfer-coding (RFC 9112 §6.1, §7): chunked, with no parameters, must
 * come last and once; any other coding is one spindle cannot decode. */
static void te_element(void *stp, const char *e, size_t n) {
    head_state *st = stp;
    size_t tok = (size_t)(http_scan_token_portable(e, e + n) - e);
    if (tok == 0) {
        st->te_bad = 1;
        return;
    }
    int chunked = http_ieq(e, tok, "chunked", 7);
    if (st->te_last_chunked || (chunked && tok != n))
        st->te_bad = 1;
    if (!chunked) {
        /* Anything after the token must be OWS ";" parameters (§5.6.6). */
        size_t i = tok;
        while (i < n && (e[i] == ' ' || e[i] == '\t'))
            i++;
        if (i < n && e[i] != ';')
            st->te_bad = 1;
        st->te_unknown = 1;
    }
    st->te_last_chunked = (unsigned)chunked;
}

typedef struct conn_state {
    http_request *req;
    head_state *st;
} conn_state;

/* Connection options (RFC 9110 §7.6.1); only three matter to the driver. */
static void conn_element(void *cp, const char *e, size_t n) {
    conn_state *c = cp;
    if (http_ieq(e, n, "close", 5))
        c->req->conn_close = 1;
    else if (http_ieq(e, n, "keep-alive", 10))
        c->st->conn_keep_alive = 1;
    else if (http_ieq(e, n, "upgrade", 7))
        c->req->conn_upgrade = 1;
}

/* Content-Length = 1*DIGIT (RFC 9110 §8.6); repeated lines must agree. The
 * list form "42, 42" that §8.6 lets a recipient accept is refused: one value
 * per line keeps every hop's reading identical. 0 or -400. */
static int content_length(head_state *st, http_request *r, const char *v, size_t n) {
    uint64_t x = 0;
    if (n == 0)
        return -400;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)((unsigned char)v[i] - '0');
        if (d > 9 || x > (UINT64_MAX - d) / 10)
            return -400;
        x = x * 10 + d;
    }
    if (st->cl_seen && x != r->content_length)
        return -400;
    st->cl_seen = 1;
    r->content_length = x;
    return 0;
}

/* The field names the parser acts on have distinct lengths: here, by
 * length, the first letter of the one of that length (0: none). A field
 * passes this filter in a few instructions; only a match is compared whole. */
static const char special_first[18] = {[4] = 'h', [6] = 'e', [10] = 'c', [14] = 'c', [17] = 't'};

/* Records what the driver needs from the fields that carry it; lo is the
 * start of the buffer, for the scanners. 0 or -400. */
static int note_field(head_state *st, http_request *r, const http_field *f, const char *lo) {
    const char *v = f->value;
    size_t n = f->value_len;
    switch (f->name_len) {
    case 4:
        if (!ieq_lit(f->name, "host", 4))
            return 0;
        /* RFC 9112 §3.2: more than one Host, or an invalid one, is a 400;
         * an empty one is valid only for a target URI without an authority,
         * and an http(s) URI always has one (§3.3, RFC 9110 §4.2.1). */
        if (++st->hosts > 1 || n == 0)
            return -400;
        if (http_scan_host_in(lo, v, v + n) != v + n)
            return -400;
        if (!r->host_from_target) { /* §3.2.2: else the target's authority wins */
            r->host = v;
            r->host_len = n;
        }
        return 0;
    case 6:
        if (!ieq_lit(f->name, "expect", 6))
            return 0;
        /* RFC 9110 §10.1.1: 100-continue is the only expectation defined. */
        if (n == 12 && ieq_lit(v, "100-continue", 12))
            r->expect_continue = 1;
        else
            st->expect_bad = 1;
        return 0;
    case 10:
        if (!ieq_lit(f->name, "connection", 10))
            return 0;
        /* The usual single option first, without the list walk. */
        if (n == 10 && ieq_lit(v, "keep-alive", 10)) {
            st->conn_keep_alive = 1;
        } else if (n == 5 && ieq_lit(v, "close", 5)) {
            r->conn_close = 1;
        } else {
            conn_state c = {r, st};
            for_each_element(v, n, conn_element, &c);
        }
        return 0;
    case 14:
        if (ieq_lit(f->name, "content-length", 14))
            return content_length(st, r, v, n);
        return 0;
    case 17:
        if (ieq_lit(f->name, "transfer-encoding", 17)) {
            st->te_seen = 1;
            for_each_element(v, n, te_element, st);
        }
        return 0;
    }
    return 0;
}

/* The verdict once the whole head is in: Host, framing, expectations. */
static int judge(head_state *st, http_request *r) {
    /* RFC 9112 §3.2: an HTTP/1.1 request without Host is a 400. */
    if (r->minor_version == 1 && st->hosts == 0)
        return -400;
    if (st->te_seen) {
        /* §6.1: TE in HTTP/1.0 means faulty framing; TE with Content-Length
         * is the smuggling shape §6.1 lets a server refuse; §6.3 item 4:
         * chunked not final (or absent) leaves the length unknowable → 400. */
        if (r->minor_version == 0 || st->cl_seen || st->te_bad || !st->te_last_chunked)
            return -400;
        /* §6.1: a transfer coding the server does not understand → 501. */
        if (st->te_unknown)
            return -501;
        r->framing = HTTP_BODY_CHUNKED;
    } else if (st->cl_seen) {
        r->framing = HTTP_BODY_LENGTH;
    }
    /* RFC 9110 §10.1.1: an HTTP/1.0 expectation is ignored; others → 417. */
    if (r->minor_version == 0)
        r->expect_continue = 0;
    else if (st->expect_bad)
        return -417;
    /* RFC 9112 §9.3: 1.1 persists unless "close"; 1.0 only with "keep-alive". */
    r->keep_alive = r->conn_close ? 0 : r->minor_version == 1 ? 1 : st->conn_keep_alive;
    return 0;
}

/* Quick check for a call on a grown buffer: could the head now be complete
 * (an LF, bare or ending a blank line, among the new bytes) or too long? */
static int worth_parsing(const char *buf, size_t len, size_t prev, size_t head_max) {
    if (len >= head_max)
        return 1;
    for (size_t i = prev >= 3 ? prev - 3 : 0; i < len; i++) {
        if (buf[i] != '\n')
            continue;
        if (i == 0 || buf[i - 1] != '\r')
            return 1; /* a bare LF: refused, so say so now */
        if (i >= 3 && buf[i - 2] == '\n' && buf[i - 3] == '\r')
            return 1;
    }
    return 0;
}

/* HTTP-version and its CRLF, octet i of "HTTP/" DIGIT "." DIGIT CR LF. */
static int version_octet_ok(size_t i, char c) {
    if (i == 5 || i == 7)
        return c >= '0' && c <= '9';
    return c == "HTTP/x.x\r\n"[i];
}

/* HTTP-version = "HTTP/" DIGIT "." DIGIT (§2.3) and its CRLF: 10 octets.
 * A major version other than 1 → 505 (RFC 9110 §15.6.6); minor 2-9 is
 * served as 1.1 (RFC 9110 §2.5). Returns 10, 0 when cut short, or -status. */
static int version(const char *p, const char *end, int *minor) {
    /* The common case, "HTTP/1.0" or "HTTP/1.1" then CRLF, in two words:
     * the two differ only in the low bit of their last octet. */
    if (end - p >= 10) {
        uint64_t diff = (load8(p) ^ load8("HTTP/1.0")) & ~load8("\0\0\0\0\0\0\0\1");
        if (diff == 0 && p[8] == '\r' && p[9] == '\n') {
            *minor = p[7] - '0';
            return 10;
        }
    }
    for (size_t i = 0; i < 10; i++) {
        if (p + i == end)
            return 0;
        if (!version_octet_ok(i, p[i]))
            return -400;
    }
    if (p[5] != '1')
        return -505;
    *minor = p[7] == '0' ? 0 : 1;
    return 10;
}

/* Line endings are CRLF only. RFC 9112 §2.2 says a recipient MAY recognize a
 * bare LF as a line terminator; it need not, and spindle does not, because
 * peers that disagree about line ends disagree about where fields end. A CR
 * not followed by LF is refused as §2.2 allows. Returns 2 (CRLF), 0 when cut
 * short, -400 otherwise. */
static int crlf(const char *p, const char *end) {
    if (p == end)
        return 0;
    if (*p != '\r')
        return -400;
    if (p + 1 == end)
        return 0;
    return p[1] == '\n' ? 2 : -400;
}

int http_parse_request(const char *buf, size_t len, size_t prev_checked, http_request *r,
                       const http_limits *lim) {
    size_t head_max = lim && lim->head_max ? lim->head_max : HTTP_HEAD_MAX_DEFAULT;
    size_t target_max = lim && lim->target_max ? lim->target_max : HTTP_TARGET_MAX_DEFAULT;
    size_t fields_max = lim && lim->fields_max ? lim->fields_max : HTTP_FIELDS_MAX_DEFAULT;
    if (head_max > 0x7fffffff)
        head_max = 0x7fffffff; /* the head length is returned as an int */
    if (fields_max > r->fields_cap)
        fields_max = r->fields_cap;
    if (prev_checked && prev_checked < len && !worth_parsing(buf, len, prev_checked, head_max))
        return HTTP_NEED_MORE;

    /* Past head_max, running out of head means the head is too large. The
     * scanners may read anywhere in [buf, end), never past it. */
    const char *p = buf, *end = buf + (len < head_max ? len : head_max);
    const int more = len >= head_max ? -431 : HTTP_NEED_MORE;
    head_state st = {0};
    int k;

    r->nfields = 0;
    r->framing = HTTP_BODY_NONE;
    r->content_length = 0;
    r->host = NULL;
    r->host_len = 0;
    r->keep_alive = r->conn_close = r->conn_upgrade = r->expect_continue = r->host_from_target = 0;

    /* RFC 9112 §2.2: a server SHOULD ignore empty lines before the request. */
    while ((k = crlf(p, end)) == 2)
        p += 2;
    if (k == 0)
        return more;

    /* request-line = method SP request-target SP HTTP-version (§3), with
     * exactly one SP between parts: no other whitespace is accepted. */
    r->method = p;
    if (end - p >= 4 && load4(p) == load4("GET ")) {
        p += 3; /* the usual method, without the scan and the lookup */
        r->method_len = 3;
        r->method_id = HTTP_M_GET;
    } else {
        p = http_scan_token_in(buf, p, end, ' ');
        /* §3: a method longer than any the server implements → 501, as soon
         * as it is seen; not 431 after head_max octets of it. */
        if ((size_t)(p - r->method) > HTTP_METHOD_MAX)
            return -501;
        if (p == end)
            return more;
        if (p == r->method || *p != ' ')
            return -400;
        r->method_len = (size_t)(p - r->method);
        r->method_id = method_id(r->method, r->method_len);
    }

    r->target = ++p;
    p = http_scan_target_in(buf, p, end, ' ');
    r->target_len = (size_t)(p - r->target);
    if (r->target_len > target_max)
        return -414; /* §3: a target longer than the server will parse → 414 */
    if (p == end)
        return more;
    if (r->target_len == 0 || *p != ' ' ||
        !target_form_ok(r->method_id, r->target, r->target_len, r))
        return -400;
    p++;

    if ((k = version(p, end, &r->minor_version)) <= 0)
        return k == 0 ? more : k;
    p += 10;

    /* field-line = field-name ":" OWS field-value OWS (§5), one pass: the
     * name scan stops at the colon (or the CR of the blank line that ends the
     * head), the value scan at the CR. */
    http_field *const fields = r->fields;
    size_t nf = 0;
    for (;;) {
        const char *name = p, *v;
        size_t name_len;
        const char *cr = http_scan_field(buf, p, end, &name_len);
        if (cr) {
            v = name + name_len + 1;
            p = cr;
        } else {
            p = http_scan_token_in(buf, p, end, ':');
            if (p == end)
                return more;
            if (*p != ':' || p == name) {
                if (p == name && *p == '\r')
                    break;
                /* §5.1: no whitespace before the colon; a line starting with
                 * SP or HTAB is obs-fold (§5.2) or whitespace after the
                 * start-line (§2.2), refused alike; an empty name is no token. */
                return -400;
            }
            name_len = (size_t)(p - name);
            v = ++p;
            /* §5.5: NUL, CR, LF and other controls in a value → 400. */
            p = http_scan_value_in(buf, p, end, '\r');
        }
        if (end - p < 2 || load2(p) != load2("\r\n")) {
            k = crlf(p, end);
            return k == 0 ? more : -400;
        }
        /* OWS around the value: the only octets <= SP left in [v, p) are SP
         * and HTAB; the usual one SP is stepped over without a loop. Reading
         * ve[-1] is safe, the colon being there at worst. */
        v += *v == ' ';
        while ((unsigned char)*v <= ' ' && v < p)
            v++;
        const char *ve = p;
        while ((unsigned char)ve[-1] <= ' ' && ve > v)
            ve--;
        p += 2;
        if (nf == fields_max)
            return -431;
        http_field *f = &fields[nf++];
        *f = (http_field){name, name_len, v, (size_t)(ve - v)};
        if (name_len < sizeof special_first && special_first[name_len] == (name[0] | 0x20) &&
            (k = note_field(&st, r, f, buf)) < 0)
            return k;
    }
    if ((k = crlf(p, end)) <= 0)
        return k == 0 ? more : k;
    p += 2;
    r->nfields = nf;
    if ((k = judge(&st, r)) < 0)
        return k;
    return (int)(p - buf);
}
