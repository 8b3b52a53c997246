/* worker_slot.h — what a worker tells its master through shared memory:
 * a heartbeat the loop refreshes 4 times a second (a stale one means a handler
 * blocked the loop), its request count, the request line it is serving
 * (for the master's log when the worker dies or hangs), its access-log
 * buffer, and why it ended; and the master's count of restarts by cause. */
#ifndef SPINDLE_WORKER_SLOT_H
#define SPINDLE_WORKER_SLOT_H

#include <stdint.h>
#include <sys/types.h>

/* Latency histogram bounds (microseconds); one more bucket for +Inf. */
#define STATS_BUCKETS 10
extern const uint64_t stats_bucket_us[STATS_BUCKETS];

#define WORKER_CLASSES             7
#define WORKER_CLASS_CLIENT_CLOSED 6

/* Counters of one worker; a dead worker's are folded into the master's
 * "retired" copy, so the sums never go backwards. */
typedef struct worker_stats {
    uint64_t by_class[WORKER_CLASSES]; /* [1]..[5]: 1xx..5xx responses; [0]: none sent;
                                          [6]: the client left first (a logged 499) */
    uint64_t bytes_in, bytes_out;
    uint64_t latency_sum_us;
    uint64_t latency[STATS_BUCKETS + 1];
    uint64_t h2_streams, h2_resets, h2_goaways; /* HTTP/2: streams begun, RST_STREAMs
                                                   either way, GOAWAYs sent */
    uint64_t tls[3];     /* TLS handshakes: full, resumed, failed (SERVER_TLS_*) */
    uint64_t accept[2];  /* accept balancing: step-asides, kicks taken (SERVER_ACCEPT_*) */
    uint64_t conns_open; /* a gauge: not folded */
} worker_stats;

/* Why the master restarted a worker (spindle_worker_restarts_total). */
enum {
    RESTART_CRASHED,  /* killed by a signal (a segfault, an abort, SIGKILL, the OOM killer) */
    RESTART_EXITED,   /* a non-zero exit status */
    RESTART_RECYCLED, /* stopped itself after --max-requests (exit 0) */
    RESTART_WATCHDOG, /* killed by the master: its loop stalled past --worker-timeout */
    RESTART_MEMORY,   /* stopped itself past --max-worker-memory (exit 0) */
    RESTART_CAUSES
};
extern const char *const worker_restart_names[RESTART_CAUSES];

/* What a slot's ended_by says, besides the exit status, before the master
 * reaps it: set by the worker (memory) or by the master (watchdog). */
#define WORKER_ENDED_MEMORY   1
#define WORKER_ENDED_WATCHDOG 2

struct access_buffer;

typedef struct worker_slot {
    volatile pid_t pid;
    volatile int64_t heartbeat_ms; /* CLOCK_MONOTONIC ms, by the worker */
    volatile uint64_t requests;
    volatile int busy;         /* inside a handler */
    char request[120];         /* "METHOD target" of the current or last request */
    uint64_t max_rss;          /* --max-worker-memory in bytes, set at the fork; 0 never */
    volatile int ended_by;     /* WORKER_ENDED_*, or 0 */
    struct access_buffer *log; /* the master's shared access-log buffer (slot_log.c), or NULL */
    worker_stats st;
} worker_slot;

/* Every worker's slot, as the --stats page reads them: in the master's
 * shared memory, or one slot of this process's own with --workers 0. */
typedef struct worker_board {
    worker_slot *slots;
    int nslots;
    volatile int *slots_used;    /* slots ever used (<= nslots), or NULL: all */
    worker_stats *retired;       /* dead workers' counters, folded by the master */
    volatile uint64_t *restarts; /* [RESTART_CAUSES], counted by the master, or NULL */
    worker_slot own;             /* --workers 0 */
    int log_query;               /* --log-query: slots keep the target's query (tokens in URLs) */
} worker_board;

/* How many of the board's slots are worth scanning. */
static inline int worker_board_used(const worker_board *b) {
    return b->slots_used ? *b->slots_used : b->nslots;
}

/* The cause of a restart: the reaped worker's wait status and its slot. */
int worker_restart_cause(int status, const worker_slot *w);

/* Adds a retired worker's counters into total. */
void worker_stats_fold(worker_stats *total, const worker_stats *w);

/* Records the request about to run (truncated), for the watchdog's and
 * the reaper's log lines: its path only unless keep_query (--log-query), as
 * a query often carries a token. Cheap: a few dozen bytes. */
void worker_slot_begin(worker_slot *w, const char *method, size_t mlen, const char *target,
                       size_t tlen, int keep_query);
static inline void worker_slot_end(worker_slot *w) {
    w->busy = 0;
    w->requests++;
}

#endif
