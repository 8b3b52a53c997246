/* access_format.h — one access log line from one request's fields: the
 * %-letter format (Apache/gunicorn atoms, %{Name}i / %{Name}o headers) or
 * JSON. Pure: no I/O, no allocation; the caller's buffer and clock cache. */
#ifndef SPINDLE_ACCESS_FORMAT_H
#define SPINDLE_ACCESS_FORMAT_H

#include "http/http_parse.h"

#include <stddef.h>
#include <stdint.h>

/* One line's fields; strings are slices (escaped when written). Headers
 * are the request's and the response's field arrays as they are: nothing
 * is looked up unless the format asks for it. */
typedef struct access_entry {
    const char *client;
    const char *method, *target;
    size_t method_len, target_len;
    int minor_version;
    const char *proto; /* the protocol when not HTTP/1.x ("HTTP/2.0"), else NULL */
    int status;
    uint64_t bytes;
    const http_field *req_fields, *res_fields;
    size_t req_nfields, res_nfields;
    uint64_t duration_us;
    int64_t time_ms; /* wall clock, ms since the epoch */
    int pid;
} access_entry;

/* The time texts of the last second formatted (so a busy log formats the
 * date once a second). Zero-initialise. */
typedef struct access_clock {
    int64_t sec;
    int valid;
    char clf[40]; /* [01/Dec/2026:10:30:56 +0000], local time */
    char iso[24]; /* 2026-12-01T10:30:56, UTC */
} access_clock;

/* The format that selects JSON lines instead of %-letters. */
#define ACCESS_FORMAT_JSON "json"

/* Formats one line, '\n' included, into out[0..cap) (cap >= 2); a line
 * that does not fit is cut, still ending in '\n'. Returns its length. */
size_t access_format_text(const char *fmt, const access_entry *e, access_clock *ck, char *out,
                          size_t cap);
/* One JSON object: client, time (ISO 8601, UTC, ms), method, target,
 * protocol, status, bytes, referer, user_agent, duration_us, pid; absent
 * strings are null. Control characters, quotes and backslashes are escaped;
 * a byte that is not part of valid UTF-8 is written as \u00XX (its value
 * read as Latin-1), so the line is always valid JSON. At most 1 KiB of each
 * client-supplied string. */
size_t access_format_json(const access_entry *e, access_clock *ck, char *out, size_t cap);

/* Checks a format string: 0, or -1 with *bad the offending letter
 * ('{' for a %{ without its closing "}i" or "}o"). "json" is valid. */
int access_log_check_format(const char *fmt, char *bad);

#endif
