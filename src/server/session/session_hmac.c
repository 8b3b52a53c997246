/* session_hmac.c — HMAC-SHA256 for signing session cookies, on the SHA-256
 * of base/sha256.c (no crypto library is linked). Checked against the RFC
 * 4231 vectors in tests/unit/test_session_hmac.c. */
#include "server/session/session_hmac.h"

#include <string.h>

void hmac_sha256(const void *key, size_t key_len, const void *msg, size_t len,
                 uint8_t out[SHA256_LEN]) {
    uint8_t k[64] = {0}, pad[64], inner[SHA256_LEN];
    if (key_len > 64)
        sha256(key, key_len, k);
    else
        memcpy(k, key, key_len);
    sha256_ctx c;
    for (int i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x36;
    sha256_init(&c);
    sha256_update(&c, pad, 64);
    sha256_update(&c, msg, len);
    sha256_final(&c, inner);
    for (int i = 0; i < 64; i++)
        pad[i] = k[i] ^ 0x5c;
    sha256_init(&c);
    sha256_update(&c, pad, 64);
    sha256_update(&c, inner, sizeof inner);
    sha256_final(&c, out);
}

int sess_ct_equal(const void *a, const void *b, size_t len) {
    const volatile uint8_t *x = a, *y = b;
    uint8_t diff = 0;
    for (size_t i = 0; i < len; i++)
        diff |= x[i] ^ y[i];
    return diff == 0;
}
