/* redis_url.c — parses redis:// and rediss:// addresses (redis_url.h):
 * userinfo before the last '@', a bracketed IPv6 host, a port of 1-65535,
 * a database number of 0-1000000. */
#include "base/redis_url.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A decimal number of digits only, at most max. */
static int number(const char *s, size_t n, long max, long *out) {
    long v = 0;
    if (!n || n > 10)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -EINVAL;
        v = v * 10 + (s[i] - '0');
    }
    if (v > max)
        return -EINVAL;
    *out = v;
    return 0;
}

static int userinfo(redis_url *u, const char *p, size_t n) {
    const char *colon = memchr(p, ':', n);
    if (!colon)
        return -EINVAL; /* a user without a password: nothing to AUTH with */
    size_t ul = (size_t)(colon - p);
    if (ul && !(u->user = strndup(p, ul)))
        return -ENOMEM;
    return (u->password = strndup(colon + 1, n - ul - 1)) ? 0 : -ENOMEM;
}

static int hostport(redis_url *u, const char *p, size_t n) {
    const char *host = p, *colon = NULL;
    size_t hl = n;
    if (n && p[0] == '[') { /* [v6]:port */
        const char *close = memchr(p, ']', n);
        if (!close)
            return -EINVAL;
        host = p + 1;
        hl = (size_t)(close - p - 1);
        colon = close + 1 < p + n && close[1] == ':' ? close + 1 : NULL;
        if (!colon && close + 1 != p + n)
            return -EINVAL;
    } else if ((colon = memchr(p, ':', n))) {
        hl = (size_t)(colon - p);
    }
    long port = 6379;
    if (colon && (number(colon + 1, n - (size_t)(colon + 1 - p), 65535, &port) < 0 || port < 1))
        return -EINVAL;
    if (!hl)
        return -EINVAL;
    u->port = (int)port;
    return (u->host = strndup(host, hl)) ? 0 : -ENOMEM;
}

int redis_url_parse(const char *s, size_t len, redis_url *out) {
    redis_url u = {0};
    size_t skip;
    if (len > 8 && !memcmp(s, "redis://", 8)) {
        skip = 8;
    } else if (len > 9 && !memcmp(s, "rediss://", 9)) {
        skip = 9;
        u.tls = 1;
    } else {
        return -EINVAL;
    }
    const char *p = s + skip;
    size_t n = len - skip;
    const char *at = NULL;
    for (size_t i = 0; i < n; i++)
        if (p[i] == '@')
            at = p + i; /* the last: a password may hold '@' */
    int rc = 0;
    if (at) {
        rc = userinfo(&u, p, (size_t)(at - p));
        n -= (size_t)(at + 1 - p);
        p = at + 1;
    }
    const char *slash = rc == 0 ? memchr(p, '/', n) : NULL;
    if (slash) {
        size_t dl = n - (size_t)(slash + 1 - p);
        long db = 0;
        if (dl && number(slash + 1, dl, 1000000, &db) < 0)
            rc = -EINVAL;
        u.db = (int)db;
        n = (size_t)(slash - p);
    }
    if (rc == 0)
        rc = hostport(&u, p, n);
    if (rc < 0) {
        redis_url_free(&u);
        return rc;
    }
    *out = u;
    return 0;
}

void redis_url_free(redis_url *u) {
    if (u->password)
        explicit_bzero(u->password, strlen(u->password));
    free(u->host);
    free(u->user);
    free(u->password);
    *u = (redis_url){0};
}
