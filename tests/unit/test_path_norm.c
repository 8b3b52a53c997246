/* test_path_norm.c — request-target normalization: every rule of
 * path_norm.h, and the bypasses it exists to stop. */
#include "http/path_norm.h"
#include "unit.h"

static void expect(const char *target, const char *path, const char *query) {
    char out[512];
    const char *q;
    size_t qlen;
    long n = path_normalize(target, strlen(target), out, sizeof out, &q, &qlen);
    if (n < 0) {
        fprintf(stderr, "  target %s refused\n", target);
        CHECK(n >= 0);
    }
    CHECK_EQ(n, strlen(path));
    CHECK_STR(out, path);
    CHECK_MEM(q, qlen, query);
}

static void refuse(const char *target) {
    char out[512];
    const char *q;
    size_t qlen;
    CHECK_EQ(path_normalize(target, strlen(target), out, sizeof out, &q, &qlen), -1);
}

TEST(plain_paths_unchanged) {
    expect("/", "/", "");
    expect("/index.html", "/index.html", "");
    expect("/a/b/c/", "/a/b/c/", "");
}

TEST(query_split_off) {
    expect("/search?q=1&r=2", "/search", "q=1&r=2");
    expect("/?", "/", "");
    expect("/a?b/../c", "/a", "b/../c");
}

TEST(dot_segments_removed) {
    expect("/x/../admin", "/admin", "");
    expect("/a/./b", "/a/b", "");
    expect("/a/b/../../c", "/c", "");
    expect("/../../etc/passwd", "/etc/passwd", "");
    expect("/a/..", "/", "");
    expect("/a/.", "/a/", "");
    expect("/a/b/..", "/a/", "");
    expect("/..", "/", "");
    expect("/a/...", "/a/...", ""); /* three dots is a name */
}

TEST(unreserved_escapes_decoded_others_kept) {
    expect("/%61dmin", "/admin", "");
    expect("/%7euser", "/~user", "");
    expect("/a%2fb", "/a%2Fb", ""); /* an encoded slash is not a separator */
    expect("/a%20b", "/a%20b", "");
    expect("/%2e%2e/admin", "/admin", "");
    expect("/x/%2E%2E/admin", "/admin", "");
    expect("/x/.%2e/admin", "/admin", "");
}

TEST(slashes_merged) {
    expect("//admin", "/admin", "");
    expect("/a///b//", "/a/b/", "");
}

TEST(absolute_form_path) {
    expect("http://example.com/a/b?x=1", "/a/b", "x=1");
    expect("http://example.com", "/", "");
    expect("http://example.com?x", "/", "x");
    expect("http://example.com:8080/../a", "/a", "");
}

TEST(asterisk_form) {
    expect("*", "*", "");
}

TEST(bad_targets_refused) {
    refuse("/a%");
    refuse("/a%4");
    refuse("/a%zz");
    refuse("/a%00b");
    refuse("/a#frag");
    refuse("/a?q#frag");
    refuse("relative/path");
    refuse("");
}

TEST(percent_decode_full) {
    char out[64];
    CHECK_EQ(path_percent_decode("a%2Fb%20c", 9, out, sizeof out), 5);
    CHECK_STR(out, "a/b c");
    CHECK_EQ(path_percent_decode("%", 1, out, sizeof out), -1);
    CHECK_EQ(path_percent_decode("%0g", 3, out, sizeof out), -1);
    CHECK_EQ(path_percent_decode("%00", 3, out, sizeof out), -1);
}
