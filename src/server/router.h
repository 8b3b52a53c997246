/* router.h — routes by method and path pattern, matched against the
 * normalized path. Patterns: "/exact", "/users/{id}" ({name} matches one
 * non-empty segment), "/static/" and an asterisk (that prefix and everything below).
 * An exact pattern wins over the others; otherwise the first added wins. */
#ifndef SPINDLE_ROUTER_H
#define SPINDLE_ROUTER_H

#include "spindle.h"

#include <stddef.h>

#define ROUTER_MAX_PARAMS 8

typedef struct route {
    char *method;  /* NULL: any method */
    char *pattern; /* owned copy */
    int has_wild;  /* ends in a slash and an asterisk */
    int exact;     /* no {param} and no wildcard */
    sp_handler fn;
    void *ud;
} route;

typedef struct router {
    route *v;
    size_t n, cap;
} router;

typedef struct route_param {
    const char *name, *value; /* name into the pattern, value into the path */
    size_t name_len, value_len;
} route_param;

typedef struct route_match {
    const route *r;
    size_t nparams;
    route_param params[ROUTER_MAX_PARAMS];
} route_match;

/* Adds a route; method NULL or "*" for any. 0, -EINVAL (pattern not
 * starting with '/', bad {param}, '*' not last, too many params) or -ENOMEM. */
int router_add(router *rt, const char *method, const char *pattern, sp_handler fn, void *ud);

/* Finds the route for method + normalized path. Returns 0 (m filled), 404
 * when no pattern matches the path, or 405 when some do but not for this
 * method: allow gets their methods ("GET, HEAD, POST"), NUL-terminated.
 * A GET route also answers HEAD. */
int router_match(const router *rt, const char *method, size_t method_len, const char *path,
                 size_t path_len, route_match *m, char *allow, size_t allow_cap);

void router_free(router *rt);

#endif
