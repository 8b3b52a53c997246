/* http_scan_avx2.h — the AVX2 forms of http_scan.h's field-line and target
 * scans: 32 octets per step, the same fast class tests widened. Compiled with
 * target("avx2") function attributes only, so the build stays baseline
 * x86-64; http_parse.c calls them only when the CPU has AVX2 (chosen once at
 * start-up). Included by http_parse.c alone, after http_scan.h. */
#ifndef SPINDLE_HTTP_SCAN_AVX2_H
#define SPINDLE_HTTP_SCAN_AVX2_H

#include <immintrin.h>

#include "http/http_chars.h"

/* BMI1/2 come with AVX2 on every CPU that has it (http_parse.c checks all
 * three): tzcnt and shrx keep the per-line masks out of rcx. */
#define HTTP_AVX2_TARGET __attribute__((target("avx2,bmi,bmi2")))
#define HTTP_AVX2        static inline HTTP_AVX2_TARGET __attribute__((always_inline))

/* The class tests' constants, made once per parse and kept in registers:
 * left to itself the compiler rebuilds each one (two or three instructions)
 * at every use, inside the per-line loop. */
typedef struct http_avx2_k {
    __m256i x3f, c94, x5f, cm35, x20, ma, gt25, dash;
} http_avx2_k;

/* Their values, as octets: one load each. */
static const char http_avx2_kv[8][32] __attribute__((aligned(32))) = {
#define HTTP_K32(c)                                                                                \
    { [0 ... 31] = (char)(c) }
    HTTP_K32(0x3f), HTTP_K32(94),         HTTP_K32(0x5f),      HTTP_K32(-35),
    HTTP_K32(0x20), HTTP_K32(0x80 - 'a'), HTTP_K32(-128 + 25), HTTP_K32('-'),
#undef HTTP_K32
};

HTTP_AVX2 http_avx2_k http_avx2_consts(void) {
    const __m256i *t = (const __m256i *)(const void *)http_avx2_kv;
    __asm__("" : "+r"(t)); /* loads, not rebuilt from immediates */
    http_avx2_k k = {t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]};
    /* Opaque to the optimiser, so it cannot re-materialise them. */
    __asm__("" : "+x"(k.x3f), "+x"(k.c94), "+x"(k.x5f), "+x"(k.cm35));
    __asm__("" : "+x"(k.x20), "+x"(k.ma), "+x"(k.gt25), "+x"(k.dash));
    return k;
}

/* tzcnt without the zeroing of its destination that gcc's generic tuning
 * adds before each one (it breaks a false dependency some Intel cores have
 * on the destination): two instructions per field line fewer, at worst a
 * short wait there on those cores. x is never 0 where this is used. */
HTTP_AVX2 uint64_t http_tz(uint64_t x) {
    uint64_t r;
    __asm__("tzcnt %1, %0" : "=r"(r) : "r"(x) : "cc");
    return r;
}

/* The same on a 32-bit mask: 32 when x is 0, which is tzcnt's own answer
 * there, so no bit need be set to stop it. The 32-bit write zeroes the
 * register's upper half. */
HTTP_AVX2 uint64_t http_tz32(uint32_t x) {
    uint64_t r;
    __asm__("tzcnt %k1, %k0" : "=r"(r) : "r"(x) : "cc");
    return r;
}

HTTP_AVX2 __m256i http_load32(const char *p) {
    return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

/* The same tests as http_value_misses and http_token_misses, on 32 octets;
 * the name test yields the misses themselves (a letter is an octet that,
 * folded and moved, is not above 'z'), saving the inversion. */
HTTP_AVX2 __m256i http_value_bad32(const http_avx2_k *k, __m256i v) {
    return _mm256_cmpgt_epi8(_mm256_add_epi8(_mm256_xor_si256(v, k->x3f), k->x3f), k->c94);
}
HTTP_AVX2 uint32_t http_value_misses32(const http_avx2_k *k, __m256i v) {
    return (uint32_t)_mm256_movemask_epi8(http_value_bad32(k, v));
}
HTTP_AVX2 uint32_t http_target_misses32(const http_avx2_k *k, __m256i v) {
    __m256i w = _mm256_add_epi8(v, k->x5f);
    return (uint32_t)_mm256_movemask_epi8(_mm256_cmpgt_epi8(w, k->cm35));
}
HTTP_AVX2 uint32_t http_token_misses32(const http_avx2_k *k, __m256i v) {
    __m256i l = _mm256_add_epi8(_mm256_or_si256(v, k->x20), k->ma);
    __m256i bad = _mm256_andnot_si256(_mm256_cmpeq_epi8(v, k->dash), _mm256_cmpgt_epi8(l, k->gt25));
    return (uint32_t)_mm256_movemask_epi8(bad);
}

/* http_scan_sse2 at 32 octets a step, for the value and target classes: the
 * first octet in [p, end) not of class cls, reading only [lo, end). The
 * caller guarantees end - lo >= 32. */
HTTP_AVX2 const char *http_scan_avx2(const http_avx2_k *k, const char *lo, const char *p,
                                     const char *end, uint8_t cls, char stop) {
    (void)lo;
    const char *last = end - 32;
    for (;;) {
        uint32_t m;
        if (p <= last) {
            __m256i v = http_load32(p);
            m = cls == HTTP_C_VALUE ? http_value_misses32(k, v) : http_target_misses32(k, v);
            if (!m) {
                p += 32;
                continue;
            }
        } else {
            __m256i v = http_load32(last);
            m = cls == HTTP_C_VALUE ? http_value_misses32(k, v) : http_target_misses32(k, v);
            m = (uint32_t)((uint64_t)m >> (p - last)); /* p == end shifts by 32 */
            if (!m)
                return end;
        }
        p += __builtin_ctz(m);
        if (*p == stop || !http_is((unsigned char)*p, cls))
            return p;
        p++;
    }
}

/* The CR that ends a usual field value whose first octets passed: the
 * first octet at or after p that fails the value test, 64 octets a step
 * (two tests, one mask), then 32, then the buffer's last 32 octets. NULL
 * when that octet is no CR (HTAB or a control: the general loop decides)
 * or there is none before end. The caller guarantees end - lo >= 32, so
 * the last load stays inside [lo, end). */
HTTP_AVX2 const char *http_value_cr_avx2(const http_avx2_k *kr, const char *p, const char *end) {
    /* Its constants from memory, not kr's registers: sharing those made the
     * compiler copy both at every field line, long or not. */
    const __m256i *t = (const __m256i *)(const void *)http_avx2_kv;
    __asm__("" : "+r"(t));
    const http_avx2_k kk = {.x3f = t[0], .c94 = t[1]}, *k = &kk;
    (void)kr;
    uint64_t m;
    for (const char *last64 = end - 64; p <= last64; p += 64) {
        __m256i a = http_load32(p), b = http_load32(p + 32);
        __m256i wa = http_value_bad32(k, a), wb = http_value_bad32(k, b);
        if (!_mm256_testz_si256(_mm256_or_si256(wa, wb), _mm256_or_si256(wa, wb))) {
            m = (uint32_t)_mm256_movemask_epi8(wa) | (uint64_t)(uint32_t)_mm256_movemask_epi8(wb)
                                                         << 32;
            goto found;
        }
    }
    if (end - p >= 32) {
        m = http_value_misses32(k, http_load32(p));
        if (m)
            goto found;
        p += 32;
    }
    /* Bit i of the shifted mask is octet p + i; none past end. */
    m = (uint64_t)http_value_misses32(k, http_load32(end - 32)) >> (32 - (end - p));
    if (!m)
        return NULL;
found:
    p += http_tz(m);
    return *p == '\r' ? p : NULL;
}

/* The request-target, as http_scan_target_in. */
HTTP_AVX2 const char *http_scan_target_avx2(const http_avx2_k *k, const char *lo, const char *p,
                                            const char *end) {
    if (end - lo < 32)
        return http_scan_target_in(lo, p, end, ' ');
    return http_scan_avx2(k, lo, p, end, HTTP_C_TARGET, ' ');
}

/* Host values: 1 when every octet of v[0..n) is of HTTP_C_HOST, reading
 * only [lo, v + n). Names of up to 32 octets with 32 readable octets
 * before their end take one step of the fast test (letters, '.', and the
 * range '0'-':', digits and the port's colon), its constants loaded where
 * used; the rest go to the 16-octet scanner. */
static const char http_avx2_hostk[3][32] __attribute__((aligned(32))) = {
    {[0 ... 31] = (char)(0x80 - '0')}, {[0 ... 31] = (char)(-128 + 11)}, {[0 ... 31] = '.'}};

HTTP_AVX2 int http_host_ok_avx2(const http_avx2_k *k, const char *lo, const char *v, size_t n) {
    if (n > 32 || v + n - lo < 32)
        return http_scan_host_in(lo, v, v + n) == v + n;
    const __m256i *t = (const __m256i *)(const void *)http_avx2_hostk;
    __asm__("" : "+r"(t)); /* memory operands, not rebuilt from immediates */
    __m256i x = http_load32(v + n - 32);
    __m256i l = _mm256_add_epi8(_mm256_or_si256(x, k->x20), k->ma);
    __m256i d = _mm256_cmpgt_epi8(t[1], _mm256_add_epi8(x, t[0]));
    __m256i bad = _mm256_andnot_si256(_mm256_or_si256(d, _mm256_cmpeq_epi8(x, t[2])),
                                      _mm256_cmpgt_epi8(l, k->gt25));
    /* Octets before v are shifted out: bit i of m is v + n - 32 + i. */
    uint32_t m = (uint32_t)_mm256_movemask_epi8(bad) >> (32 - n);
    if (!m)
        return 1;
    return http_scan_host_in(lo, v, v + n) == v + n; /* a rarer host octet, or none */
}

#endif
