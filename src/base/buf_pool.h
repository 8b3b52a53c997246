/* buf_pool.h — the per-worker pool of connection read buffers. A buffer is
 * attached to a connection only while a request is in flight; idle
 * connections hold none. Free buffers above a high-water mark are freed,
 * and the heap is trimmed at most once a second so memory goes back to the
 * kernel after a burst. */
#ifndef SPINDLE_BUF_POOL_H
#define SPINDLE_BUF_POOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct buf_pool {
    void *free_list; /* each free buffer's first bytes link to the next */
    size_t nfree, max_free, size;
    size_t out;      /* buffers in use */
    size_t released; /* freed since the last trim */
    int64_t last_trim;
} buf_pool;

void buf_pool_init(buf_pool *p, size_t size, size_t max_free);
/* A buffer of p->size bytes, or NULL (ENOMEM). */
char *buf_pool_get(buf_pool *p);
void buf_pool_put(buf_pool *p, char *b);
/* Returns freed memory to the kernel if buffers were freed since the last
 * call and a second has passed (now: loop ms). */
void buf_pool_trim(buf_pool *p, int64_t now);
void buf_pool_destroy(buf_pool *p);

#endif
