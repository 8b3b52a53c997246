/* buf_pool.c — read-buffer pool (see buf_pool.h): buffers carved from
 * page-aligned slabs of anonymous memory, so a buffer's unused pages can
 * go back to the kernel (buf_pool_shed) with no allocator header beside
 * it; a free buffer past the high-water mark, or put back cold, keeps its
 * address and gives its pages back instead of being freed. The free list
 * is an array, not a link in each buffer, so a cold buffer has no page. */
#include "base/buf_pool.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define PAGE     4096 /* buffers start on a page */
#define PER_SLAB 32   /* buffers mapped at once */
#define WARM     32   /* free buffers a cold put leaves their pages */

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

/* Room in the free list for every buffer, n more to come: a put then
 * never fails. 0, or -1 (no memory). */
static int reserve(buf_pool *p, size_t n) {
    size_t want = p->out + p->nfree + n;
    if (want <= p->cap)
        return 0;
    size_t cap = p->cap ? p->cap * 2 : 64;
    while (cap < want)
        cap *= 2;
    char **v = realloc(p->free, cap * sizeof *v);
    if (!v)
        return -1;
    p->free = v;
    p->cap = cap;
    return 0;
}

/* Maps PER_SLAB more buffers onto the free list. 0, or -1 (no memory). */
static int grow(buf_pool *p) {
#ifdef BUF_POOL_MALLOC
    char *one = reserve(p, 1) < 0 ? NULL : aligned_alloc(PAGE, stride(p));
    if (!one)
        return -1;
    p->free[p->nfree++] = one + p->front;
    return 0;
#endif
    if (reserve(p, PER_SLAB) < 0)
        return -1;
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
    for (size_t i = PER_SLAB; i-- > 0;) /* the first buffer ends up first */
        p->free[p->nfree++] = (char *)mem + i * stride(p) + p->front;
    return 0;
}

char *buf_pool_get(buf_pool *p) {
    if (!p->nfree && grow(p) < 0)
        return NULL;
    p->out++;
    char *b = p->free[--p->nfree];
    if (p->ncold > p->nfree)
        p->ncold = p->nfree; /* that was a cold one: no warm one was left */
    return b;
}

/* A buffer whose pages went back: below the warm ones, so a get hands
 * out those first and their pages serve again. */
static void put_cold_one(buf_pool *p, char *b) {
    memmove(&p->free[p->ncold + 1], &p->free[p->ncold], (p->nfree - p->ncold) * sizeof *p->free);
    p->free[p->ncold++] = b;
    p->nfree++;
}

/* Back on the free list: warm while the pool has fewer than keep_warm
 * free, else its pages go back now (under ASan, freed past the mark). */
static void put(buf_pool *p, char *b, size_t keep_warm) {
    p->out--;
    if (p->nfree < keep_warm) {
        p->free[p->nfree++] = b;
        return;
    }
#ifdef BUF_POOL_MALLOC
    if (p->nfree >= p->max_free)
        free(b - p->front);
    else
        p->free[p->nfree++] = b; /* no madvise on malloc'ed memory */
    return;
#endif
    give_pages(b - p->front, b - p->front + stride(p));
    p->released++;
    put_cold_one(p, b);
}

void buf_pool_put(buf_pool *p, char *b) {
    put(p, b, p->max_free);
}

void buf_pool_put_cold(buf_pool *p, char *b) {
    put(p, b, p->max_free < WARM ? p->max_free : WARM);
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
    while (p->nfree)
        free(p->free[--p->nfree] - p->front);
#endif
    while (p->slabs) {
        slab *s = p->slabs;
        p->slabs = s->next;
        munmap(s->mem, s->len);
        free(s);
    }
    free(p->free);
    p->free = NULL;
    p->nfree = p->ncold = p->cap = 0;
}
