/* forwarded.h — trusting a proxy in front (--forwarded-allow-ips,
 * --forwarded-header), as a pure module: a list of trusted networks,
 * whether a peer is in it, and the client address and scheme a trusted peer
 * reports in the one header family the operator named. A parsed head and a
 * trust list in, an address out: no server, request or connection. */
#ifndef SPINDLE_FORWARDED_H
#define SPINDLE_FORWARDED_H

#include "http/http_parse.h"

#include <stddef.h>
#include <stdint.h>

#define FORWARD_MAX_NETS 32
/* Forwarded elements of one field line a walk can step back over; a line
 * with more trusted hops than this names no client (the peer is used). */
#define FORWARD_MAX_HOPS 32

/* Which header family the trusted proxy sets (the only one read). The
 * values are those of SP_FORWARDED_* in spindle.h. */
enum { FWD_HDR_XFF = 0, FWD_HDR_FORWARDED = 1 };

typedef struct ip_net {
    int family; /* AF_INET or AF_INET6 */
    uint8_t addr[16];
    int prefix; /* bits */
} ip_net;

/* The trusted proxies: networks, every peer ("*"), peers on a unix socket
 * ("unix"; "*" covers them too), and the header they set. All zero: none
 * trusted, X-Forwarded-For. */
typedef struct fwd_nets {
    ip_net trusted[FORWARD_MAX_NETS];
    int ntrusted;
    int trust_all;
    int trust_unix;
    int header; /* FWD_HDR_* */
} fwd_nets;

/* Adds the comma- or space-separated list (addresses, CIDR networks, "*",
 * "unix") to n. 0, -EINVAL for an item that is no address or network (what
 * came before it stays added: parse into a scratch copy), -ENOSPC past
 * FORWARD_MAX_NETS networks. */
int fwd_parse_nets(fwd_nets *n, const char *list);

/* 1 if a peer of family (AF_INET, AF_INET6: ip holds 4 or 16 bytes, an
 * IPv4-mapped ::ffff:a.b.c.d also matches IPv4 networks; AF_UNIX: trusted
 * with "unix" or "*") is a trusted proxy. */
int fwd_peer_trusted(const fwd_nets *n, int family, const uint8_t ip[16]);

/* The client address that head's proxies report, for a request from a
 * trusted peer. Only n->header's family is read; its field lines are one
 * comma-separated list (RFC 9110 5.3), walked from the right past trusted
 * hops: the first untrusted hop is the client, the leftmost if all are
 * trusted. A hop that names no address ("unknown", an obfuscated "_name",
 * garbage, a Forwarded element without for=) ends the walk with no client.
 * Writes the address to out (as written, without quotes, brackets or port)
 * and returns 1, or writes "" and returns 0 (the caller then uses the
 * peer's address). */
int fwd_client(const http_request *head, const fwd_nets *n, char *out, size_t cap);

/* 1 if the proxies report that the client came over https: Forwarded's
 * proto= of the element fwd_client's walk ended on, or the rightmost
 * X-Forwarded-Proto value (by n->header); 0 otherwise (http). */
int fwd_https(const http_request *head, const fwd_nets *n);

#endif
