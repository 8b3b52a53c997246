/* tls_names.c — which certificate answers an SNI name: the pure matching
 * of a host against a certificate's DNS names (RFC 6125: a wildcard only as
 * the whole left-most label, standing for exactly one label), and the
 * choice among several certificates (exact names before wildcards). */
#include "net/tls_ctx.h"

#include <string.h>
#include <strings.h>

int tls_name_match(const char *pattern, const char *host) {
    if (!pattern || !host || !*host)
        return 0;
    size_t hl = strlen(host);
    if (host[hl - 1] == '.')
        hl--; /* an absolute name: "a.test." is "a.test" */
    if (pattern[0] != '*')
        return strlen(pattern) == hl && strncasecmp(pattern, host, hl) == 0;
    if (pattern[1] != '.' || !pattern[2])
        return 0; /* "*" or "*foo": not a wildcard we honour */
    const char *dot = memchr(host, '.', hl);
    if (!dot || dot == host)
        return 0; /* the wildcard stands for one non-empty label */
    size_t rest = hl - (size_t)(dot - host);
    const char *prest = pattern + 1; /* ".example.com" */
    return strlen(prest) == rest && strncasecmp(prest, dot, rest) == 0 &&
           memchr(prest + 1, '.', rest - 1) != NULL; /* not "*.com" */
}

int tls_pick_cert(const char *const *const *names, const int *n, int ncerts, const char *host) {
    int i = tls_find_cert(names, n, ncerts, host);
    return i < 0 ? 0 : i;
}

int tls_find_cert(const char *const *const *names, const int *n, int ncerts, const char *host) {
    if (!host || !*host)
        return -1;
    for (int i = 0; i < ncerts; i++)
        for (int j = 0; j < n[i]; j++)
            if (names[i][j][0] != '*' && tls_name_match(names[i][j], host))
                return i;
    for (int i = 0; i < ncerts; i++)
        for (int j = 0; j < n[i]; j++)
            if (names[i][j][0] == '*' && tls_name_match(names[i][j], host))
                return i;
    return -1;
}
