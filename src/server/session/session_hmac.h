/* session_hmac.h — HMAC-SHA256 (RFC 2104) on base/sha256.h (included here,
 * so its users get SHA-256 too), just enough to sign session cookies, plus
 * a comparison whose time does not depend on where two MACs differ. */
#ifndef SPINDLE_SESSION_HMAC_H
#define SPINDLE_SESSION_HMAC_H

#include "base/sha256.h"

#include <stddef.h>
#include <stdint.h>

/* HMAC-SHA256 of msg under key (any length). */
void hmac_sha256(const void *key, size_t key_len, const void *msg, size_t len,
                 uint8_t out[SHA256_LEN]);

/* 1 if the len bytes at a and b are equal; time independent of contents. */
int sess_ct_equal(const void *a, const void *b, size_t len);

#endif
