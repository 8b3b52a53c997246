/* session_cookie.h — the session cookie's value: an id, its expiry and an
 * HMAC-SHA256 over both, "ID.EXPIRY.MAC" in fixed-width hex and decimal.
 * Pure functions but sess_id_new (the clock and getrandom). */
#ifndef SPINDLE_SESSION_COOKIE_H
#define SPINDLE_SESSION_COOKIE_H

#include <stddef.h>
#include <stdint.h>

#define SESS_COOKIE_NAME "spindle_sid"
/* An id is 32 hex digits: 12 of the milliseconds since 1970 at its making
 * (48 bits, as in a UUIDv7), then 20 random (80 bits, and the cookie's MAC
 * besides). Ids made later sort later, so a store's index
 * (SQLite's B-tree) takes new sessions at its right edge, a few pages per
 * transaction, not one random page each (a new session's CPU with the
 * SQLite store 28-30 -> 13-15 us, bench/README.md). The time is no secret:
 * the cookie's expiry beside it tells as much. */
#define SESS_ID_TIME_HEX     12
#define SESS_ID_RANDOM_BYTES 10
#define SESS_ID_HEX          (SESS_ID_TIME_HEX + 2 * SESS_ID_RANDOM_BYTES)
#define SESS_EXP_DIGITS      10 /* unix seconds, zero-padded */
#define SESS_MAC_HEX         64
#define SESS_VALUE_LEN       (SESS_ID_HEX + 1 + SESS_EXP_DIGITS + 1 + SESS_MAC_HEX)

/* A fresh id, SESS_ID_HEX lowercase hex digits and a NUL. 0 or -errno
 * (getrandom failed: no id rather than a guessable one). */
int sess_id_new(char id[SESS_ID_HEX + 1]);

/* Writes the cookie value for id and expiry (NUL-terminated) into out. */
void sess_cookie_sign(const void *key, size_t key_len, const char *id, int64_t expiry,
                      char out[SESS_VALUE_LEN + 1]);

/* Checks a cookie value: 0 with id (NUL-terminated) and *expiry filled;
 * -EBADMSG if malformed or truncated, -EPERM if the MAC does not match
 * (forged, or signed with another key), -ETIMEDOUT if expired (now >=
 * expiry). The MAC is checked before the expiry is believed. */
int sess_cookie_verify(const void *key, size_t key_len, const char *v, size_t len, int64_t now,
                       char id[SESS_ID_HEX + 1], int64_t *expiry);

/* The Set-Cookie value: "NAME=VALUE; Path=/; Expires=<IMF date>; HttpOnly;
 * SameSite=Lax", and "; Secure" when secure. Fixed length for a given
 * secure (any expiry before year 10000), so it can be rewritten in place. */
#define SESS_SETCOOKIE_LEN(secure)                                                                 \
    (sizeof SESS_COOKIE_NAME + SESS_VALUE_LEN + sizeof "; Path=/; Expires=" - 1 + 29 +             \
     sizeof "; HttpOnly; SameSite=Lax" - 1 + ((secure) ? sizeof "; Secure" - 1 : 0))
#define SESS_SETCOOKIE_BUF (SESS_SETCOOKIE_LEN(1) + 64)

/* Formats the Set-Cookie value for id and expiry into out (NUL-terminated);
 * its length (SESS_SETCOOKIE_LEN(secure) for an expiry before year 10000). */
size_t sess_setcookie_format(const void *key, size_t key_len, const char *id, int64_t expiry,
                             int secure, char out[SESS_SETCOOKIE_BUF]);

/* Steps through one Cookie header value ("a=1; spindle_sid=V; b=2") from
 * *p to end: 1 with the value of the next pair named SESS_COOKIE_NAME (the
 * name is case-sensitive, as cookie names are) in *v and *n and *p past
 * it; 0 when there is none left. */
int sess_cookie_next(const char **p, const char *end, const char **v, size_t *n);

#endif
