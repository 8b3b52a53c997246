/* test_http_parse_sse2.c — every case of test_http_parse.c again on the
 * baseline copy of the parser (SSE2 on x86-64), forced before the tests run:
 * test_http_parse itself runs on the AVX2 copy wherever the CPU has AVX2, so
 * both copies answer every case. */
#include "unit.h"

#include "http/http_parse.h"

__attribute__((constructor(200))) static void force_baseline(void) {
    http_parse_set_avx2(0);
}

#define HTTP_PARSE_TEST_BASELINE 1
#include "test_http_parse.c"
