/* forwarded.h — trusting a proxy in front (--forwarded-allow-ips), as a pure
 * module: a list of trusted networks, whether a peer is in it, and the
 * client address a trusted peer reports in Forwarded (RFC 7239) or
 * X-Forwarded-For. A parsed head and a trust list in, an address out: no
 * server, request or connection. */
#ifndef SPINDLE_FORWARDED_H
#define SPINDLE_FORWARDED_H

#include "http/http_parse.h"

#include <stddef.h>
#include <stdint.h>

#define FORWARD_MAX_NETS 32

typedef struct ip_net {
    int family; /* AF_INET or AF_INET6 */
    uint8_t addr[16];
    int prefix; /* bits */
} ip_net;

/* The trusted proxies: networks, or every peer ("*"). All zero: none. */
typedef struct fwd_nets {
    ip_net trusted[FORWARD_MAX_NETS];
    int ntrusted;
    int trust_all;
} fwd_nets;

/* Adds the comma- or space-separated list (addresses, CIDR networks, "*")
 * to n. 0, -EINVAL for an item that is no address or network (what came
 * before it stays added), -ENOSPC past FORWARD_MAX_NETS networks. */
int fwd_parse_nets(fwd_nets *n, const char *list);

/* 1 if a peer of family (AF_INET, AF_INET6: ip holds 4 or 16 bytes;
 * AF_UNIX: a local proxy, trusted when any proxy is) is a trusted proxy. */
int fwd_peer_trusted(const fwd_nets *n, int family, const uint8_t ip[16]);

/* The client address that head's proxies report, for a request from a
 * trusted peer: the rightmost untrusted hop of the first Forwarded field's
 * for= values, else of the first X-Forwarded-For field (its leftmost if all
 * are trusted). Writes it to out (as written, without quotes, brackets or
 * port) and returns 1, or writes "" and returns 0 when the head names none
 * (the caller then uses the peer's address). */
int fwd_client(const http_request *head, const fwd_nets *n, char *out, size_t cap);

#endif
