/* static_http.c — the pure HTTP parts of static file serving: path mapping,
 * Range parsing (RFC 9110 §14), HTTP-dates (§5.6.7), entity-tags and
 * preconditions (§8.8, §13), Accept-Encoding (§12.5.3). See static_http.h. */
#include "server/static/static_http.h"

#include "http/http_chars.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static int is_ows(int c) {
    return c == ' ' || c == '\t';
}

static int ieq_prefix(const char *s, size_t len, const char *lit) {
    size_t n = strlen(lit);
    if (len < n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (http_lower((unsigned char)s[i]) != lit[i])
            return 0;
    return 1;
}

long static_rel_path(const char *rest, size_t len, char *out, size_t cap, int *trailing_slash) {
    size_t o = 0, i = 0;
    *trailing_slash = len > 0 && rest[len - 1] == '/';
    if (len == 0) {
        if (cap < 2)
            return -1;
        memcpy(out, ".", 2);
        return 1;
    }
    while (i < len) {
        size_t seg_start = o;
        if (rest[i] == '/')
            return -1; /* an empty segment: the normalizer merges runs, so never legitimate */
        while (i < len && rest[i] != '/') {
            int c = (unsigned char)rest[i];
            if (c == '%') {
                int h = i + 2 < len ? http_hexval((unsigned char)rest[i + 1]) : -1;
                int l = i + 2 < len ? http_hexval((unsigned char)rest[i + 2]) : -1;
                if (h < 0 || l < 0)
                    return -1;
                c = h * 16 + l;
                i += 3;
            } else {
                i++;
            }
            if (c == '/' || c == 0)
                return -1; /* "%2F" is not a separator here and never a name */
            if (o + 1 >= cap)
                return -1;
            out[o++] = (char)c;
        }
        if (out[seg_start] == '.')
            return -1; /* dotfiles, and "." / ".." in any spelling */
        if (i < len) { /* at a '/' */
            i++;
            if (i < len) {
                if (o + 1 >= cap)
                    return -1;
                out[o++] = '/';
            }
        }
    }
    out[o] = '\0';
    return (long)o;
}

/* ---- Range, RFC 9110 §14.1.2 ------------------------------------------- */

/* Digits at s[*i..len) into *v, saturating; -1 if there are none. */
static int parse_u64(const char *s, size_t len, size_t *i, uint64_t *v) {
    size_t start = *i;
    uint64_t x = 0;
    while (*i < len && s[*i] >= '0' && s[*i] <= '9') {
        unsigned d = (unsigned)(s[*i] - '0');
        x = x > (UINT64_MAX - d) / 10 ? UINT64_MAX : x * 10 + d;
        (*i)++;
    }
    *v = x;
    return *i > start ? 0 : -1;
}

static_range static_range_parse(const char *v, size_t len, uint64_t size, uint64_t *start,
                                uint64_t *count) {
    size_t i = 0;
    while (i < len && is_ows((unsigned char)v[i]))
        i++;
    if (!ieq_prefix(v + i, len - i, "bytes="))
        return STATIC_RANGE_NONE; /* another unit must be ignored (§14.2) */
    i += 6;
    size_t specs = 0, satisfiable = 0;
    uint64_t s0 = 0, c0 = 0;
    for (;;) {
        while (i < len && (is_ows((unsigned char)v[i]) || v[i] == ','))
            i++; /* empty list elements are allowed (§5.6.1.2) */
        if (i == len)
            break;
        uint64_t first = 0, last = UINT64_MAX;
        int suffix = v[i] == '-';
        if (suffix) {
            i++;
            if (parse_u64(v, len, &i, &last) < 0)
                return STATIC_RANGE_NONE;
        } else {
            if (parse_u64(v, len, &i, &first) < 0 || i == len || v[i] != '-')
                return STATIC_RANGE_NONE;
            i++;
            if (i < len && v[i] >= '0' && v[i] <= '9')
                parse_u64(v, len, &i, &last);
        }
        while (i < len && is_ows((unsigned char)v[i]))
            i++;
        if (i < len && v[i] != ',')
            return STATIC_RANGE_NONE; /* garbage inside the range-set */
        specs++;
        if (suffix) {
            if (last == 0 || size == 0)
                continue; /* §14.1.1: suffix-length 0 is unsatisfiable */
            uint64_t n = last < size ? last : size;
            s0 = size - n;
            c0 = n;
        } else {
            if (last < first || first >= size)
                continue; /* invalid or past the end: unsatisfiable */
            uint64_t end = last < size - 1 ? last : size - 1;
            s0 = first;
            c0 = end - first + 1;
        }
        satisfiable++;
    }
    if (specs == 0)
        return STATIC_RANGE_NONE;
    if (satisfiable == 0)
        return STATIC_RANGE_UNSATISFIABLE;
    if (specs > 1)
        return STATIC_RANGE_MULTI;
    *start = s0;
    *count = c0;
    return STATIC_RANGE_ONE;
}

/* ---- HTTP-date, RFC 9110 §5.6.7 ----------------------------------------- */

static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
static const char wdays[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};

/* Days since 1970-01-01 of a proleptic Gregorian date (month 1..12). */
static int64_t days_from_civil(int64_t y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

typedef struct scan {
    const char *s;
    size_t len, i;
} scan;

static int sc_lit(scan *c, const char *lit) {
    size_t n = strlen(lit);
    if (c->len - c->i < n || memcmp(c->s + c->i, lit, n) != 0)
        return -1;
    c->i += n;
    return 0;
}

/* Exactly ndig digits (ndig_max > ndig: up to that many). */
static int sc_num(scan *c, int ndig, int ndig_max, int *v) {
    int x = 0, k = 0;
    while (k < ndig_max && c->i < c->len && c->s[c->i] >= '0' && c->s[c->i] <= '9') {
        x = x * 10 + (c->s[c->i++] - '0');
        k++;
    }
    *v = x;
    return k >= ndig ? 0 : -1;
}

static int sc_month(scan *c, int *m) {
    if (c->len - c->i < 3)
        return -1;
    for (int k = 0; k < 12; k++)
        if (memcmp(c->s + c->i, months[k], 3) == 0) {
            *m = k + 1;
            c->i += 3;
            return 0;
        }
    return -1;
}

static int sc_letters(scan *c) {
    size_t start = c->i;
    while (c->i < c->len &&
           ((c->s[c->i] >= 'a' && c->s[c->i] <= 'z') || (c->s[c->i] >= 'A' && c->s[c->i] <= 'Z')))
        c->i++;
    return c->i - start >= 3 ? 0 : -1;
}

static int sc_time(scan *c, int *h, int *mi, int *s) {
    if (sc_num(c, 2, 2, h) || sc_lit(c, ":") || sc_num(c, 2, 2, mi) || sc_lit(c, ":") ||
        sc_num(c, 2, 2, s))
        return -1;
    return 0;
}

int static_date_parse(const char *v, size_t len, int64_t *t) {
    while (len && is_ows((unsigned char)v[len - 1]))
        len--;
    while (len && is_ows((unsigned char)*v)) {
        v++;
        len--;
    }
    scan c = {v, len, 0};
    int y, m, d, h, mi, s;
    if (sc_letters(&c))
        return -1;
    if (c.i < len && v[c.i] == ',') {
        c.i++;
        if (c.i < len && v[c.i] == ' ' && c.i + 3 < len && v[c.i + 3] == ' ') {
            /* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
            c.i++;
            if (sc_num(&c, 2, 2, &d) || sc_lit(&c, " ") || sc_month(&c, &m) || sc_lit(&c, " ") ||
                sc_num(&c, 4, 4, &y) || sc_lit(&c, " ") || sc_time(&c, &h, &mi, &s) ||
                sc_lit(&c, " GMT"))
                return -1;
        } else {
            /* RFC 850: Sunday, 06-Nov-94 08:49:37 GMT */
            if (sc_lit(&c, " ") || sc_num(&c, 2, 2, &d) || sc_lit(&c, "-") || sc_month(&c, &m) ||
                sc_lit(&c, "-") || sc_num(&c, 2, 2, &y) || sc_lit(&c, " ") ||
                sc_time(&c, &h, &mi, &s) || sc_lit(&c, " GMT"))
                return -1;
            y += y < 70 ? 2000 : 1900;
        }
    } else {
        /* asctime: Sun Nov  6 08:49:37 1994 */
        if (sc_lit(&c, " ") || sc_month(&c, &m) || sc_lit(&c, " "))
            return -1;
        if (c.i < len && v[c.i] == ' ')
            c.i++;
        if (sc_num(&c, 1, 2, &d) || sc_lit(&c, " ") || sc_time(&c, &h, &mi, &s) ||
            sc_lit(&c, " ") || sc_num(&c, 4, 4, &y))
            return -1;
    }
    if (c.i != len || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
        return -1;
    *t = days_from_civil(y, m, d) * 86400 + h * 3600 + mi * 60 + s;
    return 0;
}

static char *put2(char *p, int v) {
    *p++ = (char)('0' + v / 10 % 10);
    *p++ = (char)('0' + v % 10);
    return p;
}

void static_date_format(int64_t t, char *out) {
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || tm.tm_year + 1900 > 9999 || tm.tm_year + 1900 < 0) {
        tt = 0;
        gmtime_r(&tt, &tm);
    }
    int y = tm.tm_year + 1900;
    char *p = out;
    memcpy(p, wdays[tm.tm_wday], 3);
    p += 3;
    *p++ = ',';
    *p++ = ' ';
    p = put2(p, tm.tm_mday);
    *p++ = ' ';
    memcpy(p, months[tm.tm_mon], 3);
    p += 3;
    *p++ = ' ';
    p = put2(p, y / 100);
    p = put2(p, y % 100);
    *p++ = ' ';
    p = put2(p, tm.tm_hour);
    *p++ = ':';
    p = put2(p, tm.tm_min);
    *p++ = ':';
    p = put2(p, tm.tm_sec);
    memcpy(p, " GMT", 5);
}

/* ---- entity-tags, RFC 9110 §8.8.3 ---------------------------------------- */

size_t static_etag_format(char *out, uint64_t size, uint64_t mtime_ns, int gz) {
    int n = snprintf(out, STATIC_ETAG_CAP, "\"%llx-%llx%s\"", (unsigned long long)size,
                     (unsigned long long)mtime_ns, gz ? "-gz" : "");
    return (size_t)n;
}

/* One entity-tag at s[*i..len): sets *weak, and *tag, *tag_len (with quotes).
 * 0, or -1 when malformed. */
static int etag_scan(const char *s, size_t len, size_t *i, int *weak, const char **tag,
                     size_t *tag_len) {
    *weak = 0;
    if (*i + 1 < len && s[*i] == 'W' && s[*i + 1] == '/') {
        *weak = 1;
        *i += 2;
    }
    if (*i >= len || s[*i] != '"')
        return -1;
    size_t start = (*i)++;
    while (*i < len && s[*i] != '"') {
        unsigned char ch = (unsigned char)s[*i];
        if (ch < 0x21 || ch == 0x7f)
            return -1; /* etagc = %x21 / %x23-7E / obs-text */
        (*i)++;
    }
    if (*i >= len)
        return -1;
    (*i)++;
    *tag = s + start;
    *tag_len = *i - start;
    return 0;
}

/* Skips OWS and commas to the next member of a comma-separated list
 * (RFC 9110 §5.6.1); 0 at the end of the list. */
static int list_next(const char *s, size_t len, size_t *i) {
    while (*i < len && (is_ows((unsigned char)s[*i]) || s[*i] == ','))
        (*i)++;
    return *i < len;
}

int static_etag_match(const sp_str *vals, size_t n, const char *etag, size_t etag_len, int weak) {
    int our_weak = etag_len > 2 && etag[0] == 'W' && etag[1] == '/';
    const char *ours = our_weak ? etag + 2 : etag;
    size_t ours_len = our_weak ? etag_len - 2 : etag_len;
    for (size_t k = 0; k < n; k++) {
        const char *s = vals[k].ptr;
        size_t len = vals[k].len, i = 0;
        if (!s)
            continue;
        for (;;) {
            if (!list_next(s, len, &i))
                break;
            if (s[i] == '*') {
                return 1; /* any current representation */
            }
            int w;
            const char *tag;
            size_t tl;
            if (etag_scan(s, len, &i, &w, &tag, &tl) < 0)
                break;
            if (tl == ours_len && memcmp(tag, ours, tl) == 0 && (weak || (!w && !our_weak)))
                return 1;
        }
    }
    return 0;
}

/* ---- preconditions, RFC 9110 §13.2.2 --------------------------------------- */

int static_preconditions(const static_cond *c, const char *etag, size_t etag_len,
                         int64_t last_modified) {
    int64_t t;
    /* Steps 1-2: the state-changing preconditions, also answerable for GET. */
    if (c->n_if_match) {
        if (!static_etag_match(c->if_match, c->n_if_match, etag, etag_len, 0))
            return 412;
    } else if (c->if_unmodified_since.ptr &&
               static_date_parse(c->if_unmodified_since.ptr, c->if_unmodified_since.len, &t) == 0 &&
               last_modified > t) {
        return 412;
    }
    /* Steps 3-4: for GET and HEAD, a match means "you have it" (§15.4.5). */
    if (c->n_if_none_match) {
        if (static_etag_match(c->if_none_match, c->n_if_none_match, etag, etag_len, 1))
            return 304;
    } else if (c->if_modified_since.ptr &&
               static_date_parse(c->if_modified_since.ptr, c->if_modified_since.len, &t) == 0 &&
               last_modified <= t) {
        return 304;
    }
    return 0;
}

int static_if_range(sp_str v, const char *etag, size_t etag_len, int64_t last_modified,
                    int64_t now) {
    if (!v.ptr)
        return 1;
    size_t i = 0, len = v.len;
    while (i < len && is_ows((unsigned char)v.ptr[i]))
        i++;
    if (i < len && (v.ptr[i] == '"' || v.ptr[i] == 'W')) {
        int w;
        const char *tag;
        size_t tl;
        if (etag_scan(v.ptr, len, &i, &w, &tag, &tl) < 0)
            return 0;
        while (i < len && is_ows((unsigned char)v.ptr[i]))
            i++;
        /* Strong comparison (§8.8.3.2): a weak tag on either side never matches. */
        return i == len && !w && tl == etag_len && memcmp(tag, etag, tl) == 0;
    }
    int64_t t;
    if (static_date_parse(v.ptr, len, &t) < 0)
        return 0;
    return t == last_modified && last_modified < now;
}

/* ---- Accept-Encoding, RFC 9110 §12.5.3 ---------------------------------------- */

/* The qvalue of a member's parameters at s[*i..len) (after the coding),
 * 1000ths; advances past the member. -1 if malformed. */
static int member_q(const char *s, size_t len, size_t *i) {
    int q = 1000;
    for (;;) {
        while (*i < len && is_ows((unsigned char)s[*i]))
            (*i)++;
        if (*i == len || s[*i] == ',')
            return q;
        if (s[*i] != ';')
            return -1;
        (*i)++;
        while (*i < len && is_ows((unsigned char)s[*i]))
            (*i)++;
        if (*i + 1 < len && http_lower((unsigned char)s[*i]) == 'q' && s[*i + 1] == '=') {
            *i += 2;
            if (*i == len || (s[*i] != '0' && s[*i] != '1'))
                return -1;
            int whole = s[(*i)++] - '0', frac = 0, digits = 0;
            if (*i < len && s[*i] == '.') {
                (*i)++;
                while (*i < len && s[*i] >= '0' && s[*i] <= '9' && digits < 3) {
                    frac = frac * 10 + (s[(*i)++] - '0');
                    digits++;
                }
                while (digits < 3) {
                    frac *= 10;
                    digits++;
                }
            }
            q = whole ? 1000 : frac;
        } else {
            while (*i < len && s[*i] != ';' && s[*i] != ',')
                (*i)++; /* another parameter: skipped */
        }
    }
}

int static_accepts_gzip(const sp_str *vals, size_t n) {
    int gzip_q = -1, star_q = -1;
    for (size_t k = 0; k < n; k++) {
        const char *s = vals[k].ptr;
        size_t len = vals[k].len, i = 0;
        if (!s)
            continue;
        for (;;) {
            if (!list_next(s, len, &i))
                break;
            size_t start = i;
            while (i < len && s[i] != ';' && s[i] != ',' && !is_ows((unsigned char)s[i]))
                i++;
            size_t cl = i - start;
            int q = member_q(s, len, &i);
            if (q < 0)
                break;
            if ((cl == 4 && ieq_prefix(s + start, cl, "gzip")) ||
                (cl == 6 && ieq_prefix(s + start, cl, "x-gzip")))
                gzip_q = q > gzip_q ? q : gzip_q;
            else if (cl == 1 && s[start] == '*')
                star_q = q;
        }
    }
    if (gzip_q >= 0)
        return gzip_q > 0;
    return star_q > 0;
}
