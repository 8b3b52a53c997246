/* chat_main.c — the chat (chat.c) as a program of its own, in one process:
 *   build/examples/chat --bind 127.0.0.1:8090 [--bus SPEC] [--announce-ms N]
 *       [--poll-ms N] [--ws-ping-ms N] [--ws-idle-ms N] [--static DIR]
 * For several workers run the module under spindle instead (chat.c says
 * how); with --bus redis://... several of these share one room too. */
#include "chat.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void) {
    fprintf(stderr, "usage: chat [--bind HOST:PORT] [--bus memory|redis://HOST:PORT] "
                    "[--announce-ms N] [--poll-ms N] [--ws-ping-ms N] [--ws-idle-ms N] "
                    "[--static DIR] [--max-connections N] [--no-guard-pages]\n");
}

int main(int argc, char **argv) {
    const char *bind = "127.0.0.1:8090", *dir = "examples/chat/static", *bus = "memory";
    sp_server_options o;
    sp_server_options_init(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--no-guard-pages") == 0) {
            o.no_guard_pages = 1;
            continue;
        }
        if (!val) {
            usage();
            return 2;
        }
        i++;
        if (strcmp(a, "--bind") == 0)
            bind = val;
        else if (strcmp(a, "--bus") == 0)
            bus = val;
        else if (strcmp(a, "--announce-ms") == 0)
            chat_cfg.announce_ms = atoi(val);
        else if (strcmp(a, "--poll-ms") == 0)
            chat_cfg.poll_ms = atoi(val);
        else if (strcmp(a, "--ws-ping-ms") == 0)
            o.ws_ping_interval_ms = atoi(val);
        else if (strcmp(a, "--ws-idle-ms") == 0)
            o.ws_idle_timeout_ms = atoi(val);
        else if (strcmp(a, "--static") == 0)
            dir = val;
        else if (strcmp(a, "--max-connections") == 0)
            o.max_connections = atoi(val);
        else {
            usage();
            return 2;
        }
    }
    if (chat_cfg.announce_ms < 1 || chat_cfg.poll_ms < 1 || o.max_connections < 1 ||
        o.ws_ping_interval_ms < 1 || o.ws_idle_timeout_ms < 1) {
        usage();
        return 2;
    }
    sp_server *s = sp_server_new(&o);
    int rc = s ? sp_server_listen(s, bind) : -errno;
    if (rc < 0) {
        fprintf(stderr, "chat: cannot listen on %s: %s\n", bind, strerror(-rc));
        return 1;
    }
    if ((rc = sp_bus_configure(s, bus)) < 0) {
        fprintf(stderr, "chat: --bus %s: %s (memory or redis://HOST:PORT)\n", bus, strerror(-rc));
        return 2;
    }
    if ((rc = chat_init(s)) < 0 || (rc = sp_static(s, "/", dir)) < 0) {
        fprintf(stderr, "chat: cannot serve %s: %s\n", dir, strerror(-rc));
        return 1;
    }
    /* The reader and the presence start with the worker; with our own loop
     * we start them here too (chat_worker_start runs once either way). */
    sp_loop *l = sp_loop_new(&(sp_loop_options){.no_guard_pages = o.no_guard_pages});
    if (!l || chat_worker_start(s, NULL) < 0) {
        fprintf(stderr, "chat: cannot start: %s\n", strerror(errno));
        return 1;
    }
    fprintf(stderr, "chat: http://%s/ (announcing every %d ms)\n", bind, chat_cfg.announce_ms);
    rc = sp_server_run(s);
    sp_server_free(s);
    return rc < 0 ? 1 : 0;
}
