/* test_http_parse_portable.c — every case of test_http_parse.c again, with
 * the parser compiled into this test on the portable, table-driven scanners
 * (HTTP_SCAN_PORTABLE), so the path non-x86 builds take is tested on x86 too.
 * The parser's own definition here keeps the library's (SSE2) one unlinked. */
#define HTTP_SCAN_PORTABLE 1
#include "http/http_parse.c"

#include "test_http_parse.c"
