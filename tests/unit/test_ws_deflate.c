/* test_ws_deflate.c — permessage-deflate's codec: round trips of many sizes
 * with and without context takeover, history at work, a bomb stopped at the
 * limit with no buffer past it, non-DEFLATE data 1002, BFINAL inside a
 * message keeping the window, a broadcast compressed once. */
#include "server/ws/ws_deflate.h"
#include "server/ws/ws_frame.h"
#include "unit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef struct buf {
    uint8_t *p;
    size_t len, cap;
} buf;

static ws_deflate *mk(int snct, int cnct, int bits) {
    ws_deflate_params p = {(uint8_t)snct, (uint8_t)cnct, (uint8_t)bits, (uint8_t)bits};
    ws_deflate *d = ws_deflate_new(&p, 5);
    CHECK(d);
    return d;
}

/* What the server's d sends for data, inflated by the peer's inflater c
 * (pieces of `step` bytes) into out. Returns the wire size; *rsv1 said. */
static size_t trip(sp_server *s, ws_deflate *d, ws_deflate *c, const void *data, size_t len,
                   size_t step, buf *out, int *rsv1) {
    const uint8_t *w;
    size_t wlen;
    ws_blob *hold;
    CHECK_EQ(ws_deflate_encode(s, d, data, len, &w, &wlen, rsv1, &hold), 0);
    out->len = 0;
    if (!*rsv1) {
        CHECK(w == data && wlen == len);
        return wlen;
    }
    ws_sink o = {&out->p, &out->len, &out->cap, SIZE_MAX};
    for (size_t off = 0; off < wlen; off += step) {
        size_t n = wlen - off < step ? wlen - off : step;
        CHECK_EQ(ws_deflate_inflate(c, w + off, n, 0, &o), 0);
    }
    CHECK_EQ(ws_deflate_inflate(c, NULL, 0, 1, &o), 0);
    CHECK_EQ(out->len, len);
    CHECK(memcmp(out->p, data, len) == 0);
    ws_blob_put(hold);
    return wlen;
}

static uint8_t *text_of(size_t n, unsigned seed) {
    static const char *words[] = {"{\"user\":", "\"alice\"", ",\"text\":", "\"hello\"",  "}",
                                  " ",          "world",     "42",         "\"typing\"", ","};
    uint8_t *t = malloc(n + 1);
    CHECK(t);
    for (size_t i = 0; i < n;) {
        seed = seed * 1103515245 + 12345;
        const char *w = words[(seed >> 16) % 10];
        for (size_t k = 0; w[k] && i < n; k++)
            t[i++] = (uint8_t)w[k];
    }
    return t;
}

TEST(ws_deflate_round_trips_every_size_and_mode) {
    size_t sizes[] = {1, 2, 5, 31, 125, 126, 1000, 4095, 4096, 4097, 65535, 65536, 131072, 300000};
    for (int mode = 0; mode < 4; mode++) {
        for (int bits = 9; bits <= 15; bits += 3) {
            /* c plays the peer: its inflater resets per message when our
             * compressor does (server_no_context_takeover). */
            ws_deflate *d = mk(mode & 1, mode >> 1, bits), *c = mk(0, mode & 1, bits);
            buf out = {0};
            for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
                uint8_t *t = text_of(sizes[k], (unsigned)k);
                int rsv1;
                size_t w = trip(NULL, d, c, t, sizes[k], k % 2 ? 7 : 4096, &out, &rsv1);
                CHECK(w <= sizes[k]);
                /* Binary noise: not smaller, so sent as it is. */
                for (size_t i = 0; i < sizes[k]; i++)
                    t[i] = (uint8_t)(rand() >> 7);
                if (sizes[k] > 64) {
                    trip(NULL, d, c, t, sizes[k], 1000, &out, &rsv1);
                    CHECK_EQ(rsv1, 0);
                }
                free(t);
            }
            free(out.p);
            ws_deflate_free(d);
            ws_deflate_free(c);
        }
    }
}

TEST(ws_deflate_context_takeover_remembers) {
    uint8_t *t = text_of(600, 7);
    int rsv1;
    buf out = {0};
    ws_deflate *d = mk(0, 0, 12), *c = mk(0, 0, 12);
    size_t first = trip(NULL, d, c, t, 600, 100, &out, &rsv1);
    size_t again = trip(NULL, d, c, t, 600, 100, &out, &rsv1);
    CHECK(again < first / 4); /* the whole message is one back-reference */
    ws_deflate_free(d);
    ws_deflate_free(c);
    /* Without takeover the second costs the same, and each message
     * inflates alone: a fresh inflater for the second one works. */
    d = mk(1, 0, 12);
    c = mk(0, 1, 12);
    first = trip(NULL, d, c, t, 600, 100, &out, &rsv1);
    ws_deflate *c2 = mk(0, 0, 12);
    again = trip(NULL, d, c2, t, 600, 100, &out, &rsv1);
    CHECK_EQ(again, first);
    ws_deflate_free(d);
    ws_deflate_free(c);
    ws_deflate_free(c2);
    free(out.p);
    free(t);
}

/* n bytes of zeros, raw-deflated (sync flush, tail cut), made in pieces. */
static uint8_t *zeros_deflated(size_t n, size_t *out_len) {
    z_stream z = {0};
    CHECK_EQ(deflateInit2(&z, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY), Z_OK);
    static uint8_t zero[1 << 16];
    size_t cap = n / 1000 + 4096, len = 0;
    uint8_t *o = malloc(cap);
    CHECK(o);
    for (size_t left = n; left;) {
        size_t k = left < sizeof zero ? left : sizeof zero;
        left -= k;
        z.next_in = zero;
        z.avail_in = (uInt)k;
        do {
            z.next_out = o + len;
            z.avail_out = (uInt)(cap - len);
            CHECK(deflate(&z, left ? Z_NO_FLUSH : Z_SYNC_FLUSH) != Z_STREAM_ERROR);
            len = cap - z.avail_out;
            CHECK(len < cap);
        } while (z.avail_in);
    }
    deflateEnd(&z);
    *out_len = len - 4;
    return o;
}

TEST_T(ws_deflate_bomb_stops_at_the_limit, 30) {
    size_t zlen;
    uint8_t *z = zeros_deflated((size_t)64 << 20, &zlen); /* 64 MiB in about 64 KB */
    CHECK(zlen < 100000);
    for (size_t step = 1000; step <= zlen; step *= 8) {
        ws_deflate *c = mk(0, 0, 15);
        buf out = {0};
        ws_sink o = {&out.p, &out.len, &out.cap, 1 << 20};
        int rc = 0;
        for (size_t off = 0; off < zlen && rc == 0; off += step)
            rc = ws_deflate_inflate(c, z + off, zlen - off < step ? zlen - off : step, 0, &o);
        CHECK_EQ(rc, -WS_CLOSE_TOO_BIG);
        CHECK(out.cap <= (1 << 20) + 2); /* never a buffer past the limit */
        CHECK_EQ(out.len, (1 << 20) + 1);
        free(out.p);
        ws_deflate_free(c);
    }
    /* Exactly at the limit is fine. */
    free(z);
    z = zeros_deflated(1 << 20, &zlen);
    ws_deflate *c = mk(0, 0, 15);
    buf out = {0};
    ws_sink o = {&out.p, &out.len, &out.cap, 1 << 20};
    CHECK_EQ(ws_deflate_inflate(c, z, zlen, 1, &o), 0);
    CHECK_EQ(out.len, 1 << 20);
    free(out.p);
    free(z);
    ws_deflate_free(c);
}

TEST(ws_deflate_garbage_is_1002) {
    ws_deflate *c = mk(0, 0, 15);
    buf out = {0};
    ws_sink o = {&out.p, &out.len, &out.cap, 1000};
    static const uint8_t bad[] = {0xff, 0xff, 0xff, 0xff, 0x00}; /* block type 3: reserved */
    CHECK_EQ(ws_deflate_inflate(c, bad, sizeof bad, 1, &o), -WS_CLOSE_PROTOCOL);
    ws_deflate_free(c);
    /* A distance past what the window has yet. */
    c = mk(0, 0, 9);
    out.len = 0;
    static const uint8_t far[] = {0x63, 0x00, 0x02, 0x4a, 0x00, 0x00}; /* "a", then a match */
    int rc = ws_deflate_inflate(c, far, sizeof far, 1, &o);
    CHECK(rc == -WS_CLOSE_PROTOCOL || rc == 0);
    ws_deflate_free(c);
    free(out.p);
}

TEST(ws_deflate_bfinal_keeps_the_window) {
    /* The peer ends message 1 with a final block (Z_FINISH), then message
     * 2 refers back into it: a new stream primed with message 1. */
    const char *m1 = "the quick brown fox jumps over the lazy dog, the quick brown fox";
    uint8_t w1[256], w2[256];
    z_stream z = {0};
    CHECK_EQ(deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (Bytef *)m1;
    z.avail_in = (uInt)strlen(m1);
    z.next_out = w1;
    z.avail_out = sizeof w1;
    CHECK_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t n1 = sizeof w1 - z.avail_out;
    deflateReset(&z);
    CHECK_EQ(deflateSetDictionary(&z, (const Bytef *)m1, (uInt)strlen(m1)), Z_OK);
    z.next_in = (Bytef *)m1;
    z.avail_in = (uInt)strlen(m1);
    z.next_out = w2;
    z.avail_out = sizeof w2;
    CHECK_EQ(deflate(&z, Z_SYNC_FLUSH), Z_OK);
    size_t n2 = sizeof w2 - z.avail_out - 4;
    deflateEnd(&z);
    CHECK(n2 < 10); /* one back-reference */
    ws_deflate *c = mk(0, 0, 15);
    buf out = {0};
    ws_sink o = {&out.p, &out.len, &out.cap, 1000};
    CHECK_EQ(ws_deflate_inflate(c, w1, n1, 1, &o), 0);
    CHECK_EQ(out.len, strlen(m1));
    out.len = 0;
    CHECK_EQ(ws_deflate_inflate(c, w2, n2, 1, &o), 0);
    CHECK_EQ(out.len, strlen(m1));
    CHECK(memcmp(out.p, m1, out.len) == 0);
    ws_deflate_free(c);
    free(out.p);
}

TEST(ws_deflate_broadcast_compresses_once_per_window) {
    sp_server *s = sp_server_new(NULL);
    CHECK(s);
    uint8_t *hist = text_of(3000, 1), *msg = text_of(2000, 2);
    ws_deflate *d[4], *c[4];
    buf out = {0};
    int rsv1;
    for (int i = 0; i < 4; i++) {
        d[i] = mk(0, 0, i == 3 ? 10 : 12);
        c[i] = mk(0, 0, i == 3 ? 10 : 12);
        /* Each socket has its own history first. */
        hist[0] = (uint8_t)('a' + i);
        trip(s, d[i], c[i], hist, 3000, 512, &out, &rsv1);
    }
    const uint8_t *w[4];
    size_t wlen[4];
    ws_blob *hold[4];
    for (int i = 0; i < 4; i++) {
        CHECK_EQ(ws_deflate_encode(s, d[i], msg, 2000, &w[i], &wlen[i], &rsv1, &hold[i]), 0);
        CHECK_EQ(rsv1, 1);
        ws_sink o = {&out.p, &out.len, &out.cap, 1 << 20};
        out.len = 0;
        CHECK_EQ(ws_deflate_inflate(c[i], w[i], wlen[i], 1, &o), 0);
        CHECK_EQ(out.len, 2000);
        CHECK(memcmp(out.p, msg, 2000) == 0);
    }
    /* The first socket compressed it with its history; the second made the
     * shared copy, the third got the same bytes; the fourth (another
     * window) one of its own. */
    CHECK(w[1] == w[2]);
    CHECK(w[0] != w[1] && w[3] != w[1]);
    for (int i = 0; i < 4; i++)
        ws_blob_put(hold[i]);
    /* Each goes on with its own messages, still in step with its peer. */
    for (int i = 0; i < 4; i++) {
        trip(s, d[i], c[i], hist, 3000, 333, &out, &rsv1);
        CHECK_EQ(rsv1, 1);
        ws_deflate_free(d[i]);
        ws_deflate_free(c[i]);
    }
    free(out.p);
    free(hist);
    free(msg);
    sp_server_free(s);
}
