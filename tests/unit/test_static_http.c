/* test_static_http.c — the pure parts of static file serving: path mapping,
 * Range parsing with its edges (RFC 9110 §14), HTTP-dates (§5.6.7),
 * entity-tags, preconditions (§13.2.2), If-Range and Accept-Encoding. */
#include "server/static/static_http.h"
#include "unit.h"

#include <stdint.h>

#define S(lit) ((sp_str){(lit), sizeof(lit) - 1})

/* ---- path mapping ---------------------------------------------------- */

static void rel_ok(const char *rest, const char *want, int want_slash) {
    char out[64];
    int slash = -1;
    long n = static_rel_path(rest, strlen(rest), out, sizeof out, &slash);
    if (n < 0)
        fprintf(stderr, "  rest \"%s\" refused\n", rest);
    CHECK(n >= 0);
    CHECK_STR(out, want);
    CHECK_EQ(n, strlen(want));
    CHECK_EQ(slash, want_slash);
}

static void rel_refused(const char *rest) {
    char out[64];
    int slash;
    if (static_rel_path(rest, strlen(rest), out, sizeof out, &slash) >= 0)
        fprintf(stderr, "  rest \"%s\" accepted as \"%s\"\n", rest, out);
    CHECK_EQ(static_rel_path(rest, strlen(rest), out, sizeof out, &slash), -1);
}

TEST(rel_path_plain) {
    rel_ok("", ".", 0);
    rel_ok("index.html", "index.html", 0);
    rel_ok("a/b/c.txt", "a/b/c.txt", 0);
    rel_ok("dir/", "dir", 1);
    rel_ok("a%20b.txt", "a b.txt", 0);
    rel_ok("caf%C3%A9", "caf\xc3\xa9", 0);
    rel_ok("x..y", "x..y", 0);
    rel_ok("a/b..", "a/b..", 0);
}

TEST(rel_path_refusals) {
    rel_refused("..");
    rel_refused("a/..");
    rel_refused("%2e%2e/etc/passwd");
    rel_refused("%2E%2E");
    rel_refused("a/%2e");
    rel_refused("a%2F..%2F..%2Fetc%2Fpasswd");
    rel_refused("a%2fb");
    rel_refused("a%00b");
    rel_refused(".git/config");
    rel_refused("a/.env");
    rel_refused(".well-known/x");
    rel_refused("%2egit");
    rel_refused("a//b");
    rel_refused("/a");
    rel_refused("a%2");
    rel_refused("a%zz");
    rel_refused("%");
    /* Too long for the buffer. */
    rel_refused("0123456789012345678901234567890123456789012345678901234567890123456789");
}

/* ---- Range ------------------------------------------------------------- */

static void range_one(const char *v, uint64_t size, uint64_t start, uint64_t count) {
    uint64_t s = 99, c = 99;
    static_range r = static_range_parse(v, strlen(v), size, &s, &c);
    if (r != STATIC_RANGE_ONE)
        fprintf(stderr, "  \"%s\" (size %llu) -> %d\n", v, (unsigned long long)size, (int)r);
    CHECK_EQ(r, STATIC_RANGE_ONE);
    CHECK_EQ(s, start);
    CHECK_EQ(c, count);
}

static void range_is(const char *v, uint64_t size, static_range want) {
    uint64_t s, c;
    static_range r = static_range_parse(v, strlen(v), size, &s, &c);
    if (r != want)
        fprintf(stderr, "  \"%s\" (size %llu) -> %d, want %d\n", v, (unsigned long long)size,
                (int)r, (int)want);
    CHECK_EQ(r, want);
}

TEST(range_single_forms) {
    range_one("bytes=0-99", 1000, 0, 100);
    range_one("bytes=0-0", 1000, 0, 1);
    range_one("bytes=500-", 1000, 500, 500);
    range_one("bytes=-100", 1000, 900, 100);
    range_one("bytes=999-", 1000, 999, 1);
    range_one("bytes=0-", 1000, 0, 1000);
    range_one("Bytes=1-2", 1000, 1, 2);
    range_one("BYTES=1-2", 1000, 1, 2);
    range_one("bytes=007-009", 1000, 7, 3);
}

TEST(range_clamped_to_size) {
    range_one("bytes=900-5000", 1000, 900, 100);
    range_one("bytes=-5000", 1000, 0, 1000); /* suffix longer than the file: all */
    range_one("bytes=0-999", 1000, 0, 1000);
    range_one("bytes=0-1000", 1000, 0, 1000);
}

TEST(range_overflow_saturates) {
    range_one("bytes=0-99999999999999999999999999", 10, 0, 10);
    range_one("bytes=-99999999999999999999999999", 10, 0, 10);
    range_one("bytes=5-18446744073709551615", 10, 5, 5);
    range_one("bytes=5-18446744073709551616", 10, 5, 5);
    range_is("bytes=99999999999999999999999999-", 10, STATIC_RANGE_UNSATISFIABLE);
    range_is("bytes=18446744073709551615-18446744073709551615", 10, STATIC_RANGE_UNSATISFIABLE);
}

TEST(range_unsatisfiable) {
    range_is("bytes=1000-", 1000, STATIC_RANGE_UNSATISFIABLE);
    range_is("bytes=1000-2000", 1000, STATIC_RANGE_UNSATISFIABLE);
    range_is("bytes=5-2", 1000, STATIC_RANGE_UNSATISFIABLE); /* last < first */
    range_is("bytes=-0", 1000, STATIC_RANGE_UNSATISFIABLE);
    range_is("bytes=0-", 0, STATIC_RANGE_UNSATISFIABLE); /* empty file */
    range_is("bytes=-5", 0, STATIC_RANGE_UNSATISFIABLE);
    range_is("bytes=2000-3000, 5000-", 1000, STATIC_RANGE_UNSATISFIABLE);
}

TEST(range_spaces_and_lists) {
    range_one("bytes= 0-1", 10, 0, 2);
    range_one("  bytes=0-1  ", 10, 0, 2);
    range_one("bytes=0-1,", 10, 0, 2); /* empty list elements are allowed */
    range_one("bytes=,0-1", 10, 0, 2);
    range_is("bytes=0 -1", 10, STATIC_RANGE_NONE);
    range_is("bytes=0- 1", 10, STATIC_RANGE_NONE);
    range_is("bytes =0-1", 10, STATIC_RANGE_NONE);
    range_is("bytes=0-1, 3-4", 10, STATIC_RANGE_MULTI);
    range_is("bytes=0-1,3-4,-2", 10, STATIC_RANGE_MULTI);
    range_is("bytes=0-1, 50-60", 10, STATIC_RANGE_MULTI); /* one satisfiable of two */
}

TEST(range_malformed_is_ignored) {
    range_is("", 10, STATIC_RANGE_NONE);
    range_is("bytes=", 10, STATIC_RANGE_NONE);
    range_is("bytes=,", 10, STATIC_RANGE_NONE);
    range_is("bytes=-", 10, STATIC_RANGE_NONE);
    range_is("bytes=a-b", 10, STATIC_RANGE_NONE);
    range_is("bytes=1", 10, STATIC_RANGE_NONE);
    range_is("bytes=1-2x", 10, STATIC_RANGE_NONE);
    range_is("bytes=--1", 10, STATIC_RANGE_NONE);
    range_is("bytes=+1-2", 10, STATIC_RANGE_NONE);
    range_is("bytes=1-2;", 10, STATIC_RANGE_NONE);
    range_is("items=0-1", 10, STATIC_RANGE_NONE); /* another unit */
    range_is("bytes", 10, STATIC_RANGE_NONE);
    range_is("bytes 0-1", 10, STATIC_RANGE_NONE);
}

TEST(range_not_nul_terminated) {
    /* The parser reads len bytes only. */
    uint64_t s, c;
    CHECK_EQ(static_range_parse("bytes=0-15", 9, 100, &s, &c), STATIC_RANGE_ONE);
    CHECK_EQ(c, 2);
}

/* ---- HTTP-date ------------------------------------------------------------ */

static void date_is(const char *v, int64_t want) {
    int64_t t = -1;
    int rc = static_date_parse(v, strlen(v), &t);
    if (rc != 0)
        fprintf(stderr, "  \"%s\" refused\n", v);
    CHECK_EQ(rc, 0);
    CHECK_EQ(t, want);
}

static void date_bad(const char *v) {
    int64_t t;
    CHECK_EQ(static_date_parse(v, strlen(v), &t), -1);
}

TEST(date_three_formats) {
    date_is("Sun, 06 Nov 1994 08:49:37 GMT", 784111777);
    date_is("Sunday, 06-Nov-94 08:49:37 GMT", 784111777);
    date_is("Sun Nov  6 08:49:37 1994", 784111777);
    date_is("Thu, 01 Jan 1970 00:00:00 GMT", 0);
    date_is("Tue, 29 Feb 2000 12:00:00 GMT", 951825600);
    date_is("Wed, 01 Jan 2031 00:00:00 GMT", 1924992000);
    date_is("Friday, 01-Jan-21 00:00:00 GMT", 1609459200); /* two-digit year: 2021 */
    date_is(" Sun, 06 Nov 1994 08:49:37 GMT ", 784111777);
}

TEST(date_malformed) {
    date_bad("");
    date_bad("yesterday");
    date_bad("Sun, 06 Nov 1994 08:49:37");
    date_bad("Sun, 06 Nov 1994 08:49:37 UTC");
    date_bad("Sun, 06 Foo 1994 08:49:37 GMT");
    date_bad("Sun, 32 Nov 1994 08:49:37 GMT");
    date_bad("Sun, 06 Nov 1994 24:49:37 GMT");
    date_bad("Sun, 6 Nov 1994 08:49:37 GMT");
    date_bad("Sun, 06 Nov 1994 08:49:37 GMT, Sun, 06 Nov 1994 08:49:37 GMT");
    date_bad("Sun, 06 Nov 1994 08:49:37 GMTx");
    date_bad("1994-11-06T08:49:37Z");
}

TEST(date_format_round_trip) {
    char out[STATIC_DATE_CAP];
    static_date_format(784111777, out);
    CHECK_STR(out, "Sun, 06 Nov 1994 08:49:37 GMT");
    static_date_format(0, out);
    CHECK_STR(out, "Thu, 01 Jan 1970 00:00:00 GMT");
    for (int64_t t = 0; t < 4000000000; t += 123456789) {
        int64_t back;
        static_date_format(t, out);
        CHECK_EQ(strlen(out), 29);
        CHECK_EQ(static_date_parse(out, strlen(out), &back), 0);
        CHECK_EQ(back, t);
    }
}

/* ---- entity-tags and preconditions --------------------------------------------- */

TEST(etag_format) {
    char e[STATIC_ETAG_CAP];
    CHECK_EQ(static_etag_format(e, 0x400, 0x17a2b3c4d5e6f708ull, 0), strlen(e));
    CHECK_STR(e, "\"400-17a2b3c4d5e6f708\"");
    static_etag_format(e, 0x400, 0x10, 1);
    CHECK_STR(e, "\"400-10-gz\"");
    static_etag_format(e, UINT64_MAX, UINT64_MAX, 1);
    CHECK_STR(e, "\"ffffffffffffffff-ffffffffffffffff-gz\"");
}

#define ETAG "\"400-10\""

TEST(etag_lists) {
    sp_str one[] = {S("\"400-10\"")};
    CHECK(static_etag_match(one, 1, ETAG, strlen(ETAG), 0));
    sp_str weak[] = {S("W/\"400-10\"")};
    CHECK(static_etag_match(weak, 1, ETAG, strlen(ETAG), 1));
    CHECK(!static_etag_match(weak, 1, ETAG, strlen(ETAG), 0));
    sp_str list[] = {S("\"a\", \"b\" ,W/\"400-10\"")};
    CHECK(static_etag_match(list, 1, ETAG, strlen(ETAG), 1));
    sp_str lines[] = {S("\"a\""), S("\"400-10\"")};
    CHECK(static_etag_match(lines, 2, ETAG, strlen(ETAG), 0));
    sp_str star[] = {S("*")};
    CHECK(static_etag_match(star, 1, ETAG, strlen(ETAG), 0));
    sp_str other[] = {S("\"400-11\", \"400-1\"")};
    CHECK(!static_etag_match(other, 1, ETAG, strlen(ETAG), 1));
    sp_str unquoted[] = {S("400-10")};
    CHECK(!static_etag_match(unquoted, 1, ETAG, strlen(ETAG), 1));
    sp_str open_quote[] = {S("\"400-10")};
    CHECK(!static_etag_match(open_quote, 1, ETAG, strlen(ETAG), 1));
}

static int pre(const char *inm, const char *ims, const char *im, const char *ius, int64_t lm) {
    sp_str vinm = {inm, inm ? strlen(inm) : 0}, vim = {im, im ? strlen(im) : 0};
    static_cond c = {
        .if_match = &vim,
        .n_if_match = im ? 1 : 0,
        .if_none_match = &vinm,
        .n_if_none_match = inm ? 1 : 0,
        .if_modified_since = {ims, ims ? strlen(ims) : 0},
        .if_unmodified_since = {ius, ius ? strlen(ius) : 0},
    };
    return static_preconditions(&c, ETAG, strlen(ETAG), lm);
}

#define T0   "Sun, 06 Nov 1994 08:49:37 GMT" /* 784111777 */
#define T0_S 784111777

TEST(conditional_get) {
    CHECK_EQ(pre(NULL, NULL, NULL, NULL, T0_S), 0);
    CHECK_EQ(pre(ETAG, NULL, NULL, NULL, T0_S), 304);
    CHECK_EQ(pre("W/" ETAG, NULL, NULL, NULL, T0_S), 304); /* weak comparison */
    CHECK_EQ(pre("*", NULL, NULL, NULL, T0_S), 304);
    CHECK_EQ(pre("\"other\"", NULL, NULL, NULL, T0_S), 0);
    CHECK_EQ(pre(NULL, T0, NULL, NULL, T0_S), 304);     /* not modified since */
    CHECK_EQ(pre(NULL, T0, NULL, NULL, T0_S - 1), 304); /* older */
    CHECK_EQ(pre(NULL, T0, NULL, NULL, T0_S + 1), 0);   /* modified after */
    CHECK_EQ(pre(NULL, "garbage", NULL, NULL, T0_S), 0);
    /* If-None-Match takes precedence over If-Modified-Since (§13.2.2). */
    CHECK_EQ(pre("\"other\"", T0, NULL, NULL, T0_S), 0);
    CHECK_EQ(pre(ETAG, "Thu, 01 Jan 1970 00:00:00 GMT", NULL, NULL, T0_S), 304);
}

TEST(conditional_412) {
    CHECK_EQ(pre(NULL, NULL, ETAG, NULL, T0_S), 0);
    CHECK_EQ(pre(NULL, NULL, "\"other\"", NULL, T0_S), 412);
    CHECK_EQ(pre(NULL, NULL, "W/" ETAG, NULL, T0_S), 412); /* If-Match is strong */
    CHECK_EQ(pre(NULL, NULL, "*", NULL, T0_S), 0);
    CHECK_EQ(pre(NULL, NULL, NULL, T0, T0_S), 0);
    CHECK_EQ(pre(NULL, NULL, NULL, T0, T0_S + 1), 412);
    CHECK_EQ(pre(NULL, NULL, ETAG, "Thu, 01 Jan 1970 00:00:00 GMT", T0_S), 0); /* If-Match wins */
    CHECK_EQ(pre(ETAG, NULL, "\"other\"", NULL, T0_S), 412);                   /* 412 before 304 */
}

TEST(if_range) {
    int64_t now = T0_S + 100;
    CHECK(static_if_range((sp_str){NULL, 0}, ETAG, strlen(ETAG), T0_S, now));
    CHECK(static_if_range(S(ETAG), ETAG, strlen(ETAG), T0_S, now));
    CHECK(!static_if_range(S("W/" ETAG), ETAG, strlen(ETAG), T0_S, now));
    CHECK(!static_if_range(S("\"other\""), ETAG, strlen(ETAG), T0_S, now));
    CHECK(!static_if_range(S(ETAG ", " ETAG), ETAG, strlen(ETAG), T0_S, now));
    CHECK(static_if_range(S(T0), ETAG, strlen(ETAG), T0_S, now));
    CHECK(!static_if_range(S(T0), ETAG, strlen(ETAG), T0_S + 1, now)); /* changed since */
    CHECK(!static_if_range(S(T0), ETAG, strlen(ETAG), T0_S - 1, now)); /* exact match only */
    CHECK(!static_if_range(S(T0), ETAG, strlen(ETAG), T0_S, T0_S));    /* weak: too recent */
    CHECK(!static_if_range(S("garbage"), ETAG, strlen(ETAG), T0_S, now));
}

/* ---- Accept-Encoding -------------------------------------------------------------- */

static int gz(const char *v) {
    sp_str s = {v, strlen(v)};
    return static_accepts_gzip(&s, 1);
}

TEST(accept_encoding_gzip) {
    CHECK(static_accepts_gzip(NULL, 0) == 0);
    CHECK(gz("gzip"));
    CHECK(gz("GZIP"));
    CHECK(gz("x-gzip"));
    CHECK(gz("deflate, gzip, br"));
    CHECK(gz("gzip;q=0.5"));
    CHECK(gz("gzip ; q=1.000"));
    CHECK(gz("gzip;q=0.001"));
    CHECK(!gz("gzip;q=0"));
    CHECK(!gz("gzip;q=0.000"));
    CHECK(!gz("gzip; Q=0"));
    CHECK(!gz("deflate, br"));
    CHECK(!gz("identity"));
    CHECK(!gz(""));
    CHECK(gz("*"));
    CHECK(gz("br, *;q=0.1"));
    CHECK(!gz("*;q=0"));
    CHECK(!gz("gzip;q=0, *")); /* explicit gzip wins over * */
    CHECK(gz("*;q=0, gzip"));
    CHECK(!gz("gzipx"));
    CHECK(!gz("xgzip, gzip;q=2")); /* a bad qvalue ends the scan */
    sp_str lines[] = {S("br"), S("gzip")};
    CHECK(static_accepts_gzip(lines, 2));
}
