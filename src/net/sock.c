/* sock.c — outbound TCP for coroutines (sp_connect, sp_sock_*): literal
 * addresses are parsed in place, names resolved with getaddrinfo on the
 * loop's thread pool; each address is tried in turn within one deadline.
 * I/O is net.c's: try the syscall, park on EAGAIN. */
#include "net/net.h"
#include "loop/sync.h"

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
    return net_read(s->l, &s->w, buf, len, sync_deadline(timeout_ms));
}

ssize_t sp_sock_write(sp_sock *s, const void *buf, size_t len, int64_t timeout_ms) {
    if (s->w.fd < 0)
        return -EBADF;
    return net_write(s->l, &s->w, buf, len, sync_deadline(timeout_ms));
}

int sp_sock_shutdown(sp_sock *s) {
    return shutdown(s->w.fd, SHUT_WR) == 0 ? 0 : -errno;
}

void sp_sock_close(sp_sock *s) {
    if (!s)
        return;
    net_close(s->l, &s->w);
    free(s);
}
