/* test_sched.c — periodic timers: ticks on the period's grid, ticks that
 * never overlap when the callback parks longer than the period, a timer
 * cancelled from its own callback, before its first tick, and bad
 * arguments. */
#include "loop/loop.h"
#include "spindle.h"
#include "unit.h"

#include <errno.h>

static sp_loop *new_loop(void) {
    sp_loop *l = sp_loop_new(NULL);
    CHECK(l != NULL);
    return l;
}

static sp_timer *tm;
static int ticks;
static int64_t t0, at[16];
static void count_to_five(void *arg) {
    at[ticks++] = loop_clock_ms() - t0;
    if (ticks == 5)
        sp_timer_cancel(tm);
}

TEST(ticks_on_the_grid_until_cancelled_from_inside) {
    sp_loop *l = new_loop();
    t0 = loop_clock_ms();
    tm = sp_every(20, count_to_five, NULL);
    CHECK(tm != NULL);
    CHECK_EQ(sp_loop_run(l), 0); /* returns: the cancelled timer holds nothing */
    CHECK_EQ(ticks, 5);
    /* Never early; on a loaded machine a late tick skips grid points
     * rather than bunching up, so only a generous bound above. */
    for (int i = 0; i < 5; i++)
        CHECK(at[i] >= 20 * (i + 1) && (i == 0 || at[i] > at[i - 1]));
    CHECK(at[4] < 500);
    sp_loop_free(l);
}

static int running, overlapped;
static void slow_tick(void *arg) {
    if (running)
        overlapped = 1;
    running = 1;
    at[ticks++] = loop_clock_ms() - t0;
    CHECK_EQ(sp_sleep(25), 0); /* longer than the period */
    running = 0;
    if (ticks == 3)
        sp_timer_cancel(tm);
}

TEST(ticks_never_overlap_and_skip_missed_ones) {
    sp_loop *l = new_loop();
    t0 = loop_clock_ms();
    tm = sp_every(10, slow_tick, NULL);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK(!overlapped);
    CHECK_EQ(ticks, 3);
    /* Due at 10, then at the first grid point after each 25 ms run (40,
     * 70 on an idle machine): never sooner than the run, never a whole
     * period later than the grid allows. */
    CHECK(at[0] >= 10 && at[0] < 200);
    for (int i = 1; i < 3; i++)
        CHECK(at[i] - at[i - 1] >= 25 && at[i] - at[i - 1] < 200);
    sp_loop_free(l);
}

static void never(void *arg) {
    ticks = 100;
}

TEST(cancel_before_the_first_tick) {
    sp_loop *l = new_loop();
    sp_timer *t = sp_every(10, never, NULL);
    CHECK(t != NULL);
    sp_timer_cancel(t);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_EQ(ticks, 0);
    sp_loop_free(l);
}

static void cancel_in_timer(loop *l, loop_timer *t) {
    sp_timer_cancel(t->data);
}

TEST(cancel_while_a_tick_is_spawned_but_not_run) {
    sp_loop *l = new_loop();
    sp_timer *t = sp_every(10, never, NULL);
    /* A loop timer due with the tick, armed after it, fires right after the
     * tick's coroutine was spawned and before it runs. */
    loop_timer other = {0};
    CHECK_EQ(loop_timer_arm(l, &other, loop_clock_ms() + 10, cancel_in_timer, t), 0);
    int64_t end = loop_clock_ms() + 15;
    while (loop_clock_ms() < end)
        ; /* both come due before the loop looks */
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_EQ(ticks, 0);
    sp_loop_free(l);
}

TEST(bad_arguments) {
    CHECK(sp_every(10, never, NULL) == NULL);
    CHECK_EQ(errno, ENXIO);
    sp_loop *l = new_loop();
    CHECK(sp_every(0, never, NULL) == NULL);
    CHECK_EQ(errno, EINVAL);
    CHECK(sp_every(10, NULL, NULL) == NULL);
    sp_loop_free(l);
}
