/* bus.c — the bus's front, the same whatever the backend: ids, refcounted
 * messages, each subscriber's bounded queue (and cutting the slow one),
 * sp_bus_recv's wait, and the public calls handed to the backend. */
#include "server/bus/bus.h"
#include "server/bus/bus_embed.h"

#include "base/log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- ids and messages ----------------------------------------------------- */

static int parse_u64(const char *s, size_t len, uint64_t *out) {
    if (!len || len > 20)
        return -EINVAL;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -EINVAL;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -EINVAL;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int bus_id_parse(const char *s, size_t len, bus_id *out) {
    const char *dash = memchr(s, '-', len);
    bus_id id = {0, 0};
    if (parse_u64(s, dash ? (size_t)(dash - s) : len, &id.ms) < 0)
        return -EINVAL;
    if (dash && parse_u64(dash + 1, len - (size_t)(dash + 1 - s), &id.seq) < 0)
        return -EINVAL;
    *out = id;
    return 0;
}

bus_id bus_id_next(bus_id last) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    bus_id id = {(uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000, 0};
    if (id.ms <= last.ms)
        id = (bus_id){last.ms, last.seq + 1};
    return id;
}

void bus_id_format(bus_id id, char out[SP_BUS_ID_MAX]) {
    snprintf(out, SP_BUS_ID_MAX, "%" PRIu64 "-%" PRIu64, id.ms, id.seq);
}

bus_msg *bus_msg_new(bus_id id, const void *data, size_t len) {
    bus_msg *m = malloc(sizeof *m + len + 1);
    if (!m)
        return NULL;
    m->refs = 1;
    m->id = id;
    bus_id_format(id, m->ids);
    m->len = len;
    if (len)
        memcpy(m->data, data, len);
    m->data[len] = '\0';
    return m;
}

void bus_msg_unref(bus_msg *m) {
    if (m && --m->refs == 0)
        free(m);
}

/* ---- a subscriber's queue ------------------------------------------------- */

void bus_wake(sp_bus_sub *sub) {
    task *t = sub->waiter;
    if (t) {
        sub->waiter = NULL;
        loop_wake(sub->l, t, 0);
    }
}

static void queue_clear(sp_bus_sub *sub) {
    for (; sub->qlen; sub->qlen--) {
        bus_msg_unref(sub->q[sub->qhead]);
        sub->qhead = (sub->qhead + 1) % sub->qcap;
    }
    free(sub->q);
    sub->q = NULL;
    sub->qcap = sub->qhead = sub->qbytes = 0;
    for (; sub->hlen; sub->hlen--)
        bus_msg_unref(sub->hbuf[sub->hhead++]);
    sub->hhead = 0;
}

/* Cut for being slow: its queue goes at once (that is the memory the
 * limit protects), and the others go on without waiting for it. */
void bus_cut(sp_bus_sub *sub, const char *why) {
    if (sub->cut)
        return;
    const bus_limits *lim = &sub->b->lim;
    log_msg(LOG_WARNING,
            "bus: a subscriber of topic \"%s\" was cut for being slow: %zu messages, %zu bytes "
            "queued (limits: queue=%zu, queue_bytes=%zu)%s",
            sub->name, sub->qlen, sub->qbytes, lim->queue, lim->queue_bytes, why);
    sub->cut = 1;
    queue_clear(sub);
    bus_wake(sub);
}

/* The ring grows by doubling up to the queue limit: a subscriber that
 * keeps up costs a few slots, not the limit's worth. */
static int queue_push(sp_bus_sub *sub, bus_msg *m) {
    if (sub->qlen == sub->qcap) {
        size_t ncap = sub->qcap ? sub->qcap * 2 : 8;
        if (ncap > sub->b->lim.queue)
            ncap = sub->b->lim.queue;
        bus_msg **nq = malloc(ncap * sizeof *nq);
        if (!nq)
            return -ENOMEM;
        for (size_t i = 0; i < sub->qlen; i++)
            nq[i] = sub->q[(sub->qhead + i) % sub->qcap];
        free(sub->q);
        sub->q = nq;
        sub->qcap = ncap;
        sub->qhead = 0;
    }
    sub->q[(sub->qhead + sub->qlen++) % sub->qcap] = bus_msg_ref(m);
    sub->qbytes += m->len;
    return 0;
}

void bus_deliver(sp_bus_sub *sub, bus_msg *m) {
    if (sub->cut || bus_id_cmp(m->id, sub->last) <= 0)
        return;
    const bus_limits *lim = &sub->b->lim;
    if (sub->qlen >= lim->queue) {
        bus_cut(sub, "");
        return;
    }
    if (sub->qlen && sub->qbytes + m->len > lim->queue_bytes) {
        bus_cut(sub, "");
        return;
    }
    if (queue_push(sub, m) < 0) {
        bus_cut(sub, "; out of memory");
        return;
    }
    bus_wake(sub);
}

/* 1 when m, newer than what sub has, finds its queue full: a deliver
 * would cut it. */
static int queue_full_for(const sp_bus_sub *sub, const bus_msg *m) {
    const bus_limits *lim = &sub->b->lim;
    if (sub->cut || bus_id_cmp(m->id, sub->last) <= 0)
        return 0;
    return sub->qlen >= lim->queue || (sub->qlen && sub->qbytes + m->len > lim->queue_bytes);
}

/* What the full queues of t's subscribers hold (each counted one more, so
 * a full empty-queue case still counts); 0 when none is full. */
static size_t full_debt(const bus_topic *t, const bus_msg *m) {
    size_t debt = 0;
    for (const list_node *n = t->subs.head; n; n = n->next) {
        const sp_bus_sub *sub = container_of(n, sp_bus_sub, node);
        if (queue_full_for(sub, m))
            debt += sub->qlen + 1;
    }
    return debt;
}

void bus_fan_out(bus *b, bus_topic *t, bus_msg *m) {
    size_t debt = full_debt(t, m);
    if (debt) {
        loop *l = loop_current();
        int64_t now = loop_clock_ms();
        int64_t give_up = now + BUS_ROOM_MAX_MS, idle_until = now + BUS_ROOM_IDLE_MS;
        while (debt && !b->stopping && now < give_up && now < idle_until) {
            loop_park(l, now + 1, NULL);
            size_t left = full_debt(t, m);
            now = loop_clock_ms();
            if (left < debt)
                idle_until = now + BUS_ROOM_IDLE_MS; /* someone is catching up */
            debt = left;
        }
    }
    for (list_node *n = t->subs.head; n; n = n->next)
        bus_deliver(container_of(n, sp_bus_sub, node), m);
}

void bus_mark_down(bus *b) {
    for (list_node *n = b->subs.head; n; n = n->next) {
        sp_bus_sub *sub = container_of(n, sp_bus_sub, all);
        sub->down = 1;
        bus_wake(sub);
    }
}

/* The next message in order, history first; one not newer than the last
 * delivered (history and the live queue may overlap) is skipped. */
static bus_msg *next_msg(sp_bus_sub *sub) {
    for (;;) {
        bus_msg *m = NULL;
        if (sub->hlen) {
            m = sub->hbuf[sub->hhead++];
            if (--sub->hlen == 0)
                sub->hhead = 0;
        } else if (!sub->hist && sub->qlen) {
            m = sub->q[sub->qhead];
            sub->qhead = (sub->qhead + 1) % sub->qcap;
            sub->qlen--;
            sub->qbytes -= m->len;
        } else {
            return NULL;
        }
        if (bus_id_cmp(m->id, sub->last) > 0)
            return m;
        bus_msg_unref(m);
    }
}

/* Parks the receiver until a message (bus_wake), its client's hang-up or
 * deadline. A wait that may be long gives back the connection's buffer at
 * once and, once it has lasted, the stack pages below it (loop.h, as the
 * sync waits do): a subscriber costs its queue, not 27 KB of buffer and
 * stack; one served quickly pays no syscall. */
static int park(sp_bus_sub *sub, task *t, int64_t deadline) {
    loop *l = sub->l;
    loop_watch *hup = loop_task_hup_watch(t);
    int64_t soon = loop_clock_ms() + LOOP_LONG_WAIT_MS;
    if (deadline <= soon)
        return loop_park(l, deadline, hup);
    loop_long_wait_begin(l);
    int rc = loop_park(l, soon, hup);
    if (rc == -ETIMEDOUT && sub->waiter == t) {
        loop_trim_when_parked(l);
        rc = loop_park(l, deadline, hup);
    }
    loop_long_wait_end(l);
    return rc;
}

int sp_bus_recv(sp_bus_sub *sub, sp_bus_msg *out, int64_t timeout_ms) {
    bus *b = sub->b;
    bus_msg_unref(sub->cur);
    sub->cur = NULL;
    int64_t deadline = timeout_ms < 0 ? LOOP_NO_DEADLINE : loop_clock_ms() + timeout_ms;
    for (;;) {
        if (sub->cut)
            return -EPIPE;
        if (sub->stopping)
            return -ESHUTDOWN;
        if (sub->hist && !sub->hlen) {
            int rc = b->ops->fetch(b, sub);
            if (rc < 0)
                return rc == -ECONNRESET || rc == -ECONNREFUSED || rc == -ETIMEDOUT ? -ECONNRESET
                                                                                    : rc;
            continue;
        }
        bus_msg *m = next_msg(sub);
        if (m) {
            sub->cur = m;
            sub->last = m->id;
            memcpy(sub->last_s, m->ids, sizeof sub->last_s);
            out->id = m->ids;
            out->topic = sub->name;
            out->data = m->data;
            out->len = m->len;
            return 1;
        }
        if (sub->down) {
            sub->down = 0;
            return -ECONNRESET;
        }
        if (loop_clock_ms() >= deadline)
            return 0;
        task *t = loop_task(sub->l);
        if (!t)
            return -EPERM;
        sub->waiter = t;
        int rc = park(sub, t, deadline);
        sub->waiter = NULL;
        if (rc == -ECONNRESET)
            return rc; /* the handler's client left */
    }
}

const char *sp_bus_last_id(const sp_bus_sub *sub) {
    return sub->last_s;
}

/* ---- the public calls ------------------------------------------------------ */

static int topic_ok(const char *t) {
    size_t n = t ? strlen(t) : 0;
    if (!n || n > SP_BUS_TOPIC_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)t[i] <= ' ' || t[i] == 0x7f)
            return 0;
    return 1;
}

int sp_bus_publish(sp_server *s, const char *topic, const void *data, size_t len,
                   char id_out[SP_BUS_ID_MAX]) {
    bus *b = s ? bus_of(s) : NULL;
    if (!b)
        return -ENXIO;
    if (!topic_ok(topic) || (len && !data))
        return -EINVAL;
    if (len > b->lim.max_message)
        return -EMSGSIZE;
    bus_id id;
    int rc = b->ops->publish(b, topic, data, len, &id);
    if (rc == 0 && id_out)
        bus_id_format(id, id_out);
    return rc;
}

sp_bus_sub *sp_bus_subscribe(sp_server *s, const char *topic, const char *since_id) {
    bus *b = s ? bus_of(s) : NULL;
    bus_id dummy;
    int rc = -ENXIO;
    if (!b)
        goto fail;
    rc = -EINVAL;
    if (!topic_ok(topic) || (since_id && bus_id_parse(since_id, strlen(since_id), &dummy) < 0))
        goto fail;
    rc = -ENXIO;
    loop *l = loop_current();
    if (!l)
        goto fail;
    rc = -ENOMEM;
    sp_bus_sub *sub = calloc(1, sizeof *sub);
    if (!sub || !(sub->name = strdup(topic))) {
        free(sub);
        goto fail;
    }
    sub->b = b;
    sub->l = l;
    sub->stopping = b->stopping;
    if ((rc = b->ops->subscribe(b, sub, since_id)) < 0) {
        free(sub->name);
        free(sub);
        goto fail;
    }
    bus_id_format(sub->last, sub->last_s);
    list_push_back(&b->subs, &sub->all);
    return sub;
fail:
    errno = -rc;
    return NULL;
}

void sp_bus_unsubscribe(sp_bus_sub *sub) {
    if (!sub)
        return;
    bus *b = sub->b;
    b->ops->unsubscribe(b, sub);
    list_remove(&b->subs, &sub->all);
    bus_msg_unref(sub->cur);
    queue_clear(sub);
    free(sub->name);
    free(sub);
}

/* ---- bus_embed.h: for a binding ------------------------------------------ */

size_t bus_subscriber_count(sp_server *s) {
    bus *b = s ? bus_of(s) : NULL;
    size_t n = 0;
    for (list_node *x = b ? b->subs.head : NULL; x; x = x->next)
        n++;
    return n;
}

void bus_sub_interrupt(sp_bus_sub *sub) {
    sub->stopping = 1;
    bus_wake(sub);
}

void bus_sub_resume(sp_bus_sub *sub) {
    sub->stopping = sub->b->stopping;
}
