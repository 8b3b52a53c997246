/* test_access_log.c — the access log line (server/access_format.h): the
 * %-letter atoms, header atoms, the format check, and JSON lines whose
 * escaping holds against hostile header values. */
#include "server/access_format.h"

#include "unit.h"

#include <stdlib.h>
#include <time.h>

static const http_field req_h[] = {
    {"Host", 4, "example.org", 11},
    {"user-agent", 10, "curl/8.0", 8},
    {"Referer", 7, "http://a/", 9},
    {"X-Req", 5, "a\"b", 3},
};
static const http_field res_h[] = {{"Content-Type", 12, "text/plain", 10}};

static access_entry entry(void) {
    return (access_entry){.client = "10.0.0.1",
                          .method = "GET",
                          .method_len = 3,
                          .target = "/p/q?x=1",
                          .target_len = 8,
                          .minor_version = 1,
                          .status = 200,
                          .bytes = 5,
                          .req_fields = req_h,
                          .req_nfields = 4,
                          .res_fields = res_h,
                          .res_nfields = 1,
                          .duration_us = 2345678,
                          .time_ms = 1796121056123, /* 2026-12-01T10:30:56.123Z */
                          .pid = 42};
}

static char out[16384];

static const char *text(const char *fmt, const access_entry *e) {
    access_clock ck = {0};
    size_t n = access_format_text(fmt, e, &ck, out, sizeof out);
    CHECK(n >= 1 && out[n - 1] == '\n');
    out[n - 1] = 0;
    return out;
}

static const char *json(const access_entry *e) {
    access_clock ck = {0};
    size_t n = access_format_json(e, &ck, out, sizeof out);
    CHECK(n >= 1 && out[n - 1] == '\n');
    out[n - 1] = 0;
    return out;
}

TEST(text_atoms_as_gunicorn_has_them) {
    access_entry e = entry();
    CHECK_STR(text("%h %l %u \"%r\" %s %b \"%f\" \"%a\" %p %%", &e),
              "10.0.0.1 - - \"GET /p/q?x=1 HTTP/1.1\" 200 5 \"http://a/\" \"curl/8.0\" 42 %");
    CHECK_STR(text("%m|%U|%q|%H|%B", &e), "GET|/p/q|x=1|HTTP/1.1|5");
    CHECK_STR(text("%T %M %D %L", &e), "2 2345 2345678 2.345678");
    e.bytes = 0;
    e.target_len = 4;
    CHECK_STR(text("%b %B %q", &e), "- 0 -");
}

TEST(text_time_in_common_log_format) {
    setenv("TZ", "UTC", 1);
    tzset();
    access_entry e = entry();
    CHECK_STR(text("%t", &e), "[01/Dec/2026:10:30:56 +0000]");
}

TEST(header_atoms_case_insensitive_and_escaped) {
    access_entry e = entry();
    CHECK_STR(text("%{User-Agent}i|%{HOST}i|%{content-type}o|%{x-req}i", &e),
              "curl/8.0|example.org|text/plain|a\\x22b");
    CHECK_STR(text("%{Missing}i %{Host}o", &e), "- -");
    e.res_fields = NULL;
    e.res_nfields = 0;
    CHECK_STR(text("%{Content-Type}o", &e), "-");
}

TEST(text_line_cut_at_the_buffer_still_ends_in_newline) {
    access_entry e = entry();
    access_clock ck = {0};
    char small[8];
    size_t n = access_format_text("%h %r", &e, &ck, small, sizeof small);
    CHECK_EQ(n, 8);
    CHECK(memcmp(small, "10.0.0.\n", 8) == 0);
}

TEST(check_format) {
    char bad = 0;
    CHECK_EQ(access_log_check_format("%h %{User-Agent}i %{Content-Type}o %M %D", &bad), 0);
    CHECK_EQ(access_log_check_format("json", &bad), 0);
    CHECK_EQ(access_log_check_format("%Z", &bad), -1);
    CHECK_EQ(bad, 'Z');
    CHECK_EQ(access_log_check_format("%{User-Agent}x", &bad), -1);
    CHECK_EQ(bad, '{');
    CHECK_EQ(access_log_check_format("%{}i", &bad), -1);
    CHECK_EQ(access_log_check_format("%{Host", &bad), -1);
    CHECK_EQ(access_log_check_format("trailing %", &bad), -1);
    CHECK_EQ(bad, '%');
}

TEST(json_every_field) {
    access_entry e = entry();
    CHECK_STR(json(&e), "{\"client\":\"10.0.0.1\",\"time\":\"2026-12-01T10:30:56.123Z\","
                        "\"method\":\"GET\",\"target\":\"/p/q?x=1\",\"protocol\":\"HTTP/1.1\","
                        "\"status\":200,\"bytes\":5,\"referer\":\"http://a/\","
                        "\"user_agent\":\"curl/8.0\",\"duration_us\":2345678,\"pid\":42}");
}

TEST(json_absent_strings_are_null) {
    access_entry e = entry();
    e.method = e.target = NULL;
    e.method_len = e.target_len = 0;
    e.req_nfields = 1;
    e.minor_version = 0;
    const char *j = json(&e);
    CHECK(strstr(j, "\"method\":null,\"target\":null,\"protocol\":\"HTTP/1.0\""));
    CHECK(strstr(j, "\"referer\":null,\"user_agent\":null"));
}

static const char *json_ua(const char *ua, size_t n) {
    http_field f = {"User-Agent", 10, ua, n};
    access_entry e = entry();
    e.req_fields = &f;
    e.req_nfields = 1;
    const char *j = json(&e);
    const char *p = strstr(j, "\"user_agent\":");
    CHECK(p);
    static char v[8192];
    const char *end = strstr(p, ",\"duration_us\"");
    CHECK(end);
    size_t len = (size_t)(end - p - 13);
    memcpy(v, p + 13, len);
    v[len] = 0;
    return v;
}

TEST(json_escapes_hostile_values) {
    CHECK_STR(json_ua("a\"b\\c", 5), "\"a\\\"b\\\\c\"");
    CHECK_STR(json_ua("\x01\t\n\x1f\x7f", 5), "\"\\u0001\\u0009\\u000a\\u001f\\u007f\"");
    CHECK_STR(json_ua("x\0y", 3), "\"x\\u0000y\"");
    /* The line cannot be closed early and a second object forged. */
    CHECK_STR(json_ua("\"}\n{\"status\":1", 14), "\"\\\"}\\u000a{\\\"status\\\":1\"");
}

TEST(json_utf8_kept_invalid_bytes_as_latin1_escapes) {
    CHECK_STR(json_ua("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14),
              "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
    CHECK_STR(json_ua("\xff\xfe", 2), "\"\\u00ff\\u00fe\"");
    CHECK_STR(json_ua("\xc3", 1), "\"\\u00c3\"");                       /* cut sequence */
    CHECK_STR(json_ua("\xc0\xaf", 2), "\"\\u00c0\\u00af\"");            /* overlong '/' */
    CHECK_STR(json_ua("\xed\xa0\x80", 3), "\"\\u00ed\\u00a0\\u0080\""); /* surrogate */
    CHECK_STR(json_ua("\xf4\x90\x80\x80", 4), "\"\\u00f4\\u0090\\u0080\\u0080\"");
    CHECK_STR(json_ua("\xe2\x82", 2), "\"\\u00e2\\u0082\"");
}

TEST(json_caps_a_long_value_at_1_kib) {
    static char big[5000];
    memset(big, '\x01', sizeof big);
    const char *v = json_ua(big, sizeof big);
    CHECK_EQ(strlen(v), 1024 * 6 + 2);
}
