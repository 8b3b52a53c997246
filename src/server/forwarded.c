/* forwarded.c — trusting a proxy in front (--forwarded-allow-ips), see
 * forwarded.h: which peers are trusted, and the client address they report
 * in Forwarded (RFC 7239) or X-Forwarded-For. Walking the list from the right and stopping at
 * the first untrusted hop means a client cannot forge its address by
 * sending its own X-Forwarded-For through the proxy. */
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
        } else {
            if (nets->ntrusted == FORWARD_MAX_NETS)
                return -ENOSPC;
            ip_net *net = &nets->trusted[nets->ntrusted];
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

static int trusted(const fwd_nets *nets, int family, const uint8_t *addr) {
    if (nets->trust_all)
        return 1;
    for (int i = 0; i < nets->ntrusted; i++)
        if (in_net(&nets->trusted[i], family, addr))
            return 1;
    return 0;
}

int fwd_peer_trusted(const fwd_nets *nets, int family, const uint8_t ip[16]) {
    if (family == AF_UNIX)
        return nets->trust_all || nets->ntrusted > 0; /* a local proxy on a unix socket */
    return (family == AF_INET || family == AF_INET6) && trusted(nets, family, ip);
}

/* Strips quotes, brackets and a port from one Forwarded for= or XFF item. */
static int item_ip(const char *p, size_t n, int *family, uint8_t addr[16], const char **ip,
                   size_t *ip_len) {
    while (n && (p[0] == ' ' || p[0] == '\t')) {
        p++;
        n--;
    }
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
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

/* The "for=" values of a Forwarded header, right to left. */
static int from_forwarded(const fwd_nets *nets, const http_field *v, char *out, size_t cap) {
    size_t end = v->value_len;
    while (end > 0) {
        size_t start = end;
        while (start > 0 && v->value[start - 1] != ',')
            start--;
        const char *elem = v->value + start;
        size_t elen = end - start;
        const char *f = NULL;
        for (size_t i = 0; i + 4 <= elen; i++)
            if (http_ieq(elem + i, 4, "for=", 4) &&
                (i == 0 || elem[i - 1] == ';' || elem[i - 1] == ' ' || elem[i - 1] == ',')) {
                f = elem + i + 4;
                break;
            }
        if (f) {
            const char *fe = memchr(f, ';', (size_t)(elem + elen - f));
            size_t fl = fe ? (size_t)(fe - f) : (size_t)(elem + elen - f);
            int family;
            uint8_t addr[16];
            const char *ip;
            size_t ip_len;
            if (!item_ip(f, fl, &family, addr, &ip, &ip_len))
                return 0; /* "unknown" or obfuscated: stop trusting */
            if (!trusted(nets, family, addr)) {
                snprintf(out, cap, "%.*s", (int)ip_len, ip);
                return 1;
            }
        }
        end = start ? start - 1 : 0;
    }
    return 0;
}

static int from_xff(const fwd_nets *nets, const http_field *v, char *out, size_t cap) {
    size_t end = v->value_len;
    while (end > 0) {
        size_t start = end;
        while (start > 0 && v->value[start - 1] != ',')
            start--;
        int family;
        uint8_t addr[16];
        const char *ip;
        size_t ip_len;
        if (!item_ip(v->value + start, end - start, &family, addr, &ip, &ip_len))
            return 0;
        if (!trusted(nets, family, addr) || start == 0) {
            snprintf(out, cap, "%.*s", (int)ip_len, ip);
            return 1;
        }
        end = start - 1;
    }
    return 0;
}

/* The first field line named lname (lower case), as sp_req_header finds it. */
static const http_field *field(const http_request *head, const char *lname) {
    size_t n = strlen(lname);
    for (size_t i = 0; i < head->nfields; i++)
        if (http_ieq(head->fields[i].name, head->fields[i].name_len, lname, n))
            return &head->fields[i];
    return NULL;
}

int fwd_client(const http_request *head, const fwd_nets *nets, char *out, size_t cap) {
    out[0] = '\0';
    const http_field *fwd = field(head, "forwarded");
    if (fwd && from_forwarded(nets, fwd, out, cap))
        return 1;
    const http_field *xff = field(head, "x-forwarded-for");
    return xff && from_xff(nets, xff, out, cap);
}
