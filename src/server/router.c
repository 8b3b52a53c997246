/* router.c — pattern routes over the normalized path (see router.h). The
 * table is small and scanned in order; exact routes are tried first. */
#include "server/router.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int valid_pattern(const char *p, int *has_wild, int *exact) {
    if (p[0] != '/')
        return 0;
    int params = 0;
    *has_wild = 0;
    for (const char *s = p; *s; s++) {
        if (*s == '*') {
            if (s[-1] != '/' || s[1] != '\0')
                return 0;
            *has_wild = 1;
        } else if (*s == '{') {
            const char *close = strchr(s, '}');
            if (s[-1] != '/' || !close || close == s + 1 || (close[1] != '/' && close[1] != '\0'))
                return 0;
            if (memchr(s + 1, '/', (size_t)(close - s - 1)) || ++params > ROUTER_MAX_PARAMS)
                return 0;
            s = close;
        }
    }
    *exact = !*has_wild && params == 0;
    return 1;
}

int router_add(router *rt, const char *method, const char *pattern, sp_handler fn, void *ud) {
    int has_wild, exact;
    if (!pattern || !fn || !valid_pattern(pattern, &has_wild, &exact))
        return -EINVAL;
    if (rt->n == rt->cap) {
        size_t cap = rt->cap ? rt->cap * 2 : 16;
        route *v = realloc(rt->v, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        rt->v = v;
        rt->cap = cap;
    }
    route *r = &rt->v[rt->n];
    *r = (route){.has_wild = has_wild, .exact = exact, .fn = fn, .ud = ud};
    r->pattern = strdup(pattern);
    if (method && strcmp(method, "*") != 0)
        r->method = strdup(method);
    if (!r->pattern || (method && strcmp(method, "*") != 0 && !r->method)) {
        free(r->pattern);
        free(r->method);
        return -ENOMEM;
    }
    rt->n++;
    return 0;
}

/* Matches path against one pattern, filling params. */
static int match_pattern(const route *r, const char *path, size_t plen, route_match *m) {
    const char *p = r->pattern;
    size_t i = 0;
    m->nparams = 0;
    while (*p) {
        if (p[0] == '*') /* the trailing asterisk: everything below */
            return 1;
        if (p[0] == '{') {
            const char *close = strchr(p, '}');
            size_t start = i;
            while (i < plen && path[i] != '/')
                i++;
            if (i == start)
                return 0;
            route_param *rp = &m->params[m->nparams++];
            *rp = (route_param){p + 1, path + start, (size_t)(close - p - 1), i - start};
            p = close + 1;
            continue;
        }
        if (i == plen) {
            /* "/static" matches the prefix pattern "/static/" + asterisk. */
            return p[0] == '/' && p[1] == '*' && p[2] == '\0';
        }
        if (path[i] != *p)
            return 0;
        i++;
        p++;
    }
    return i == plen;
}

static int method_ok(const route *r, const char *method, size_t mlen) {
    if (!r->method)
        return 1;
    size_t rl = strlen(r->method);
    if (rl == mlen && memcmp(r->method, method, mlen) == 0)
        return 1;
    return mlen == 4 && memcmp(method, "HEAD", 4) == 0 && strcmp(r->method, "GET") == 0;
}

static void allow_add(char *allow, size_t cap, const char *method) {
    size_t len = strlen(allow), ml = strlen(method);
    /* Already listed? */
    for (const char *s = allow; (s = strstr(s, method)); s += ml)
        if ((s == allow || s[-1] == ' ') && (s[ml] == ',' || s[ml] == '\0'))
            return;
    if (len + ml + 3 > cap)
        return;
    if (len) {
        memcpy(allow + len, ", ", 2);
        len += 2;
    }
    memcpy(allow + len, method, ml + 1);
}

int router_match(const router *rt, const char *method, size_t method_len, const char *path,
                 size_t path_len, route_match *m, char *allow, size_t allow_cap) {
    int path_seen = 0;
    if (allow_cap)
        allow[0] = '\0';
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < rt->n; i++) {
            const route *r = &rt->v[i];
            if (r->exact != (pass == 0))
                continue;
            if (!match_pattern(r, path, path_len, m))
                continue;
            if (method_ok(r, method, method_len)) {
                m->r = r;
                return 0;
            }
            path_seen = 1;
            if (allow_cap) {
                allow_add(allow, allow_cap, r->method);
                if (strcmp(r->method, "GET") == 0)
                    allow_add(allow, allow_cap, "HEAD");
            }
        }
    }
    return path_seen ? 405 : 404;
}

void router_free(router *rt) {
    for (size_t i = 0; i < rt->n; i++) {
        free(rt->v[i].pattern);
        free(rt->v[i].method);
    }
    free(rt->v);
    *rt = (router){0};
}
