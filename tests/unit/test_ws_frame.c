/* test_ws_frame.c — the WebSocket wire format: SHA-1 vectors and the RFC
 * 6455 accept key, frame heads of every length encoding (parsed from input
 * placed against an unreadable page, so over-reads crash), every protocol
 * violation and its close code, fragmentation, UTF-8 across fragments,
 * close payloads, head encoding round trips, and the handshake's header
 * tokens. */
#include "base/sha1.h"
#include "unit.h"
#include "server/ws/ws_frame.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const uint8_t *guarded(const void *s, size_t n) {
    return unit_guarded(s, n);
}

static void hex(const uint8_t *d, size_t n, char *out) {
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

TEST(sha1_vectors) {
    struct {
        const char *in, *out;
    } v[] = {
        {"", "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
        {"abc", "a9993e364706816aba3e25717850c26c9cd0d89d"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "84983e441c3bd26ebaae4aa1f95129e5e54670f1"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        sha1_ctx c;
        uint8_t d[20];
        char h[41];
        sha1_init(&c);
        sha1_update(&c, v[i].in, strlen(v[i].in));
        sha1_final(&c, d);
        hex(d, 20, h);
        CHECK_STR(h, v[i].out);
    }
    /* A million 'a's, fed in uneven pieces. */
    sha1_ctx c;
    uint8_t d[20];
    char h[41], a[997];
    memset(a, 'a', sizeof a);
    sha1_init(&c);
    size_t left = 1000000;
    while (left) {
        size_t n = left < sizeof a ? left : sizeof a;
        sha1_update(&c, a, n);
        left -= n;
    }
    sha1_final(&c, d);
    hex(d, 20, h);
    CHECK_STR(h, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

TEST(accept_key_from_rfc6455) {
    char out[WS_ACCEPT_LEN + 1];
    const char *key = "dGhlIHNhbXBsZSBub25jZQ==";
    CHECK(ws_key_valid(key, strlen(key)));
    ws_accept_key(key, strlen(key), out);
    CHECK_STR(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    CHECK(!ws_key_valid("dGhlIHNhbXBsZSBub25jZQ=", 23));
    CHECK(!ws_key_valid("dGhlIHNhbXBsZSBub25j*Q==", 24));
    CHECK(!ws_key_valid("dGhlIHNhbXBsZSBub25jZQab", 24));
}

static const uint8_t MASK[4] = {0x37, 0xfa, 0x21, 0x3d};

/* A masked client frame: head + masked payload, in buf; its length. */
static size_t client_frame(uint8_t *buf, int fin, int op, const void *payload, size_t len) {
    size_t h = ws_write_head(buf, fin, op, len, MASK);
    for (size_t i = 0; i < len; i++)
        buf[h + i] = ((const uint8_t *)payload)[i] ^ MASK[i & 3];
    return h + len;
}

/* Parses one whole frame from buf (len bytes): the head result, and the
 * payload result in *prc with the unmasked payload in out. */
static int parse_one(ws_parser *p, const uint8_t *buf, size_t len, uint8_t *out, int *prc) {
    ws_frame f;
    const uint8_t *g = guarded(buf, len);
    int rc = ws_parse_head(p, g, len, &f);
    if (rc <= 0)
        return rc;
    memcpy(out, buf + rc, (size_t)f.len);
    *prc = f.len ? ws_parse_payload(p, out, (size_t)f.len) : 0;
    return rc;
}

TEST(heads_of_every_length_encoding) {
    static uint8_t buf[70000], out[70000], payload[70000];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 31);
    size_t sizes[] = {0, 1, 125, 126, 127, 65535, 65536, 69000};
    size_t heads[] = {6, 6, 6, 8, 8, 8, 14, 14};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        ws_parser p;
        ws_parser_init(&p, 1, 0);
        size_t n = client_frame(buf, 1, WS_OP_BINARY, payload, sizes[k]);
        ws_frame f;
        /* Heads are parsed from input ending at an unreadable page. */
        for (size_t cut = 0; cut < heads[k]; cut++)
            CHECK_EQ(ws_parse_head(&p, guarded(buf, cut), cut, &f), 0);
        CHECK_EQ(ws_parse_head(&p, guarded(buf, heads[k]), heads[k], &f), (int)heads[k]);
        CHECK_EQ(f.len, sizes[k]);
        CHECK_EQ(f.opcode, WS_OP_BINARY);
        CHECK(f.fin && f.masked);
        memcpy(out, buf + heads[k], sizes[k]);
        /* The payload in uneven pieces: the mask phase carries over. */
        size_t off = 0, step = 1;
        while (off < sizes[k]) {
            size_t take = sizes[k] - off < step ? sizes[k] - off : step;
            CHECK_EQ(ws_parse_payload(&p, out + off, take), 0);
            off += take;
            step = step * 3 + 1;
        }
        CHECK_EQ(p.left, 0);
        CHECK(memcmp(out, payload, sizes[k]) == 0);
        CHECK_EQ(n, heads[k] + sizes[k]);
    }
}

static int head_error(const uint8_t *b, size_t n) {
    ws_parser p;
    ws_parser_init(&p, 1, 1000);
    ws_frame f;
    return ws_parse_head(&p, guarded(b, n), n, &f);
}

TEST(protocol_violations_close_with_1002) {
    uint8_t b[16];
    client_frame(b, 1, WS_OP_TEXT, "x", 1);
    b[0] |= 0x40; /* RSV1 */
    CHECK_EQ(head_error(b, 7), -1002);
    b[0] = 0x80 | 0x10 | 1; /* RSV3 */
    CHECK_EQ(head_error(b, 7), -1002);
    for (int op = 3; op < 16; op++) {
        if (op >= 8 && op <= 10)
            continue;
        client_frame(b, 1, op, "x", 1);
        CHECK_EQ(head_error(b, 7), -1002);
    }
    /* Unmasked from a client. */
    size_t h = ws_write_head(b, 1, WS_OP_TEXT, 1, NULL);
    b[h] = 'x';
    CHECK_EQ(head_error(b, h + 1), -1002);
    /* Control frames: fragmented, or over 125 bytes. */
    client_frame(b, 0, WS_OP_PING, "", 0);
    CHECK_EQ(head_error(b, 6), -1002);
    h = ws_write_head(b, 1, WS_OP_PING, 126, MASK);
    CHECK_EQ(head_error(b, h), -1002);
    h = ws_write_head(b, 1, WS_OP_CLOSE, 200, MASK);
    CHECK_EQ(head_error(b, h), -1002);
    /* A 64-bit length with the top bit set. */
    h = ws_write_head(b, 1, WS_OP_BINARY, 70000, MASK);
    b[2] = 0x80;
    CHECK_EQ(head_error(b, h), -1002);
    /* A continuation with no message started. */
    client_frame(b, 1, WS_OP_CONT, "x", 1);
    CHECK_EQ(head_error(b, 7), -1002);
}

TEST(servers_frames_must_not_be_masked_for_a_client) {
    uint8_t b[16];
    ws_parser p;
    ws_parser_init(&p, 0, 0);
    ws_frame f;
    client_frame(b, 1, WS_OP_TEXT, "x", 1);
    CHECK_EQ(ws_parse_head(&p, b, 7, &f), -1002);
    size_t h = ws_write_head(b, 1, WS_OP_TEXT, 1, NULL);
    CHECK_EQ(ws_parse_head(&p, b, h + 1, &f), 2);
}

TEST(fragmentation_with_control_frames_between) {
    uint8_t b[64], out[64];
    ws_parser p;
    ws_parser_init(&p, 1, 0);
    int prc;
    size_t n = client_frame(b, 0, WS_OP_TEXT, "hel", 3);
    CHECK_EQ(parse_one(&p, b, n, out, &prc), 6);
    CHECK_EQ(prc, 0);
    CHECK(p.in_message);
    CHECK_EQ(p.cur_opcode, WS_OP_TEXT);
    n = client_frame(b, 1, WS_OP_PING, "pp", 2);
    CHECK_EQ(parse_one(&p, b, n, out, &prc), 6);
    CHECK_EQ(p.cur_opcode, WS_OP_PING);
    CHECK_MEM(out, 2, "pp");
    /* A new message inside one is refused... */
    ws_parser q = p;
    n = client_frame(b, 1, WS_OP_BINARY, "x", 1);
    CHECK_EQ(parse_one(&q, b, n, out, &prc), -1002);
    /* ...a continuation goes on with it, keeping its opcode. */
    n = client_frame(b, 1, WS_OP_CONT, "lo", 2);
    CHECK_EQ(parse_one(&p, b, n, out, &prc), 6);
    CHECK_EQ(p.cur_opcode, WS_OP_TEXT);
    CHECK(p.cur_fin);
    CHECK(!p.in_message);
    CHECK_EQ(p.msg_len, 5);
}

TEST(message_size_limit_is_1009) {
    uint8_t b[64], out[64];
    ws_parser p;
    ws_parser_init(&p, 1, 10);
    int prc;
    size_t n = client_frame(b, 1, WS_OP_BINARY, "0123456789", 10);
    CHECK_EQ(parse_one(&p, b, n, out, &prc), 6);
    n = client_frame(b, 1, WS_OP_BINARY, "0123456789a", 11);
    CHECK_EQ(parse_one(&p, b, n, out, &prc), -1009);
    /* Across fragments. */
    ws_parser_init(&p, 1, 10);
    n = client_frame(b, 0, WS_OP_BINARY, "012345", 6);
    CHECK_EQ(parse_one(&p, b, n, out, &prc), 6);
    n = client_frame(b, 1, WS_OP_CONT, "6789a", 5);
    CHECK_EQ(parse_one(&p, b, n, out, &prc), -1009);
    /* A huge announced length is refused before any payload. */
    ws_parser_init(&p, 1, 1 << 20);
    size_t h = ws_write_head(b, 1, WS_OP_BINARY, UINT64_C(1) << 40, MASK);
    ws_frame f;
    CHECK_EQ(ws_parse_head(&p, b, h, &f), -1009);
}

TEST(no_limit_sums_without_overflow) {
    /* max_message = UINT64_MAX (SIZE_MAX from sp_ws_options): a
     * continuation announcing 2^63 - 1 bytes after one byte sums to 2^63
     * without wrapping; the head is taken (ws.c's reserve() refuses what
     * no buffer can hold), and 2^63 itself is a protocol error. */
    uint8_t b[64], out[64];
    ws_parser p;
    ws_frame f;
    int prc;
    ws_parser_init(&p, 1, UINT64_MAX);
    size_t n = client_frame(b, 0, WS_OP_TEXT, "a", 1);
    CHECK_EQ(parse_one(&p, b, n, out, &prc), 6);
    size_t h = ws_write_head(b, 1, WS_OP_CONT, (UINT64_C(1) << 63) - 1, MASK);
    CHECK_EQ(ws_parse_head(&p, b, h, &f), (int)h);
    CHECK(p.left == (UINT64_C(1) << 63) - 1 && p.msg_len == UINT64_C(1) << 63);
    ws_parser_init(&p, 1, UINT64_MAX);
    h = ws_write_head(b, 1, WS_OP_BINARY, UINT64_C(1) << 63, MASK);
    CHECK_EQ(ws_parse_head(&p, b, h, &f), -1002);
}

static int text_rc(const char *const *frags, const size_t *lens, int nfrag) {
    uint8_t b[64], out[64];
    ws_parser p;
    ws_parser_init(&p, 1, 0);
    int prc = 0;
    for (int i = 0; i < nfrag; i++) {
        size_t n = client_frame(b, i == nfrag - 1, i ? WS_OP_CONT : WS_OP_TEXT, frags[i], lens[i]);
        int rc = parse_one(&p, b, n, out, &prc);
        if (rc < 0)
            return rc;
        if (prc < 0)
            return prc;
    }
    return 0;
}

TEST(utf8_checked_across_fragments_1007) {
    /* "κόσμε" and a 4-byte character split between fragments. */
    const char *ok[] = {"\xce\xba\xe1", "\xbd\xb9\xcf\x83\xce", "\xbc\xce\xb5\xf0\x9f", "\x98\x80"};
    size_t okl[] = {3, 5, 5, 2};
    CHECK_EQ(text_rc(ok, okl, 4), 0);
    /* Cut inside a character at the end, even by an empty last frame. */
    const char *cut[] = {"ab\xe2\x82", ""};
    size_t cutl[] = {4, 0};
    CHECK_EQ(text_rc(cut, cutl, 2), -1007);
    /* Fail fast, mid-message: a byte that cannot continue. */
    const char *bad[] = {"ab\xe2", "\x28", "more"};
    size_t badl[] = {3, 1, 4};
    CHECK_EQ(text_rc(bad, badl, 3), -1007);
    const char *cases[] = {"\xc0\xaf",         /* overlong */
                           "\xed\xa0\x80",     /* surrogate */
                           "\xf4\x90\x80\x80", /* beyond U+10FFFF */
                           "\xff",
                           "\x80",
                           "\xe0\x80\xaf"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t l = strlen(cases[i]);
        CHECK_EQ(text_rc(&cases[i], &l, 1), -1007);
        CHECK(!ws_utf8_valid((const uint8_t *)cases[i], l));
    }
    /* Binary is not checked. */
    uint8_t b[16], out[16];
    ws_parser p;
    ws_parser_init(&p, 1, 0);
    int prc;
    size_t n = client_frame(b, 1, WS_OP_BINARY, "\xff\xfe", 2);
    CHECK_EQ(parse_one(&p, b, n, out, &prc), 6);
    CHECK_EQ(prc, 0);
    /* Long ASCII runs take the fast path, a bad byte after them is seen. */
    char longs[100];
    memset(longs, 'a', sizeof longs);
    CHECK(ws_utf8_valid((const uint8_t *)longs, sizeof longs));
    longs[97] = (char)0xc3;
    CHECK(!ws_utf8_valid((const uint8_t *)longs, sizeof longs));
}

TEST(close_payloads) {
    uint16_t code;
    CHECK_EQ(ws_parse_close((const uint8_t *)"", 0, &code), 0);
    CHECK_EQ(code, 1005);
    CHECK_EQ(ws_parse_close((const uint8_t *)"\x03", 1, &code), -1002);
    CHECK_EQ(ws_parse_close((const uint8_t *)"\x03\xe8"
                                             "bye",
                            5, &code),
             0);
    CHECK_EQ(code, 1000);
    CHECK_EQ(ws_parse_close((const uint8_t *)"\x03\xed", 2, &code), -1002); /* 1005 */
    CHECK_EQ(ws_parse_close((const uint8_t *)"\x03\xee", 2, &code), -1002); /* 1006 */
    CHECK_EQ(ws_parse_close((const uint8_t *)"\x03\xe7", 2, &code), -1002); /* 999 */
    CHECK_EQ(ws_parse_close((const uint8_t *)"\x13\x88", 2, &code), -1002); /* 5000 */
    CHECK_EQ(ws_parse_close((const uint8_t *)"\x0f\xa0", 2, &code), 0);     /* 4000 */
    CHECK_EQ(ws_parse_close((const uint8_t *)"\x03\xe8\xff", 3, &code), -1007);
    CHECK(ws_close_code_valid(1000) && ws_close_code_valid(1011) && ws_close_code_valid(3000));
    CHECK(!ws_close_code_valid(1004) && !ws_close_code_valid(1015) && !ws_close_code_valid(2999));
}

TEST(server_heads_round_trip) {
    uint64_t lens[] = {0, 125, 126, 65535, 65536, UINT64_C(1) << 33};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        uint8_t b[WS_HEAD_MAX];
        size_t h = ws_write_head(b, 1, WS_OP_BINARY, lens[i], NULL);
        CHECK_EQ(h, lens[i] < 126 ? 2 : lens[i] <= 65535 ? 4 : 10);
        ws_parser p;
        ws_parser_init(&p, 0, 0);
        ws_frame f;
        CHECK_EQ(ws_parse_head(&p, guarded(b, h), h, &f), (int)h);
        CHECK_EQ(f.len, lens[i]);
        CHECK(!f.masked);
    }
}

TEST(handshake_header_tokens) {
    const char *yes[] = {"upgrade", "Upgrade", "keep-alive, Upgrade", " UPGRADE ,x",
                         "a,,\tupgrade\t"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        CHECK(ws_has_token(yes[i], strlen(yes[i]), "upgrade"));
    const char *no[] = {"", ",", "upgrades", "keep-alive", "up grade", "xupgrade, y"};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        CHECK(!ws_has_token(no[i], strlen(no[i]), "upgrade"));
    /* only len bytes are looked at */
    CHECK(!ws_has_token("upgrade", 6, "upgrade"));
}

/* RFC 7692 §6: RSV1 marks a compressed message, once negotiated, on its
 * first frame only; never on a control frame or a continuation. */
TEST(rsv1_only_on_a_compressed_messages_first_frame) {
    uint8_t b[32], out[32];
    int prc;
    ws_parser p;
    ws_parser_init(&p, 1, 100);
    size_t n = client_frame(b, 1, WS_OP_TEXT | WS_RSV1, "x", 1);
    CHECK_EQ(parse_one(&p, b, n, out, &prc), -1002); /* not negotiated */
    ws_parser_init(&p, 1, 100);
    p.rsv1_ok = 1;
    n = client_frame(b, 0, WS_OP_TEXT | WS_RSV1, "\xff\xfe", 2); /* not UTF-8: compressed */
    CHECK_EQ(parse_one(&p, b, n, out, &prc), 6);
    CHECK_EQ(prc, 0); /* the payload is not checked as text: it is DEFLATE */
    CHECK(p.compressed);
    ws_parser q = p;
    n = client_frame(b, 1, WS_OP_PING | WS_RSV1, "", 0);
    CHECK_EQ(parse_one(&q, b, n, out, &prc), -1002); /* control frame */
    q = p;
    n = client_frame(b, 1, WS_OP_CONT | WS_RSV1, "y", 1);
    CHECK_EQ(parse_one(&q, b, n, out, &prc), -1002); /* continuation */
    n = client_frame(b, 1, WS_OP_CONT, "\xff", 1);
    CHECK_EQ(parse_one(&p, b, n, out, &prc), 6);
    CHECK_EQ(prc, 0);
    CHECK(p.compressed && p.cur_fin);
    /* The next message without RSV1 is plain again, and checked. */
    n = client_frame(b, 1, WS_OP_TEXT, "\xff", 1);
    CHECK_EQ(parse_one(&p, b, n, out, &prc), 6);
    CHECK_EQ(prc, -1007);
    /* RSV2 and RSV3 stay refused when deflate is on. */
    for (int bit = 0x20; bit >= 0x10; bit >>= 1) {
        ws_parser_init(&p, 1, 100);
        p.rsv1_ok = 1;
        n = client_frame(b, 1, WS_OP_BINARY, "x", 1);
        b[0] |= (uint8_t)bit;
        CHECK_EQ(parse_one(&p, b, n, out, &prc), -1002);
    }
    /* The compressed bytes of a message may be up to twice the limit (the
     * inflated size is the real one, counted by the caller), not more. */
    static uint8_t big[300];
    ws_parser_init(&p, 1, 100);
    p.rsv1_ok = 1;
    size_t h = ws_write_head(big, 1, WS_OP_BINARY | WS_RSV1, 200, MASK);
    ws_frame f;
    CHECK_EQ(ws_parse_head(&p, big, h, &f), (int)h);
    ws_parser_init(&p, 1, 100);
    p.rsv1_ok = 1;
    h = ws_write_head(big, 1, WS_OP_BINARY | WS_RSV1, 201, MASK);
    CHECK_EQ(ws_parse_head(&p, big, h, &f), -1009);
    /* Our own heads carry RSV1 when asked. */
    h = ws_write_head(big, 1, WS_OP_TEXT | WS_RSV1, 5, NULL);
    CHECK_EQ(big[0], 0xc1);
}
