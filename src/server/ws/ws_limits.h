/* ws_limits.h — the server-wide WebSocket settings, kept in the feature's
 * server slot: the message limit (--ws-max-message), the max_message of
 * every sp_ws_upgrade whose options name none, and permessage-deflate's
 * (sp_ws_deflate, --ws-deflate*). */
#ifndef SPINDLE_WS_LIMITS_H
#define SPINDLE_WS_LIMITS_H

#include "server/handler.h"

/* Sets s's default (bytes; 0: the built-in 1 MiB). 0, -ENOMEM or -ENOSPC. */
int ws_set_default_max_message(sp_server *s, size_t max);
/* The limit for an upgrade on s with opt (may be NULL): opt's, else s's
 * default, else 1 MiB. */
size_t ws_max_message_of(const sp_server *s, const sp_ws_options *opt);

/* s's permessage-deflate settings: window_bits 0 (off) or 9..15, and
 * zlib's memLevel 1..9 (WS_DEFLATE_WINDOW and _MEM_LEVEL when unset). */
void ws_deflate_settings(const sp_server *s, int *window_bits, int *mem_level);

#endif
