/* test_ws_ext.c — permessage-deflate's negotiation (RFC 7692 §7.1), a test
 * per rule: each parameter's effect on the answer and the windows, several
 * offers, every reason to decline, headers that are no extension list;
 * input against an unreadable page, so over-reads crash. */
#include "server/ws/ws_ext.h"
#include "unit.h"

#include <string.h>

static ws_deflate_params P;
static char R[WS_EXT_RESP_MAX];

static int neg(const char *v, int bits) {
    memset(&P, 0xee, sizeof P);
    strcpy(R, "untouched");
    size_t n = strlen(v);
    return ws_ext_negotiate(unit_guarded(v, n), n, bits, &P, R);
}

TEST(ws_ext_plain_offer_gets_our_window) {
    CHECK_EQ(neg("permessage-deflate", 12), 1);
    CHECK_STR(R, "permessage-deflate; server_max_window_bits=12");
    CHECK_EQ(P.server_bits, 12);
    CHECK_EQ(P.client_bits, 15); /* the client did not let us choose */
    CHECK_EQ(P.server_no_context_takeover, 0);
    CHECK_EQ(P.client_no_context_takeover, 0);
    /* At 15 nothing needs saying. */
    CHECK_EQ(neg("permessage-deflate", 15), 1);
    CHECK_STR(R, "permessage-deflate");
    CHECK_EQ(P.server_bits, 15);
}

TEST(ws_ext_client_max_window_bits) {
    /* Without a value: the client lets us choose its window. */
    CHECK_EQ(neg("permessage-deflate; client_max_window_bits", 12), 1);
    CHECK_STR(R, "permessage-deflate; server_max_window_bits=12; client_max_window_bits=12");
    CHECK_EQ(P.client_bits, 12);
    CHECK_EQ(neg("permessage-deflate; client_max_window_bits", 15), 1);
    CHECK_STR(R, "permessage-deflate"); /* 15 is what it would use anyway */
    CHECK_EQ(P.client_bits, 15);
    /* With a value: at most that, and ours if smaller. */
    CHECK_EQ(neg("permessage-deflate; client_max_window_bits=10", 12), 1);
    CHECK_STR(R, "permessage-deflate; server_max_window_bits=12; client_max_window_bits=10");
    CHECK_EQ(P.client_bits, 10);
    CHECK_EQ(neg("permessage-deflate; client_max_window_bits=15", 12), 1);
    CHECK_EQ(P.client_bits, 12);
    CHECK_EQ(neg("permessage-deflate; client_max_window_bits=8", 12), 1);
    CHECK_EQ(P.client_bits, 8); /* inflating with 256 bytes is fine */
    /* Quoted. */
    CHECK_EQ(neg("permessage-deflate; client_max_window_bits=\"9\"", 12), 1);
    CHECK_EQ(P.client_bits, 9);
}

TEST(ws_ext_server_max_window_bits) {
    CHECK_EQ(neg("permessage-deflate; server_max_window_bits=10", 12), 1);
    CHECK_STR(R, "permessage-deflate; server_max_window_bits=10");
    CHECK_EQ(P.server_bits, 10);
    /* A larger one than ours: ours (the same or smaller, §7.1.2.1). */
    CHECK_EQ(neg("permessage-deflate; server_max_window_bits=15", 12), 1);
    CHECK_STR(R, "permessage-deflate; server_max_window_bits=12");
    /* Asked for, it is said even at 15. */
    CHECK_EQ(neg("permessage-deflate; server_max_window_bits=15", 15), 1);
    CHECK_STR(R, "permessage-deflate; server_max_window_bits=15");
    /* 8: zlib cannot, so the offer is declined. */
    CHECK_EQ(neg("permessage-deflate; server_max_window_bits=8", 12), 0);
    CHECK_STR(R, "untouched");
    /* It needs a value. */
    CHECK_EQ(neg("permessage-deflate; server_max_window_bits", 12), 0);
}

TEST(ws_ext_no_context_takeover) {
    CHECK_EQ(neg("permessage-deflate; server_no_context_takeover", 12), 1);
    CHECK_STR(R, "permessage-deflate; server_no_context_takeover; server_max_window_bits=12");
    CHECK_EQ(P.server_no_context_takeover, 1);
    CHECK_EQ(P.client_no_context_takeover, 0);
    CHECK_EQ(neg("permessage-deflate; client_no_context_takeover", 15), 1);
    CHECK_STR(R, "permessage-deflate; client_no_context_takeover");
    CHECK_EQ(P.client_no_context_takeover, 1);
    /* All four at once: the longest response fits. */
    CHECK_EQ(neg("permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
                 "server_max_window_bits=10; client_max_window_bits=11",
                 12),
             1);
    CHECK_STR(R, "permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
                 "server_max_window_bits=10; client_max_window_bits=11");
    CHECK_EQ(P.server_bits, 10);
    CHECK_EQ(P.client_bits, 11);
    /* A value where none belongs. */
    CHECK_EQ(neg("permessage-deflate; server_no_context_takeover=1", 12), 0);
    CHECK_EQ(neg("permessage-deflate; client_no_context_takeover=\"x\"", 12), 0);
}

TEST(ws_ext_bad_window_values_decline) {
    const char *bad[] = {"7", "16", "0", "08", "012", "-9", "9.0", "1x", "\"\"", "99999999999"};
    char v[80];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(v, sizeof v, "permessage-deflate; client_max_window_bits=%s", bad[i]);
        CHECK_EQ(neg(v, 12), 0);
        snprintf(v, sizeof v, "permessage-deflate; server_max_window_bits=%s", bad[i]);
        CHECK_EQ(neg(v, 12), 0);
    }
}

TEST(ws_ext_unknown_or_repeated_parameters_decline) {
    CHECK_EQ(neg("permessage-deflate; foo", 12), 0);
    CHECK_EQ(neg("permessage-deflate; foo=1", 12), 0);
    CHECK_EQ(neg("permessage-deflate; server_no_context_takeover; server_no_context_takeover", 12),
             0);
    CHECK_EQ(neg("permessage-deflate; client_max_window_bits; client_max_window_bits=10", 12), 0);
    /* Names compare without case, as tokens do. */
    CHECK_EQ(neg("PerMessage-Deflate; Client_Max_Window_Bits", 12), 1);
    CHECK_EQ(P.client_bits, 12);
}

TEST(ws_ext_several_offers_first_acceptable_wins) {
    /* The first is declined (server window 8), the second accepted. */
    CHECK_EQ(neg("permessage-deflate; server_max_window_bits=8, permessage-deflate; "
                 "client_max_window_bits",
                 12),
             1);
    CHECK_STR(R, "permessage-deflate; server_max_window_bits=12; client_max_window_bits=12");
    /* Both fine: the first, the client's preference. */
    CHECK_EQ(neg("permessage-deflate; server_no_context_takeover, permessage-deflate", 12), 1);
    CHECK_EQ(P.server_no_context_takeover, 1);
    /* Other extensions around it are skipped, with their parameters. */
    CHECK_EQ(
        neg("x-webkit-deflate-frame; max_window_bits=8, foo; a=\"b\\c\" , permessage-deflate", 12),
        1);
    CHECK_EQ(P.server_bits, 12);
    CHECK_EQ(neg("x-webkit-deflate-frame, foo", 12), 0);
    /* Empty list elements are allowed. */
    CHECK_EQ(neg(" , permessage-deflate ,, ", 12), 1);
    /* Spaces and tabs around everything. */
    CHECK_EQ(neg("permessage-deflate\t;\tclient_max_window_bits =  10 ", 12), 1);
    CHECK_EQ(P.client_bits, 10);
}

TEST(ws_ext_not_an_extension_list_declines_all) {
    const char *bad[] = {
        "",
        "   ",
        ",",
        "permessage-deflate;",
        "permessage-deflate; ;client_max_window_bits",
        "permessage-deflate client_max_window_bits",
        "permessage-deflate; client_max_window_bits=",
        "permessage-deflate; client_max_window_bits=\"10",
        "permessage-deflate; client_max_window_bits=\"1 0\"",
        "foo; a=\"b,c\", permessage-deflate", /* unquoted, a value must be a token */
        "permessage-deflate; client_max_window_bits=\"10\\",
        "permessage-deflate, foo;=1",
        "permessage-deflate, \"foo\"",
        "permessage-deflate; client_max_window_bits=10 11",
        "permessage-deflate\x01",
        "permessage-deflate; server_max_window_bits=10, permessage-deflate; =",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (neg(bad[i], 12) != 0) {
            fprintf(stderr, "  accepted: '%s'\n", bad[i]);
            CHECK(0);
        }
        CHECK_STR(R, "untouched");
    }
    /* An escaped character in a quoted value that is still a token. */
    CHECK_EQ(neg("permessage-deflate; client_max_window_bits=\"1\\0\"", 12), 1);
    CHECK_EQ(P.client_bits, 10);
}

TEST(ws_ext_our_window_setting_is_checked) {
    CHECK_EQ(neg("permessage-deflate", 8), 0);
    CHECK_EQ(neg("permessage-deflate", 16), 0);
    CHECK_EQ(neg("permessage-deflate", 0), 0);
    CHECK_EQ(neg("permessage-deflate", 9), 1);
    CHECK_EQ(P.server_bits, 9);
}
