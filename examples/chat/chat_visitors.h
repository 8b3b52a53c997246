/* chat_visitors.h — who is online in the chat example (chat_visitors.c):
 * a visitor (chat_id cookie) with an open WebSocket or a poll within the
 * last poll timeout + 5 s is online in this worker (chat_presence.c
 * counts them across workers). */
#ifndef CHAT_VISITORS_H
#define CHAT_VISITORS_H

#include "chat_text.h"

typedef struct visitor {
    char id[ID_LEN + 1];
    int ws;            /* open WebSockets */
    int parked;        /* parked polls */
    int64_t last_poll; /* loop clock, ms */
    struct visitor *next;
} visitor;

/* The request's visitor by its chat_id cookie (new ones are remembered),
 * or NULL without a valid cookie (or memory). */
visitor *visitor_get(const sp_req *req, int poll_ms);

/* Counts the online visitors and forgets the others. */
int visitors_online(int poll_ms);

/* Writes up to cap online visitors' ids to ids (forgetting the offline
 * ones); returns how many are online (may exceed cap). */
size_t visitors_ids(int poll_ms, char (*ids)[ID_LEN + 1], size_t cap);

/* Visitors remembered now. */
size_t visitors_known(void);

#endif
