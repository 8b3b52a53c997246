/* test_sync.c — wait groups, the coroutine mutex (exclusion across parks,
 * FIFO hand-off, try-lock, owner checks) and conditions (signal, broadcast,
 * timeout with the mutex held again). */
#include "loop/loop.h"
#include "spindle.h"
#include "unit.h"

#include <errno.h>

static sp_loop *new_loop(void) {
    sp_loop *l = sp_loop_new(NULL);
    CHECK(l != NULL);
    return l;
}

static char log_buf[128];
static size_t nlog;
static void note(char c) {
    log_buf[nlog++] = c;
    log_buf[nlog] = '\0';
}

static sp_wg *wg;
static void worker(void *arg) {
    sp_sleep((long)arg);
    note('w');
    sp_wg_done(wg);
}
static int wait_rc = 1;
static void waiter_task(void *arg) {
    wait_rc = sp_wg_wait(wg, 2000);
    note('W');
}

TEST(wait_group_waits_for_all) {
    sp_loop *l = new_loop();
    wg = sp_wg_new();
    CHECK_EQ(sp_wg_wait(wg, 0), 0); /* zero: at once, even outside a coroutine */
    CHECK_EQ(sp_wg_add(wg, 3), 0);
    CHECK_EQ(sp_wg_wait(wg, 0), -EAGAIN);
    CHECK_EQ(sp_spawn(waiter_task, NULL), 0);
    for (long i = 1; i <= 3; i++)
        CHECK_EQ(sp_spawn(worker, (void *)(i * 5)), 0);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_EQ(wait_rc, 0);
    CHECK_STR(log_buf, "wwwW");
    CHECK_EQ(sp_wg_add(wg, -1), -EINVAL);
    sp_wg_free(wg);
    sp_loop_free(l);
}

static void short_waiter(void *arg) {
    wait_rc = sp_wg_wait(wg, 30);
}

TEST(wait_group_wait_times_out) {
    sp_loop *l = new_loop();
    wg = sp_wg_new();
    sp_wg_add(wg, 1);
    CHECK_EQ(sp_spawn(short_waiter, NULL), 0);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_EQ(wait_rc, -ETIMEDOUT);
    sp_wg_free(wg);
    sp_loop_free(l);
}

static sp_mutex *mu;
static int inside, max_inside;
static void locker(void *arg) {
    CHECK_EQ(sp_mutex_lock(mu, -1), 0);
    inside++;
    if (inside > max_inside)
        max_inside = inside;
    note(*(const char *)arg);
    sp_sleep(5); /* held across a park */
    inside--;
    CHECK_EQ(sp_mutex_unlock(mu), 0);
}

TEST(mutex_excludes_across_parks_in_fifo_order) {
    sp_loop *l = new_loop();
    mu = sp_mutex_new();
    CHECK_EQ(sp_spawn(locker, "a"), 0);
    CHECK_EQ(sp_spawn(locker, "b"), 0);
    CHECK_EQ(sp_spawn(locker, "c"), 0);
    CHECK_EQ(sp_spawn(locker, "d"), 0);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_EQ(max_inside, 1);
    CHECK_STR(log_buf, "abcd");
    sp_mutex_free(mu);
    sp_loop_free(l);
}

static int try_rc, relock_rc, foreign_unlock_rc;
static void holder(void *arg) {
    CHECK_EQ(sp_mutex_lock(mu, 0), 0);
    relock_rc = sp_mutex_lock(mu, -1);
    sp_sleep(300); /* far beyond the trier's 5 ms, even on a loaded machine */
    CHECK_EQ(sp_mutex_unlock(mu), 0);
}
static void trier(void *arg) {
    try_rc = sp_mutex_lock(mu, 0);
    foreign_unlock_rc = sp_mutex_unlock(mu);
    CHECK_EQ(sp_mutex_lock(mu, 5), -ETIMEDOUT);
}

TEST(mutex_try_lock_owner_checks_and_timeout) {
    sp_loop *l = new_loop();
    mu = sp_mutex_new();
    CHECK_EQ(sp_mutex_lock(mu, -1), -EPERM); /* outside a coroutine */
    CHECK_EQ(sp_spawn(holder, NULL), 0);
    CHECK_EQ(sp_spawn(trier, NULL), 0);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_EQ(relock_rc, -EDEADLK);
    CHECK_EQ(try_rc, -EAGAIN);
    CHECK_EQ(foreign_unlock_rc, -EPERM);
    sp_mutex_free(mu);
    sp_loop_free(l);
}

static sp_cond *cv;
static int items, consumed[4];
static void cond_consumer(void *arg) {
    long id = (long)arg;
    CHECK_EQ(sp_mutex_lock(mu, -1), 0);
    while (items == 0)
        CHECK_EQ(sp_cond_wait(cv, mu, 2000), 0);
    items--;
    consumed[id]++;
    note((char)('0' + id));
    CHECK_EQ(sp_mutex_unlock(mu), 0);
}
static void cond_producer(void *arg) {
    sp_sleep(5);
    CHECK_EQ(sp_mutex_lock(mu, -1), 0);
    items = 1;
    sp_cond_signal(cv);
    CHECK_EQ(sp_mutex_unlock(mu), 0);
    sp_sleep(5);
    CHECK_EQ(sp_mutex_lock(mu, -1), 0);
    items = 2;
    sp_cond_broadcast(cv);
    CHECK_EQ(sp_mutex_unlock(mu), 0);
}

TEST(cond_signal_and_broadcast) {
    sp_loop *l = new_loop();
    mu = sp_mutex_new();
    cv = sp_cond_new();
    for (long i = 0; i < 3; i++)
        CHECK_EQ(sp_spawn(cond_consumer, (void *)i), 0);
    CHECK_EQ(sp_spawn(cond_producer, NULL), 0);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_STR(log_buf, "012"); /* the oldest waiter is signalled first */
    CHECK_EQ(items, 0);
    sp_cond_free(cv);
    sp_mutex_free(mu);
    sp_loop_free(l);
}

static int cond_rc = 1, held_after;
static task *me;
static void cond_timeout(void *arg) {
    CHECK_EQ(sp_mutex_lock(mu, -1), 0);
    cond_rc = sp_cond_wait(cv, mu, 20);
    /* Held again: unlocking succeeds. */
    held_after = sp_mutex_unlock(mu) == 0;
    (void)me;
}
static void not_owner(void *arg) {
    CHECK_EQ(sp_cond_wait(cv, mu, 10), -EPERM);
}

TEST(cond_wait_times_out_with_mutex_held_again) {
    sp_loop *l = new_loop();
    mu = sp_mutex_new();
    cv = sp_cond_new();
    CHECK_EQ(sp_spawn(cond_timeout, NULL), 0);
    CHECK_EQ(sp_spawn(not_owner, NULL), 0);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_EQ(cond_rc, -ETIMEDOUT);
    CHECK(held_after);
    sp_cond_free(cv);
    sp_mutex_free(mu);
    sp_loop_free(l);
}
