/* worker_slot.c — a worker's side of its slot in the master's shared
 * memory: the request it serves, the counters of answered requests and
 * open connections (the server's observer, installed by worker.c), the
 * accept-balancing policy that reads every slot, and folding a dead
 * worker's counters into the retired totals. One writer per slot: no locks. */
#include "process/worker_slot.h"

#include "process/master.h"
#include "server/server.h"
#include "server/stats.h"

#include <string.h>
#include <sys/wait.h>

const uint64_t stats_bucket_us[STATS_BUCKETS] = {500,   1000,  2500,   5000,   10000,
                                                 25000, 50000, 100000, 500000, 1000000};

const char *const worker_restart_names[RESTART_CAUSES] = {"crashed", "exited", "recycled",
                                                          "watchdog", "memory"};

/* The watchdog first: its SIGKILL would read as a crash. */
int worker_restart_cause(int status, const worker_slot *w) {
    if (w->ended_by == WORKER_ENDED_WATCHDOG)
        return RESTART_WATCHDOG;
    if (WIFSIGNALED(status))
        return RESTART_CRASHED;
    if (WEXITSTATUS(status) != 0)
        return RESTART_EXITED;
    return w->ended_by == WORKER_ENDED_MEMORY ? RESTART_MEMORY : RESTART_RECYCLED;
}

void worker_stats_fold(worker_stats *total, const worker_stats *w) {
    for (int i = 0; i < WORKER_CLASSES; i++)
        total->by_class[i] += w->by_class[i];
    total->bytes_in += w->bytes_in;
    total->bytes_out += w->bytes_out;
    total->latency_sum_us += w->latency_sum_us;
    total->h2_streams += w->h2_streams;
    total->h2_resets += w->h2_resets;
    total->h2_goaways += w->h2_goaways;
    for (int i = 0; i <= STATS_BUCKETS; i++)
        total->latency[i] += w->latency[i];
    for (int i = 0; i < 3; i++)
        total->tls[i] += w->tls[i];
    for (int i = 0; i < 2; i++)
        total->accept[i] += w->accept[i];
}

void worker_slot_begin(worker_slot *w, const char *method, size_t mlen, const char *target,
                       size_t tlen, int keep_query) {
    const char *q = keep_query ? NULL : memchr(target, '?', tlen);
    if (q)
        tlen = (size_t)(q - target);
    size_t cap = sizeof w->request - 1;
    size_t m = mlen < cap ? mlen : cap;
    memcpy(w->request, method, m);
    size_t n = m;
    if (n < cap)
        w->request[n++] = ' ';
    size_t t = tlen < cap - n ? tlen : cap - n;
    memcpy(w->request + n, target, t);
    w->request[n + t] = '\0';
    w->busy = 1;
}

/* ---- the server's observer (server.h), ud: the worker_watch ------------ */

static void on_conns_open(void *ud, int nconns) {
    worker_watch *ww = ud;
    ww->slot->st.conns_open = (uint64_t)nconns;
}

/* A worker holding well over its share (average + half + 8, from the
 * counters in shared memory) steps aside for a moment. */
static int on_accept_step_aside(void *ud, int nconns) {
    const worker_board *b = ((worker_watch *)ud)->board;
    uint64_t sum = 0;
    int live = 0, used = worker_board_used(b);
    for (int i = 0; i < used; i++)
        if (b->slots[i].pid) {
            sum += b->slots[i].st.conns_open;
            live++;
        }
    if (live < 2)
        return 0;
    uint64_t avg = sum / (uint64_t)live;
    return (uint64_t)nconns > avg + avg / 2 + 8;
}

static void on_request_begin(void *ud, const http_request *h) {
    const worker_watch *ww = ud;
    worker_slot_begin(ww->slot, h->method, h->method_len, h->target, h->target_len,
                      ww->board->log_query);
}

static void on_request_end(void *ud) {
    worker_slot_end(((worker_watch *)ud)->slot);
}

static void on_request_done(void *ud, int status, uint64_t bytes_in, uint64_t bytes_out,
                            uint64_t us, int timed) {
    worker_stats *st = &((worker_watch *)ud)->slot->st;
    /* A departed client is no 4xx: the server refused nothing. */
    if (status == SP_STATUS_CLIENT_CLOSED)
        st->by_class[WORKER_CLASS_CLIENT_CLOSED]++;
    else
        st->by_class[status >= 100 && status < 600 ? status / 100 : 0]++;
    st->bytes_in += bytes_in;
    st->bytes_out += bytes_out;
    if (timed) {
        int b = 0;
        while (b < STATS_BUCKETS && us > stats_bucket_us[b])
            b++;
        st->latency[b]++;
        st->latency_sum_us += us;
    }
}

static void on_h2_event(void *ud, int what) {
    worker_stats *st = &((worker_watch *)ud)->slot->st;
    if (what == SERVER_H2_STREAM)
        st->h2_streams++;
    else if (what == SERVER_H2_RESET)
        st->h2_resets++;
    else if (what == SERVER_H2_GOAWAY)
        st->h2_goaways++;
}

static void on_accept_event(void *ud, int what) {
    if (what >= 0 && what < 2)
        ((worker_watch *)ud)->slot->st.accept[what]++;
}

static void on_tls_handshake(void *ud, int outcome) {
    if (outcome >= 0 && outcome < 3)
        ((worker_watch *)ud)->slot->st.tls[outcome]++;
}

void worker_watch_install(sp_server *s, worker_watch *ww) {
    server_observer o = {.conns_open = on_conns_open,
                         .accept_step_aside = on_accept_step_aside,
                         .accept_event = on_accept_event,
                         .request_begin = on_request_begin,
                         .request_end = on_request_end,
                         .request_done = on_request_done,
                         .h2_event = on_h2_event,
                         .tls_handshake = on_tls_handshake,
                         .ud = ww};
    server_set_observer(s, &o);
}
