/* ws_frame.c — the WebSocket wire format (see ws_frame.h): frame heads
 * parsed and checked against RFC 6455 one at a time, payloads unmasked in
 * place with UTF-8 checked incrementally across fragments, heads encoded,
 * and the handshake's accept key. Pure functions over bytes. */
#include "server/ws/ws_frame.h"

#include "base/sha1.h"
#include "http/http_chars.h"

#include <string.h>

/* ---- UTF-8 -----------------------------------------------------------------
 * The decoder state packs what the next byte must be: bits 0-7 the lowest
 * allowed byte, 8-15 the highest, 16-17 the continuation bytes still due.
 * 0 is "between characters". */
#define UTF8_BAD WS_UTF8_BAD

static uint32_t utf8_expect(uint32_t rem, uint32_t lo, uint32_t hi) {
    return rem << 16 | hi << 8 | lo;
}

static uint32_t utf8_step(uint32_t st, const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        if (st == 0) {
            /* ASCII runs, eight bytes at a time. */
            while (i + 8 <= n) {
                uint64_t w;
                memcpy(&w, s + i, 8);
                if (w & 0x8080808080808080ull)
                    break;
                i += 8;
            }
            if (i == n)
                break;
            uint8_t b = s[i++];
            if (b < 0x80)
                continue;
            if (b >= 0xc2 && b <= 0xdf)
                st = utf8_expect(1, 0x80, 0xbf);
            else if (b == 0xe0)
                st = utf8_expect(2, 0xa0, 0xbf); /* no overlongs */
            else if (b == 0xed)
                st = utf8_expect(2, 0x80, 0x9f); /* no surrogates */
            else if (b >= 0xe1 && b <= 0xef)
                st = utf8_expect(2, 0x80, 0xbf);
            else if (b == 0xf0)
                st = utf8_expect(3, 0x90, 0xbf); /* no overlongs */
            else if (b >= 0xf1 && b <= 0xf3)
                st = utf8_expect(3, 0x80, 0xbf);
            else if (b == 0xf4)
                st = utf8_expect(3, 0x80, 0x8f); /* nothing past U+10FFFF */
            else
                return UTF8_BAD;
            continue;
        }
        uint8_t b = s[i++];
        if (b < (st & 0xff) || b > ((st >> 8) & 0xff))
            return UTF8_BAD;
        uint32_t rem = (st >> 16) - 1;
        st = rem ? utf8_expect(rem, 0x80, 0xbf) : 0;
    }
    return st;
}

uint32_t ws_utf8_feed(uint32_t st, const uint8_t *s, size_t n) {
    return st == UTF8_BAD ? st : utf8_step(st, s, n);
}

int ws_utf8_valid(const uint8_t *s, size_t n) {
    return utf8_step(0, s, n) == 0;
}

/* ---- parsing ------------------------------------------------------------ */

void ws_parser_init(ws_parser *p, int server, uint64_t max_message) {
    memset(p, 0, sizeof *p);
    p->masked_role = server ? 1 : 0;
    p->max_message = max_message;
}

int ws_parse_head(ws_parser *p, const uint8_t *buf, size_t len, ws_frame *f) {
    if (len < 2)
        return 0;
    uint8_t fin = buf[0] >> 7, opcode = buf[0] & 0x0f, masked = buf[1] >> 7;
    int control = opcode >= 8, rsv1 = (buf[0] & 0x40) != 0;
    if (buf[0] & 0x30)
        return -WS_CLOSE_PROTOCOL; /* RSV2, RSV3: no extension defines them */
    /* RSV1: "compressed", said once per message, on its first frame. */
    if (rsv1 && (!p->rsv1_ok || control || opcode == WS_OP_CONT))
        return -WS_CLOSE_PROTOCOL;
    if (opcode != WS_OP_CONT && opcode != WS_OP_TEXT && opcode != WS_OP_BINARY &&
        opcode != WS_OP_CLOSE && opcode != WS_OP_PING && opcode != WS_OP_PONG)
        return -WS_CLOSE_PROTOCOL;
    if (masked != p->masked_role)
        return -WS_CLOSE_PROTOCOL;
    uint64_t plen = buf[1] & 0x7f;
    if (control && (!fin || plen > WS_CONTROL_MAX))
        return -WS_CLOSE_PROTOCOL;
    if (!control) {
        /* Fragmentation: continuations only inside a message, new messages
         * only outside one (control frames may come in between). */
        if (opcode == WS_OP_CONT && !p->in_message)
            return -WS_CLOSE_PROTOCOL;
        if (opcode != WS_OP_CONT && p->in_message)
            return -WS_CLOSE_PROTOCOL;
    }
    size_t ext = plen == 126 ? 2 : plen == 127 ? 8 : 0;
    size_t need = 2 + ext + (masked ? 4 : 0);
    if (len < need)
        return 0;
    if (ext == 2) {
        plen = (uint64_t)buf[2] << 8 | buf[3];
    } else if (ext == 8) {
        plen = 0;
        for (int i = 0; i < 8; i++)
            plen = plen << 8 | buf[2 + i];
        if (plen >> 63)
            return -WS_CLOSE_PROTOCOL;
    }
    if (!control) {
        uint64_t so_far = opcode == WS_OP_CONT ? p->msg_len : 0;
        int compressed = opcode == WS_OP_CONT ? p->compressed : rsv1;
        uint64_t max = p->max_message;
        if (compressed && max)
            max = max < UINT64_MAX / 4 ? 2 * max : 0; /* the inflated size is the real limit */
        if (max && (plen > max || so_far > max - plen))
            return -WS_CLOSE_TOO_BIG;
        uint8_t msg_op = opcode == WS_OP_CONT ? p->msg_opcode : opcode;
        if (fin && plen == 0 && msg_op == WS_OP_TEXT && opcode == WS_OP_CONT && p->utf8 != 0 &&
            !compressed)
            return -WS_CLOSE_BAD_DATA; /* the message ends inside a character */
        if (opcode != WS_OP_CONT) {
            p->msg_opcode = opcode;
            p->utf8 = 0;
            p->compressed = (uint8_t)rsv1;
        }
        p->msg_len = so_far + plen;
        p->in_message = !fin;
        p->cur_opcode = msg_op;
        p->check_utf8 = msg_op == WS_OP_TEXT && !compressed;
    } else {
        p->cur_opcode = opcode;
        p->check_utf8 = 0; /* a close reason is checked whole, by ws_parse_close */
    }
    p->cur_fin = fin;
    p->left = plen;
    p->mask_off = 0;
    if (masked)
        memcpy(p->mask, buf + 2 + ext, 4);
    else
        memset(p->mask, 0, 4);
    f->fin = fin;
    f->opcode = opcode;
    f->masked = masked;
    memcpy(f->mask, p->mask, 4);
    f->len = plen;
    return (int)need;
}

/* XORs data with the mask starting at mask byte `off`. */
static void unmask(uint8_t *data, size_t n, const uint8_t mask[4], unsigned off) {
    uint8_t m[8];
    for (int i = 0; i < 8; i++)
        m[i] = mask[(off + (unsigned)i) & 3];
    uint64_t m64;
    memcpy(&m64, m, 8);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, data + i, 8);
        w ^= m64;
        memcpy(data + i, &w, 8);
    }
    for (; i < n; i++)
        data[i] ^= m[i & 7];
}

int ws_parse_payload(ws_parser *p, uint8_t *data, size_t n) {
    if (n > p->left)
        n = (size_t)p->left;
    if (p->masked_role)
        unmask(data, n, p->mask, p->mask_off);
    p->mask_off = (uint8_t)((p->mask_off + n) & 3);
    p->left -= n;
    if (!p->check_utf8)
        return 0;
    p->utf8 = utf8_step(p->utf8, data, n);
    if (p->utf8 == UTF8_BAD)
        return -WS_CLOSE_BAD_DATA;
    if (p->left == 0 && p->cur_fin && p->utf8 != 0)
        return -WS_CLOSE_BAD_DATA;
    return 0;
}

int ws_close_code_valid(unsigned code) {
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
           (code >= 3000 && code <= 4999);
}

int ws_parse_close(const uint8_t *payload, size_t len, uint16_t *code) {
    if (len == 0) {
        *code = WS_CLOSE_NO_STATUS;
        return 0;
    }
    if (len == 1)
        return -WS_CLOSE_PROTOCOL;
    unsigned c = (unsigned)payload[0] << 8 | payload[1];
    if (!ws_close_code_valid(c))
        return -WS_CLOSE_PROTOCOL;
    if (!ws_utf8_valid(payload + 2, len - 2))
        return -WS_CLOSE_BAD_DATA;
    *code = (uint16_t)c;
    return 0;
}

/* ---- encoding ----------------------------------------------------------- */

size_t ws_write_head(uint8_t out[WS_HEAD_MAX], int fin, int opcode, uint64_t len,
                     const uint8_t *mask) {
    size_t n = 2;
    out[0] = (uint8_t)((fin ? 0x80 : 0) | (opcode & (0x0f | WS_RSV1)));
    uint8_t mbit = mask ? 0x80 : 0;
    if (len < 126) {
        out[1] = (uint8_t)(mbit | len);
    } else if (len <= 0xffff) {
        out[1] = mbit | 126;
        out[2] = (uint8_t)(len >> 8);
        out[3] = (uint8_t)len;
        n = 4;
    } else {
        out[1] = mbit | 127;
        for (int i = 0; i < 8; i++)
            out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
        n = 10;
    }
    if (mask) {
        memcpy(out + n, mask, 4);
        n += 4;
    }
    return n;
}

int ws_has_token(const char *v, size_t len, const char *tok) {
    size_t tl = strlen(tok), i = 0;
    while (i < len) {
        while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        size_t start = i;
        while (i < len && v[i] != ',')
            i++;
        size_t end = i;
        while (end > start && (v[end - 1] == ' ' || v[end - 1] == '\t'))
            end--;
        if (end > start && http_ieq(v + start, end - start, tok, tl))
            return 1;
    }
    return 0;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int ws_key_valid(const char *key, size_t len) {
    if (len != 24 || key[22] != '=' || key[23] != '=')
        return 0;
    for (size_t i = 0; i < 22; i++)
        if (!key[i] || !strchr(b64, key[i]))
            return 0;
    return 1;
}

void ws_accept_key(const char *key, size_t len, char out[WS_ACCEPT_LEN + 1]) {
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    sha1_ctx c;
    uint8_t d[21];
    sha1_init(&c);
    sha1_update(&c, key, len);
    sha1_update(&c, guid, sizeof guid - 1);
    sha1_final(&c, d);
    d[20] = 0;
    /* 20 bytes: six groups of three and one of two (one '=' of padding). */
    char *o = out;
    for (int i = 0; i < 21; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | (i + 2 < 21 ? d[i + 2] : 0);
        *o++ = b64[(v >> 18) & 63];
        *o++ = b64[(v >> 12) & 63];
        *o++ = b64[(v >> 6) & 63];
        *o++ = b64[v & 63];
    }
    out[WS_ACCEPT_LEN - 1] = '=';
    out[WS_ACCEPT_LEN] = '\0';
}
