/* ws_registry.h — the server's open WebSockets, told when it stops: a list
 * in the WebSocket feature's server slot; when the server begins to stop,
 * the stop callback runs for each member (ws.c wakes its receiver with
 * -ESHUTDOWN, which closes it with 1001). */
#ifndef SPINDLE_WS_REGISTRY_H
#define SPINDLE_WS_REGISTRY_H

#include "base/list.h"
#include "server/handler.h"

typedef struct ws_registry ws_registry;

/* s's registry, made on first use with on_stop as its members' stop
 * callback (the first caller's); NULL when out of memory or slots. */
ws_registry *ws_registry_of(sp_server *s, void (*on_stop)(list_node *member));
void ws_registry_add(ws_registry *reg, list_node *member);
void ws_registry_remove(ws_registry *reg, list_node *member);

#endif
