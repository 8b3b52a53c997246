/* verdict.c — prints spindle's framing verdict for each file named on the
 * command line, as the corpus table and the h11 differential read it:
 * "<file>\t<outcome> <n>\t<end offsets of the n requests>" (see
 * tests/corpus/expected.tsv for the meaning). Built by tests/suites/wire_diff.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http_chunked.h"
#include "http/http_parse.h"

static char buf[1 << 20];

/* Runs requests over buf[0..len) the way the connection driver will. */
static void judge(const char *name, size_t len) {
    http_field fields[128];
    size_t off = 0, ends[64];
    int n = 0;
    char outcome[24] = "ok";
    for (;;) {
        http_request r = {.fields = fields, .fields_cap = 128};
        int k = http_parse_request(buf + off, len - off, 0, &r, NULL);
        if (k == HTTP_NEED_MORE) {
            strcpy(outcome, "more");
            break;
        }
        if (k < 0) {
            snprintf(outcome, sizeof outcome, "%d", -k);
            break;
        }
        size_t at = off + (size_t)k;
        if (r.framing == HTTP_BODY_LENGTH) {
            if (r.content_length > len - at) {
                strcpy(outcome, "more");
                break;
            }
            at += (size_t)r.content_length;
        } else if (r.framing == HTTP_BODY_CHUNKED) {
            http_chunked d;
            http_chunked_init(&d, UINT64_MAX, 0, 0);
            long c = 0;
            while (at < len && !http_chunked_done(&d)) {
                const char *data;
                size_t dl;
                c = http_chunked_decode(&d, buf + at, len - at, &data, &dl);
                if (c < 0)
                    break;
                at += (size_t)c;
            }
            if (c < 0) {
                snprintf(outcome, sizeof outcome, "%ld", -c);
                break;
            }
            if (!http_chunked_done(&d)) {
                strcpy(outcome, "more");
                break;
            }
        }
        off = at;
        if (n < 64)
            ends[n] = off;
        n++;
        /* After close, CONNECT or an upgrade the rest is not HTTP/1.1. */
        if (!r.keep_alive || r.method_id == HTTP_M_CONNECT || r.conn_upgrade || off == len)
            break;
    }
    printf("%s\t%s %d\t", name, outcome, n);
    for (int i = 0; i < n && i < 64; i++)
        printf(i ? ",%zu" : "%zu", ends[i]);
    printf("\n");
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            perror(argv[i]);
            return 2;
        }
        size_t len = fread(buf, 1, sizeof buf, f);
        fclose(f);
        judge(argv[i], len);
    }
    return 0;
}
