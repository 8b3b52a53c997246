/* test_loop_fair.c — fairness in the loop: loop_charge yields once a task
 * has spent LOOP_BUDGET since it was resumed, and neither a task that keeps
 * yielding nor a driver that keeps waking tasks through loop_run_pending
 * (the WSGI hub) can keep timers from firing. */
#include "loop/loop.h"
#include "unit.h"

#include <errno.h>

static sp_loop *new_loop(void) {
    sp_loop *l = sp_loop_new(NULL);
    CHECK(l != NULL);
    return l;
}

static int charges;      /* charges the hog made so far */
static int seen_at = -1; /* charges when the other task first ran */

static void hog(void *arg) {
    loop *l = loop_current();
    for (charges = 0; charges < 1000; charges++)
        loop_charge(l, (size_t)(uintptr_t)arg);
}

static void other(void *arg) {
    seen_at = charges;
}

TEST(charge_yields_after_the_budget) {
    sp_loop *l = new_loop();
    CHECK_EQ(sp_spawn(hog, (void *)0), 0);
    CHECK_EQ(sp_spawn(other, NULL), 0);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_EQ(seen_at, LOOP_BUDGET - 1); /* the 64th charge yielded */
    sp_loop_free(l);
}

TEST(charge_counts_bytes) {
    sp_loop *l = new_loop();
    /* 1 MiB is 64 units by itself: the first charge yields. */
    CHECK_EQ(sp_spawn(hog, (void *)(uintptr_t)(1u << 20)), 0);
    CHECK_EQ(sp_spawn(other, NULL), 0);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_EQ(seen_at, 0);
    sp_loop_free(l);
}

static int fired;
static void on_timer(loop *l, loop_timer *t) {
    fired = 1;
}

static void yield_until_fired(void *arg) {
    int64_t end = loop_clock_ms() + 2000;
    while (!fired && loop_clock_ms() < end)
        sp_yield();
}

/* sp_loop_run: a task that yields forever still lets the timer fire. */
TEST(yielding_task_does_not_starve_timers) {
    sp_loop *l = new_loop();
    loop_timer t = {0};
    CHECK_EQ(loop_timer_arm(l, &t, loop_clock_ms() + 20, on_timer, NULL), 0);
    CHECK_EQ(sp_spawn(yield_until_fired, NULL), 0);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK(fired);
    sp_loop_free(l);
}

/* A driver of its own that only calls loop_run_pending while tasks are
 * ready (as the WSGI hub does) still polls and runs timers. */
TEST(run_pending_polls_after_a_yield) {
    sp_loop *l = new_loop();
    loop_timer t = {0};
    CHECK_EQ(loop_timer_arm(l, &t, loop_clock_ms() + 20, on_timer, NULL), 0);
    CHECK_EQ(sp_spawn(yield_until_fired, NULL), 0);
    while (loop_has_ready(l))
        CHECK(loop_run_pending(l) >= 0);
    CHECK(fired);
    sp_loop_free(l);
}

static task *parked;
static void park_until_fired(void *arg) {
    loop *l = loop_current();
    parked = loop_task(l);
    while (!fired)
        loop_park(l, LOOP_NO_DEADLINE, NULL);
    parked = NULL;
}

/* The hub and a WSGI call hand work to each other: the task parks, the
 * driver wakes it, and nobody yields; timers must still fire. */
TEST(run_pending_polls_when_tasks_keep_being_woken) {
    sp_loop *l = new_loop();
    loop_timer t = {0};
    CHECK_EQ(loop_timer_arm(l, &t, loop_clock_ms() + 20, on_timer, NULL), 0);
    CHECK_EQ(sp_spawn(park_until_fired, NULL), 0);
    int64_t end = loop_clock_ms() + 2000;
    CHECK(loop_run_pending(l) >= 0);
    while (parked && loop_clock_ms() < end) {
        loop_wake(l, parked, 0);
        CHECK(loop_run_pending(l) >= 0);
    }
    CHECK(fired);
    CHECK(parked == NULL);
    sp_loop_free(l);
}

static void yield_100(void *arg) {
    for (int i = 0; i < 100; i++)
        sp_yield();
}

/* Each turn of a yielding task comes after a poll: one loop step each. */
TEST(each_yield_gets_a_poll) {
    sp_loop *l = new_loop();
    CHECK_EQ(sp_spawn(yield_100, NULL), 0);
    CHECK_EQ(sp_loop_run(l), 0);
    loop_stats st;
    loop_get_stats(l, &st);
    CHECK(st.turns >= 100);
    sp_loop_free(l);
}
