/* bus_shm.c — the memory bus across the workers of one machine: every
 * worker appends to one ring in shared memory (bus_shm.h) and one reader
 * coroutine per worker follows it, fanning out to that worker's
 * subscribers in ring order; a sleeping reader is woken by a datagram on
 * its own abstract unix socket. History is read from the ring itself. */
#include "server/bus/bus_shm.h"

#include "base/log.h"
#include "loop/loop_backend.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define SAFETY_NAPMS 5000 /* a reader looks at the ring at least this often */

typedef struct shm_state {
    shm_ring *r;
    int slot;        /* ours in r->slots */
    loop_watch wake; /* our socket: datagrams wake the reader */
    struct sockaddr_un addr;
    socklen_t addrlen;
    uint64_t rpos; /* the reader's next position */
    size_t nsubs;
    int reader_running;
    task *reader;      /* parked with nothing to do (no subscriber) */
    bus_topics topics; /* the topics subscribed here */
} shm_state;

shm_ring *shm_ring_map(size_t size) {
    shm_ring *r =
        mmap(NULL, sizeof *r + size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED)
        return NULL;
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    int rc = pthread_mutex_init(&r->mu, &a);
    pthread_mutexattr_destroy(&a);
    if (rc) {
        munmap(r, sizeof *r + size);
        return NULL;
    }
    r->size = size;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(r->token, sizeof r->token, "%d.%ld", (int)getpid(), (long)ts.tv_nsec);
    return r;
}

void shm_ring_unmap(shm_ring *r) {
    if (r)
        munmap(r, shm_ring_bytes(r));
}

/* A worker killed while holding the lock left the ring as it was before
 * its append: head moves only once an entry is whole. */
static void ring_lock(shm_ring *r) {
    if (pthread_mutex_lock(&r->mu) == EOWNERDEAD)
        pthread_mutex_consistent(&r->mu);
}

static shm_entry *entry_at(shm_ring *r, uint64_t pos) {
    return (shm_entry *)(void *)(r->data + pos % r->size);
}

static uint64_t load(const uint64_t *p) {
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* ---- this worker's place on the ring ----------------------------------- */

static void sock_name(const shm_ring *r, pid_t pid, struct sockaddr_un *a, socklen_t *len) {
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    int n =
        snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "spindle-bus-%s-%d", r->token, (int)pid);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static int slot_claim(shm_ring *r, pid_t me) {
    for (int i = 0; i < SHM_SLOTS; i++) {
        pid_t p = __atomic_load_n(&r->slots[i].pid, __ATOMIC_ACQUIRE);
        if ((p == 0 || (p != me && kill(p, 0) < 0 && errno == ESRCH)) &&
            __atomic_compare_exchange_n(&r->slots[i].pid, &p, me, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            uint32_t n = __atomic_load_n(&r->nslots, __ATOMIC_ACQUIRE);
            while (n < (uint32_t)i + 1 &&
                   !__atomic_compare_exchange_n(&r->nslots, &n, (uint32_t)i + 1, 0,
                                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            }
            return i;
        }
    }
    return -1;
}

static shm_state *state(bus *b) {
    if (b->be)
        return b->be;
    loop *l = loop_current();
    shm_state *st = l ? calloc(1, sizeof *st) : NULL;
    if (!st)
        return NULL;
    st->r = b->ring;
    pid_t me = getpid();
    if ((st->slot = slot_claim(st->r, me)) < 0) {
        log_msg(LOG_ERROR,
                "bus: more than %d processes follow the memory bus; use fewer "
                "workers or a redis:// bus",
                SHM_SLOTS);
        free(st);
        return NULL;
    }
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sock_name(st->r, me, &st->addr, &st->addrlen);
    if (fd < 0 || bind(fd, (struct sockaddr *)&st->addr, st->addrlen) < 0) {
        log_msg(LOG_ERROR, "bus: cannot make this worker's wake-up socket: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        __atomic_store_n(&st->r->slots[st->slot].pid, 0, __ATOMIC_RELEASE);
        free(st);
        return NULL;
    }
    st->wake.fd = fd;
    if (loop_watch_add(l, &st->wake, BACKEND_READ_LEVEL) < 0) {
        close(fd);
        __atomic_store_n(&st->r->slots[st->slot].pid, 0, __ATOMIC_RELEASE);
        free(st);
        return NULL;
    }
    b->be = st;
    b->be_pid = me;
    return st;
}

/* Wakes the readers that sleep: ours directly, the others' with a byte on
 * their sockets; a slot whose socket is gone belonged to a dead worker.
 * Only the slots up to the highest ever claimed are looked at (claims take
 * the lowest free one, so with N workers that is about N, not 256). */
static void wake_readers(bus *b, shm_state *st) {
    shm_ring *r = st->r;
    uint32_t n = __atomic_load_n(&r->nslots, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n && i < SHM_SLOTS; i++) {
        shm_slot *s = &r->slots[i];
        pid_t p = __atomic_load_n(&s->pid, __ATOMIC_ACQUIRE);
        if (!p || !__atomic_exchange_n(&s->armed, 0, __ATOMIC_SEQ_CST))
            continue;
        struct sockaddr_un a;
        socklen_t alen;
        sock_name(r, p, &a, &alen);
        if (sendto(st->wake.fd, "", 1, MSG_DONTWAIT, (struct sockaddr *)&a, alen) < 0 &&
            (errno == ECONNREFUSED || errno == ENOENT) && kill(p, 0) < 0)
            __atomic_compare_exchange_n(&s->pid, &p, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
}

/* ---- publishing --------------------------------------------------------- */

static size_t entry_total(size_t tlen, size_t len) {
    size_t n = sizeof(shm_entry) + tlen + len;
    return (n + SHM_ALIGN - 1) / SHM_ALIGN * SHM_ALIGN;
}

/* Frees room for n bytes at head by moving tail past the oldest entries;
 * tail is stored (and fenced) before anything is written over, so a
 * reader that checks tail after its copy knows whether it was torn. */
static void make_room(shm_ring *r, uint64_t end) {
    uint64_t tail = r->tail;
    while (end - tail > r->size)
        tail += entry_at(r, tail)->total;
    __atomic_store_n(&r->tail, tail, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static int shm_publish(bus *b, const char *topic, const void *data, size_t len, bus_id *id) {
    shm_state *st = state(b);
    if (!st)
        return -ENOMEM;
    shm_ring *r = st->r;
    size_t tlen = strlen(topic), total = entry_total(tlen, len);
    ring_lock(r);
    uint64_t pos = r->head, room = r->size - pos % r->size;
    if (room < total) { /* the entry does not fit before the end: pad to it */
        make_room(r, pos + room);
        shm_entry *pad = entry_at(r, pos);
        *pad = (shm_entry){.pos = pos, .total = (uint32_t)room};
        pos += room;
    }
    make_room(r, pos + total);
    shm_entry *e = entry_at(r, pos);
    *e = (shm_entry){.pos = pos,
                     .id = bus_id_next(r->last),
                     .total = (uint32_t)total,
                     .len = (uint32_t)len,
                     .tlen = (uint16_t)tlen};
    char *p = (char *)(e + 1);
    memcpy(p, topic, tlen);
    if (len)
        memcpy(p + tlen, data, len);
    r->last = e->id;
    *id = e->id;
    __atomic_store_n(&r->head, pos + total, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&r->mu);
    wake_readers(b, st);
    return 0;
}

/* ---- reading the ring ------------------------------------------------------ */

/* A header that can be followed: its own position, and its bytes inside
 * the ring (a header read while a writer overwrote it may be anything). */
static int entry_sane(const shm_ring *r, const shm_entry *e, uint64_t p) {
    return e->pos == p && e->total >= sizeof *e && e->total % SHM_ALIGN == 0 &&
           p % r->size + e->total <= r->size && sizeof *e + e->tlen + e->len <= e->total;
}

/* The entry at *pos copied out when its topic is want,
 * and *pos moved past it. 1 copied, 0 skipped (padding, another topic:
 * *out NULL), -ESTALE when the writers lapped *pos (it is set to the
 * tail), -ENOMEM. A want of "" copies nothing. A torn copy is caught by re-reading tail after it.
 */
static int read_entry(shm_ring *r, uint64_t *pos, const char *want, size_t wantlen, bus_msg **out) {
    uint64_t p = *pos;
    *out = NULL;
    if (load(&r->tail) > p)
        goto lapped;
    shm_entry e = *entry_at(r, p);
    if (!entry_sane(r, &e, p))
        goto lapped;
    const char *bytes = (const char *)(entry_at(r, p) + 1);
    if (e.tlen && wantlen && (e.tlen == wantlen && !memcmp(bytes, want, wantlen))) {
        *out = bus_msg_new(e.id, bytes + e.tlen, e.len);
        if (!*out)
            return -ENOMEM;
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (load(&r->tail) > p) {
        bus_msg_unref(*out);
        *out = NULL;
        goto lapped;
    }
    *pos = p + e.total;
    return *out != NULL;
lapped:
    *pos = load(&r->tail);
    return -ESTALE;
}

/* The writers went a whole ring past this worker's reader (it stalled):
 * what its subscribers missed is gone, so each is cut, as a slow one. */
static void lapped(bus *b, shm_state *st) {
    log_msg(LOG_WARNING,
            "bus: this worker's reader fell a whole shared ring (%zu bytes) behind the "
            "publishers; its subscribers are cut and may resubscribe from their last ids "
            "(a larger ?retain_bytes= makes the ring larger)",
            (size_t)st->r->size);
    for (list_node *n = b->subs.head; n; n = n->next)
        bus_cut(container_of(n, sp_bus_sub, all), "; the worker fell behind the shared ring");
}

/* Fans the entries in [rpos, head) out to their topics' subscribers here.
 * The topic is matched before the copy, so another topic's entries cost a
 * header read; the copy's topic is checked again after it (torn read). */
static void follow(bus *b, shm_state *st) {
    shm_ring *r = st->r;
    uint64_t head = load(&r->head);
    while (st->rpos < head && !b->stopping) {
        shm_entry e = *entry_at(r, st->rpos);
        bus_topic *t = NULL;
        if (entry_sane(r, &e, st->rpos) && e.tlen)
            t = bus_topics_find(&st->topics, (const char *)(entry_at(r, st->rpos) + 1), e.tlen);
        bus_msg *m;
        uint64_t at = st->rpos;
        int rc = t ? read_entry(r, &st->rpos, t->name, t->namelen, &m)
                   : read_entry(r, &st->rpos, "", 0, &m); /* moves past it, or finds the lap */
        if (rc == -ESTALE) {
            lapped(b, st);
            continue;
        }
        if (rc == -ENOMEM) {
            st->rpos = at + e.total; /* the subscribers' last ids stay before it */
            continue;
        }
        if (rc == 1) {
            bus_fan_out(b, t, m);
            bus_msg_unref(m);
        }
    }
}

/* Follows the ring while this worker has subscribers; parks without one
 * (a subscribe wakes it). Before sleeping it arms its slot and looks once
 * more, so a publish between the look and the sleep is not missed. */
static void reader_main(void *arg) {
    bus *b = arg;
    shm_state *st = b->be;
    loop *l = loop_current();
    shm_slot *me = &st->r->slots[st->slot];
    while (!b->stopping) {
        if (!st->nsubs) {
            st->reader = loop_task(l);
            loop_park(l, LOOP_NO_DEADLINE, NULL);
            st->reader = NULL;
            continue;
        }
        follow(b, st);
        __atomic_store_n(&me->armed, 1, __ATOMIC_SEQ_CST);
        if (load(&st->r->head) != st->rpos)
            continue;
        loop_wait_fd(l, &st->wake, LOOP_READ, loop_clock_ms() + SAFETY_NAPMS);
        char buf[64];
        while (recv(st->wake.fd, buf, sizeof buf, MSG_DONTWAIT) > 0) {
        }
    }
    st->reader_running = 0;
}

/* ---- subscribers ------------------------------------------------------------ */

static int shm_subscribe(bus *b, sp_bus_sub *sub, const char *since) {
    shm_state *st = state(b);
    if (!st)
        return -ENOMEM;
    bus_topic *t = bus_topics_get(&st->topics, sub->name, strlen(sub->name), sizeof *t);
    if (!t)
        return -ENOMEM;
    if (!st->reader_running) {
        int rc = sp_spawn(reader_main, b);
        if (rc < 0)
            return rc;
        st->reader_running = 1;
    }
    ring_lock(st->r);
    bus_id top = st->r->last;
    uint64_t head = st->r->head;
    pthread_mutex_unlock(&st->r->mu);
    if (!st->nsubs)
        st->rpos = head; /* the reader was idle: it goes on from here */
    sub->last = top;
    if (since)
        bus_id_parse(since, strlen(since), &sub->last); /* checked by the caller */
    /* Everything up to top is history, read at the subscriber's pace; the
     * reader delivers what comes after (and skips what is not newer). */
    sub->hist_to = top;
    sub->hist = bus_id_cmp(sub->last, top) < 0;
    sub->hpos = UINT64_MAX; /* found at the first fetch */
    sub->topic = t;
    list_push_back(&t->subs, &sub->node);
    t->nsubs++;
    if (st->nsubs++ == 0 && st->reader)
        loop_wake(loop_current(), st->reader, 0);
    return 0;
}

/* The next history after sub->last: a walk from the tail to where it
 * starts (entries are in id order), then onwards at sub->hpos. */
static int shm_fetch(bus *b, sp_bus_sub *sub) {
    shm_state *st = b->be;
    bus_topic *t = sub->topic;
    shm_ring *r = st->r;
    uint64_t head = load(&r->head);
    if (sub->hpos == UINT64_MAX || sub->hpos < load(&r->tail))
        sub->hpos = load(&r->tail);
    while (sub->hpos < head && sub->hlen < BUS_HIST_BATCH) {
        bus_msg *m;
        int rc = read_entry(r, &sub->hpos, t->name, t->namelen, &m);
        if (rc == -ESTALE)
            continue; /* the oldest went meanwhile: on from the new tail */
        if (rc < 0)
            return rc;
        if (!rc)
            continue;
        if (bus_id_cmp(m->id, sub->hist_to) > 0) {
            bus_msg_unref(m);
            sub->hpos = head;
            break;
        }
        if (bus_id_cmp(m->id, sub->last) > 0)
            sub->hbuf[sub->hlen++] = m;
        else
            bus_msg_unref(m);
    }
    if (!sub->hlen)
        sub->hist = 0;
    return 0;
}

static void shm_unsubscribe(bus *b, sp_bus_sub *sub) {
    shm_state *st = b->be;
    bus_topic *t = sub->topic;
    list_remove(&t->subs, &sub->node);
    t->nsubs--;
    st->nsubs--;
}

static void shm_free(bus *b) {
    shm_state *st = b->be;
    if (st->reader_running)
        return; /* its coroutine still holds st: left to the process's end */
    loop *l = loop_current();
    if (l)
        loop_watch_close(l, &st->wake);
    else
        close(st->wake.fd);
    __atomic_store_n(&st->r->slots[st->slot].pid, 0, __ATOMIC_RELEASE);
    bus_topics_prune(&st->topics, 1, NULL);
    free(st);
    b->be = NULL;
}

const bus_backend bus_shm_backend = {"memory (shared by the workers)",
                                     shm_publish,
                                     shm_subscribe,
                                     shm_fetch,
                                     shm_unsubscribe,
                                     shm_free};
