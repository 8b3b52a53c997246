/* test_forwarded.c — the trusted-proxy module (server/forwarded.h): trust
 * lists as --forwarded-allow-ips gives them, which peers they trust, and
 * the client address read from Forwarded (RFC 7239) or X-Forwarded-For.
 * Each case pins what the code does today, quirks included (marked). */
#include "server/forwarded.h"

#include "http/http_parse.h"
#include "unit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sys/socket.h>

/* The head of a GET with the given field lines ("Name: value\r\n"...). */
static const http_request *head(const char *field_lines) {
    static char buf[4096];
    static http_field fields[32];
    static http_request r;
    snprintf(buf, sizeof buf, "GET / HTTP/1.1\r\nHost: example.com\r\n%s\r\n", field_lines);
    r = (http_request){.fields = fields, .fields_cap = 32};
    CHECK(http_parse_request(buf, strlen(buf), 0, &r, NULL) > 0);
    return &r;
}

static fwd_nets nets(const char *list) {
    fwd_nets n = {0};
    int rc = fwd_parse_nets(&n, list);
    if (rc != 0)
        fprintf(stderr, "  list \"%s\": %d\n", list, rc);
    CHECK_EQ(rc, 0);
    return n;
}

/* The proxies of the tests: 10/8 and 2001:db8:ffff::/48. */
#define PROXIES "10.0.0.0/8, 2001:db8:ffff::/48"

/* fwd_client under list for the field lines gives want ("" for none). */
static void client(const char *list, const char *field_lines, const char *want) {
    fwd_nets n = nets(list);
    char out[64];
    memset(out, 'x', sizeof out);
    int rc = fwd_client(head(field_lines), &n, out, sizeof out);
    if (strcmp(out, want) != 0)
        fprintf(stderr, "  fields: %s", field_lines);
    CHECK_STR(out, want);
    CHECK_EQ(rc, want[0] != '\0');
}

static int peer(const fwd_nets *n, const char *ip) {
    uint8_t a[16] = {0};
    if (inet_pton(AF_INET, ip, a) == 1)
        return fwd_peer_trusted(n, AF_INET, a);
    CHECK(inet_pton(AF_INET6, ip, a) == 1);
    return fwd_peer_trusted(n, AF_INET6, a);
}

/* ---- fwd_parse_nets ----------------------------------------------------- */

TEST(parse_empty_list_trusts_nothing) {
    fwd_nets n = nets("");
    CHECK_EQ(n.ntrusted, 0);
    CHECK_EQ(n.trust_all, 0);
    n = nets(" , ,, ");
    CHECK_EQ(n.ntrusted, 0);
    CHECK_EQ(n.trust_all, 0);
}

TEST(parse_addresses_and_networks) {
    fwd_nets n = nets("10.0.0.1,192.168.0.0/16 ::1  2001:db8::/32 ,, 0.0.0.0/0");
    CHECK_EQ(n.ntrusted, 5);
    CHECK_EQ(n.trust_all, 0);
    CHECK_EQ(n.trusted[0].family, AF_INET);
    CHECK_EQ(n.trusted[0].prefix, 32); /* a bare address: the whole width */
    CHECK_EQ(n.trusted[1].family, AF_INET);
    CHECK_EQ(n.trusted[1].prefix, 16);
    CHECK_EQ(n.trusted[2].family, AF_INET6);
    CHECK_EQ(n.trusted[2].prefix, 128);
    CHECK_EQ(n.trusted[3].family, AF_INET6);
    CHECK_EQ(n.trusted[3].prefix, 32);
    CHECK_EQ(n.trusted[4].prefix, 0);
    CHECK_EQ(n.trusted[1].addr[0], 192);
    CHECK_EQ(n.trusted[1].addr[1], 168);
}

TEST(parse_star_trusts_all) {
    fwd_nets n = nets("*");
    CHECK_EQ(n.trust_all, 1);
    CHECK_EQ(n.ntrusted, 0);
    n = nets("10.0.0.1, *");
    CHECK_EQ(n.trust_all, 1);
    CHECK_EQ(n.ntrusted, 1);
}

TEST(parse_adds_to_what_is_there) {
    fwd_nets n = nets("10.0.0.1");
    CHECK_EQ(fwd_parse_nets(&n, "10.0.0.2"), 0);
    CHECK_EQ(n.ntrusted, 2);
}

static void bad(const char *list, int err) {
    fwd_nets n = {0};
    int rc = fwd_parse_nets(&n, list);
    if (rc != err)
        fprintf(stderr, "  list \"%s\"\n", list);
    CHECK_EQ(rc, err);
}

TEST(parse_refuses_bad_items) {
    bad("garbage", -EINVAL);
    bad("10.0.0.256", -EINVAL);
    bad("10.0.0", -EINVAL);
    bad("**", -EINVAL);           /* only a lone "*" is the wildcard */
    bad("localhost", -EINVAL);    /* no name resolution */
    bad("fe80::1%eth0", -EINVAL); /* no zone ids */
    bad("[::1]", -EINVAL);        /* no brackets in the list */
    bad("10.0.0.1:80", -EINVAL);  /* no ports */
    bad("10.0.0.0/33", -EINVAL);  /* prefix longer than the address */
    bad("::/129", -EINVAL);
    bad("10.0.0.0/", -EINVAL); /* empty prefix */
    bad("10.0.0.0/-1", -EINVAL);
    bad("10.0.0.0/8x", -EINVAL);
    bad("10.0.0.0/8/8", -EINVAL);
    bad("/8", -EINVAL);                /* no address */
    bad("10.0.0.0/ 8", -EINVAL);       /* a space splits: "10.0.0.0/" then "8" */
    bad("10.0.0.1;10.0.0.2", -EINVAL); /* only commas and spaces separate */
    bad("1111:2222:3333:4444:5555:6666:7777:8888:9999", -EINVAL);
    bad("0000:0000:0000:0000:0000:0000:0000:0000:0000:0000:0000:0000", -EINVAL); /* too long */
}

TEST(parse_quirks_kept) {
    /* strtol's leniency: a '+' sign and leading zeros in the prefix pass. */
    fwd_nets n = nets("10.0.0.0/+8, 10.0.0.0/08");
    CHECK_EQ(n.trusted[0].prefix, 8);
    CHECK_EQ(n.trusted[1].prefix, 8);
    /* Host bits under the mask are kept and ignored when matching. */
    n = nets("10.1.2.3/8");
    CHECK_EQ(peer(&n, "10.200.0.1"), 1);
}

TEST(parse_failure_keeps_what_came_before) {
    fwd_nets n = {0};
    CHECK_EQ(fwd_parse_nets(&n, "10.0.0.1, *, bogus, 10.0.0.2"), -EINVAL);
    CHECK_EQ(n.ntrusted, 1);
    CHECK_EQ(n.trust_all, 1);
}

TEST(parse_at_most_max_nets) {
    char list[1024] = "";
    for (int i = 0; i < FORWARD_MAX_NETS; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "10.0.0.%d,", i);
    fwd_nets n = nets(list);
    CHECK_EQ(n.ntrusted, FORWARD_MAX_NETS);
    CHECK_EQ(fwd_parse_nets(&n, "*"), 0); /* "*" takes no slot */
    CHECK_EQ(fwd_parse_nets(&n, "10.0.1.1"), -ENOSPC);
    CHECK_EQ(n.ntrusted, FORWARD_MAX_NETS);
}

/* ---- fwd_peer_trusted --------------------------------------------------- */

TEST(peer_in_a_network) {
    fwd_nets n = nets(PROXIES ", 192.0.2.128/25, 198.51.100.7");
    CHECK_EQ(peer(&n, "10.0.0.1"), 1);
    CHECK_EQ(peer(&n, "10.255.255.255"), 1);
    CHECK_EQ(peer(&n, "11.0.0.1"), 0);
    CHECK_EQ(peer(&n, "192.0.2.128"), 1); /* a prefix that is no multiple of 8 */
    CHECK_EQ(peer(&n, "192.0.2.255"), 1);
    CHECK_EQ(peer(&n, "192.0.2.127"), 0);
    CHECK_EQ(peer(&n, "198.51.100.7"), 1);
    CHECK_EQ(peer(&n, "198.51.100.8"), 0);
    CHECK_EQ(peer(&n, "2001:db8:ffff::1"), 1);
    CHECK_EQ(peer(&n, "2001:db8:ffff:ffff::1"), 1);
    CHECK_EQ(peer(&n, "2001:db8:fffe::1"), 0);
    CHECK_EQ(peer(&n, "::1"), 0);
}

TEST(peer_family_must_match) {
    fwd_nets n = nets("0.0.0.0/0");
    CHECK_EQ(peer(&n, "203.0.113.1"), 1);
    CHECK_EQ(peer(&n, "::1"), 0);
    n = nets("::/0");
    CHECK_EQ(peer(&n, "::1"), 1);
    CHECK_EQ(peer(&n, "203.0.113.1"), 0);
}

TEST(peer_ipv4_mapped_ipv6_is_not_its_ipv4) {
    /* Not handled: a v4 client of a dual-stack [::] listener arrives as
     * ::ffff:a.b.c.d (AF_INET6) and matches no IPv4 network. */
    fwd_nets n = nets("10.0.0.0/8");
    CHECK_EQ(peer(&n, "::ffff:10.0.0.1"), 0);
    n = nets("::ffff:10.0.0.0/104");
    CHECK_EQ(peer(&n, "::ffff:10.0.0.1"), 1);
    CHECK_EQ(peer(&n, "10.0.0.1"), 0);
}

TEST(peer_trust_all) {
    fwd_nets n = nets("*");
    CHECK_EQ(peer(&n, "203.0.113.1"), 1);
    CHECK_EQ(peer(&n, "2001:db8::1"), 1);
    uint8_t zero[16] = {0};
    CHECK_EQ(fwd_peer_trusted(&n, AF_UNSPEC, zero), 0); /* only inet families */
}

TEST(peer_nothing_trusted) {
    fwd_nets n = {0};
    CHECK_EQ(peer(&n, "127.0.0.1"), 0);
    CHECK_EQ(peer(&n, "::1"), 0);
}

TEST(peer_unix_socket) {
    /* A local proxy on a unix socket: trusted as soon as any proxy is. */
    uint8_t zero[16] = {0};
    fwd_nets n = {0};
    CHECK_EQ(fwd_peer_trusted(&n, AF_UNIX, zero), 0);
    n = nets("192.0.2.1");
    CHECK_EQ(fwd_peer_trusted(&n, AF_UNIX, zero), 1);
    n = nets("*");
    CHECK_EQ(fwd_peer_trusted(&n, AF_UNIX, zero), 1);
}

/* ---- fwd_client: Forwarded ---------------------------------------------- */

TEST(no_header_no_client) {
    client(PROXIES, "", "");
    client(PROXIES, "X-Other: 192.0.2.1\r\n", "");
}

TEST(forwarded_for) {
    client(PROXIES, "Forwarded: for=192.0.2.60\r\n", "192.0.2.60");
    client(PROXIES, "forwarded: FOR=192.0.2.60\r\n", "192.0.2.60");   /* names fold case */
    client(PROXIES, "Forwarded: for=2001:db8::1\r\n", "2001:db8::1"); /* unquoted v6 taken */
}

TEST(forwarded_with_proto_and_host) {
    client(PROXIES, "Forwarded: for=192.0.2.60;proto=https;host=example.com\r\n", "192.0.2.60");
    client(PROXIES, "Forwarded: proto=https;for=192.0.2.60;by=10.0.0.1\r\n", "192.0.2.60");
    client(PROXIES, "Forwarded: host=example.com; for=192.0.2.60\r\n", "192.0.2.60");
    /* No for= at all: nothing from Forwarded; X-Forwarded-For is next. */
    client(PROXIES, "Forwarded: proto=https;host=example.com\r\n", "");
    client(PROXIES, "Forwarded: proto=https\r\nX-Forwarded-For: 192.0.2.9\r\n", "192.0.2.9");
    /* "for=" must start a parameter: xfor= or a value's tail is no for=. */
    client(PROXIES, "Forwarded: xfor=192.0.2.60\r\n", "");
    client(PROXIES, "Forwarded: host=for=192.0.2.60\r\n", "");
    client(PROXIES, "Forwarded: for = 192.0.2.60\r\n", "");
}

TEST(forwarded_ports_quotes_brackets) {
    client(PROXIES, "Forwarded: for=\"192.0.2.60:4711\"\r\n", "192.0.2.60");
    client(PROXIES, "Forwarded: for=192.0.2.60:4711\r\n", "192.0.2.60");
    client(PROXIES, "Forwarded: for=\"192.0.2.60\"\r\n", "192.0.2.60");
    client(PROXIES, "Forwarded: for=\"[2001:db8::1]:4711\"\r\n", "2001:db8::1");
    client(PROXIES, "Forwarded: for=\"[2001:db8::1]\"\r\n", "2001:db8::1");
    client(PROXIES, "Forwarded: for=[2001:db8::1]:4711\r\n", "2001:db8::1");
    client(PROXIES, "Forwarded: for=\"[2001:DB8::A]\"\r\n", "2001:DB8::A"); /* as written */
    client(PROXIES, "Forwarded: for=\"[192.0.2.60]\"\r\n", "192.0.2.60");
    client(PROXIES, "Forwarded: for=\"192.0.2.60;proto=http\r\n", ""); /* unbalanced quote */
    client(PROXIES, "Forwarded: for=\"[2001:db8::1\"\r\n", "");        /* no ']' */
    client(PROXIES, "Forwarded: for=\"2001:db8::1:4711\"\r\n", "2001:db8::1:4711"); /* a v6 */
    client(PROXIES, "Forwarded: for=192.0.2.60:4711:1\r\n", "");
}

TEST(forwarded_chain_rightmost_untrusted) {
    client(PROXIES, "Forwarded: for=192.0.2.60, for=10.0.0.1\r\n", "192.0.2.60");
    client(PROXIES, "Forwarded: for=192.0.2.60,for=10.0.0.1;proto=https\r\n", "192.0.2.60");
    /* A client's own forged element, left of its real address, is not read. */
    client(PROXIES, "Forwarded: for=198.51.100.1, for=192.0.2.60, for=10.0.0.2\r\n", "192.0.2.60");
    client(PROXIES, "Forwarded: for=192.0.2.60, for=\"[2001:db8:ffff::5]:80\"\r\n", "192.0.2.60");
    /* An element without for= is stepped over. */
    client(PROXIES, "Forwarded: for=192.0.2.60, proto=https, for=10.0.0.2\r\n", "192.0.2.60");
}

TEST(forwarded_all_trusted_is_nothing) {
    /* Quirk (unlike X-Forwarded-For): when every for= is a trusted proxy,
     * Forwarded gives nothing rather than its leftmost. */
    client(PROXIES, "Forwarded: for=10.0.0.1\r\n", "");
    client(PROXIES, "Forwarded: for=10.0.0.3, for=10.0.0.1\r\n", "");
    client(PROXIES, "Forwarded: for=10.0.0.1\r\nX-Forwarded-For: 192.0.2.9\r\n", "192.0.2.9");
}

TEST(forwarded_obfuscated_stops) {
    /* "unknown" or an obfuscated name: the walk stops, nothing beyond it
     * is believed... */
    client(PROXIES, "Forwarded: for=unknown\r\n", "");
    client(PROXIES, "Forwarded: for=_hidden\r\n", "");
    client(PROXIES, "Forwarded: for=\"_hidden:_port\"\r\n", "");
    client(PROXIES, "Forwarded: for=192.0.2.60, for=_hidden\r\n", "");
    client(PROXIES, "Forwarded: for=192.0.2.60, for=unknown, for=10.0.0.1\r\n", "");
    client(PROXIES, "Forwarded: for=\r\n", "");
    /* ...but X-Forwarded-For is read next: behind a proxy that sets only
     * Forwarded and passes X-Forwarded-For on, the client picks it (quirk). */
    client(PROXIES, "Forwarded: for=unknown\r\nX-Forwarded-For: 192.0.2.9\r\n", "192.0.2.9");
    /* An untrusted hop right of the obfuscated one is still the answer. */
    client(PROXIES, "Forwarded: for=_hidden, for=192.0.2.60\r\n", "192.0.2.60");
}

TEST(forwarded_first_field_line_only) {
    client(PROXIES, "Forwarded: for=10.0.0.1\r\nForwarded: for=192.0.2.60\r\n", "");
    client(PROXIES, "Forwarded: for=192.0.2.60\r\nForwarded: for=198.51.100.1\r\n", "192.0.2.60");
}

TEST(forwarded_before_x_forwarded_for) {
    client(PROXIES, "X-Forwarded-For: 192.0.2.9\r\nForwarded: for=192.0.2.60\r\n", "192.0.2.60");
}

/* ---- fwd_client: X-Forwarded-For ---------------------------------------- */

TEST(xff_single_and_chain) {
    client(PROXIES, "X-Forwarded-For: 192.0.2.60\r\n", "192.0.2.60");
    client(PROXIES, "x-forwarded-for: 192.0.2.60\r\n", "192.0.2.60");
    client(PROXIES, "X-Forwarded-For: 192.0.2.60, 10.0.0.1\r\n", "192.0.2.60");
    client(PROXIES, "X-Forwarded-For: 198.51.100.7,192.0.2.60,10.0.0.1, 10.0.0.2\r\n",
           "192.0.2.60");
    client(PROXIES, "X-Forwarded-For: 2001:db8::1, 2001:db8:ffff::1\r\n", "2001:db8::1");
    client(PROXIES, "X-Forwarded-For: \t192.0.2.60\t ,\t10.0.0.1\r\n", "192.0.2.60");
}

TEST(xff_all_trusted_gives_leftmost) {
    client(PROXIES, "X-Forwarded-For: 10.0.0.3, 10.0.0.1\r\n", "10.0.0.3");
    client(PROXIES, "X-Forwarded-For: 10.0.0.3\r\n", "10.0.0.3");
}

TEST(xff_ports_and_brackets) {
    client(PROXIES, "X-Forwarded-For: 192.0.2.60:1234\r\n", "192.0.2.60");
    client(PROXIES, "X-Forwarded-For: [2001:db8::1]:80, 10.0.0.1\r\n", "2001:db8::1");
    client(PROXIES, "X-Forwarded-For: \"192.0.2.60\"\r\n", "192.0.2.60");
}

TEST(xff_garbage_stops) {
    client(PROXIES, "X-Forwarded-For: 192.0.2.60, garbage\r\n", "");
    client(PROXIES, "X-Forwarded-For: garbage, 10.0.0.1\r\n", "");
    client(PROXIES, "X-Forwarded-For: 192.0.2.60,,10.0.0.1\r\n", "");
    client(PROXIES, "X-Forwarded-For: unknown\r\n", "");
    client(PROXIES, "X-Forwarded-For: 192.0.2.60,\r\n", "");
    /* Garbage left of the answer is never read. */
    client(PROXIES, "X-Forwarded-For: garbage, 192.0.2.60, 10.0.0.1\r\n", "192.0.2.60");
}

TEST(xff_first_field_line_only) {
    client(PROXIES, "X-Forwarded-For: 192.0.2.60\r\nX-Forwarded-For: 198.51.100.1\r\n",
           "192.0.2.60");
    client(PROXIES, "X-Forwarded-For: bogus\r\nX-Forwarded-For: 198.51.100.1\r\n", "");
}

TEST(xff_ipv4_mapped_is_taken_as_written) {
    client(PROXIES, "X-Forwarded-For: ::ffff:192.0.2.60\r\n", "::ffff:192.0.2.60");
    /* Not unmapped: a mapped proxy address is no trusted 10/8 hop. */
    client(PROXIES, "X-Forwarded-For: 192.0.2.60, ::ffff:10.0.0.1\r\n", "::ffff:10.0.0.1");
}

/* ---- fwd_client: trust all ---------------------------------------------- */

TEST(trust_all_xff_leftmost) {
    client("*", "X-Forwarded-For: 198.51.100.7, 192.0.2.60, 10.0.0.1\r\n", "198.51.100.7");
}

TEST(trust_all_ignores_forwarded) {
    /* Quirk: with "*" every for= is trusted, so Forwarded gives nothing
     * (see forwarded_all_trusted_is_nothing); X-Forwarded-For still works. */
    client("*", "Forwarded: for=192.0.2.60\r\n", "");
    client("*", "Forwarded: for=192.0.2.60\r\nX-Forwarded-For: 198.51.100.7\r\n", "198.51.100.7");
}

TEST(empty_trust_list_still_reads_headers) {
    /* The caller asks only for trusted peers; on its own, an empty list
     * trusts no hop, so the rightmost address is the client. */
    client("", "X-Forwarded-For: 198.51.100.7, 192.0.2.60\r\n", "192.0.2.60");
    client("", "Forwarded: for=198.51.100.7, for=192.0.2.60\r\n", "192.0.2.60");
}

TEST(client_truncated_to_cap) {
    fwd_nets n = nets(PROXIES);
    char out[8];
    CHECK_EQ(fwd_client(head("X-Forwarded-For: 192.0.2.60\r\n"), &n, out, sizeof out), 1);
    CHECK_STR(out, "192.0.2");
}
