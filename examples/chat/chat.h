/* chat.h — what the chat's two entry points share (chat.c): its timers and
 * its routes, added by the --app module's init or by chat_main.c. */
#ifndef CHAT_H
#define CHAT_H

#include "spindle.h"

typedef struct chat_config {
    int announce_ms; /* how often the online count is announced */
    int poll_ms;     /* how long a long poll is parked */
} chat_config;

extern chat_config chat_cfg;

/* Adds the chat's routes and its per-worker start-up to s; s needs a bus
 * (sp_bus_configure). 0 or -errno. */
int chat_init(sp_server *s);

/* The per-worker start-up (runs once per process): for a program that
 * drives its own loop. 0 or -errno. */
int chat_worker_start(sp_server *s, void *ud);

#endif
