/* chat_visitors.c — who is online in the chat example: visitors told
 * apart by their chat_id cookie, in a hash table, each with its open
 * WebSockets, parked polls and last poll; those offline are forgotten when
 * counted. */
#include "chat_visitors.h"

#include <stdlib.h>
#include <string.h>

#define VISITOR_BUCKETS 1024

static visitor *visitors[VISITOR_BUCKETS];
static size_t nvisitors;

static unsigned id_hash(const char *id) {
    unsigned h = 2166136261u;
    for (; *id; id++)
        h = (h ^ (unsigned char)*id) * 16777619u;
    return h % VISITOR_BUCKETS;
}

visitor *visitor_get(const sp_req *req, int poll_ms) {
    sp_str c = cookie(req, "chat_id");
    if (!c.ptr || c.len != ID_LEN)
        return NULL;
    for (size_t i = 0; i < ID_LEN; i++)
        if (hexval(c.ptr[i]) < 0)
            return NULL;
    char id[ID_LEN + 1];
    memcpy(id, c.ptr, ID_LEN);
    id[ID_LEN] = 0;
    visitor **head = &visitors[id_hash(id)];
    for (visitor *v = *head; v; v = v->next)
        if (strcmp(v->id, id) == 0)
            return v;
    visitor *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    memcpy(v->id, id, sizeof id);
    v->last_poll = sp_now_ms() - poll_ms - 10000; /* not polled yet */
    v->next = *head;
    *head = v;
    nvisitors++;
    return v;
}

static int visitor_online(const visitor *v, int64_t now, int poll_ms) {
    return v->ws > 0 || v->parked > 0 || now - v->last_poll < poll_ms + 5000;
}

int visitors_online(int poll_ms) {
    return (int)visitors_ids(poll_ms, NULL, 0);
}

size_t visitors_ids(int poll_ms, char (*ids)[ID_LEN + 1], size_t cap) {
    int64_t now = sp_now_ms();
    size_t n = 0;
    for (size_t b = 0; b < VISITOR_BUCKETS; b++)
        for (visitor **pv = &visitors[b]; *pv;) {
            visitor *v = *pv;
            if (visitor_online(v, now, poll_ms)) {
                if (n < cap)
                    memcpy(ids[n], v->id, ID_LEN + 1);
                n++;
                pv = &v->next;
            } else {
                *pv = v->next;
                free(v);
                nvisitors--;
            }
        }
    return n;
}

size_t visitors_known(void) {
    return nvisitors;
}
