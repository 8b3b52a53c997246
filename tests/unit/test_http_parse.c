/* test_http_parse.c — the request-head parser, rule by rule (RFC 9112): each
 * input is parsed whole and split at every offset, always placed against an
 * unreadable page so that any read past the end faults. */
#include "unit.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "http/http_chars.h"
#include "http/http_parse.h"
#include "http/http_scan.h"

static const char *guarded(const void *s, size_t n) {
    return unit_guarded(s, n);
}

static http_field fields[128];

static int parse_n(const char *s, size_t n, size_t prev, http_request *r, const http_limits *lim) {
    r->fields = fields;
    r->fields_cap = 128;
    return http_parse_request(guarded(s, n), n, prev, r, lim);
}

/* The verdict on s, checked to be the same however the bytes arrive: every
 * prefix gives "need more" or that verdict, and a parse resumed with
 * prev_checked at any split agrees with the whole parse. */
static int verdict_lim(const char *s, size_t n, const http_limits *lim) {
    http_request r;
    int whole = parse_n(s, n, 0, &r, lim);
    for (size_t k = 0; k < n; k++) {
        int part = parse_n(s, k, 0, &r, lim);
        if (part != HTTP_NEED_MORE && part != whole && !(part > 0 && part <= (int)k)) {
            fprintf(stderr, "  split at %zu: %d, whole: %d\n", k, part, whole);
            CHECK(0);
        }
        /* A caller resumes only after "need more". */
        int resumed = part == HTTP_NEED_MORE ? parse_n(s, n, k, &r, lim) : whole;
        if (resumed != whole) {
            fprintf(stderr, "  resumed at %zu: %d, whole: %d\n", k, resumed, whole);
            CHECK(0);
        }
    }
    /* Byte by byte, each call told how much the last one saw. */
    int last = HTTP_NEED_MORE;
    for (size_t k = 1; k <= n && last == HTTP_NEED_MORE; k++)
        last = parse_n(s, k, k - 1, &r, lim);
    if (last != whole && !(last > 0 && whole > 0)) {
        fprintf(stderr, "  byte by byte: %d, whole: %d\n", last, whole);
        CHECK(0);
    }
    return parse_n(s, n, 0, &r, lim);
}

static int verdict(const char *s) {
    return verdict_lim(s, strlen(s), NULL);
}

typedef struct rule_case {
    const char *req;
    int want; /* 0: accepted, the head being the whole input; else -status */
} rule_case;

static void check_cases(const rule_case *c, size_t n) {
    for (size_t i = 0; i < n; i++) {
        int got = verdict(c[i].req);
        int want = c[i].want ? c[i].want : (int)strlen(c[i].req);
        if (got != want) {
            fprintf(stderr, "  case %zu \"%s\": got %d, want %d\n", i, c[i].req, got, want);
            CHECK(0);
        }
    }
}
#define CHECK_CASES(arr) check_cases(arr, sizeof arr / sizeof arr[0])

TEST(char_table_matches_rfc_sets) {
    const char *tchar = "!#$%&'*+-.^_`|~";
    for (int c = 0; c < 256; c++) {
        int alnum = (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
        CHECK_EQ(http_is((unsigned char)c, HTTP_C_TCHAR), alnum || (c && strchr(tchar, c)));
        CHECK_EQ(http_is((unsigned char)c, HTTP_C_VALUE), c == 9 || (c >= 0x20 && c != 0x7f));
        CHECK_EQ(http_is((unsigned char)c, HTTP_C_TARGET), c > 0x20 && c < 0x7f);
    }
}

/* The SSE2 scanners and the portable ones must stop at the same octet. */
TEST(scanners_agree_with_portable) {
    char buf[80];
    srand(7);
    for (int round = 0; round < 20000; round++) {
        size_t n = (size_t)(rand() % 70);
        for (size_t i = 0; i < n; i++) {
            int r = rand() % 10;
            buf[i] = (char)(r < 7 ? "aZ09-_x~"[rand() % 8] : rand() % 256);
        }
        const char *s = guarded(buf, n);
        CHECK(http_scan_token(s, s + n) == http_scan_token_portable(s, s + n));
        CHECK(http_scan_value(s, s + n) == http_scan_value_portable(s, s + n));
        CHECK(http_scan_target(s, s + n) == http_scan_target_portable(s, s + n));
    }
}

TEST(simple_get_fields) {
    const char *s = "GET /a?b=c HTTP/1.1\r\nHost: example.com\r\nX-Empty:\r\n"
                    "Accept:  \t text/html \t\r\nAccept: */*\r\n\r\nBODY";
    http_request r;
    int n = verdict_lim(s, strlen(s), NULL);
    CHECK_EQ(n, strlen(s) - 4);
    CHECK_EQ(parse_n(s, strlen(s), 0, &r, NULL), n);
    CHECK_MEM(r.method, r.method_len, "GET");
    CHECK_EQ(r.method_id, HTTP_M_GET);
    CHECK_MEM(r.target, r.target_len, "/a?b=c");
    CHECK_EQ(r.minor_version, 1);
    CHECK_EQ(r.nfields, 4);
    CHECK_MEM(r.fields[0].name, r.fields[0].name_len, "Host");
    CHECK_MEM(r.fields[0].value, r.fields[0].value_len, "example.com");
    CHECK_MEM(r.fields[1].name, r.fields[1].name_len, "X-Empty");
    CHECK_EQ(r.fields[1].value_len, 0);
    CHECK_MEM(r.fields[2].value, r.fields[2].value_len, "text/html");
    CHECK_MEM(r.fields[3].name, r.fields[3].name_len, "Accept");
    CHECK_MEM(r.fields[3].value, r.fields[3].value_len, "*/*");
    CHECK_MEM(r.host, r.host_len, "example.com");
    CHECK_EQ(r.framing, HTTP_BODY_NONE);
    CHECK(r.keep_alive);
    CHECK(!r.expect_continue);
}

TEST(method_ids) {
    static const struct {
        const char *m;
        http_method id;
    } t[] = {{"GET", HTTP_M_GET},        {"HEAD", HTTP_M_HEAD},     {"POST", HTTP_M_POST},
             {"PUT", HTTP_M_PUT},        {"DELETE", HTTP_M_DELETE}, {"OPTIONS", HTTP_M_OPTIONS},
             {"TRACE", HTTP_M_TRACE},    {"PATCH", HTTP_M_PATCH},   {"get", HTTP_M_OTHER},
             {"PROPFIND", HTTP_M_OTHER}, {"X-Y!#$", HTTP_M_OTHER}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char req[128];
        snprintf(req, sizeof req, "%s / HTTP/1.1\r\nHost: h\r\n\r\n", t[i].m);
        http_request r;
        CHECK_EQ(verdict(req), strlen(req));
        parse_n(req, strlen(req), 0, &r, NULL);
        CHECK_EQ(r.method_id, t[i].id);
    }
    http_request r;
    const char *c = "CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n";
    CHECK_EQ(parse_n(c, strlen(c), 0, &r, NULL), strlen(c));
    CHECK_EQ(r.method_id, HTTP_M_CONNECT);
}

/* RFC 9112 §3: request-line = method SP request-target SP HTTP-version. */
TEST(request_line_grammar) {
    static const rule_case t[] = {
        {"GET / HTTP/1.1\r\nHost: h\r\n\r\n", 0},
        {"\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", 0}, /* §2.2: empty line first */
        {"GET  / HTTP/1.1\r\nHost: h\r\n\r\n", -400}, /* two SP */
        {"GET /  HTTP/1.1\r\nHost: h\r\n\r\n", -400},
        {"GET\t/ HTTP/1.1\r\nHost: h\r\n\r\n", -400},
        {" GET / HTTP/1.1\r\nHost: h\r\n\r\n", -400},
        {"GET / HTTP/1.1 \r\nHost: h\r\n\r\n", -400},
        {"GE(T / HTTP/1.1\r\nHost: h\r\n\r\n", -400}, /* method is a token */
        {"G\x80T / HTTP/1.1\r\nHost: h\r\n\r\n", -400},
        {"GET /a\x01 HTTP/1.1\r\nHost: h\r\n\r\n", -400}, /* controls in target */
        {"GET /a\rb HTTP/1.1\r\nHost: h\r\n\r\n", -400},  /* bare CR in target */
        {"GET /a\x7f HTTP/1.1\r\nHost: h\r\n\r\n", -400},
        {"GET /\xc3\xa9 HTTP/1.1\r\nHost: h\r\n\r\n", -400}, /* RFC 3986: ASCII only */
        {"GET /a\tb HTTP/1.1\r\nHost: h\r\n\r\n", -400},
        {"GET /\r\nHost: h\r\n\r\n", -400}, /* HTTP/0.9 */
        {"GET  HTTP/1.1\r\nHost: h\r\n\r\n", -400},
        {"GET / HTTP/1.1\nHost: h\r\n\r\n", -400}, /* bare LF */
        {"GET / HTTP/1.1\r\nHost: h\n\r\n", -400},
        {"GET / HTTP/1.1\r\nHost: h\r\n\n", -400},
        {"GET / HTTP/1.1\r\rHost: h\r\n\r\n", -400},
        {"\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", -400},
    };
    CHECK_CASES(t);
}

/* RFC 9112 §3.2: the four target forms, each where it is allowed. */
TEST(target_forms) {
    static const rule_case t[] = {
        {"GET http://h/x?y HTTP/1.1\r\nHost: h\r\n\r\n", 0},
        {"GET https://h:8 HTTP/1.1\r\nHost: h:8\r\n\r\n", 0},
        {"GET https://u@h:8/ HTTP/1.1\r\nHost: h:8\r\n\r\n", -400}, /* RFC 9110 §4.2.4 */
        {"GET http://h/a@b HTTP/1.1\r\nHost: h\r\n\r\n", 0},
        {"GET http:/h/ HTTP/1.1\r\nHost: h\r\n\r\n", -400},
        {"GET http://[::1]:80/ HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", 0},
        {"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", 0},
        {"GET * HTTP/1.1\r\nHost: h\r\n\r\n", -400},
        {"OPTIONS *x HTTP/1.1\r\nHost: h\r\n\r\n", -400},
        {"CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n", 0},
        {"CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n", 0},
        {"CONNECT /x HTTP/1.1\r\nHost: h\r\n\r\n", -400},
        {"CONNECT h HTTP/1.1\r\nHost: h\r\n\r\n", -400},
        {"CONNECT u@h:1 HTTP/1.1\r\nHost: h\r\n\r\n", -400},
        {"CONNECT h:x HTTP/1.1\r\nHost: h\r\n\r\n", -400},
        {"GET h:443 HTTP/1.1\r\nHost: h\r\n\r\n", -400}, /* authority-form: CONNECT only */
        {"GET example.com:443 HTTP/1.1\r\nHost: h\r\n\r\n", -400},
        {"GET a/b HTTP/1.1\r\nHost: h\r\n\r\n", -400},
        {"GET 1http://h/ HTTP/1.1\r\nHost: h\r\n\r\n", -400},
        {"GET ?x HTTP/1.1\r\nHost: h\r\n\r\n", -400},
        /* RFC 9110 §4.2.1: an http(s) URI with an empty host is invalid. */
        {"GET http:///x HTTP/1.1\r\nHost: h\r\n\r\n", -400},
        {"GET http://?x HTTP/1.1\r\nHost: h\r\n\r\n", -400},
        {"GET http://:80/ HTTP/1.1\r\nHost: h\r\n\r\n", -400},
        {"GET http://a{b}/ HTTP/1.1\r\nHost: h\r\n\r\n", -400}, /* not host octets */
        {"GET http://a.example:8080?q HTTP/1.1\r\nHost: b\r\n\r\n", 0},
    };
    CHECK_CASES(t);
}

/* RFC 9112 §3.2.2: with an absolute-form target the server uses its
 * authority and ignores Host (which must still be valid, §3.2). */
TEST(absolute_form_authority_is_the_host) {
    static const struct {
        const char *req, *host;
    } t[] = {
        {"GET http://a.example/ HTTP/1.1\r\nHost: b.example\r\n\r\n", "a.example"},
        {"GET https://a.example:8443?x HTTP/1.1\r\nHost: b\r\n\r\n", "a.example:8443"},
        {"GET HTTP://[::1]:80 HTTP/1.1\r\nHost: b\r\n\r\n", "[::1]:80"},
        {"GET http://a/ HTTP/1.0\r\n\r\n", "a"},
        {"GET / HTTP/1.1\r\nHost: b.example\r\n\r\n", "b.example"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        http_request r;
        CHECK_EQ(verdict(t[i].req), strlen(t[i].req));
        parse_n(t[i].req, strlen(t[i].req), 0, &r, NULL);
        CHECK_MEM(r.host, r.host_len, t[i].host);
        CHECK_EQ(r.host_from_target, t[i].req[4] != '/');
    }
    /* Host after the target: still checked, still ignored. */
    CHECK_EQ(verdict("GET http://a/ HTTP/1.1\r\nHost: a b\r\n\r\n"), -400);
    CHECK_EQ(verdict("GET http://a/ HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n"), -400);
    CHECK_EQ(verdict("GET http://a/ HTTP/1.1\r\n\r\n"), -400); /* §3.2: Host is a MUST */
}

/* RFC 9112 §3: a method longer than any the server implements is 501, not a
 * header-size problem (431), however long it runs. */
TEST_T(overlong_method_is_501, 30) {
    static char req[100100];
    size_t n = 100000;
    memset(req, 'A', n);
    n += (size_t)sprintf(req + n, " / HTTP/1.1\r\nHost: h\r\n\r\n");
    http_request r;
    CHECK_EQ(parse_n(req, n, 0, &r, NULL), -501);
    CHECK_EQ(parse_n(req, 8192, 0, &r, NULL), -501);
    CHECK_EQ(parse_n(req, 100, 0, &r, NULL), -501); /* as soon as it is too long */
    const char *m64 = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
                      " / HTTP/1.1\r\nHost: h\r\n\r\n";
    CHECK_EQ(verdict(m64), strlen(m64)); /* HTTP_METHOD_MAX octets: a method */
    const char *m65 = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
                      " / HTTP/1.1\r\nHost: h\r\n\r\n";
    CHECK_EQ(verdict(m65), -501);
    CHECK_EQ(parse_n(req, 64, 0, &r, NULL), HTTP_NEED_MORE);
}

/* RFC 9112 §2.3, RFC 9110 §2.5: HTTP/1.x; other majors 505; else 400. */
TEST(versions) {
    static const rule_case t[] = {
        {"GET / HTTP/1.0\r\n\r\n", 0},
        {"GET / HTTP/1.9\r\nHost: h\r\n\r\n", 0},
        {"GET / HTTP/2.0\r\nHost: h\r\n\r\n", -505},
        {"GET / HTTP/0.9\r\nHost: h\r\n\r\n", -505},
        {"GET / HTTP/9.1\r\nHost: h\r\n\r\n", -505},
        {"GET / HTTP/1.10\r\nHost: h\r\n\r\n", -400},
        {"GET / HTTP/11.1\r\nHost: h\r\n\r\n", -400},
        {"GET / HTTP/1\r\nHost: h\r\n\r\n", -400},
        {"GET / HTTP/1.\r\nHost: h\r\n\r\n", -400},
        {"GET / http/1.1\r\nHost: h\r\n\r\n", -400},
        {"GET / HTTP/1,1\r\nHost: h\r\n\r\n", -400},
        {"GET / HTTP/a.1\r\nHost: h\r\n\r\n", -400},
        {"GET / HTTPS/1.1\r\nHost: h\r\n\r\n", -400},
    };
    CHECK_CASES(t);
    http_request r;
    const char *s = "GET / HTTP/1.7\r\nHost: h\r\n\r\n";
    CHECK_EQ(parse_n(s, strlen(s), 0, &r, NULL), strlen(s));
    CHECK_EQ(r.minor_version, 1);
}

/* RFC 9112 §5, RFC 9110 §5.5: field syntax. */
TEST(field_syntax) {
    static const rule_case t[] = {
        {"GET / HTTP/1.1\r\nHost: h\r\nX-!#$%&'*+.^_`|~: v\r\n\r\n", 0},
        {"GET / HTTP/1.1\r\nHost: h\r\nX: a\tb c\x80\xff\r\n\r\n", 0}, /* HTAB, obs-text */
        {"GET / HTTP/1.1\r\nHost: h\r\nX : v\r\n\r\n", -400},          /* space before colon */
        {"GET / HTTP/1.1\r\nHost: h\r\nX\t: v\r\n\r\n", -400},
        {"GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n", -400}, /* obs-fold */
        {"GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n\tb\r\n\r\n", -400},
        {"GET / HTTP/1.1\r\n Host: h\r\n\r\n", -400}, /* §2.2: ws after start line */
        {"GET / HTTP/1.1\r\nHost: h\r\n: v\r\n\r\n", -400},
        {"GET / HTTP/1.1\r\nHost: h\r\nX(y): v\r\n\r\n", -400},
        {"GET / HTTP/1.1\r\nHost: h\r\nX/y: v\r\n\r\n", -400},
        {"GET / HTTP/1.1\r\nHost: h\r\nX\x80: v\r\n\r\n", -400},
        {"GET / HTTP/1.1\r\nHost: h\r\nXv\r\n\r\n", -400}, /* no colon */
        {"GET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n", -400},
        {"GET / HTTP/1.1\r\nHost: h\r\nX: a\nb\r\n\r\n", -400},
        {"GET / HTTP/1.1\r\nHost: h\r\nX: a\x01\r\n\r\n", -400},
        {"GET / HTTP/1.1\r\nHost: h\r\nX: a\x7f\r\n\r\n", -400},
        {"GET / HTTP/1.1\r\nHost: h\r\nX: a\x1b\r\n\r\n", -400},
        {"GET / HTTP/1.1\r\nHost: h\r\nX: \r\n\r\n", 0},
    };
    CHECK_CASES(t);
    static const char nul[] = "GET / HTTP/1.1\r\nHost: h\r\nX: a\0b\r\n\r\n";
    CHECK_EQ(verdict_lim(nul, sizeof nul - 1, NULL), -400);
}

/* RFC 9112 §3.2: exactly one valid Host in HTTP/1.1; never two. */
TEST(host_rules) {
    static const rule_case t[] = {
        {"GET / HTTP/1.1\r\n\r\n", -400},
        {"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", -400},
        {"GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", -400},
        {"GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n", -400},
        {"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", -400},
        {"GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", -400},
        {"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", -400},
        /* Empty: only for a target URI without an authority (§3.2), and an
         * http(s) one always has one (RFC 9110 §4.2.1, RFC 9112 §3.3). */
        {"GET / HTTP/1.1\r\nHost:\r\n\r\n", -400},
        {"GET / HTTP/1.1\r\nHost: \r\n\r\n", -400},
        {"GET / HTTP/1.0\r\nHost:\r\n\r\n", -400},
        {"GET http://a/ HTTP/1.1\r\nHost:\r\n\r\n", -400},
        {"OPTIONS * HTTP/1.1\r\nHost:\r\n\r\n", -400},
        {"GET / HTTP/1.1\r\nHOST: a.b-c_~%20:8080\r\n\r\n", 0},
        {"GET / HTTP/1.0\r\n\r\n", 0},
    };
    CHECK_CASES(t);
}

/* RFC 9112 §6: where the body ends. */
TEST(framing_verdicts) {
    static const rule_case t[] = {
        {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n", 0},
        {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 005\r\n\r\n", 0},
        {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 0},
        {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", -400},
        {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5, 5\r\n\r\n", -400},
        {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +5\r\n\r\n", -400},
        {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -5\r\n\r\n", -400},
        {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5 5\r\n\r\n", -400},
        {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0x5\r\n\r\n", -400},
        {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length:\r\n\r\n", -400},
        {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 18446744073709551615\r\n\r\n", 0},
        {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 18446744073709551616\r\n\r\n", -400},
        {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n", -400},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", 0},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: CHUNKED\r\n\r\n", 0},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", -501},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n"
         "Transfer-Encoding: chunked\r\n\r\n",
         -501},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: pigeons, chunked\r\n\r\n", -501},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", -400},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", -400},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", -400},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
         "Transfer-Encoding: chunked\r\n\r\n",
         -400},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked;x=1\r\n\r\n", -400},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunkedx\r\n\r\n", -400},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\r\n\r\n", -400},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: \"chunked\"\r\n\r\n", -400},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
         -400},
        {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
         -400},
        {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", -400},
    };
    CHECK_CASES(t);
    http_request r;
    const char *s = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0042\r\n\r\n";
    CHECK_EQ(parse_n(s, strlen(s), 0, &r, NULL), strlen(s));
    CHECK_EQ(r.framing, HTTP_BODY_LENGTH);
    CHECK_EQ(r.content_length, 42);
    s = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: ,chunked\r\n\r\n";
    CHECK_EQ(parse_n(s, strlen(s), 0, &r, NULL), strlen(s));
    CHECK_EQ(r.framing, HTTP_BODY_CHUNKED);
    s = "GET / HTTP/1.1\r\nHost: h\r\n\r\n";
    CHECK_EQ(parse_n(s, strlen(s), 0, &r, NULL), strlen(s));
    CHECK_EQ(r.framing, HTTP_BODY_NONE);
}

/* RFC 9112 §9.3 persistence and RFC 9110 §10.1.1 Expect. */
TEST(connection_and_expect) {
    static const struct {
        const char *req;
        int status, keep, close, upgrade, cont;
    } t[] = {
        {"GET / HTTP/1.1\r\nHost: h\r\n\r\n", 0, 1, 0, 0, 0},
        {"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", 0, 0, 1, 0, 0},
        {"GET / HTTP/1.1\r\nHost: h\r\nConnection: close, abc\r\n\r\n", 0, 0, 1, 0, 0},
        {"GET / HTTP/1.1\r\nHost: h\r\nConnection: a,close\r\n\r\n", 0, 0, 1, 0, 0},
        {"GET / HTTP/1.1\r\nHost: h\r\nConnection: ,, ,\r\n\r\n", 0, 1, 0, 0, 0},
        {"GET / HTTP/1.1\r\nHost: h\r\nConnection: Keep-Alive, CLOSE\r\n\r\n", 0, 0, 1, 0, 0},
        {"GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, Upgrade\r\n\r\n", 0, 1, 0, 1, 0},
        {"GET / HTTP/1.0\r\n\r\n", 0, 0, 0, 0, 0},
        {"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 0, 1, 0, 0, 0},
        {"GET / HTTP/1.0\r\nConnection: x\r\nConnection: keep-alive\r\n\r\n", 0, 1, 0, 0, 0},
        {"GET / HTTP/1.0\r\nConnection: keep-alivex\r\n\r\n", 0, 0, 0, 0, 0},
        {"PUT / HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\n\r\n", 0, 1, 0, 0, 1},
        {"PUT / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n", 0, 0, 0, 0, 0},
        {"PUT / HTTP/1.1\r\nHost: h\r\nExpect: 200-ok\r\n\r\n", -417, 0, 0, 0, 0},
        {"PUT / HTTP/1.1\r\nHost: h\r\nExpect:\r\n\r\n", -417, 0, 0, 0, 0},
        {"PUT / HTTP/1.1\r\nExpect: 200-ok\r\n\r\n", -400, 0, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        http_request r;
        int got = verdict(t[i].req);
        parse_n(t[i].req, strlen(t[i].req), 0, &r, NULL);
        if (t[i].status) {
            CHECK_EQ(got, t[i].status);
            continue;
        }
        CHECK_EQ(got, strlen(t[i].req));
        CHECK_EQ(r.keep_alive, t[i].keep);
        CHECK_EQ(r.conn_close, t[i].close);
        CHECK_EQ(r.conn_upgrade, t[i].upgrade);
        CHECK_EQ(r.expect_continue, t[i].cont);
    }
}

static char big[40000];

/* Builds "GET /<tlen x 'a'> HTTP/1.1\r\nHost: h\r\n<nf fields>\r\n" in big. */
static size_t build(size_t tlen, size_t nf, size_t vlen) {
    size_t n = (size_t)sprintf(big, "GET /");
    memset(big + n, 'a', tlen);
    n += tlen;
    n += (size_t)sprintf(big + n, " HTTP/1.1\r\nHost: h\r\n");
    for (size_t i = 0; i < nf; i++) {
        n += (size_t)sprintf(big + n, "X-%zu: ", i);
        memset(big + n, 'v', vlen);
        n += vlen;
        n += (size_t)sprintf(big + n, "\r\n");
    }
    n += (size_t)sprintf(big + n, "\r\n");
    return n;
}

TEST_T(limits, 30) {
    http_request r;
    size_t n = build(100, 98, 10); /* Host + 98 + ... = 99 fields */
    CHECK_EQ(parse_n(big, n, 0, &r, NULL), n);
    n = build(100, 99, 10); /* 100 fields: the limit */
    CHECK_EQ(parse_n(big, n, 0, &r, NULL), n);
    n = build(100, 100, 10);
    CHECK_EQ(verdict_lim(big, n, NULL), -431);
    http_limits small = {0, 0, 3};
    n = build(1, 3, 1);
    CHECK_EQ(verdict_lim(big, n, &small), -431);
    /* Head bytes: exactly at the limit passes, one over is 431. */
    n = build(10, 1, 0);
    http_limits hl = {n, 0, 0};
    CHECK_EQ(verdict_lim(big, n, &hl), n);
    hl.head_max = n - 1;
    CHECK_EQ(verdict_lim(big, n, &hl), -431);
    n = build(10, 1, 9000);
    CHECK_EQ(parse_n(big, n, 0, &r, NULL), -431);
    CHECK_EQ(parse_n(big, 8192, 0, &r, NULL), -431); /* no need to see more */
    CHECK_EQ(parse_n(big, 8191, 0, &r, NULL), HTTP_NEED_MORE);
    /* Target: 8000 passes, 8001 is 414 as soon as it is seen. */
    n = build(7999, 0, 0);
    CHECK_EQ(parse_n(big, n, 0, &r, NULL), n);
    n = build(8000, 0, 0);
    CHECK_EQ(parse_n(big, n, 0, &r, NULL), -414);
    CHECK_EQ(parse_n(big, 8100, 0, &r, NULL), -414);
    http_limits tl = {0, 10, 0};
    n = build(20, 0, 0);
    CHECK_EQ(verdict_lim(big, n, &tl), -414);
    n = build(9, 0, 0);
    CHECK_EQ(verdict_lim(big, n, &tl), n);
    /* The caller's array bounds the count too. */
    r.fields = fields;
    r.fields_cap = 2;
    n = build(1, 2, 1);
    CHECK_EQ(http_parse_request(big, n, 0, &r, NULL), -431);
    r.fields_cap = 3;
    CHECK_EQ(http_parse_request(big, n, 0, &r, NULL), n);
}

/* A pipelined second request is not part of the head. */
TEST(pipelined_head_ends_at_blank_line) {
    const char *s = "GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n";
    http_request r;
    int n = parse_n(s, strlen(s), 0, &r, NULL);
    CHECK_EQ(n, strlen(s) / 2);
    CHECK_EQ(parse_n(s + n, strlen(s) - (size_t)n, 0, &r, NULL), strlen(s) / 2);
    CHECK_MEM(r.target, r.target_len, "/2");
}

/* A browser-style head, as in bench/parse.c. */
TEST(browser_request) {
    const char *s = "GET /wp-content/uploads/2010/03/hello-kitty-darth-vader-pink.jpg HTTP/1.1\r\n"
                    "Host: www.kittyhell.com\r\n"
                    "User-Agent: Mozilla/5.0 (Macintosh; U; Intel Mac OS X 10.6; ja-JP-mac; "
                    "rv:1.9.2.3) Gecko/20100401 Firefox/3.6.3 Pathtraq/0.9\r\n"
                    "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n"
                    "Accept-Language: ja,en-us;q=0.7,en;q=0.3\r\n"
                    "Accept-Encoding: gzip,deflate\r\n"
                    "Accept-Charset: Shift_JIS,utf-8;q=0.7,*;q=0.7\r\n"
                    "Keep-Alive: 115\r\n"
                    "Connection: keep-alive\r\n"
                    "Cookie: wp_ozh_wsa_visits=2; wp_ozh_wsa_visit_lasttime=xxxxxxxxxx; "
                    "__utma=xxxxxxxxx.xxxxxxxxxx.xxxxxxxxxx.xxxxxxxxxx.xxxxxxxxxx.x; "
                    "__utmz=xxxxxxxxx.xxxxxxxxxx.x.x.utmccn=(referral)|utmcsr=reader.livedoor.com|"
                    "utmcct=/reader/|utmcmd=referral\r\n"
                    "\r\n";
    CHECK_EQ(verdict(s), strlen(s));
}

/* http_request_rebase: every slice of a head whose bytes were copied
 * elsewhere follows them (req_park.c, h2_stream.c); a slice outside the
 * old bytes (NULL, a literal) stays. */
TEST(rebase_moves_every_slice_and_only_those) {
    char s[] = "GET /a?b HTTP/1.1\r\nHost: h.example\r\nX-One: 1\r\n\r\n";
    size_t n = strlen(s);
    http_request r;
    r.fields = fields;
    r.fields_cap = 128;
    CHECK_EQ(http_parse_request(s, n, 0, &r, NULL), n);
    char copy[sizeof s];
    memcpy(copy, s, sizeof s);
    memset(s, 'z', n); /* the old bytes gone: only rebased slices read right */
    const char *lit = "GET";
    const char *host = r.host;
    http_request_rebase(&r, s, n, copy);
    CHECK(r.method == copy && r.target == copy + 4 && r.host == copy + (host - s));
    CHECK_MEM(r.target, r.target_len, "/a?b");
    CHECK_MEM(r.host, r.host_len, "h.example");
    CHECK_EQ(r.nfields, 2);
    CHECK_MEM(r.fields[1].name, r.fields[1].name_len, "X-One");
    CHECK_MEM(r.fields[1].value, r.fields[1].value_len, "1");
    r.method = lit;
    r.host = NULL;
    http_request_rebase(&r, copy, n, s);
    CHECK(r.method == lit && r.host == NULL && r.target == s + 4);
}

#ifndef HTTP_PARSE_TEST_BASELINE
#define HTTP_PARSE_TEST_BASELINE 0
#endif

/* The copy under test is the one meant: AVX2 where the CPU has it, the
 * baseline in test_http_parse_sse2; so neither run silently tests the other. */
TEST(parser_copy_in_use) {
#if defined(__x86_64__) && !defined(HTTP_SCAN_PORTABLE)
    int want = HTTP_PARSE_TEST_BASELINE ? 0 : __builtin_cpu_supports("avx2") != 0;
    CHECK_EQ(http_parse_set_avx2(want), want);
#else
    CHECK_EQ(http_parse_set_avx2(1), -1); /* no AVX2 copy in this build */
#endif
}

/* The field-line cases at the scanners' step and buffer edges, and the two
 * copies against each other on random heads. */
#include "test_http_parse_lines.h"
