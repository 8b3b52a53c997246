/* sha256.c — SHA-256 (FIPS 180-4), self-contained (no crypto library is
 * linked); used to sign session cookies (HMAC in session_hmac.c). A block
 * takes the x86 SHA extensions where the CPU has them, else portable C;
 * tests/unit/test_session_hmac.c checks both against the FIPS 180-4 vectors
 * and against each other. */
#include "base/sha256.h"

#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define SHA256_HW 1
#endif

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t ror(uint32_t x, int n) {
    return (x >> n) | (x << (32 - n));
}

static void block_c(sha256_ctx *c, const uint8_t *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = c->h[0], b = c->h[1], cc = c->h[2], d = c->h[3];
    uint32_t e = c->h[4], f = c->h[5], g = c->h[6], h = c->h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 =
            h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & cc) ^ (b & cc));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = cc;
        cc = b;
        b = a;
        a = t1 + t2;
    }
    c->h[0] += a;
    c->h[1] += b;
    c->h[2] += cc;
    c->h[3] += d;
    c->h[4] += e;
    c->h[5] += f;
    c->h[6] += g;
    c->h[7] += h;
}

#ifdef SHA256_HW
/* One block with the SHA extensions: the state kept as the two halves the
 * instructions take (A,B,E,F and C,D,G,H), four rounds a step, each step's
 * four message words made from the four before (msg1, the W[t-7] words,
 * msg2). About 1/12 of the portable block's instructions (a new session's
 * cookie is five blocks). */
__attribute__((target("sha,sse4.1,ssse3"))) static void block_hw(sha256_ctx *c, const uint8_t *p) {
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i dcba = _mm_loadu_si128((const __m128i *)&c->h[0]);
    __m128i hgfe = _mm_loadu_si128((const __m128i *)&c->h[4]);
    __m128i badc = _mm_shuffle_epi32(dcba, 0xB1);
    __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    __m128i abef = _mm_alignr_epi8(badc, efgh, 8);
    __m128i cdgh = _mm_blend_epi16(efgh, badc, 0xF0);
    const __m128i abef0 = abef, cdgh0 = cdgh;
    __m128i m[4];
    for (int g = 0; g < 16; g++) {
        __m128i *w = &m[g & 3];
        if (g < 4)
            *w = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * g)), bswap);
        else
            *w = _mm_sha256msg2_epu32(
                _mm_add_epi32(_mm_sha256msg1_epu32(*w, m[(g + 1) & 3]),
                              _mm_alignr_epi8(m[(g + 3) & 3], m[(g + 2) & 3], 4)),
                m[(g + 3) & 3]);
        __m128i wk = _mm_add_epi32(*w, _mm_loadu_si128((const __m128i *)&K[4 * g]));
        /* Two rounds each; the old A,B,E,F are then the new C,D,G,H, so
         * the two halves trade places twice and end where they started. */
        cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
        abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));
    }
    abef = _mm_add_epi32(abef, abef0);
    cdgh = _mm_add_epi32(cdgh, cdgh0);
    __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
    __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128((__m128i *)&c->h[0], _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128((__m128i *)&c->h[4], _mm_alignr_epi8(dchg, feba, 8));
}

/* The SHA extensions, SSSE3 and SSE4.1 (cpuid leaves 7 and 1). */
static int have_sha_hw(void) {
    unsigned a, b, cx, d;
    if (!__get_cpuid(1, &a, &b, &cx, &d) || !(cx & bit_SSSE3) || !(cx & bit_SSE4_1))
        return 0;
    return __get_cpuid_count(7, 0, &a, &b, &cx, &d) && (b & bit_SHA);
}

static int use_hw = -1; /* -1: not yet asked */

int sha256_portable_only(int on) {
    int had = use_hw == 1 || (use_hw < 0 && have_sha_hw());
    use_hw = on ? 0 : have_sha_hw();
    return had;
}

static void block(sha256_ctx *c, const uint8_t *p) {
    if (use_hw < 0)
        use_hw = have_sha_hw();
    if (use_hw)
        block_hw(c, p);
    else
        block_c(c, p);
}
#else
int sha256_portable_only(int on) {
    return 0;
}

static void block(sha256_ctx *c, const uint8_t *p) {
    block_c(c, p);
}
#endif

void sha256_init(sha256_ctx *c) {
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, iv, sizeof iv);
    c->total = 0;
    c->nbuf = 0;
}

void sha256_update(sha256_ctx *c, const void *data, size_t len) {
    const uint8_t *p = data;
    c->total += len;
    if (c->nbuf) {
        size_t take = 64 - c->nbuf < len ? 64 - c->nbuf : len;
        memcpy(c->buf + c->nbuf, p, take);
        c->nbuf += take;
        p += take;
        len -= take;
        if (c->nbuf < 64)
            return;
        block(c, c->buf);
        c->nbuf = 0;
    }
    for (; len >= 64; p += 64, len -= 64)
        block(c, p);
    memcpy(c->buf, p, len);
    c->nbuf = len;
}

void sha256_final(sha256_ctx *c, uint8_t out[SHA256_LEN]) {
    uint64_t bits = c->total * 8;
    uint8_t pad[72] = {0x80};
    size_t padlen = (c->nbuf < 56 ? 56 : 120) - c->nbuf;
    for (int i = 0; i < 8; i++)
        pad[padlen + (size_t)i] = (uint8_t)(bits >> (56 - 8 * i));
    sha256_update(c, pad, padlen + 8);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(c->h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
        out[4 * i + 3] = (uint8_t)c->h[i];
    }
}

void sha256(const void *data, size_t len, uint8_t out[SHA256_LEN]) {
    sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, data, len);
    sha256_final(&c, out);
}
