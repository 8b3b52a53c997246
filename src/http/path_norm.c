/* path_norm.c — request-target to normalized path (see path_norm.h). The
 * rules are RFC 3986's: §6.2.2.1 (hex case), §6.2.2.2 (decode unreserved
 * only: an encoded '/' stays "%2F" and never becomes a separator), §5.2.4
 * (remove dot-segments); merging "//" into "/" is our rule, as nginx's
 * merge_slashes does by default, so "//admin" matches "/admin" routes. */
#include "http/path_norm.h"

#include "http/http_chars.h"

#include <string.h>

static int unreserved(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

long path_normalize(const char *target, size_t len, char *out, size_t cap, const char **query,
                    size_t *query_len) {
    *query = target + len;
    *query_len = 0;
    if (cap < len + 1)
        return -1;
    if (len == 1 && target[0] == '*') {
        out[0] = '*';
        out[1] = '\0';
        return 1;
    }
    size_t start = 0;
    /* absolute-form (RFC 9112 §3.2.2): skip scheme://authority. */
    if (len && target[0] != '/') {
        const char *sep = memchr(target, ':', len);
        if (!sep || (size_t)(sep - target) + 3 > len || sep[1] != '/' || sep[2] != '/')
            return -1;
        start = (size_t)(sep - target) + 3;
        while (start < len && target[start] != '/' && target[start] != '?')
            start++;
        if (start == len || target[start] == '?') {
            /* "http://host" or "http://host?q" has the path "/". */
            out[0] = '/';
            out[1] = '\0';
            if (start < len) {
                *query = target + start + 1;
                *query_len = len - start - 1;
            }
            return 1;
        }
    }
    if (start >= len)
        return -1;
    size_t end = start;
    while (end < len && target[end] != '?' && target[end] != '#')
        end++;
    if (end < len && target[end] == '#')
        return -1; /* a fragment is never sent in a request (RFC 9112 §3.2) */
    if (end < len) {
        *query = target + end + 1;
        *query_len = len - end - 1;
        if (memchr(*query, '#', *query_len))
            return -1;
    }

    /* One pass: decode into segments, resolving "." and ".." per segment. */
    size_t n = 0;
    size_t i = start;
    while (i < end) {
        /* At a '/': merge runs of slashes into one. */
        while (i < end && target[i] == '/')
            i++;
        out[n++] = '/';
        size_t seg = n;
        while (i < end && target[i] != '/') {
            unsigned char c = (unsigned char)target[i];
            if (c == '%') {
                if (i + 2 >= end)
                    return -1;
                int hi = http_hexval((unsigned char)target[i + 1]);
                int lo = http_hexval((unsigned char)target[i + 2]);
                if (hi < 0 || lo < 0)
                    return -1;
                unsigned char d = (unsigned char)(hi * 16 + lo);
                if (d == 0)
                    return -1;
                if (unreserved(d)) {
                    out[n++] = (char)d;
                } else {
                    static const char hex[] = "0123456789ABCDEF";
                    out[n++] = '%';
                    out[n++] = hex[d >> 4];
                    out[n++] = hex[d & 15];
                }
                i += 3;
            } else {
                out[n++] = (char)c;
                i++;
            }
        }
        size_t seg_len = n - seg;
        int dot = seg_len == 1 && out[seg] == '.';
        int dotdot = seg_len == 2 && out[seg] == '.' && out[seg + 1] == '.';
        if (dot || dotdot) {
            n = seg - 1; /* drop "/." or "/.." */
            if (dotdot) {
                while (n > 0 && out[n - 1] != '/')
                    n--; /* and the segment before it, with its slash */
                if (n > 0)
                    n--;
            }
            if (i >= end)
                out[n++] = '/'; /* ending in a dot-segment names a directory */
        }
    }
    if (n == 0)
        out[n++] = '/';
    out[n] = '\0';
    return (long)n;
}

long path_percent_decode(const char *in, size_t len, char *out, size_t cap) {
    if (cap < len + 1)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (in[i] != '%') {
            out[n++] = in[i];
            continue;
        }
        if (i + 2 >= len)
            return -1;
        int hi = http_hexval((unsigned char)in[i + 1]), lo = http_hexval((unsigned char)in[i + 2]);
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
            return -1;
        out[n++] = (char)(hi * 16 + lo);
        i += 2;
    }
    out[n] = '\0';
    return (long)n;
}
