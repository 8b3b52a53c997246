/* test_chan.c — channels: buffered FIFO, bounded senders that wait, an
 * unbounded channel that grows, timeouts, close and drain, FIFO order of
 * waiting receivers and senders, a hand-off that races a timeout, and a
 * receiver told that its client hung up. */
#include "loop/loop.h"
#include "net/net.h"
#include "spindle.h"
#include "unit.h"

#include <errno.h>
#include <sys/socket.h>

static sp_loop *new_loop(void) {
    sp_loop *l = sp_loop_new(NULL);
    CHECK(l != NULL);
    return l;
}

TEST(buffered_fifo_without_coroutines) {
    sp_loop *l = new_loop();
    sp_chan *ch = sp_chan_new(3, sizeof(int));
    CHECK(ch != NULL);
    for (int i = 1; i <= 3; i++)
        CHECK_EQ(sp_chan_send(ch, &i, -1), 0);
    int x = 99;
    CHECK_EQ(sp_chan_send(ch, &x, 0), -EAGAIN); /* full, no waiting */
    CHECK_EQ(sp_chan_send(ch, &x, -1), -EPERM); /* would wait outside a coroutine */
    CHECK_EQ(sp_chan_len(ch), 3);
    for (int i = 1; i <= 3; i++) {
        CHECK_EQ(sp_chan_recv(ch, &x, 0), 0);
        CHECK_EQ(x, i);
    }
    CHECK_EQ(sp_chan_recv(ch, &x, 0), -EAGAIN);
    sp_chan_free(ch);
    sp_loop_free(l);
}

TEST(new_rejects_bad_sizes) {
    CHECK(sp_chan_new(4, 0) == NULL);
    CHECK_EQ(errno, EINVAL);
    CHECK(sp_chan_new(SIZE_MAX, 16) == NULL);
}

TEST(unbounded_grows_and_keeps_order) {
    sp_loop *l = new_loop();
    sp_chan *ch = sp_chan_new(0, sizeof(long));
    long v;
    /* Interleave so the ring wraps before it grows. */
    for (long i = 0; i < 5; i++)
        CHECK_EQ(sp_chan_send(ch, &i, 0), 0);
    for (long i = 0; i < 3; i++) {
        CHECK_EQ(sp_chan_recv(ch, &v, 0), 0);
        CHECK_EQ(v, i);
    }
    for (long i = 5; i < 20000; i++)
        CHECK_EQ(sp_chan_send(ch, &i, 0), 0);
    for (long i = 3; i < 20000; i++) {
        CHECK_EQ(sp_chan_recv(ch, &v, 0), 0);
        CHECK_EQ(v, i);
    }
    sp_chan_free(ch);
    sp_loop_free(l);
}

/* ---- coroutines ----------------------------------------------------------- */

static sp_chan *gch;
static char log_buf[128];
static size_t nlog;
static void note(char c) {
    log_buf[nlog++] = c;
    log_buf[nlog] = '\0';
}

static void producer(void *arg) {
    for (int i = 0; i < 10; i++)
        CHECK_EQ(sp_chan_send(gch, &i, 1000), 0);
    sp_chan_close(gch);
}

static int got[16], ngot, end_rc;
static void consumer(void *arg) {
    int v, rc;
    while ((rc = sp_chan_recv(gch, &v, 1000)) == 0) {
        got[ngot++] = v;
        if (ngot % 3 == 0)
            sp_sleep(2); /* the producer fills the channel meanwhile */
    }
    end_rc = rc;
}

TEST(bounded_producer_consumer_then_close) {
    sp_loop *l = new_loop();
    gch = sp_chan_new(2, sizeof(int));
    CHECK_EQ(sp_spawn(consumer, NULL), 0);
    CHECK_EQ(sp_spawn(producer, NULL), 0);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_EQ(ngot, 10);
    for (int i = 0; i < 10; i++)
        CHECK_EQ(got[i], i);
    CHECK_EQ(end_rc, -EPIPE);
    int x = 1;
    CHECK_EQ(sp_chan_send(gch, &x, 0), -EPIPE);
    sp_chan_free(gch);
    sp_loop_free(l);
}

static void named_receiver(void *arg) {
    char c;
    int rc = sp_chan_recv(gch, &c, 2000);
    CHECK_EQ(rc, 0);
    note(*(const char *)arg);
    note(c);
}

static void late_receiver(void *arg) {
    /* Arrives after the sender: must not overtake the waiting ones. */
    char c;
    CHECK_EQ(sp_chan_recv(gch, &c, 0), -EAGAIN);
}

static void sender_abc(void *arg) {
    CHECK_EQ(sp_chan_send(gch, "1", 0), 0);
    CHECK_EQ(sp_chan_send(gch, "2", 0), 0);
    CHECK_EQ(sp_chan_send(gch, "3", 0), 0);
}

TEST(waiting_receivers_are_served_in_order) {
    sp_loop *l = new_loop();
    gch = sp_chan_new(4, 1);
    CHECK_EQ(sp_spawn(named_receiver, "a"), 0);
    CHECK_EQ(sp_spawn(named_receiver, "b"), 0);
    CHECK_EQ(sp_spawn(named_receiver, "c"), 0);
    CHECK(sp_poll(0) >= 0); /* all three wait */
    CHECK_EQ(sp_spawn(sender_abc, NULL), 0);
    CHECK_EQ(sp_spawn(late_receiver, NULL), 0);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_STR(log_buf, "a1b2c3");
    sp_chan_free(gch);
    sp_loop_free(l);
}

static void named_sender(void *arg) {
    CHECK_EQ(sp_chan_send(gch, arg, 2000), 0);
    note('s');
}

TEST(waiting_senders_are_served_in_order) {
    sp_loop *l = new_loop();
    gch = sp_chan_new(1, 1);
    CHECK_EQ(sp_chan_send(gch, "x", 0), 0); /* full */
    CHECK_EQ(sp_spawn(named_sender, "a"), 0);
    CHECK_EQ(sp_spawn(named_sender, "b"), 0);
    CHECK_EQ(sp_spawn(named_sender, "c"), 0);
    CHECK(sp_poll(0) >= 0);
    char c[4] = {0};
    for (int i = 0; i < 4; i++) {
        CHECK_EQ(sp_chan_recv(gch, &c[i], 0), 0); /* each frees a slot for the next sender */
        if (i < 3)
            c[i + 1] = 0;
    }
    CHECK_EQ(c[0], 'x');
    CHECK_EQ(c[1], 'a');
    CHECK_EQ(c[2], 'b');
    CHECK_EQ(c[3], 'c');
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_STR(log_buf, "sss");
    sp_chan_free(gch);
    sp_loop_free(l);
}

static int timed_rc;
static int64_t timed_elapsed;
static void timed_receiver(void *arg) {
    int v;
    int64_t t0 = loop_clock_ms();
    timed_rc = sp_chan_recv(gch, &v, 50);
    timed_elapsed = loop_clock_ms() - t0;
}

TEST(recv_times_out) {
    sp_loop *l = new_loop();
    gch = sp_chan_new(1, sizeof(int));
    CHECK_EQ(sp_spawn(timed_receiver, NULL), 0);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_EQ(timed_rc, -ETIMEDOUT);
    CHECK(timed_elapsed >= 49 && timed_elapsed < 1000);
    sp_chan_free(gch);
    sp_loop_free(l);
}

static int closed_rc[2];
static void recv_until_closed(void *arg) {
    int v;
    closed_rc[(long)arg] = sp_chan_recv(gch, &v, -1);
}
static void send_until_closed(void *arg) {
    int v = 7;
    closed_rc[(long)arg] = sp_chan_send(gch, &v, -1);
}

TEST(close_wakes_waiters_with_epipe) {
    sp_loop *l = new_loop();
    gch = sp_chan_new(1, sizeof(int));
    sp_chan *full = sp_chan_new(1, sizeof(int));
    CHECK_EQ(sp_spawn(recv_until_closed, (void *)0), 0);
    CHECK(sp_poll(0) >= 0);
    sp_chan_close(gch);
    sp_chan_close(gch); /* idempotent */
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_EQ(closed_rc[0], -EPIPE);

    int v = 1;
    CHECK_EQ(sp_chan_send(full, &v, 0), 0);
    sp_chan *keep = gch;
    gch = full;
    CHECK_EQ(sp_spawn(send_until_closed, (void *)1), 0);
    CHECK(sp_poll(0) >= 0);
    sp_chan_close(full);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_EQ(closed_rc[1], -EPIPE);
    /* What was buffered before the close is still delivered. */
    CHECK_EQ(sp_chan_recv(full, &v, 0), 0);
    CHECK_EQ(v, 1);
    CHECK_EQ(sp_chan_recv(full, &v, 0), -EPIPE);
    sp_chan_free(full);
    sp_chan_free(keep);
    sp_loop_free(l);
}

TEST(free_wakes_waiters_who_never_touch_it_again) {
    sp_loop *l = new_loop();
    gch = sp_chan_new(1, sizeof(int));
    CHECK_EQ(sp_spawn(recv_until_closed, (void *)0), 0);
    CHECK(sp_poll(0) >= 0);
    sp_chan_free(gch);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_EQ(closed_rc[0], -EPIPE);
    sp_loop_free(l);
}

/* A receiver's timeout and a sender's hand-off in the same loop turn: the
 * element was given, so the receiver must get it, not -ETIMEDOUT. */
static int64_t race_deadline;
static int race_value, race_rc = 1;
static void race_receiver(void *arg) {
    race_deadline = loop_clock_ms() + 20;
    race_rc = sp_chan_recv(gch, &race_value, 20);
}
static void race_send(loop *l, loop_timer *t) {
    int v = 42;
    CHECK_EQ(sp_chan_send(gch, &v, 0), 0);
}

TEST(hand_off_racing_a_timeout_is_not_lost) {
    sp_loop *l = new_loop();
    gch = sp_chan_new(1, sizeof(int));
    CHECK_EQ(sp_spawn(race_receiver, NULL), 0);
    CHECK(sp_poll(0) >= 0); /* parked, its timer armed */
    loop_timer t = {0};
    /* Same deadline, armed later: fires right after the receiver's timer,
     * before the receiver runs again. */
    CHECK_EQ(loop_timer_arm(l, &t, race_deadline, race_send, NULL), 0);
    CHECK_EQ(sp_loop_run(l), 0);
    CHECK_EQ(race_rc, 0);
    CHECK_EQ(race_value, 42);
    CHECK_EQ(sp_chan_len(gch), 0);
    sp_chan_free(gch);
    sp_loop_free(l);
}

typedef struct hup_case {
    loop_watch w[2];
    int rc, done;
} hup_case;

static void hup_receiver(void *arg) {
    hup_case *h = arg;
    loop_task_set_hup_watch(loop_task(loop_current()), &h->w[0]);
    int v;
    h->rc = sp_chan_recv(gch, &v, 5000);
    h->done = 1;
}

TEST(hang_up_interrupts_a_channel_wait) {
    sp_loop *l = new_loop();
    gch = sp_chan_new(1, sizeof(int));
    hup_case h = {0};
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    for (int i = 0; i < 2; i++) {
        h.w[i] = (loop_watch){.fd = sv[i]};
        CHECK_EQ(loop_watch_add(l, &h.w[i], BACKEND_CONN), 0);
    }
    CHECK_EQ(sp_spawn(hup_receiver, &h), 0);
    CHECK(sp_poll(0) >= 0);
    net_close(l, &h.w[1]);
    int64_t t0 = loop_clock_ms();
    while (!h.done)
        CHECK(sp_poll(-1) >= 0);
    CHECK(loop_clock_ms() - t0 < 1000);
    CHECK_EQ(h.rc, -ECONNRESET);
    /* The channel is intact: the waiter left its queue. */
    int v = 5;
    CHECK_EQ(sp_chan_send(gch, &v, 0), 0);
    CHECK_EQ(sp_chan_recv(gch, &v, 0), 0);
    CHECK_EQ(v, 5);
    net_close(l, &h.w[0]);
    sp_chan_free(gch);
    sp_loop_free(l);
}
