/* sha1.h — SHA-1 (FIPS 180-4) for the WebSocket handshake's accept key,
 * where RFC 6455 requires it; not for anything that needs collision
 * resistance. Pure, no allocation. */
#ifndef SPINDLE_SHA1_H
#define SPINDLE_SHA1_H

#include <stddef.h>
#include <stdint.h>

typedef struct sha1_ctx {
    uint32_t h[5];
    uint64_t bytes;
    uint8_t block[64];
    size_t fill;
} sha1_ctx;

void sha1_init(sha1_ctx *c);
void sha1_update(sha1_ctx *c, const void *data, size_t len);
void sha1_final(sha1_ctx *c, uint8_t out[20]);

#endif
