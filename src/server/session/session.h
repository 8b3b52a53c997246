/* session.h — sessions' internal side, shared by session_config.c (the
 * per-server configuration: store, signing key, worker start-up, calls on
 * the thread pool), session_writes.c (a blocking store's writes grouped)
 * and session.c (sp_session_of and the handler's API). */
#ifndef SPINDLE_SESSION_H
#define SPINDLE_SESSION_H

#include "server/session/session_cookie.h"
#include "server/session/session_store.h"
#include "server/session/session_writes.h"
#include "spindle.h"

#include <stddef.h>
#include <stdint.h>

#define SESS_DEFAULT_TTL 86400 /* seconds: one day */

typedef struct sess_cfg {
    sess_store store;
    sess_writes writes; /* this worker's writes waiting for a group */
    uint8_t key[64];    /* the HMAC key (a longer secret is hashed to 32 bytes) */
    size_t key_len;
    int64_t ttl;       /* seconds */
    int cookie_secure; /* Secure on every cookie, even over plain http */
    /* Session objects of finished requests, for reuse (session.c). */
    sp_session *spare;
    size_t nspare;
} sess_cfg;

/* The configuration of server s, or NULL if it has none. */
sess_cfg *sess_cfg_of(const sp_server *s);

/* Frees a chain of spare session objects (session.c). */
void sess_spare_free(sp_session *s);

/* In this process: drops a handle inherited through fork, opens one if
 * none. Call with st->mu held. 0 or -errno. */
int sess_store_open_here(sess_store *st);

/* Store calls for a handler's coroutine: on the thread pool for a blocking
 * store (opening it in this process first if needed), inline for memory.
 * Return what the store's op returns (session_store.h). Yield. */
int sess_store_load(sess_cfg *c, const char *id, int64_t now, char **blob, size_t *len);
int sess_store_save(sess_cfg *c, const char *id, const char *blob, size_t len, int64_t expiry,
                    int64_t now);
int sess_store_del(sess_cfg *c, const char *id);

/* Opens and closes s's SQLite database once (creating it), so a bad path
 * is reported at start: called by the command line after --user, so the
 * file belongs to the user the workers run as (each worker opens its own
 * connection after the fork). 0 (also without sessions or for another
 * store) or -errno, logged. */
int sess_check_store(sp_server *s);

/* Parses a store spec: "memory", "sqlite:PATH", or a Redis URL (base/
 * redis_url.h: redis[s]://[[USER]:PASSWORD@]HOST[:PORT][/DB], then
 * ?tls_ca=PATH for rediss://). Fills st's ops, where (malloc'd: the path
 * or the host), port, url and tls_ca. 0, -EINVAL or -ENOMEM. */
int sess_store_parse(const char *spec, sess_store *st);
/* Frees what sess_store_parse filled in. */
void sess_store_spec_free(sess_store *st);

/* Reads a secret file into key: trailing whitespace is not part of it; at
 * least 16 bytes must remain; longer than 64 is hashed. 0 or -errno. */
int sess_key_from_file(const char *path, uint8_t key[64], size_t *key_len);

#endif
