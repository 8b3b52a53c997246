/* http_scan.h — the parser's inner loops: find the first octet of a run that
 * leaves a character class. Each has a portable table-driven version and,
 * where SSE2 exists (every x86_64), one that checks 16 octets per step; the
 * unit tests check that both agree on every input they try. */
#ifndef SPINDLE_HTTP_SCAN_H
#define SPINDLE_HTTP_SCAN_H

#include "http_chars.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Portable versions: the first p in [p, end) whose octet is not of the class. */
static inline const char *http_scan_class_portable(const char *p, const char *end, uint8_t cls) {
    while (p < end && http_is((unsigned char)*p, cls))
        p++;
    return p;
}

static inline const char *http_scan_token_portable(const char *p, const char *end) {
    return http_scan_class_portable(p, end, HTTP_C_TCHAR);
}
static inline const char *http_scan_value_portable(const char *p, const char *end) {
    return http_scan_class_portable(p, end, HTTP_C_VALUE);
}
static inline const char *http_scan_target_portable(const char *p, const char *end) {
    return http_scan_class_portable(p, end, HTTP_C_TARGET);
}

#ifdef __SSE2__
/* Index of the first zero bit of a 16-bit "good" mask, or 16. Loads stop 16
 * octets before end, so nothing past end is ever read. */
static inline unsigned http_first_bad(__m128i good) {
    unsigned m = (unsigned)_mm_movemask_epi8(good) ^ 0xffffu;
    return m ? (unsigned)__builtin_ctz(m) : 16u;
}

/* Field values: HTAB, 0x20-0x7e and obs-text 0x80-0xff. The loop looks
 * only for octets <= 0x1f (a saturating subtract leaves them zero) and DEL;
 * HTAB, rare in values, is let through when one is found. */
static inline const char *http_scan_value_sse2(const char *p, const char *end) {
    const __m128i ctl = _mm_set1_epi8(0x1f), del = _mm_set1_epi8(0x7f), tab = _mm_set1_epi8(9),
                  zero = _mm_setzero_si128();
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i bad =
            _mm_or_si128(_mm_cmpeq_epi8(_mm_subs_epu8(v, ctl), zero), _mm_cmpeq_epi8(v, del));
        unsigned m = (unsigned)_mm_movemask_epi8(bad);
        if (m) {
            m &= ~(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, tab));
            if (m)
                return p + __builtin_ctz(m);
        }
        p += 16;
    }
    return http_scan_value_portable(p, end);
}

/* Request targets: visible ASCII 0x21-0x7e. */
static inline const char *http_scan_target_sse2(const char *p, const char *end) {
    const __m128i lo = _mm_set1_epi8(0x20), hi = _mm_set1_epi8(0x7f);
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        unsigned i = http_first_bad(_mm_and_si128(_mm_cmpgt_epi8(v, lo), _mm_cmplt_epi8(v, hi)));
        if (i < 16)
            return p + i;
        p += 16;
    }
    return http_scan_target_portable(p, end);
}

/* Tokens: 16 at a time over the usual letters, digits and '-', and the
 * table for the rarer token punctuation. */
static inline const char *http_scan_token_sse2(const char *p, const char *end) {
    const __m128i a = _mm_set1_epi8('a' - 1), z = _mm_set1_epi8('z' + 1),
                  d0 = _mm_set1_epi8('0' - 1), d9 = _mm_set1_epi8('9' + 1),
                  dash = _mm_set1_epi8('-'), caseb = _mm_set1_epi8(0x20);
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i l = _mm_or_si128(v, caseb);
        __m128i good = _mm_and_si128(_mm_cmpgt_epi8(l, a), _mm_cmplt_epi8(l, z));
        good = _mm_or_si128(good, _mm_and_si128(_mm_cmpgt_epi8(v, d0), _mm_cmplt_epi8(v, d9)));
        good = _mm_or_si128(good, _mm_cmpeq_epi8(v, dash));
        unsigned i = http_first_bad(good);
        p += i;
        if (i < 16) {
            if (!http_is((unsigned char)*p, HTTP_C_TCHAR))
                return p;
            p++;
        }
    }
    return http_scan_token_portable(p, end);
}

#define http_scan_token  http_scan_token_sse2
#define http_scan_value  http_scan_value_sse2
#define http_scan_target http_scan_target_sse2
#else
#define http_scan_token  http_scan_token_portable
#define http_scan_value  http_scan_value_portable
#define http_scan_target http_scan_target_portable
#endif

#endif
