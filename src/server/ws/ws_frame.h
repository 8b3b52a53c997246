/* ws_frame.h — the WebSocket (RFC 6455) wire format as pure functions over
 * bytes: an incremental frame parser that enforces the protocol (RSV bits,
 * opcodes, masking, control frame rules, fragmentation, message size,
 * UTF-8 of text across fragments), frame head encoding, close payloads,
 * and the handshake's header tokens and accept key. No I/O, no allocation. */
#ifndef SPINDLE_WS_FRAME_H
#define SPINDLE_WS_FRAME_H

#include <stddef.h>
#include <stdint.h>

enum {
    WS_OP_CONT = 0,
    WS_OP_TEXT = 1,
    WS_OP_BINARY = 2,
    WS_OP_CLOSE = 8,
    WS_OP_PING = 9,
    WS_OP_PONG = 10,
};

/* Close codes (RFC 6455 §7.4.1). A parser error is minus one of these. */
enum {
    WS_CLOSE_NORMAL = 1000,
    WS_CLOSE_GOING_AWAY = 1001,
    WS_CLOSE_PROTOCOL = 1002,
    WS_CLOSE_NO_STATUS = 1005, /* never sent: "the close frame had no code" */
    WS_CLOSE_ABNORMAL = 1006,  /* never sent: "no close frame at all" */
    WS_CLOSE_BAD_DATA = 1007,
    WS_CLOSE_TOO_BIG = 1009,
};

#define WS_HEAD_MAX    14   /* 2 + 8 (length) + 4 (mask) */
#define WS_RSV1        0x40 /* or'ed into an opcode: a compressed message (RFC 7692) */
#define WS_UTF8_BAD    0xffffffffu
#define WS_CONTROL_MAX 125 /* control frame payload limit */
#define WS_ACCEPT_LEN  28  /* base64 of a SHA-1 */

typedef struct ws_frame {
    uint8_t fin;
    uint8_t opcode; /* as sent: WS_OP_CONT for continuations */
    uint8_t masked;
    uint8_t mask[4];
    uint64_t len;
} ws_frame;

/* The state carried from frame to frame and within a frame's payload. */
typedef struct ws_parser {
    uint64_t max_message; /* data message limit (sum of its frames); 0: none */
    uint64_t msg_len;     /* the data message in progress, frames announced so far */
    uint64_t left;        /* payload bytes of the current frame still to come */
    uint32_t utf8;        /* decoder state of the text message in progress (0: between
                             characters) */
    uint8_t masked_role;  /* 1: we are the server, frames must be masked; 0: must not */
    uint8_t in_message;   /* a fragmented data message waits for continuations */
    uint8_t msg_opcode;   /* WS_OP_TEXT or WS_OP_BINARY of that message */
    uint8_t cur_opcode;   /* the current frame's (continuations: the message's) */
    uint8_t cur_fin;
    uint8_t check_utf8; /* the current frame's payload is text (not compressed) */
    uint8_t rsv1_ok;    /* permessage-deflate was negotiated: RSV1 marks a compressed message */
    uint8_t compressed; /* the message in progress had RSV1 on its first frame */
    uint8_t mask[4];
    uint8_t mask_off;
} ws_parser;

/* server: 1 when parsing what a client sends (masking required). */
void ws_parser_init(ws_parser *p, int server, uint64_t max_message);

/* Parses the next frame head from buf (p->left must be 0: the previous
 * frame's payload consumed). Returns the head length (2..14), 0 when more
 * bytes are needed (nothing changed), or minus a close code: -1002 (RSV2
 * or RSV3; RSV1 unless rsv1_ok, and then on a control frame or a
 * continuation too (RFC 7692 §6), unknown opcode, masking wrong for the role, control frame
 * fragmented or over 125 bytes, 64-bit length with the top bit set, a
 * continuation without a message or a new message inside one), -1009 (the
 * message would pass max_message; a compressed one: its compressed bytes
 * twice that, its inflated size is the caller's to count), -1007 (an
 * empty final text frame ending inside a character). On success *f
 * describes the frame and p->left its payload length; the payload of a
 * compressed message is unmasked, not checked as UTF-8 (the caller checks
 * what it inflates to, with ws_utf8_feed). */
int ws_parse_head(ws_parser *p, const uint8_t *buf, size_t len, ws_frame *f);

/* Takes the next n (<= p->left) payload bytes of the current frame:
 * unmasks them in place and, for text, checks UTF-8 as it goes (failing
 * as soon as a byte cannot start or continue a character) and, at the end
 * of the message's final frame, that no character is cut. 0 or -1007. */
int ws_parse_payload(ws_parser *p, uint8_t *data, size_t n);

/* Checks a whole (unmasked) close payload: 0 with *code (1005 when empty),
 * -1002 (one byte, or a code that may not be sent) or -1007 (reason not
 * UTF-8). */
int ws_parse_close(const uint8_t *payload, size_t len, uint16_t *code);

/* 1 if code may appear in a close frame: 1000-1003, 1007-1014, 3000-4999. */
int ws_close_code_valid(unsigned code);

/* The UTF-8 decoder's state after s[0..n) from state st (0: between
 * characters; WS_UTF8_BAD once a byte cannot start or continue one). */
uint32_t ws_utf8_feed(uint32_t st, const uint8_t *s, size_t n);

/* 1 if s[0..n) is complete, valid UTF-8 (no overlongs, surrogates, or
 * code points beyond U+10FFFF). */
int ws_utf8_valid(const uint8_t *s, size_t n);

/* Encodes a frame head for a payload of len bytes (masked with mask when
 * non-NULL; opcode | WS_RSV1 sets RSV1). Returns its length (<= WS_HEAD_MAX). */
size_t ws_write_head(uint8_t out[WS_HEAD_MAX], int fin, int opcode, uint64_t len,
                     const uint8_t *mask);

/* 1 if the comma-separated header value v (len bytes) lists the token
 * tok (lower case; v compared ignoring case, spaces around items skipped). */
int ws_has_token(const char *v, size_t len, const char *tok);

/* 1 if key (len bytes) is a Sec-WebSocket-Key: base64 of 16 bytes. */
int ws_key_valid(const char *key, size_t len);

/* Sec-WebSocket-Accept for key: base64(SHA-1(key + GUID)), NUL-terminated. */
void ws_accept_key(const char *key, size_t len, char out[WS_ACCEPT_LEN + 1]);

#endif
