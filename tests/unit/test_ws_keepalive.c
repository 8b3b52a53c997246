/* test_ws_keepalive.c — the WebSocket keep-alive clock: pings after each
 * stretch of silence, anything heard from the peer resets both clocks, a
 * close after the idle timeout once a ping went unanswered long enough
 * (also when the handler came back late), and the corner cases (off, a
 * ping interval not below the idle timeout). */
#include "server/ws/ws_keepalive.h"
#include "unit.h"

TEST(ws_keepalive_pings_then_closes_a_silent_peer) {
    ws_keepalive k;
    ws_keepalive_init(&k, 200, 600, 1000);
    CHECK_EQ(ws_keepalive_due(&k), 1200);
    CHECK_EQ(ws_keepalive_step(&k, 1199), WS_KA_WAIT);
    CHECK_EQ(ws_keepalive_step(&k, 1200), WS_KA_PING);
    CHECK_EQ(ws_keepalive_due(&k), 1400); /* the next ping, the peer still silent */
    CHECK_EQ(ws_keepalive_step(&k, 1300), WS_KA_WAIT);
    CHECK_EQ(ws_keepalive_step(&k, 1400), WS_KA_PING);
    CHECK_EQ(ws_keepalive_step(&k, 1500), WS_KA_WAIT);
    CHECK_EQ(ws_keepalive_step(&k, 1550), WS_KA_WAIT);
    CHECK_EQ(ws_keepalive_due(&k), 1600);
    /* at 1600 a ping and the idle limit fall together: the close wins */
    CHECK_EQ(ws_keepalive_step(&k, 1600), WS_KA_CLOSE);
    CHECK_EQ(ws_keepalive_step(&k, 5000), WS_KA_CLOSE);
}

TEST(ws_keepalive_a_peer_that_answers_stays) {
    ws_keepalive k;
    ws_keepalive_init(&k, 200, 600, 0);
    int64_t t = 0;
    for (int i = 0; i < 50; i++) {
        t = ws_keepalive_due(&k);
        CHECK_EQ(ws_keepalive_step(&k, t), WS_KA_PING);
        ws_keepalive_heard(&k, t + 5); /* the pong */
        CHECK_EQ(ws_keepalive_due(&k), t + 205);
        CHECK_EQ(ws_keepalive_step(&k, t + 100), WS_KA_WAIT);
    }
    CHECK(t > 600 * 10); /* long past the idle timeout, still open */
    /* data from the peer counts as much as a pong: no ping while it talks */
    ws_keepalive_init(&k, 200, 600, 0);
    for (t = 0; t < 2000; t += 150) {
        ws_keepalive_heard(&k, t);
        CHECK_EQ(ws_keepalive_step(&k, t + 149), WS_KA_WAIT);
    }
}

TEST(ws_keepalive_off_and_odd_settings) {
    ws_keepalive k;
    ws_keepalive_init(&k, -1, -1, 0);
    CHECK_EQ(ws_keepalive_due(&k), WS_KA_NEVER);
    CHECK_EQ(ws_keepalive_step(&k, INT64_MAX / 2), WS_KA_WAIT);
    /* pings without an idle limit: pings forever, never a close */
    ws_keepalive_init(&k, 100, -1, 0);
    CHECK_EQ(ws_keepalive_step(&k, 100), WS_KA_PING);
    CHECK_EQ(ws_keepalive_step(&k, 1000000), WS_KA_PING);
    /* an idle limit without pings: a close after the silence */
    ws_keepalive_init(&k, -1, 500, 0);
    CHECK_EQ(ws_keepalive_due(&k), 500);
    CHECK_EQ(ws_keepalive_step(&k, 499), WS_KA_WAIT);
    CHECK_EQ(ws_keepalive_step(&k, 500), WS_KA_CLOSE);
    /* a ping interval not below the idle timeout pings at half of it */
    ws_keepalive_init(&k, 900, 600, 0);
    CHECK_EQ(ws_keepalive_due(&k), 300);
    CHECK_EQ(ws_keepalive_step(&k, 300), WS_KA_PING);
    ws_keepalive_init(&k, 5, 1, 0);
    CHECK_EQ(ws_keepalive_step(&k, 1), WS_KA_PING);
    CHECK_EQ(ws_keepalive_step(&k, 1), WS_KA_CLOSE);
}

TEST(ws_keepalive_a_late_handler_gives_the_peer_time_to_answer) {
    /* The handler was away (not in sp_ws_recv) far past the idle timeout:
     * the peer was never pinged meanwhile, so it gets a ping and idle - ping
     * to answer, not an instant close. */
    ws_keepalive k;
    ws_keepalive_init(&k, 200, 600, 0);
    CHECK_EQ(ws_keepalive_step(&k, 5000), WS_KA_PING);
    CHECK_EQ(ws_keepalive_due(&k), 5200);
    CHECK_EQ(ws_keepalive_step(&k, 5200), WS_KA_PING); /* repeated pings keep the first's clock */
    CHECK_EQ(ws_keepalive_step(&k, 5399), WS_KA_WAIT);
    CHECK_EQ(ws_keepalive_due(&k), 5400);
    CHECK_EQ(ws_keepalive_step(&k, 5400), WS_KA_CLOSE);
    /* an answer in time resets it all */
    ws_keepalive_init(&k, 200, 600, 0);
    CHECK_EQ(ws_keepalive_step(&k, 5000), WS_KA_PING);
    ws_keepalive_heard(&k, 5390);
    CHECK_EQ(ws_keepalive_step(&k, 5400), WS_KA_WAIT);
    CHECK_EQ(ws_keepalive_due(&k), 5590);
}
