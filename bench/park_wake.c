/* park_wake.c — the cost of one park/wake round trip through the loop: two
 * tasks hand a token back and forth (park, wake, ready queue, switch), and
 * the same over a socketpair (adds read/write and epoll). Run pinned:
 *   taskset -c 0 build/bench/park_wake [rounds] */
#include "loop/loop.h"
#include "net/net.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

typedef struct player {
    task *self;
    struct player *other;
    long rounds;
} player;

static void play(void *arg) {
    player *p = arg;
    loop *l = loop_current();
    p->self = loop_task(l);
    for (long i = 0; i < p->rounds; i++) {
        if (p->other->self)
            loop_wake(l, p->other->self, 0);
        loop_park(l, LOOP_NO_DEADLINE, NULL);
    }
    loop_wake(l, p->other->self, 0);
}

typedef struct pinger {
    loop_watch *mine;
    long rounds;
    int first;
} pinger;

static void ping(void *arg) {
    pinger *p = arg;
    loop *l = loop_current();
    char c = 'x';
    for (long i = 0; i < p->rounds; i++) {
        if (p->first || i > 0)
            if (net_write(l, p->mine, &c, 1, LOOP_NO_DEADLINE) != 1)
                abort();
        if (net_read(l, p->mine, &c, 1, LOOP_NO_DEADLINE) != 1)
            abort();
    }
    if (!p->first)
        net_write(l, p->mine, &c, 1, LOOP_NO_DEADLINE);
}

int main(int argc, char **argv) {
    long rounds = argc > 1 ? atol(argv[1]) : 2000000;
    sp_loop *l = sp_loop_new(NULL);
    if (!l)
        return 1;

    player a = {.rounds = rounds}, b = {.rounds = rounds};
    a.other = &b;
    b.other = &a;
    sp_spawn(play, &a);
    sp_spawn(play, &b);
    double t0 = now_ns();
    sp_loop_run(l);
    double per = (now_ns() - t0) / (2.0 * (double)rounds);
    printf("park/wake round trip through sp_loop_run (a non-blocking epoll_wait per pass): "
           "%.1f ns\n",
           per);

    /* The same hand-off driven by loop_run_pending: the park, the wake, the
     * ready queue and two switches, without the epoll_wait between passes. */
    player c = {.rounds = rounds}, d = {.rounds = rounds};
    c.other = &d;
    d.other = &c;
    sp_spawn(play, &c);
    sp_spawn(play, &d);
    t0 = now_ns();
    while (loop_has_ready(l))
        loop_run_pending(l);
    per = (now_ns() - t0) / (2.0 * (double)rounds);
    printf("park/wake round trip, ready queue only (no syscall): %.1f ns\n", per);

    long io_rounds = rounds / 10;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
        return 1;
    loop_watch w[2] = {{.fd = sv[0]}, {.fd = sv[1]}};
    loop_watch_add(l, &w[0], BACKEND_CONN);
    loop_watch_add(l, &w[1], BACKEND_CONN);
    pinger p1 = {&w[0], io_rounds, 1}, p2 = {&w[1], io_rounds, 0};
    sp_spawn(ping, &p1);
    sp_spawn(ping, &p2);
    t0 = now_ns();
    while (sp_poll(-1) > 0 || p1.rounds == 0) {
        loop_stats st;
        loop_get_stats(l, &st);
        if (st.tasks == 0)
            break;
    }
    per = (now_ns() - t0) / (2.0 * (double)io_rounds);
    printf("park/wake over a socketpair (write, epoll, read): %.1f ns\n", per);
    sp_loop_free(l);
    return 0;
}
