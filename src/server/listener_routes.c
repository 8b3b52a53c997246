/* listener_routes.c — a listener with a route table of its own: its
 * connections are routed only through that table, never the server's, so
 * an endpoint (the process layer's --stats-bind) stays off the public
 * address. The core knows only "this listener has its own routes". */
#include "server/server.h"

#include <errno.h>

int server_listener_route(sp_server *s, int i, const char *method, const char *pattern,
                          sp_handler fn, void *ud) {
    if (i < 0 || i >= s->nlisteners)
        return -EINVAL;
    s->listeners[i].own_routes = 1;
    return router_add(&s->listeners[i].routes, method, pattern, fn, ud);
}
