/* ws_deflate.c — permessage-deflate on zlib: a message compressed with a
 * sync flush, its 00 00 ff ff tail cut (RFC 7692 §7.2.1), inflated with it
 * put back (§7.2.2) into a buffer capped at the message limit; the worker's
 * last message kept so a broadcast is compressed once per window size. */
#include "server/ws/ws_deflate.h"

#include "server/ws/ws_frame.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define SHARE_MAX (256u << 10) /* larger messages are not kept for a broadcast */

struct ws_deflate {
    ws_deflate_params p;
    int mem_level;
    z_stream *tx, *rx; /* made on first use */
    uint8_t tx_fresh;  /* reset the compressor first: the client's window moved without it */
    uint8_t rx_ended;  /* the data so far ended a DEFLATE stream (BFINAL): no tail to add */
};

struct ws_blob {
    unsigned refs;
    size_t len;
    uint8_t data[];
};

/* The server's last message sent compressed, and what it compressed to
 * from an empty window, per window size: valid for any receiver with that
 * window, whatever its history (it refers to none). */
typedef struct ws_share {
    const ws_deflate *owner; /* who compressed it with its own history */
    uint8_t *plain;
    size_t plain_len, plain_cap;
    ws_blob *blob[16];
    z_stream *z; /* the compressor for them, reset for each */
    int z_bits, z_mem;
} ws_share;

static const char share_key; /* this file's slot in the server */

void ws_blob_put(ws_blob *b) {
    if (b && --b->refs == 0)
        free(b);
}

static void stream_free(z_stream **z, int tx) {
    if (!*z)
        return;
    if (tx)
        deflateEnd(*z);
    else
        inflateEnd(*z);
    free(*z);
    *z = NULL;
}

static z_stream *deflater(int bits, int mem_level) {
    z_stream *z = calloc(1, sizeof *z);
    /* A negative window: raw DEFLATE, no zlib header or checksum. */
    if (z && deflateInit2(z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -bits, mem_level,
                          Z_DEFAULT_STRATEGY) != Z_OK) {
        free(z);
        z = NULL;
    }
    return z;
}

/* data compressed by z, sync-flushed, without the flush's last 4 bytes. */
static ws_blob *compress_with(z_stream *z, const void *data, size_t len) {
    size_t cap = deflateBound(z, len) + 16; /* + the sync flush's empty block */
    ws_blob *b = malloc(sizeof *b + cap);
    if (!b)
        return NULL;
    z->next_in = (Bytef *)data;
    z->avail_in = (uInt)len;
    z->next_out = b->data;
    z->avail_out = (uInt)cap;
    int rc = deflate(z, Z_SYNC_FLUSH);
    b->len = cap - z->avail_out;
    if (rc != Z_OK || z->avail_in || !z->avail_out || b->len < 4) {
        free(b); /* cannot happen: the bound holds it all */
        return NULL;
    }
    b->len -= 4;
    b->refs = 1;
    return b;
}

/* ---- the broadcast's share ------------------------------------------------ */

static void share_drop(ws_share *sh) {
    for (int i = 0; i < 16; i++) {
        ws_blob_put(sh->blob[i]);
        sh->blob[i] = NULL;
    }
}

static void share_free(void *arg) {
    ws_share *sh = arg;
    share_drop(sh);
    stream_free(&sh->z, 1);
    free(sh->plain);
    free(sh);
}

static ws_share *share_of(sp_server *s) {
    ws_share *sh = server_ext_get(s, &share_key);
    if (sh || !(sh = calloc(1, sizeof *sh)))
        return sh;
    if (server_ext_set(s, &share_key, sh, share_free) < 0) {
        free(sh);
        return NULL; /* no slot: every message compressed per socket */
    }
    return sh;
}

/* The blob for a second sending of sh's message at this window. */
static ws_blob *share_blob(ws_share *sh, int bits, int mem_level) {
    if (sh->blob[bits])
        return sh->blob[bits];
    if (sh->z && (sh->z_bits != bits || sh->z_mem != mem_level))
        stream_free(&sh->z, 1);
    if (!sh->z && !(sh->z = deflater(bits, mem_level)))
        return NULL;
    sh->z_bits = bits;
    sh->z_mem = mem_level;
    deflateReset(sh->z);
    return sh->blob[bits] = compress_with(sh->z, sh->plain, sh->plain_len);
}

/* Keeps a copy of the message just compressed for its own socket: if
 * another sends the same bytes next, that is a broadcast. */
static void share_remember(ws_share *sh, const ws_deflate *d, const void *data, size_t len) {
    share_drop(sh);
    sh->owner = d;
    sh->plain_len = 0;
    if (len > SHARE_MAX)
        return;
    if (len > sh->plain_cap) {
        uint8_t *p = realloc(sh->plain, len);
        if (!p)
            return;
        sh->plain = p;
        sh->plain_cap = len;
    }
    memcpy(sh->plain, data, len);
    sh->plain_len = len;
}

/* ---- a connection's state ------------------------------------------------- */

ws_deflate *ws_deflate_new(const ws_deflate_params *p, int mem_level) {
    ws_deflate *d = calloc(1, sizeof *d);
    if (d) {
        d->p = *p;
        d->mem_level = mem_level;
    }
    return d;
}

void ws_deflate_free(ws_deflate *d) {
    if (!d)
        return;
    stream_free(&d->tx, 1);
    stream_free(&d->rx, 0);
    free(d);
}

int ws_deflate_encode(sp_server *s, ws_deflate *d, const void *data, size_t len,
                      const uint8_t **out, size_t *out_len, int *rsv1, ws_blob **hold) {
    *out = data;
    *out_len = len;
    *rsv1 = 0;
    *hold = NULL;
    if (!len || len > UINT_MAX / 2)
        return 0; /* nothing to gain; zlib counts in uInt */
    int bits = d->p.server_bits;
    ws_share *sh = s ? share_of(s) : NULL; /* NULL: no sharing (the unit test) */
    ws_blob *b;
    /* The same socket sending it again does better with its history. */
    if (sh && sh->owner != d && sh->plain_len == len && memcmp(sh->plain, data, len) == 0 &&
        (b = share_blob(sh, bits, d->mem_level))) {
        if (b->len >= len)
            return 0; /* incompressible: as it is, the client's window untouched */
        b->refs++;
        *hold = b;
        *out = b->data;
        *out_len = b->len;
        *rsv1 = 1;
        /* The client's window now ends with this message, ours does not:
         * our next message must not refer back into it. */
        d->tx_fresh = 1;
        return 0;
    }
    if (!d->tx && !(d->tx = deflater(bits, d->mem_level)))
        return -ENOMEM;
    if (d->tx_fresh || d->p.server_no_context_takeover)
        deflateReset(d->tx);
    d->tx_fresh = 0;
    if (!(b = compress_with(d->tx, data, len)))
        return -ENOMEM;
    if (sh)
        share_remember(sh, d, data, len);
    if (d->p.server_no_context_takeover)
        stream_free(&d->tx, 1); /* an idle socket holds no compressor */
    if (b->len >= len) {
        ws_blob_put(b);
        d->tx_fresh = 1; /* our window has what the client's will not */
        return 0;
    }
    *hold = b;
    *out = b->data;
    *out_len = b->len;
    *rsv1 = 1;
    return 0;
}

/* ---- inflating ------------------------------------------------------------ */

static int sink_grow(const ws_sink *o) {
    size_t max = o->limit >= SIZE_MAX / 4 ? SIZE_MAX / 4 : o->limit + 2;
    if (*o->cap >= max)
        return -WS_CLOSE_TOO_BIG;
    size_t cap = *o->cap ? *o->cap * 2 : 4096;
    if (cap > max)
        cap = max;
    uint8_t *p = realloc(*o->buf, cap);
    if (!p)
        return -ENOMEM;
    *o->buf = p;
    *o->cap = cap;
    return 0;
}

/* A DEFLATE stream ended inside a message (a block with BFINAL): a fresh
 * one may follow, and with context takeover it may refer back. */
static int rx_restart(ws_deflate *d) {
    if (d->p.client_no_context_takeover)
        return inflateReset(d->rx) == Z_OK ? 0 : -ENOMEM;
    uint8_t *dict = malloc(1u << 15);
    uInt n = 0;
    if (!dict)
        return -ENOMEM;
    int ok = inflateGetDictionary(d->rx, dict, &n) == Z_OK && inflateReset(d->rx) == Z_OK &&
             inflateSetDictionary(d->rx, dict, n) == Z_OK;
    free(dict);
    return ok ? 0 : -ENOMEM;
}

static int inflate_run(ws_deflate *d, const uint8_t *in, size_t n, int tail, const ws_sink *o) {
    z_stream *z = d->rx;
    z->next_in = (Bytef *)in;
    z->avail_in = (uInt)n;
    for (;;) {
        if (*o->cap - *o->len < 2) {
            int rc = sink_grow(o);
            if (rc < 0)
                return rc;
        }
        size_t room = *o->cap - 1 - *o->len; /* one byte kept for the NUL */
        if (room > UINT_MAX)
            room = UINT_MAX;
        z->next_out = *o->buf + *o->len;
        z->avail_out = (uInt)room;
        int rc = inflate(z, Z_SYNC_FLUSH);
        *o->len += room - z->avail_out;
        if (*o->len > o->limit)
            return -WS_CLOSE_TOO_BIG; /* at most limit + 1 bytes were made */
        if (rc == Z_STREAM_END) {
            d->rx_ended = z->avail_in == 0;
            if ((rc = rx_restart(d)) < 0)
                return rc;
            if (!z->avail_in || tail)
                return 0;
            continue;
        }
        if (rc == Z_MEM_ERROR)
            return -ENOMEM;
        if (rc != Z_OK && !(rc == Z_BUF_ERROR && !z->avail_in))
            return -WS_CLOSE_PROTOCOL; /* Z_DATA_ERROR, Z_NEED_DICT */
        if (!z->avail_in && z->avail_out)
            return 0;
    }
}

int ws_deflate_inflate(ws_deflate *d, const uint8_t *in, size_t n, int last, const ws_sink *o) {
    if (!d->rx) {
        if (!(d->rx = calloc(1, sizeof *d->rx)))
            return -ENOMEM;
        if (inflateInit2(d->rx, -d->p.client_bits) != Z_OK) {
            free(d->rx);
            d->rx = NULL;
            return -ENOMEM;
        }
    }
    int rc = 0;
    if (n) {
        d->rx_ended = 0;
        rc = inflate_run(d, in, n, 0, o);
    }
    if (rc == 0 && last) {
        static const uint8_t tail[4] = {0x00, 0x00, 0xff, 0xff};
        if (!d->rx_ended)
            rc = inflate_run(d, tail, sizeof tail, 1, o);
        d->rx_ended = 0;
        if (d->p.client_no_context_takeover)
            stream_free(&d->rx, 0); /* an idle socket holds no inflater */
    }
    return rc;
}
