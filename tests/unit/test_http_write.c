/* test_http_write.c — the response writer: exact heads for each framing case
 * (RFC 9112 §6, §9.3; RFC 9110 §8.6), refusal of injected fields, the Date
 * text and chunk framing. */
#include "unit.h"

#include <errno.h>
#include <stdint.h>

#include "http/http_write.h"

static char head[1024];

static const char *write_head(const http_response *r, http_out *o) {
    int n = http_write_head(r, head, sizeof head, o);
    CHECK(n > 0);
    head[n] = '\0';
    return head;
}

TEST(date_imf_fixdate) {
    http_date_cache c;
    http_date_update(&c, 784111777); /* RFC 9110 §5.6.7's example */
    CHECK_MEM(c.text, HTTP_DATE_LEN, "Sun, 06 Nov 1994 08:49:37 GMT");
    http_date_update(&c, 0);
    CHECK_MEM(c.text, HTTP_DATE_LEN, "Thu, 01 Jan 1970 00:00:00 GMT");
    http_date_update(&c, 1709251199); /* a leap day's last second */
    CHECK_MEM(c.text, HTTP_DATE_LEN, "Thu, 29 Feb 2024 23:59:59 GMT");
    CHECK_EQ(c.sec, 1709251199);
}

TEST(length_known_keep_alive) {
    http_field f[] = {{"Content-Type", 12, "text/plain", 10}};
    http_response r = {200, 1, 0, 1, 5, f, 1, "Sun, 06 Nov 1994 08:49:37 GMT", 0};
    http_out o;
    CHECK_STR(write_head(&r, &o), "HTTP/1.1 200 OK\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
                                  "Content-Type: text/plain\r\nContent-Length: 5\r\n\r\n");
    CHECK_EQ(o.framing, HTTP_OUT_LENGTH);
    CHECK_EQ(o.keep_alive, 1);
    struct iovec iov[2];
    CHECK_EQ(http_write_response(&r, head, sizeof head, "hello", 5, iov, &o), 2);
    CHECK_MEM(iov[1].iov_base, iov[1].iov_len, "hello");
    CHECK_EQ(iov[0].iov_len, strlen("HTTP/1.1 200 OK\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
                                    "Content-Type: text/plain\r\nContent-Length: 5\r\n\r\n"));
    CHECK_EQ(http_write_response(&r, head, sizeof head, "hell", 4, iov, &o), -EINVAL);
}

TEST(streaming_11_chunked_10_close) {
    http_response r = {200, 1, 0, 1, -1, NULL, 0, NULL, 0};
    http_out o;
    CHECK_STR(write_head(&r, &o), "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    CHECK_EQ(o.framing, HTTP_OUT_CHUNKED);
    CHECK_EQ(o.keep_alive, 1);
    r.minor_version = 0;
    CHECK_STR(write_head(&r, &o), "HTTP/1.0 200 OK\r\nConnection: close\r\n\r\n");
    CHECK_EQ(o.framing, HTTP_OUT_CLOSE);
    CHECK_EQ(o.keep_alive, 0);
    r.content_length = 3;
    CHECK_STR(write_head(&r, &o),
              "HTTP/1.0 200 OK\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\n");
    r.keep_alive = 0;
    CHECK_STR(write_head(&r, &o),
              "HTTP/1.0 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\n");
    CHECK_EQ(o.keep_alive, 0);
}

/* RFC 9110 §8.6, RFC 9112 §6.1: no Content-Length or TE on 1xx and 204. */
TEST(no_content_statuses) {
    http_response r = {204, 1, 0, 1, 10, NULL, 0, NULL, 0};
    http_out o;
    CHECK_STR(write_head(&r, &o), "HTTP/1.1 204 No Content\r\n\r\n");
    CHECK_EQ(o.framing, HTTP_OUT_NONE);
    r.content_length = -1;
    CHECK_STR(write_head(&r, &o), "HTTP/1.1 204 No Content\r\n\r\n");
    r.status = 100;
    CHECK_STR(write_head(&r, &o), "HTTP/1.1 100 Continue\r\n\r\n");
    http_field up[] = {{"Connection", 10, "upgrade", 7}, {"Upgrade", 7, "websocket", 9}};
    http_response u = {101, 1, 0, 1, -1, up, 2, NULL, 0};
    CHECK_STR(write_head(&u, &o), "HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\n"
                                  "Upgrade: websocket\r\n\r\n");
    r.minor_version = 0; /* RFC 9110 §15.2: no 1xx to HTTP/1.0 */
    CHECK_EQ(http_write_head(&r, head, sizeof head, &o), -EINVAL);
}

/* HEAD and 304 carry the length GET / 200 would have, but no body. */
TEST(head_and_304) {
    http_response r = {200, 1, 1, 1, 1234, NULL, 0, NULL, 0};
    http_out o;
    CHECK_STR(write_head(&r, &o), "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n");
    CHECK_EQ(o.framing, HTTP_OUT_NONE);
    struct iovec iov[2];
    CHECK_EQ(http_write_response(&r, head, sizeof head, NULL, 0, iov, &o), 1);
    r.content_length = -1; /* streaming GET: HEAD says nothing of length */
    CHECK_STR(write_head(&r, &o), "HTTP/1.1 200 OK\r\n\r\n");
    CHECK_EQ(o.framing, HTTP_OUT_NONE);
    CHECK_EQ(o.keep_alive, 1);
    http_response n = {304, 1, 0, 1, 99, NULL, 0, NULL, 0};
    CHECK_STR(write_head(&n, &o), "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n");
    CHECK_EQ(o.framing, HTTP_OUT_NONE);
    n.content_length = -1;
    CHECK_STR(write_head(&n, &o), "HTTP/1.1 304 Not Modified\r\n\r\n");
}

TEST(invalid_fields_refused) {
    static const http_field bad[] = {
        {"X-A", 3, "a\r\nSet-Cookie: x", 17},
        {"X-A", 3, "a\nb", 3},
        {"X-A", 3, "a\0b", 3},
        {"X-A", 3, "a\x7f", 2},
        {"X-A", 3, " a", 2},
        {"X-A", 3, "a\t", 2},
        {"X A", 3, "a", 1},
        {"X:A", 3, "a", 1},
        {"", 0, "a", 1},
        {"X\r\n", 3, "a", 1},
        {"Content-Length", 14, "5", 1},
        {"transfer-encoding", 17, "chunked", 7},
        {"Connection", 10, "close", 5},
        {"Date", 4, "x", 1},
    };
    http_out o = {HTTP_OUT_CHUNKED, 7};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        http_response r = {200, 1, 0, 1, 0, &bad[i], 1, NULL, 0};
        memset(head, 'z', 8);
        CHECK_EQ(http_write_head(&r, head, sizeof head, &o), -EINVAL);
        CHECK_MEM(head, 8, "zzzzzzzz"); /* nothing written */
    }
    CHECK_EQ(o.keep_alive, 7);
    http_field ok[] = {{"X-A", 3, "a\tb \x80", 5}};
    http_response r = {200, 1, 0, 1, 0, ok, 1, NULL, 0};
    CHECK(http_write_head(&r, head, sizeof head, &o) > 0);
    r.status = 99;
    CHECK_EQ(http_write_head(&r, head, sizeof head, &o), -EINVAL);
    r.status = 600;
    CHECK_EQ(http_write_head(&r, head, sizeof head, &o), -EINVAL);
}

TEST(no_space) {
    http_response r = {200, 1, 0, 1, 0, NULL, 0, NULL, 0};
    http_out o;
    int n = http_write_head(&r, head, sizeof head, &o);
    CHECK(n > 0);
    CHECK_EQ(http_write_head(&r, head, (size_t)n, &o), n);
    CHECK_EQ(http_write_head(&r, head, (size_t)n - 1, &o), -ENOSPC);
    CHECK_EQ(http_write_head(&r, head, 0, &o), -ENOSPC);
}

TEST(reasons_and_odd_status) {
    CHECK_STR(http_reason(404), "Not Found");
    CHECK_STR(http_reason(413), "Content Too Large");
    CHECK_STR(http_reason(299), "");
    http_response r = {299, 1, 0, 1, 0, NULL, 0, NULL, 0};
    http_out o;
    CHECK_STR(write_head(&r, &o), "HTTP/1.1 299 \r\nContent-Length: 0\r\n\r\n");
}

TEST(chunk_framing) {
    char line[HTTP_CHUNK_LINE_MAX];
    CHECK_EQ(http_chunk_line(line, 0), 3);
    CHECK_MEM(line, 3, "0\r\n");
    CHECK_EQ(http_chunk_line(line, 255), 4);
    CHECK_MEM(line, 4, "ff\r\n");
    CHECK_EQ(http_chunk_line(line, 0x1000), 6);
    CHECK_MEM(line, 6, "1000\r\n");
    CHECK_EQ(http_chunk_line(line, UINT64_MAX), 18);
    CHECK_MEM(line, 18, "ffffffffffffffff\r\n");
    struct iovec iov[3];
    CHECK_EQ(http_chunk_iov(line, "hello", 5, iov), 3);
    CHECK_MEM(iov[0].iov_base, iov[0].iov_len, "5\r\n");
    CHECK_MEM(iov[1].iov_base, iov[1].iov_len, "hello");
    CHECK_MEM(iov[2].iov_base, iov[2].iov_len, "\r\n");
    CHECK_EQ(http_chunk_iov(line, "", 0, iov), 0);
    CHECK_EQ(strlen(HTTP_LAST_CHUNK), HTTP_LAST_CHUNK_LEN);
}
