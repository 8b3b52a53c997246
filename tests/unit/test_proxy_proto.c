/* test_proxy_proto.c — the PROXY protocol header parser (http/proxy_proto.h):
 * every accepted form (v1 TCP4, TCP6, UNKNOWN; v2 PROXY and LOCAL over IPv4,
 * IPv6, unix and UNSPEC, with TLVs) and every refused one, and that each
 * proper prefix of a good header asks for more, read from a guarded copy. */
#include "http/proxy_proto.h"

#include "unit.h"

#include <arpa/inet.h>
#include <sys/socket.h>

static int parse(const void *p, size_t n, proxy_hdr *h) {
    return proxy_parse(unit_guarded(p, n), n, h);
}

/* A good header: the whole parses to its length, every proper prefix asks
 * for more, and bytes after it are not read as part of it. */
static proxy_hdr good(const void *p, size_t n) {
    proxy_hdr h;
    for (size_t k = 0; k < n; k++) {
        int rc = parse(p, k, &h);
        if (rc != PROXY_NEED_MORE)
            fprintf(stderr, "  prefix of %zu bytes: %d\n", k, rc);
        CHECK_EQ(rc, PROXY_NEED_MORE);
    }
    uint8_t more[512];
    CHECK(n + 20 <= sizeof more);
    memcpy(more, p, n);
    memcpy(more + n, "GET / HTTP/1.1\r\n\r\n", 18);
    proxy_hdr h2;
    CHECK_EQ(parse(more, n + 18, &h2), (int)n);
    CHECK_EQ(parse(p, n, &h), (int)n);
    CHECK_EQ(h.family, h2.family);
    return h;
}

static void bad(const void *p, size_t n) {
    proxy_hdr h;
    int rc = parse(p, n, &h);
    if (rc != PROXY_BAD)
        fprintf(stderr, "  %zu bytes \"%.*s\": %d\n", n, (int)n, (const char *)p, rc);
    CHECK_EQ(rc, PROXY_BAD);
}

static void bad_line(const char *s) {
    bad(s, strlen(s));
}

static void need_more(const char *s) {
    proxy_hdr h;
    CHECK_EQ(parse(s, strlen(s), &h), PROXY_NEED_MORE);
}

static void check_ip(int family, const uint8_t *got, const char *want) {
    uint8_t a[16] = {0};
    CHECK(inet_pton(family, want, a) == 1);
    CHECK(memcmp(got, a, family == AF_INET ? 4 : 16) == 0);
}

/* ---- v1 accepted -------------------------------------------------------- */

TEST(v1_tcp4) {
    const char *s = "PROXY TCP4 192.0.2.7 198.51.100.1 56324 443\r\n";
    proxy_hdr h = good(s, strlen(s));
    CHECK_EQ(h.version, 1);
    CHECK_EQ(h.family, AF_INET);
    check_ip(AF_INET, h.src, "192.0.2.7");
    check_ip(AF_INET, h.dst, "198.51.100.1");
    CHECK_EQ(h.src_port, 56324);
    CHECK_EQ(h.dst_port, 443);
}

TEST(v1_tcp6) {
    const char *s = "PROXY TCP6 2001:db8::1 ::FFFF:198.51.100.1 0 65535\r\n";
    proxy_hdr h = good(s, strlen(s));
    CHECK_EQ(h.family, AF_INET6);
    check_ip(AF_INET6, h.src, "2001:db8::1");
    check_ip(AF_INET6, h.dst, "::ffff:198.51.100.1");
    CHECK_EQ(h.src_port, 0);
    CHECK_EQ(h.dst_port, 65535);
}

TEST(v1_unknown_ignores_the_rest_of_its_line) {
    proxy_hdr h = good("PROXY UNKNOWN\r\n", 15);
    CHECK_EQ(h.family, AF_UNSPEC);
    const char *s = "PROXY UNKNOWN ffff:f...f:ffff ffff:f...f:ffff 65535 65535\r\n";
    h = good(s, strlen(s));
    CHECK_EQ(h.family, AF_UNSPEC);
}

TEST(v1_longest_line_is_107_bytes) {
    /* The spec's worst case: two full IPv6 addresses and two 5-digit ports. */
    const char *s = "PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff "
                    "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n";
    CHECK_EQ(strlen(s), 104);
    good(s, strlen(s));
    char u[PROXY_V1_MAX + 1];
    memset(u, 'x', sizeof u);
    memcpy(u, "PROXY UNKNOWN ", 14);
    memcpy(u + PROXY_V1_MAX - 2, "\r\n", 2);
    proxy_hdr h;
    CHECK_EQ(parse(u, PROXY_V1_MAX, &h), PROXY_V1_MAX);
}

/* ---- v1 refused --------------------------------------------------------- */

TEST(v1_too_long) {
    char u[PROXY_V1_MAX + 8];
    memset(u, 'x', sizeof u);
    memcpy(u, "PROXY UNKNOWN ", 14);
    memcpy(u + PROXY_V1_MAX - 1, "\r\n", 2); /* 108 bytes with CRLF */
    bad(u, PROXY_V1_MAX + 1);
    bad(u, PROXY_V1_MAX); /* no CR within 107 bytes: refused before the rest comes */
    bad(u, PROXY_V1_MAX - 1);
    need_more("PROXY UNKNOWN xxxxxxxxxxxxxxxxxxxxx"); /* shorter: may still end */
}

TEST(v1_bad_signature) {
    bad_line("GET / HTTP/1.1\r\n\r\n");
    bad_line("proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n");
    bad_line("PROXY\tTCP4 1.2.3.4 5.6.7.8 1 2\r\n");
    bad_line("PROXYTCP4 1.2.3.4 5.6.7.8 1 2\r\n");
    bad_line("PRX");
    bad_line("\x16\x03\x01\x02\x00"); /* a TLS ClientHello */
}

TEST(v1_bad_protocol) {
    bad_line("PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n");
    bad_line("PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n");
    bad_line("PROXY tcp4 1.2.3.4 5.6.7.8 1 2\r\n");
    bad_line("PROXY UNKNOWNX\r\n");
    bad_line("PROXY \r\n");
    bad_line("PROXY TCP4\r\n");
}

TEST(v1_bad_addresses) {
    bad_line("PROXY TCP4 ::1 5.6.7.8 1 2\r\n"); /* family mismatch */
    bad_line("PROXY TCP6 1.2.3.4 ::1 1 2\r\n"); /* family mismatch */
    bad_line("PROXY TCP4 1.2.3.4 ::1 1 2\r\n");
    bad_line("PROXY TCP4 1.2.3.256 5.6.7.8 1 2\r\n");
    bad_line("PROXY TCP4 1.2.3 5.6.7.8 1 2\r\n");
    bad_line("PROXY TCP4 01.2.3.4 5.6.7.8 1 2\r\n");
    bad_line("PROXY TCP4 host 5.6.7.8 1 2\r\n");
    bad_line("PROXY TCP6 fe80::1%eth0 ::1 1 2\r\n");
    bad_line("PROXY TCP6 [::1] ::1 1 2\r\n");
    bad_line("PROXY TCP6 1:2:3:4:5:6:7:8:9 ::1 1 2\r\n");
}

TEST(v1_bad_ports) {
    bad_line("PROXY TCP4 1.2.3.4 5.6.7.8 65536 80\r\n");
    bad_line("PROXY TCP4 1.2.3.4 5.6.7.8 80 99999\r\n");
    bad_line("PROXY TCP4 1.2.3.4 5.6.7.8 100000 80\r\n");
    bad_line("PROXY TCP4 1.2.3.4 5.6.7.8 -1 80\r\n");
    bad_line("PROXY TCP4 1.2.3.4 5.6.7.8 +1 80\r\n");
    bad_line("PROXY TCP4 1.2.3.4 5.6.7.8 080 80\r\n");
    bad_line("PROXY TCP4 1.2.3.4 5.6.7.8 0x50 80\r\n");
    bad_line("PROXY TCP4 1.2.3.4 5.6.7.8 8a 80\r\n");
}

TEST(v1_bad_shape) {
    bad_line("PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n");   /* a field too many */
    bad_line("PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n");       /* one too few */
    bad_line("PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n");    /* two spaces */
    bad_line("PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n");    /* trailing space */
    bad_line("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n");       /* bare LF */
    bad_line("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rX");      /* CR without LF */
    bad_line("PROXY TCP4 1.2.3.4\t5.6.7.8 1 2\r\n");    /* a control byte */
    bad_line("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\xc3\r\n"); /* not ASCII */
    bad("PROXY TCP4 1.2.3.4\0 5.6.7.8 1 2\r\n", 33);    /* a NUL inside */
}

TEST(v1_truncated_asks_for_more) {
    need_more("");
    need_more("P");
    need_more("PROXY");
    need_more("PROXY TCP4 1.2.3.4 5.6.7.8 1 2");
    need_more("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r");
}

/* ---- v2 ----------------------------------------------------------------- */

static const uint8_t sig[12] = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D,
                                0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};

/* A v2 header: ver_cmd, fam, then body bytes; length from blen. */
static size_t v2(uint8_t *out, uint8_t ver_cmd, uint8_t fam, const void *body, size_t blen) {
    memcpy(out, sig, 12);
    out[12] = ver_cmd;
    out[13] = fam;
    out[14] = (uint8_t)(blen >> 8);
    out[15] = (uint8_t)blen;
    if (blen)
        memcpy(out + 16, body, blen);
    return 16 + blen;
}

static const uint8_t inet_body[12] = {192, 0, 2, 7, 198, 51, 100, 1, 0xdc, 0x04, 0x01, 0xbb};

TEST(v2_proxy_ipv4) {
    uint8_t b[64];
    size_t n = v2(b, 0x21, 0x11, inet_body, 12);
    proxy_hdr h = good(b, n);
    CHECK_EQ(h.version, 2);
    CHECK_EQ(h.family, AF_INET);
    check_ip(AF_INET, h.src, "192.0.2.7");
    check_ip(AF_INET, h.dst, "198.51.100.1");
    CHECK_EQ(h.src_port, 56324);
    CHECK_EQ(h.dst_port, 443);
}

TEST(v2_proxy_ipv6) {
    uint8_t body[36] = {
        0x20, 0x01, 0x0d, 0xb8, [15] = 1, [31] = 1, [32] = 0x1f, [33] = 0x90, [34] = 0, [35] = 80};
    uint8_t b[64];
    size_t n = v2(b, 0x21, 0x21, body, 36);
    proxy_hdr h = good(b, n);
    CHECK_EQ(h.family, AF_INET6);
    check_ip(AF_INET6, h.src, "2001:db8::1");
    check_ip(AF_INET6, h.dst, "::1");
    CHECK_EQ(h.src_port, 8080);
    CHECK_EQ(h.dst_port, 80);
}

TEST(v2_proxy_unix) {
    uint8_t body[216] = {0};
    memcpy(body, "/run/client.sock", 16);
    memcpy(body + 108, "/run/haproxy.sock", 17);
    uint8_t b[256];
    size_t n = v2(b, 0x21, 0x31, body, sizeof body);
    proxy_hdr h = good(b, n);
    CHECK_EQ(h.family, AF_UNIX);
}

TEST(v2_proxy_unspec_and_local_keep_the_real_endpoints) {
    uint8_t b[64];
    size_t n = v2(b, 0x21, 0x00, NULL, 0);
    CHECK_EQ(good(b, n).family, AF_UNSPEC);
    /* LOCAL: the proxy's own health check; the block (any family) is skipped. */
    n = v2(b, 0x20, 0x11, inet_body, 12);
    proxy_hdr h = good(b, n);
    CHECK_EQ(h.family, AF_UNSPEC);
    n = v2(b, 0x20, 0x00, NULL, 0);
    CHECK_EQ(good(b, n).family, AF_UNSPEC);
    n = v2(b, 0x20, 0x77, "junk", 4); /* LOCAL ignores even a family not named */
    CHECK_EQ(good(b, n).family, AF_UNSPEC);
}

TEST(v2_tlvs_are_skipped) {
    /* ALPN "h2", AUTHORITY "example.com", a NOOP of 0, a CRC32C, an AWS
     * VPC endpoint id, and a vendor type. */
    uint8_t body[128];
    size_t n = 0;
    memcpy(body, inet_body, 12);
    n = 12;
    const uint8_t tlvs[] = {0x01, 0,   2,   'h',  '2', 0x02, 0,    11,  'e', 'x',  'a', 'm', 'p',
                            'l',  'e', '.', 'c',  'o', 'm',  0x04, 0,   0,   0x03, 0,   4,   1,
                            2,    3,   4,   0xEA, 0,   3,    1,    'v', 'p', 0xE0, 0,   1,   9};
    memcpy(body + n, tlvs, sizeof tlvs);
    n += sizeof tlvs;
    uint8_t b[256];
    size_t len = v2(b, 0x21, 0x11, body, n);
    proxy_hdr h = good(b, len);
    CHECK_EQ(h.family, AF_INET);
    CHECK_EQ(h.src_port, 56324);
    /* The block may be longer than the addresses alone for IPv6 too. */
    uint8_t body6[40] = {[15] = 1, [31] = 2, [35] = 80, [36] = 0x04, [37] = 0, [38] = 1};
    len = v2(b, 0x21, 0x21, body6, 40);
    CHECK_EQ(good(b, len).family, AF_INET6);
}

TEST(v2_bad_signature) {
    uint8_t b[64];
    size_t n = v2(b, 0x21, 0x11, inet_body, 12);
    for (size_t i = 0; i < 12; i++) {
        uint8_t c[64];
        memcpy(c, b, n);
        c[i] ^= 0x20;
        bad(c, n);
        bad(c, i + 1); /* refused as soon as the wrong byte is there */
    }
}

TEST(v2_bad_version_or_command) {
    uint8_t b[64];
    const uint8_t vc[] = {0x11, 0x31, 0x01, 0xf1, 0x22, 0x2f};
    for (size_t i = 0; i < sizeof vc; i++) {
        size_t n = v2(b, vc[i], 0x11, inet_body, 12);
        bad(b, n);
        bad(b, 13); /* known from the 13th byte on */
    }
}

TEST(v2_bad_family_or_protocol) {
    uint8_t b[300];
    uint8_t body[216] = {0};
    const uint8_t fam[] = {0x12, 0x22, 0x32, 0x01, 0x10, 0x20, 0x30, 0x41, 0x13, 0xff};
    for (size_t i = 0; i < sizeof fam; i++) {
        size_t n = v2(b, 0x21, fam[i], body, sizeof body);
        bad(b, n);
    }
}

TEST(v2_wrong_lengths) {
    uint8_t b[300];
    uint8_t body[216] = {0};
    bad(b, v2(b, 0x21, 0x11, body, 11)); /* IPv4 needs 12 */
    bad(b, v2(b, 0x21, 0x21, body, 35)); /* IPv6 needs 36 */
    bad(b, v2(b, 0x21, 0x21, body, 12));
    bad(b, v2(b, 0x21, 0x31, body, 215)); /* unix needs 216 */
    /* A TLV that runs past the block, or a stub of one. */
    uint8_t t[20];
    memcpy(t, inet_body, 12);
    const uint8_t over[] = {0x01, 0, 5, 'h', '2'};
    memcpy(t + 12, over, sizeof over);
    bad(b, v2(b, 0x21, 0x11, t, 12 + sizeof over));
    const uint8_t stub[] = {0x01, 0};
    memcpy(t + 12, stub, sizeof stub);
    bad(b, v2(b, 0x21, 0x11, t, 12 + sizeof stub));
    bad(b, v2(b, 0x21, 0x00, stub, sizeof stub)); /* UNSPEC's block is TLVs too */
}

TEST(v2_truncated_asks_for_more) {
    uint8_t b[64];
    size_t n = v2(b, 0x21, 0x11, inet_body, 12);
    proxy_hdr h;
    for (size_t k = 0; k < n; k++)
        CHECK_EQ(parse(b, k, &h), PROXY_NEED_MORE);
    /* A length that promises more than came: still waiting (the driver's
     * header timeout and buffer bound it). */
    b[15] = 200;
    CHECK_EQ(parse(b, n, &h), PROXY_NEED_MORE);
}

TEST(v2_longest_block) {
    static uint8_t b[16 + 65535];
    static uint8_t body[65535];
    memcpy(body, inet_body, 12);
    size_t rest = 65535 - 12;
    body[12] = 0x04; /* one NOOP filling the rest */
    body[13] = (uint8_t)((rest - 3) >> 8);
    body[14] = (uint8_t)(rest - 3);
    size_t n = v2(b, 0x21, 0x11, body, sizeof body);
    proxy_hdr h;
    CHECK_EQ(proxy_parse(b, n, &h), 16 + 65535);
    CHECK_EQ(h.family, AF_INET);
}

TEST(output_untouched_on_refusal) {
    proxy_hdr h = {.version = 77};
    CHECK_EQ(parse("PROXY TCP4 1.2.3.4 5.6.7.8 1 99999\r\n", 36, &h), PROXY_BAD);
    CHECK_EQ(h.version, 77);
    CHECK_EQ(parse("PROXY TCP4", 10, &h), PROXY_NEED_MORE);
    CHECK_EQ(h.version, 77);
}
