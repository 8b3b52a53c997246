/* req_scheme.c — sp_req_scheme, the scheme the client used, for features
 * that must know whether a request came over TLS (the session cookie's
 * Secure). NOTE: a minimal stand-in until the Forwarded/X-Forwarded-Proto
 * work lands: it believes only X-Forwarded-Proto, and only from a trusted
 * proxy (--forwarded-allow-ips); replace this file with that version. */
#include "server/conn.h"
#include "server/handler.h"

#include <strings.h>

const char *sp_req_scheme(const sp_req *req) {
    if (!req->c || !req->c->peer_trusted)
        return "http"; /* spindle itself speaks no TLS */
    sp_str v = sp_req_header(req, "X-Forwarded-Proto");
    return v.len == 5 && strncasecmp(v.ptr, "https", 5) == 0 ? "https" : "http";
}
