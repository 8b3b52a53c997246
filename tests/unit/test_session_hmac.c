/* test_session_hmac.c — SHA-256 against FIPS 180-4 vectors (including a
 * million 'a's fed in odd pieces), in both copies of its block (the x86
 * SHA extensions where the CPU has them, the portable C), the two copies
 * against each other on every length to 300, and HMAC-SHA256 against RFC
 * 4231. */
#include "server/session/session_hmac.h"
#include "unit.h"

#include <stdint.h>

static void hex(const uint8_t *p, size_t n, char *out) {
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", p[i]);
}

static void check_sha(const char *msg, const char *want) {
    uint8_t d[SHA256_LEN];
    char h[65];
    sha256(msg, strlen(msg), d);
    hex(d, sizeof d, h);
    CHECK_STR(h, want);
}

TEST(sha256_fips_vectors) {
    check_sha("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    check_sha("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    check_sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(sha256_fips_vectors_portable) {
    sha256_portable_only(1);
    check_sha("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    check_sha("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    check_sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    sha256_portable_only(0);
}

/* The SHA-extension block against the portable one, on every length from
 * 0 to 300 (every padding case, up to five blocks) of pseudo-random bytes;
 * says which copies ran (a CPU without the extensions has one only). */
TEST(sha256_both_blocks_agree) {
    uint8_t msg[300];
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < sizeof msg; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        msg[i] = (uint8_t)x;
    }
    sha256_portable_only(0);
    int hw = sha256_portable_only(0);
    fprintf(stderr, "  the SHA extensions: %s\n", hw ? "in use" : "not on this CPU");
    for (size_t n = 0; n <= sizeof msg; n++) {
        uint8_t a[SHA256_LEN], b[SHA256_LEN];
        sha256(msg, n, a);
        sha256_portable_only(1);
        sha256(msg, n, b);
        sha256_portable_only(0);
        if (memcmp(a, b, sizeof a) != 0)
            fprintf(stderr, "  length %zu differs\n", n);
        CHECK(memcmp(a, b, sizeof a) == 0);
    }
}

TEST(sha256_million_a_in_pieces) {
    static char a[1024];
    memset(a, 'a', sizeof a);
    sha256_ctx c;
    sha256_init(&c);
    size_t left = 1000000, step = 1;
    while (left) {
        size_t n = step < left ? step : left;
        sha256_update(&c, a, n);
        left -= n;
        step = step % 997 + 13; /* pieces across block boundaries */
    }
    uint8_t d[SHA256_LEN];
    char h[65];
    sha256_final(&c, d);
    hex(d, sizeof d, h);
    CHECK_STR(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void check_hmac(const void *key, size_t kl, const char *msg, const char *want) {
    uint8_t d[SHA256_LEN];
    char h[65];
    hmac_sha256(key, kl, msg, strlen(msg), d);
    hex(d, sizeof d, h);
    CHECK_STR(h, want);
}

TEST(hmac_sha256_rfc4231) {
    uint8_t k1[20], k3[20], k6[131];
    memset(k1, 0x0b, sizeof k1);
    check_hmac(k1, sizeof k1, "Hi There",
               "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    check_hmac("Jefe", 4, "what do ya want for nothing?",
               "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    memset(k3, 0xaa, sizeof k3);
    char m3[51];
    memset(m3, 0xdd, 50);
    m3[50] = '\0';
    check_hmac(k3, sizeof k3, m3,
               "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
    memset(k6, 0xaa, sizeof k6); /* longer than a block: hashed first */
    check_hmac(k6, sizeof k6, "Test Using Larger Than Block-Size Key - Hash Key First",
               "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(constant_time_compare) {
    CHECK(sess_ct_equal("abcdef", "abcdef", 6));
    CHECK(!sess_ct_equal("abcdef", "abcdeg", 6));
    CHECK(!sess_ct_equal("xbcdef", "abcdef", 6));
    CHECK(sess_ct_equal("a", "b", 0));
}
