/* proxy_proto.h — HAProxy's PROXY protocol header (v1 text, v2 binary),
 * the few bytes a load balancer sends before the client's first byte to
 * name the client it is relaying. A pure function over bytes: no socket,
 * no allocation; the connection driver decides what to do with the verdict. */
#ifndef SPINDLE_PROXY_PROTO_H
#define SPINDLE_PROXY_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define PROXY_V1_MAX 107 /* the longest v1 line, CRLF included (the spec's bound) */
#define PROXY_V2_MIN 16  /* signature, version/command, family, length */

/* What a header says. family is AF_INET or AF_INET6 (src/dst and their
 * ports are the client's and the address it reached, network order copied
 * into host integers for the ports), AF_UNIX (the client came to the proxy
 * over a unix socket: no address kept), or AF_UNSPEC: a v1 UNKNOWN line, a
 * v2 LOCAL command (the proxy's own health check) or a v2 UNSPEC family,
 * for which the connection's own endpoints stand. */
typedef struct proxy_hdr {
    int version; /* 1 or 2 */
    int family;
    uint8_t src[16], dst[16]; /* 4 bytes used for AF_INET */
    uint16_t src_port, dst_port;
} proxy_hdr;

enum { PROXY_NEED_MORE = 0, PROXY_BAD = -1 };

/* Parses the header at the start of buf[0..len). Returns its length (> 0:
 * the bytes to skip before the client's own), PROXY_NEED_MORE when buf is
 * a proper prefix of a header that may still be valid (a v1 line not yet
 * ended within PROXY_V1_MAX, a v2 header short of its length), or
 * PROXY_BAD: anything else (no signature, a malformed line or block, a
 * length that does not fit the family, TLVs that do not tile the rest of
 * the block). v2 TLVs are checked for shape and skipped. out is written
 * only on success. */
int proxy_parse(const uint8_t *buf, size_t len, proxy_hdr *out);

#endif
