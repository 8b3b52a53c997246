/* test_uring.c — the io_uring backend: the registration table's generations
 * (a completion for a removed or re-added fd is stale), and, where the
 * kernel allows io_uring, the loop on it: readiness, a closed watch really
 * closing the socket, a stale completion never reaching a reused fd's new
 * owner, and level-mode re-arming. */
#include "loop/loop.h"
#include "loop/loop_choose.h"
#include "loop/uring_reg.h"
#include "net/net.h"
#include "unit.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

TEST(reg_tags_carry_fd_and_generation) {
    uring_reg r = {0};
    int a, b;
    CHECK_EQ(uring_reg_add(&r, 5, BACKEND_CONN, &a), 0);
    uint64_t t1 = uring_reg_tag(&r, 5);
    int fd = -1;
    CHECK(uring_reg_lookup(&r, t1, &fd) != NULL);
    CHECK_EQ(fd, 5);
    CHECK(uring_reg_lookup(&r, t1, &fd)->data == &a);
    CHECK_EQ(uring_reg_add(&r, 5, BACKEND_CONN, &a), -EEXIST);
    CHECK_EQ(uring_reg_del(&r, 5), 0);
    CHECK(uring_reg_lookup(&r, t1, &fd) == NULL); /* removed: stale */
    CHECK_EQ(uring_reg_del(&r, 5), -ENOENT);
    /* The fd reused by a new owner: the old tag still names nothing. */
    CHECK_EQ(uring_reg_add(&r, 5, BACKEND_CONN, &b), 0);
    uint64_t t2 = uring_reg_tag(&r, 5);
    CHECK(t2 != t1);
    CHECK(uring_reg_lookup(&r, t1, &fd) == NULL);
    CHECK(uring_reg_lookup(&r, t2, &fd)->data == &b);
    CHECK(uring_reg_lookup(&r, URING_TAG_IGNORE, &fd) == NULL);
    CHECK(uring_reg_lookup(&r, (uint64_t)1 << 32 | 100000, &fd) == NULL); /* past the table */
    CHECK_EQ(uring_reg_add(&r, -1, BACKEND_CONN, &b), -EBADF);
    uring_reg_free(&r);
}

TEST(reg_rearm_hands_out_live_fds_once) {
    uring_reg r = {0};
    int d;
    CHECK_EQ(uring_reg_add(&r, 3, BACKEND_LISTEN, &d), 0);
    CHECK_EQ(uring_reg_add(&r, 4, BACKEND_LISTEN, &d), 0);
    uring_reg_want_rearm(&r, 3);
    uring_reg_want_rearm(&r, 3); /* twice: once */
    uring_reg_want_rearm(&r, 4);
    CHECK_EQ(uring_reg_del(&r, 4), 0); /* removed before the next wait: not re-armed */
    CHECK_EQ(uring_reg_next_rearm(&r), 3);
    CHECK_EQ(uring_reg_next_rearm(&r), -1);
    /* Removed and registered again: the new registration is armed by its
     * add, so the old mark is void. */
    uring_reg_want_rearm(&r, 3);
    CHECK_EQ(uring_reg_del(&r, 3), 0);
    CHECK_EQ(uring_reg_add(&r, 3, BACKEND_LISTEN, &d), 0);
    CHECK_EQ(uring_reg_next_rearm(&r), -1);
    uring_reg_free(&r);
}

/* EOF on fd within a second (the last reference of a file closed through
 * io_uring may be dropped by a kernel worker, a moment later). */
static int eof_soon(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char c;
    if (poll(&p, 1, 1000) != 1)
        return 0;
    return read(fd, &c, 1) == 0;
}

/* A loop on io_uring, or NULL (the test passes vacuously, saying so) where
 * the kernel forbids it. */
static sp_loop *uring_loop(void) {
    loop_set_default_backend(BACKEND_KIND_URING);
    sp_loop *l = sp_loop_new(NULL);
    CHECK(l != NULL);
    if (strcmp(loop_backend_name(l), "io_uring") != 0) {
        fprintf(stderr, "  io_uring unavailable here: skipped\n");
        sp_loop_free(l);
        return NULL;
    }
    return l;
}

typedef struct seen {
    int calls;
    uint32_t events;
} seen;

static void on_event(loop *l, loop_watch *w, uint32_t events) {
    seen *s = w->data;
    s->calls++;
    s->events |= events;
}

TEST(uring_reports_readiness_edge_like) {
    sp_loop *l = uring_loop();
    if (!l)
        return;
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    seen s = {0};
    loop_watch w = {.fd = sv[0], .cb = on_event, .data = &s};
    CHECK_EQ(loop_watch_add(l, &w, BACKEND_CONN), 0);
    sp_poll(0);
    CHECK(s.events & LOOP_WRITE); /* writable at once */
    CHECK(!(s.events & LOOP_READ));
    s = (seen){0};
    CHECK_EQ(write(sv[1], "x", 1), 1);
    sp_poll(100);
    CHECK_EQ(s.calls, 1);
    CHECK(s.events & LOOP_READ);
    s = (seen){0};
    sp_poll(0); /* nothing new: an edge, not a level */
    CHECK_EQ(s.calls, 0);
    CHECK_EQ(loop_watch_del(l, &w), 0);
    close(sv[0]);
    close(sv[1]);
    sp_loop_free(l);
}

TEST(uring_close_really_closes) {
    sp_loop *l = uring_loop();
    if (!l)
        return;
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    seen s = {0};
    loop_watch w = {.fd = sv[0], .cb = on_event, .data = &s};
    CHECK_EQ(loop_watch_add(l, &w, BACKEND_CONN), 0);
    sp_poll(0); /* the poll is armed: it holds the file */
    loop_watch_close(l, &w);
    sp_poll(0);             /* the removal and the close go in with this turn */
    CHECK(eof_soon(sv[1])); /* EOF: the socket is gone */
    CHECK_EQ(s.calls, 1);   /* only the first turn's writable */
    close(sv[1]);
    sp_loop_free(l);
}

/* The removal goes in while a wake-up of the poll is still pending (bytes
 * arrived since the last turn): POLL_REMOVE fails with EALREADY then and
 * leaves the poll armed, holding the socket open; a cancel does not. */
TEST(uring_close_with_a_wakeup_pending_really_closes) {
    sp_loop *l = uring_loop();
    if (!l)
        return;
    for (int i = 0; i < 20; i++) {
        int sv[2];
        CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
        seen s = {0};
        loop_watch w = {.fd = sv[0], .cb = on_event, .data = &s};
        CHECK_EQ(loop_watch_add(l, &w, BACKEND_CONN), 0);
        sp_poll(0);
        CHECK_EQ(write(sv[1], "x", 1), 1); /* a wake-up, not reaped yet */
        char c;
        CHECK_EQ(read(sv[0], &c, 1), 1); /* read, as a driver does before closing */
        loop_watch_close(l, &w);
        sp_poll(0);
        sp_poll(0);
        CHECK(eof_soon(sv[1]));
        close(sv[1]);
    }
    sp_loop_free(l);
}

TEST(uring_stale_completion_skips_new_owner) {
    sp_loop *l = uring_loop();
    if (!l)
        return;
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    seen old = {0}, now = {0};
    loop_watch w1 = {.fd = sv[0], .cb = on_event, .data = &old};
    CHECK_EQ(loop_watch_add(l, &w1, BACKEND_CONN), 0);
    sp_poll(0);
    CHECK_EQ(write(sv[1], "x", 1), 1);
    /* The old poll's completion is due; the fd changes owner before it is
     * reaped. */
    loop_watch_forget(l, &w1);
    loop_watch w2 = {.fd = sv[0], .cb = on_event, .data = &now};
    CHECK_EQ(loop_watch_add(l, &w2, BACKEND_CONN), 0);
    old = (seen){0};
    sp_poll(100);
    CHECK_EQ(old.calls, 0); /* never told again once removed */
    CHECK(now.events & LOOP_READ);
    CHECK_EQ(loop_watch_del(l, &w2), 0);
    close(sv[0]);
    close(sv[1]);
    sp_loop_free(l);
}

TEST(uring_level_modes_report_again) {
    sp_loop *l = uring_loop();
    if (!l)
        return;
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    seen s = {0};
    loop_watch w = {.fd = sv[0], .cb = on_event, .data = &s};
    CHECK_EQ(loop_watch_add(l, &w, BACKEND_READ_LEVEL), 0);
    CHECK_EQ(write(sv[1], "x", 1), 1);
    for (int i = 0; i < 3; i++)
        sp_poll(100); /* unread: reported every turn */
    CHECK_EQ(s.calls, 3);
    char c;
    CHECK_EQ(read(sv[0], &c, 1), 1);
    sp_poll(0); /* the re-armed poll goes in and finds nothing */
    s = (seen){0};
    sp_poll(0);
    CHECK_EQ(s.calls, 0);
    CHECK_EQ(loop_watch_del(l, &w), 0);
    close(sv[0]);
    close(sv[1]);
    sp_loop_free(l);
}

typedef struct sender {
    loop_watch *w;
    size_t len;
    int64_t deadline;
    ssize_t got;
} sender;

static void send_task(void *arg) {
    sender *s = arg;
    loop_task_set_hup_watch(loop_task(loop_current()), s->w); /* its connection */
    static char big[1 << 22];
    memset(big, 'a', s->len);
    s->got = net_write(loop_current(), s->w, big, s->len, s->deadline);
}

/* Sends go through the ring (the task parks until the completion): all
 * bytes arrive, a partial send is carried on, and a peer that never reads
 * ends the send at its deadline, the loop still turning. */
TEST(uring_queued_sends_complete_and_time_out) {
    sp_loop *l = uring_loop();
    if (!l)
        return;
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    loop_watch w = {.fd = sv[0]};
    loop_watch_lazy(&w, BACKEND_CONN);
    sender s = {.w = &w, .len = 1000, .deadline = LOOP_NO_DEADLINE};
    CHECK_EQ(sp_spawn(send_task, &s), 0);
    sp_poll(0); /* the task queues its send; the same turn submits it */
    for (int i = 0; i < 10 && s.got == 0; i++)
        sp_poll(100);
    CHECK_EQ(s.got, 1000);
    char buf[4096];
    CHECK_EQ(read(sv[1], buf, sizeof buf), 1000);
    /* More than the socket holds, never read: the deadline ends it. */
    s = (sender){.w = &w, .len = 1 << 22, .deadline = loop_clock_ms() + 200};
    CHECK_EQ(sp_spawn(send_task, &s), 0);
    int64_t t0 = loop_clock_ms();
    while (s.got == 0 && loop_clock_ms() - t0 < 3000)
        sp_poll(50);
    CHECK_EQ(s.got, -ETIMEDOUT);
    loop_watch_close(l, &w);
    sp_poll(0);
    close(sv[1]);
    sp_loop_free(l);
}
