/* tls_ticket.c — session tickets every worker of a master can open: the
 * master makes one random secret before the fork, and each worker derives
 * the key of the current hour from it (HKDF-SHA256, the epoch as info), so
 * they agree without talking; a ticket of the previous hour still resumes
 * (and is renewed), an older one gets a full handshake. */
#include "net/tls_ctx.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <string.h>
#include <time.h>

static unsigned char secret[32];
static int have_secret;

int tls_ticket_secret_init(void) {
    if (have_secret)
        return 0; /* kept over reloads: tickets outlive a HUP */
    if (RAND_bytes(secret, sizeof secret) != 1)
        return -1;
    have_secret = 1;
    return 0;
}

int tls_ticket_derive(const unsigned char *sec, size_t len, uint64_t epoch, tls_ticket_key *k) {
    unsigned char info[24] = "spindle ticket ";
    for (int i = 0; i < 8; i++)
        info[16 + i] = (unsigned char)(epoch >> (8 * (7 - i)));
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
    EVP_KDF_CTX *kc = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
    EVP_KDF_free(kdf);
    if (!kc)
        return -1;
    OSSL_PARAM p[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, "SHA256", 0),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)sec, len),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, sizeof info),
        OSSL_PARAM_construct_end(),
    };
    int ok = EVP_KDF_derive(kc, (unsigned char *)k, sizeof *k, p) == 1;
    EVP_KDF_CTX_free(kc);
    return ok ? 0 : -1;
}

/* The key of epoch, derived at most once per epoch per worker. */
static const tls_ticket_key *key_of(uint64_t epoch) {
    static struct {
        uint64_t epoch;
        int valid;
        tls_ticket_key k;
    } cache[2];
    int slot = (int)(epoch & 1);
    if (!cache[slot].valid || cache[slot].epoch != epoch) {
        if (tls_ticket_derive(secret, sizeof secret, epoch, &cache[slot].k) < 0)
            return NULL;
        cache[slot].epoch = epoch;
        cache[slot].valid = 1;
    }
    return &cache[slot].k;
}

static int set_key(const tls_ticket_key *k, unsigned char *iv, EVP_CIPHER_CTX *cctx,
                   EVP_MAC_CTX *hctx, int enc) {
    OSSL_PARAM p[] = {
        OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, (void *)k->hmac, sizeof k->hmac),
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, "SHA256", 0),
        OSSL_PARAM_construct_end(),
    };
    if (!EVP_MAC_CTX_set_params(hctx, p))
        return -1;
    const EVP_CIPHER *c = EVP_aes_256_cbc();
    int ok = enc ? EVP_EncryptInit_ex(cctx, c, NULL, k->aes, iv)
                 : EVP_DecryptInit_ex(cctx, c, NULL, k->aes, iv);
    return ok ? 0 : -1;
}

/* OpenSSL's ticket callback: 1 (use this key), 2 (decrypted with an old
 * key: issue a new ticket), 0 (unknown key: full handshake), -1 error. */
static int ticket_cb(SSL *ssl, unsigned char name[16], unsigned char *iv, EVP_CIPHER_CTX *cctx,
                     EVP_MAC_CTX *hctx, int enc) {
    if (!have_secret)
        return enc ? -1 : 0;
    uint64_t epoch = (uint64_t)time(NULL) / TLS_TICKET_PERIOD_S;
    if (enc) {
        const tls_ticket_key *k = key_of(epoch);
        if (!k || RAND_bytes(iv, EVP_CIPHER_iv_length(EVP_aes_256_cbc())) != 1)
            return -1;
        memcpy(name, k->name, 16);
        return set_key(k, iv, cctx, hctx, 1) < 0 ? -1 : 1;
    }
    const tls_ticket_key *cur = key_of(epoch), *prev = key_of(epoch - 1);
    int which = tls_ticket_find(cur, prev, name);
    if (!which)
        return 0;
    return set_key(which == 1 ? cur : prev, iv, cctx, hctx, 0) < 0 ? -1 : which;
}

int tls_ticket_find(const tls_ticket_key *cur, const tls_ticket_key *prev,
                    const unsigned char name[16]) {
    if (cur && memcmp(name, cur->name, 16) == 0)
        return 1;
    if (prev && memcmp(name, prev->name, 16) == 0)
        return 2;
    return 0;
}

void tls_ticket_install(SSL_CTX *ctx) {
    SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, ticket_cb);
}
