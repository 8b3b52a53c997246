/* tls_ctx.h — a TLS listener's contexts: one SSL_CTX per certificate
 * (chosen by SNI from the names in the certificates; the first is the
 * default), built once in the master from a tls_config and inherited by the
 * workers; the pure name matching and the session-ticket keys every worker
 * derives alike from one secret (tls_names.c, tls_ticket.c). */
#ifndef SPINDLE_NET_TLS_CTX_H
#define SPINDLE_NET_TLS_CTX_H

#include <openssl/ssl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TLS_MAX_CERTS 16
#define TLS_MAX_NAMES 32 /* names kept per certificate for SNI */

enum { TLS_VERIFY_NONE, TLS_VERIFY_OPTIONAL, TLS_VERIFY_REQUIRED };

typedef struct tls_config {
    const char *certfiles[TLS_MAX_CERTS]; /* PEM, chain included */
    const char *keyfiles[TLS_MAX_CERTS];  /* NULL: the key is in the certfile */
    int ncerts;
    const char *ca_certs; /* client certificates are verified against it */
    int cert_reqs;        /* TLS_VERIFY_* */
    const char *ciphers;  /* TLS 1.2 suites (OpenSSL list); NULL: the defaults */
    int min_version;      /* 12 or 13 (TLS 1.2, 1.3) */
    const char *alpn;     /* protocols offered, comma-separated, preferred first */
} tls_config;

typedef struct tls_ctx tls_ctx;

/* Builds the contexts. NULL with a message in err naming the file and
 * OpenSSL's reason, and what to do. */
tls_ctx *tls_ctx_build(const tls_config *cfg, char *err, size_t errcap);
void tls_ctx_free(tls_ctx *t);

/* Replaces the ALPN list ("h2,http/1.1"). 0, or -EINVAL (a name longer
 * than 255 bytes, or more than fit). */
int tls_ctx_set_alpn(tls_ctx *t, const char *list);

/* A new server-side SSL on fd (the default context; SNI may switch it). */
SSL *tls_ctx_new_ssl(tls_ctx *t, int fd);
/* The default context (the first certificate's), for an SSL of the
 * caller's own on other BIOs (a fuzz target's memory BIOs). */
SSL_CTX *tls_ctx_default(tls_ctx *t);

/* Whether a request whose Host is host (host_len bytes, a ":port" ignored)
 * on a connection whose SNI name is sni was misdirected (RFC 9110
 * §15.5.20): both names are served by certificates of ctx's listener, but
 * not by the same one. A Host no certificate names is not (the app's). */
int tls_ctx_misdirected(const tls_ctx *t, const SSL *ssl, const char *sni, const char *host,
                        size_t host_len);
/* The SNI name of the ClientHello an SSL of tls_ctx_new_ssl is handling or
 * handled (NULL: none), as parsed before resumption is decided. */
const char *tls_ctx_hello_sni(const SSL *ssl);
/* The tls_ctx an SSL of tls_ctx_new_ssl belongs to (SNI may have switched
 * its SSL_CTX to another certificate's of the same tls_ctx). */
const tls_ctx *tls_ctx_of(const SSL *ssl);

/* Prints one line per certificate: file, subject, names, expiry. */
void tls_ctx_describe(const tls_ctx *t, FILE *out, const char *indent);

/* ---- pure parts (tls_names.c) ----------------------------------------- */

/* Whether host (an SNI name) matches a certificate's name: equal ignoring
 * case, or a "*.rest" wildcard standing for exactly one left-most label. */
int tls_name_match(const char *pattern, const char *host);
/* The index of the certificate whose names hold host exactly, else the
 * first that matches it by a wildcard, else -1. */
int tls_find_cert(const char *const *const *names, const int *n, int ncerts, const char *host);
/* The index of the certificate for host: the first whose names hold it
 * exactly, else the first that matches it by a wildcard, else 0. names[i]
 * lists certificate i's names, n[i] of them. */
int tls_pick_cert(const char *const *const *names, const int *n, int ncerts, const char *host);

/* ---- session tickets (tls_ticket.c) ------------------------------------ */

#define TLS_TICKET_PERIOD_S 3600 /* a ticket key's epoch; the previous one is accepted too */

typedef struct tls_ticket_key {
    unsigned char name[16];
    unsigned char aes[32];
    unsigned char hmac[32];
} tls_ticket_key;

/* Makes the secret every worker derives ticket keys from (random, once, in
 * the master before the fork; over reloads it keeps ratcheting). 0 or -1. */
int tls_ticket_secret_init(void);
/* Steps the secret forward to the current period (one ratchet step per
 * period passed; the previous secret kept to decrypt, older ones wiped).
 * Cheap when the period has not changed: called from the master's tick and
 * each worker's heartbeat, so idle processes hold no old secret. 0 or -1. */
int tls_ticket_tick(void);
/* One ratchet step: out = HKDF-SHA256(in, "spindle ticket secret ratchet").
 * 0 or -1. */
int tls_ticket_ratchet(const unsigned char in[32], unsigned char out[32]);
/* Whether a session made for SNI name made_for may resume on a connection
 * that asks for asked (either may be NULL: no SNI). Case-insensitive. */
int tls_ticket_same_name(const char *made_for, const char *asked);
/* The key for an epoch: HKDF-SHA256 of the secret with the epoch as info.
 * 0 or -1. */
int tls_ticket_derive(const unsigned char *secret, size_t len, uint64_t epoch, tls_ticket_key *k);
/* Which key a ticket's key name is: 1 the current epoch's, 2 the previous
 * one's (resume, and issue a fresh ticket), 0 neither (a full handshake).
 * Either key may be NULL. */
int tls_ticket_find(const tls_ticket_key *cur, const tls_ticket_key *prev,
                    const unsigned char name[16]);
/* Installs the ticket callback on ctx. */
void tls_ticket_install(SSL_CTX *ctx);

#endif
