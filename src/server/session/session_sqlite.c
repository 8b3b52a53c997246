/* session_sqlite.c — the SQLite session store: one database file shared by
 * every worker of a machine (WAL mode, so readers do not wait for the
 * writer), one connection per worker opened after the fork. Every call may
 * sleep on a busy database, so it runs on the thread pool, never the loop. */
#include "server/session/session_store.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

enum { Q_LOAD, Q_SAVE, Q_DEL, Q_PURGE, NQ };

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
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(d->h,
                          "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
                          "CREATE TABLE IF NOT EXISTS spindle_sessions (id TEXT PRIMARY KEY,"
                          " data BLOB NOT NULL, expires INTEGER NOT NULL) WITHOUT ROWID;",
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

const sess_store_ops sess_sqlite_ops = {"sqlite",  1,        lite_open, lite_load,
                                        lite_save, lite_del, lite_close};
