/* test_forwarded_client.c — the client address and scheme a trusted proxy
 * reports (server/forwarded.h: fwd_client, fwd_https): only the header
 * family the operator named, repeated lines as one list, walked from the
 * right past trusted hops; forged values left of the proxy's are not read. */
#include "server/forwarded.h"

#include "http/http_parse.h"
#include "unit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>

/* The head of a GET with the given field lines ("Name: value\r\n"...). */
static const http_request *head(const char *field_lines) {
    static char buf[8192];
    static http_field fields[64];
    static http_request r;
    snprintf(buf, sizeof buf, "GET / HTTP/1.1\r\nHost: example.com\r\n%s\r\n", field_lines);
    r = (http_request){.fields = fields, .fields_cap = 64};
    CHECK(http_parse_request(buf, strlen(buf), 0, &r, NULL) > 0);
    return &r;
}

static fwd_nets nets(const char *list, int header) {
    fwd_nets n = {0};
    CHECK_EQ(fwd_parse_nets(&n, list), 0);
    n.header = header;
    return n;
}

/* The proxies of the tests: 10/8 and 2001:db8:ffff::/48. */
#define PROXIES "10.0.0.0/8, 2001:db8:ffff::/48"
#define XFF     FWD_HDR_XFF
#define FWD     FWD_HDR_FORWARDED

/* fwd_client under list and header for the field lines gives want ("" for
 * none, the peer's address then). */
static void client_h(const char *list, int header, const char *field_lines, const char *want) {
    fwd_nets n = nets(list, header);
    char out[64];
    memset(out, 'x', sizeof out);
    int rc = fwd_client(head(field_lines), &n, out, sizeof out);
    if (strcmp(out, want) != 0)
        fprintf(stderr, "  fields: %s", field_lines);
    CHECK_STR(out, want);
    CHECK_EQ(rc, want[0] != '\0');
}

static void xff(const char *fields, const char *want) {
    client_h(PROXIES, XFF, fields, want);
}

static void fwd(const char *fields, const char *want) {
    client_h(PROXIES, FWD, fields, want);
}

static void https(int header, const char *fields, int want) {
    fwd_nets n = nets(PROXIES, header);
    int got = fwd_https(head(fields), &n);
    if (got != want)
        fprintf(stderr, "  fields: %s", fields);
    CHECK_EQ(got, want);
}

TEST(no_header_no_client) {
    xff("", "");
    fwd("", "");
    xff("X-Other: 192.0.2.1\r\n", "");
    https(XFF, "", 0);
    https(FWD, "", 0);
}

/* ---- the three forgeries of the review ---------------------------------- */

TEST(forged_forwarded_beside_proxy_xff) {
    /* nginx passes the client's Forwarded on and sets X-Forwarded-For. */
    client_h("127.0.0.1", XFF, "Forwarded: for=6.6.6.6\r\nX-Forwarded-For: 203.0.113.9\r\n",
             "203.0.113.9");
    client_h("127.0.0.1", XFF, "Forwarded: for=6.6.6.6\r\n", ""); /* not read at all */
}

TEST(forged_xff_line_before_proxy_line) {
    /* HAProxy, Envoy: the proxy appends its own line after the client's. */
    client_h("127.0.0.1", XFF, "X-Forwarded-For: 6.6.6.6\r\nX-Forwarded-For: 203.0.113.9\r\n",
             "203.0.113.9");
}

TEST(forged_forwarded_line_before_proxy_line) {
    client_h("127.0.0.1", FWD, "Forwarded: for=6.6.6.6\r\nForwarded: for=203.0.113.9\r\n",
             "203.0.113.9");
}

/* ---- X-Forwarded-For ---------------------------------------------------- */

TEST(xff_single_and_chain) {
    xff("X-Forwarded-For: 192.0.2.60\r\n", "192.0.2.60");
    xff("x-forwarded-for: 192.0.2.60\r\n", "192.0.2.60");
    xff("X-Forwarded-For: 192.0.2.60, 10.0.0.1\r\n", "192.0.2.60");
    xff("X-Forwarded-For: 198.51.100.7,192.0.2.60,10.0.0.1, 10.0.0.2\r\n", "192.0.2.60");
    xff("X-Forwarded-For: 2001:db8::1, 2001:db8:ffff::1\r\n", "2001:db8::1");
    xff("X-Forwarded-For: \t192.0.2.60\t ,\t10.0.0.1\r\n", "192.0.2.60");
}

TEST(xff_lines_are_one_list) {
    xff("X-Forwarded-For: 6.6.6.6, 192.0.2.60\r\nX-Forwarded-For: 10.0.0.1\r\n", "192.0.2.60");
    xff("X-Forwarded-For: 10.0.0.3\r\nX-Forwarded-For: 10.0.0.2, 10.0.0.1\r\n", "10.0.0.3");
    xff("X-Forwarded-For: 6.6.6.6\r\nX-Other: 1\r\nX-Forwarded-For: 192.0.2.60\r\n", "192.0.2.60");
    xff("X-Forwarded-For: garbage\r\nX-Forwarded-For: 192.0.2.60\r\n", "192.0.2.60");
    xff("X-Forwarded-For: 192.0.2.60\r\nX-Forwarded-For: garbage\r\n", "");
    xff("X-Forwarded-For: 192.0.2.60\r\nX-Forwarded-For: \r\n", "192.0.2.60"); /* empty line */
}

TEST(xff_all_trusted_gives_leftmost) {
    xff("X-Forwarded-For: 10.0.0.3, 10.0.0.1\r\n", "10.0.0.3");
    xff("X-Forwarded-For: 10.0.0.3\r\n", "10.0.0.3");
}

TEST(xff_ports_and_brackets) {
    xff("X-Forwarded-For: 192.0.2.60:1234\r\n", "192.0.2.60");
    xff("X-Forwarded-For: [2001:db8::1]:80, 10.0.0.1\r\n", "2001:db8::1");
    xff("X-Forwarded-For: \"192.0.2.60\"\r\n", "192.0.2.60");
}

TEST(xff_unknown_or_garbage_names_no_client) {
    xff("X-Forwarded-For: 192.0.2.60, garbage\r\n", "");
    xff("X-Forwarded-For: garbage, 10.0.0.1\r\n", "");
    xff("X-Forwarded-For: unknown\r\n", "");
    xff("X-Forwarded-For: 192.0.2.60, unknown, 10.0.0.1\r\n", "");
    /* Garbage left of the answer is never read. */
    xff("X-Forwarded-For: garbage, 192.0.2.60, 10.0.0.1\r\n", "192.0.2.60");
}

TEST(xff_empty_elements_skipped) {
    /* RFC 9110 5.6.1: a recipient ignores empty list elements. */
    xff("X-Forwarded-For: 192.0.2.60,,10.0.0.1\r\n", "192.0.2.60");
    xff("X-Forwarded-For: 192.0.2.60, \r\n", "192.0.2.60");
    xff("X-Forwarded-For: , ,\r\n", "");
}

TEST(xff_ipv4_mapped_hops) {
    xff("X-Forwarded-For: ::ffff:192.0.2.60\r\n", "::ffff:192.0.2.60"); /* as written */
    /* A mapped proxy address is the trusted 10/8 hop it maps. */
    xff("X-Forwarded-For: 192.0.2.60, ::ffff:10.0.0.1\r\n", "192.0.2.60");
}

TEST(xff_ignores_forwarded) {
    xff("Forwarded: for=192.0.2.60\r\n", "");
    xff("X-Forwarded-For: 192.0.2.9\r\nForwarded: for=192.0.2.60\r\n", "192.0.2.9");
}

TEST(xff_trust_all_leftmost) {
    client_h("*", XFF, "X-Forwarded-For: 198.51.100.7, 192.0.2.60, 10.0.0.1\r\n", "198.51.100.7");
    client_h("*", XFF, "X-Forwarded-For: 198.51.100.7\r\nX-Forwarded-For: 192.0.2.60\r\n",
             "198.51.100.7");
}

TEST(xff_proto) {
    https(XFF, "X-Forwarded-Proto: https\r\n", 1);
    https(XFF, "X-Forwarded-Proto: HTTPS\r\n", 1);
    https(XFF, "X-Forwarded-Proto: http\r\n", 0);
    https(XFF, "X-Forwarded-Proto: httpsx\r\n", 0);
    /* The rightmost value, over all lines: the proxy's, not the client's. */
    https(XFF, "X-Forwarded-Proto: https\r\nX-Forwarded-Proto: http\r\n", 0);
    https(XFF, "X-Forwarded-Proto: http\r\nX-Forwarded-Proto: https\r\n", 1);
    https(XFF, "X-Forwarded-Proto: https, http\r\n", 0);
    https(XFF, "X-Forwarded-Proto: http, https \r\n", 1);
    https(XFF, "X-Forwarded-Proto: https,\r\n", 1); /* an empty element is skipped */
    /* Forwarded's proto= is the other family: not read. */
    https(XFF, "Forwarded: for=192.0.2.60;proto=https\r\n", 0);
}

/* ---- Forwarded ---------------------------------------------------------- */

TEST(forwarded_for) {
    fwd("Forwarded: for=192.0.2.60\r\n", "192.0.2.60");
    fwd("forwarded: FOR=192.0.2.60\r\n", "192.0.2.60");   /* names fold case */
    fwd("Forwarded: for=2001:db8::1\r\n", "2001:db8::1"); /* unquoted v6 taken */
}

TEST(forwarded_with_proto_and_host) {
    fwd("Forwarded: for=192.0.2.60;proto=https;host=example.com\r\n", "192.0.2.60");
    fwd("Forwarded: proto=https;for=192.0.2.60;by=10.0.0.1\r\n", "192.0.2.60");
    fwd("Forwarded: host=example.com; for=192.0.2.60\r\n", "192.0.2.60");
    fwd("Forwarded: for=192.0.2.60;host=\"a,b;c\"\r\n", "192.0.2.60"); /* quoted , and ; */
    /* "for=" must be a parameter of its own. */
    fwd("Forwarded: xfor=192.0.2.60\r\n", "");
    fwd("Forwarded: host=for=192.0.2.60\r\n", "");
    fwd("Forwarded: for = 192.0.2.60\r\n", "");
}

TEST(forwarded_ports_quotes_brackets) {
    fwd("Forwarded: for=\"192.0.2.60:4711\"\r\n", "192.0.2.60");
    fwd("Forwarded: for=192.0.2.60:4711\r\n", "192.0.2.60");
    fwd("Forwarded: for=\"192.0.2.60\"\r\n", "192.0.2.60");
    fwd("Forwarded: for=\"[2001:db8::1]:4711\"\r\n", "2001:db8::1");
    fwd("Forwarded: for=\"[2001:db8::1]\"\r\n", "2001:db8::1");
    fwd("Forwarded: for=[2001:db8::1]:4711\r\n", "2001:db8::1");
    fwd("Forwarded: for=\"[2001:DB8::A]\"\r\n", "2001:DB8::A"); /* as written */
    fwd("Forwarded: for=\"[192.0.2.60]\"\r\n", "192.0.2.60");
    fwd("Forwarded: for=\"192.0.2.60;proto=http\r\n", "");              /* unbalanced quote */
    fwd("Forwarded: for=\"[2001:db8::1\"\r\n", "");                     /* no ']' */
    fwd("Forwarded: for=\"2001:db8::1:4711\"\r\n", "2001:db8::1:4711"); /* a v6 */
    fwd("Forwarded: for=192.0.2.60:4711:1\r\n", "");
    /* A proxy's quoted IPv6 hop with a port is stepped over when trusted. */
    fwd("Forwarded: for=192.0.2.60, for=\"[2001:db8:ffff::5]:80\"\r\n", "192.0.2.60");
}

TEST(forwarded_quotes_hide_no_hop) {
    /* A comma inside a quoted value splits nothing: the element's for= is
     * no address, so no client (not the 10.0.0.1 a naive split finds). */
    fwd("Forwarded: for=\"6.6.6.6, for=10.0.0.1\"\r\n", "");
    fwd("Forwarded: for=6.6.6.6;x=\"a, for=192.0.2.60\"\r\n", "6.6.6.6");
}

TEST(forwarded_chain_rightmost_untrusted) {
    fwd("Forwarded: for=192.0.2.60, for=10.0.0.1\r\n", "192.0.2.60");
    fwd("Forwarded: for=192.0.2.60,for=10.0.0.1;proto=https\r\n", "192.0.2.60");
    fwd("Forwarded: for=198.51.100.1, for=192.0.2.60, for=10.0.0.2\r\n", "192.0.2.60");
}

TEST(forwarded_lines_are_one_list) {
    fwd("Forwarded: for=10.0.0.1\r\nForwarded: for=192.0.2.60\r\n", "192.0.2.60");
    fwd("Forwarded: for=192.0.2.60\r\nForwarded: for=198.51.100.1\r\n", "198.51.100.1");
    fwd("Forwarded: for=6.6.6.6, for=192.0.2.60\r\nForwarded: for=10.0.0.1, for=10.0.0.2\r\n",
        "192.0.2.60");
}

TEST(forwarded_all_trusted_gives_leftmost) {
    fwd("Forwarded: for=10.0.0.1\r\n", "10.0.0.1");
    fwd("Forwarded: for=10.0.0.3, for=10.0.0.1\r\n", "10.0.0.3");
    fwd("Forwarded: for=10.0.0.3\r\nForwarded: for=10.0.0.1\r\n", "10.0.0.3");
}

TEST(forwarded_trust_all) {
    client_h("*", FWD, "Forwarded: for=192.0.2.60\r\n", "192.0.2.60");
    client_h("*", FWD, "Forwarded: for=198.51.100.7, for=192.0.2.60\r\n", "198.51.100.7");
}

TEST(forwarded_unknown_or_obfuscated_names_no_client) {
    /* The peer's address is used: nothing left of it is believed. */
    fwd("Forwarded: for=unknown\r\n", "");
    fwd("Forwarded: for=_hidden\r\n", "");
    fwd("Forwarded: for=\"_hidden:_port\"\r\n", "");
    fwd("Forwarded: for=192.0.2.60, for=_hidden\r\n", "");
    fwd("Forwarded: for=192.0.2.60, for=unknown, for=10.0.0.1\r\n", "");
    fwd("Forwarded: for=\r\n", "");
    fwd("Forwarded: for=garbage\r\n", "");
    /* An untrusted hop right of the obfuscated one is still the answer. */
    fwd("Forwarded: for=_hidden, for=192.0.2.60\r\n", "192.0.2.60");
}

TEST(forwarded_unknown_does_not_fall_back_to_xff) {
    /* Behind a proxy that sets only Forwarded, X-Forwarded-For is the
     * client's own: reading it would let the client pick its address. */
    fwd("Forwarded: for=unknown\r\nX-Forwarded-For: 192.0.2.9\r\n", "");
    fwd("Forwarded: for=_hidden\r\nX-Forwarded-For: 192.0.2.9\r\n", "");
    fwd("X-Forwarded-For: 192.0.2.9\r\n", "");
    fwd("Forwarded: proto=https\r\nX-Forwarded-For: 192.0.2.9\r\n", "");
}

TEST(forwarded_element_without_for_names_no_client) {
    /* The proxy's element says nothing of its client: the one left of it
     * may be the client's own. */
    fwd("Forwarded: proto=https;host=example.com\r\n", "");
    fwd("Forwarded: for=6.6.6.6, proto=https\r\n", "");
    fwd("Forwarded: for=6.6.6.6\r\nForwarded: proto=https\r\n", "");
    fwd("Forwarded: for=192.0.2.60, proto=https, for=10.0.0.2\r\n", "");
    fwd("Forwarded: for=192.0.2.60, garbage\r\n", "");
    fwd("Forwarded: for=192.0.2.60, for=10.0.0.1 x\r\n", "");
}

TEST(forwarded_empty_elements_skipped) {
    fwd("Forwarded: for=192.0.2.60,,for=10.0.0.1\r\n", "192.0.2.60");
    fwd("Forwarded: for=192.0.2.60, \r\n", "192.0.2.60");
    fwd("Forwarded: , \r\n", "");
}

TEST(forwarded_ipv4_mapped_hops) {
    fwd("Forwarded: for=192.0.2.60, for=\"[::ffff:10.0.0.1]\"\r\n", "192.0.2.60");
}

TEST(forwarded_hop_limit) {
    /* More trusted hops in one line than a walk steps over: no client. */
    char lines[4096] = "Forwarded: for=192.0.2.60";
    for (int i = 0; i < FORWARD_MAX_HOPS + 2; i++)
        snprintf(lines + strlen(lines), sizeof lines - strlen(lines), ", for=10.0.0.%d", i + 1);
    snprintf(lines + strlen(lines), sizeof lines - strlen(lines), "\r\n");
    fwd(lines, "");
    /* Up to the limit: found. */
    snprintf(lines, sizeof lines, "Forwarded: for=192.0.2.60");
    for (int i = 0; i < FORWARD_MAX_HOPS - 1; i++)
        snprintf(lines + strlen(lines), sizeof lines - strlen(lines), ", for=10.0.0.%d", i + 1);
    snprintf(lines + strlen(lines), sizeof lines - strlen(lines), "\r\n");
    fwd(lines, "192.0.2.60");
    /* Many untrusted elements left of the proxy's are never walked. */
    snprintf(lines, sizeof lines, "Forwarded: ");
    for (int i = 0; i < 100; i++)
        snprintf(lines + strlen(lines), sizeof lines - strlen(lines), "for=6.6.6.%d, ", i);
    snprintf(lines + strlen(lines), sizeof lines - strlen(lines), "for=192.0.2.60\r\n");
    fwd(lines, "192.0.2.60");
}

TEST(forwarded_ignores_xff) {
    fwd("X-Forwarded-For: 192.0.2.9\r\nForwarded: for=192.0.2.60\r\n", "192.0.2.60");
}

TEST(forwarded_proto) {
    https(FWD, "Forwarded: for=192.0.2.60;proto=https\r\n", 1);
    https(FWD, "Forwarded: for=192.0.2.60;proto=\"HTTPS\"\r\n", 1);
    https(FWD, "Forwarded: for=192.0.2.60;proto=http\r\n", 0);
    https(FWD, "Forwarded: for=192.0.2.60\r\n", 0);
    /* The proto of the client's hop, which the trusted proxy wrote: the
     * client's own element (left of it) is not read. */
    https(FWD, "Forwarded: for=6.6.6.6;proto=https, for=192.0.2.60\r\n", 0);
    https(FWD, "Forwarded: for=6.6.6.6;proto=https\r\nForwarded: for=192.0.2.60;proto=http\r\n", 0);
    https(FWD, "Forwarded: for=192.0.2.60;proto=https, for=10.0.0.1;proto=http\r\n", 1);
    /* A proxy that names no client still says how it was reached. */
    https(FWD, "Forwarded: proto=https\r\n", 1);
    https(FWD, "Forwarded: for=_hidden;proto=https\r\n", 1);
    /* X-Forwarded-Proto is the other family: not read. */
    https(FWD, "X-Forwarded-Proto: https\r\n", 0);
    https(FWD, "Forwarded: for=192.0.2.60\r\nX-Forwarded-Proto: https\r\n", 0);
}

TEST(empty_trust_list_still_reads_headers) {
    /* The caller asks only for trusted peers; on its own, an empty list
     * trusts no hop, so the rightmost address is the client. */
    client_h("", XFF, "X-Forwarded-For: 198.51.100.7, 192.0.2.60\r\n", "192.0.2.60");
    client_h("", FWD, "Forwarded: for=198.51.100.7, for=192.0.2.60\r\n", "192.0.2.60");
}

TEST(client_truncated_to_cap) {
    fwd_nets n = nets(PROXIES, XFF);
    char out[8];
    CHECK_EQ(fwd_client(head("X-Forwarded-For: 192.0.2.60\r\n"), &n, out, sizeof out), 1);
    CHECK_STR(out, "192.0.2");
}

/* 1 if s is an address as fwd_client writes it (no brackets, no port). */
static int is_ip(const char *s) {
    uint8_t a[16];
    return inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1;
}

TEST(random_values_stay_inside_the_field) {
    /* Values ending where a PROT_NONE page begins: a walk reading past a
     * field's end faults. Whatever comes out is an address or nothing. */
    static const char alphabet[] = "for=proto;,\" \t[]:_10.2xhttps";
    static const char *const names[] = {"Forwarded", "X-Forwarded-For", "X-Forwarded-Proto"};
    fwd_nets n = nets(PROXIES, FWD);
    unsigned seed = 7;
    for (int i = 0; i < 30000; i++) {
        char v[40];
        size_t len = (size_t)rand_r(&seed) % sizeof v;
        for (size_t k = 0; k < len; k++)
            v[k] = alphabet[(size_t)rand_r(&seed) % (sizeof alphabet - 1)];
        const char *name = names[i % 3];
        http_field f = {name, strlen(name), unit_guarded(v, len), len};
        http_request r = {.fields = &f, .fields_cap = 1, .nfields = 1};
        char out[64];
        n.header = (i / 3) % 2 ? FWD : XFF;
        if (fwd_client(&r, &n, out, sizeof out))
            CHECK(is_ip(out));
        else
            CHECK_STR(out, "");
        int h = fwd_https(&r, &n);
        CHECK(h == 0 || h == 1);
    }
}
