/* ws_limits.h — the server-wide WebSocket message limit (--ws-max-message):
 * the max_message of every sp_ws_upgrade whose options name none, kept in
 * the server's feature slot. */
#ifndef SPINDLE_WS_LIMITS_H
#define SPINDLE_WS_LIMITS_H

#include "server/handler.h"

/* Sets s's default (bytes; 0: the built-in 1 MiB). 0, -ENOMEM or -ENOSPC. */
int ws_set_default_max_message(sp_server *s, size_t max);
/* The limit for an upgrade on s with opt (may be NULL): opt's, else s's
 * default, else 1 MiB. */
size_t ws_max_message_of(const sp_server *s, const sp_ws_options *opt);

#endif
