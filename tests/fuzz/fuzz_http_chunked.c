/* fuzz_http_chunked.c — libFuzzer target for the chunked decoder: decoding
 * the input whole, byte by byte and split at an input-chosen point must give
 * the same verdict, the same end and the same body octets, with every data
 * slice inside the bytes given. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/http_chunked.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct run {
    long status; /* 0 done, 1 needs more, else -status */
    size_t end, body_len;
    uint64_t body_hash;
} run;

static run decode(const char *buf, size_t size, size_t first, size_t step) {
    http_chunked d;
    http_chunked_init(&d, 100000, 64, 256);
    run r = {1, 0, 0, 1469598103934665603ull};
    size_t off = 0;
    while (off < size && !http_chunked_done(&d)) {
        size_t piece = off == 0 ? first : step;
        if (piece == 0 || piece > size - off)
            piece = size - off;
        const char *data;
        size_t dl;
        long k = http_chunked_decode(&d, buf + off, piece, &data, &dl);
        if (k < 0) {
            if (k != -400 && k != -413 && k != -431)
                abort();
            r.status = k;
            return r;
        }
        if ((size_t)k > piece || (k == 0 && !http_chunked_done(&d)))
            abort();
        if (dl && (data < buf + off || data + dl > buf + off + k))
            abort();
        for (size_t i = 0; i < dl; i++)
            r.body_hash = (r.body_hash ^ (uint8_t)data[i]) * 1099511628211ull;
        r.body_len += dl;
        off += (size_t)k;
    }
    if (http_chunked_done(&d)) {
        r.status = 0;
        r.end = off;
    }
    return r;
}

static int same(run a, run b) {
    return a.status == b.status && a.end == b.end && a.body_len == b.body_len &&
           a.body_hash == b.body_hash;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *buf = malloc(size ? size : 1);
    memcpy(buf, data, size);
    run whole = decode(buf, size, size, size);
    run bytes = decode(buf, size, 1, 1);
    run split = decode(buf, size, size ? 1 + data[0] % size : 0, size);
    if (!same(whole, bytes) || !same(whole, split))
        abort();
    free(buf);
    return 0;
}
