/* static_mime.h — Content-Type from a file name's extension (RFC 9110
 * §8.3): a built-in table of common types, overridden by a mime.types file
 * (/etc/mime.types) read once when a directory is mounted. */
#ifndef SPINDLE_STATIC_MIME_H
#define SPINDLE_STATIC_MIME_H

#include <stddef.h>

typedef struct static_mime_entry {
    const char *ext; /* lower case, without the dot */
    const char *type;
    int compressed; /* static_mime_compressed(type), decided when the table is built */
} static_mime_entry;

typedef struct static_mime {
    static_mime_entry *v; /* sorted by ext, one entry per ext */
    size_t n;
    char *pool; /* the strings read from the file */
} static_mime;

/* The type for names without a known extension. */
#define STATIC_MIME_DEFAULT "application/octet-stream"

/* Builds the table: the built-in types, then path's ("type ext ext ..."
 * lines, '#' comments) overriding them; path NULL or missing: the built-in
 * table alone. Lines that are not a plausible type are skipped. 0 or
 * -ENOMEM (or -errno of reading an existing file). */
int static_mime_init(static_mime *m, const char *path);

/* The entry for a file name's extension (its part after the last '.',
 * compared without case), or NULL: the type is STATIC_MIME_DEFAULT, not
 * compressed. The entry lives as long as m. */
const static_mime_entry *static_mime_find(const static_mime *m, const char *name, size_t len);
/* Its type alone: static_mime_find's, or STATIC_MIME_DEFAULT. */
const char *static_mime_lookup(const static_mime *m, const char *name, size_t len);

/* 1 if a body of this type is already compressed (PNG, JPEG, WebP, WOFF2,
 * zip, MP4...): gzip would not make it smaller, so no .gz variant is looked
 * for — a browser's page asks for dozens of images, each with
 * "Accept-Encoding: gzip", and the probe was a failed open per image. Asked
 * once per entry when the table is built (static_mime_entry.compressed). */
int static_mime_compressed(const char *type);

void static_mime_free(static_mime *m);

#endif
