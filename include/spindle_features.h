/* spindle_features.h — the public C API of the features built on the
 * handler API: WebSockets, static files and sessions. Included by
 * spindle.h (include that one); kept apart so each header stays readable.
 * The same conventions hold: negative errno values, contracts at each
 * declaration, "Yields" where a call may park the coroutine. */
#ifndef SPINDLE_FEATURES_H
#define SPINDLE_FEATURES_H

#ifndef SPINDLE_H
#error "include spindle.h, not spindle_features.h"
#endif

/* WebSockets (RFC 6455), server side, with permessage-deflate (RFC 7692)
 * when the client offers it (see sp_ws_deflate). A handler calls
 * sp_ws_upgrade, then sp_ws_recv / sp_ws_send until the conversation ends,
 * then returns; the connection is closed after the handler returns (it is
 * never reused for HTTP). The sp_ws lives until then. Other coroutines may
 * sp_ws_send on it (a broadcast) concurrently with the handler's
 * sp_ws_recv; sends are serialized whole frames. They must be done with it
 * before the handler returns: when it does, sends still waiting fail with
 * -EPIPE before it is freed. Only one coroutine receives (sp_ws_recv,
 * sp_ws_close): the handler. */
typedef struct sp_ws sp_ws;

enum { SP_WS_TEXT = 1, SP_WS_BINARY = 2, SP_WS_CLOSE = 8, SP_WS_PING = 9, SP_WS_PONG = 10 };

typedef struct sp_ws_options {
    size_t max_message;   /* reassembled message bytes; 0 = 1 MiB (1009 beyond);
                             SIZE_MAX: what memory allows (else 1009) */
    int close_timeout_ms; /* waiting for the peer's close frame; 0 = 2000 */
    int ping_interval_ms; /* 0 = the server's ws_ping_interval_ms; < 0 never */
    int idle_timeout_ms;  /* 0 = the server's ws_idle_timeout_ms; < 0 never */
} sp_ws_options;

/* A whole message: data valid until the next sp_ws_recv or the handler's
 * return. Text is valid UTF-8 (and NUL-terminated, not counted in len). */
typedef struct sp_ws_msg {
    int opcode; /* SP_WS_TEXT or SP_WS_BINARY */
    const void *data;
    size_t len;
} sp_ws_msg;

/* permessage-deflate for s's upgrades from now on: window_bits 9..15 is
 * the most LZ77 window (2^bits bytes) each side compresses with where
 * RFC 7692 lets the server choose (its own always; the client's when it
 * offers client_max_window_bits, as Chrome does), 0 turns it off;
 * mem_level 1..9 is zlib's (0: 5). Default: on, 12 and 5 — about 50 KB
 * per compressing socket once it has sent and received (15 and 8, zlib's
 * own defaults, cost about 300 KB). An idle socket whose side has no
 * context takeover holds no zlib state. The message limit (max_message)
 * counts inflated bytes. A message sent to several sockets one after the
 * other (a broadcast) is compressed once per window size, from an empty
 * window. Programs using WebSockets link zlib (-lz). 0 or -EINVAL. Does
 * not yield. */
SP_API int sp_ws_deflate(sp_server *s, int window_bits, int mem_level);

/* Checks the handshake (GET, HTTP/1.1, Upgrade: websocket, Connection:
 * upgrade, Sec-WebSocket-Version: 13, a 16-byte base64 Sec-WebSocket-Key,
 * no request body) and answers 101 Switching Protocols with the
 * Sec-WebSocket-Accept key, the Sec-WebSocket-Extensions that accepts
 * the first permessage-deflate offer it can (then a handler's own
 * Sec-WebSocket-Extensions is dropped), plus any headers the handler added
 * with sp_res_header (e.g. Sec-WebSocket-Protocol). opt may be NULL. Returns
 * the WebSocket, or NULL with errno: EINVAL (not a valid upgrade, or a
 * request on an HTTP/2 stream, which has no Upgrade: the response was not
 * touched, the handler may answer 400), EALREADY (a
 * response was already started), ENOMEM, or another errno if the 101 could
 * not be sent (the connection will be closed). On a version mismatch it
 * adds "Sec-WebSocket-Version: 13" to the response, as RFC 6455 asks; the
 * handler then answers 426 or 400. Yields. */
SP_API sp_ws *sp_ws_upgrade(sp_req *req, sp_res *res, const sp_ws_options *opt);

/* Waits for the next whole message (yields). Pings are answered with pongs
 * and pongs dropped along the way. While the handler waits here, a peer
 * silent for ping_interval_ms is pinged (again after each such stretch);
 * one silent for idle_timeout_ms that has had idle - ping ms to answer a
 * ping is closed with 1001 "going away", whatever timeout_ms says (-1 is
 * bounded too). Returns 0 with *out filled, or:
 * -EPIPE: the connection closed with the closing handshake (the peer's
 *   close was answered, or ours was answered); see sp_ws_close_code;
 * -ETIMEDOUT: nothing whole within timeout_ms (the connection stays
 *   usable; a partly received message is kept);
 * -EPROTO, -EILSEQ, -EMSGSIZE: the peer broke the protocol, sent invalid
 *   UTF-8 in text, or a message beyond max_message: a close with 1002,
 *   1007 or 1009 was sent and the connection is done;
 * -ECONNABORTED: the peer was silent for the idle timeout: a close with
 *   1001 was sent and the connection is done;
 * -ECONNRESET: the TCP connection went away without a close (1006), or a
 *   send on it failed or ran out of time (sp_ws_send_timeout);
 * -ESHUTDOWN: the server is stopping: a close with 1001 was sent;
 * -EINTR: sp_ws_interrupt ended the wait (the connection stays usable). */
SP_API int sp_ws_recv(sp_ws *ws, sp_ws_msg *out, int64_t timeout_ms);

/* Ends the handler's sp_ws_recv, waiting now or the next one, with -EINTR:
 * the connection stays usable (as after -ETIMEDOUT), so the handler can
 * sp_ws_close it, the one receiver's call, when another coroutine asked
 * for the close. Does not yield; from any coroutine of the loop or the
 * loop's own stack. */
SP_API void sp_ws_interrupt(sp_ws *ws);

/* Sends one unfragmented frame: SP_WS_TEXT (data must be UTF-8: -EILSEQ),
 * SP_WS_BINARY, SP_WS_PING or SP_WS_PONG (at most 125 bytes: -EMSGSIZE).
 * 0 or -errno: -EPIPE (closed or closing), -ETIMEDOUT (the server's send
 * timeout: the connection is failed), -EINVAL (opcode). Yields while the
 * socket is full or another coroutine is sending. */
SP_API int sp_ws_send(sp_ws *ws, int opcode, const void *data, size_t len);

/* sp_ws_send waiting at most timeout_ms (0: not at all, only what the
 * socket takes at once; < 0: the server's send timeout) for the socket and
 * another coroutine's send: for a broadcast that must never wait on one
 * slow peer. When the time runs out the frame may be partly out, so the
 * connection is failed: -ETIMEDOUT, and the handler's sp_ws_recv returns
 * -ECONNRESET at once (close code 1006). Yields (until timeout_ms). */
SP_API int sp_ws_send_timeout(sp_ws *ws, int opcode, const void *data, size_t len,
                              int64_t timeout_ms);

/* Starts the closing handshake: sends a close frame with code (1000..4999,
 * not a reserved one: -EINVAL; 0 sends none) and reason (UTF-8, at most
 * 123 bytes; NULL for none), then reads and drops frames until the peer's
 * close arrives or close_timeout_ms passes. 0, or -errno if the frame
 * could not be sent; -EPIPE if already closed. Yields. */
SP_API int sp_ws_close(sp_ws *ws, uint16_t code, const char *reason);

/* The code that ended the conversation: the peer's (1005 if its close
 * frame had none), ours when we failed the connection (1002, 1007, 1009,
 * 1001), 1006 if it ended without a close frame; 0 while open. */
SP_API int sp_ws_close_code(const sp_ws *ws);

/* ---- Static files ----------------------------------------------------------
 * A directory served for GET and HEAD (RFC 9110): bodies with sendfile;
 * one byte range per request (206 with Content-Range; 416 with "bytes
 * * /SIZE" when unsatisfiable; several ranges get the whole file, 200);
 * If-Range (entity-tag or date); a strong ETag from size and mtime (ns) and
 * Last-Modified, with If-Match / If-Unmodified-Since (412) and If-None-
 * Match (wins over If-Modified-Since) → 304; Content-Type from the
 * extension (a built-in table, /etc/mime.types overriding it, read here);
 * a directory's index.html (no listings; a directory path without its
 * trailing slash is redirected, 301, to the slash form); FILE.gz sent with
 * Content-Encoding: gzip and Vary: Accept-Encoding when the client accepts
 * gzip (q > 0). Files are opened beneath the directory with openat2
 * (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) — on kernels without it, a
 * component walk that follows no symlink at all — so a request never
 * leaves it: "..", "%2F" inside a segment, and symlinks out of the
 * directory are 404. Every path segment starting with '.' (".git", ".env",
 * ".well-known" too) is 404. Devices, FIFOs and sockets are 404,
 * unreadable files 403. File I/O runs on the loop (a cold disk stalls it).
 */

/* Serves files under dir for GET/HEAD requests whose normalized path starts
 * with prefix ("/" for all; "/static" and "/static/" both mean the
 * directory at "/static/"): the rest of the path, percent-decoded, names a
 * file under dir. Added as a prefix route, so routes added earlier win;
 * other methods get 405 with Allow. dir is opened now (relative to the
 * current directory) and stays open, with /etc/mime.types parsed, until
 * the process exits. 0, -EINVAL (NULL argument, or a prefix that is not a
 * normalized path), -ENOENT (dir missing), -ENOTDIR, -EACCES, -ENOMEM. */
SP_API int sp_static(sp_server *s, const char *prefix, const char *dir);

/* ---- Sessions ---------------------------------------------------------------
 * A session per visitor, keyed by a cookie: "spindle_sid", HttpOnly,
 * SameSite=Lax, Path=/, Secure on https (sp_req_scheme), holding an id
 * (the millisecond it was made, then 80 random bits) and the session's
 * expiry, signed with HMAC-SHA256. A cookie
 * that is forged, truncated, expired, or signed but for an id the store
 * does not hold (fixation) is ignored: the visitor gets a fresh, empty
 * session under a new id, never someone else's. Of several session
 * cookies the first that verifies and that the store holds wins (4 tried).
 * Keys and values are NUL-terminated strings (at most 64 KiB per session
 * in all). Every change is written through to the store before the call
 * returns, so there is nothing to save when the handler ends, and the response
 * cannot overtake the data it reports. Two requests of one visitor that
 * change the same session at once: the last write wins, whole. Stores:
 *   "memory"            this process only (one worker), lost at exit;
 *   "sqlite:PATH"       one database file (WAL) shared by all the workers
 *                       of one machine, surviving restarts; each worker
 *                       opens its connection after the fork;
 *   "redis://HOST:PORT" a Redis server shared by several machines (one key
 *                       per session, expiring with it).
 * SQLite and Redis calls run on the loop's thread pool (sp_run_blocking):
 * a busy database never stalls the loop. One loop per process serves
 * sessions (spindle's workers are processes). See examples/sessions.c. */
typedef struct sp_session sp_session;

/* Gives s's handlers sessions in store (NULL: "memory"), signed with the
 * key in secret_file (its bytes without trailing whitespace, at least 16;
 * the same file on every machine that shares a store), or, with NULL, with
 * a random key made now, logged as a warning: sessions then do not survive
 * a restart. Call it before the server serves — from an --app init, in the
 * master before the fork, so every worker shares the key. A SQLite
 * database is opened in each worker (after --user; the spindle command
 * tries it once at start too). Calling it again replaces the
 * configuration. 0, -EINVAL (unknown store spec, secret too short),
 * -ENOENT/-EACCES (secret file or database), -ENOSPC, -ENOMEM; the reason
 * is logged. */
SP_API int sp_sessions_configure(sp_server *s, const char *store, const char *secret_file);

/* always: Secure on every cookie, even over http (--session-cookie-secure).
 * After sp_sessions_configure. 0, or -ENXIO. */
SP_API int sp_sessions_cookie_secure(sp_server *s, int always);

/* The visitor's session (the function cannot be called sp_session: C
 * gives the type that name), loaded from the store (yields for SQLite and
 * Redis), or a new empty one under a fresh id. Adds its Set-Cookie to res,
 * so call it before anything is sent; calling it again in the same request
 * returns the same session. Valid until the handler returns. NULL with
 * errno: ENXIO (no sp_sessions_configure for this server), EALREADY (the
 * response head was sent), ENOMEM, ENOSPC (no room for the header), or the
 * store's error (EIO, EBUSY, ECONNREFUSED, ...); if the Set-Cookie could
 * not be added, every later call of the request fails the same way. */
SP_API sp_session *sp_session_of(sp_req *req, sp_res *res);

/* The session's id (hex, NUL-terminated). */
SP_API const char *sp_session_id(const sp_session *s);

/* The value of key, or NULL. Valid until key is set or deleted. */
SP_API const char *sp_session_get(const sp_session *s, const char *key);

/* The i-th key (0-based, in no particular order), or NULL past the last:
 * for listing a session's keys. Valid until the session is changed. */
SP_API const char *sp_session_key(const sp_session *s, size_t i);

/* Sets key to value (both copied) and writes the session to the store
 * (yields). 0, -EINVAL, -E2BIG (over 64 KiB), -ENOMEM or the store's
 * -errno (the value is then set here but not stored). */
SP_API int sp_session_set(sp_session *s, const char *key, const char *value);

/* Removes key and writes the session (yields); 0 also if it was absent. */
SP_API int sp_session_del(sp_session *s, const char *key);

/* Empties the session, deletes it from the store and gives the visitor a
 * new id with a full lifetime (log-out: whoever held the old cookie shares
 * nothing new). Before the head is sent (-EALREADY). Yields. 0 or -errno. */
SP_API int sp_session_clear(sp_session *s);

/* A new id, same data and expiry: stored under the new id, the old one
 * deleted, the cookie replaced. Call it at log-in (any change of
 * privilege), so an id known before is worth nothing. Before the head is
 * sent (-EALREADY). Yields. 0, or -errno with the old id kept. */
SP_API int sp_session_regenerate(sp_session *s);

/* The session now expires seconds from now (default: one day after it was
 * made; the expiry does not slide by itself); the cookie and the store
 * follow. Before the head is sent (-EALREADY); seconds in 1..100 years
 * (-EINVAL). Yields. 0 or -errno. */
SP_API int sp_session_set_ttl(sp_session *s, int64_t seconds);

/* When the session expires: unix seconds. */
SP_API int64_t sp_session_expiry(const sp_session *s);

#endif
