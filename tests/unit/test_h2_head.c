/* test_h2_head.c — an HTTP/2 header list made into an HTTP/1.1 head
 * (http/h2_head.h), one test per rule of RFC 9113 §8.2-§8.3 it enforces. */
#include "http/h2_head.h"

#include "unit.h"

#include <string.h>

typedef struct fix {
    http_request r;
    http_field f[8];
    h2_head h;
} fix;

static void begin(fix *x, size_t cap) {
    memset(x, 0, sizeof *x);
    x->r.fields = x->f;
    x->r.fields_cap = cap;
    h2_head_init(&x->h, &x->r, 100);
}

static int add(fix *x, const char *n, const char *v) {
    return h2_head_add(&x->h, n, strlen(n), v, strlen(v));
}

/* A well-formed GET's pseudo-headers. */
static void get(fix *x, const char *path) {
    CHECK_EQ(add(x, ":method", "GET"), 0);
    CHECK_EQ(add(x, ":scheme", "http"), 0);
    CHECK_EQ(add(x, ":path", path), 0);
}

TEST(get_becomes_http11_head) {
    fix x;
    begin(&x, 8);
    get(&x, "/a?b");
    CHECK_EQ(add(&x, ":authority", "example.org"), 0);
    CHECK_EQ(add(&x, "accept", "*/*"), 0);
    CHECK_EQ(h2_head_end(&x.h, 1), 0);
    CHECK_EQ(x.r.method_id, HTTP_M_GET);
    CHECK_MEM(x.r.target, x.r.target_len, "/a?b");
    CHECK_MEM(x.r.host, x.r.host_len, "example.org");
    CHECK_EQ(x.r.minor_version, 1);
    CHECK_EQ(x.r.framing, HTTP_BODY_NONE);
    CHECK(x.r.keep_alive);
    /* the authority is also a Host field, for handlers that read it */
    CHECK_EQ(x.r.nfields, 2);
    CHECK_MEM(x.r.fields[1].name, x.r.fields[1].name_len, "host");
    CHECK_MEM(x.r.fields[1].value, x.r.fields[1].value_len, "example.org");
}

TEST(body_framing_from_length_or_stream_end) {
    fix x;
    begin(&x, 8);
    get(&x, "/");
    CHECK_EQ(add(&x, "host", "h"), 0);
    CHECK_EQ(add(&x, "content-length", "42"), 0);
    CHECK_EQ(h2_head_end(&x.h, 0), 0);
    CHECK_EQ(x.r.framing, HTTP_BODY_LENGTH);
    CHECK_EQ(x.r.content_length, 42);
    begin(&x, 8);
    get(&x, "/");
    CHECK_EQ(add(&x, "host", "h"), 0);
    CHECK_EQ(h2_head_end(&x.h, 0), 0);
    CHECK_EQ(x.r.framing, HTTP_BODY_CHUNKED); /* length unknown: ends with the stream */
}

TEST(pseudo_after_regular_is_malformed) {
    fix x;
    begin(&x, 8);
    CHECK_EQ(add(&x, ":method", "GET"), 0);
    CHECK_EQ(add(&x, "accept", "*/*"), 0);
    CHECK_EQ(add(&x, ":path", "/"), -400);
}

TEST(pseudo_twice_or_unknown_is_malformed) {
    fix x;
    begin(&x, 8);
    CHECK_EQ(add(&x, ":path", "/"), 0);
    CHECK_EQ(add(&x, ":path", "/"), -400);
    CHECK_EQ(add(&x, ":status", "200"), -400);
    CHECK_EQ(add(&x, ":protocol", "websocket"), 0); /* RFC 8441: taken, judged at the end */
    CHECK_EQ(add(&x, ":protocol", "websocket"), -400);
    CHECK_EQ(add(&x, ":bogus", "x"), -400);
}

TEST(missing_pseudo_is_malformed) {
    fix x;
    begin(&x, 8);
    CHECK_EQ(add(&x, ":method", "GET"), 0);
    CHECK_EQ(add(&x, ":path", "/"), 0);
    CHECK_EQ(add(&x, "host", "h"), 0);
    CHECK_EQ(h2_head_end(&x.h, 1), -400); /* no :scheme */
    begin(&x, 8);
    CHECK_EQ(add(&x, ":method", "GET"), 0);
    CHECK_EQ(add(&x, ":scheme", "http"), 0);
    CHECK_EQ(add(&x, "host", "h"), 0);
    CHECK_EQ(h2_head_end(&x.h, 1), -400); /* no :path */
    begin(&x, 8);
    CHECK_EQ(add(&x, ":scheme", "http"), 0);
    CHECK_EQ(add(&x, ":path", "/"), 0);
    CHECK_EQ(h2_head_end(&x.h, 1), -400); /* no :method */
}

TEST(path_absolute_or_asterisk_for_options) {
    fix x;
    begin(&x, 8);
    get(&x, "relative");
    CHECK_EQ(add(&x, "host", "h"), 0);
    CHECK_EQ(h2_head_end(&x.h, 1), -400);
    begin(&x, 8);
    get(&x, "*");
    CHECK_EQ(add(&x, "host", "h"), 0);
    CHECK_EQ(h2_head_end(&x.h, 1), -400); /* "*" only with OPTIONS */
    begin(&x, 8);
    CHECK_EQ(add(&x, ":method", "OPTIONS"), 0);
    CHECK_EQ(add(&x, ":scheme", "http"), 0);
    CHECK_EQ(add(&x, ":path", "*"), 0);
    CHECK_EQ(add(&x, "host", "h"), 0);
    CHECK_EQ(h2_head_end(&x.h, 1), 0);
}

TEST(path_over_target_max_is_414) {
    fix x;
    begin(&x, 8);
    char p[200];
    memset(p, 'a', sizeof p - 1);
    p[0] = '/';
    p[sizeof p - 1] = '\0';
    CHECK_EQ(add(&x, ":path", p), -414);
}

TEST(authority_and_host_must_agree) {
    fix x;
    begin(&x, 8);
    get(&x, "/");
    CHECK_EQ(add(&x, ":authority", "Example.org"), 0);
    CHECK_EQ(add(&x, "host", "example.ORG"), 0);
    CHECK_EQ(h2_head_end(&x.h, 1), 0); /* case does not matter */
    CHECK_EQ(x.r.nfields, 1);          /* no second Host made up */
    begin(&x, 8);
    get(&x, "/");
    CHECK_EQ(add(&x, ":authority", "a.example"), 0);
    CHECK_EQ(add(&x, "host", "b.example"), 0);
    CHECK_EQ(h2_head_end(&x.h, 1), -400);
}

TEST(no_authority_nor_host_is_malformed) {
    fix x;
    begin(&x, 8);
    get(&x, "/");
    CHECK_EQ(h2_head_end(&x.h, 1), -400);
}

TEST(connection_specific_fields_refused) {
    const char *names[] = {"connection", "keep-alive", "proxy-connection", "transfer-encoding",
                           "upgrade"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        fix x;
        begin(&x, 8);
        get(&x, "/");
        CHECK_EQ(add(&x, names[i], "x"), -400);
    }
}

TEST(te_only_trailers) {
    fix x;
    begin(&x, 8);
    get(&x, "/");
    CHECK_EQ(add(&x, "te", "trailers"), 0);
    CHECK_EQ(add(&x, "te", "gzip"), -400);
}

TEST(upper_case_name_refused) {
    fix x;
    begin(&x, 8);
    CHECK_EQ(add(&x, "Accept", "*/*"), -400);
}

TEST(value_with_cr_lf_or_nul_refused) {
    fix x;
    begin(&x, 8);
    CHECK_EQ(add(&x, "x", "a\r\nb"), -400);
    CHECK_EQ(h2_head_add(&x.h, "x", 1, "a\0b", 3), -400);
}

TEST(content_length_rules) {
    fix x;
    begin(&x, 8);
    get(&x, "/");
    CHECK_EQ(add(&x, "content-length", "12a"), -400);
    CHECK_EQ(add(&x, "content-length", "5"), 0);
    CHECK_EQ(add(&x, "content-length", "5"), 0);
    CHECK_EQ(add(&x, "content-length", "6"), -400);
    begin(&x, 8);
    get(&x, "/");
    CHECK_EQ(add(&x, "host", "h"), 0);
    CHECK_EQ(add(&x, "content-length", "5"), 0);
    CHECK_EQ(h2_head_end(&x.h, 1), -400); /* promised 5 bytes, sent none */
}

TEST(second_host_refused) {
    fix x;
    begin(&x, 8);
    CHECK_EQ(add(&x, "host", "a"), 0);
    CHECK_EQ(add(&x, "host", "a"), -400);
}

TEST(too_many_fields_is_431) {
    fix x;
    begin(&x, 2);
    get(&x, "/");
    CHECK_EQ(add(&x, "a", "1"), 0);
    CHECK_EQ(add(&x, "b", "2"), 0);
    CHECK_EQ(add(&x, "c", "3"), -431);
    begin(&x, 1);
    get(&x, "/");
    CHECK_EQ(add(&x, ":authority", "h"), 0);
    CHECK_EQ(add(&x, "a", "1"), 0);
    CHECK_EQ(h2_head_end(&x.h, 1), -431); /* no room for the Host it becomes */
}

TEST(connect_not_implemented) {
    fix x;
    begin(&x, 8);
    CHECK_EQ(add(&x, ":method", "CONNECT"), 0);
    CHECK_EQ(add(&x, ":authority", "h:443"), 0);
    CHECK_EQ(h2_head_end(&x.h, 1), -501);
}

/* RFC 8441 §4: an extended CONNECT for a WebSocket. */
static void ext_connect(fix *x, const char *protocol, int path) {
    begin(x, 8);
    CHECK_EQ(add(x, ":method", "CONNECT"), 0);
    CHECK_EQ(add(x, ":protocol", protocol), 0);
    CHECK_EQ(add(x, ":scheme", "https"), 0);
    if (path)
        CHECK_EQ(add(x, ":path", "/chat?room=1"), 0);
    CHECK_EQ(add(x, ":authority", "example.org"), 0);
    CHECK_EQ(add(x, "sec-websocket-version", "13"), 0);
}

TEST(extended_connect_websocket_becomes_a_get) {
    fix x;
    ext_connect(&x, "websocket", 1);
    CHECK_EQ(h2_head_end(&x.h, 0), 0);
    CHECK_EQ(x.r.method_id, HTTP_M_GET);
    CHECK_MEM(x.r.method, x.r.method_len, "GET");
    CHECK(x.r.websocket_connect);
    CHECK_EQ(x.r.framing, HTTP_BODY_NONE); /* the stream's DATA are no body */
    CHECK_MEM(x.r.target, x.r.target_len, "/chat?room=1");
    CHECK_MEM(x.r.host, x.r.host_len, "example.org");
}

TEST(extended_connect_rules) {
    fix x;
    ext_connect(&x, "websocket", 0); /* no :path */
    CHECK_EQ(h2_head_end(&x.h, 0), -400);
    CHECK(!x.r.websocket_connect);
    ext_connect(&x, "chat", 1); /* a protocol we do not carry */
    CHECK_EQ(h2_head_end(&x.h, 0), -501);
    ext_connect(&x, "websocket", 1); /* the stream ended with the head */
    CHECK_EQ(h2_head_end(&x.h, 1), -400);
    ext_connect(&x, "websocket", 1);
    CHECK_EQ(add(&x, "content-length", "0"), 0);
    CHECK_EQ(h2_head_end(&x.h, 0), -400);
    begin(&x, 8); /* :protocol without CONNECT */
    get(&x, "/");
    CHECK_EQ(add(&x, ":protocol", "websocket"), 0);
    CHECK_EQ(add(&x, ":authority", "h"), 0);
    CHECK_EQ(h2_head_end(&x.h, 0), -400);
    begin(&x, 8); /* no :authority (a Host does not do) */
    CHECK_EQ(add(&x, ":method", "CONNECT"), 0);
    CHECK_EQ(add(&x, ":protocol", "websocket"), 0);
    CHECK_EQ(add(&x, ":scheme", "http"), 0);
    CHECK_EQ(add(&x, ":path", "/"), 0);
    CHECK_EQ(add(&x, "host", "h"), 0);
    CHECK_EQ(h2_head_end(&x.h, 0), -400);
}
