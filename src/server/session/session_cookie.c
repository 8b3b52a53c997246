/* session_cookie.c — signing and checking the session cookie's value. The
 * MAC covers a version tag, the id and the expiry, so neither can be
 * changed, and a cookie signed under another key never verifies. */
#include "server/session/session_cookie.h"

#include "http/http_write.h"
#include "server/session/session_hmac.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

static const char hexd[] = "0123456789abcdef";

static void to_hex(const uint8_t *p, size_t n, char *out) {
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hexd[p[i] >> 4];
        out[2 * i + 1] = hexd[p[i] & 15];
    }
}

int sess_id_new(char id[SESS_ID_HEX + 1]) {
    uint8_t r[SESS_ID_RANDOM_BYTES];
    size_t got = 0;
    while (got < sizeof r) {
        ssize_t n = getrandom(r + got, sizeof r - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        got += (size_t)n;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
    for (int i = SESS_ID_TIME_HEX - 1; i >= 0; i--, ms >>= 4)
        id[i] = hexd[ms & 15];
    to_hex(r, sizeof r, id + SESS_ID_TIME_HEX);
    id[SESS_ID_HEX] = '\0';
    return 0;
}

/* The MAC of "spindle-session-1|ID|EXPIRY" in hex. */
static void mac_hex(const void *key, size_t key_len, const char *id, const char *exp,
                    char out[SESS_MAC_HEX]) {
    static const char tag[] = "spindle-session-1|";
    char msg[sizeof tag - 1 + SESS_ID_HEX + 1 + SESS_EXP_DIGITS];
    memcpy(msg, tag, sizeof tag - 1);
    memcpy(msg + sizeof tag - 1, id, SESS_ID_HEX);
    msg[sizeof tag - 1 + SESS_ID_HEX] = '|';
    memcpy(msg + sizeof tag + SESS_ID_HEX, exp, SESS_EXP_DIGITS);
    uint8_t mac[SHA256_LEN];
    hmac_sha256(key, key_len, msg, sizeof msg, mac);
    to_hex(mac, sizeof mac, out);
}

void sess_cookie_sign(const void *key, size_t key_len, const char *id, int64_t expiry,
                      char out[SESS_VALUE_LEN + 1]) {
    if (expiry < 0)
        expiry = 0;
    if (expiry > 9999999999LL)
        expiry = 9999999999LL;
    memcpy(out, id, SESS_ID_HEX);
    out[SESS_ID_HEX] = '.';
    char *exp = out + SESS_ID_HEX + 1;
    for (int i = SESS_EXP_DIGITS - 1; i >= 0; i--, expiry /= 10)
        exp[i] = (char)('0' + expiry % 10); /* zero-padded to 10 digits */
    exp[SESS_EXP_DIGITS] = '.';
    mac_hex(key, key_len, out, exp, exp + SESS_EXP_DIGITS + 1);
    out[SESS_VALUE_LEN] = '\0';
}

static int all_in(const char *p, size_t n, const char *set) {
    for (size_t i = 0; i < n; i++)
        if (!p[i] || !strchr(set, p[i]))
            return 0;
    return 1;
}

int sess_cookie_verify(const void *key, size_t key_len, const char *v, size_t len, int64_t now,
                       char id[SESS_ID_HEX + 1], int64_t *expiry) {
    const char *exp = v + SESS_ID_HEX + 1, *mac = exp + SESS_EXP_DIGITS + 1;
    if (len != SESS_VALUE_LEN || v[SESS_ID_HEX] != '.' || exp[SESS_EXP_DIGITS] != '.' ||
        !all_in(v, SESS_ID_HEX, hexd) || !all_in(exp, SESS_EXP_DIGITS, "0123456789") ||
        !all_in(mac, SESS_MAC_HEX, hexd))
        return -EBADMSG;
    char want[SESS_MAC_HEX];
    mac_hex(key, key_len, v, exp, want);
    if (!sess_ct_equal(want, mac, SESS_MAC_HEX))
        return -EPERM;
    int64_t e = 0;
    for (int i = 0; i < SESS_EXP_DIGITS; i++)
        e = e * 10 + (exp[i] - '0');
    if (now >= e)
        return -ETIMEDOUT;
    memcpy(id, v, SESS_ID_HEX);
    id[SESS_ID_HEX] = '\0';
    *expiry = e;
    return 0;
}

/* By hand, not snprintf and strftime: the Expires date of a session made
 * this second is the same for every request of the second (formatted once,
 * in English whatever the locale, http_write.c), and a new session's
 * Set-Cookie was a tenth of its CPU. */
size_t sess_setcookie_format(const void *key, size_t key_len, const char *id, int64_t expiry,
                             int secure, char out[SESS_SETCOOKIE_BUF]) {
    static __thread http_date_cache date = {.sec = -1};
    if (date.sec != (time_t)expiry)
        http_date_update(&date, (time_t)expiry);
    static const char name[] = SESS_COOKIE_NAME "=",
                      path[] = "; Path=/; Expires=", tail[] = "; HttpOnly; SameSite=Lax",
                      sec[] = "; Secure";
    char *p = out;
    memcpy(p, name, sizeof name - 1);
    p += sizeof name - 1;
    sess_cookie_sign(key, key_len, id, expiry, p);
    p += SESS_VALUE_LEN;
    memcpy(p, path, sizeof path - 1);
    p += sizeof path - 1;
    memcpy(p, date.text, HTTP_DATE_LEN);
    p += HTTP_DATE_LEN;
    memcpy(p, tail, sizeof tail - 1);
    p += sizeof tail - 1;
    if (secure) {
        memcpy(p, sec, sizeof sec - 1);
        p += sizeof sec - 1;
    }
    *p = '\0';
    return (size_t)(p - out);
}

int sess_cookie_next(const char **pp, const char *end, const char **v, size_t *vn) {
    static const char name[] = SESS_COOKIE_NAME "=";
    const char *p = *pp;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == ';' || *p == '\t'))
            p++;
        const char *e = memchr(p, ';', (size_t)(end - p));
        if (!e)
            e = end;
        size_t n = (size_t)(e - p);
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        if (n >= sizeof name - 1 && !memcmp(p, name, sizeof name - 1)) {
            *v = p + sizeof name - 1;
            *vn = n - (sizeof name - 1);
            *pp = e;
            return 1;
        }
        p = e;
    }
    *pp = end;
    return 0;
}
