/* redis_url.h — a Redis address as users write it, for the bus and the
 * session store alike: redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], or
 * rediss:// for TLS. Pure parsing: no socket, no log. */
#ifndef SPINDLE_BASE_REDIS_URL_H
#define SPINDLE_BASE_REDIS_URL_H

#include <stddef.h>

typedef struct redis_url {
    int tls;        /* rediss:// */
    char *host;     /* without the brackets of an IPv6 literal */
    int port;       /* 6379 when absent */
    char *user;     /* NULL: AUTH with the password alone (Redis < 6, or "default") */
    char *password; /* NULL: no AUTH */
    int db;         /* SELECT when not 0 */
} redis_url;

/* Parses the len bytes at s (a query after '?' is the caller's: not part
 * of len). 0, -EINVAL (not a Redis URL, or a bad part), or -ENOMEM; on an
 * error nothing is left to free. */
int redis_url_parse(const char *s, size_t len, redis_url *out);
/* Frees what redis_url_parse made, wiping the password. */
void redis_url_free(redis_url *u);

#endif
