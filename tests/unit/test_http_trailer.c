/* test_http_trailer.c — trailer fields: the names refused in a trailer
 * section, TE: trailers found among list members and parameters, and the
 * last chunk written exactly, refused when it does not fit. */
#include "unit.h"

#include <string.h>

#include "http/http_trailer.h"

static int name_ok(const char *n) {
    return http_trailer_name_ok(n, strlen(n));
}

TEST(trailer_names) {
    CHECK_EQ(name_ok("x-checksum"), 1);
    CHECK_EQ(name_ok("grpc-status"), 1);
    CHECK_EQ(name_ok("Server-Timing"), 1);
    CHECK_EQ(name_ok(""), 0);
    CHECK_EQ(name_ok("Content-Length"), 0);
    CHECK_EQ(name_ok("transfer-encoding"), 0);
    CHECK_EQ(name_ok("HOST"), 0);
    CHECK_EQ(name_ok("trailer"), 0);
    CHECK_EQ(name_ok("content-type"), 0);
    CHECK_EQ(name_ok(":status"), 0); /* not a token: no pseudo-header */
    CHECK_EQ(name_ok("a b"), 0);
}

static int te(const char *value) {
    http_field f[2] = {{"Accept", 6, "*/*", 3}, {"TE", 2, value, strlen(value)}};
    http_request h = {0};
    h.fields = f;
    h.nfields = 2;
    return http_te_trailers(&h);
}

TEST(te_lists_trailers) {
    CHECK_EQ(te("trailers"), 1);
    CHECK_EQ(te("Trailers"), 1);
    CHECK_EQ(te("gzip;q=0.5, trailers"), 1);
    CHECK_EQ(te("trailers;q=1"), 1);
    CHECK_EQ(te("gzip"), 0);
    CHECK_EQ(te("trailersx"), 0);
    CHECK_EQ(te("x;p=trailers"), 0); /* a parameter, not a member */
    CHECK_EQ(te(""), 0);
}

TEST(last_chunk_written) {
    const char *names[] = {"x-a", "grpc-status"}, *values[] = {"1", "0"};
    char buf[64];
    long n = http_write_last_chunk(names, values, 2, buf, sizeof buf);
    CHECK_MEM(buf, (size_t)n, "0\r\nx-a: 1\r\ngrpc-status: 0\r\n\r\n");
    n = http_write_last_chunk(names, values, 0, buf, sizeof buf);
    CHECK_MEM(buf, (size_t)n, "0\r\n\r\n");
    CHECK_EQ(http_write_last_chunk(names, values, 2, buf, 20), -1);
}
