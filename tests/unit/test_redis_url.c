/* test_redis_url.c — redis:// and rediss:// addresses (base/redis_url.c):
 * each part's rule, the defaults, and every kind of bad input. */
#include "base/redis_url.h"
#include "unit.h"

#include <errno.h>
#include <string.h>

static redis_url parse(const char *s, int want) {
    redis_url u;
    memset(&u, 0x5a, sizeof u);
    int rc = redis_url_parse(s, strlen(s), &u);
    CHECK_EQ(rc, want);
    if (rc < 0)
        memset(&u, 0, sizeof u);
    return u;
}

TEST(host_alone_takes_the_defaults) {
    redis_url u = parse("redis://cache.internal", 0);
    CHECK_STR(u.host, "cache.internal");
    CHECK_EQ(u.port, 6379);
    CHECK_EQ(u.tls, 0);
    CHECK(u.user == NULL && u.password == NULL);
    CHECK_EQ(u.db, 0);
    redis_url_free(&u);
    CHECK(u.host == NULL);
}

TEST(every_part) {
    redis_url u = parse("rediss://app:s3cr@t@10.0.0.5:6380/7", 0);
    CHECK_EQ(u.tls, 1);
    CHECK_STR(u.user, "app");
    CHECK_STR(u.password, "s3cr@t"); /* the last '@' ends the userinfo */
    CHECK_STR(u.host, "10.0.0.5");
    CHECK_EQ(u.port, 6380);
    CHECK_EQ(u.db, 7);
    redis_url_free(&u);
}

TEST(password_without_user_and_ipv6) {
    redis_url u = parse("redis://:pw@[::1]:7000/", 0);
    CHECK(u.user == NULL);
    CHECK_STR(u.password, "pw");
    CHECK_STR(u.host, "::1");
    CHECK_EQ(u.port, 7000);
    CHECK_EQ(u.db, 0);
    redis_url_free(&u);
    u = parse("redis://[fe80::2]", 0);
    CHECK_STR(u.host, "fe80::2");
    CHECK_EQ(u.port, 6379);
    redis_url_free(&u);
    u = parse("redis://:@h", 0); /* an empty password is a password */
    CHECK_STR(u.password, "");
    redis_url_free(&u);
}

TEST(length_bounds_the_parse) {
    const char *s = "redis://h:1/2?retain=5";
    redis_url u;
    CHECK_EQ(redis_url_parse(s, strlen("redis://h:1/2"), &u), 0);
    CHECK_EQ(u.db, 2);
    redis_url_free(&u);
}

TEST(bad_input) {
    const char *bad[] = {"redis://",       "rediss://",         "redis:/h",
                         "http://h",       "redis://h:0",       "redis://h:65536",
                         "redis://h:",     "redis://h:x",       "redis://h:-1",
                         "redis://h/x",    "redis://h/1000001", "redis://h/-1",
                         "redis://user@h", "redis://[::1",      "redis://[::1]x",
                         "redis://:pw@",   "redis://:pw@:80",   "redis://h:99999999999",
                         "REDIS://h"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        redis_url u;
        if (redis_url_parse(bad[i], strlen(bad[i]), &u) != -EINVAL) {
            fprintf(stderr, "  accepted: %s\n", bad[i]);
            CHECK(0);
        }
    }
}
