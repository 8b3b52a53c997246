/* test_coro_trim.c — unit tests for coro_trim_stack: the pages a suspended
 * coroutine touched below where it now waits are given back (mincore says
 * they are no longer resident), what it holds above is intact, it runs on
 * (and may go deep again) afterwards, and a shallow or guard-less stack is
 * handled too. */
#include "coro/coro.h"
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct deep {
    coro *self;
    uintptr_t deepest; /* an address in the deep frame */
    uintptr_t parked;  /* an address in the frame that waits */
    long sum_before, sum_after;
    int rounds;
} deep;

/* Touches about `depth` bytes of stack below the caller, returns a sum of
 * what it wrote so the compiler keeps the array. */
__attribute__((noinline)) static long go_deep(deep *d, size_t depth) {
    volatile char big[40 * 1024];
    size_t n = depth < sizeof big ? depth : sizeof big;
    for (size_t i = 0; i < n; i += 512)
        big[i] = (char)(i / 512);
    d->deepest = (uintptr_t)&big[0];
    long sum = 0;
    for (size_t i = 0; i < n; i += 512)
        sum += big[i];
    return sum;
}

static void deep_then_wait(void *arg) {
    deep *d = arg;
    volatile long keep[64]; /* lives above the trimmed part: must survive */
    for (int i = 0; i < 64; i++)
        keep[i] = i * 3 + 1;
    d->parked = (uintptr_t)&keep[0];
    for (int r = 0; r < d->rounds; r++) {
        d->sum_before = go_deep(d, 40 * 1024);
        coro_yield(d->self); /* waits here: everything go_deep touched is dead */
        long s = 0;
        for (int i = 0; i < 64; i++)
            s += keep[i];
        d->sum_after = s;
    }
}

/* Resident pages among [lo, hi). */
static size_t resident(uintptr_t lo, uintptr_t hi) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    lo &= ~(uintptr_t)(page - 1);
    size_t n = (hi - lo + page - 1) / page;
    unsigned char *v = calloc(n, 1);
    CHECK(v != NULL);
    CHECK_EQ(mincore((void *)lo, hi - lo, v), 0);
    size_t r = 0;
    for (size_t i = 0; i < n; i++)
        r += v[i] & 1;
    free(v);
    return r;
}

static void trims_below_the_waiting_frame(int no_guard) {
    coro_pool_options o = {.stack_size = 64 * 1024, .no_guard = no_guard};
    coro_pool *p = coro_pool_create(&o);
    CHECK(p != NULL);
    deep d = {.rounds = 2};
    d.self = coro_create(p, deep_then_wait, &d);
    CHECK(d.self != NULL);
    CHECK_EQ(coro_resume(d.self), 1);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t below_hi = (d.parked - 2048) & ~(uintptr_t)(page - 1); /* under the waiting frames */
    CHECK(below_hi > d.deepest + 8 * page);
    size_t before = resident(d.deepest, below_hi);
    CHECK(before >= 8); /* go_deep wrote one byte every 512: every page is in */
    long released = coro_trim_stack(d.self);
    if (strcmp(coro_switch_name, "ucontext") == 0) {
        CHECK_EQ(released, 0); /* documented: no saved stack pointer to read */
        while (coro_resume(d.self))
            ;
        coro_pool_destroy(p);
        return;
    }
    CHECK(released >= (long)(8 * page));
    CHECK_EQ(resident(d.deepest, below_hi), 0);
    coro_pool_stats s;
    coro_pool_get_stats(p, &s);
    CHECK_EQ(s.trims, 1);
    /* It runs on with its frame intact, goes deep again (the pages fault
     * back in, zeroed, and are written) and waits once more. */
    CHECK_EQ(coro_resume(d.self), 1);
    CHECK_EQ(d.sum_after, 64 * 63 / 2 * 3 + 64);
    CHECK_EQ(d.sum_before, 80 * 79 / 2); /* go_deep's bytes 0..79, written again */
    CHECK(resident(d.deepest, below_hi) >= 8);
    CHECK(coro_trim_stack(d.self) > 0);
    CHECK_EQ(coro_resume(d.self), 0);
    CHECK_EQ(d.sum_after, 64 * 63 / 2 * 3 + 64);
    coro_pool_destroy(p);
}

TEST(trim_gives_back_pages_below_a_waiting_coroutine) {
    trims_below_the_waiting_frame(0);
}

TEST(trim_works_without_guard_pages) {
    trims_below_the_waiting_frame(1);
}

static void shallow_wait(void *arg) {
    coro_yield(*(coro **)arg);
}

TEST(trim_of_a_shallow_coroutine_releases_little) {
    coro_pool *p = coro_pool_create(&(coro_pool_options){.stack_size = 16 * 1024});
    CHECK(p != NULL);
    coro *c = NULL;
    c = coro_create(p, shallow_wait, &c);
    CHECK(c != NULL);
    CHECK_EQ(coro_resume(c), 1);
    long r = coro_trim_stack(c);
    CHECK(r >= 0);
    CHECK(r < 16 * 1024); /* never the page it waits in */
    CHECK_EQ(coro_resume(c), 0);
    coro_pool_destroy(p);
}
