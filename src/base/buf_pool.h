/* buf_pool.h — the per-worker pool of connection read buffers. A buffer is
 * attached to a connection only while a request is in flight; idle
 * connections hold none. Buffers are page-aligned slices of mapped slabs;
 * free buffers above a high-water mark, and those a long wait puts back
 * (buf_pool_put_cold), give their pages back to the kernel at once, so
 * memory goes back after a burst. */
#ifndef SPINDLE_BUF_POOL_H
#define SPINDLE_BUF_POOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct buf_pool {
    char **free; /* the free buffers, the next one to hand out last */
    size_t nfree, cap;
    size_t ncold; /* free[0..ncold): pages given back (handed out last) */
    struct slab *slabs;
    size_t max_free, size;
    size_t front;    /* the bytes before each buffer its holder keeps state in */
    size_t out;      /* buffers in use */
    size_t released; /* freed since the last trim */
    int64_t last_trim;
} buf_pool;

/* Buffers of size bytes, each just after a front of at least front bytes
 * (aligned for any object; 0: none) that its holder keeps other state in,
 * in the buffer's first page: a connection's buffer carries its request's
 * header fields there (http_conn.c), beside the head's first bytes. */
void buf_pool_init(buf_pool *p, size_t size, size_t front, size_t max_free);
/* A buffer of p->size bytes (after its front), or NULL (ENOMEM). */
char *buf_pool_get(buf_pool *p);
void buf_pool_put(buf_pool *p, char *b);
/* Puts back the buffer of a connection that leaves for long (a parked
 * WebSocket or long poll): unless the pool has few free ones, its pages go
 * back to the kernel now (one madvise), so a burst of parked connections
 * leaves no resident buffers behind; handed out after the warm ones. */
void buf_pool_put_cold(buf_pool *p, char *b);
/* Gives the kernel back the whole pages of b (in use) past its first used
 * bytes, keeping b where it is, its bytes and every pointer into them
 * valid: the pages come back zeroed when next written. For a connection
 * that waits long (a long poll, a WebSocket): one madvise. The front stays. */
void buf_pool_shed(const buf_pool *p, char *b, size_t used);
/* Kept for the callers' rhythm (once a second): the pages of buffers past
 * the mark already went back in buf_pool_put. */
void buf_pool_trim(buf_pool *p, int64_t now);
void buf_pool_destroy(buf_pool *p);

#endif
