/* fuzz_proxy_proto.c — libFuzzer target for the PROXY protocol header
 * parser: checks that a verdict is stable as bytes arrive (a refusal stays
 * one when more comes, an accepted header parses the same from exactly its
 * own bytes and asks for more one byte short) and that lengths are in range. */
#include "http/proxy_proto.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    proxy_hdr h, h2;
    int rc = proxy_parse(buf, size, &h);
    if (rc < PROXY_BAD || (rc > 0 && (size_t)rc > size))
        abort();
    if (rc > 0) {
        if (h.version == 1 && rc > PROXY_V1_MAX)
            abort();
        if (h.version != 1 && h.version != 2)
            abort();
        if (h.family != AF_INET && h.family != AF_INET6 && h.family != AF_UNIX &&
            h.family != AF_UNSPEC)
            abort();
        if (proxy_parse(buf, (size_t)rc, &h2) != rc || h2.family != h.family ||
            h2.src_port != h.src_port || memcmp(h2.src, h.src, 16) != 0)
            abort();
        if (proxy_parse(buf, (size_t)rc - 1, &h2) != PROXY_NEED_MORE)
            abort();
    } else {
        /* One more byte never turns a refusal into something else. */
        buf[size] = size ? data[size - 1] : 'P';
        int more = proxy_parse(buf, size + 1, &h2);
        if (rc == PROXY_BAD && more != PROXY_BAD)
            abort();
    }
    free(buf);
    return 0;
}
