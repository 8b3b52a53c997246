/* bus_shm.h — the memory bus's ring in shared memory, for a server whose
 * workers are forked: made by sp_bus_configure before the fork, so every
 * worker maps the same pages, and read by bus_shm.c's backend. */
#ifndef SPINDLE_BUS_SHM_H
#define SPINDLE_BUS_SHM_H

#include "server/bus/bus.h"

#include <pthread.h>

#define SHM_SLOTS 256 /* workers that can follow the ring at once */
#define SHM_ALIGN 64  /* entries start and end on this: the ring's end always holds a header */

/* A worker following the ring: its pid names its wake socket; armed is
 * set while its reader sleeps, so a publisher sends one wake-up, not one
 * per message. */
typedef struct shm_slot {
    pid_t pid;
    uint32_t armed;
} shm_slot;

/* The ring: positions count bytes ever written (an entry at position p
 * lies at p % size); [tail, head) holds whole entries, oldest first. head,
 * tail and last change under mu; head and tail are also read without it
 * (atomically): a reader copies an entry, then checks that tail did not
 * pass it meanwhile. */
typedef struct shm_ring {
    pthread_mutex_t mu; /* process-shared and robust: a worker killed holding it is survived */
    uint64_t head, tail;
    bus_id last; /* the newest id given (0-0: none) */
    uint64_t size;
    char token[24]; /* names the wake sockets of this server's workers */
    shm_slot slots[SHM_SLOTS];
    uint32_t nslots; /* past the highest slot ever claimed: a publish wakes only these */
    _Alignas(SHM_ALIGN) char data[];
} shm_ring;

/* One message in the ring. A topic length of 0 is padding up to the end. */
typedef struct shm_entry {
    uint64_t pos; /* its own position: a stale or torn header does not match */
    bus_id id;
    uint32_t total; /* the entry's bytes, a multiple of SHM_ALIGN */
    uint32_t len;   /* data bytes */
    uint16_t tlen;  /* topic bytes (topic, then data, follow) */
} shm_entry;

/* Maps a ring of `size` data bytes (a multiple of SHM_ALIGN) shared with
 * the processes forked later. NULL: no memory. */
shm_ring *shm_ring_map(size_t size);
void shm_ring_unmap(shm_ring *r);
static inline size_t shm_ring_bytes(const shm_ring *r) {
    return sizeof *r + r->size;
}

#endif
