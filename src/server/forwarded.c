/* forwarded.c — trusting a proxy in front (--forwarded-allow-ips), see
 * forwarded.h. Only the header family the proxy sets is read, its field
 * lines taken as one list and walked from the right: the proxy appends its
 * hop after whatever the client sent, so stopping at the first untrusted
 * hop (or at a hop that names nobody) never reads the client's own text. */
#include "server/forwarded.h"

#include "http/http_chars.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_ip(const char *s, size_t n, int *family, uint8_t addr[16]) {
    char tmp[INET6_ADDRSTRLEN + 1];
    if (n == 0 || n >= sizeof tmp)
        return 0;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    if (inet_pton(AF_INET, tmp, addr) == 1) {
        *family = AF_INET;
        return 1;
    }
    if (inet_pton(AF_INET6, tmp, addr) == 1) {
        *family = AF_INET6;
        return 1;
    }
    return 0;
}

/* One item of the list: an address or a CIDR network into net. */
static int parse_net(ip_net *net, const char *p, const char *end) {
    const char *slash = memchr(p, '/', (size_t)(end - p));
    const char *ip_end = slash ? slash : end;
    if (!parse_ip(p, (size_t)(ip_end - p), &net->family, net->addr))
        return -EINVAL;
    int max = net->family == AF_INET ? 32 : 128;
    net->prefix = max;
    if (slash) {
        char *e;
        long v = strtol(slash + 1, &e, 10);
        if (e != end || slash + 1 == end || v < 0 || v > max)
            return -EINVAL;
        net->prefix = (int)v;
    }
    return 0;
}

int fwd_parse_nets(fwd_nets *nets, const char *list) {
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p)
            break;
        const char *end = p;
        while (*end && *end != ',' && *end != ' ')
            end++;
        if (end - p == 1 && *p == '*') {
            nets->trust_all = 1;
        } else if (end - p == 4 && memcmp(p, "unix", 4) == 0) {
            nets->trust_unix = 1;
        } else {
            if (nets->ntrusted == FORWARD_MAX_NETS)
                return -ENOSPC;
            if (parse_net(&nets->trusted[nets->ntrusted], p, end) < 0)
                return -EINVAL;
            nets->ntrusted++;
        }
        p = end;
    }
    return 0;
}

static int in_net(const ip_net *n, int family, const uint8_t *addr) {
    if (n->family != family)
        return 0;
    int full = n->prefix / 8, rest = n->prefix % 8;
    if (memcmp(n->addr, addr, (size_t)full) != 0)
        return 0;
    if (rest) {
        uint8_t mask = (uint8_t)(0xff << (8 - rest));
        return (n->addr[full] & mask) == (addr[full] & mask);
    }
    return 1;
}

static const uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static int trusted(const fwd_nets *nets, int family, const uint8_t *addr) {
    if (nets->trust_all)
        return 1;
    /* ::ffff:a.b.c.d is the IPv4 peer of a dual-stack socket. */
    int mapped = family == AF_INET6 && memcmp(addr, v4_mapped, 12) == 0;
    for (int i = 0; i < nets->ntrusted; i++)
        if (in_net(&nets->trusted[i], family, addr) ||
            (mapped && in_net(&nets->trusted[i], AF_INET, addr + 12)))
            return 1;
    return 0;
}

int fwd_peer_trusted(const fwd_nets *nets, int family, const uint8_t ip[16]) {
    if (family == AF_UNIX) /* whoever may connect to the socket: only when said */
        return nets->trust_all || nets->trust_unix;
    return (family == AF_INET || family == AF_INET6) && trusted(nets, family, ip);
}

static int is_ows(char c) {
    return c == ' ' || c == '\t';
}

/* Strips blanks, quotes, brackets and a port from one hop and parses it. */
static int item_ip(const char *p, size_t n, int *family, uint8_t addr[16], const char **ip,
                   size_t *ip_len) {
    while (n && is_ows(p[0])) {
        p++;
        n--;
    }
    while (n && is_ows(p[n - 1]))
        n--;
    if (n >= 2 && p[0] == '"' && p[n - 1] == '"') {
        p++;
        n -= 2;
    }
    if (n && p[0] == '[') {
        const char *close = memchr(p, ']', n);
        if (!close)
            return 0;
        p++;
        n = (size_t)(close - p);
    } else {
        const char *colon = memchr(p, ':', n);
        if (colon && !memchr(colon + 1, ':', n - (size_t)(colon - p) - 1))
            n = (size_t)(colon - p); /* v4 with a port */
    }
    if (!parse_ip(p, n, family, addr))
        return 0;
    *ip = p;
    *ip_len = n;
    return 1;
}

static int put(char *out, size_t cap, const char *ip, size_t n) {
    snprintf(out, cap, "%.*s", (int)n, ip);
    return 1;
}

static int named(const http_field *f, const char *lname, size_t n) {
    return http_ieq(f->name, f->name_len, lname, n);
}

/* ---- X-Forwarded-For, X-Forwarded-Proto --------------------------------- */

/* The comma-separated elements of every field line with one name, as one
 * list (RFC 9110 5.3), from the right: the nearest proxy's first. */
typedef struct rlist {
    const http_request *h;
    const char *lname;
    size_t lname_len;
    size_t line; /* the line being walked is fields[line - 1] ... */
    size_t end;  /* ... its elements before value[end] */
    int in_line;
} rlist;

/* The next element, blanks trimmed (may be empty). 0 when none is left. */
static int rlist_next(rlist *w, const char **item, size_t *len) {
    while (!w->in_line) {
        if (w->line == 0)
            return 0;
        const http_field *f = &w->h->fields[--w->line];
        if (named(f, w->lname, w->lname_len)) {
            w->end = f->value_len;
            w->in_line = 1;
        }
    }
    const http_field *f = &w->h->fields[w->line];
    size_t start = w->end;
    while (start > 0 && f->value[start - 1] != ',')
        start--;
    const char *p = f->value + start;
    size_t n = w->end - start;
    if (start == 0)
        w->in_line = 0;
    else
        w->end = start - 1;
    while (n && is_ows(p[0])) {
        p++;
        n--;
    }
    while (n && is_ows(p[n - 1]))
        n--;
    *item = p;
    *len = n;
    return 1;
}

static int xff_client(const http_request *h, const fwd_nets *nets, char *out, size_t cap) {
    const char *left = NULL, *item, *ip; /* left: the leftmost trusted hop so far */
    size_t left_len = 0, n, ip_len;
    rlist w = {.h = h, .lname = "x-forwarded-for", .lname_len = 15, .line = h->nfields};
    while (rlist_next(&w, &item, &n)) {
        int family;
        uint8_t addr[16];
        if (!n)
            continue; /* empty elements are no hops (RFC 9110 5.6.1) */
        if (!item_ip(item, n, &family, addr, &ip, &ip_len))
            return 0; /* "unknown", garbage: nobody named */
        if (!trusted(nets, family, addr))
            return put(out, cap, ip, ip_len);
        left = ip;
        left_len = ip_len;
    }
    return left ? put(out, cap, left, left_len) : 0;
}

/* The rightmost X-Forwarded-Proto value: the nearest proxy's. */
static int xfp_https(const http_request *h) {
    const char *item;
    size_t n;
    rlist w = {.h = h, .lname = "x-forwarded-proto", .lname_len = 17, .line = h->nfields};
    while (rlist_next(&w, &item, &n))
        if (n)
            return http_ieq(item, n, "https", 5);
    return 0;
}

/* ---- Forwarded (RFC 7239) ----------------------------------------------- */

typedef struct fwd_elem {
    const char *for_v, *proto; /* NULL: no such parameter */
    size_t for_len, proto_len;
    int bad; /* not a well-formed element: names nobody */
} fwd_elem;

static const char *skip_ows(const char *p, const char *end) {
    while (p < end && is_ows(*p))
        p++;
    return p;
}

/* One parameter's value at p: a quoted string (its inside) or a run of
 * plain characters. NULL for an unclosed quote. */
static const char *pair_value(const char *p, const char *end, const char **v, size_t *vlen) {
    if (p < end && *p == '"') {
        *v = ++p;
        while (p < end && *p != '"')
            p += *p == '\\' && p + 1 < end ? 2 : 1;
        if (p >= end)
            return NULL;
        *vlen = (size_t)(p - *v);
        return p + 1;
    }
    *v = p;
    while (p < end && *p != ';' && *p != ',' && *p != '"' && !is_ows(*p))
        p++;
    *vlen = (size_t)(p - *v);
    return p;
}

/* Parses the element at p into e: name=value pairs split by ';' up to a
 * ',' outside quotes. Returns where the next element starts; a malformed
 * element is marked bad and ends at the next ','. *empty for a blank one. */
static const char *parse_elem(const char *p, const char *end, fwd_elem *e, int *empty) {
    *e = (fwd_elem){0};
    p = skip_ows(p, end);
    *empty = p == end || *p == ',';
    if (*empty)
        return p < end ? p + 1 : p;
    for (;;) {
        const char *name = p, *v;
        size_t vlen;
        while (p < end && http_is((unsigned char)*p, HTTP_C_TCHAR) && *p != '=')
            p++;
        size_t nlen = (size_t)(p - name);
        const char *next = nlen && p < end && *p == '=' ? pair_value(p + 1, end, &v, &vlen) : NULL;
        if (!next)
            break; /* the malformed element ends at the next ',' from p */
        p = next;
        const char **slot = http_ieq(name, nlen, "for", 3)     ? &e->for_v
                            : http_ieq(name, nlen, "proto", 5) ? &e->proto
                                                               : NULL;
        if (slot && *slot)
            break; /* a parameter twice in one element (RFC 7239 4) */
        if (slot) {
            *slot = v;
            *(slot == &e->for_v ? &e->for_len : &e->proto_len) = vlen;
        }
        p = skip_ows(p, end);
        if (p == end)
            return p;
        if (*p == ',')
            return p + 1;
        if (*p != ';')
            break;
        p = skip_ows(p + 1, end);
    }
    e->bad = 1;
    while (p < end && *p != ',')
        p++;
    return p < end ? p + 1 : p;
}

enum { W_NONE, W_CLIENT, W_NOBODY, W_LEFTMOST };

/* Whether element e ends the walk: W_CLIENT (an untrusted for=), W_NOBODY
 * (no address), or W_LEFTMOST (a trusted hop: go on). */
static int judge(const fwd_nets *nets, const fwd_elem *e) {
    int family;
    uint8_t addr[16];
    const char *ip;
    size_t ip_len;
    if (e->bad || !e->for_v || !item_ip(e->for_v, e->for_len, &family, addr, &ip, &ip_len))
        return W_NOBODY;
    return trusted(nets, family, addr) ? W_LEFTMOST : W_CLIENT;
}

/* One field line's elements from the right; *at is where the walk ended.
 * The last FORWARD_MAX_HOPS + 1 elements are kept as they are parsed. */
static int walk_line(const http_field *f, const fwd_nets *nets, fwd_elem *at) {
    enum { RING = FORWARD_MAX_HOPS + 1 };
    fwd_elem ring[RING];
    size_t total = 0;
    const char *p = f->value, *end = f->value + f->value_len;
    while (p < end) {
        int empty;
        p = parse_elem(p, end, &ring[total % RING], &empty);
        total += !empty;
    }
    size_t kept = total < RING ? total : RING;
    for (size_t k = 0; k < kept; k++) {
        *at = ring[(total - 1 - k) % RING];
        int w = judge(nets, at);
        if (w != W_LEFTMOST)
            return w;
    }
    if (total > kept)
        return W_NOBODY; /* more trusted hops than a walk steps over */
    return total ? W_LEFTMOST : W_NONE;
}

/* All Forwarded lines, the last first, as one list. */
static int forwarded_walk(const http_request *h, const fwd_nets *nets, fwd_elem *at) {
    int r = W_NONE;
    for (size_t i = h->nfields; i-- > 0;) {
        const http_field *f = &h->fields[i];
        fwd_elem e;
        int w = named(f, "forwarded", 9) ? walk_line(f, nets, &e) : W_NONE;
        if (w == W_NONE)
            continue;
        *at = e;
        r = w;
        if (w != W_LEFTMOST)
            break;
    }
    return r;
}

int fwd_client(const http_request *head, const fwd_nets *nets, char *out, size_t cap) {
    out[0] = '\0';
    if (nets->header != FWD_HDR_FORWARDED)
        return xff_client(head, nets, out, cap);
    fwd_elem e;
    int w = forwarded_walk(head, nets, &e), family;
    uint8_t addr[16];
    const char *ip;
    size_t ip_len;
    if ((w == W_CLIENT || w == W_LEFTMOST) &&
        item_ip(e.for_v, e.for_len, &family, addr, &ip, &ip_len))
        return put(out, cap, ip, ip_len);
    return 0;
}

int fwd_https(const http_request *head, const fwd_nets *nets) {
    if (nets->header != FWD_HDR_FORWARDED)
        return xfp_https(head);
    fwd_elem e;
    if (forwarded_walk(head, nets, &e) == W_NONE || !e.proto)
        return 0;
    return http_ieq(e.proto, e.proto_len, "https", 5);
}
