/* session_hmac.h — SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), just
 * enough to sign session cookies, plus a comparison whose time does not
 * depend on where two MACs differ. */
#ifndef SPINDLE_SESSION_HMAC_H
#define SPINDLE_SESSION_HMAC_H

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

/* HMAC-SHA256 of msg under key (any length). */
void hmac_sha256(const void *key, size_t key_len, const void *msg, size_t len,
                 uint8_t out[SHA256_LEN]);

/* 1 if the len bytes at a and b are equal; time independent of contents. */
int sess_ct_equal(const void *a, const void *b, size_t len);

#endif
