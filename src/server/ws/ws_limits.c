/* ws_limits.c — the server-wide WebSocket message limit (--ws-max-message),
 * applied to upgrades that do not choose their own. */
#include "server/ws/ws_limits.h"

#include <errno.h>
#include <stdlib.h>

#define WS_MAX_MESSAGE_DEFAULT (1u << 20)

static const char limits_key; /* this file's slot in the server */

int ws_set_default_max_message(sp_server *s, size_t max) {
    if (!max)
        return server_ext_set(s, &limits_key, NULL, NULL);
    size_t *v = malloc(sizeof *v);
    if (!v)
        return -ENOMEM;
    *v = max;
    int rc = server_ext_set(s, &limits_key, v, free);
    if (rc < 0)
        free(v);
    return rc;
}

size_t ws_max_message_of(const sp_server *s, const sp_ws_options *opt) {
    if (opt && opt->max_message)
        return opt->max_message;
    const size_t *v = server_ext_get(s, &limits_key);
    return v ? *v : WS_MAX_MESSAGE_DEFAULT;
}
