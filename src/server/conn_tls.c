/* conn_tls.c — the TLS side of a connection in the server core: the
 * handshake its first coroutine runs (with its own deadline; plain HTTP on
 * the TLS port answered with a 400 that says to use https://), the
 * observer's handshake counts, the path static files take (kTLS or the
 * record layer, logged once per worker), and what handlers can ask about
 * the session (sp_req_tls_*). */
#include "server/server.h"
#include "server/conn_io.h"

#include "base/log.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#define TLS_HANDSHAKE_RECORD 0x16 /* the content type every ClientHello begins with */

#define PLAIN_BODY "This port speaks HTTPS: send the request to https:// instead of http://.\n"
static const char plain_on_tls[] =
    "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 73\r\n"
    "Connection: close\r\n\r\n" PLAIN_BODY;
_Static_assert(sizeof PLAIN_BODY - 1 == 73, "Content-Length above is the body's");

static void peer_text(const conn *c, char *ip, size_t cap) {
    snprintf(ip, cap, "unix");
    if (c->peer_family == AF_INET || c->peer_family == AF_INET6)
        inet_ntop(c->peer_family, c->peer_ip, ip, (socklen_t)cap);
}

static void count(sp_server *s, int outcome) {
    if (s->obs.tls_handshake)
        s->obs.tls_handshake(s->obs.ud, outcome);
}

static void failed(sp_server *s, conn *c, const char *why) {
    static int64_t last;
    static uint64_t suppressed;
    char ip[64];
    peer_text(c, ip, sizeof ip);
    log_ratelimited(&last, &suppressed, LOG_INFO, "TLS handshake with %s failed: %s", ip, why);
    count(s, SERVER_TLS_FAILED);
    server_conn_close(s, c);
}

/* Waits for the first byte without taking it: 1 for a TLS handshake
 * record, 0 for anything else, -1 (closed, timed out) with why set. */
static int first_byte_is_tls(sp_server *s, conn *c, int64_t deadline, const char **why) {
    for (;;) {
        unsigned char b;
        ssize_t n = recv(c->w.fd, &b, 1, MSG_PEEK);
        if (n == 1)
            return b == TLS_HANDSHAKE_RECORD;
        if (n == 0) {
            *why = NULL; /* connected and left: nothing to count */
            return -1;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN) {
            *why = strerror(errno);
            return -1;
        }
        /* A hang-up is seen by the next peek (end of stream or an error). */
        int rc = loop_wait_fd(s->l, &c->w, LOOP_READ, deadline);
        if (rc < 0) {
            *why =
                rc == -ETIMEDOUT ? "no ClientHello within --tls-handshake-timeout" : strerror(-rc);
            return -1;
        }
    }
}

/* Which path static files take, said once per worker. */
static void log_send_path(SSL *ssl) {
    static int said;
    if (said)
        return;
    said = 1;
    if (tls_ktls_send(ssl))
        log_msg(LOG_INFO, "TLS: the kernel encrypts (kTLS): static files go out with sendfile");
    else
        log_msg(LOG_INFO, "TLS: no kTLS in this kernel (or for this cipher): static files go "
                          "through OpenSSL's record layer (read, then SSL_write)");
}

int conn_tls_accept(sp_server *s, conn *c) {
    int ms = s->tls_handshake_timeout_ms > 0 ? s->tls_handshake_timeout_ms : 10000;
    int64_t deadline = server_deadline(s, ms);
    const char *why = NULL;
    int tls = first_byte_is_tls(s, c, deadline, &why);
    if (tls < 0) {
        if (why)
            failed(s, c, why);
        else
            server_conn_close(s, c);
        return -1;
    }
    if (!tls) {
        /* Plain HTTP on the TLS port: say so in plain text, then close. */
        conn_tls_free(c);
        count(s, SERVER_TLS_FAILED);
        if (net_write(s->l, &c->w, plain_on_tls, sizeof plain_on_tls - 1, deadline) < 0)
            server_conn_close(s, c);
        else
            http_conn_linger_close(s, c);
        return -1;
    }
    int rc = tls_handshake(s->l, &c->w, c->tls, deadline);
    if (rc < 0) {
        failed(s, c,
               rc == -ETIMEDOUT ? "not finished within --tls-handshake-timeout"
               : rc == -EPROTO  ? tls_last_error()
                                : strerror(-rc));
        return -1;
    }
    count(s, SSL_session_reused(c->tls) ? SERVER_TLS_RESUMED : SERVER_TLS_FULL);
    log_send_path(c->tls);
    /* The first head's clock starts now that the client can send it. */
    c->idle_timer.when = server_deadline(s, s->opt.header_timeout_ms);
    return 0;
}

void conn_tls_free(conn *c) {
    if (!c->tls)
        return;
    /* close_notify, if it can go without waiting; after a failure (or mid
     * handshake) OpenSSL refuses, which is fine. */
    SSL_shutdown(c->tls);
    ERR_clear_error();
    SSL_free(c->tls);
    c->tls = NULL;
}

const char *server_conn_alpn(const conn *c, unsigned *len) {
    const unsigned char *p = NULL;
    *len = 0;
    if (c->tls)
        SSL_get0_alpn_selected(c->tls, &p, len);
    return *len ? (const char *)p : NULL;
}

int conn_tls_misdirected(const sp_req *r) {
    SSL *ssl = r->c->tls;
    return tls_ctx_misdirected(tls_ctx_of(ssl), ssl,
                               SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name), r->head.host,
                               r->head.host_len);
}

/* ---- what handlers see (spindle.h) ------------------------------------ */

const char *sp_req_tls_sni(const sp_req *r) {
    return r->c->tls ? SSL_get_servername(r->c->tls, TLSEXT_NAMETYPE_host_name) : NULL;
}

const char *sp_req_tls_version(const sp_req *r) {
    return r->c->tls ? SSL_get_version(r->c->tls) : NULL;
}

const char *sp_req_tls_cipher(const sp_req *r) {
    return r->c->tls ? SSL_get_cipher_name(r->c->tls) : NULL;
}

int sp_req_tls_client_subject(const sp_req *r, char *buf, size_t cap) {
    X509 *x = r->c->tls ? SSL_get0_peer_certificate(r->c->tls) : NULL;
    if (!x || cap == 0)
        return -1;
    BIO *b = BIO_new(BIO_s_mem());
    if (!b)
        return -1;
    X509_NAME_print_ex(b, X509_get_subject_name(x), 0, XN_FLAG_RFC2253);
    char *p;
    long n = BIO_get_mem_data(b, &p);
    size_t k = (size_t)n < cap - 1 ? (size_t)n : cap - 1;
    memcpy(buf, p, k);
    buf[k] = '\0';
    BIO_free(b);
    return (int)k;
}

int sp_req_tls_client_verify(const sp_req *r, char *buf, size_t cap) {
    const char *word = "NONE";
    long v = X509_V_OK;
    if (r->c->tls && SSL_get0_peer_certificate(r->c->tls)) {
        v = SSL_get_verify_result(r->c->tls);
        word = v == X509_V_OK ? "SUCCESS" : "FAILED:";
    }
    int n =
        snprintf(buf, cap, "%s%s", word, v == X509_V_OK ? "" : X509_verify_cert_error_string(v));
    return n < 0 ? -1 : (size_t)n < cap ? n : (int)cap - 1;
}

int sp_req_tls_version_id(const sp_req *r) {
    return r->c->tls ? SSL_version(r->c->tls) : -1; /* TLS1_3_VERSION is 0x0304 */
}

int sp_req_tls_cipher_id(const sp_req *r) {
    const SSL_CIPHER *c = r->c->tls ? SSL_get_current_cipher(r->c->tls) : NULL;
    return c ? (int)SSL_CIPHER_get_protocol_id(c) : -1;
}

/* Server side, OpenSSL's peer chain leaves out the client's own
 * certificate: index 0 is that one, the chain follows from 1. */
static X509 *cert_at(SSL *ssl, int which) {
    if (which < 0)
        return SSL_get_certificate(ssl);
    if (which == 0)
        return SSL_get0_peer_certificate(ssl);
    STACK_OF(X509) *chain = SSL_get_peer_cert_chain(ssl);
    return chain && which - 1 < sk_X509_num(chain) ? sk_X509_value(chain, which - 1) : NULL;
}

int sp_req_tls_cert_pem(const sp_req *r, int which, char *buf, size_t cap) {
    X509 *x = r->c->tls ? cert_at(r->c->tls, which) : NULL;
    BIO *b = x ? BIO_new(BIO_s_mem()) : NULL;
    if (!b)
        return -1;
    char *p;
    long n = PEM_write_bio_X509(b, x) ? BIO_get_mem_data(b, &p) : -1;
    if (n >= 0 && cap) {
        size_t k = (size_t)n < cap - 1 ? (size_t)n : cap - 1;
        memcpy(buf, p, k);
        buf[k] = '\0';
    }
    BIO_free(b);
    return n > INT32_MAX ? -1 : (int)n;
}
