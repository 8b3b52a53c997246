/* test_session_writes.c — grouped store calls (session_writes.c): writes
 * made at once by many coroutines go to the store in few transactions, in
 * the order they were made, each writer told its own result; a failing
 * write is rolled back with its group and the others redone alone; the
 * group limit; outside a task -EPERM; a store with a group op (Redis's
 * pipelining) gets loads and writes together, and a failed group is run
 * again call by call; and the same against the real SQLite store. */
#include "server/session/session.h"
#include "spindle.h"
#include "unit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* ---- a store that keeps a log of what it committed ---------------------- */

enum { LOG_MAX = 1024 };
static struct {
    char done[LOG_MAX][40]; /* committed writes, in order: "S:id" or "D:id" */
    int ndone;
    char open[LOG_MAX][40]; /* written inside the running transaction */
    int nopen, in_tx;
    int begins, commits, rollbacks, alone;
} fk;

static void fk_note(const char *op, const char *id) {
    if (fk.in_tx) {
        snprintf(fk.open[fk.nopen++], 40, "%s:%s", op, id);
    } else {
        snprintf(fk.done[fk.ndone++], 40, "%s:%s", op, id);
        fk.alone++;
    }
}
static int fk_open(sess_store *st) {
    st->impl = &fk;
    return 0;
}
static int fk_load(sess_store *st, const char *id, int64_t now, char **blob, size_t *len) {
    return -ENOENT;
}
static int fk_save(sess_store *st, const char *id, const char *blob, size_t len, int64_t expiry,
                   int64_t now) {
    if (!strcmp(id, "bad"))
        return -EIO;
    fk_note("S", id);
    return 0;
}
static int fk_del(sess_store *st, const char *id) {
    fk_note("D", id);
    return 0;
}
static void fk_close(sess_store *st) {
    st->impl = NULL;
}
static int fk_begin(sess_store *st) {
    CHECK(!fk.in_tx);
    fk.begins++;
    fk.in_tx = 1;
    fk.nopen = 0;
    return 0;
}
static int fk_end(sess_store *st, int ok) {
    CHECK(fk.in_tx);
    fk.in_tx = 0;
    if (!ok) {
        fk.rollbacks++;
        return 0;
    }
    fk.commits++;
    for (int i = 0; i < fk.nopen; i++)
        memcpy(fk.done[fk.ndone++], fk.open[i], 40);
    return 0;
}
static const sess_store_ops fk_ops = {
    .name = "fake",
    .blocking = 1,
    .open = fk_open,
    .load = fk_load,
    .save = fk_save,
    .del = fk_del,
    .close = fk_close,
    .begin = fk_begin,
    .end = fk_end,
};

static sess_cfg cfg;

static void cfg_init(const sess_store_ops *ops, const char *where) {
    memset(&cfg, 0, sizeof cfg);
    memset(&fk, 0, sizeof fk);
    cfg.store.ops = ops;
    cfg.store.where = where ? strdup(where) : NULL;
    pthread_mutex_init(&cfg.store.mu, NULL);
}

/* ---- writers: one coroutine a write ------------------------------------- */

typedef struct writer {
    char id[40];
    const char *value; /* NULL: a delete */
    int rc;
} writer;

static void write_task(void *arg) {
    writer *w = arg;
    w->rc = w->value ? sess_store_save(&cfg, w->id, w->value, strlen(w->value) + 1, 2000000000, 100)
                     : sess_store_del(&cfg, w->id);
}

/* Spawns fn on each of n elements of size bytes at once (they run in
 * order) and runs the loop. */
static void run_all(void (*fn)(void *), void *base, size_t size, int n) {
    sp_loop *l = sp_loop_new(NULL);
    CHECK(l != NULL);
    for (int i = 0; i < n; i++)
        CHECK_EQ(sp_spawn(fn, (char *)base + (size_t)i * size), 0);
    CHECK_EQ(sp_loop_run(l), 0);
    sp_loop_free(l);
}

static void run_writers(writer *w, int n) {
    run_all(write_task, w, sizeof *w, n);
}

TEST(writes_at_once_share_one_transaction_in_order) {
    cfg_init(&fk_ops, NULL);
    enum { N = 50 };
    static writer w[N];
    for (int i = 0; i < N; i++)
        w[i] = (writer){.value = i % 7 == 3 ? NULL : "v"};
    for (int i = 0; i < N; i++)
        snprintf(w[i].id, sizeof w[i].id, "id%02d", i);
    run_writers(w, N);
    for (int i = 0; i < N; i++)
        CHECK_EQ(w[i].rc, 0);
    /* The first writer finds no group running and goes alone; the other 49
     * queue behind it and go together, in one transaction. */
    CHECK_EQ(cfg.writes.groups, 2);
    CHECK_EQ(cfg.writes.writes, N);
    CHECK_EQ(fk.alone, 1);
    CHECK_EQ(fk.begins, 1);
    CHECK_EQ(fk.commits, 1);
    CHECK_EQ(fk.ndone, N);
    for (int i = 0; i < N; i++) {
        char want[48];
        snprintf(want, sizeof want, "%s:%.39s", w[i].value ? "S" : "D", w[i].id);
        CHECK_STR(fk.done[i], want);
    }
    CHECK(cfg.writes.head == NULL && !cfg.writes.busy);
}

TEST(a_failing_write_fails_alone) {
    cfg_init(&fk_ops, NULL);
    enum { N = 10 };
    static writer w[N];
    for (int i = 0; i < N; i++)
        w[i] = (writer){.value = "v"};
    for (int i = 0; i < N; i++)
        snprintf(w[i].id, sizeof w[i].id, i == 6 ? "bad" : "id%d", i);
    run_writers(w, N);
    /* The group of 9 (writers 1-9) met "bad", was rolled back, and each of
     * its writes ran again alone: only the bad one fails. */
    CHECK_EQ(fk.begins, 1);
    CHECK_EQ(fk.rollbacks, 1);
    CHECK_EQ(fk.commits, 0);
    for (int i = 0; i < N; i++)
        CHECK_EQ(w[i].rc, i == 6 ? -EIO : 0);
    CHECK_EQ(fk.ndone, N - 1);
    for (int i = 0, k = 0; i < N; i++) {
        if (i == 6)
            continue;
        char want[48];
        snprintf(want, sizeof want, "S:id%d", i);
        CHECK_STR(fk.done[k++], want);
    }
}

TEST(groups_are_bounded) {
    cfg_init(&fk_ops, NULL);
    enum { N = 1 + SESS_WRITES_GROUP_MAX + 43 };
    static writer w[N];
    for (int i = 0; i < N; i++) {
        w[i] = (writer){.value = "v"};
        snprintf(w[i].id, sizeof w[i].id, "id%d", i);
    }
    run_writers(w, N);
    for (int i = 0; i < N; i++)
        CHECK_EQ(w[i].rc, 0);
    CHECK_EQ(cfg.writes.groups, 3); /* 1 alone, then 256, then 43 */
    CHECK_EQ(fk.commits, 2);
    CHECK_EQ(fk.ndone, N);
    for (int i = 0; i < N; i++) {
        char want[48];
        snprintf(want, sizeof want, "S:id%d", i);
        CHECK_STR(fk.done[i], want);
    }
}

TEST(writes_outside_a_task_are_refused) {
    cfg_init(&fk_ops, NULL);
    CHECK_EQ(sess_store_save(&cfg, "x", "v", 2, 2000000000, 100), -EPERM);
    CHECK_EQ(sess_store_del(&cfg, "x"), -EPERM);
    CHECK_EQ(fk.ndone, 0);
}

/* ---- a store with a group op: one round trip for loads and writes -------- */

static struct { int groups, sizes[8], alone_loads, alone_saves; } gk;

static int gk_load(sess_store *st, const char *id, int64_t now, char **blob, size_t *len) {
    gk.alone_loads++;
    if (strncmp(id, "have", 4))
        return -ENOENT;
    *blob = strdup(id);
    *len = strlen(id) + 1;
    return 0;
}
static int gk_save(sess_store *st, const char *id, const char *blob, size_t len, int64_t expiry,
                   int64_t now) {
    gk.alone_saves++;
    return strcmp(id, "bad") ? 0 : -EIO;
}
/* Answers every load itself ("have..." ids are found), unless the group
 * holds the id "bad": then it fails as a whole, as a refused pipeline does. */
static int gk_group(sess_store *st, sess_write *first) {
    int n = 0, bad = 0;
    for (sess_write *w = first; w; w = w->next, n++)
        bad |= !strcmp(w->id, "bad");
    gk.sizes[gk.groups++ & 7] = n;
    if (bad)
        return -EPROTO;
    for (sess_write *w = first; w; w = w->next)
        if (w->op == SESS_WRITE_LOAD && !strncmp(w->id, "have", 4)) {
            w->out = strdup(w->id);
            w->out_len = strlen(w->id) + 1;
        } else if (w->op == SESS_WRITE_LOAD) {
            w->rc = -ENOENT;
        }
    return 0;
}
static const sess_store_ops gk_ops = {
    .name = "grouping",
    .blocking = 1,
    .open = fk_open,
    .load = gk_load,
    .save = gk_save,
    .del = fk_del,
    .close = fk_close,
    .group = gk_group,
};

typedef struct caller {
    char id[40];
    int load; /* 1: a load, else a save */
    char *blob;
    size_t len;
    int rc;
} caller;

static void call_task(void *arg) {
    caller *c = arg;
    c->rc = c->load ? sess_store_load(&cfg, c->id, 100, &c->blob, &c->len)
                    : sess_store_save(&cfg, c->id, "v", 2, 2000000000, 100);
}

static void run_callers(caller *c, int n) {
    run_all(call_task, c, sizeof *c, n);
}

/* Callers 1..n-1: even ones load ("have"+i found, every 3rd one missing),
 * odd ones save; caller 0 goes alone first. */
static void callers_init(caller *c, int n, int bad) {
    for (int i = 0; i < n; i++) {
        c[i] = (caller){.load = i % 2 == 0};
        snprintf(c[i].id, sizeof c[i].id, "%s%d", i % 3 ? "have" : "none", i);
    }
    if (bad >= 0)
        snprintf(c[bad].id, sizeof c[bad].id, "bad");
}

static void check_callers(caller *c, int n, int bad) {
    for (int i = 0; i < n; i++) {
        if (i == bad) {
            CHECK_EQ(c[i].rc, -EIO);
        } else if (!c[i].load) {
            CHECK_EQ(c[i].rc, 0);
        } else if (i % 3) {
            CHECK_EQ(c[i].rc, 0);
            CHECK_STR(c[i].blob, c[i].id);
            CHECK_EQ(c[i].len, strlen(c[i].id) + 1);
        } else {
            CHECK_EQ(c[i].rc, -ENOENT);
            CHECK(c[i].blob == NULL);
        }
        free(c[i].blob);
    }
}

TEST(a_group_op_takes_loads_and_writes_in_one_call) {
    cfg_init(&gk_ops, NULL);
    memset(&gk, 0, sizeof gk);
    enum { N = 21 };
    static caller c[N];
    callers_init(c, N, -1);
    run_callers(c, N);
    /* Caller 0 alone (a load, through the store's own load), then the
     * other 20 in one group call: nothing else ran alone. */
    CHECK_EQ(gk.groups, 1);
    CHECK_EQ(gk.sizes[0], N - 1);
    CHECK_EQ(gk.alone_loads, 1);
    CHECK_EQ(gk.alone_saves, 0);
    check_callers(c, N, -1);
}

TEST(a_failed_group_runs_again_call_by_call) {
    cfg_init(&gk_ops, NULL);
    memset(&gk, 0, sizeof gk);
    enum { N = 21 };
    static caller c[N];
    callers_init(c, N, 7);
    run_callers(c, N);
    CHECK_EQ(gk.groups, 1);
    CHECK_EQ(gk.alone_loads, 1 + 10); /* caller 0, then the group's 10 loads */
    CHECK_EQ(gk.alone_saves, 10);
    check_callers(c, N, 7); /* only the bad save fails; every load has its own answer */
}

/* ---- the real SQLite store ---------------------------------------------- */

typedef struct reader {
    const char *id;
    char *blob;
    size_t len;
    int rc;
} reader;

static void read_task(void *arg) {
    reader *r = arg;
    r->rc = sess_store_load(&cfg, r->id, 100, &r->blob, &r->len);
}

TEST(sqlite_writes_at_once_all_land) {
    char path[] = "/tmp/spindle-writes-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    unlink(path);
    cfg_init(&sess_sqlite_ops, path);
    enum { N = 300 };
    static writer w[N + 2];
    static char values[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(values[i], sizeof values[i], "v%d", i);
        w[i] = (writer){.value = values[i]};
        snprintf(w[i].id, sizeof w[i].id, "id%03d", i);
    }
    /* In order within a group: id000 is saved again last, and id001
     * deleted after its save. */
    w[N] = (writer){.id = "id000", .value = "again"};
    w[N + 1] = (writer){.id = "id001", .value = NULL};
    run_writers(w, N + 2);
    for (int i = 0; i < N + 2; i++)
        CHECK_EQ(w[i].rc, 0);
    CHECK(cfg.writes.groups >= 2 && cfg.writes.groups <= 4);
    CHECK_EQ(cfg.writes.writes, N + 2);
    static reader r[N];
    for (int i = 0; i < N; i++)
        r[i] = (reader){.id = w[i].id};
    sp_loop *l = sp_loop_new(NULL);
    for (int i = 0; i < N; i++)
        CHECK_EQ(sp_spawn(read_task, &r[i]), 0);
    CHECK_EQ(sp_loop_run(l), 0);
    sp_loop_free(l);
    CHECK_EQ(r[0].rc, 0);
    CHECK_STR(r[0].blob, "again");
    CHECK_EQ(r[1].rc, -ENOENT);
    for (int i = 2; i < N; i++) {
        CHECK_EQ(r[i].rc, 0);
        CHECK_STR(r[i].blob, values[i]);
    }
    for (int i = 0; i < N; i++)
        free(r[i].blob);
    cfg.store.ops->close(&cfg.store);
    char side[sizeof path + 8];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}
