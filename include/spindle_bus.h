/* spindle_bus.h — the public C API of the bus: topics published and
 * subscribed to with history, across the coroutines, workers and (over
 * Redis) machines of a server. Included by spindle.h (include that one);
 * kept apart so each header stays readable. */
#ifndef SPINDLE_API_BUS_H
#define SPINDLE_API_BUS_H

#ifndef SPINDLE_H
#error "include spindle.h, not spindle_bus.h"
#endif

/* ---- Topics: the bus ----------------------------------------------------
 * Publish / subscribe with history, between the coroutines of a server:
 * each message gets an id "MS-SEQ" (unix milliseconds and a sequence, as
 * Redis stream ids; ids grow within a topic), is delivered in order to
 * every subscriber of its topic, and is retained (the newest `retain` per
 * topic) so a subscriber that comes back with the last id it saw misses
 * nothing still retained. The reach is the configuration's:
 *   "memory"            every worker of this machine: configured before the
 *                       fork, one ring in shared memory (4 x retain_bytes)
 *                       that every worker appends to and follows, in one
 *                       order; history is what the ring still holds. The
 *                       process that configured it (--workers 0) keeps
 *                       topics of its own instead;
 *   "redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]"  Redis Streams (Redis >= 5),
 *                       shared by every worker of every machine: one key
 *                       per topic, "spindle:bus:TOPIC", XADD'ed with
 *                       MAXLEN ~ retain. Each worker holds two connections:
 *                       one for publishing (and history reads), one that
 *                       XREAD BLOCKs for all its subscribers' topics and
 *                       fans the messages out to them. "rediss://..." is
 *                       the same over TLS (1.2 or later), the server's
 *                       certificate checked against the host name and
 *                       ?tls_ca=PATH (PEM) or the system's CAs.
 * Limits, as "?name=N&..." after either spec (defaults): retain=10000
 * messages per topic (memory in one process: also at most
 * retain_bytes=16777216 bytes; across workers: the ring's size),
 * max_message=1048576 bytes (-EMSGSIZE beyond), queue=1000 messages and
 * queue_bytes=1048576 per subscriber (an empty queue takes one message of
 * any allowed size). A subscriber whose queue is full when a message comes
 * is cut, with a log line naming the topic: its sp_bus_recv returns -EPIPE
 * and the others go on; across workers or over Redis, where a worker's
 * reader may bring a burst in one pass (it was kept from running), a full
 * subscriber that is draining is waited for (up to 1 s; 20 ms without
 * room made: cut) before the cut. It may subscribe again from
 * sp_bus_last_id to catch up from what is retained. Topics are 1 to
 * SP_BUS_TOPIC_MAX bytes without controls or spaces. Everything belongs to
 * the loop (worker) that made it; the Redis calls yield. */
#define SP_BUS_ID_MAX    48 /* an id and its NUL: "18446744073709551615-1844..." */
#define SP_BUS_TOPIC_MAX 200

typedef struct sp_bus_sub sp_bus_sub;

/* A received message: data (NUL-terminated, not counted in len), id and
 * topic valid until the next sp_bus_recv or sp_bus_unsubscribe. */
typedef struct sp_bus_msg {
    const char *id;
    const char *topic;
    const void *data;
    size_t len;
} sp_bus_msg;

/* Gives s a bus (see above for spec). Call it before the server serves
 * (an --app init, in the master before the fork, so the workers can be
 * counted); calling it again replaces the configuration. 0, or -EINVAL
 * (bad spec or limit; the reason is logged), -ENOENT (tls_ca unreadable), -ENOMEM,
 * -ENOSPC. Does not yield. */
SP_API int sp_bus_configure(sp_server *s, const char *spec);

/* Publishes len bytes (any bytes) on topic and writes its id into id_out
 * (may be NULL). 0 once the bus holds the message, or -errno, and then it
 * was not published: -ENXIO (no sp_bus_configure), -EINVAL (topic),
 * -EMSGSIZE (over max_message), -ENOMEM, and for Redis -ECONNREFUSED,
 * -ETIMEDOUT, -ECONNRESET (Redis unreachable: 2 s for each connect and
 * command) or -EIO (Redis answered with an error, logged). Memory: does
 * not yield; Redis: yields (from a coroutine only: -EPERM). */
SP_API int sp_bus_publish(sp_server *s, const char *topic, const void *data, size_t len,
                          char id_out[SP_BUS_ID_MAX]);

/* Subscribes to topic from since_id: NULL for messages published from now
 * on, "0" for everything retained, or an id ("MS-SEQ" or "MS") for the
 * messages after it (the retained ones first, then new ones). NULL with
 * errno: ENXIO, EINVAL (topic or id), ENOMEM, EPERM (Redis, outside a
 * coroutine), or the Redis errors of sp_bus_publish. Redis: yields. */
SP_API sp_bus_sub *sp_bus_subscribe(sp_server *s, const char *topic, const char *since_id);

/* Waits for the subscription's next message (yields; timeout_ms < 0 waits
 * without limit, 0 only looks). 1 with *out filled, 0 when the time ran
 * out, or -errno: -EPIPE (cut for being slow: the subscription is dead,
 * only sp_bus_unsubscribe is left), -ECONNRESET (the handler's client hung
 * up, or, once per outage, Redis became unreachable: the subscription
 * stays, and resumes from its last id when Redis is back, so nothing Redis
 * accepted is missed), -ESHUTDOWN (the server is stopping), -EPERM
 * (would wait outside a coroutine). */
SP_API int sp_bus_recv(sp_bus_sub *sub, sp_bus_msg *out, int64_t timeout_ms);

/* The id of the last message received, or the point the subscription
 * started from ("0-0" for "0"). Valid until the next recv. */
SP_API const char *sp_bus_last_id(const sp_bus_sub *sub);

/* Ends and frees the subscription (NULL is fine). Does not yield. */
SP_API void sp_bus_unsubscribe(sp_bus_sub *sub);

#endif
