/* session_sqlite.c — the SQLite session store: one database file shared by
 * every worker of a machine (WAL mode, so readers do not wait for the
 * writer), one connection per worker opened after the fork. Every call may
 * sleep on a busy database, so it runs on the thread pool, never the loop;
 * writes come in groups, one transaction each (begin/end, session_writes.c). */
#include "server/session/session_store.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

enum { Q_LOAD, Q_SAVE, Q_DEL, Q_PURGE, Q_BEGIN, Q_COMMIT, Q_ROLLBACK, NQ };

typedef struct db {
    sqlite3 *h;
    sqlite3_stmt *q[NQ];
} db;

static const char *const sql[NQ] = {
    "SELECT data FROM spindle_sessions WHERE id = ?1 AND expires > ?2",
    "INSERT INTO spindle_sessions (id, data, expires) VALUES (?1, ?2, ?3) "
    "ON CONFLICT (id) DO UPDATE SET data = excluded.data, expires = excluded.expires",
    "DELETE FROM spindle_sessions WHERE id = ?1",
    "DELETE FROM spindle_sessions WHERE expires <= ?1",
    /* IMMEDIATE: the write lock at the start, so a group never fails on a
     * lock upgrade half-way (busy_timeout waits for another worker's). */
    "BEGIN IMMEDIATE",
    "COMMIT",
    "ROLLBACK",
};

static int to_errno(int rc) {
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return -EBUSY;
    case SQLITE_NOMEM:
        return -ENOMEM;
    case SQLITE_CANTOPEN:
        return -ENOENT;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
        return -EACCES;
    case SQLITE_FULL:
        return -ENOSPC;
    default:
        return -EIO;
    }
}

static void lite_close(sess_store *st) {
    db *d = st->impl;
    if (!d)
        return;
    for (int i = 0; i < NQ; i++)
        sqlite3_finalize(d->q[i]);
    sqlite3_close(d->h);
    free(d);
    st->impl = NULL;
}

static int lite_open(sess_store *st) {
    if (st->impl)
        return 0;
    db *d = calloc(1, sizeof *d);
    if (!d)
        return -ENOMEM;
    st->impl = d;
    int rc = sqlite3_open_v2(st->where, &d->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_busy_timeout(d->h, 5000);
    /* A checkpoint (copying the WAL into the database) syncs the disk
     * twice, on the thread a group waits on: one each 4,000 pages (a WAL of
     * up to 16 MB) instead of SQLite's 1,000 took 15 % off the CPU a new
     * session costs (bench/README.md), as a page written again and again
     * between two checkpoints is copied once. The index on expires keeps
     * the periodic purge from reading the whole table. */
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(d->h,
                          "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
                          "PRAGMA wal_autocheckpoint = 4000;"
                          "CREATE TABLE IF NOT EXISTS spindle_sessions (id TEXT PRIMARY KEY,"
                          " data BLOB NOT NULL, expires INTEGER NOT NULL) WITHOUT ROWID;"
                          "CREATE INDEX IF NOT EXISTS spindle_sessions_expires"
                          " ON spindle_sessions (expires);",
                          NULL, NULL, NULL);
    for (int i = 0; rc == SQLITE_OK && i < NQ; i++)
        rc = sqlite3_prepare_v3(d->h, sql[i], -1, SQLITE_PREPARE_PERSISTENT, &d->q[i], NULL);
    if (rc != SQLITE_OK) {
        int err = to_errno(rc);
        lite_close(st);
        return err;
    }
    return 0;
}

/* Runs a statement with no rows to read. */
static int run(sqlite3_stmt *q) {
    int rc = sqlite3_step(q);
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return rc == SQLITE_DONE ? 0 : to_errno(rc);
}

static int lite_load(sess_store *st, const char *id, int64_t now, char **blob, size_t *len) {
    db *d = st->impl;
    sqlite3_stmt *q = d->q[Q_LOAD];
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, now);
    int rc = sqlite3_step(q), out = -ENOENT;
    if (rc == SQLITE_ROW) {
        const void *p = sqlite3_column_blob(q, 0);
        int n = sqlite3_column_bytes(q, 0);
        *len = (size_t)n;
        *blob = NULL;
        out = 0;
        if (n > 0 && !(*blob = malloc((size_t)n)))
            out = -ENOMEM;
        else if (n > 0)
            memcpy(*blob, p, (size_t)n);
    } else if (rc != SQLITE_DONE) {
        out = to_errno(rc);
    }
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    return out;
}

static int lite_save(sess_store *st, const char *id, const char *blob, size_t len, int64_t expiry,
                     int64_t now) {
    db *d = st->impl;
    if (++st->saves % 1024 == 0) { /* now and then, forget expired sessions */
        sqlite3_bind_int64(d->q[Q_PURGE], 1, now);
        run(d->q[Q_PURGE]);
    }
    sqlite3_stmt *q = d->q[Q_SAVE];
    sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_blob(q, 2, len ? blob : "", (int)len, SQLITE_STATIC);
    sqlite3_bind_int64(q, 3, expiry);
    return run(q);
}

static int lite_del(sess_store *st, const char *id) {
    db *d = st->impl;
    sqlite3_bind_text(d->q[Q_DEL], 1, id, -1, SQLITE_STATIC);
    return run(d->q[Q_DEL]);
}

static int lite_begin(sess_store *st) {
    db *d = st->impl;
    return run(d->q[Q_BEGIN]);
}

static int lite_end(sess_store *st, int ok) {
    db *d = st->impl;
    if (sqlite3_get_autocommit(d->h))
        return ok ? -EIO : 0; /* SQLite rolled back on its own (a full disk, I/O) */
    int rc = run(d->q[ok ? Q_COMMIT : Q_ROLLBACK]);
    if (rc < 0 && !sqlite3_get_autocommit(d->h))
        run(d->q[Q_ROLLBACK]); /* a commit that failed leaves it open */
    return rc;
}

const sess_store_ops sess_sqlite_ops = {
    .name = "sqlite",
    .blocking = 1,
    .open = lite_open,
    .load = lite_load,
    .save = lite_save,
    .del = lite_del,
    .close = lite_close,
    .begin = lite_begin,
    .end = lite_end,
};
