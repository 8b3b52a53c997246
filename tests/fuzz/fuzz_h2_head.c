/* fuzz_h2_head.c — libFuzzer target for the HTTP/2 header list checker
 * (http/h2_head.h): the input is fields, one per line, "name=value" (the
 * first byte says whether the stream ended); whatever comes, a head that
 * is accepted has a method, a target, a host and framing that agree, and
 * fields within the caller's array. */
#include "http/h2_head.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    char *buf = malloc(size);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    int end_stream = data[0] & 1;
    http_field f[8];
    http_request r = {.fields = f, .fields_cap = 8};
    h2_head h;
    h2_head_init(&h, &r, 64);
    int rc = 0;
    size_t i = 1;
    while (i < size && rc == 0) {
        char *line = buf + i;
        char *nl = memchr(line, '\n', size - i);
        size_t len = nl ? (size_t)(nl - line) : size - i;
        char *eq = len > 1 ? memchr(line + 1, '=', len - 1) : NULL; /* ":path=/" */
        size_t nlen = eq ? (size_t)(eq - line) : len;
        rc = h2_head_add(&h, line, nlen, eq ? eq + 1 : line + len, eq ? len - nlen - 1 : 0);
        i += len + 1;
    }
    if (rc == 0)
        rc = h2_head_end(&h, end_stream);
    if (rc > 0 || (rc < 0 && rc != -400 && rc != -414 && rc != -431 && rc != -501))
        abort();
    if (rc == 0) {
        if (!r.method || !r.target || !r.host || r.host_len == 0 || r.nfields > r.fields_cap)
            abort();
        if (r.target_len > 64 || (r.target[0] != '/' && !(r.target_len == 1 && r.target[0] == '*')))
            abort();
        if (r.framing == HTTP_BODY_LENGTH && end_stream && r.content_length)
            abort();
        if (end_stream && r.framing == HTTP_BODY_CHUNKED)
            abort();
        for (size_t k = 0; k < r.nfields; k++)
            for (size_t j = 0; j < r.fields[k].name_len; j++)
                if (r.fields[k].name[j] >= 'A' && r.fields[k].name[j] <= 'Z')
                    abort();
    }
    free(buf);
    return 0;
}
