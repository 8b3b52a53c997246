/* http_scan_avx2.h — the AVX2 forms of http_scan.h's field-line and target
 * scans: 32 octets per step, the same fast class tests widened. Compiled with
 * target("avx2") function attributes only, so the build stays baseline
 * x86-64; http_parse.c calls them only when the CPU has AVX2 (chosen once at
 * start-up). Included by http_parse.c alone, after http_scan.h. */
#ifndef SPINDLE_HTTP_SCAN_AVX2_H
#define SPINDLE_HTTP_SCAN_AVX2_H

#include <immintrin.h>

#include "http/http_chars.h"

#define HTTP_AVX2 static inline __attribute__((target("avx2"), always_inline))

/* The class tests' constants, made once per parse and kept in registers:
 * left to itself the compiler rebuilds each one (two or three instructions)
 * at every use, inside the per-line loop. */
typedef struct http_avx2_k {
    __m256i x3f, c94, x5f, cm35, x20, ma, lt26, dash;
} http_avx2_k;

/* Their values, as octets: one load each. */
static const char http_avx2_kv[8][32] __attribute__((aligned(32))) = {
#define HTTP_K32(c)                                                                                \
    { [0 ... 31] = (char)(c) }
    HTTP_K32(0x3f), HTTP_K32(94),         HTTP_K32(0x5f),      HTTP_K32(-35),
    HTTP_K32(0x20), HTTP_K32(0x80 - 'a'), HTTP_K32(-128 + 26), HTTP_K32('-'),
#undef HTTP_K32
};

HTTP_AVX2 http_avx2_k http_avx2_consts(void) {
    const __m256i *t = (const __m256i *)(const void *)http_avx2_kv;
    __asm__("" : "+r"(t)); /* loads, not rebuilt from immediates */
    http_avx2_k k = {t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]};
    /* Opaque to the optimiser, so it cannot re-materialise them. */
    __asm__("" : "+x"(k.x3f), "+x"(k.c94), "+x"(k.x5f), "+x"(k.cm35));
    __asm__("" : "+x"(k.x20), "+x"(k.ma), "+x"(k.lt26), "+x"(k.dash));
    return k;
}

HTTP_AVX2 __m256i http_load32(const char *p) {
    return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

/* The same tests as http_value_misses and http_token_misses, on 32 octets. */
HTTP_AVX2 uint32_t http_value_misses32(const http_avx2_k *k, __m256i v) {
    __m256i w = _mm256_add_epi8(_mm256_xor_si256(v, k->x3f), k->x3f);
    return (uint32_t)_mm256_movemask_epi8(_mm256_cmpgt_epi8(w, k->c94));
}
HTTP_AVX2 uint32_t http_target_misses32(const http_avx2_k *k, __m256i v) {
    __m256i w = _mm256_add_epi8(v, k->x5f);
    return (uint32_t)_mm256_movemask_epi8(_mm256_cmpgt_epi8(w, k->cm35));
}
HTTP_AVX2 uint32_t http_token_misses32(const http_avx2_k *k, __m256i v) {
    __m256i l = _mm256_add_epi8(_mm256_or_si256(v, k->x20), k->ma);
    __m256i good = _mm256_or_si256(_mm256_cmpgt_epi8(k->lt26, l), _mm256_cmpeq_epi8(v, k->dash));
    return ~(uint32_t)_mm256_movemask_epi8(good);
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

/* The request-target, as http_scan_target_in. */
HTTP_AVX2 const char *http_scan_target_avx2(const http_avx2_k *k, const char *lo, const char *p,
                                            const char *end) {
    if (end - lo < 32)
        return http_scan_target_in(lo, p, end, ' ');
    return http_scan_avx2(k, lo, p, end, HTTP_C_TARGET, ' ');
}

#endif
