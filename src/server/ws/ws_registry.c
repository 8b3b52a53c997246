/* ws_registry.c — the server's open WebSockets (ws_registry.h): a list in
 * the feature's server slot, and the server_on_stop hook that tells each
 * member the server is stopping. */
#include "server/ws/ws_registry.h"

#include <stdlib.h>

struct ws_registry {
    list_head open; /* the server's open WebSockets */
    void (*on_stop)(list_node *member);
};

static const char registry_key; /* this module's slot in the server */

static void on_server_stop(sp_server *s, void *ud) {
    ws_registry *reg = ud;
    for (list_node *n = reg->open.head; n; n = n->next)
        reg->on_stop(n);
}

ws_registry *ws_registry_of(sp_server *s, void (*on_stop)(list_node *member)) {
    ws_registry *reg = server_ext_get(s, &registry_key);
    if (reg)
        return reg;
    if (!(reg = calloc(1, sizeof *reg)))
        return NULL;
    reg->on_stop = on_stop;
    if (server_ext_set(s, &registry_key, reg, free) < 0) {
        free(reg);
        return NULL;
    }
    if (server_on_stop(s, on_server_stop, reg) < 0) {
        server_ext_set(s, &registry_key, NULL, NULL); /* frees reg */
        return NULL;
    }
    return reg;
}

void ws_registry_add(ws_registry *reg, list_node *member) {
    list_push_back(&reg->open, member);
}

void ws_registry_remove(ws_registry *reg, list_node *member) {
    list_remove(&reg->open, member);
}
