/* worker_slot.h — what a worker tells its master through shared memory:
 * a heartbeat the loop refreshes every second (a stale one means a handler
 * blocked the loop), its request count, and the request line it is serving
 * (for the master's log when the worker dies or hangs). */
#ifndef SPINDLE_WORKER_SLOT_H
#define SPINDLE_WORKER_SLOT_H

#include <stdint.h>
#include <sys/types.h>

typedef struct worker_slot {
    volatile pid_t pid;
    volatile int64_t heartbeat_ms; /* CLOCK_MONOTONIC ms, by the worker */
    volatile uint64_t requests;
    volatile int busy; /* inside a handler */
    char request[120]; /* "METHOD target" of the current or last request */
} worker_slot;

/* Records the request about to run (truncated). Cheap: a few dozen bytes. */
void worker_slot_begin(worker_slot *w, const char *method, size_t mlen, const char *target,
                       size_t tlen);
static inline void worker_slot_end(worker_slot *w) {
    w->busy = 0;
    w->requests++;
}

#endif
