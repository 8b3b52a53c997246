/* test_tls_names.c — which certificate answers an SNI name (tls_names.c):
 * exact names ignoring case, a wildcard for exactly one left-most label,
 * exact names before wildcards, the first certificate by default. */
#include "unit.h"

#include "net/tls_ctx.h"

TEST(exact_names_ignore_case) {
    CHECK(tls_name_match("a.test", "a.test"));
    CHECK(tls_name_match("A.Test", "a.TEST"));
    CHECK(tls_name_match("a.test", "a.test.")); /* an absolute name */
    CHECK(!tls_name_match("a.test", "b.test"));
    CHECK(!tls_name_match("a.test", "a.test.x"));
    CHECK(!tls_name_match("a.test", "xa.test"));
    CHECK(!tls_name_match("a.test", ""));
    CHECK(!tls_name_match(NULL, "a.test"));
    CHECK(!tls_name_match("a.test", NULL));
}

TEST(wildcard_is_one_label) {
    CHECK(tls_name_match("*.b.test", "x.b.test"));
    CHECK(tls_name_match("*.b.test", "X-1.B.test"));
    CHECK(!tls_name_match("*.b.test", "b.test"));     /* not the parent */
    CHECK(!tls_name_match("*.b.test", "y.x.b.test")); /* not two labels */
    CHECK(!tls_name_match("*.b.test", ".b.test"));    /* not an empty label */
    CHECK(!tls_name_match("*.b.test", "x.c.test"));
}

TEST(odd_wildcards_match_nothing) {
    CHECK(!tls_name_match("*", "a"));
    CHECK(!tls_name_match("*.", "a."));
    CHECK(!tls_name_match("*a.test", "ba.test"));
    CHECK(!tls_name_match("*.test", "a.test")); /* a whole top-level domain */
}

static const char *const n0[] = {"default.test"};
static const char *const n1[] = {"*.b.test", "b.test"};
static const char *const n2[] = {"x.b.test", "c.test"};
static const char *const *const lists[] = {n0, n1, n2};
static const int counts[] = {1, 2, 2};

TEST(pick_prefers_exact_then_wildcard_then_default) {
    CHECK_EQ(tls_pick_cert(lists, counts, 3, "default.test"), 0);
    CHECK_EQ(tls_pick_cert(lists, counts, 3, "b.test"), 1);
    CHECK_EQ(tls_pick_cert(lists, counts, 3, "y.b.test"), 1);
    /* x.b.test: certificate 2 names it exactly, before 1's wildcard */
    CHECK_EQ(tls_pick_cert(lists, counts, 3, "x.b.test"), 2);
    CHECK_EQ(tls_pick_cert(lists, counts, 3, "C.TEST"), 2);
    CHECK_EQ(tls_pick_cert(lists, counts, 3, "nobody.test"), 0);
    CHECK_EQ(tls_pick_cert(lists, counts, 3, ""), 0);
    CHECK_EQ(tls_pick_cert(lists, counts, 3, NULL), 0);
}
