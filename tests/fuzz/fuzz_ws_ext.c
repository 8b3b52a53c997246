/* fuzz_ws_ext.c — libFuzzer target for permessage-deflate: a
 * Sec-WebSocket-Extensions value negotiated (the first byte picks our
 * window), what was agreed checked, then the rest inflated in pieces under
 * a small limit that the output must never pass. */
#include "server/ws/ws_deflate.h"
#include "server/ws/ws_ext.h"
#include "server/ws/ws_frame.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2)
        return 0;
    int bits = 8 + data[0] % 9; /* 8..16: the two ends refused */
    size_t hlen = data[1] % (size - 1);
    char *v = malloc(hlen ? hlen : 1);
    if (!v)
        return 0;
    memcpy(v, data + 2, hlen);
    ws_deflate_params p;
    char resp[WS_EXT_RESP_MAX];
    if (ws_ext_negotiate(v, hlen, bits, &p, resp)) {
        if (bits < 9 || bits > 15 || p.server_bits < 9 || p.server_bits > bits ||
            p.client_bits < 8 || p.client_bits > 15 || strlen(resp) >= WS_EXT_RESP_MAX ||
            strncmp(resp, "permessage-deflate", 18) != 0)
            abort();
    } else {
        p = (ws_deflate_params){0, (uint8_t)(data[0] & 1), 15, 15};
    }
    free(v);
    ws_deflate *d = ws_deflate_new(&p, 5);
    if (!d)
        return 0;
    const uint8_t *z = data + 2 + hlen;
    size_t zlen = size - 2 - hlen, piece = 1 + data[1] % 97;
    uint8_t *out = NULL;
    size_t len = 0, cap = 0, limit = 4096;
    ws_sink o = {&out, &len, &cap, limit};
    int rc = 0;
    for (size_t off = 0; rc == 0 && off < zlen; off += piece) {
        size_t n = zlen - off < piece ? zlen - off : piece;
        rc = ws_deflate_inflate(d, z + off, n, off + n == zlen, &o);
        if (len > limit + 1 || cap > limit + 2 || (rc == 0 && len > limit))
            abort();
    }
    if (rc != 0 && rc != -WS_CLOSE_TOO_BIG && rc != -WS_CLOSE_PROTOCOL)
        abort();
    free(out);
    ws_deflate_free(d);
    return 0;
}
