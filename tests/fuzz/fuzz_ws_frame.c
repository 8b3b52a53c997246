/* fuzz_ws_frame.c — libFuzzer target for the WebSocket frame parser: the
 * input is a byte stream of client frames, fed in pieces whose sizes come
 * from the first byte, through ws_parse_head / ws_parse_payload / close
 * payload checks as ws.c does, checking the parser's invariants. */
#include "server/ws/ws_frame.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    size_t piece = (size_t)(data[0] % 16) + 1; /* bytes made available per step */
    int server = data[0] & 0x80;
    data++;
    size--;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    ws_parser p;
    ws_parser_init(&p, server ? 1 : 0, 4096);
    size_t off = 0, avail = 0, ctl_len = 0;
    uint8_t ctl[WS_CONTROL_MAX];
    int in_frame = 0;
    while (off < size) {
        avail = avail + piece > size - off ? size - off : avail + piece;
        if (!in_frame) {
            ws_frame f;
            int rc = ws_parse_head(&p, buf + off, avail, &f);
            if (rc < 0) {
                if (rc != -1002 && rc != -1007 && rc != -1009)
                    abort();
                break;
            }
            if (rc == 0) {
                if (avail == size - off)
                    break; /* the input ends inside a head */
                continue;
            }
            if (rc < 2 || rc > WS_HEAD_MAX || (size_t)rc > avail)
                abort();
            if (f.opcode >= 8 && (f.len > WS_CONTROL_MAX || !f.fin))
                abort();
            if (f.opcode < 8 && f.len > 4096)
                abort();
            off += (size_t)rc;
            avail -= (size_t)rc;
            in_frame = 1;
            ctl_len = 0;
        }
        size_t take = avail < p.left ? avail : (size_t)p.left;
        uint64_t before = p.left;
        int rc = ws_parse_payload(&p, buf + off, take);
        if (p.left != before - take)
            abort();
        if (p.cur_opcode >= 8) {
            memcpy(ctl + ctl_len, buf + off, take);
            ctl_len += take;
        }
        off += take;
        avail -= take;
        if (rc < 0) {
            if (rc != -1007)
                abort();
            break;
        }
        if (p.left == 0) {
            in_frame = 0;
            if (p.cur_opcode == WS_OP_CLOSE) {
                uint16_t code = 0;
                int c = ws_parse_close(ctl, ctl_len, &code);
                if (c == 0 && code != 1005 && !ws_close_code_valid(code))
                    abort();
                break;
            }
        }
    }
    free(buf);
    return 0;
}
