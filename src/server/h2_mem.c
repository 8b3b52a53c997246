/* h2_mem.c — nghttp2's allocations for one HTTP/2 connection. Its large
 * blocks (the frame buffer a session keeps for life, 16 KB and more, where
 * every DATA frame is copied) come page-aligned and are remembered, so a
 * quiet connection can hand their pages back to the kernel while keeping
 * the blocks: idle, a session's state is what nghttp2 must hold (HPACK
 * tables, settings, windows), not the last response's bytes. */
#include "server/h2.h"

#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static size_t page_size(void) {
    static size_t page;
    if (!page) {
        long p = sysconf(_SC_PAGESIZE);
        page = p > 0 ? (size_t)p : 4096;
    }
    return page;
}

static int slot_of(const h2_mem *m, const void *p) {
    for (int i = 0; i < H2_MEM_SLOTS; i++)
        if (m->big[i] == p)
            return i;
    return -1;
}

/* The slot of p when it may be a large block, which is page-aligned (so
 * 4096-aligned whatever the page size): most of nghttp2's frees are small
 * blocks, turned away by that test before the slots are looked at. */
static int big_slot(const h2_mem *m, const void *p) {
    return p && ((uintptr_t)p & 4095) == 0 ? slot_of(m, p) : -1;
}

/* A large block in a free slot, page-aligned; past the slots an ordinary
 * block, kept whole (correct, only not given back). */
static void *big_alloc(h2_mem *m, size_t n) {
    int i = slot_of(m, NULL);
    if (i < 0)
        return malloc(n);
    void *p;
    if (posix_memalign(&p, page_size(), n) != 0)
        return NULL;
    m->big[i] = p;
    m->big_len[i] = n;
    return p;
}

static void *mem_malloc(size_t n, void *ud) {
    return n >= H2_MEM_BIG ? big_alloc(ud, n) : malloc(n);
}

static void mem_free(void *p, void *ud) {
    h2_mem *m = ud;
    int i = big_slot(m, p);
    if (i >= 0)
        m->big[i] = NULL;
    free(p);
}

static void *mem_calloc(size_t count, size_t size, void *ud) {
    if (size && count > SIZE_MAX / size)
        return NULL;
    size_t n = count * size;
    if (n < H2_MEM_BIG)
        return calloc(count, size);
    void *p = big_alloc(ud, n);
    if (p)
        memset(p, 0, n);
    return p;
}

/* nghttp2 grows its buffers with realloc (from NULL at first): a block
 * that is or becomes large moves, so the slots always name whole blocks. */
static void *mem_realloc(void *p, size_t n, void *ud) {
    h2_mem *m = ud;
    int i = big_slot(m, p);
    if (i < 0 && n < H2_MEM_BIG)
        return realloc(p, n);
    if (!p)
        return mem_malloc(n, m);
    size_t had = i >= 0 ? m->big_len[i] : malloc_usable_size(p);
    void *q = mem_malloc(n, m);
    if (!q)
        return NULL; /* p stays, as realloc leaves it */
    memcpy(q, p, had < n ? had : n);
    mem_free(p, m);
    return q;
}

nghttp2_mem h2_mem_table(h2_mem *m) {
    return (nghttp2_mem){m, mem_malloc, mem_free, mem_calloc, mem_realloc};
}

/* Each block's whole pages only: a block's last, partial page also holds
 * the heap's header of the next one. The pages come back as zeroes, never
 * read before nghttp2 writes them. */
void h2_mem_quiet(h2_mem *m) {
    size_t page = page_size();
    for (int i = 0; i < H2_MEM_SLOTS; i++) {
        size_t whole = m->big_len[i] & ~(page - 1);
        if (m->big[i] && whole)
            (void)madvise(m->big[i], whole, MADV_DONTNEED);
    }
}
