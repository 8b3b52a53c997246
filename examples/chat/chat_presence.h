/* chat_presence.h — who is online across workers and instances
 * (chat_presence.c): each worker publishes its visitors to a presence
 * topic every period and counts what the others published. */
#ifndef CHAT_PRESENCE_H
#define CHAT_PRESENCE_H

#include "chat_text.h"

#define PRESENCE_TOPIC "chat:presence"

/* Starts the worker's presence: its own id, the reader of the presence
 * topic and the announcer. local_anon counts this worker's connections
 * without a chat_id cookie; announce posts the "online" message (only the
 * worker with the smallest id does, once per announce_ms). 0 or -ENOMEM. */
int presence_start(sp_server *s, int period_ms, int announce_ms, int poll_ms,
                   int (*local_anon)(void), void (*announce)(int online));

/* Everyone online: each visitor once, whatever worker or instance holds it. */
int presence_online(void);

#endif
