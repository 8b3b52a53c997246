/* ws_ext.h — permessage-deflate's negotiation (RFC 7692 §5, §7.1) as a pure
 * function: a Sec-WebSocket-Extensions value in, the first offer we can
 * accept (its parameters and our response's text) or a decline out. No I/O,
 * no allocation. */
#ifndef SPINDLE_WS_EXT_H
#define SPINDLE_WS_EXT_H

#include <stddef.h>
#include <stdint.h>

#define WS_EXT_RESP_MAX 160 /* the longest response is 129 bytes, NUL included */

/* What both sides agreed. Window bits are base-2 logarithms (8..15). */
typedef struct ws_deflate_params {
    uint8_t server_no_context_takeover; /* we reset our compressor per message */
    uint8_t client_no_context_takeover; /* the client resets its compressor: so may our inflater */
    uint8_t server_bits;                /* our compressor's window (9..15) */
    uint8_t client_bits;                /* the client's compressor's, our inflater's (8..15) */
} ws_deflate_params;

/* Negotiates against the header value v[0..len) (one instance of the
 * header; call again for the next while it returns 0). window_bits
 * (9..15) is the most window we give each side where the offer lets us
 * choose: ours always, the client's when it sent client_max_window_bits.
 * Offers are tried in order; one is declined (RFC 7692 §7.1) if it has an
 * unknown parameter, a parameter twice, a value where none belongs, a
 * window that is not 8..15 written without leading zeros (a quoted-string
 * is unquoted first), or server_max_window_bits=8 (zlib cannot make a
 * 256-byte window). A value that is not the extension list of RFC 6455
 * §9.1 declines all of it. Returns 1 with *out and resp (the response's
 * value, NUL-terminated) filled, or 0: nothing accepted. */
int ws_ext_negotiate(const char *v, size_t len, int window_bits, ws_deflate_params *out,
                     char resp[WS_EXT_RESP_MAX]);

#endif
