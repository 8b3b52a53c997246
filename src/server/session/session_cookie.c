/* session_cookie.c — signing and checking the session cookie's value. The
 * MAC covers a version tag, the id and the expiry, so neither can be
 * changed, and a cookie signed under another key never verifies. */
#include "server/session/session_cookie.h"

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
    uint8_t r[SESS_ID_BYTES];
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
    to_hex(r, sizeof r, id);
    id[SESS_ID_HEX] = '\0';
    return 0;
}

/* The MAC of "spindle-session-1|ID|EXPIRY" in hex. */
static void mac_hex(const void *key, size_t key_len, const char *id, const char *exp,
                    char out[SESS_MAC_HEX]) {
    char msg[64];
    int n = snprintf(msg, sizeof msg, "spindle-session-1|%.*s|%.*s", SESS_ID_HEX, id,
                     SESS_EXP_DIGITS, exp);
    uint8_t mac[SHA256_LEN];
    hmac_sha256(key, key_len, msg, (size_t)n, mac);
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
    snprintf(out + SESS_ID_HEX + 1, SESS_EXP_DIGITS + 1, "%010lld", (long long)expiry);
    out[SESS_ID_HEX + 1 + SESS_EXP_DIGITS] = '.';
    mac_hex(key, key_len, out, out + SESS_ID_HEX + 1, out + SESS_ID_HEX + 2 + SESS_EXP_DIGITS);
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

size_t sess_setcookie_format(const void *key, size_t key_len, const char *id, int64_t expiry,
                             int secure, char out[SESS_SETCOOKIE_BUF]) {
    char value[SESS_VALUE_LEN + 1], date[64];
    sess_cookie_sign(key, key_len, id, expiry, value);
    time_t t = (time_t)expiry;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    int n = snprintf(out, SESS_SETCOOKIE_BUF, "%s=%s; Path=/; Expires=%s; HttpOnly; SameSite=Lax%s",
                     SESS_COOKIE_NAME, value, date, secure ? "; Secure" : "");
    return n < 0 ? 0 : (size_t)n;
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
