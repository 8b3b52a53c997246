/* test_http_chunked_copy.c — http_chunked_decode_copy, the coalescing
 * decoder sp_read uses: many small chunks come out in one call, a full
 * output buffer stops it without losing a byte, and any split of the input
 * with any buffer size gives the same body and the same end. */
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>

#include "http/http_chunked.h"

/* A body of n one-byte chunks "x", the last chunk and the final CRLF. */
static char *tiny_chunks(size_t n, size_t *len) {
    char *s = malloc(n * 6 + 6);
    CHECK(s != NULL);
    for (size_t i = 0; i < n; i++)
        memcpy(s + i * 6, "1\r\nx\r\n", 6);
    memcpy(s + n * 6, "0\r\n\r\n", 6);
    *len = n * 6 + 5;
    return s;
}

/* 1000 tiny chunks buffered together: one call returns all their data. */
TEST(chunked_copy_coalesces_tiny_chunks) {
    size_t len;
    char *s = tiny_chunks(1000, &len);
    http_chunked d;
    http_chunked_init(&d, UINT64_MAX, 0, 0);
    char out[4096];
    size_t got = 0;
    long used = http_chunked_decode_copy(&d, s, len, out, sizeof out, &got);
    CHECK_EQ(used, (long)len);
    CHECK_EQ(got, 1000);
    CHECK(http_chunked_done(&d));
    for (size_t i = 0; i < got; i++)
        CHECK(out[i] == 'x');
    free(s);
}

/* A full output stops the call mid-chunk; the next call goes on from there. */
TEST(chunked_copy_stops_when_full) {
    const char *s = "5\r\nabcde\r\n5\r\nfghij\r\n0\r\n\r\nGET";
    size_t len = strlen(s);
    http_chunked d;
    http_chunked_init(&d, UINT64_MAX, 0, 0);
    char out[16];
    size_t got = 0;
    long used = http_chunked_decode_copy(&d, s, len, out, 7, &got);
    CHECK_EQ(got, 7);
    CHECK(memcmp(out, "abcdefg", 7) == 0);
    CHECK(!http_chunked_done(&d));
    long more = http_chunked_decode_copy(&d, s + used, len - (size_t)used, out, sizeof out, &got);
    CHECK_EQ(got, 3);
    CHECK(memcmp(out, "hij", 3) == 0);
    CHECK(http_chunked_done(&d));
    CHECK_EQ((size_t)(used + more), len - 3); /* "GET" is the next request's */
}

/* Every input piece size and every output size: the same body, the same end. */
TEST(chunked_copy_any_split_any_cap) {
    const char *s = "3;a=b\r\nabc\r\n1\r\nd\r\nA\r\n0123456789\r\n2\r\nef\r\n0\r\nT: v\r\n\r\nX";
    const char *body = "abcd0123456789ef";
    size_t len = strlen(s), blen = strlen(body);
    for (size_t piece = 1; piece <= len; piece++) {
        for (size_t cap = 1; cap <= blen + 1; cap++) {
            http_chunked d;
            http_chunked_init(&d, UINT64_MAX, 0, 0);
            char acc[64];
            size_t have = 0, off = 0;
            while (off < len && !http_chunked_done(&d)) {
                size_t in = len - off < piece ? len - off : piece;
                size_t used_here = 0;
                while (used_here < in && !http_chunked_done(&d)) {
                    char out[32];
                    size_t got = 0;
                    long k = http_chunked_decode_copy(&d, s + off + used_here, in - used_here, out,
                                                      cap, &got);
                    CHECK(k >= 0);
                    CHECK(got <= cap);
                    CHECK(k > 0); /* progress, so the loop ends */
                    CHECK(have + got <= sizeof acc);
                    memcpy(acc + have, out, got);
                    have += got;
                    used_here += (size_t)k;
                }
                off += used_here;
            }
            CHECK(http_chunked_done(&d));
            CHECK_EQ(off, len - 1);
            CHECK_EQ(have, blen);
            CHECK(memcmp(acc, body, blen) == 0);
        }
    }
}

/* A framing error in the run of chunks is the call's result. */
TEST(chunked_copy_reports_errors) {
    const char *s = "1\r\nx\r\n1\r\nyZ\r\n";
    http_chunked d;
    http_chunked_init(&d, UINT64_MAX, 0, 0);
    char out[64];
    size_t got = 0;
    CHECK_EQ(http_chunked_decode_copy(&d, s, strlen(s), out, sizeof out, &got), -400);
    http_chunked_init(&d, 1, 0, 0);
    CHECK_EQ(http_chunked_decode_copy(&d, "1\r\nx\r\n1\r\ny\r\n", 12, out, sizeof out, &got), -413);
}
