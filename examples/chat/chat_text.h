/* chat_text.h — the chat example's small helpers (chat_text.c): a growing
 * buffer with JSON strings, UTF-8 and percent-decoding checks, cookies, the
 * same-origin check, bus ids, small text bodies, and the visitor's
 * id and nickname cookies. */
#ifndef CHAT_TEXT_H
#define CHAT_TEXT_H

#include "spindle.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TEXT_MAX 1000 /* bytes of one chat message */
#define NICK_MAX 32   /* bytes of a nickname */
#define ID_LEN   16   /* hex digits of a chat_id cookie */

/* A bus id, "MS-SEQ", as numbers: compared in that order. */
typedef struct chat_id {
    uint64_t ms, seq;
} chat_id;

/* "MS-SEQ" or "MS" (SEQ 0) into *out: 0, or -1 if malformed. */
int id_parse(const char *s, size_t len, chat_id *out);
void id_format(chat_id id, char out[SP_BUS_ID_MAX]);
int id_cmp(chat_id a, chat_id b);
/* The ?since= id: 1 if there, 0 if absent, -1 if malformed. */
int query_id(const sp_req *req, const char *name, chat_id *out);

typedef struct buf {
    char *p;
    size_t len, cap;
} buf;

/* Appends (NUL-terminated); 0 or -ENOMEM. */
int buf_add(buf *b, const void *data, size_t len);
int buf_str(buf *b, const char *s);
int buf_fmt(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A JSON string (quotes included) from valid UTF-8. */
int buf_json_str(buf *b, const char *s, size_t len);

int64_t wall_ms(void); /* wall clock */
int64_t mono_us(void); /* monotonic */

/* Valid UTF-8 without control characters. */
int utf8_ok(const unsigned char *s, size_t len);
int hexval(int c); /* -1 if c is not a hex digit */
/* Percent-decodes src into out (NUL-terminated); -1 if malformed or too long. */
int pct_decode(sp_str src, char *out, size_t cap);
/* The value of cookie `name` among the request's Cookie fields. */
sp_str cookie(const sp_req *req, const char *name);
/* 1 unless an Origin header names another host than Host. */
int same_origin(const sp_req *req);

/* A small text body, trimmed: its length, -EMSGSIZE, or -errno. */
ssize_t read_text(sp_req *req, char *out, size_t cap);
/* Chat text: 1..TEXT_MAX bytes of UTF-8, newlines and tabs allowed. */
int text_ok(const char *t, size_t len);

/* Gives a visitor without a chat_id cookie one. */
void ensure_id(const sp_req *req, sp_res *res);
/* The visitor's nickname from its cookie, or "anonymous". */
void nickname(const sp_req *req, char out[NICK_MAX + 1]);

#endif
