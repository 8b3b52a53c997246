/* buf_pool.c — read-buffer pool (see buf_pool.h). */
#include "base/buf_pool.h"

#include <malloc.h>
#include <stdlib.h>

void buf_pool_init(buf_pool *p, size_t size, size_t max_free) {
    *p = (buf_pool){.size = size < sizeof(void *) ? sizeof(void *) : size, .max_free = max_free};
}

char *buf_pool_get(buf_pool *p) {
    char *b = p->free_list;
    if (b) {
        p->free_list = *(void **)b;
        p->nfree--;
    } else {
        b = malloc(p->size);
        if (!b)
            return NULL;
    }
    p->out++;
    return b;
}

void buf_pool_put(buf_pool *p, char *b) {
    p->out--;
    if (p->nfree >= p->max_free) {
        free(b);
        p->released++;
        return;
    }
    *(void **)b = p->free_list;
    p->free_list = b;
    p->nfree++;
}

void buf_pool_trim(buf_pool *p, int64_t now) {
    if (!p->released || now - p->last_trim < 1000)
        return;
    p->last_trim = now;
    p->released = 0;
    malloc_trim(0);
}

void buf_pool_destroy(buf_pool *p) {
    while (p->free_list) {
        void *next = *(void **)p->free_list;
        free(p->free_list);
        p->free_list = next;
    }
    p->nfree = 0;
}
