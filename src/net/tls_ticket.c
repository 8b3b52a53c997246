/* tls_ticket.c — session tickets every worker of a master can open. The
 * master makes a random secret before the fork; every period the secret
 * itself steps forward by a one-way ratchet (HKDF), the step before kept
 * only to decrypt, and the older one wiped: a process read later cannot
 * open the tickets of earlier periods (forward secrecy). The ratchet is a
 * function of the secret and the clock, so workers that step on their own
 * agree without talking; each period's keys are HKDF of that period's
 * secret with the epoch as info. Tickets are also refused for another SNI
 * name than the one they were made for (RFC 6066 §3). */
#include "net/tls_ctx.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* The secret of epoch `epoch` (cur) and of the one before (prev, to
 * decrypt only; has_prev 0 for a master's first period: nothing before). */
static struct {
    uint64_t epoch;
    unsigned char cur[32], prev[32];
    int has_prev, valid;
} st;

/* Each epoch's keys, derived at most once per epoch per process. */
static struct {
    uint64_t epoch;
    int valid;
    tls_ticket_key k;
} cache[2];

static uint64_t epoch_now(void) {
    return (uint64_t)time(NULL) / TLS_TICKET_PERIOD_S;
}

static int hkdf(const unsigned char *key, size_t klen, const unsigned char *info, size_t ilen,
                unsigned char *out, size_t olen) {
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
    EVP_KDF_CTX *kc = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
    EVP_KDF_free(kdf);
    if (!kc)
        return -1;
    OSSL_PARAM p[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, "SHA256", 0),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)key, klen),
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, ilen),
        OSSL_PARAM_construct_end(),
    };
    int ok = EVP_KDF_derive(kc, out, olen, p) == 1;
    EVP_KDF_CTX_free(kc);
    return ok ? 0 : -1;
}

int tls_ticket_ratchet(const unsigned char in[32], unsigned char out[32]) {
    static const unsigned char info[] = "spindle ticket secret ratchet";
    return hkdf(in, 32, info, sizeof info - 1, out, 32);
}

int tls_ticket_secret_init(void) {
    if (st.valid)
        return tls_ticket_tick(); /* a reload keeps the ratchet: tickets outlive a HUP */
    if (RAND_bytes(st.cur, sizeof st.cur) != 1)
        return -1;
    st.epoch = epoch_now();
    st.has_prev = 0;
    st.valid = 1;
    return 0;
}

int tls_ticket_tick(void) {
    if (!st.valid)
        return 0;
    uint64_t now = epoch_now();
    if (now <= st.epoch)
        return 0; /* a clock set back: the ratchet does not turn back */
    /* One step per period passed (an idle process catches up), so every
     * process reaches the same secret for the same epoch. */
    while (st.epoch < now) {
        unsigned char next[32];
        if (tls_ticket_ratchet(st.cur, next) < 0)
            return -1;
        memcpy(st.prev, st.cur, sizeof st.prev);
        memcpy(st.cur, next, sizeof st.cur);
        OPENSSL_cleanse(next, sizeof next);
        st.has_prev = 1;
        st.epoch++;
    }
    OPENSSL_cleanse(cache, sizeof cache); /* keys of wiped secrets go too */
    return 0;
}

int tls_ticket_derive(const unsigned char *sec, size_t len, uint64_t epoch, tls_ticket_key *k) {
    unsigned char info[24] = "spindle ticket ";
    for (int i = 0; i < 8; i++)
        info[16 + i] = (unsigned char)(epoch >> (8 * (7 - i)));
    return hkdf(sec, len, info, sizeof info, (unsigned char *)k, sizeof *k);
}

/* The key of epoch (the current or the previous one), or NULL. */
static const tls_ticket_key *key_of(uint64_t epoch) {
    const unsigned char *sec = epoch == st.epoch                      ? st.cur
                               : epoch + 1 == st.epoch && st.has_prev ? st.prev
                                                                      : NULL;
    if (!sec)
        return NULL;
    int slot = (int)(epoch & 1);
    if (!cache[slot].valid || cache[slot].epoch != epoch) {
        if (tls_ticket_derive(sec, 32, epoch, &cache[slot].k) < 0)
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
    if (!st.valid || tls_ticket_tick() < 0)
        return enc ? -1 : 0;
    if (enc) {
        const tls_ticket_key *k = key_of(st.epoch);
        if (!k || RAND_bytes(iv, EVP_CIPHER_iv_length(EVP_aes_256_cbc())) != 1)
            return -1;
        memcpy(name, k->name, 16);
        return set_key(k, iv, cctx, hctx, 1) < 0 ? -1 : 1;
    }
    const tls_ticket_key *cur = key_of(st.epoch), *prev = key_of(st.epoch - 1);
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

int tls_ticket_same_name(const char *made_for, const char *asked) {
    if (!made_for || !*made_for || !asked || !*asked)
        return (!made_for || !*made_for) && (!asked || !*asked);
    return strcasecmp(made_for, asked) == 0;
}

/* After decryption, before OpenSSL resumes: a session made for another SNI
 * name gets a full handshake (RFC 6066 §3), whichever certificate serves
 * both names. The session-id context (tls_ctx.c) already refuses one made
 * under another certificate or other trust settings. */
static SSL_TICKET_RETURN decrypted_cb(SSL *ssl, SSL_SESSION *ss, const unsigned char *keyname,
                                      size_t keyname_len, SSL_TICKET_STATUS status, void *arg) {
    (void)keyname, (void)keyname_len, (void)arg;
    switch (status) {
    case SSL_TICKET_SUCCESS:
    case SSL_TICKET_SUCCESS_RENEW:
        /* SSL_get_servername is not set yet: OpenSSL resumes before it
         * parses the extensions; the ClientHello callback kept the name. */
        if (!tls_ticket_same_name(SSL_SESSION_get0_hostname(ss), tls_ctx_hello_sni(ssl)))
            return SSL_TICKET_RETURN_IGNORE_RENEW;
        return status == SSL_TICKET_SUCCESS ? SSL_TICKET_RETURN_USE : SSL_TICKET_RETURN_USE_RENEW;
    case SSL_TICKET_FATAL_ERR_MALLOC:
    case SSL_TICKET_FATAL_ERR_OTHER:
        return SSL_TICKET_RETURN_ABORT;
    default:
        return SSL_TICKET_RETURN_IGNORE_RENEW; /* none, or not ours: a full handshake */
    }
}

void tls_ticket_install(SSL_CTX *ctx) {
    SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, ticket_cb);
    SSL_CTX_set_session_ticket_cb(ctx, NULL, decrypted_cb, NULL);
}
