/* ws_limits.c — the server-wide WebSocket settings in one server slot: the
 * message limit (--ws-max-message) applied to upgrades that do not choose
 * their own, and permessage-deflate's window and memory (sp_ws_deflate,
 * --ws-deflate*). An unset slot means the defaults. */
#include "server/ws/ws_limits.h"

#include "server/ws/ws_deflate.h"

#include <errno.h>
#include <stdlib.h>

#define WS_MAX_MESSAGE_DEFAULT (1u << 20)

typedef struct ws_settings {
    size_t max_message; /* 0: the default */
    int deflate_bits;   /* 0: off */
    int mem_level;
} ws_settings;

static const char limits_key; /* this file's slot in the server */

static ws_settings *settings_of(sp_server *s) {
    ws_settings *v = server_ext_get(s, &limits_key);
    if (v)
        return v;
    if (!(v = malloc(sizeof *v)))
        return NULL;
    *v = (ws_settings){0, WS_DEFLATE_WINDOW, WS_DEFLATE_MEM_LEVEL};
    if (server_ext_set(s, &limits_key, v, free) < 0) {
        free(v);
        return NULL;
    }
    return v;
}

int ws_set_default_max_message(sp_server *s, size_t max) {
    ws_settings *v = settings_of(s);
    if (!v)
        return -ENOMEM;
    v->max_message = max;
    return 0;
}

size_t ws_max_message_of(const sp_server *s, const sp_ws_options *opt) {
    if (opt && opt->max_message)
        return opt->max_message;
    const ws_settings *v = server_ext_get(s, &limits_key);
    return v && v->max_message ? v->max_message : WS_MAX_MESSAGE_DEFAULT;
}

int sp_ws_deflate(sp_server *s, int window_bits, int mem_level) {
    if (!s || (window_bits && (window_bits < 9 || window_bits > 15)) ||
        (mem_level && (mem_level < 1 || mem_level > 9)))
        return -EINVAL;
    ws_settings *v = settings_of(s);
    if (!v)
        return -ENOMEM;
    v->deflate_bits = window_bits;
    v->mem_level = mem_level ? mem_level : WS_DEFLATE_MEM_LEVEL;
    return 0;
}

void ws_deflate_settings(const sp_server *s, int *window_bits, int *mem_level) {
    const ws_settings *v = server_ext_get(s, &limits_key);
    *window_bits = v ? v->deflate_bits : WS_DEFLATE_WINDOW;
    *mem_level = v ? v->mem_level : WS_DEFLATE_MEM_LEVEL;
}
