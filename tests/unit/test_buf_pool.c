/* test_buf_pool.c — unit tests for the read-buffer pool: buffers come back
 * in LIFO order with their bytes (warm), a cold put gives a buffer's pages
 * back (mincore says none is resident: the free list keeps no link in it)
 * once the pool has enough warm ones, and gets hand out the warm ones
 * first; past the high-water mark a put gives the pages back too; the
 * front before each buffer is aligned and in the buffer's first page. */
#include "base/buf_pool.h"
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Under ASan each buffer is a malloc of its own, made one at a time and
 * freed past the mark (buf_pool.c): the counts and pages below are the
 * slabs'. */
#if defined(__SANITIZE_ADDRESS__)
#define SLABS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLABS 0
#endif
#endif
#ifndef SLABS
#define SLABS 1
#endif

#define SIZE  16384
#define FRONT 3200

/* How many pages of the buffer b (its front included) are resident. */
__attribute__((unused)) static size_t resident(char *b) {
#if !SLABS
    (void)b;
    return 0; /* not checked */
#else
    long page = sysconf(_SC_PAGESIZE);
    char *lo = (char *)((uintptr_t)(b - FRONT) & ~(uintptr_t)(page - 1));
    size_t n = (size_t)((b + SIZE - lo + page - 1) / page);
    unsigned char v[16];
    CHECK(n <= sizeof v);
    CHECK(mincore(lo, n * (size_t)page, v) == 0);
    size_t in = 0;
    for (size_t i = 0; i < n; i++)
        in += v[i] & 1;
    return in;
#endif
}

static void touch(char *b) {
    memset(b - FRONT, 0x5a, FRONT);
    memset(b, 0xa5, SIZE);
}

/* n buffers from the pool, each written through, front included. */
static void take_touched(buf_pool *p, char **b, int n) {
    for (int i = 0; i < n; i++) {
        CHECK((b[i] = buf_pool_get(p)) != NULL);
        touch(b[i]);
    }
}

TEST(buffers_are_reused_last_in_first_out_with_their_front) {
    buf_pool p;
    buf_pool_init(&p, SIZE, FRONT, 1024);
    char *a = buf_pool_get(&p), *b = buf_pool_get(&p);
    CHECK(a && b && a != b);
    CHECK(((uintptr_t)(a - FRONT) & 4095) == 0); /* the front (a multiple of 64) starts a page */
    CHECK(p.out == 2);
    a[0] = 'x';
    buf_pool_put(&p, a);
    CHECK(p.out == 1);
    char *again = buf_pool_get(&p);
    CHECK(again == a && again[0] == 'x'); /* warm: the same bytes */
    buf_pool_put(&p, again);
    buf_pool_put(&p, b);
    buf_pool_destroy(&p);
}

TEST(a_cold_put_gives_the_pages_back_once_enough_are_warm) {
    buf_pool p;
    buf_pool_init(&p, SIZE, FRONT, 1024);
    char *b[40];
    take_touched(&p, b, 40);
    CHECK(p.out == 40 && (!SLABS || p.nfree == 24)); /* two slabs of 32 */
    /* Few free: a cold put keeps the pages, the next reads will need them. */
    buf_pool_put_cold(&p, b[0]);
    for (int i = 1; i < 8; i++)
        buf_pool_put(&p, b[i]);
    CHECK(!SLABS || (p.nfree == 32 && p.ncold == 0 && resident(b[0]) >= 4));
    /* Now enough are free: a cold put's pages go, front included. */
    buf_pool_put_cold(&p, b[32]);
    buf_pool_put_cold(&p, b[33]);
    CHECK(p.out == 30 && (!SLABS || p.nfree == 34));
#if SLABS
    CHECK(resident(b[32]) == 0 && resident(b[33]) == 0);
    CHECK(p.ncold == 2);
    /* Gets hand out every warm one before a cold one. */
    char *got[34];
    for (int i = 0; i < 32; i++) {
        got[i] = buf_pool_get(&p);
        CHECK(got[i] != b[32] && got[i] != b[33]);
    }
    CHECK(got[0] == b[7]); /* the last warm put first */
    got[32] = buf_pool_get(&p);
    got[33] = buf_pool_get(&p);
    CHECK((got[32] == b[32] && got[33] == b[33]) || (got[32] == b[33] && got[33] == b[32]));
    CHECK(p.ncold == 0 && p.nfree == 0);
    /* A cold buffer works as any other: zero pages, written again. */
    got[32][0] = 'y';
    CHECK(got[32][0] == 'y' && got[32][1] == 0 && got[32][-1] == 0);
    for (int i = 0; i < 34; i++)
        buf_pool_put(&p, got[i]);
#else
    for (int i = 0; i < 34; i++)
        buf_pool_put(&p, buf_pool_get(&p));
#endif
    for (int i = 8; i < 32; i++)
        buf_pool_put(&p, b[i]);
    for (int i = 34; i < 40; i++)
        buf_pool_put(&p, b[i]);
    CHECK(p.out == 0);
    buf_pool_destroy(&p);
}

TEST(past_the_high_water_mark_a_put_gives_the_pages_back) {
    buf_pool p;
    buf_pool_init(&p, SIZE, FRONT, 4);
    char *b[32]; /* one slab: none free */
    take_touched(&p, b, 32);
    CHECK(p.nfree == 0);
    for (int i = 0; i < 6; i++)
        buf_pool_put(&p, b[i]);
#if SLABS
    CHECK(p.nfree == 6 && p.ncold == 2);
    CHECK(resident(b[4]) == 0 && resident(b[5]) == 0);
    CHECK(resident(b[3]) >= 4);
    CHECK(buf_pool_get(&p) == b[3]); /* warm first */
    buf_pool_put(&p, b[3]);
#endif
    for (int i = 6; i < 32; i++)
        buf_pool_put(&p, b[i]);
    CHECK(p.out == 0);
    buf_pool_destroy(&p);
}

TEST(many_buffers_across_slabs_all_distinct) {
    buf_pool p;
    buf_pool_init(&p, SIZE, FRONT, 1024);
    enum { N = 200 };
    char *b[N];
    for (int i = 0; i < N; i++) {
        CHECK((b[i] = buf_pool_get(&p)) != NULL);
        b[i][0] = (char)i;
        b[i][SIZE - 1] = (char)i;
    }
    for (int i = 0; i < N; i++)
        CHECK(b[i][0] == (char)i && b[i][SIZE - 1] == (char)i);
    for (int i = 0; i < N; i++)
        (i % 2 ? buf_pool_put_cold : buf_pool_put)(&p, b[i]);
    CHECK(p.out == 0 && (!SLABS || p.nfree == 224)); /* seven slabs */
    for (int i = 0; i < N; i++)
        CHECK(buf_pool_get(&p) != NULL);
    CHECK(p.out == N);
    buf_pool_destroy(&p);
}
