/* tls_ctx.c — building a listener's TLS contexts (see tls_ctx.h): the
 * defaults a security review accepts (TLS 1.2 and 1.3, forward-secret AEAD
 * suites, server preference, no compression, no renegotiation), the
 * certificates and their names for SNI, client certificates, ALPN, the
 * shared ticket keys, and kTLS where the kernel has it. */
#include "net/tls_ctx.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509v3.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_CIPHERS_12                                                                         \
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"     \
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
#define DEFAULT_GROUPS "X25519:P-256:P-384"

struct tls_ctx {
    int n;
    SSL_CTX *ctx[TLS_MAX_CERTS];
    char *names[TLS_MAX_CERTS][TLS_MAX_NAMES];
    int nnames[TLS_MAX_CERTS];
    const char *const *lists[TLS_MAX_CERTS]; /* names[i], for tls_pick_cert */
    char *file[TLS_MAX_CERTS], *subject[TLS_MAX_CERTS], *expiry[TLS_MAX_CERTS];
    unsigned char sid[TLS_MAX_CERTS][SSL_MAX_SID_CTX_LENGTH]; /* see sid_context */
    unsigned sidlen[TLS_MAX_CERTS];
    unsigned char ca_hash[32]; /* SHA-256 of the --ca-certs file's bytes, for sid_context */
    unsigned char alpn[256];   /* wire format: length-prefixed names */
    unsigned alpn_len;
};

/* err: "what: OpenSSL's reason (hint)", the reason from the error queue. */
static void fail(char *err, size_t cap, const char *hint, const char *fmt, ...) {
    char what[512], reason[512] = "no reason given", outer[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    /* The first error is the cause ("no start line"), the last what failed
     * of it ("PEM lib"): both, when they differ. */
    unsigned long first = ERR_peek_error(), last = ERR_peek_last_error();
    if (first)
        ERR_error_string_n(first, reason, sizeof reason);
    if (last && last != first) {
        ERR_error_string_n(last, outer, sizeof outer);
        size_t n = strlen(reason);
        snprintf(reason + n, sizeof reason - n, "; %s", outer);
    }
    ERR_clear_error();
    snprintf(err, cap, "%s: %s%s%s%s", what, reason, hint ? " (" : "", hint ? hint : "",
             hint ? ")" : "");
}

int tls_ctx_set_alpn(tls_ctx *t, const char *list) {
    unsigned char wire[sizeof t->alpn];
    unsigned len = 0;
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ", ");
        if (n > 255 || len + 1 + n > sizeof wire)
            return -EINVAL;
        if (n) {
            wire[len++] = (unsigned char)n;
            memcpy(wire + len, p, n);
            len += (unsigned)n;
        }
        p += n;
        p += strspn(p, ", ");
    }
    memcpy(t->alpn, wire, len);
    t->alpn_len = len;
    return 0;
}

static int alpn_cb(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                   const unsigned char *in, unsigned inlen, void *arg) {
    tls_ctx *t = arg;
    /* Our preference first; no protocol in common: no ALPN in the answer
     * (the client may still speak HTTP/1.1), rather than an alert. */
    if (t->alpn_len && SSL_select_next_proto((unsigned char **)out, outlen, t->alpn, t->alpn_len,
                                             in, inlen) == OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_OK;
    return SSL_TLSEXT_ERR_NOACK;
}

/* The SNI name of the ClientHello being handled, kept for the ticket check
 * (tls_ticket.c): an SSL's ex_data, freed with it. */
static int sni_index = -1;

static void free_sni(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp) {
    OPENSSL_free(ptr);
}

const char *tls_ctx_hello_sni(const SSL *ssl) {
    return sni_index < 0 ? NULL : SSL_get_ex_data(ssl, sni_index);
}

/* The host_name of a server_name extension (RFC 6066 §3), NUL-terminated
 * into out; 0, or -1 when there is none (or it is malformed: OpenSSL will
 * refuse the ClientHello itself). */
static int parse_sni(const unsigned char *p, size_t len, char *out, size_t cap) {
    if (len < 2 || (size_t)((p[0] << 8) | p[1]) != len - 2)
        return -1;
    for (p += 2, len -= 2; len >= 3;) {
        size_t n = (size_t)((p[1] << 8) | p[2]);
        if (n > len - 3)
            return -1;
        if (p[0] == TLSEXT_NAMETYPE_host_name) {
            if (n == 0 || n >= cap || memchr(p + 3, '\0', n))
                return -1;
            memcpy(out, p + 3, n);
            out[n] = '\0';
            return 0;
        }
        p += 3 + n;
        len -= 3 + n;
    }
    return -1;
}

/* The certificate is chosen here, from the ClientHello's SNI name, rather
 * than in the servername callback: OpenSSL decides on resumption before
 * that runs, and must compare a ticket's session with the session-id
 * context of the certificate this name gets (sid_context). */
static int hello_cb(SSL *ssl, int *alert, void *arg) {
    tls_ctx *t = arg;
    const unsigned char *ext;
    size_t len;
    char host[256];
    if (!SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &ext, &len) ||
        parse_sni(ext, len, host, sizeof host) < 0)
        return SSL_CLIENT_HELLO_SUCCESS; /* no name: the default certificate */
    char *keep = OPENSSL_strdup(host);
    /* After a HelloRetryRequest this runs again: the first name goes. */
    OPENSSL_free(SSL_get_ex_data(ssl, sni_index));
    SSL_set_ex_data(ssl, sni_index, NULL);
    if (!keep || !SSL_set_ex_data(ssl, sni_index, keep)) {
        OPENSSL_free(keep);
        *alert = SSL_AD_INTERNAL_ERROR;
        return SSL_CLIENT_HELLO_ERROR;
    }
    int i = tls_pick_cert(t->lists, t->nnames, t->n, host);
    if (t->ctx[i] != SSL_get_SSL_CTX(ssl)) {
        SSL_set_SSL_CTX(ssl, t->ctx[i]);
        /* SSL_set_SSL_CTX copies the session-id context only when the
         * SSL's was the old context's: set it outright. */
        SSL_set_session_id_context(ssl, t->sid[i], t->sidlen[i]);
    }
    return SSL_CLIENT_HELLO_SUCCESS;
}

/* Acknowledges the name (without a servername callback OpenSSL would not
 * keep it in the session, and the ticket check would have nothing to
 * compare); the certificate was chosen in hello_cb. */
static int sni_cb(SSL *ssl, int *alert, void *arg) {
    return SSL_TLSEXT_ERR_OK;
}

static char *bio_text(BIO *b) {
    char *p;
    long n = BIO_get_mem_data(b, &p);
    char *s = malloc((size_t)n + 1);
    if (s) {
        memcpy(s, p, (size_t)n);
        s[n] = '\0';
    }
    BIO_free(b);
    return s;
}

/* The certificate's names (SAN DNS names, else its CN), subject, expiry. */
static void read_names(tls_ctx *t, int i, X509 *x) {
    GENERAL_NAMES *san = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    for (int k = 0; san && k < sk_GENERAL_NAME_num(san) && t->nnames[i] < TLS_MAX_NAMES; k++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(san, k);
        if (g->type == GEN_DNS)
            t->names[i][t->nnames[i]++] = strndup((const char *)ASN1_STRING_get0_data(g->d.dNSName),
                                                  ASN1_STRING_length(g->d.dNSName));
    }
    GENERAL_NAMES_free(san);
    X509_NAME *subj = X509_get_subject_name(x);
    int cn = X509_NAME_get_index_by_NID(subj, NID_commonName, -1);
    if (t->nnames[i] == 0 && cn >= 0) {
        ASN1_STRING *d = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, cn));
        t->names[i][t->nnames[i]++] =
            strndup((const char *)ASN1_STRING_get0_data(d), ASN1_STRING_length(d));
    }
    t->lists[i] = (const char *const *)t->names[i];
    BIO *b = BIO_new(BIO_s_mem());
    X509_NAME_print_ex(b, subj, 0, XN_FLAG_RFC2253);
    t->subject[i] = bio_text(b);
    b = BIO_new(BIO_s_mem());
    ASN1_TIME_print(b, X509_get0_notAfter(x));
    t->expiry[i] = bio_text(b);
}

/* The settings every context shares. 0, or -1 with err filled. */
static int configure(SSL_CTX *ctx, const tls_config *cfg, tls_ctx *t, char *err, size_t cap) {
    SSL_CTX_set_min_proto_version(ctx, cfg->min_version == 13 ? TLS1_3_VERSION : TLS1_2_VERSION);
    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_IGNORE_UNEXPECTED_EOF |
                                 SSL_OP_ENABLE_KTLS);
    SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    /* Read what the socket has, not a record header then its body: one
     * read() per request instead of two. */
    SSL_CTX_set_read_ahead(ctx, 1);
    const char *ciphers = cfg->ciphers ? cfg->ciphers : DEFAULT_CIPHERS_12;
    if (SSL_CTX_set_cipher_list(ctx, ciphers) != 1) {
        fail(err, cap, "see `openssl ciphers -v` for the names", "--ciphers %s", ciphers);
        return -1;
    }
    if (SSL_CTX_set1_groups_list(ctx, DEFAULT_GROUPS) != 1) {
        fail(err, cap, NULL, "the key exchange groups %s", DEFAULT_GROUPS);
        return -1;
    }
    /* Tickets only: they resume on any worker; a per-process cache would
     * not. The session-id context is set per certificate (sid_context). */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_app_data(ctx, t);
    SSL_CTX_set_num_tickets(ctx, 1);
    tls_ticket_install(ctx);
    SSL_CTX_set_alpn_select_cb(ctx, alpn_cb, t);
    SSL_CTX_set_client_hello_cb(ctx, hello_cb, t);
    SSL_CTX_set_tlsext_servername_callback(ctx, sni_cb);
    SSL_CTX_set_tlsext_servername_arg(ctx, t);
    if (cfg->cert_reqs != TLS_VERIFY_NONE) {
        if (!cfg->ca_certs) {
            snprintf(err, cap,
                     "--cert-reqs %s needs --ca-certs FILE (the CA that signs the "
                     "client certificates)",
                     cfg->cert_reqs == TLS_VERIFY_REQUIRED ? "required" : "optional");
            return -1;
        }
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(cfg->ca_certs);
        if (!names || SSL_CTX_load_verify_locations(ctx, cfg->ca_certs, NULL) != 1) {
            sk_X509_NAME_pop_free(names, X509_NAME_free);
            fail(err, cap, "want the CA certificates in PEM", "--ca-certs %s", cfg->ca_certs);
            return -1;
        }
        SSL_CTX_set_client_CA_list(ctx, names);
        SSL_CTX_set_verify(
            ctx,
            SSL_VERIFY_PEER |
                (cfg->cert_reqs == TLS_VERIFY_REQUIRED ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
            NULL);
    }
    return 0;
}

/* The session-id context of context i, which OpenSSL compares with the one
 * a ticket's session was made under before resuming it: a hash of what the
 * session's trust rests on (as nginx's ngx_ssl_session_id_context) — the
 * certificate chain served, the CA file's bytes, --cert-reqs, the verify
 * mode and depth. A session made under another certificate (another SNI
 * name's) or before a reload changed any of them gets a full handshake, so
 * a client certificate is checked again under today's settings. */
static int sid_context(tls_ctx *t, int i, SSL_CTX *ctx, const tls_config *cfg) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    EVP_MD_CTX *h = EVP_MD_CTX_new();
    int ok = h && EVP_DigestInit_ex(h, EVP_sha256(), NULL) == 1;
    int params[4] = {cfg->cert_reqs, SSL_CTX_get_verify_mode(ctx), SSL_CTX_get_verify_depth(ctx),
                     cfg->ca_certs != NULL};
    ok = ok && EVP_DigestUpdate(h, "spindle sid 1", 13) == 1 &&
         EVP_DigestUpdate(h, params, sizeof params) == 1 &&
         EVP_DigestUpdate(h, t->ca_hash, sizeof t->ca_hash) == 1;
    STACK_OF(X509) *chain = NULL;
    SSL_CTX_get0_chain_certs(ctx, &chain);
    for (int k = -1; ok && k < sk_X509_num(chain); k++) {
        X509 *x = k < 0 ? SSL_CTX_get0_certificate(ctx) : sk_X509_value(chain, k);
        unsigned char *der = NULL;
        int n = x ? i2d_X509(x, &der) : -1;
        ok = n > 0 && EVP_DigestUpdate(h, der, (size_t)n) == 1;
        OPENSSL_free(der);
    }
    ok = ok && EVP_DigestFinal_ex(h, md, &mdlen) == 1;
    EVP_MD_CTX_free(h);
    if (mdlen > SSL_MAX_SID_CTX_LENGTH)
        mdlen = SSL_MAX_SID_CTX_LENGTH;
    memcpy(t->sid[i], md, mdlen);
    t->sidlen[i] = mdlen;
    return ok && SSL_CTX_set_session_id_context(ctx, md, mdlen) == 1 ? 0 : -1;
}

/* The SHA-256 of the CA file's bytes into t->ca_hash (zeros without one).
 * 0, or -1. */
static int hash_ca_file(tls_ctx *t, const char *path) {
    memset(t->ca_hash, 0, sizeof t->ca_hash);
    if (!path)
        return 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    EVP_MD_CTX *h = EVP_MD_CTX_new();
    int ok = h && EVP_DigestInit_ex(h, EVP_sha256(), NULL) == 1;
    char buf[4096];
    size_t n;
    while (ok && (n = fread(buf, 1, sizeof buf, f)) > 0)
        ok = EVP_DigestUpdate(h, buf, n) == 1;
    ok = ok && !ferror(f) && EVP_DigestFinal_ex(h, t->ca_hash, NULL) == 1;
    EVP_MD_CTX_free(h);
    fclose(f);
    return ok ? 0 : -1;
}

/* Context i: the shared settings, then certificate i and its key. */
static int build_one(tls_ctx *t, int i, const tls_config *cfg, char *err, size_t cap) {
    const char *cf = cfg->certfiles[i];
    const char *kf = cfg->keyfiles[i] ? cfg->keyfiles[i] : cf;
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        fail(err, cap, NULL, "cannot make a TLS context");
        return -1;
    }
    t->ctx[i] = ctx;
    if (configure(ctx, cfg, t, err, cap) < 0)
        return -1;
    if (SSL_CTX_use_certificate_chain_file(ctx, cf) != 1) {
        fail(err, cap,
             "want a readable PEM file: the server's certificate first, then the "
             "intermediate ones",
             "--certfile %s", cf);
        return -1;
    }
    int ok = SSL_CTX_use_PrivateKey_file(ctx, kf, SSL_FILETYPE_PEM) == 1;
    if (!ok && ERR_GET_REASON(ERR_peek_last_error()) != X509_R_KEY_VALUES_MISMATCH) {
        fail(err, cap, "want a readable, unencrypted PEM private key (RSA or ECDSA)",
             "--keyfile %s", kf);
        return -1;
    }
    if (!ok || SSL_CTX_check_private_key(ctx) != 1) {
        fail(err, cap, "give each --certfile its own --keyfile, in the same order",
             "--keyfile %s does not match --certfile %s", kf, cf);
        return -1;
    }
    if (sid_context(t, i, ctx, cfg) < 0) {
        fail(err, cap, NULL, "cannot make the session-id context of --certfile %s", cf);
        return -1;
    }
    t->file[i] = strdup(cf);
    read_names(t, i, SSL_CTX_get0_certificate(ctx));
    return 0;
}

tls_ctx *tls_ctx_build(const tls_config *cfg, char *err, size_t cap) {
    if (cfg->ncerts < 1 || cfg->ncerts > TLS_MAX_CERTS) {
        snprintf(err, cap, "TLS needs 1 to %d --certfile files", TLS_MAX_CERTS);
        return NULL;
    }
    if (sni_index < 0)
        sni_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, free_sni);
    if (sni_index < 0 || tls_ticket_secret_init() < 0) {
        fail(err, cap, NULL, "cannot make the session ticket secret");
        return NULL;
    }
    tls_ctx *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, cap, "out of memory");
        return NULL;
    }
    ERR_clear_error();
    if (tls_ctx_set_alpn(t, cfg->alpn ? cfg->alpn : "http/1.1") < 0) {
        snprintf(err, cap, "the ALPN list '%s' is too long", cfg->alpn);
        tls_ctx_free(t);
        return NULL;
    }
    /* Unreadable: configure() says so, naming the file and the reason. */
    if (cfg->cert_reqs != TLS_VERIFY_NONE)
        hash_ca_file(t, cfg->ca_certs);
    for (int i = 0; i < cfg->ncerts; i++, t->n++)
        if (build_one(t, i, cfg, err, cap) < 0) {
            t->n++; /* free what build_one made */
            tls_ctx_free(t);
            return NULL;
        }
    return t;
}

void tls_ctx_free(tls_ctx *t) {
    if (!t)
        return;
    for (int i = 0; i < t->n; i++) {
        SSL_CTX_free(t->ctx[i]);
        for (int k = 0; k < t->nnames[i]; k++)
            free(t->names[i][k]);
        free(t->file[i]);
        free(t->subject[i]);
        free(t->expiry[i]);
    }
    free(t);
}

SSL *tls_ctx_new_ssl(tls_ctx *t, int fd) {
    SSL *ssl = SSL_new(t->ctx[0]);
    if (ssl && SSL_set_fd(ssl, fd) != 1) {
        SSL_free(ssl);
        ssl = NULL;
    }
    if (ssl)
        SSL_set_accept_state(ssl);
    else
        ERR_clear_error();
    return ssl;
}

const tls_ctx *tls_ctx_of(const SSL *ssl) {
    return ssl ? SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)) : NULL;
}

int tls_ctx_misdirected(const tls_ctx *t, const SSL *ssl, const char *sni, const char *host,
                        size_t len) {
    char name[256];
    if (!t || t->n < 2 || !sni || !*sni || !host || !len)
        return 0;
    if (host[0] == '[')
        return 0; /* an IPv6 literal: no certificate's DNS name */
    const char *colon = memchr(host, ':', len);
    if (colon)
        len = (size_t)(colon - host);
    if (len == 0 || len >= sizeof name)
        return 0;
    memcpy(name, host, len);
    name[len] = '\0';
    int h = tls_find_cert(t->lists, t->nnames, t->n, name);
    if (h < 0)
        return 0;
    /* The certificate this connection was given (by its SNI name) */
    SSL_CTX *served = SSL_get_SSL_CTX(ssl);
    int s = tls_find_cert(t->lists, t->nnames, t->n, sni);
    return s >= 0 && t->ctx[h] != served && t->ctx[s] == served;
}

SSL_CTX *tls_ctx_default(tls_ctx *t) {
    return t->ctx[0];
}

void tls_ctx_describe(const tls_ctx *t, FILE *out, const char *indent) {
    for (int i = 0; i < t->n; i++) {
        fprintf(out, "%s%s: subject %s; names", indent, t->file[i],
                t->subject[i] ? t->subject[i] : "?");
        for (int k = 0; k < t->nnames[i]; k++)
            fprintf(out, "%s%s", k ? ", " : " ", t->names[i][k]);
        fprintf(out, "%s; expires %s%s\n", t->nnames[i] ? "" : " none",
                t->expiry[i] ? t->expiry[i] : "?", i == 0 ? " (the default)" : "");
    }
}
