/* tls_ctx.c — building a listener's TLS contexts (see tls_ctx.h): the
 * defaults a security review accepts (TLS 1.2 and 1.3, forward-secret AEAD
 * suites, server preference, no compression, no renegotiation), the
 * certificates and their names for SNI, client certificates, ALPN, the
 * shared ticket keys, and kTLS where the kernel has it. */
#include "net/tls_ctx.h"

#include <errno.h>
#include <openssl/err.h>
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
    unsigned char alpn[256]; /* wire format: length-prefixed names */
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

static int sni_cb(SSL *ssl, int *alert, void *arg) {
    tls_ctx *t = arg;
    if (t->n < 2)
        return SSL_TLSEXT_ERR_OK;
    const char *host = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    int i = tls_pick_cert(t->lists, t->nnames, t->n, host);
    if (t->ctx[i] != SSL_get_SSL_CTX(ssl))
        SSL_set_SSL_CTX(ssl, t->ctx[i]);
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
    /* Tickets only: they resume on any worker; a per-process cache would not. */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"spindle", 7);
    SSL_CTX_set_num_tickets(ctx, 1);
    tls_ticket_install(ctx);
    SSL_CTX_set_alpn_select_cb(ctx, alpn_cb, t);
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
    t->file[i] = strdup(cf);
    read_names(t, i, SSL_CTX_get0_certificate(ctx));
    return 0;
}

tls_ctx *tls_ctx_build(const tls_config *cfg, char *err, size_t cap) {
    if (cfg->ncerts < 1 || cfg->ncerts > TLS_MAX_CERTS) {
        snprintf(err, cap, "TLS needs 1 to %d --certfile files", TLS_MAX_CERTS);
        return NULL;
    }
    if (tls_ticket_secret_init() < 0) {
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
