/* coro_switch.c — what a coroutine switch and a pooled coroutine cost:
 * ns per switch (a resume+yield round trip is two switches) and ns per
 * create+run+finish with the stack taken from the pool. Run it pinned:
 *   taskset -c 0 build/bench/coro_switch [round_trips] */
#include "coro/coro.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
        perror("clock_gettime");
        exit(1);
    }
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void yield_forever(void *arg) {
    coro *self = coro_current();
    volatile long *count = arg;
    for (;;) {
        ++*count;
        coro_yield(self);
    }
}

static void nothing(void *arg) {
    ++*(volatile long *)arg;
}

int main(int argc, char **argv) {
    long trips = argc > 1 ? atol(argv[1]) : 10000000;
    if (trips <= 0) {
        fprintf(stderr, "usage: %s [round_trips > 0]\n", argv[0]);
        return 2;
    }
    coro_pool *p = coro_pool_create(NULL);
    if (!p) {
        perror("coro_pool_create");
        return 1;
    }
    volatile long count = 0;
    coro *c = coro_create(p, yield_forever, (void *)&count);
    if (!c) {
        perror("coro_create");
        return 1;
    }
    for (long i = 0; i < trips / 10; i++) /* warm up */
        coro_resume(c);
    double t0 = now_ns();
    for (long i = 0; i < trips; i++)
        coro_resume(c);
    double t1 = now_ns();
    coro_destroy(c);
    printf("switch:        %.2f ns  (%ld resume+yield round trips, %.2f ns each)\n",
           (t1 - t0) / ((double)trips * 2), trips, (t1 - t0) / (double)trips);

    long creates = trips / 10;
    t0 = now_ns();
    for (long i = 0; i < creates; i++) {
        coro *k = coro_create(p, nothing, (void *)&count);
        if (!k) {
            perror("coro_create");
            return 1;
        }
        coro_resume(k);
    }
    t1 = now_ns();
    printf("create+finish: %.2f ns  (%ld coroutines, stack from the pool, 2 switches each)\n",
           (t1 - t0) / (double)creates, creates);
    coro_pool_destroy(p);
    return 0;
}
