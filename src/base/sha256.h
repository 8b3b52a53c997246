/* sha256.h — SHA-256 (FIPS 180-4): incremental (init, update, final) or in
 * one call. Pure, no allocation. */
#ifndef SPINDLE_SHA256_H
#define SPINDLE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32

typedef struct sha256_ctx {
    uint32_t h[8];
    uint64_t total; /* bytes hashed so far */
    uint8_t buf[64];
    size_t nbuf;
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
void sha256_final(sha256_ctx *c, uint8_t out[SHA256_LEN]);
void sha256(const void *data, size_t len, uint8_t out[SHA256_LEN]);

/* For tests: on 1, blocks take the portable C even where the CPU has the
 * SHA extensions; on 0, the fastest again. Returns whether the extensions
 * were in use before the call. */
int sha256_portable_only(int on);

#endif
