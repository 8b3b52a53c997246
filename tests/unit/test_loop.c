/* test_loop.c — the event loop: spawning, sleeping, timer order and
 * cancellation, parking on fds with and without deadlines, hang-up wake-up,
 * sp_run_blocking, sp_poll stepping, yielding, and stack reuse at scale. */
#include "loop/loop.h"
#include "net/net.h"
#include "unit.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#ifdef SP_HAVE_VALGRIND
#include <valgrind/valgrind.h>
#endif

static sp_loop *new_loop(void) {
    sp_loop *l = sp_loop_new(NULL);
    CHECK(l != NULL);
    return l;
}

static char order[64];
static size_t norder;
static void note(char c) {
    order[norder++] = c;
    order[norder] = '\0';
}

static void spawn_note(void *arg) {
    note(*(const char *)arg);
}

TEST(spawn_runs_in_fifo_order) {
    sp_loop *l = new_loop();
    CHECK_EQ(sp_spawn(spawn_note, "a"), 0);
    CHECK_EQ(sp_spawn(spawn_note, "b"), 0);
    CHECK_EQ(sp_spawn(spawn_note, "c"), 0);
    CHECK_EQ(norder, 0); /* nothing runs before the loop turns */
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_STR(order, "abc");
    sp_loop_free(l);
}

TEST(spawn_without_loop_fails) {
    CHECK_EQ(sp_spawn(spawn_note, "x"), -ENXIO);
    CHECK_EQ(sp_sleep(1), -EPERM);
    CHECK_EQ(sp_poll(0), -ENXIO);
}

typedef struct sleeper {
    int64_t ms;
    char name;
    int64_t slept;
} sleeper;

static void sleep_then_note(void *arg) {
    sleeper *s = arg;
    int64_t t0 = loop_clock_ms();
    CHECK_EQ(sp_sleep(s->ms), 0);
    s->slept = loop_clock_ms() - t0;
    note(s->name);
}

TEST(sleeps_end_in_deadline_order) {
    sp_loop *l = new_loop();
    sleeper s[3] = {{60, 'c', 0}, {20, 'a', 0}, {40, 'b', 0}};
    for (int i = 0; i < 3; i++)
        CHECK_EQ(sp_spawn(sleep_then_note, &s[i]), 0);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_STR(order, "abc");
    for (int i = 0; i < 3; i++)
        CHECK(s[i].slept >= s[i].ms);
    sp_loop_free(l);
}

static void timer_note(loop *l, loop_timer *t) {
    note(*(const char *)t->data);
}

TEST(timers_fire_in_order_and_cancel) {
    sp_loop *l = new_loop();
    loop_timer t[6] = {{0}};
    int64_t now = loop_now(l);
    /* Equal deadlines fire in arming order. */
    CHECK_EQ(loop_timer_arm(l, &t[0], now + 30, timer_note, "d"), 0);
    CHECK_EQ(loop_timer_arm(l, &t[1], now + 10, timer_note, "a"), 0);
    CHECK_EQ(loop_timer_arm(l, &t[2], now + 20, timer_note, "b"), 0);
    CHECK_EQ(loop_timer_arm(l, &t[3], now + 20, timer_note, "c"), 0);
    CHECK_EQ(loop_timer_arm(l, &t[4], now + 15, timer_note, "X"), 0);
    CHECK_EQ(loop_timer_arm(l, &t[5], now + 5, timer_note, "Y"), 0);
    loop_timer_cancel(l, &t[4]);
    loop_timer_cancel(l, &t[5]);
    loop_timer_cancel(l, &t[5]); /* twice is harmless */
    CHECK(!loop_timer_armed(&t[4]));
    /* Re-arming moves a timer. */
    CHECK_EQ(loop_timer_arm(l, &t[0], now + 40, timer_note, "e"), 0);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_STR(order, "abce");
    sp_loop_free(l);
}

static int64_t last_fired;
static int fired_ok = 1, fired;
static void check_monotonic(loop *l, loop_timer *t) {
    if (t->when < last_fired)
        fired_ok = 0;
    last_fired = t->when;
    fired++;
}

TEST(timer_heap_random_arm_cancel) {
    sp_loop *l = new_loop();
    enum { N = 5000 };
    static loop_timer t[N];
    int64_t now = loop_now(l);
    srand(7);
    int live = 0;
    for (int i = 0; i < N; i++)
        CHECK_EQ(loop_timer_arm(l, &t[i], now + rand() % 50, check_monotonic, NULL), 0);
    for (int i = 0; i < N; i += 3)
        loop_timer_cancel(l, &t[i]);
    for (int i = 0; i < N; i++)
        live += loop_timer_armed(&t[i]);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK(fired_ok);
    CHECK_EQ(fired, live);
    sp_loop_free(l);
}

/* ---- parking on fds --------------------------------------------------- */

typedef struct pair {
    loop_watch w[2];
    int result;
    ssize_t n;
    char buf[64];
    int64_t elapsed;
} pair;

static void make_pair(loop *l, pair *p) {
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    for (int i = 0; i < 2; i++) {
        p->w[i] = (loop_watch){.fd = sv[i]};
        CHECK_EQ(loop_watch_add(l, &p->w[i], BACKEND_CONN), 0);
    }
}

static void reader_task(void *arg) {
    pair *p = arg;
    loop *l = loop_current();
    int64_t t0 = loop_clock_ms();
    p->n = net_read(l, &p->w[0], p->buf, sizeof p->buf, loop_now(l) + 2000);
    p->elapsed = loop_clock_ms() - t0;
}

static void writer_task(void *arg) {
    pair *p = arg;
    loop *l = loop_current();
    sp_sleep(30);
    CHECK_EQ(net_write(l, &p->w[1], "hello", 5, LOOP_NO_DEADLINE), 5);
}

TEST(park_on_socketpair_until_data) {
    sp_loop *l = new_loop();
    pair p = {0};
    make_pair(l, &p);
    CHECK_EQ(sp_spawn(reader_task, &p), 0);
    CHECK_EQ(sp_spawn(writer_task, &p), 0);
    while (p.n == 0)
        CHECK(sp_poll(-1) >= 0);
    CHECK_EQ(p.n, 5);
    CHECK_MEM(p.buf, 5, "hello");
    CHECK(p.elapsed >= 25 && p.elapsed < 1500);
    sp_loop_free(l);
}

static void timeout_reader(void *arg) {
    pair *p = arg;
    loop *l = loop_current();
    int64_t t0 = loop_clock_ms();
    p->n = net_read(l, &p->w[0], p->buf, sizeof p->buf, loop_clock_ms() + 50);
    p->elapsed = loop_clock_ms() - t0;
}

TEST(park_on_socketpair_times_out) {
    sp_loop *l = new_loop();
    pair p = {0};
    make_pair(l, &p);
    CHECK_EQ(sp_spawn(timeout_reader, &p), 0);
    while (p.n == 0)
        CHECK(sp_poll(-1) >= 0);
    CHECK_EQ(p.n, -ETIMEDOUT);
    CHECK(p.elapsed >= 49 && p.elapsed < 1000);
    sp_loop_free(l);
}

static void hup_waiter_task(void *arg) {
    pair *p = arg;
    loop *l = loop_current();
    p->result = loop_wait_fd(l, &p->w[0], LOOP_READ, loop_now(l) + 5000);
    p->n = 1;
}

TEST(hang_up_wakes_parked_reader) {
    sp_loop *l = new_loop();
    pair p = {0};
    make_pair(l, &p);
    CHECK_EQ(sp_spawn(hup_waiter_task, &p), 0);
    CHECK(sp_poll(0) >= 0); /* the task parks */
    CHECK_EQ(p.n, 0);
    net_close(l, &p.w[1]);
    int64_t t0 = loop_clock_ms();
    while (p.n == 0)
        CHECK(sp_poll(-1) >= 0);
    CHECK(loop_clock_ms() - t0 < 1000);
    CHECK(p.result > 0);
    CHECK(p.result & LOOP_RDHUP);
    sp_loop_free(l);
}

static void sleeper_told_of_hup(void *arg) {
    pair *p = arg;
    loop_task_set_hup_watch(loop_task(loop_current()), &p->w[0]);
    p->result = sp_sleep(5000);
    p->n = 1;
}

TEST(hang_up_interrupts_sleep_of_connection_task) {
    sp_loop *l = new_loop();
    pair p = {0};
    make_pair(l, &p);
    CHECK_EQ(sp_spawn(sleeper_told_of_hup, &p), 0);
    CHECK(sp_poll(0) >= 0);
    net_close(l, &p.w[1]);
    int64_t t0 = loop_clock_ms();
    while (p.n == 0)
        CHECK(sp_poll(-1) >= 0);
    CHECK(loop_clock_ms() - t0 < 1000);
    CHECK_EQ(p.result, -ECONNRESET);
    sp_loop_free(l);
}

/* Two tasks, each with its own virtual watch (an HTTP/2 stream's): a
 * hang-up of one wakes its sleeper at once and leaves the other asleep. */
typedef struct {
    loop_watch w;
    int result, done;
} vsleeper;

static void sleeper_on_virtual(void *arg) {
    vsleeper *v = arg;
    loop_task_set_hup_watch(loop_task(loop_current()), &v->w);
    v->result = sp_sleep(5000);
    v->done = 1;
}

TEST(virtual_watch_hang_up_wakes_only_its_own_sleeper) {
    sp_loop *l = new_loop();
    vsleeper a = {0}, b = {0};
    loop_watch_init_virtual(&a.w);
    loop_watch_init_virtual(&b.w);
    CHECK_EQ(a.w.fd, -1);
    CHECK_EQ(sp_spawn(sleeper_on_virtual, &a), 0);
    CHECK_EQ(sp_spawn(sleeper_on_virtual, &b), 0);
    CHECK(sp_poll(0) >= 0); /* both park */
    loop_watch_hang_up(loop_current(), &a.w);
    int64_t t0 = loop_clock_ms();
    while (!a.done)
        CHECK(sp_poll(-1) >= 0);
    CHECK(loop_clock_ms() - t0 < 1000);
    CHECK_EQ(a.result, -ECONNRESET);
    CHECK_EQ(b.done, 0);
    /* latched: a later sleep on a's watch ends at once */
    CHECK(a.w.hup & LOOP_HUP);
    loop_watch_hang_up(loop_current(), &b.w);
    while (!b.done)
        CHECK(sp_poll(-1) >= 0);
    CHECK_EQ(b.result, -ECONNRESET);
    sp_loop_free(l);
}

TEST(watch_removal_cancels_parked_task) {
    sp_loop *l = new_loop();
    pair p = {0};
    make_pair(l, &p);
    CHECK_EQ(sp_spawn(hup_waiter_task, &p), 0);
    CHECK(sp_poll(0) >= 0);
    CHECK_EQ(loop_watch_del(l, &p.w[0]), 0);
    while (p.n == 0)
        CHECK(sp_poll(-1) >= 0);
    CHECK_EQ(p.result, -ECANCELED);
    sp_loop_free(l);
}

static int cb_events;
static void on_ready(loop *l, loop_watch *w, uint32_t ev) {
    cb_events |= (int)ev;
}

TEST(watch_callback_without_task) {
    sp_loop *l = new_loop();
    pair p = {0};
    make_pair(l, &p);
    p.w[0].cb = on_ready;
    CHECK_EQ(write(p.w[1].fd, "x", 1), 1);
    for (int i = 0; i < 100 && !(cb_events & LOOP_READ); i++)
        CHECK(sp_poll(100) >= 0);
    CHECK(cb_events & LOOP_READ);
    sp_loop_free(l);
}

/* ---- blocking calls, stepping, yielding --------------------------------- */

static int running_now, running_max; /* jobs inside slow_double at once */
static int slow_double(void *arg) {
    int n = __atomic_add_fetch(&running_now, 1, __ATOMIC_SEQ_CST);
    int m = __atomic_load_n(&running_max, __ATOMIC_SEQ_CST);
    while (n > m && !__atomic_compare_exchange_n(&running_max, &m, n, 0, __ATOMIC_SEQ_CST,
                                                 __ATOMIC_SEQ_CST)) {
    }
    usleep(100 * 1000);
    __atomic_sub_fetch(&running_now, 1, __ATOMIC_SEQ_CST);
    return *(int *)arg * 2;
}

static int ticks;
static void ticker(void *arg) {
    for (int i = 0; i < 5; i++) {
        sp_sleep(10);
        ticks++;
    }
}

typedef struct blocking_case {
    int in, out;
} blocking_case;

static void blocking_task(void *arg) {
    blocking_case *c = arg;
    c->out = sp_run_blocking(slow_double, &c->in);
}

TEST(run_blocking_leaves_loop_free) {
    sp_loop *l = new_loop();
    blocking_case c[8];
    for (int i = 0; i < 8; i++) {
        c[i] = (blocking_case){.in = i + 1};
        CHECK_EQ(sp_spawn(blocking_task, &c[i]), 0);
    }
    CHECK_EQ(sp_spawn(ticker, NULL), 0);
    int64_t t0 = loop_clock_ms();
    CHECK_EQ(sp_loop_run(l), 0);
    for (int i = 0; i < 8; i++)
        CHECK_EQ(c[i].out, 2 * (i + 1));
    CHECK_EQ(ticks, 5);
    /* 8 calls of 100 ms on 4 threads ran side by side, not one by one (a
     * count, not a clock: the machine may be loaded). */
    CHECK(running_max >= 2 && running_max <= 4);
    (void)t0;
    CHECK_EQ(sp_run_blocking(slow_double, &c[0].in), -EPERM);
    sp_loop_free(l);
}

static int done_flag;
static void sleep_30(void *arg) {
    sp_sleep(30);
    done_flag = 1;
}

TEST(poll_steps_the_loop) {
    sp_loop *l = new_loop();
    CHECK_EQ(sp_spawn(sleep_30, NULL), 0);
    int64_t t0 = loop_clock_ms();
    CHECK_EQ(sp_poll(0), 1); /* ran the task once: it parked */
    CHECK(!done_flag);
    CHECK(loop_clock_ms() - t0 < 25);
    int steps = 0;
    while (!done_flag && steps < 100) {
        CHECK(sp_poll(-1) >= 0);
        steps++;
    }
    CHECK(done_flag);
    CHECK(steps <= 3); /* a blocking wait, not a spin */
    CHECK(loop_clock_ms() - t0 >= 30);
    CHECK_EQ(sp_poll(0), 0);
    sp_loop_free(l);
}

static void yielder(void *arg) {
    for (int i = 0; i < 3; i++) {
        note(*(const char *)arg);
        sp_yield();
    }
}

TEST(yield_interleaves_tasks) {
    sp_loop *l = new_loop();
    CHECK_EQ(sp_spawn(yielder, "a"), 0);
    CHECK_EQ(sp_spawn(yielder, "b"), 0);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_STR(order, "ababab");
    sp_loop_free(l);
}

static int finished;
static void short_life(void *arg) {
    sp_sleep(1);
    finished++;
}

TEST_T(ten_thousand_tasks_reuse_stacks, 60) {
    sp_loop *l = new_loop();
    loop_stats st;
    /* Under valgrind (50x slower) a tenth of the tasks proves the same. */
    int n = 10000;
#ifdef SP_HAVE_VALGRIND
    if (RUNNING_ON_VALGRIND)
        n = 1000;
#endif
    for (int wave = 0; wave < 3; wave++) {
        for (int i = 0; i < n; i++)
            CHECK_EQ(sp_spawn(short_life, NULL), 0);
        CHECK_EQ(sp_loop_run(l), 0);
        loop_get_stats(l, &st);
        CHECK_EQ(st.tasks, 0);
        CHECK(st.stacks_mapped <= (size_t)n);
    }
    CHECK_EQ(finished, 3 * n);
    /* Later waves reused the first wave's stacks. */
    CHECK(st.stacks_mapped <= (size_t)n);
    sp_loop_free(l);
}

static void stop_soon(void *arg) {
    sp_sleep(10);
    sp_loop_stop(arg);
}

TEST(stop_returns_from_run_with_work_left) {
    sp_loop *l = new_loop();
    loop_timer far = {0};
    CHECK_EQ(loop_timer_arm(l, &far, loop_now(l) + 60000, timer_note, "z"), 0);
    CHECK_EQ(sp_spawn(stop_soon, l), 0);
    int64_t t0 = loop_clock_ms();
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK(loop_clock_ms() - t0 < 1000);
    CHECK(loop_timer_armed(&far));
    sp_loop_free(l); /* frees with a timer armed and nothing leaks */
}
