/* test_http_chunked.c — the chunked decoder (RFC 9112 §7.1): each input fed
 * whole, split at every offset and byte by byte from just before an unreadable
 * page; the decoded body, the end offset and the verdict must not change. */
#include "unit.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "http/http_chunked.h"
#include "http/http_parse.h"

static const char *guarded(const void *s, size_t n) {
    return unit_guarded(s, n);
}

typedef struct result {
    long status; /* 0 done, 1 need more, else -status */
    size_t end;  /* offset just past the body when done */
    char body[256];
    size_t body_len;
} result;

/* Feeds s[0..n) in pieces of the given sizes (the last repeats). */
static result feed(const char *s, size_t n, size_t first, size_t step, uint64_t body_max,
                   uint32_t line_max) {
    http_chunked d;
    http_chunked_init(&d, body_max, line_max, 0);
    result res = {1, 0, {0}, 0};
    size_t off = 0;
    while (off < n && !http_chunked_done(&d)) {
        size_t piece = off == 0 ? first : step;
        if (piece > n - off)
            piece = n - off;
        const char *p = guarded(s + off, piece);
        size_t used = 0;
        while (used < piece && !http_chunked_done(&d)) {
            const char *data;
            size_t dl;
            long k = http_chunked_decode(&d, p + used, piece - used, &data, &dl);
            if (k < 0) {
                res.status = k;
                return res;
            }
            CHECK(k > 0 && (size_t)k <= piece - used);
            if (dl) {
                CHECK(data >= p + used && data + dl <= p + used + k);
                CHECK(res.body_len + dl <= sizeof res.body);
                memcpy(res.body + res.body_len, data, dl);
                res.body_len += dl;
            }
            used += (size_t)k;
        }
        off += used;
    }
    if (http_chunked_done(&d)) {
        res.status = 0;
        res.end = off;
    }
    return res;
}

/* Decodes s every way and checks all ways agree; returns the verdict. */
static result decode_lim(const char *s, uint64_t body_max, uint32_t line_max) {
    size_t n = strlen(s);
    result whole = feed(s, n, n, n, body_max, line_max);
    for (size_t k = 1; k < n; k++) {
        result a = feed(s, n, k, n, body_max, line_max);
        result b = feed(s, n, k, 1, body_max, line_max);
        for (int i = 0; i < 2; i++) {
            result *x = i ? &b : &a;
            if (x->status != whole.status || x->end != whole.end || x->body_len != whole.body_len ||
                memcmp(x->body, whole.body, x->body_len)) {
                fprintf(stderr, "  split %zu (%d): status %ld vs %ld\n", k, i, x->status,
                        whole.status);
                CHECK(0);
            }
        }
    }
    return whole;
}

static result decode(const char *s) {
    return decode_lim(s, UINT64_MAX, 0);
}

static void check_ok(const char *s, const char *body, size_t end) {
    result r = decode(s);
    if (r.status != 0)
        fprintf(stderr, "  \"%s\": status %ld\n", s, r.status);
    CHECK_EQ(r.status, 0);
    CHECK_MEM(r.body, r.body_len, body);
    CHECK_EQ(r.end, end);
}

static void check_status(const char *s, long status) {
    result r = decode(s);
    if (r.status != status)
        fprintf(stderr, "  \"%s\": status %ld, want %ld\n", s, r.status, status);
    CHECK_EQ(r.status, status);
}

TEST(chunked_valid) {
    check_ok("5\r\nhello\r\n0\r\n\r\n", "hello", 15);
    check_ok("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\nGET", "hello world", 26);
    check_ok("A\r\n0123456789\r\n0\r\n\r\n", "0123456789", 20);
    check_ok("a\r\n0123456789\r\n000\r\n\r\n", "0123456789", 22);
    check_ok("0005\r\nhello\r\n0\r\n\r\n", "hello", 18);
    check_ok("0\r\n\r\n", "", 5);
    check_ok("0\r\nX-T: a\r\nY:\tb c \r\n\r\n", "", 22);
    check_ok("5;a\r\nhello\r\n0;b=c\r\n\r\n", "hello", 21);
    check_ok("5 ; a = b ; c\r\nhello\r\n0\r\n\r\n", "hello", 27);
    check_ok("5;a=\"q \\\" ; x\"\r\nhello\r\n0\r\n\r\n", "hello", 28);
    check_ok("5;a=\"\"\r\nhello\r\n0\r\n\r\n", "hello", 20);
    check_status("ffffffffffffffff\r\n", 1); /* fits 64 bits: wants the data */
}

TEST(chunked_invalid) {
    check_status("", 1);
    check_status("5\r\nhel", 1);
    check_status("5\r\nhello\r\n0\r\n", 1);
    check_status("x\r\n", -400);
    check_status("\r\n", -400);
    check_status("-5\r\nhello\r\n0\r\n\r\n", -400);
    check_status("+5\r\nhello\r\n0\r\n\r\n", -400);
    check_status("0x5\r\nhello\r\n0\r\n\r\n", -400);
    check_status("5\nhello\r\n0\r\n\r\n", -400);
    check_status("5\r\nhelloX\r\n0\r\n\r\n", -400);
    check_status("5\r\nhello\n0\r\n\r\n", -400);
    check_status("5\r\nhello\r\n0\r\n\n", -400);
    check_status("5\r\nhello\r\n0\n\r\n", -400);
    check_status("5 \r\nhello\r\n0\r\n\r\n", -400); /* BWS only before ";" */
    check_status("5;\r\nhello\r\n0\r\n\r\n", -400);
    check_status("5;a \r\nhello\r\n0\r\n\r\n", -400);
    check_status("5;a=\r\nhello\r\n0\r\n\r\n", -400);
    check_status("5;a=\"x\r\nhello\r\n0\r\n\r\n", -400);
    check_status("5;a=b\"c\"\r\nhello\r\n0\r\n\r\n", -400);
    check_status("5;a(b)\r\nhello\r\n0\r\n\r\n", -400);
    check_status("5;a=\x01\r\nhello\r\n0\r\n\r\n", -400);
    check_status("5\rhello\r\n0\r\n\r\n", -400);
    check_status("10000000000000000\r\n", -400); /* 2^64: overflow */
    check_status("0\r\nX : a\r\n\r\n", -400);
    check_status("0\r\n a\r\n\r\n", -400);
    check_status("0\r\nX: a\r\n b\r\n\r\n", -400); /* obs-fold in trailers */
    check_status("0\r\nX: a\x01\r\n\r\n", -400);
    check_status("0\r\nX: a\nY: b\r\n\r\n", -400);
    check_status("0\r\nXa\r\n\r\n", -400);
}

TEST(chunked_limits) {
    /* Total body: exactly the limit passes; the size line crossing it is 413. */
    CHECK_EQ(decode_lim("5\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n", 10, 0).status, 0);
    CHECK_EQ(decode_lim("5\r\nhello\r\n6\r\nworld!\r\n0\r\n\r\n", 10, 0).status, -413);
    CHECK_EQ(decode_lim("b\r\n", 10, 0).status, -413);
    /* Size line with its extensions: line_max. */
    CHECK_EQ(decode_lim("5;abcdef\r\nhello\r\n0\r\n\r\n", UINT64_MAX, 10).status, 0);
    CHECK_EQ(decode_lim("5;abcdefgh\r\nhello\r\n0\r\n\r\n", UINT64_MAX, 10).status, -400);
}

TEST(chunked_64k_extension_refused) {
    static char s[70000];
    size_t n = (size_t)sprintf(s, "5;x=");
    memset(s + n, 'a', 65536);
    n += 65536;
    sprintf(s + n, "\r\nhello\r\n0\r\n\r\n");
    http_chunked d;
    http_chunked_init(&d, UINT64_MAX, 0, 0);
    const char *data;
    size_t dl;
    CHECK_EQ(http_chunked_decode(&d, s, strlen(s), &data, &dl), -400);
}

TEST(chunked_trailer_limit) {
    static char s[20000];
    size_t n = (size_t)sprintf(s, "0\r\nX: ");
    memset(s + n, 'a', 9000);
    n += 9000;
    sprintf(s + n, "\r\n\r\n");
    http_chunked d;
    http_chunked_init(&d, UINT64_MAX, 0, 0);
    const char *data;
    size_t dl;
    CHECK_EQ(http_chunked_decode(&d, s, strlen(s), &data, &dl), -431);
    http_chunked_init(&d, UINT64_MAX, 0, 10000);
    CHECK_EQ(http_chunked_decode(&d, s, strlen(s), &data, &dl), (long)strlen(s));
    CHECK(http_chunked_done(&d));
}

/* After the body the decoder consumes nothing: the rest is the next request. */
TEST(chunked_stops_at_end) {
    const char *s = "0\r\n\r\nGET / HTTP/1.1\r\n";
    http_chunked d;
    http_chunked_init(&d, UINT64_MAX, 0, 0);
    const char *data;
    size_t dl;
    CHECK_EQ(http_chunked_decode(&d, s, strlen(s), &data, &dl), 5);
    CHECK(http_chunked_done(&d));
    CHECK_EQ(http_chunked_decode(&d, s + 5, strlen(s) - 5, &data, &dl), 0);
    CHECK_EQ(dl, 0);
}
