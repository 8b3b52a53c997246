/* bus_redis.c — the Redis Streams backend: per worker one command
 * connection (XADD, history with XRANGE, CLIENT UNBLOCK) and one reader
 * coroutine whose connection XREAD BLOCKs on every topic with a local
 * subscriber, from the last id it fanned out, and fans out to the queues. */
#include "server/bus/bus_resp.h"

#include "base/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEY_PREFIX     "spindle:bus:"
#define CMD_TIMEOUT_MS 2000
#define BLOCK_MS       5000 /* a safety net: a new topic unblocks the reader at once */
#define READ_COUNT     "256"

typedef struct rtopic {
    bus_topic t; /* its name and subscribers, in the table */
    char *key;   /* KEY_PREFIX + name */
    size_t keylen;
    bus_id pos; /* everything up to here was fanned out to subs */
} rtopic;

typedef struct rd_state {
    rconn cmd;       /* publishing and history: one command at a time */
    sp_mutex *mu;    /* serializes the coroutines on cmd */
    rconn rd;        /* the reader's */
    long long rd_id; /* its CLIENT ID, for CLIENT UNBLOCK */
    int reader_running, in_block, down;
    bus_topics topics; /* those read here (dropped by the reader once unread) */
} rd_state;

static rd_state *state(bus *b) {
    if (b->be)
        return b->be;
    rd_state *st = calloc(1, sizeof *st);
    if (!st || !(st->mu = sp_mutex_new())) {
        free(st);
        return NULL;
    }
    b->be = st;
    b->be_pid = getpid();
    return st;
}

static int transport_err(int rc) {
    return rc == -ECONNRESET || rc == -EPIPE || rc == -ECONNREFUSED || rc == -ETIMEDOUT ||
           rc == -ENOTCONN || rc == -EPROTO;
}

/* A command on the command connection, (re)connecting when needed. A
 * connection that answered before and now fails at once is most likely
 * stale (Redis restarted while it idled): retried once on a new one. The
 * rare case of Redis applying the command and dying before its reply
 * reaches us would then apply it twice (an XADD twice). */
static int cmd_call(bus *b, redisReply **out, int argc, const char **argv, const size_t *lens) {
    rd_state *st = b->be;
    if (!loop_task(loop_current()))
        return -EPERM;
    int rc = sp_mutex_lock(st->mu, CMD_TIMEOUT_MS);
    if (rc < 0)
        return rc == -ETIMEDOUT ? -EBUSY : rc;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!st->cmd.sock && (rc = rconn_open(&st->cmd, b, CMD_TIMEOUT_MS)) < 0)
            break;
        int reused = st->cmd.used;
        rc = rconn_call(&st->cmd, out, CMD_TIMEOUT_MS, argc, argv, lens);
        if (rc == 0 || !reused || rc == -ETIMEDOUT)
            break;
    }
    sp_mutex_unlock(st->mu);
    if (rc == 0 && (*out)->type == REDIS_REPLY_ERROR) {
        log_msg(LOG_ERROR, "bus: Redis at %s:%d refused %s: %s", b->url.host, b->url.port, argv[0],
                (*out)->str);
        freeReplyObject(*out);
        *out = NULL;
        return -EIO;
    }
    return rc;
}

static int id_of(const redisReply *r, bus_id *id) {
    if (!r || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS))
        return -EPROTO;
    return bus_id_parse(r->str, r->len, id) < 0 ? -EPROTO : 0;
}

static void key_of(const char *topic, char *key) {
    strcpy(key, KEY_PREFIX);
    strcat(key, topic);
}

static int rd_publish(bus *b, const char *topic, const void *data, size_t len, bus_id *id) {
    if (!state(b))
        return -ENOMEM;
    char key[sizeof KEY_PREFIX + SP_BUS_TOPIC_MAX], maxlen[24];
    key_of(topic, key);
    snprintf(maxlen, sizeof maxlen, "%zu", b->lim.retain);
    const char *argv[] = {"XADD", key, "MAXLEN", "~", maxlen, "*", "d", len ? data : ""};
    size_t lens[] = {4, strlen(key), 6, 1, strlen(maxlen), 1, 1, len};
    redisReply *r;
    int rc = cmd_call(b, &r, 8, argv, lens);
    if (rc < 0)
        return rc;
    rc = id_of(r, id);
    freeReplyObject(r);
    return rc;
}

/* One stream entry [id, [field, value, ...]] as a message: the value of
 * "d", what sp_bus_publish writes (another writer's first value else). */
static bus_msg *entry_msg(const redisReply *e) {
    bus_id id;
    if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 || id_of(e->element[0], &id) < 0)
        return NULL;
    const redisReply *kv = e->element[1], *val = NULL;
    for (size_t i = 0; kv && kv->type == REDIS_REPLY_ARRAY && i + 1 < kv->elements; i += 2) {
        const redisReply *f = kv->element[i];
        if (!val || (f->type == REDIS_REPLY_STRING && f->len == 1 && f->str[0] == 'd'))
            val = kv->element[i + 1];
    }
    int ok = val && val->type == REDIS_REPLY_STRING;
    return bus_msg_new(id, ok ? val->str : "", ok ? val->len : 0);
}

/* ---- the reader ------------------------------------------------------------ */

/* The topic of a stream key Redis names, or NULL. */
static rtopic *topic_of_key(rd_state *st, const char *key, size_t keylen) {
    size_t pre = sizeof KEY_PREFIX - 1;
    if (keylen < pre || memcmp(key, KEY_PREFIX, pre))
        return NULL;
    return (rtopic *)bus_topics_find(&st->topics, key + pre, keylen - pre);
}

static void topic_fin(bus_topic *t) {
    free(((rtopic *)t)->key);
}

/* Drops the topics nobody here reads any more; the count of the rest. */
static size_t prune(rd_state *st) {
    return bus_topics_prune(&st->topics, 0, topic_fin);
}

static void outage(bus *b, rd_state *st, int rc) {
    if (st->down)
        return;
    st->down = 1;
    log_msg(LOG_WARNING,
            "bus: lost Redis at %s:%d (%s); reconnecting, subscribers will resume from their "
            "last ids",
            b->url.host, b->url.port, strerror(-rc));
    bus_mark_down(b);
}

static void fan_out(bus *b, rd_state *st, const redisReply *r) {
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        const redisReply *s = r->element[i];
        if (s->type != REDIS_REPLY_ARRAY || s->elements != 2 ||
            s->element[0]->type != REDIS_REPLY_STRING)
            continue;
        rtopic *t = topic_of_key(st, s->element[0]->str, s->element[0]->len);
        const redisReply *es = s->element[1];
        for (size_t j = 0; t && es->type == REDIS_REPLY_ARRAY && j < es->elements; j++) {
            bus_msg *m = entry_msg(es->element[j]);
            if (!m)
                continue; /* out of memory: the subscribers' last ids stay behind it */
            if (bus_id_cmp(m->id, t->pos) > 0) {
                t->pos = m->id;
                bus_fan_out(b, &t->t, m);
            }
            bus_msg_unref(m);
        }
    }
}

/* XREAD COUNT N BLOCK ms STREAMS key... id...: one call for every topic.
 * The topics are counted here, not by the caller: a subscribe while the
 * reader connected (it yields) adds one, and the arrays must hold it. */
static int read_once(bus *b, rd_state *st) {
    size_t n = st->topics.count;
    size_t argc = 6 + 2 * n;
    const char **argv = malloc(argc * sizeof *argv);
    size_t *lens = malloc(argc * sizeof *lens);
    char(*ids)[SP_BUS_ID_MAX] = malloc(n * sizeof *ids);
    int rc = -ENOMEM;
    if (argv && lens && ids) {
        const char *head[] = {"XREAD", "COUNT", READ_COUNT, "BLOCK", "5000", "STREAMS"};
        for (size_t i = 0; i < 6; i++)
            lens[i] = strlen(argv[i] = head[i]);
        size_t i = 0;
        bus_topics_each(&st->topics, bt) {
            const rtopic *t = (const rtopic *)bt;
            argv[6 + i] = t->key;
            lens[6 + i] = t->keylen;
            bus_id_format(t->pos, ids[i]);
            argv[6 + n + i] = ids[i];
            lens[6 + n + i] = strlen(ids[i]);
            i++;
        }
        redisReply *r;
        st->in_block = 1;
        rc = rconn_call(&st->rd, &r, BLOCK_MS + CMD_TIMEOUT_MS, (int)argc, argv, lens);
        st->in_block = 0;
        if (rc == 0 && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "LOADING", 7) == 0) {
            /* Restarted and still reading its data set back: not a
             * refusal; the reader asks again after its backoff. */
            freeReplyObject(r);
            rc = -EAGAIN;
        } else if (rc == 0 && r->type == REDIS_REPLY_ERROR) {
            log_msg(LOG_ERROR, "bus: Redis at %s:%d refused XREAD: %s", b->url.host, b->url.port,
                    r->str);
            rc = -EIO;
        } else if (rc == 0) {
            fan_out(b, st, r);
        }
        if (rc == 0 || rc == -EIO)
            freeReplyObject(r);
    }
    free(argv);
    free(lens);
    free(ids);
    return rc;
}

static int reader_connect(bus *b, rd_state *st) {
    int rc = rconn_open(&st->rd, b, CMD_TIMEOUT_MS);
    if (rc < 0)
        return rc;
    const char *argv[] = {"CLIENT", "ID"};
    size_t lens[] = {6, 2};
    redisReply *r;
    if ((rc = rconn_call(&st->rd, &r, CMD_TIMEOUT_MS, 2, argv, lens)) < 0)
        return rc;
    st->rd_id = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
    freeReplyObject(r);
    if (st->down)
        log_msg(LOG_INFO, "bus: Redis at %s:%d is back; subscribers resume", b->url.host,
                b->url.port);
    st->down = 0;
    return 0;
}

/* Runs while this worker has subscribers. Redis away: every subscriber is
 * told once, and the reader tries again with a backoff from 100 ms to 2 s;
 * each topic's position stays, so what Redis kept is read from there. */
static void reader_main(void *arg) {
    bus *b = arg;
    rd_state *st = b->be;
    int64_t backoff = 100;
    while (!b->stopping && prune(st) > 0) {
        int rc = st->rd.sock ? 0 : reader_connect(b, st);
        if (rc == 0)
            rc = read_once(b, st);
        if (rc == 0) {
            backoff = 100;
            continue;
        }
        if (transport_err(rc) || rc == -EACCES)
            outage(b, st, rc);
        sp_sleep(backoff);
        backoff = backoff * 2 > 2000 ? 2000 : backoff * 2;
    }
    rconn_close(&st->rd);
    st->reader_running = 0;
}

/* A topic the reader did not read yet: its XREAD is cut short so the next
 * one includes it. An UNBLOCK that arrives before the XREAD is answered 0:
 * tried again for a moment (at worst the BLOCK_MS safety net remains). */
static void unblock_reader(bus *b, rd_state *st) {
    char id[24];
    snprintf(id, sizeof id, "%lld", st->rd_id);
    const char *argv[] = {"CLIENT", "UNBLOCK", id};
    size_t lens[] = {6, 7, strlen(id)};
    for (int i = 0; i < 20 && st->in_block && st->rd_id; i++) {
        redisReply *r;
        if (cmd_call(b, &r, 3, argv, lens) < 0)
            return;
        int done = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
        freeReplyObject(r);
        if (done)
            return;
        sp_sleep(5);
    }
}

/* The stream's newest id now (0-0 when empty or absent). */
static int newest(bus *b, const char *key, bus_id *top) {
    const char *argv[] = {"XREVRANGE", key, "+", "-", "COUNT", "1"};
    size_t lens[] = {9, strlen(key), 1, 1, 5, 1};
    redisReply *r;
    int rc = cmd_call(b, &r, 6, argv, lens);
    if (rc < 0)
        return rc;
    *top = (bus_id){0, 0};
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 1) {
        const redisReply *e = r->element[0];
        rc = e->type == REDIS_REPLY_ARRAY && e->elements ? id_of(e->element[0], top) : -EPROTO;
    }
    freeReplyObject(r);
    return rc;
}

static int rd_subscribe(bus *b, sp_bus_sub *sub, const char *since) {
    rd_state *st = state(b);
    if (!st)
        return -ENOMEM;
    char key[sizeof KEY_PREFIX + SP_BUS_TOPIC_MAX];
    key_of(sub->name, key);
    bus_id top;
    int rc = newest(b, key, &top);
    if (rc < 0)
        return rc;
    /* From here to the attach nothing yields: the reader's position and
     * the subscriber's history meet exactly. */
    rtopic *t = (rtopic *)bus_topics_get(&st->topics, sub->name, strlen(sub->name), sizeof *t);
    if (t && !t->key && (t->key = strdup(key)))
        t->keylen = strlen(key);
    if (!t || !t->key)
        return -ENOMEM; /* a topic without its key is dropped by the next prune */
    int fresh = t->t.nsubs == 0;
    if (fresh)
        t->pos = top; /* the reader follows from the newest */
    sub->last = top;
    if (since)
        bus_id_parse(since, strlen(since), &sub->last); /* checked by the caller */
    /* Live messages come after t->pos; what lies between the starting
     * point and there is history, fetched at the subscriber's own pace. */
    sub->hist_to = t->pos;
    sub->hist = bus_id_cmp(sub->last, t->pos) < 0;
    sub->topic = t;
    list_push_back(&t->t.subs, &sub->node);
    t->t.nsubs++;
    if (!st->reader_running) {
        if ((rc = sp_spawn(reader_main, b)) < 0) {
            list_remove(&t->t.subs, &sub->node);
            t->t.nsubs--;
            return rc;
        }
        st->reader_running = 1;
    } else if (fresh) {
        unblock_reader(b, st);
    }
    return 0;
}

static int rd_fetch(bus *b, sp_bus_sub *sub) {
    rtopic *t = sub->topic;
    char from[SP_BUS_ID_MAX + 1], to[SP_BUS_ID_MAX], count[8];
    bus_id_format((bus_id){sub->last.ms, sub->last.seq + 1}, from); /* after last */
    bus_id_format(sub->hist_to, to);
    snprintf(count, sizeof count, "%d", BUS_HIST_BATCH);
    const char *argv[] = {"XRANGE", t->key, from, to, "COUNT", count};
    size_t lens[] = {6, t->keylen, strlen(from), strlen(to), 5, strlen(count)};
    redisReply *r;
    int rc = cmd_call(b, &r, 6, argv, lens);
    if (rc < 0)
        return rc;
    if (sub->hlen) { /* another fetch of this subscriber's raced ahead */
        freeReplyObject(r);
        return 0;
    }
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        bus_msg *m = entry_msg(r->element[i]);
        if (m && bus_id_cmp(m->id, sub->last) > 0 && sub->hlen < BUS_HIST_BATCH)
            sub->hbuf[sub->hlen++] = m;
        else
            bus_msg_unref(m);
    }
    freeReplyObject(r);
    if (!sub->hlen)
        sub->hist = 0;
    return 0;
}

static void rd_unsubscribe(bus *b, sp_bus_sub *sub) {
    rtopic *t = sub->topic;
    list_remove(&t->t.subs, &sub->node);
    t->t.nsubs--; /* the reader drops the topic at its next read */
}

static void rd_free(bus *b) {
    rd_state *st = b->be;
    if (st->reader_running)
        return; /* its coroutine still holds st: left to the process's end */
    if (loop_current()) {
        rconn_close(&st->cmd);
        rconn_close(&st->rd);
    }
    sp_mutex_free(st->mu);
    prune(st); /* a topic still subscribed is left to the process's end */
    free(st);
    b->be = NULL;
}

const bus_backend bus_redis_backend = {"redis",  rd_publish,     rd_subscribe,
                                       rd_fetch, rd_unsubscribe, rd_free};
