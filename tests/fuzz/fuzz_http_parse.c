/* fuzz_http_parse.c — libFuzzer target for the request-head parser. Beyond
 * "no crash": the verdict is one of the documented values, slices lie inside
 * the head, and a parse split at any point (and resumed with prev_checked)
 * ends in the same verdict as the whole parse; and where the CPU has AVX2,
 * the baseline copy of the parser gives the same verdict and request. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/http_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static http_field fields[128];

static int parse(const char *buf, size_t len, size_t prev, http_request *r,
                 const http_limits *lim) {
    r->fields = fields;
    r->fields_cap = 128;
    return http_parse_request(buf, len, prev, r, lim);
}

static int in(const char *p, size_t n, const char *buf, size_t len) {
    return p >= buf && n <= len && (size_t)(p - buf) <= len - n;
}

static void check_verdict(int v, const char *buf, size_t len, const http_request *r) {
    if (v <= 0) {
        if (v != HTTP_NEED_MORE && v != -400 && v != -414 && v != -417 && v != -431 && v != -501 &&
            v != -505)
            abort();
        return;
    }
    size_t n = (size_t)v;
    if (n > len || n < 4 || memcmp(buf + n - 4, "\r\n\r\n", 4) != 0)
        abort();
    if (!r->method_len || !in(r->method, r->method_len, buf, n) ||
        !in(r->target, r->target_len, buf, n) || r->nfields > 128 || r->minor_version > 1)
        abort();
    for (size_t i = 0; i < r->nfields; i++)
        if (!r->fields[i].name_len || !in(r->fields[i].name, r->fields[i].name_len, buf, n) ||
            !in(r->fields[i].value, r->fields[i].value_len, buf, n))
            abort();
    if (r->host && (!r->host_len || !in(r->host, r->host_len, buf, n)))
        abort(); /* never empty (RFC 9112 §3.2) */
    if (r->host_from_target && !in(r->host, r->host_len, r->target, r->target_len))
        abort(); /* the absolute-form authority, inside the target */
    if (r->minor_version == 1 && !r->host)
        abort();
}

/* Whether buf[prev - 3..len) holds a blank line or a bare LF, or len has
 * reached the head limit: then a resumed parse must decide. */
static int head_may_end(const char *buf, size_t len, size_t prev, const http_limits *lim) {
    if (len >= (lim->head_max ? lim->head_max : HTTP_HEAD_MAX_DEFAULT))
        return 1;
    for (size_t i = prev >= 3 ? prev - 3 : 0; i < len; i++)
        if (buf[i] == '\n' &&
            (i == 0 || buf[i - 1] != '\r' || (i >= 3 && buf[i - 2] == '\n' && buf[i - 3] == '\r')))
            return 1;
    return 0;
}

/* The AVX2 and the baseline copies read every head alike (http_parse.h). */
static void check_copies(const char *buf, size_t len, const http_limits *lim, int v,
                         const http_request *a) {
    static http_field fb[128];
    http_request b = {.fields = fb, .fields_cap = 128};
    if (http_parse_set_avx2(0) != 1)
        return; /* no AVX2 copy running */
    int vb = http_parse_request(buf, len, 0, &b, lim);
    http_parse_set_avx2(1);
    if (vb != v)
        abort();
    if (v <= 0)
        return;
    if (b.nfields != a->nfields || b.method != a->method || b.target != a->target ||
        b.target_len != a->target_len || b.minor_version != a->minor_version ||
        b.framing != a->framing || b.content_length != a->content_length || b.host != a->host ||
        b.host_len != a->host_len || b.keep_alive != a->keep_alive ||
        b.conn_upgrade != a->conn_upgrade || b.expect_continue != a->expect_continue)
        abort();
    if (memcmp(fb, a->fields, a->nfields * sizeof fb[0]) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* The first byte picks small limits sometimes, to reach 414 and 431. */
    http_limits lim = {0, 0, 0};
    if (size && data[0] == 'L') {
        lim = (http_limits){64, 16, 4};
        data++;
        size--;
    }
    /* An exact-size copy, so ASan sees any read past the end. */
    char *buf = malloc(size ? size : 1);
    memcpy(buf, data, size);
    http_request r;
    int whole = parse(buf, size, 0, &r, &lim);
    check_verdict(whole, buf, size, &r);
    check_copies(buf, size, &lim, whole, &r);

    size_t splits[3] = {size / 2, size ? (size_t)data[size - 1] % size : 0, size ? size - 1 : 0};
    for (int i = 0; i < 3; i++) {
        size_t k = splits[i];
        int part = parse(buf, k, 0, &r, &lim);
        check_verdict(part, buf, k, &r);
        if (part == HTTP_NEED_MORE) {
            /* Resumed: the same verdict, except that an error in a head
             * still unfinished (no blank line or bare LF in the new bytes,
             * under the head limit) may wait (http_parse.h). */
            int resumed = parse(buf, size, k, &r, &lim);
            if (resumed != whole &&
                !(resumed == HTTP_NEED_MORE && whole < 0 && !head_may_end(buf, size, k, &lim)))
                abort();
        } else if (part != whole && !(part > 0 && whole > 0 && part == whole)) {
            abort();
        }
    }
    free(buf);
    return 0;
}
