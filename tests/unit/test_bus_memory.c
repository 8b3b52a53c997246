/* test_bus_memory.c — the memory bus on one loop: order per topic and
 * ids, since-id (all, after an id, new only), the retention limit, the
 * slow subscriber cut with its log line while others go on, the message
 * size limit, timeouts, many subscribers, the spec's errors, and the
 * ring shared by processes forked after the configure (bus_shm.c). */
#include "loop/loop.h"
#include "server/embed.h"
#include "spindle.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static sp_loop *L;
static sp_server *S;

static void setup(const char *spec) {
    L = sp_loop_new(NULL);
    CHECK(L != NULL);
    S = sp_server_new(NULL);
    CHECK(S != NULL);
    CHECK_EQ(sp_bus_configure(S, spec), 0);
}

static void teardown(void) {
    sp_server_free(S);
    sp_loop_free(L);
}

static void pub(const char *topic, int i, char id[SP_BUS_ID_MAX]) {
    char body[32];
    int n = snprintf(body, sizeof body, "m%d", i);
    CHECK_EQ(sp_bus_publish(S, topic, body, (size_t)n, id), 0);
}

/* Receives one message (waiting up to 1 s) and checks its body. */
static void expect(sp_bus_sub *sub, int i) {
    sp_bus_msg m;
    char want[32];
    snprintf(want, sizeof want, "m%d", i);
    int rc = sp_bus_recv(sub, &m, 1000);
    CHECK_EQ(rc, 1);
    CHECK_MEM(m.data, m.len, want);
    CHECK_EQ(((const char *)m.data)[m.len], '\0');
}

static int got_all;
static void ordered_reader(void *arg) {
    sp_bus_sub *sub = arg;
    char prev[SP_BUS_ID_MAX] = "0-0";
    for (int i = 0; i < 100; i++) {
        sp_bus_msg m;
        CHECK_EQ(sp_bus_recv(sub, &m, 1000), 1);
        char want[16];
        snprintf(want, sizeof want, "m%d", i);
        CHECK_MEM(m.data, m.len, want);
        CHECK_STR(m.topic, "t");
        CHECK(strchr(m.id, '-') != NULL);
        /* ids grow: ms first, then the sequence */
        unsigned long long pm, ps, cm, cs;
        CHECK_EQ(sscanf(prev, "%llu-%llu", &pm, &ps), 2);
        CHECK_EQ(sscanf(m.id, "%llu-%llu", &cm, &cs), 2);
        CHECK(cm > pm || (cm == pm && cs > ps));
        snprintf(prev, sizeof prev, "%s", m.id);
        CHECK_STR(sp_bus_last_id(sub), m.id);
    }
    sp_bus_unsubscribe(sub);
    got_all = 1;
}

static void publisher(void *arg) {
    for (int i = 0; i < 100; i++) {
        pub("t", i, NULL);
        if (i % 7 == 0)
            sp_sleep(1); /* the reader parks in between, and is woken */
    }
    pub("other", 0, NULL); /* another topic: not seen */
}

TEST(order_kept_and_ids_grow) {
    setup("memory");
    sp_bus_sub *sub = sp_bus_subscribe(S, "t", NULL);
    CHECK(sub != NULL);
    CHECK_EQ(sp_spawn(ordered_reader, sub), 0);
    CHECK_EQ(sp_spawn(publisher, NULL), 0);
    CHECK_EQ(sp_loop_run(L), 0);
    CHECK(got_all);
    teardown();
}

static void since_task(void *arg) {
    char ids[5][SP_BUS_ID_MAX];
    for (int i = 0; i < 5; i++)
        pub("s", i, ids[i]);
    sp_bus_sub *all = sp_bus_subscribe(S, "s", "0");
    sp_bus_sub *after = sp_bus_subscribe(S, "s", ids[1]);
    sp_bus_sub *now = sp_bus_subscribe(S, "s", NULL);
    CHECK(all && after && now);
    CHECK_STR(sp_bus_last_id(after), ids[1]);
    pub("s", 5, NULL); /* live, while the history is still unread */
    for (int i = 0; i <= 5; i++)
        expect(all, i);
    for (int i = 2; i <= 5; i++)
        expect(after, i);
    expect(now, 5);
    sp_bus_msg m;
    CHECK_EQ(sp_bus_recv(all, &m, 0), 0);
    CHECK_EQ(sp_bus_recv(now, &m, 0), 0);
    /* Coming back with the last id seen misses nothing in between. */
    char last[SP_BUS_ID_MAX];
    snprintf(last, sizeof last, "%s", sp_bus_last_id(after));
    sp_bus_unsubscribe(after);
    pub("s", 6, NULL);
    pub("s", 7, NULL);
    after = sp_bus_subscribe(S, "s", last);
    expect(after, 6);
    expect(after, 7);
    CHECK(sp_bus_subscribe(S, "s", "12x") == NULL);
    CHECK_EQ(errno, EINVAL);
    sp_bus_unsubscribe(all);
    sp_bus_unsubscribe(after);
    sp_bus_unsubscribe(now);
    got_all = 1;
}

TEST(since_id_reads_retained_history_then_live) {
    setup("memory");
    got_all = 0;
    CHECK_EQ(sp_spawn(since_task, NULL), 0);
    CHECK_EQ(sp_loop_run(L), 0);
    CHECK(got_all);
    teardown();
}

static void retention_task(void *arg) {
    for (int i = 0; i < 25; i++)
        pub("r", i, NULL);
    sp_bus_sub *sub = sp_bus_subscribe(S, "r", "0");
    for (int i = 15; i < 25; i++) /* only the newest 10 are kept */
        expect(sub, i);
    sp_bus_msg m;
    CHECK_EQ(sp_bus_recv(sub, &m, 0), 0);
    sp_bus_unsubscribe(sub);
    /* The byte limit too: 3 messages of 40 bytes in 100 keep the last 2. */
    char big[40];
    memset(big, 'x', sizeof big);
    for (int i = 0; i < 3; i++) {
        big[0] = (char)('a' + i);
        CHECK_EQ(sp_bus_publish(S, "rb", big, sizeof big, NULL), 0);
    }
    sub = sp_bus_subscribe(S, "rb", "0");
    CHECK_EQ(sp_bus_recv(sub, &m, 0), 1);
    CHECK_EQ(((const char *)m.data)[0], 'b');
    CHECK_EQ(sp_bus_recv(sub, &m, 0), 1);
    CHECK_EQ(((const char *)m.data)[0], 'c');
    CHECK_EQ(sp_bus_recv(sub, &m, 0), 0);
    sp_bus_unsubscribe(sub);
    got_all = 1;
}

TEST(retention_keeps_the_newest) {
    setup("memory?retain=10&retain_bytes=100");
    got_all = 0;
    CHECK_EQ(sp_spawn(retention_task, NULL), 0);
    CHECK_EQ(sp_loop_run(L), 0);
    CHECK(got_all);
    teardown();
}

/* stderr into a file, to read the log line back. */
static char *capture_stderr_begin(int *saved) {
    static char path[] = "/tmp/test_bus_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    fflush(stderr);
    *saved = dup(2);
    dup2(fd, 2);
    close(fd);
    return path;
}

static void capture_stderr_end(int saved, const char *path, char *out, size_t cap) {
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    int fd = open(path, O_RDONLY);
    ssize_t n = read(fd, out, cap - 1);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
}

static void slow_task(void *arg) {
    sp_bus_sub *slow = sp_bus_subscribe(S, "busy", NULL);
    sp_bus_sub *fast = sp_bus_subscribe(S, "busy", NULL);
    int saved;
    char *path = capture_stderr_begin(&saved);
    for (int i = 0; i < 10; i++) {
        pub("busy", i, NULL); /* never fails: the slow one is cut, not waited for */
        expect(fast, i);
    }
    char log[2048];
    capture_stderr_end(saved, path, log, sizeof log);
    CHECK(strstr(log, "topic \"busy\" was cut for being slow") != NULL);
    CHECK(strstr(log, "queue=4") != NULL);
    sp_bus_msg m;
    CHECK_EQ(sp_bus_recv(slow, &m, 0), -EPIPE);
    CHECK_EQ(sp_bus_recv(slow, &m, 1000), -EPIPE); /* dead for good */
    /* It can come back from its last id, from what is retained. */
    sp_bus_sub *again = sp_bus_subscribe(S, "busy", sp_bus_last_id(slow));
    for (int i = 0; i < 10; i++)
        expect(again, i);
    sp_bus_unsubscribe(slow);
    sp_bus_unsubscribe(fast);
    sp_bus_unsubscribe(again);
    got_all = 1;
}

TEST(slow_subscriber_is_cut_others_go_on) {
    setup("memory?queue=4");
    got_all = 0;
    CHECK_EQ(sp_spawn(slow_task, NULL), 0);
    CHECK_EQ(sp_loop_run(L), 0);
    CHECK(got_all);
    teardown();
}

TEST(queue_bytes_cut) {
    setup("memory?queue_bytes=100");
    sp_bus_sub *sub = sp_bus_subscribe(S, "qb", NULL);
    char big[60] = {0};
    int saved;
    char *path = capture_stderr_begin(&saved);
    CHECK_EQ(sp_bus_publish(S, "qb", big, 60, NULL), 0); /* an empty queue takes it */
    CHECK_EQ(sp_bus_publish(S, "qb", big, 60, NULL), 0); /* 120 > 100: cut */
    char log[2048];
    capture_stderr_end(saved, path, log, sizeof log);
    CHECK(strstr(log, "queue_bytes=100") != NULL);
    sp_bus_msg m;
    CHECK_EQ(sp_bus_recv(sub, &m, 0), -EPIPE);
    sp_bus_unsubscribe(sub);
    teardown();
}

TEST(message_size_limit) {
    setup("memory?max_message=100");
    char buf[101] = {0};
    CHECK_EQ(sp_bus_publish(S, "big", buf, 100, NULL), 0);
    CHECK_EQ(sp_bus_publish(S, "big", buf, 101, NULL), -EMSGSIZE);
    teardown();
    setup("memory"); /* the default: 1 MiB */
    char *huge = calloc(1, (1 << 20) + 1);
    CHECK_EQ(sp_bus_publish(S, "big", huge, 1 << 20, NULL), 0);
    CHECK_EQ(sp_bus_publish(S, "big", huge, (1 << 20) + 1, NULL), -EMSGSIZE);
    CHECK_EQ(sp_bus_publish(S, "big", "", 0, NULL), 0); /* empty is a message */
    free(huge);
    teardown();
}

static int64_t waited;
static int timeout_rc = 99;
static void timeout_task(void *arg) {
    sp_bus_sub *sub = sp_bus_subscribe(S, "quiet", NULL);
    sp_bus_msg m;
    CHECK_EQ(sp_bus_recv(sub, &m, 0), 0); /* only looks */
    int64_t t0 = sp_now_ms();
    timeout_rc = sp_bus_recv(sub, &m, 50);
    waited = sp_now_ms() - t0;
    sp_bus_unsubscribe(sub);
}

TEST(recv_times_out) {
    setup("memory");
    CHECK_EQ(sp_spawn(timeout_task, NULL), 0);
    CHECK_EQ(sp_loop_run(L), 0);
    CHECK_EQ(timeout_rc, 0);
    CHECK(waited >= 45 && waited < 1000);
    /* Outside a coroutine: nothing to wait with. */
    sp_bus_sub *sub = sp_bus_subscribe(S, "quiet", NULL);
    sp_bus_msg m;
    CHECK_EQ(sp_bus_recv(sub, &m, 100), -EPERM);
    sp_bus_unsubscribe(sub);
    teardown();
}

#define NSUBS 200
#define NMSGS 50
static int done_subs;
static void many_reader(void *arg) {
    sp_bus_sub *sub = arg;
    for (int i = 0; i < NMSGS; i++)
        expect(sub, i);
    sp_bus_unsubscribe(sub);
    done_subs++;
}
static void many_publisher(void *arg) {
    for (int i = 0; i < NMSGS; i++) {
        pub("fan", i, NULL);
        sp_yield();
    }
}

TEST(many_subscribers_each_get_everything_in_order) {
    setup("memory");
    for (int i = 0; i < NSUBS; i++) {
        sp_bus_sub *sub = sp_bus_subscribe(S, "fan", NULL);
        CHECK(sub != NULL);
        CHECK_EQ(sp_spawn(many_reader, sub), 0);
    }
    CHECK_EQ(sp_spawn(many_publisher, NULL), 0);
    CHECK_EQ(sp_loop_run(L), 0);
    CHECK_EQ(done_subs, NSUBS);
    teardown();
}

TEST(spec_and_argument_errors) {
    L = sp_loop_new(NULL);
    S = sp_server_new(NULL);
    CHECK_EQ(sp_bus_publish(S, "t", "x", 1, NULL), -ENXIO); /* not configured */
    CHECK(sp_bus_subscribe(S, "t", NULL) == NULL);
    CHECK_EQ(errno, ENXIO);
    const char *bad[] = {"",
                         "mem",
                         "memory?retain=0",
                         "memory?nope=1",
                         "memory?queue=x",
                         "redis://",
                         "redis://host:0",
                         "redis://host:99999",
                         "redis://h:1/x",
                         "redis://user@h",
                         "redis://[::1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ(sp_bus_configure(S, bad[i]), -EINVAL);
    CHECK_EQ(sp_bus_configure(S, "rediss://h:6380"), 0);
    CHECK_EQ(sp_bus_configure(S, "rediss://h:6380?tls_ca=/no/such/ca.pem"), -ENOENT);
    CHECK_EQ(sp_bus_configure(S, "redis://h?tls_ca=/x"), -EINVAL); /* TLS only */
    CHECK_EQ(sp_bus_configure(S, "redis://:pw@[::1]:7000/3?retain=5"), 0);
    CHECK_EQ(sp_bus_configure(S, "redis://localhost"), 0);
    CHECK_EQ(sp_bus_configure(S, "memory"), 0);
    CHECK_EQ(sp_bus_publish(S, "", "x", 1, NULL), -EINVAL);
    CHECK_EQ(sp_bus_publish(S, "a b", "x", 1, NULL), -EINVAL);
    char long_topic[SP_BUS_TOPIC_MAX + 2];
    memset(long_topic, 'a', sizeof long_topic - 1);
    long_topic[sizeof long_topic - 1] = '\0';
    CHECK_EQ(sp_bus_publish(S, long_topic, "x", 1, NULL), -EINVAL);
    long_topic[SP_BUS_TOPIC_MAX] = '\0';
    CHECK_EQ(sp_bus_publish(S, long_topic, "x", 1, NULL), 0);
    teardown();
}

/* Two processes forked after the configure, as workers are, share the
 * ring: one subscribes, the other publishes on two topics; the subscriber
 * gets its topic's messages in order and then all of them again from "0"
 * (history read from the ring), and a third, forked after all that, reads
 * the same history. Each child exits 0 when its checks passed. */
static int ready[2];
static int child_role; /* 0 subscriber, 1 publisher, 2 late reader */

static void shm_subscriber(void *arg) {
    sp_bus_sub *sub = sp_bus_subscribe(S, "x", NULL);
    CHECK(sub != NULL);
    CHECK_EQ(write(ready[1], "r", 1), 1);
    for (int i = 0; i < 200; i++)
        expect(sub, i);
    sp_bus_unsubscribe(sub);
    sub = sp_bus_subscribe(S, "x", "0");
    CHECK(sub != NULL);
    for (int i = 0; i < 200; i++)
        expect(sub, i);
    sp_bus_msg m;
    CHECK_EQ(sp_bus_recv(sub, &m, 0), 0);
    sp_bus_unsubscribe(sub);
    got_all = 1;
}

static void shm_publisher(void *arg) {
    char c;
    CHECK_EQ(read(ready[0], &c, 1), 1); /* the subscriber is in */
    for (int i = 0; i < 200; i++) {
        pub("x", i, NULL);
        pub("y", i, NULL); /* another topic, interleaved: not seen */
        if (i % 16 == 0)
            sp_sleep(2); /* the other's reader sleeps in between, and is woken */
    }
    got_all = 1;
}

static void shm_late(void *arg) {
    sp_bus_sub *sub = sp_bus_subscribe(S, "y", "0");
    CHECK(sub != NULL);
    for (int i = 0; i < 200; i++)
        expect(sub, i);
    sp_bus_unsubscribe(sub);
    got_all = 1;
}

/* The role, then the loop's end: the bus's reader stays parked. */
static void shm_role(void *arg) {
    void (*roles[])(void *) = {shm_subscriber, shm_publisher, shm_late};
    roles[child_role](NULL);
    sp_loop_stop((sp_loop *)loop_current());
}

static int shm_drive(sp_server *s, void *ud) {
    got_all = 0;
    CHECK_EQ(sp_spawn(shm_role, NULL), 0);
    CHECK_EQ(sp_loop_run((sp_loop *)loop_current()), 0);
    return got_all ? 0 : -EIO;
}

static pid_t fork_role(int role) {
    pid_t pid = fork();
    if (pid == 0) {
        child_role = role;
        _exit(sp_server_run(S) == 0 ? 0 : 3);
    }
    return pid;
}

TEST(memory_bus_spans_processes_forked_after_it) {
    S = sp_server_new(NULL);
    CHECK_EQ(sp_bus_configure(S, "memory"), 0);
    server_set_drive(S, shm_drive, NULL);
    CHECK_EQ(pipe(ready), 0);
    pid_t kids[2] = {fork_role(0), fork_role(1)};
    int st[3];
    waitpid(kids[0], &st[0], 0);
    waitpid(kids[1], &st[1], 0);
    CHECK(WIFEXITED(st[0]) && WEXITSTATUS(st[0]) == 0);
    CHECK(WIFEXITED(st[1]) && WEXITSTATUS(st[1]) == 0);
    pid_t late = fork_role(2);
    waitpid(late, &st[2], 0);
    CHECK(WIFEXITED(st[2]) && WEXITSTATUS(st[2]) == 0);
    close(ready[0]);
    close(ready[1]);
    sp_server_free(S);
}
