/* test_session_cookie.c — the signed session cookie: a good one verifies;
 * forged (any character changed), truncated, extended, expired and
 * wrong-key cookies do not; ids are random after the time they begin
 * with; secret files are read as
 * documented. */
#include "server/session/session.h"
#include "server/session/session_cookie.h"
#include "unit.h"

#include <errno.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char key[] = "0123456789abcdef-test-key";
#define KL (sizeof key - 1)

TEST(cookie_round_trip) {
    char id[SESS_ID_HEX + 1], v[SESS_VALUE_LEN + 1], got[SESS_ID_HEX + 1];
    CHECK_EQ(sess_id_new(id), 0);
    CHECK_EQ(strlen(id), SESS_ID_HEX);
    sess_cookie_sign(key, KL, id, 2000000000, v);
    CHECK_EQ(strlen(v), SESS_VALUE_LEN);
    int64_t exp = 0;
    CHECK_EQ(sess_cookie_verify(key, KL, v, strlen(v), 1999999999, got, &exp), 0);
    CHECK_STR(got, id);
    CHECK_EQ(exp, 2000000000);
}

TEST(cookie_every_changed_character_is_refused) {
    char id[SESS_ID_HEX + 1], v[SESS_VALUE_LEN + 1], got[SESS_ID_HEX + 1];
    CHECK_EQ(sess_id_new(id), 0);
    sess_cookie_sign(key, KL, id, 2000000000, v);
    int64_t exp;
    for (size_t i = 0; i < SESS_VALUE_LEN; i++) {
        char f[SESS_VALUE_LEN + 1];
        memcpy(f, v, sizeof f);
        /* Another character of the same class (hex stays hex, digits stay
         * digits): only the MAC can catch it. */
        f[i] = f[i] == '.'                    ? '-'
               : f[i] == '0'                  ? '1'
               : (f[i] == 'f' || f[i] == '9') ? '0'
                                              : f[i] + 1;
        int rc = sess_cookie_verify(key, KL, f, SESS_VALUE_LEN, 0, got, &exp);
        CHECK(rc == -EPERM || rc == -EBADMSG);
    }
}

TEST(cookie_forged_expiry_refused) {
    char id[SESS_ID_HEX + 1], v[SESS_VALUE_LEN + 1], got[SESS_ID_HEX + 1];
    CHECK_EQ(sess_id_new(id), 0);
    sess_cookie_sign(key, KL, id, 1000, v); /* long expired */
    int64_t exp;
    CHECK_EQ(sess_cookie_verify(key, KL, v, SESS_VALUE_LEN, 5000, got, &exp), -ETIMEDOUT);
    memcpy(v + SESS_ID_HEX + 1, "9999999999", 10); /* pushed into the future */
    CHECK_EQ(sess_cookie_verify(key, KL, v, SESS_VALUE_LEN, 5000, got, &exp), -EPERM);
}

TEST(cookie_truncated_or_extended_refused) {
    char id[SESS_ID_HEX + 1], v[SESS_VALUE_LEN + 2], got[SESS_ID_HEX + 1];
    CHECK_EQ(sess_id_new(id), 0);
    sess_cookie_sign(key, KL, id, 2000000000, v);
    int64_t exp;
    for (size_t n = 0; n < SESS_VALUE_LEN; n++)
        CHECK_EQ(sess_cookie_verify(key, KL, v, n, 0, got, &exp), -EBADMSG);
    v[SESS_VALUE_LEN] = '0';
    CHECK_EQ(sess_cookie_verify(key, KL, v, SESS_VALUE_LEN + 1, 0, got, &exp), -EBADMSG);
    CHECK_EQ(sess_cookie_verify(key, KL, "", 0, 0, got, &exp), -EBADMSG);
    /* Uppercase hex, a sign in the expiry: malformed, not merely unsigned. */
    char u[SESS_VALUE_LEN + 1];
    sess_cookie_sign(key, KL, id, 2000000000, u);
    u[SESS_VALUE_LEN - 1] = 'F';
    CHECK_EQ(sess_cookie_verify(key, KL, u, SESS_VALUE_LEN, 0, got, &exp), -EBADMSG);
}

TEST(cookie_expired_at_its_second) {
    char id[SESS_ID_HEX + 1], v[SESS_VALUE_LEN + 1], got[SESS_ID_HEX + 1];
    CHECK_EQ(sess_id_new(id), 0);
    sess_cookie_sign(key, KL, id, 1700000000, v);
    int64_t exp;
    CHECK_EQ(sess_cookie_verify(key, KL, v, SESS_VALUE_LEN, 1699999999, got, &exp), 0);
    CHECK_EQ(sess_cookie_verify(key, KL, v, SESS_VALUE_LEN, 1700000000, got, &exp), -ETIMEDOUT);
}

TEST(cookie_wrong_key_refused) {
    char id[SESS_ID_HEX + 1], v[SESS_VALUE_LEN + 1], got[SESS_ID_HEX + 1];
    CHECK_EQ(sess_id_new(id), 0);
    sess_cookie_sign(key, KL, id, 2000000000, v);
    int64_t exp;
    CHECK_EQ(sess_cookie_verify("another key entirely", 20, v, SESS_VALUE_LEN, 0, got, &exp),
             -EPERM);
    CHECK_EQ(sess_cookie_verify(key, KL - 1, v, SESS_VALUE_LEN, 0, got, &exp), -EPERM);
}

TEST(ids_are_random) {
    char a[SESS_ID_HEX + 1], b[SESS_ID_HEX + 1];
    CHECK_EQ(sess_id_new(a), 0);
    for (int i = 0; i < 1000; i++) {
        CHECK_EQ(sess_id_new(b), 0);
        CHECK(strcmp(a, b) != 0);
        /* the random part differs, not only the time before it */
        CHECK(strcmp(a + SESS_ID_TIME_HEX, b + SESS_ID_TIME_HEX) != 0);
        for (int k = 0; k < SESS_ID_HEX; k++)
            CHECK(strchr("0123456789abcdef", b[k]) != NULL);
    }
}

/* An id begins with the millisecond it was made, so ids made later sort
 * later: the SQLite store's B-tree takes them at its right edge. */
TEST(ids_begin_with_the_time_and_sort_by_it) {
    char a[SESS_ID_HEX + 1], b[SESS_ID_HEX + 1];
    struct timespec t0, t1;
    clock_gettime(CLOCK_REALTIME, &t0);
    CHECK_EQ(sess_id_new(a), 0);
    usleep(3000);
    CHECK_EQ(sess_id_new(b), 0);
    clock_gettime(CLOCK_REALTIME, &t1);
    CHECK(strcmp(a, b) < 0);
    CHECK(memcmp(a, b, SESS_ID_TIME_HEX) < 0);
    char pre[SESS_ID_TIME_HEX + 1];
    memcpy(pre, a, SESS_ID_TIME_HEX);
    pre[SESS_ID_TIME_HEX] = '\0';
    long long ms = strtoll(pre, NULL, 16);
    CHECK(ms >= (long long)t0.tv_sec * 1000 + t0.tv_nsec / 1000000);
    CHECK(ms <= (long long)t1.tv_sec * 1000 + t1.tv_nsec / 1000000);
}

static void write_file(const char *path, const char *s) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(s, f);
    fclose(f);
}

TEST(secret_file_rules) {
    char path[] = "/tmp/spindle-secret-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    uint8_t k1[64], k2[64];
    size_t l1, l2;
    write_file(path, "short\n");
    CHECK_EQ(sess_key_from_file(path, k1, &l1), -EINVAL);
    write_file(path, "a secret of enough length\n");
    CHECK_EQ(sess_key_from_file(path, k1, &l1), 0);
    write_file(path, "a secret of enough length"); /* no newline: the same key */
    CHECK_EQ(sess_key_from_file(path, k2, &l2), 0);
    CHECK_EQ(l1, l2);
    CHECK(memcmp(k1, k2, l1) == 0);
    write_file(path, "a secret of enough lengtH");
    CHECK_EQ(sess_key_from_file(path, k2, &l2), 0);
    CHECK(memcmp(k1, k2, l1) != 0);
    unlink(path);
    CHECK_EQ(sess_key_from_file(path, k1, &l1), -ENOENT);
}

TEST(store_specs) {
    sess_store st = {0};
    CHECK_EQ(sess_store_parse("memory", &st), 0);
    CHECK(st.ops == &sess_memory_ops);
    CHECK_EQ(sess_store_parse("sqlite:/tmp/x.db", &st), 0);
    CHECK(st.ops == &sess_sqlite_ops);
    CHECK_STR(st.where, "/tmp/x.db");
    sess_store_spec_free(&st);
    CHECK_EQ(sess_store_parse("redis://127.0.0.1:6380", &st), 0);
    CHECK(st.ops == &sess_redis_ops);
    CHECK_STR(st.where, "127.0.0.1");
    CHECK_EQ(st.port, 6380);
    sess_store_spec_free(&st);
    CHECK_EQ(sess_store_parse("redis://cache", &st), 0);
    CHECK_EQ(st.port, 6379);
    sess_store_spec_free(&st);
    CHECK_EQ(sess_store_parse("rediss://u:pw@cache:6380/3?tls_ca=/etc/ca.pem", &st), 0);
    CHECK(st.url.tls && st.url.db == 3 && st.port == 6380);
    CHECK_STR(st.url.user, "u");
    CHECK_STR(st.url.password, "pw");
    CHECK_STR(st.tls_ca, "/etc/ca.pem");
    sess_store_spec_free(&st);
    const char *bad[] = {"redis://h:0",
                         "redis://h:x",
                         "sqlite:",
                         "mysql://h",
                         "redis://h?tls_ca=/x",
                         "rediss://h?tls_ca=",
                         "rediss://h?other=1",
                         "rediss://h?tls_ca=/a&x=1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ(sess_store_parse(bad[i], &st), -EINVAL);
}

TEST(setcookie_secure_attribute) {
    char id[SESS_ID_HEX + 1], plain[SESS_SETCOOKIE_BUF], sec[SESS_SETCOOKIE_BUF];
    CHECK_EQ(sess_id_new(id), 0);
    CHECK_EQ(sess_setcookie_format(key, KL, id, 2000000000, 0, plain), SESS_SETCOOKIE_LEN(0));
    CHECK_EQ(sess_setcookie_format(key, KL, id, 2000000000, 1, sec), SESS_SETCOOKIE_LEN(1));
    CHECK(strstr(plain, "Secure") == NULL);
    CHECK_EQ(strncmp(plain, "spindle_sid=", 12), 0);
    CHECK(strstr(plain, "; Path=/; Expires=Wed, 18 May 2033 03:33:20 GMT; HttpOnly; "
                        "SameSite=Lax") != NULL);
    /* The same cookie with "; Secure" at the end. */
    CHECK_EQ(strncmp(sec, plain, strlen(plain)), 0);
    CHECK_STR(sec + strlen(plain), "; Secure");
    /* Any expiry up to year 9999 keeps the length (the field is rewritten
     * in place). */
    CHECK_EQ(sess_setcookie_format(key, KL, id, 0, 1, sec), SESS_SETCOOKIE_LEN(1));
    CHECK_EQ(sess_setcookie_format(key, KL, id, 253402300799LL, 1, sec), SESS_SETCOOKIE_LEN(1));
}

/* The exact bytes for a fixed key, id and expiry, as every earlier release
 * made them: a change here logs every visitor out on an upgrade (their
 * cookies would no longer verify). Also in a locale with other day names. */
TEST(setcookie_bytes_are_stable) {
    static const char want[] =
        "spindle_sid=0123456789abcdef0123456789abcdef.1700000000."
        "a07a957dc8a68dace0846352d40e6d3e5ec2bd1180d2931fa708c37fbfe9fb41; Path=/; "
        "Expires=Tue, 14 Nov 2023 22:13:20 GMT; HttpOnly; SameSite=Lax";
    char out[SESS_SETCOOKIE_BUF];
    const char *id = "0123456789abcdef0123456789abcdef";
    setlocale(LC_ALL, "de_DE.UTF-8"); /* if installed; C otherwise */
    for (int i = 0; i < 2; i++) {     /* the second from the date cache */
        CHECK_EQ(sess_setcookie_format("secret-key-16bytes!", 19, id, 1700000000, 0, out),
                 sizeof want - 1);
        CHECK_STR(out, want);
    }
    setlocale(LC_ALL, "C");
}

/* Every spindle_sid value of one Cookie header, joined by '|'. */
static void all_sids(const char *hdr, char *out) {
    const char *p = hdr, *v;
    size_t n;
    out[0] = '\0';
    while (sess_cookie_next(&p, hdr + strlen(hdr), &v, &n)) {
        strcat(out, "|");
        strncat(out, v, n);
    }
}

TEST(cookie_header_pairs) {
    char got[256];
    all_sids("", got);
    CHECK_STR(got, "");
    all_sids("spindle_sid=abc", got);
    CHECK_STR(got, "|abc");
    all_sids("a=1; spindle_sid=x ;b=2;spindle_sid=y\t;  spindle_sid=", got);
    CHECK_STR(got, "|x|y|");
    /* Names are case-sensitive and whole: not another cookie's suffix or
     * prefix, not a value that looks like one. */
    all_sids("Spindle_sid=a; my_spindle_sid=b; spindle_sidx=c; q=spindle_sid=d", got);
    CHECK_STR(got, "");
    all_sids(";;; ; spindle_sid=z;;", got);
    CHECK_STR(got, "|z");
}
