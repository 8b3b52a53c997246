/* http_parse.c — the strict HTTP/1.1 request-head parser (RFC 9112 §2-§6,
 * §9.3): one pass over the head, fields recorded as slices, and the framing
 * verdict — where the body ends — decided here so the connection driver never
 * re-scans. Strictness is the defence against request smuggling. */
#include "http/http_parse.h"

#include <stdlib.h>
#include <string.h>

#include "http/http_chars.h"
#include "http/http_scan.h"

#if defined(HTTP_SCAN_SSE2) && defined(__x86_64__)
#define HTTP_PARSE_AVX2 1
#include "http/http_scan_avx2.h"
#endif

/* The helpers of the one pass, inlined into both copies of it (parse_base,
 * parse_avx2) as they were into the single function before: called from
 * two places, the compiler would otherwise keep them out of line. */
#define INLINE __attribute__((always_inline)) inline

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

void http_request_rebase(http_request *h, const char *old, size_t len, const char *nb) {
    http_slice_rebase(&h->method, old, len, nb);
    http_slice_rebase(&h->target, old, len, nb);
    http_slice_rebase(&h->host, old, len, nb);
    for (size_t i = 0; i < h->nfields; i++) {
        http_slice_rebase(&h->fields[i].name, old, len, nb);
        http_slice_rebase(&h->fields[i].value, old, len, nb);
    }
}

/* RFC 9112 §3.2: origin-form ("/..."), absolute-form (scheme ":" ...),
 * authority-form only for CONNECT (§3.2.3: host ":" port, no userinfo) and
 * asterisk-form only for OPTIONS (§3.2.4). The octets were already checked.
 * An absolute-form target's authority becomes r's host (§3.2.2). */
INLINE static int target_form_ok(http_method m, const char *t, size_t n, http_request *r) {
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
 * length (up to 32: the AVX2 run counts a name of a whole window as 32),
 * the first letter of the one of that length (0: none). A field passes
 * this filter in a few instructions; only a match is compared whole. */
static const char special_first[33] = {
    [0] = ':', /* an empty name: only the AVX2 run lets one through, to refuse it here */
    [4] = 'h', [6] = 'e', [10] = 'c', [14] = 'c', [17] = 't'};

/* Records what the driver needs from the fields that carry it. 0, -400,
 * or 1 for a Host field whose octets the caller checks, with its copy's
 * scanner (HOST_OK). */
INLINE static int note_field(head_state *st, http_request *r, const http_field *f) {
    const char *v = f->value;
    size_t n = f->value_len;
    switch (f->name_len) {
    case 0:
        return -400; /* §5.1: a field-name is a token, never empty */
    case 4:
        if (!ieq_lit(f->name, "host", 4))
            return 0;
        /* RFC 9112 §3.2: more than one Host, or an invalid one, is a 400;
         * an empty one is valid only for a target URI without an authority,
         * and an http(s) URI always has one (§3.3, RFC 9110 §4.2.1). */
        if (++st->hosts > 1 || n == 0)
            return -400;
        if (!r->host_from_target) { /* §3.2.2: else the target's authority wins */
            r->host = v;
            r->host_len = n;
        }
        return 1;
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
INLINE static int judge(head_state *st, http_request *r) {
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
INLINE static int version(const char *p, const char *end, int *minor) {
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
INLINE static int crlf(const char *p, const char *end) {
    if (p == end)
        return 0;
    if (*p != '\r')
        return -400;
    if (p + 1 == end)
        return 0;
    return p[1] == '\n' ? 2 : -400;
}

/* The baseline copy: SSE2 on x86-64, the portable scanners elsewhere. */
/* The baseline copy of http_parse_head.h's body: parse_base (grep and
 * ctags find it here, not at its macro-named definition). */
__attribute__((noinline)) static int parse_base(const char *buf, size_t len, size_t prev_checked,
                                                http_request *r, const http_limits *lim);
#define PARSE_FN             parse_base
#define PARSE_ATTR           __attribute__((noinline))
#define SCAN_FIELD           http_scan_field
#define SCAN_TARGET(l, p, e) http_scan_target_in(l, p, e, ' ')
#define SCAN_SETUP           /* nothing */
#define HOST_OK(lo, v, n)    (http_scan_host_in(lo, v, (v) + (n)) == (v) + (n))
#define FIELD_RUN(p, nf, rc) (p)
#include "http/http_parse_head.h"
#undef PARSE_FN
#undef PARSE_ATTR
#undef SCAN_FIELD
#undef SCAN_TARGET
#undef SCAN_SETUP
#undef HOST_OK
#undef FIELD_RUN

#ifdef HTTP_PARSE_AVX2
/* One usual field line at p: a name of letters and '-' (or none: the
 * caller's note_field refuses it), ':', one SP, a value of visible octets
 * and SP (no OWS left to trim, not empty), CRLF. Read from the 32 octets
 * at w = p - s: p itself (s 0; then 34 octets at least remain: a name of
 * 32 octets has its ": " compare at p[32]), or at the
 * tail (tail 1) the buffer's last 32 octets, whose last octet is then
 * never taken for the CR. So p[c], p[c + 2] and the CR's LF are all
 * readable; a value running on past the window is scanned, from there, to
 * its CR. Returns the CR, or NULL when the line is of another shape or cut
 * short: the general loop then decides; *cp is the name's length. */
HTTP_AVX2 const char *usual_line(const http_avx2_k *k, const char *p, const char *end,
                                 const char *w, size_t s, int tail, size_t *cp) {
    __m256i v = http_load32(w);
    /* The tail's top bit stops the count at the buffer's last octet; at a
     * line's own window an all-name window counts 32, the octet after it. */
    uint32_t tm = http_token_misses32(k, v);
    size_t c = tail ? http_tz((tm | 0x80000000u) >> s) : http_tz32(tm);
    /* The colon and the one SP after it in one compare, but at the tail,
     * where the colon may be the buffer's last octet: the SP waits there
     * until the CR is found (then the octet after the colon is readable). */
    if (tail ? p[c] != ':' : load2(p + c) != load2(": "))
        return NULL;
    /* The name's octets and the colon are visible, never value misses, so
     * the first miss is the value's end without a shift past the name. */
    uint64_t vm = http_value_misses32(k, v);
    vm = (tail ? vm & 0x7fffffffu : vm) >> s;
    const char *q;
    if (vm) {
        q = p + http_tz(vm);
    } else {
        if (tail)
            return NULL; /* the value runs to the end: cut short */
        /* The next 32 octets in line (most values end there), with this
         * copy's constants, when their CR's LF is readable; then the long
         * scan, not to the last octet: a CR there has no LF to read. */
        if (end - p > 64 && (vm = http_value_misses32(k, http_load32(p + 32))) != 0) {
            q = p + 32 + http_tz(vm);
        } else {
            q = http_value_cr_avx2(k, p + (end - p > 64 ? 64 : 32), end - 1);
            if (!q)
                return NULL;
        }
    }
    if (load2(q) != load2("\r\n") || (tail && p[c + 1] != ' ') || (unsigned char)p[c + 2] <= ' ' ||
        (unsigned char)q[-1] <= ' ')
        return NULL; /* HTAB, a control, other OWS, an empty value */
    *cp = c;
    return q;
}

/* The usual field lines in a row (usual_line), while 32 octets can be read
 * from each line's start, then the last ones from the buffer's last 32
 * octets. It stops before the first line of another shape or at the field
 * limit, and the general loop takes that line: it reads these lines exactly
 * as this does, so the verdict never depends on which loop read a line.
 * Returns where it stopped, *nfp counting the fields; *rc < 0 is
 * note_field's verdict. */
HTTP_AVX2 const char *field_run(const http_avx2_k *k, const char *buf, const char *p,
                                const char *end, http_request *r, head_state *st, size_t *nfp,
                                size_t fields_max, int *rc) {
    http_field *f = r->fields + *nfp;
    http_field *const fend = r->fields + fields_max;
    *rc = 0;
    if (end - buf < 32 || f == fend)
        return p;
    const char *const last = end - 32; /* the last 32-octet window */
    size_t c;
    const char *q;
    /* The field limit, without a test per line: a usual line has 6 octets
     * at least ("N: v" CRLF), so lines starting before stop, 6 × (free
     * slots − 1) octets on, fit the slots left; past it the slots are
     * counted again. At the limit the general loop reads the next line,
     * and answers 431 if it is a field. */
    while (last - p > 1) { /* 34 octets from p at least: see usual_line */
        size_t span = 6 * (size_t)(fend - f - 1) + 1, room = (size_t)(last - p) - 1;
        const char *const stop = p + (span < room ? span : room);
        for (; p < stop; p = q + 2, f++) {
            if (!(q = usual_line(k, p, end, p, 0, 0, &c)))
                goto out;
            *f = (http_field){p, c, p + c + 2, (size_t)(q - (p + c + 2))};
            if (special_first[c] == (*p | 0x20) && (*rc = note_field(st, r, f)) != 0 &&
                (*rc < 0 ||
                 (*rc = http_host_ok_avx2(k, buf, f->value, f->value_len) ? 0 : -400) < 0))
                return p;
        }
        if (f == fend)
            goto out;
    }
    /* The blank line that ends the head is the general loop's, without a
     * look at the window (tested before the loop, whose set-up costs); so
     * is a line starting one octet before the last window, which the tail
     * cannot read from (s would be -1). */
    if (p >= end || *p == '\r' || p < last)
        goto out;
    for (; p < end && *p != '\r'; p = q + 2) {
        if (!(q = usual_line(k, p, end, last, (size_t)(p - last), 1, &c)))
            break;
        *f = (http_field){p, c, p + c + 2, (size_t)(q - (p + c + 2))};
        if (special_first[c] == (*p | 0x20) && (*rc = note_field(st, r, f)) != 0 &&
            (*rc < 0 || (*rc = http_host_ok_avx2(k, buf, f->value, f->value_len) ? 0 : -400) < 0))
            return p;
        if (++f == fend) {
            p = q + 2;
            break;
        }
    }
out:
    *nfp = (size_t)(f - r->fields);
    return p;
}

/* The AVX2 copy of the same body: parse_avx2. */
HTTP_AVX2_TARGET __attribute__((noinline)) static int parse_avx2(const char *buf, size_t len,
                                                                 size_t prev_checked,
                                                                 http_request *r,
                                                                 const http_limits *lim);
#define PARSE_FN             parse_avx2
#define PARSE_ATTR           HTTP_AVX2_TARGET __attribute__((noinline))
#define SCAN_SETUP           const http_avx2_k kk = http_avx2_consts()
#define HOST_OK(lo, v, n)    http_host_ok_avx2(&kk, lo, v, n)
#define SCAN_FIELD           http_scan_field
#define SCAN_TARGET(l, p, e) http_scan_target_avx2(&kk, l, p, e)
#define FIELD_RUN(p, nf, rc) field_run(&kk, buf, p, end, r, &st, &nf, fields_max, &rc)
#include "http/http_parse_head.h"

/* 1 when parse_avx2 is the one used: set once before main (and by the test
 * hook), read on every call. */
static int use_avx2;

/* The AVX2 copy also uses BMI1 and BMI2 (tzcnt, shrx). */
static int have_avx2(void) {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") &&
           __builtin_cpu_supports("bmi2");
}

__attribute__((constructor(101))) static void choose_scan(void) {
    __builtin_cpu_init();
    const char *off = getenv("SPINDLE_HTTP_NO_AVX2");
    use_avx2 = have_avx2() && !(off && *off && strcmp(off, "0") != 0);
}

int http_parse_set_avx2(int on) {
    int was = use_avx2;
    if (on && !have_avx2())
        return -1;
    use_avx2 = on != 0;
    return was;
}

int http_parse_request(const char *buf, size_t len, size_t prev_checked, http_request *r,
                       const http_limits *lim) {
    if (use_avx2)
        return parse_avx2(buf, len, prev_checked, r, lim);
    return parse_base(buf, len, prev_checked, r, lim);
}
#else
int http_parse_set_avx2(int on) {
    return on ? -1 : 0;
}

int http_parse_request(const char *buf, size_t len, size_t prev_checked, http_request *r,
                       const http_limits *lim) {
    return parse_base(buf, len, prev_checked, r, lim);
}
#endif
