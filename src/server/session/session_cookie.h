/* session_cookie.h — the session cookie's value: a random id, its expiry
 * and an HMAC-SHA256 over both, "ID.EXPIRY.MAC" in fixed-width hex and
 * decimal. Pure functions but sess_id_new (getrandom). */
#ifndef SPINDLE_SESSION_COOKIE_H
#define SPINDLE_SESSION_COOKIE_H

#include <stddef.h>
#include <stdint.h>

#define SESS_ID_BYTES   16 /* 128 random bits */
#define SESS_ID_HEX     (2 * SESS_ID_BYTES)
#define SESS_EXP_DIGITS 10 /* unix seconds, zero-padded */
#define SESS_MAC_HEX    64
#define SESS_VALUE_LEN  (SESS_ID_HEX + 1 + SESS_EXP_DIGITS + 1 + SESS_MAC_HEX)

/* A fresh random id, SESS_ID_HEX lowercase hex digits and a NUL. 0 or
 * -errno (getrandom failed: no id rather than a guessable one). */
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

#endif
