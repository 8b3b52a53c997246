/* sock.c — outbound TCP for coroutines (sp_connect, sp_sock_*): literal
 * addresses are parsed in place, names resolved with getaddrinfo on the
 * loop's thread pool; each address is tried in turn within one deadline.
 * I/O is net.c's (try the syscall, park on EAGAIN), or tls.c's once
 * sock_start_tls ran the client side of a handshake (sock_tls.h). */
#include "net/sock_tls.h"
#include "loop/sync.h"
#include "net/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define SOCK_MAX_ADDRS 8 /* addresses tried per name */

struct sp_sock {
    loop_watch w;
    loop *l;
    SSL *ssl; /* NULL: plain TCP */
};

typedef struct resolve_job {
    const char *host;
    int port;
    net_addr addrs[SOCK_MAX_ADDRS];
    int n;
} resolve_job;

/* On a pool thread: getaddrinfo, which blocks. Returns 0 or -errno. */
static int resolve(void *arg) {
    resolve_job *j = arg;
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_ADDRCONFIG | AI_NUMERICSERV};
    char port[16];
    snprintf(port, sizeof port, "%d", j->port);
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(j->host, port, &hints, &res);
    if (rc != 0)
        return rc == EAI_SYSTEM ? -errno : rc == EAI_MEMORY ? -ENOMEM : -EADDRNOTAVAIL;
    for (struct addrinfo *ai = res; ai && j->n < SOCK_MAX_ADDRS; ai = ai->ai_next) {
        if (ai->ai_addrlen > sizeof j->addrs[0].u)
            continue;
        memcpy(&j->addrs[j->n].u, ai->ai_addr, ai->ai_addrlen);
        j->addrs[j->n].len = ai->ai_addrlen;
        j->n++;
    }
    freeaddrinfo(res);
    return j->n ? 0 : -EADDRNOTAVAIL;
}

/* A literal IPv4 or IPv6 address (brackets allowed): 1 and *a filled. */
static int literal_addr(const char *host, int port, net_addr *a) {
    char buf[INET6_ADDRSTRLEN + 2];
    size_t n = strlen(host);
    if (n >= 2 && host[0] == '[' && host[n - 1] == ']' && n - 2 < sizeof buf) {
        memcpy(buf, host + 1, n - 2);
        buf[n - 2] = '\0';
        host = buf;
    }
    memset(a, 0, sizeof *a);
    if (inet_pton(AF_INET, host, &a->u.in.sin_addr) == 1) {
        a->u.in.sin_family = AF_INET;
        a->u.in.sin_port = htons((uint16_t)port);
        a->len = sizeof a->u.in;
        return 1;
    }
    if (inet_pton(AF_INET6, host, &a->u.in6.sin6_addr) == 1) {
        a->u.in6.sin6_family = AF_INET6;
        a->u.in6.sin6_port = htons((uint16_t)port);
        a->len = sizeof a->u.in6;
        return 1;
    }
    return 0;
}

static sp_sock *fail(int *err, int rc) {
    if (err)
        *err = rc;
    return NULL;
}

sp_sock *sp_connect(const char *host, int port, int64_t timeout_ms, int *err) {
    loop *l = loop_current();
    if (!l || !loop_task(l))
        return fail(err, -EPERM);
    if (!host || !host[0] || port <= 0 || port > 65535)
        return fail(err, -EINVAL);
    int64_t deadline = sync_deadline(timeout_ms);
    resolve_job j = {.host = host, .port = port};
    if (literal_addr(host, port, &j.addrs[0])) {
        j.n = 1;
    } else {
        int rc = sp_run_blocking(resolve, &j);
        if (rc < 0)
            return fail(err, rc);
        if (deadline != LOOP_NO_DEADLINE && loop_clock_ms() >= deadline)
            return fail(err, -ETIMEDOUT);
    }
    sp_sock *s = malloc(sizeof *s);
    if (!s)
        return fail(err, -ENOMEM);
    *s = (sp_sock){.l = l};
    int rc = -EADDRNOTAVAIL;
    for (int i = 0; i < j.n; i++) {
        s->w = (loop_watch){.fd = -1};
        rc = net_connect(l, &s->w, &j.addrs[i], deadline);
        if (rc == 0) {
            if (err)
                *err = 0;
            return s;
        }
        if (rc == -ETIMEDOUT || rc == -ECANCELED)
            break;
    }
    free(s);
    return fail(err, rc);
}

ssize_t sp_sock_read(sp_sock *s, void *buf, size_t len, int64_t timeout_ms) {
    if (s->w.fd < 0)
        return -EBADF;
    if (s->ssl)
        return tls_read(s->l, &s->w, s->ssl, buf, len, sync_deadline(timeout_ms));
    return net_read(s->l, &s->w, buf, len, sync_deadline(timeout_ms));
}

ssize_t sp_sock_write(sp_sock *s, const void *buf, size_t len, int64_t timeout_ms) {
    if (s->w.fd < 0)
        return -EBADF;
    if (s->ssl)
        return tls_write(s->l, &s->w, s->ssl, buf, len, sync_deadline(timeout_ms));
    return net_write(s->l, &s->w, buf, len, sync_deadline(timeout_ms));
}

/* The certificate is checked against host (a name, or an address's IP
 * SAN) by OpenSSL during the handshake; SNI is sent for names only. */
SSL *sock_tls_client_new(SSL_CTX *ctx, int fd, const char *host) {
    SSL *ssl = SSL_new(ctx);
    if (!ssl)
        return NULL;
    struct in6_addr a6;
    struct in_addr a4;
    int literal = inet_pton(AF_INET, host, &a4) == 1 || inet_pton(AF_INET6, host, &a6) == 1;
    if (!SSL_set_fd(ssl, fd) || (!literal && !SSL_set_tlsext_host_name(ssl, host)) ||
        (literal ? !X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
                 : !SSL_set1_host(ssl, host))) {
        SSL_free(ssl);
        return NULL;
    }
    SSL_set_connect_state(ssl);
    return ssl;
}

int sock_start_tls(sp_sock *s, SSL_CTX *ctx, const char *host, int64_t timeout_ms) {
    SSL *ssl = sock_tls_client_new(ctx, s->w.fd, host);
    if (!ssl)
        return -ENOMEM;
    int rc = tls_handshake(s->l, &s->w, ssl, sync_deadline(timeout_ms));
    if (rc < 0) {
        SSL_free(ssl);
        return rc;
    }
    s->ssl = ssl;
    return 0;
}

SSL_CTX *sock_tls_client_ctx(const char *ca_file, char *why, size_t whylen) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        snprintf(why, whylen, "out of memory");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    int ok = ca_file ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL)
                     : SSL_CTX_set_default_verify_paths(ctx);
    if (!ok) {
        snprintf(why, whylen, "cannot load the CA certificates %s%s",
                 ca_file ? "from " : "(the system's)", ca_file ? ca_file : "");
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

int sp_sock_shutdown(sp_sock *s) {
    return shutdown(s->w.fd, SHUT_WR) == 0 ? 0 : -errno;
}

void sp_sock_close(sp_sock *s) {
    if (!s)
        return;
    if (s->ssl) {
        SSL_shutdown(s->ssl); /* one close_notify, not waited for */
        SSL_free(s->ssl);
    }
    net_close(s->l, &s->w);
    free(s);
}
