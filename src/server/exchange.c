/* exchange.c — the exchange's cold parts (exchange.h): OPTIONS answers,
 * and the table of the protocols that drive connections of their own,
 * through which the server closes and stops them without naming them. */
#include "server/exchange.h"

#include "server/h2.h"

#include <stdio.h>
#include <string.h>

/* Every method some route answers, for "OPTIONS *". */
static void all_methods(const router *rt, char *out, size_t cap) {
    out[0] = '\0';
    size_t len = 0;
    for (size_t i = 0; i < rt->n; i++) {
        const char *m = rt->v[i].method ? rt->v[i].method : "GET, HEAD, POST, PUT, DELETE, PATCH";
        if (strstr(out, m))
            continue;
        int w = snprintf(out + len, cap - len, "%s%s", len ? ", " : "", m);
        if (w < 0 || (size_t)w >= cap - len)
            break;
        len += (size_t)w;
        if (strcmp(m, "GET") == 0 && !strstr(out, "HEAD")) {
            w = snprintf(out + len, cap - len, ", HEAD");
            if (w > 0 && (size_t)w < cap - len)
                len += (size_t)w;
        }
    }
}

int exchange_answer_options(sp_server *s, sp_req *req, sp_res *res, const char *allow, int star) {
    char every[256], list[272]; /* allow (at most 255) + ", OPTIONS" */
    if (star) {
        all_methods(server_routes_for(s, req->c), every, sizeof every);
        allow = every;
    }
    snprintf(list, sizeof list, "%s%sOPTIONS", allow, allow[0] ? ", " : "");
    res->status = 204;
    int rc = sp_res_header(res, "Allow", list);
    return rc < 0 ? rc : sp_res_finish(res);
}

/* ---- the protocols ------------------------------------------------------ */

static const exchange_protocol *const protocols[] = {&h2_protocol};

const exchange_protocol *exchange_owner(const conn *c) {
    for (size_t i = 0; i < sizeof protocols / sizeof protocols[0]; i++)
        if (protocols[i]->owns(c))
            return protocols[i];
    return NULL;
}

void exchange_server_stop(sp_server *s) {
    for (size_t i = 0; i < sizeof protocols / sizeof protocols[0]; i++)
        protocols[i]->server_stop(s);
}
