/* chat_room.h — the chat's room in one worker (chat_room.c): the worker's
 * one subscription to the room's bus topic, the last RING messages it
 * received, the WebSockets it fans them out to, and catching a client up
 * from the id it last saw. */
#ifndef CHAT_ROOM_H
#define CHAT_ROOM_H

#include "chat_text.h"

#define ROOM_TOPIC "chat:room"
#define RING       256 /* messages kept in each worker for pollers and new pages */
#define HISTORY    50  /* sent to a new WebSocket without ?since */

/* A message as clients get it: {"id":"MS-SEQ",...the published fields}. */
typedef struct msg {
    int refs;
    chat_id id;
    size_t len;
    char json[];
} msg;

typedef struct client {
    int refs;
    sp_ws *ws; /* NULL once the handler is returning */
    chat_id last_sent;
    size_t idx; /* in the room's clients */
} client;

/* Starts the worker's subscription (a coroutine that resubscribes from its
 * last id whenever the bus cuts or loses it). 0 or -ENOMEM. */
int room_start(sp_server *s);

/* Waits up to ms for the first read of the topic's history. 1 if done. */
int room_wait_ready(int64_t ms);

/* The newest message this worker has (0-0 if none). */
chat_id room_last(void);

/* The id before the last HISTORY messages (where a new page starts). */
chat_id room_history_start(void);

/* Calls emit for every message after *from, in order, advancing *from;
 * from the worker's ring, or from the bus when the ring does not reach
 * back that far (a page coming back from another worker or instance).
 * Returns with no yield since its last look at the ring, so a caller that
 * then joins (room_join) misses nothing. The count emitted, or -errno
 * (the bus's, or emit's). May yield. */
int room_catch_up(chat_id *from, int (*emit)(msg *m, void *arg), void *arg);

/* Parks a long poll until a message after since arrives (or ms pass, or
 * its client leaves: -ECONNRESET). 1, 0 (time out) or -errno. */
int room_wait_news(chat_id since, int64_t ms);

/* WebSockets that receive what the worker receives. */
int room_join(client *c);
void room_leave(client *c);
void client_unref(client *c);

/* For /stats. */
size_t room_clients(void);
uint64_t room_broadcasts(void);
int64_t room_fanout_max_us(void);
int room_parked(void);

#endif
