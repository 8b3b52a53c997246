/* http_scan.h — the parser's inner loops: find the first octet of a run that
 * leaves a character class. Each has a portable table-driven version and,
 * where SSE2 exists (every x86_64) and HTTP_SCAN_PORTABLE is not defined, one
 * that checks 16 octets per step; the unit tests check that both agree, and
 * test_http_parse_portable runs the whole parser on the portable ones. */
#ifndef SPINDLE_HTTP_SCAN_H
#define SPINDLE_HTTP_SCAN_H

#include "http/http_chars.h"

#if defined(__SSE2__) && !defined(HTTP_SCAN_PORTABLE)
#define HTTP_SCAN_SSE2 1
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

#ifdef HTTP_SCAN_SSE2
/* Each scanner below takes lo, the lowest address it may read (the start of
 * the caller's buffer): when fewer than 16 octets remain before end, it loads
 * the 16 that end at end instead, if they lie at or above lo, and ignores
 * those before p. So nothing outside [lo, end) is ever read, and a head's
 * last line costs one step, not a byte loop.
 *
 * Each class test yields a 16-bit mask of the octets that fail a fast test;
 * the first such octet is then checked against the table, since the fast
 * tests leave out a few rare members of the class. */
static inline __m128i http_load16(const char *p) {
    return _mm_loadu_si128((const __m128i *)(const void *)p);
}

/* Field values: everything but 0x00-0x1f and DEL 0x7f. XOR 0x3f makes those
 * one range, 0x20-0x40, and adding 0x3f moves it to the signed top, 95-127,
 * so one signed compare finds them. HTAB, a member, fails it: rare. */
static inline unsigned http_value_misses(__m128i v) {
    __m128i w = _mm_add_epi8(_mm_xor_si128(v, _mm_set1_epi8(0x3f)), _mm_set1_epi8(0x3f));
    return (unsigned)_mm_movemask_epi8(_mm_cmpgt_epi8(w, _mm_set1_epi8(94)));
}

/* Request targets: visible ASCII 0x21-0x7e, moved to the signed bottom
 * (-128..-35) by adding 0x5f: the class exactly. */
static inline unsigned http_target_misses(__m128i v) {
    __m128i w = _mm_add_epi8(v, _mm_set1_epi8(0x5f));
    return (unsigned)_mm_movemask_epi8(_mm_cmpgt_epi8(w, _mm_set1_epi8(-35)));
}

/* Tokens: letters (OR 0x20 folds upper case, adding 0x9f moves a-z to the
 * signed bottom) and '-', the octets of nearly every method and field name;
 * digits and the punctuation go to the table. */
static inline unsigned http_token_misses(__m128i v) {
    __m128i l = _mm_add_epi8(_mm_or_si128(v, _mm_set1_epi8(0x20)), _mm_set1_epi8(0x80 - 'a'));
    __m128i good = _mm_or_si128(_mm_cmplt_epi8(l, _mm_set1_epi8(-128 + 26)),
                                _mm_cmpeq_epi8(v, _mm_set1_epi8('-')));
    return (unsigned)_mm_movemask_epi8(good) ^ 0xffffu;
}

/* Host values: letters, digits and '.', the octets of nearly every name;
 * the rest of RFC 3986's host and port octets go to the table. */
static inline unsigned http_host_misses(__m128i v) {
    __m128i l = _mm_add_epi8(_mm_or_si128(v, _mm_set1_epi8(0x20)), _mm_set1_epi8(0x80 - 'a'));
    __m128i d = _mm_add_epi8(v, _mm_set1_epi8(0x80 - '0'));
    __m128i good = _mm_or_si128(_mm_cmplt_epi8(l, _mm_set1_epi8(-128 + 26)),
                                _mm_cmplt_epi8(d, _mm_set1_epi8(-128 + 10)));
    good = _mm_or_si128(good, _mm_cmpeq_epi8(v, _mm_set1_epi8('.')));
    return (unsigned)_mm_movemask_epi8(good) ^ 0xffffu;
}

/* The fast test for class cls (a constant once inlined). */
static inline __attribute__((always_inline)) unsigned http_misses(__m128i v, uint8_t cls) {
    if (cls == HTTP_C_VALUE)
        return http_value_misses(v);
    if (cls == HTTP_C_TARGET)
        return http_target_misses(v);
    if (cls == HTTP_C_HOST)
        return http_host_misses(v);
    return http_token_misses(v);
}

/* The first octet in [p, end) not of class cls; see above for lo. stop,
 * never of the class, is the octet the caller expects to end the run: it is
 * recognised without the table. */
static inline __attribute__((always_inline)) const char *
http_scan_sse2(const char *lo, const char *p, const char *end, uint8_t cls, char stop) {
    if (end - lo < 16)
        return http_scan_class_portable(p, end, cls);
    const char *last = end - 16; /* the last 16-octet load */
    for (;;) {
        unsigned m;
        if (p <= last) {
            m = http_misses(http_load16(p), cls);
            if (!m) {
                p += 16;
                continue;
            }
        } else {
            /* Bit i of the shifted mask is octet p + i; none past end. */
            m = http_misses(http_load16(last), cls) >> (p - last);
            if (!m)
                return end;
        }
        p += (unsigned)__builtin_ctz(m);
        if (*p == stop || !http_is((unsigned char)*p, cls))
            return p;
        p++;
    }
}

static inline const char *http_scan_value_in(const char *lo, const char *p, const char *end,
                                             char stop) {
    return http_scan_sse2(lo, p, end, HTTP_C_VALUE, stop);
}
static inline const char *http_scan_target_in(const char *lo, const char *p, const char *end,
                                              char stop) {
    return http_scan_sse2(lo, p, end, HTTP_C_TARGET, stop);
}
static inline const char *http_scan_token_in(const char *lo, const char *p, const char *end,
                                             char stop) {
    return http_scan_sse2(lo, p, end, HTTP_C_TCHAR, stop);
}
static inline const char *http_scan_host_in(const char *lo, const char *p, const char *end) {
    return http_scan_sse2(lo, p, end, HTTP_C_HOST, 0);
}

/* The usual field line, in one step: a name of letters and '-' whose colon
 * lies in the first 16 octets at p. Returns NULL when the line is not of that
 * shape (or fewer than 16 octets remain); else sets *name_len and returns
 * what http_scan_value_in returns for the value after the colon, the same
 * 16 octets telling where the name ends and where the value may. */
static inline const char *http_scan_field(const char *lo, const char *p, const char *end,
                                          size_t *name_len) {
    if (end - p < 16)
        return NULL;
    __m128i v = http_load16(p);
    unsigned tm = http_token_misses(v);
    if (!tm)
        return NULL;
    unsigned c = (unsigned)__builtin_ctz(tm);
    if (c == 0 || p[c] != ':')
        return NULL;
    *name_len = c;
    unsigned vm = http_value_misses(v) >> (c + 1);
    if (!vm) /* the value goes on past these 16 octets */
        return http_scan_value_in(lo, p + 16, end, '\r');
    const char *q = p + c + 1 + __builtin_ctz(vm);
    return *q == '\r' ? q : http_scan_value_in(lo, q, end, '\r');
}
#else
static inline const char *http_scan_value_in(const char *lo, const char *p, const char *end,
                                             char stop) {
    (void)lo, (void)stop;
    return http_scan_value_portable(p, end);
}
static inline const char *http_scan_target_in(const char *lo, const char *p, const char *end,
                                              char stop) {
    (void)lo, (void)stop;
    return http_scan_target_portable(p, end);
}
static inline const char *http_scan_token_in(const char *lo, const char *p, const char *end,
                                             char stop) {
    (void)lo, (void)stop;
    return http_scan_token_portable(p, end);
}
static inline const char *http_scan_host_in(const char *lo, const char *p, const char *end) {
    (void)lo;
    return http_scan_class_portable(p, end, HTTP_C_HOST);
}
/* No one-step form: every line takes the scanners above. */
static inline const char *http_scan_field(const char *lo, const char *p, const char *end,
                                          size_t *name_len) {
    (void)lo, (void)p, (void)end, (void)name_len;
    return NULL;
}
#endif

/* The same, with nothing before p readable (NUL is of no class). */
static inline const char *http_scan_token(const char *p, const char *end) {
    return http_scan_token_in(p, p, end, 0);
}
static inline const char *http_scan_value(const char *p, const char *end) {
    return http_scan_value_in(p, p, end, 0);
}
static inline const char *http_scan_target(const char *p, const char *end) {
    return http_scan_target_in(p, p, end, 0);
}

#endif
