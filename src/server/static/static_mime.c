/* static_mime.c — the extension → Content-Type table: ~60 built-in types,
 * then a mime.types file read at mount time overriding them, kept sorted
 * for a binary search per request. See static_mime.h. */
#include "server/static/static_mime.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXT_MAX       32
#define MIME_FILE_MAX (4u << 20) /* a mime.types larger than this is not read */

/* ext, type: the table's entries before their compressed bit is decided. */
typedef struct mime_pair {
    const char *ext, *type;
} mime_pair;

static const mime_pair builtin[] = {
    {"7z", "application/x-7z-compressed"},
    {"aac", "audio/aac"},
    {"avif", "image/avif"},
    {"bin", "application/octet-stream"},
    {"bmp", "image/bmp"},
    {"bz2", "application/x-bzip2"},
    {"css", "text/css"},
    {"csv", "text/csv"},
    {"doc", "application/msword"},
    {"docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
    {"eot", "application/vnd.ms-fontobject"},
    {"epub", "application/epub+zip"},
    {"flac", "audio/flac"},
    {"gif", "image/gif"},
    {"gz", "application/gzip"},
    {"htm", "text/html"},
    {"html", "text/html"},
    {"ico", "image/vnd.microsoft.icon"},
    {"ics", "text/calendar"},
    {"jar", "application/java-archive"},
    {"jpeg", "image/jpeg"},
    {"jpg", "image/jpeg"},
    {"js", "text/javascript"},
    {"json", "application/json"},
    {"jsonld", "application/ld+json"},
    {"m4a", "audio/mp4"},
    {"manifest", "application/manifest+json"},
    {"map", "application/json"},
    {"md", "text/markdown"},
    {"mid", "audio/midi"},
    {"mjs", "text/javascript"},
    {"mov", "video/quicktime"},
    {"mp3", "audio/mpeg"},
    {"mp4", "video/mp4"},
    {"mpeg", "video/mpeg"},
    {"oga", "audio/ogg"},
    {"ogg", "audio/ogg"},
    {"ogv", "video/ogg"},
    {"otf", "font/otf"},
    {"pdf", "application/pdf"},
    {"png", "image/png"},
    {"ppt", "application/vnd.ms-powerpoint"},
    {"pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"},
    {"rar", "application/vnd.rar"},
    {"rss", "application/rss+xml"},
    {"rtf", "application/rtf"},
    {"sh", "application/x-sh"},
    {"svg", "image/svg+xml"},
    {"tar", "application/x-tar"},
    {"tif", "image/tiff"},
    {"tiff", "image/tiff"},
    {"ts", "video/mp2t"},
    {"ttf", "font/ttf"},
    {"txt", "text/plain"},
    {"wasm", "application/wasm"},
    {"wav", "audio/wav"},
    {"weba", "audio/webm"},
    {"webm", "video/webm"},
    {"webmanifest", "application/manifest+json"},
    {"webp", "image/webp"},
    {"woff", "font/woff"},
    {"woff2", "font/woff2"},
    {"xhtml", "application/xhtml+xml"},
    {"xls", "application/vnd.ms-excel"},
    {"xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
    {"xml", "application/xml"},
    {"zip", "application/zip"},
};
#define NBUILTIN (sizeof builtin / sizeof builtin[0])

/* An entry while building: its position breaks ties so the last wins. */
typedef struct pending {
    mime_pair e;
    size_t order;
} pending;

static int cmp_pending(const void *a, const void *b) {
    const pending *x = a, *y = b;
    int c = strcmp(x->e.ext, y->e.ext);
    if (c)
        return c;
    return x->order < y->order ? -1 : x->order > y->order;
}

static int is_type_char(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           strchr("!#$&-^_.+", c) != NULL;
}

/* A type/subtype of token characters. */
static int plausible_type(const char *t) {
    const char *slash = strchr(t, '/');
    if (!slash || slash == t || !slash[1] || strchr(slash + 1, '/'))
        return 0;
    for (const char *p = t; *p; p++)
        if (*p != '/' && !is_type_char((unsigned char)*p))
            return 0;
    return 1;
}

static int plausible_ext(const char *e) {
    size_t n = strlen(e);
    if (n == 0 || n > EXT_MAX)
        return 0;
    for (const char *p = e; *p; p++)
        if (!is_type_char((unsigned char)*p) || *p == '/')
            return 0;
    return 1;
}

/* Reads the whole file (at most MIME_FILE_MAX) into a NUL-terminated
 * buffer. 0, 1 when the file does not exist, or -errno. */
static int read_file(const char *path, char **out) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 1 : -errno;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > MIME_FILE_MAX) {
        close(fd);
        return 1;
    }
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        close(fd);
        return -ENOMEM;
    }
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    *out = buf;
    return 0;
}

/* Splits pool into lines and words in place, appending entries to v. */
static size_t parse_pool(char *pool, pending *v, size_t n, size_t cap) {
    char *line = pool;
    while (*line) {
        char *end = strchr(line, '\n');
        char *next = end ? end + 1 : line + strlen(line);
        if (end)
            *end = '\0';
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *save = NULL;
        char *type = strtok_r(line, " \t\r", &save);
        if (type && plausible_type(type)) {
            for (char *p = type; *p; p++)
                *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
            char *ext;
            while ((ext = strtok_r(NULL, " \t\r", &save)) && n < cap) {
                for (char *p = ext; *p; p++)
                    *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
                if (plausible_ext(ext)) {
                    v[n] = (pending){{ext, type}, n};
                    n++;
                }
            }
        }
        line = next;
    }
    return n;
}

int static_mime_init(static_mime *m, const char *path) {
    *m = (static_mime){0};
    char *pool = NULL;
    if (path) {
        int rc = read_file(path, &pool);
        if (rc < 0)
            return rc;
    }
    /* Every word of the file could be an extension: at most len/2 + 1. */
    size_t cap = NBUILTIN + (pool ? strlen(pool) / 2 + 1 : 0);
    pending *v = malloc(cap * sizeof *v);
    if (!v) {
        free(pool);
        return -ENOMEM;
    }
    size_t n = 0;
    for (; n < NBUILTIN; n++)
        v[n] = (pending){builtin[n], n};
    if (pool)
        n = parse_pool(pool, v, n, cap);
    qsort(v, n, sizeof *v, cmp_pending);
    static_mime_entry *out = malloc((n ? n : 1) * sizeof *out);
    if (!out) {
        free(v);
        free(pool);
        return -ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 1 < n && strcmp(v[i].e.ext, v[i + 1].e.ext) == 0)
            continue; /* a later line for the same extension wins */
        out[k++] =
            (static_mime_entry){v[i].e.ext, v[i].e.type, static_mime_compressed(v[i].e.type)};
    }
    free(v);
    m->v = out;
    m->n = k;
    m->pool = pool;
    return 0;
}

const static_mime_entry *static_mime_find(const static_mime *m, const char *name, size_t len) {
    size_t dot = len;
    while (dot > 0 && name[dot - 1] != '.' && name[dot - 1] != '/')
        dot--;
    if (dot == 0 || name[dot - 1] != '.' || len - dot == 0 || len - dot > EXT_MAX)
        return NULL;
    char ext[EXT_MAX + 1];
    for (size_t i = dot; i < len; i++)
        ext[i - dot] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
    ext[len - dot] = '\0';
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(ext, m->v[mid].ext);
        if (c == 0)
            return &m->v[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

const char *static_mime_lookup(const static_mime *m, const char *name, size_t len) {
    const static_mime_entry *e = static_mime_find(m, name, len);
    return e ? e->type : STATIC_MIME_DEFAULT;
}

int static_mime_compressed(const char *type) {
    static const char *const packed[] = {
        "image/png",           "image/jpeg",
        "image/gif",           "image/webp",
        "image/avif",          "image/heic",
        "font/woff",           "font/woff2",
        "application/zip",     "application/gzip",
        "application/zstd",    "application/x-xz",
        "application/x-bzip2", "application/x-7z-compressed",
        "application/vnd.rar", "video/mp4",
        "video/webm",          "video/ogg",
        "audio/mpeg",          "audio/ogg",
        "audio/webm",          "audio/aac",
        "audio/mp4",           "audio/flac",
    };
    for (size_t i = 0; i < sizeof packed / sizeof packed[0]; i++)
        if (strcmp(type, packed[i]) == 0)
            return 1;
    return 0;
}

void static_mime_free(static_mime *m) {
    free(m->v);
    free(m->pool);
    *m = (static_mime){0};
}
