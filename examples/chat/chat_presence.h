/* chat_presence.h — who is online across workers and instances
 * (chat_presence.c): each worker publishes its visitors on the room's
 * topic every period and counts what the others published. */
#ifndef CHAT_PRESENCE_H
#define CHAT_PRESENCE_H

#include "chat_text.h"

/* Starts the worker's presence: its own id and the announcer (the room's
 * reader hands it what the others publish). local_anon counts this worker's connections
 * without a chat_id cookie; announce posts the "online" message (only the
 * worker with the smallest id does, once per announce_ms). 0 or -ENOMEM. */
int presence_start(sp_server *s, int period_ms, int announce_ms, int poll_ms,
                   int (*local_anon)(void), void (*announce)(int online));

/* A presence message read from the topic (id, data): 1 if data is one. */
int presence_is(const void *data, size_t len);
void presence_heard(const char *id, const void *data, size_t len);

/* Everyone online: each visitor once, whatever worker or instance holds it. */
int presence_online(void);

#endif
