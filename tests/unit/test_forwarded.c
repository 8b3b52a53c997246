/* test_forwarded.c — the trusted-proxy module (server/forwarded.h): trust
 * lists as --forwarded-allow-ips gives them and which peers they trust
 * (the client address read from the headers: test_forwarded_client.c).
 * Quirks that stay are marked. */
#include "server/forwarded.h"

#include "unit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sys/socket.h>

static fwd_nets nets(const char *list) {
    fwd_nets n = {0};
    int rc = fwd_parse_nets(&n, list);
    if (rc != 0)
        fprintf(stderr, "  list \"%s\": %d\n", list, rc);
    CHECK_EQ(rc, 0);
    return n;
}

static int peer(const fwd_nets *n, const char *ip) {
    uint8_t a[16] = {0};
    if (inet_pton(AF_INET, ip, a) == 1)
        return fwd_peer_trusted(n, AF_INET, a);
    CHECK(inet_pton(AF_INET6, ip, a) == 1);
    return fwd_peer_trusted(n, AF_INET6, a);
}

/* ---- fwd_parse_nets ----------------------------------------------------- */

static void bad(const char *list, int err) {
    fwd_nets n = {0};
    int rc = fwd_parse_nets(&n, list);
    if (rc != err)
        fprintf(stderr, "  list \"%s\"\n", list);
    CHECK_EQ(rc, err);
}

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

TEST(parse_unix) {
    fwd_nets n = nets("unix");
    CHECK_EQ(n.trust_unix, 1);
    CHECK_EQ(n.ntrusted, 0); /* takes no slot */
    CHECK_EQ(n.trust_all, 0);
    n = nets("10.0.0.1,unix");
    CHECK_EQ(n.trust_unix, 1);
    CHECK_EQ(n.ntrusted, 1);
    bad("UNIX", -EINVAL); /* the keyword is lower case, like "*" is alone */
    bad("unix:/run/x.sock", -EINVAL);
}

TEST(parse_adds_to_what_is_there) {
    fwd_nets n = nets("10.0.0.1");
    CHECK_EQ(fwd_parse_nets(&n, "10.0.0.2"), 0);
    CHECK_EQ(n.ntrusted, 2);
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
    fwd_nets n = nets("10.0.0.0/8, 2001:db8:ffff::/48, 192.0.2.128/25, 198.51.100.7");
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

TEST(peer_ipv4_mapped_ipv6_is_its_ipv4) {
    /* A v4 client of a dual-stack [::] listener arrives as ::ffff:a.b.c.d
     * (AF_INET6): it matches the IPv4 networks of the list... */
    fwd_nets n = nets("10.0.0.0/8, 127.0.0.1");
    CHECK_EQ(peer(&n, "::ffff:10.0.0.1"), 1);
    CHECK_EQ(peer(&n, "::ffff:127.0.0.1"), 1);
    CHECK_EQ(peer(&n, "::ffff:11.0.0.1"), 0);
    CHECK_EQ(peer(&n, "::10.0.0.1"), 0);     /* IPv4-compatible: no mapped address */
    CHECK_EQ(peer(&n, "64:ff9b::a00:1"), 0); /* NAT64: no either */
    /* ...and an IPv6 network written in the mapped form still matches. */
    n = nets("::ffff:10.0.0.0/104");
    CHECK_EQ(peer(&n, "::ffff:10.0.0.1"), 1);
    CHECK_EQ(peer(&n, "10.0.0.1"), 0);
    n = nets("::/0"); /* all of IPv6 includes the mapped addresses */
    CHECK_EQ(peer(&n, "::ffff:203.0.113.1"), 1);
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
    /* A proxy on a unix socket is trusted only when the list says "unix"
     * (or "*"): trusting IP proxies does not trust whoever can reach the
     * socket. */
    uint8_t zero[16] = {0};
    fwd_nets n = {0};
    CHECK_EQ(fwd_peer_trusted(&n, AF_UNIX, zero), 0);
    n = nets("192.0.2.1");
    CHECK_EQ(fwd_peer_trusted(&n, AF_UNIX, zero), 0);
    n = nets("127.0.0.1, ::1");
    CHECK_EQ(fwd_peer_trusted(&n, AF_UNIX, zero), 0);
    n = nets("unix");
    CHECK_EQ(fwd_peer_trusted(&n, AF_UNIX, zero), 1);
    CHECK_EQ(peer(&n, "127.0.0.1"), 0); /* "unix" trusts no IP peer */
    n = nets("192.0.2.1 unix");
    CHECK_EQ(fwd_peer_trusted(&n, AF_UNIX, zero), 1);
    CHECK_EQ(peer(&n, "192.0.2.1"), 1);
    n = nets("*");
    CHECK_EQ(fwd_peer_trusted(&n, AF_UNIX, zero), 1);
}
