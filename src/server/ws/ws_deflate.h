/* ws_deflate.h — permessage-deflate (RFC 7692) on zlib for one WebSocket:
 * compressor and inflater made on first use, freed after each message on a
 * side without context takeover; a broadcast compressed once per window
 * size (a server slot). The settings are ws_limits.h's. */
#ifndef SPINDLE_WS_DEFLATE_H
#define SPINDLE_WS_DEFLATE_H

#include "server/handler.h"
#include "server/ws/ws_ext.h"

#include <stddef.h>
#include <stdint.h>

#define WS_DEFLATE_WINDOW    12 /* 4 KiB windows: see docs/toolkit.md, "Compression" */
#define WS_DEFLATE_MEM_LEVEL 5

typedef struct ws_deflate ws_deflate;
typedef struct ws_blob ws_blob; /* compressed bytes being sent, shared by refcount */

/* A connection's compression state for the agreed parameters, or NULL
 * (out of memory). Allocates no zlib state yet. */
ws_deflate *ws_deflate_new(const ws_deflate_params *p, int mem_level);
void ws_deflate_free(ws_deflate *d);

/* The payload to send for a data message of len bytes: *out, *out_len,
 * and *rsv1 (1: compressed; 0: sent as it is, when compressing would not
 * make it smaller). *hold is released with ws_blob_put once the frame is
 * written (it may be NULL). s NULL: no sharing. Call under the writer lock: the compressor's
 * history must follow the order frames leave in. 0 or -ENOMEM. */
int ws_deflate_encode(sp_server *s, ws_deflate *d, const void *data, size_t len,
                      const uint8_t **out, size_t *out_len, int *rsv1, ws_blob **hold);
void ws_blob_put(ws_blob *b);

/* Where an inflated message goes: *buf grows (realloc) by doubling but
 * never past limit + 1 bytes of output and a NUL, so a bomb costs at most
 * the limit. */
typedef struct ws_sink {
    uint8_t **buf;
    size_t *len, *cap;
    size_t limit;
} ws_sink;

/* Inflates the next n bytes of a compressed message into o; last: they
 * end the message (the 4-byte tail of §7.2.2 is inflated after them, and
 * the inflater reset or, without context takeover, freed). 0, or
 * -WS_CLOSE_TOO_BIG (past o->limit), -WS_CLOSE_PROTOCOL (not DEFLATE data),
 * -ENOMEM. */
int ws_deflate_inflate(ws_deflate *d, const uint8_t *in, size_t n, int last, const ws_sink *o);

#endif
