/* buf_pool.c — read-buffer pool (see buf_pool.h): buffers carved from
 * page-aligned slabs of anonymous memory, so a buffer's unused pages can
 * go back to the kernel (buf_pool_shed) with no allocator header beside
 * it; a free buffer past the high-water mark keeps its address and gives
 * its pages back instead of being freed. */
#include "base/buf_pool.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define PAGE     4096 /* buffers start on a page */
#define PER_SLAB 32   /* buffers mapped at once */

/* Under AddressSanitizer each buffer is an allocation of its own, freed
 * past the mark: its redzones catch a read past a buffer's end, which a
 * slab would hide. */
#if defined(__SANITIZE_ADDRESS__)
#define BUF_POOL_MALLOC 1 /* gcc */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BUF_POOL_MALLOC 1 /* clang */
#endif
#endif

typedef struct slab {
    struct slab *next;
    void *mem;
    size_t len;
} slab;

#define FRONT_ALIGN 64

static size_t stride(const buf_pool *p) {
    return (p->front + p->size + PAGE - 1) / PAGE * PAGE;
}

void buf_pool_init(buf_pool *p, size_t size, size_t front, size_t max_free) {
    *p = (buf_pool){.size = size < sizeof(void *) ? sizeof(void *) : size,
                    .front = (front + FRONT_ALIGN - 1) / FRONT_ALIGN * FRONT_ALIGN,
                    .max_free = max_free};
}

/* The whole pages of [from, to) go back to the kernel. */
static void give_pages(const char *from, const char *to) {
    uintptr_t lo = ((uintptr_t)from + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
    uintptr_t hi = (uintptr_t)to & ~(uintptr_t)(PAGE - 1);
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_DONTNEED); /* best effort */
}

/* Maps PER_SLAB more buffers onto the free list. 0, or -1 (no memory). */
static int grow(buf_pool *p) {
#ifdef BUF_POOL_MALLOC
    char *one = aligned_alloc(PAGE, stride(p));
    if (!one)
        return -1;
    one += p->front;
    *(void **)one = p->free_list;
    p->free_list = one;
    p->nfree++;
    return 0;
#endif
    slab *s = malloc(sizeof *s);
    size_t len = stride(p) * PER_SLAB;
    void *mem = s ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                  : MAP_FAILED;
    if (mem == MAP_FAILED) {
        free(s);
        return -1;
    }
    *s = (slab){p->slabs, mem, len};
    p->slabs = s;
    for (size_t i = PER_SLAB; i-- > 0;) { /* the first buffer ends up first */
        char *b = (char *)mem + i * stride(p) + p->front;
        *(void **)b = p->free_list;
        p->free_list = b;
        p->nfree++;
    }
    return 0;
}

char *buf_pool_get(buf_pool *p) {
    if (!p->free_list && grow(p) < 0)
        return NULL;
    char *b = p->free_list;
    p->free_list = *(void **)b;
    p->nfree--;
    p->out++;
    return b;
}

void buf_pool_put(buf_pool *p, char *b) {
    p->out--;
#ifdef BUF_POOL_MALLOC
    if (p->nfree >= p->max_free) {
        free(b - p->front);
        return;
    }
#endif
    if (p->nfree >= p->max_free) {
        /* Past the high-water mark: the pages go back now, the link in
         * the first word makes the first one again when it is reused. */
        give_pages(b - p->front, b - p->front + stride(p));
        p->released++;
    }
    *(void **)b = p->free_list;
    p->free_list = b;
    p->nfree++;
}

void buf_pool_shed(const buf_pool *p, char *b, size_t used) {
    give_pages(b + used, b + p->size);
}

void buf_pool_trim(buf_pool *p, int64_t now) {
    /* The pages of buffers past the mark went back in buf_pool_put. */
    if (!p->released || now - p->last_trim < 1000)
        return;
    p->last_trim = now;
    p->released = 0;
}

void buf_pool_destroy(buf_pool *p) {
#ifdef BUF_POOL_MALLOC
    while (p->free_list) {
        void *next = *(void **)p->free_list;
        free((char *)p->free_list - p->front);
        p->free_list = next;
    }
#endif
    while (p->slabs) {
        slab *s = p->slabs;
        p->slabs = s->next;
        munmap(s->mem, s->len);
        free(s);
    }
    p->free_list = NULL;
    p->nfree = 0;
}
