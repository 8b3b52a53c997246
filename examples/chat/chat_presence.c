/* chat_presence.c — who is online, counted once across workers and
 * instances on the bus: every period each worker publishes
 * {"w":WORKER,"a":ANONYMOUS,"v":[VISITOR ids]} on the room's own topic (the
 * room's reader hands them here, they never reach clients; one topic, so
 * one subscription per worker); each keeps the latest of every worker it
 * hears and forgets those silent for three periods (killed, recycled). A
 * new worker reads them with the history at start, so it counts the
 * others at once. The worker with the smallest id announces the count; if
 * two think they are it for a period, the room sees one extra
 * announcement, nothing worse. */
#include "chat_presence.h"

#include "chat_room.h"
#include "chat_visitors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define PEERS_MAX      256   /* workers heard of at once */
#define LOCAL_MAX      20000 /* visitor ids one worker publishes (a message under 1 MB) */
#define EXPIRE_PERIODS 3

typedef char vid[ID_LEN + 1];

typedef struct peer {
    vid wid;
    int64_t seen; /* loop clock, ms */
    int anon;
    size_t nids;
    vid *ids;
} peer;

static struct {
    sp_server *server;
    vid me;
    int period_ms, announce_ms, poll_ms;
    int (*local_anon)(void);
    void (*announce)(int online);
    peer peers[PEERS_MAX];
    size_t npeers;
    vid *local; /* this worker's online visitors, LOCAL_MAX */
} pr;

static int hex_id(const char *p) {
    for (size_t i = 0; i < ID_LEN; i++)
        if (hexval(p[i]) < 0)
            return 0;
    return 1;
}

/* Parses the presence message this file publishes; anything else is
 * ignored. 0 or -1. */
static int parse(const char *d, size_t len, peer *out) {
    const char *p = d, *end = d + len;
    if (len < 30 || strncmp(p, "{\"w\":\"", 6) != 0 || !hex_id(p + 6))
        return -1;
    memcpy(out->wid, p + 6, ID_LEN);
    out->wid[ID_LEN] = 0;
    p += 6 + ID_LEN;
    if (end - p < 7 || strncmp(p, "\",\"a\":", 6) != 0)
        return -1;
    char *e;
    long anon = strtol(p + 6, &e, 10);
    if (e == p + 6 || anon < 0 || anon > 1000000 || end - e < 8 || strncmp(e, ",\"v\":[", 6))
        return -1;
    p = e + 6;
    size_t cap = (size_t)(end - p) / (ID_LEN + 3) + 1;
    vid *ids = malloc(cap * sizeof *ids);
    size_t n = 0;
    if (!ids)
        return -1;
    while (p < end && *p == '"' && end - p >= ID_LEN + 2 && hex_id(p + 1) && p[ID_LEN + 1] == '"' &&
           n < cap) {
        memcpy(ids[n], p + 1, ID_LEN);
        ids[n++][ID_LEN] = 0;
        p += ID_LEN + 2;
        if (p < end && *p == ',')
            p++;
    }
    if (end - p != 2 || p[0] != ']' || p[1] != '}') {
        free(ids);
        return -1;
    }
    out->anon = (int)anon;
    out->nids = n;
    out->ids = ids;
    return 0;
}

static void heard(peer *in) {
    if (strcmp(in->wid, pr.me) == 0) {
        free(in->ids);
        return;
    }
    peer *p = NULL;
    for (size_t i = 0; i < pr.npeers && !p; i++)
        if (strcmp(pr.peers[i].wid, in->wid) == 0)
            p = &pr.peers[i];
    if (!p) {
        if (pr.npeers == PEERS_MAX) {
            free(in->ids);
            return;
        }
        p = &pr.peers[pr.npeers++];
    } else {
        free(p->ids);
    }
    *p = *in;
    p->seen = sp_now_ms();
}

static void expire(void) {
    int64_t cutoff = sp_now_ms() - (int64_t)EXPIRE_PERIODS * pr.period_ms;
    for (size_t i = 0; i < pr.npeers;) {
        if (pr.peers[i].seen < cutoff) {
            free(pr.peers[i].ids);
            pr.peers[i] = pr.peers[--pr.npeers];
        } else {
            i++;
        }
    }
}

static int vid_cmp(const void *a, const void *b) {
    return memcmp(a, b, ID_LEN);
}

int presence_online(void) {
    expire();
    size_t nlocal = visitors_ids(pr.poll_ms, pr.local, LOCAL_MAX);
    if (nlocal > LOCAL_MAX)
        nlocal = LOCAL_MAX;
    size_t total = nlocal;
    int anon = pr.local_anon();
    for (size_t i = 0; i < pr.npeers; i++)
        total += pr.peers[i].nids, anon += pr.peers[i].anon;
    vid *all = malloc((total ? total : 1) * sizeof *all);
    if (!all)
        return (int)nlocal + anon; /* short of memory: at least this worker's */
    memcpy(all, pr.local, nlocal * sizeof *all);
    size_t k = nlocal;
    for (size_t i = 0; i < pr.npeers; i++, k += pr.peers[i - 1].nids)
        memcpy(all + k, pr.peers[i].ids, pr.peers[i].nids * sizeof *all);
    qsort(all, total, sizeof *all, vid_cmp);
    size_t uniq = 0;
    for (size_t i = 0; i < total; i++)
        if (i == 0 || vid_cmp(all[i], all[i - 1]) != 0)
            uniq++;
    free(all);
    return (int)uniq + anon;
}

void presence_heard(const char *id, const void *data, size_t len) {
    chat_id mid;
    peer p;
    /* Old ones (read with the history at start) are of workers that may be
     * gone: only those of the last three periods count. */
    if (id_parse(id, strlen(id), &mid) < 0 ||
        (int64_t)mid.ms < wall_ms() - (int64_t)EXPIRE_PERIODS * pr.period_ms)
        return;
    if (parse(data, len, &p) == 0)
        heard(&p);
}

int presence_is(const void *data, size_t len) {
    return len >= 6 && memcmp(data, "{\"w\":\"", 6) == 0;
}

static int leader(void) {
    expire();
    for (size_t i = 0; i < pr.npeers; i++)
        if (strcmp(pr.peers[i].wid, pr.me) < 0)
            return 0;
    return 1;
}

/* Every period: this worker's presence; every announce_ms, if it is the
 * leader, the count. A presence that cannot be published (Redis down) is
 * retried at the next period; the others keep this worker for three. */
static void announcer(void *arg) {
    int64_t next_announce = sp_now_ms() + pr.announce_ms;
    for (;;) {
        size_t n = visitors_ids(pr.poll_ms, pr.local, LOCAL_MAX);
        buf b = {0};
        int rc = buf_fmt(&b, "{\"w\":\"%s\",\"a\":%d,\"v\":[", pr.me, pr.local_anon());
        for (size_t i = 0; rc == 0 && i < n && i < LOCAL_MAX; i++)
            rc = buf_fmt(&b, "%s\"%s\"", i ? "," : "", pr.local[i]);
        if (rc == 0 && buf_str(&b, "]}") == 0)
            rc = sp_bus_publish(pr.server, ROOM_TOPIC, b.p, b.len, NULL);
        free(b.p);
        if (rc == -ESHUTDOWN || rc == -ENXIO)
            return;
        if (sp_now_ms() >= next_announce) {
            next_announce += pr.announce_ms;
            if (next_announce < sp_now_ms())
                next_announce = sp_now_ms() + pr.announce_ms;
            if (leader())
                pr.announce(presence_online());
        }
        int64_t wait = next_announce - sp_now_ms();
        sp_sleep(wait < pr.period_ms ? (wait > 0 ? wait : 0) : pr.period_ms);
    }
}

int presence_start(sp_server *s, int period_ms, int announce_ms, int poll_ms,
                   int (*local_anon)(void), void (*announce)(int online)) {
    unsigned char rnd[ID_LEN / 2];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        return -EIO;
    for (size_t i = 0; i < sizeof rnd; i++)
        snprintf(pr.me + 2 * i, 3, "%02x", rnd[i]);
    pr.server = s;
    pr.period_ms = period_ms;
    pr.announce_ms = announce_ms;
    pr.poll_ms = poll_ms;
    pr.local_anon = local_anon;
    pr.announce = announce;
    pr.local = malloc(LOCAL_MAX * sizeof *pr.local);
    if (!pr.local || sp_spawn(announcer, NULL) < 0)
        return -ENOMEM;
    return 0;
}
