/* static.c — sp_static: a directory mounted under a path prefix, served for
 * GET and HEAD with sendfile, single byte ranges (RFC 9110 §14), validators
 * and conditional requests (§8.8, §13), index.html, and precompressed .gz
 * variants (not looked for beside images and other compressed types).
 * Files are opened beneath the root fd only (static_open.c).
 * static_mount_exclusive (--static-map) answers every other method too. */
#include "server/static/static.h"

#include "server/handler.h"
#include "server/static/static_http.h"
#include "server/static/static_mime.h"
#include "server/static/static_open.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MIME_TYPES_FILE "/etc/mime.types"
#define MAX_LINES       8 /* repeated lines of one list field that are looked at */
#define INDEX_NAME      "index.html"

/* One mounted directory: the route's user data. A server's mounts are
 * chained in its extension slot (mounts_key), which sp_server_free frees
 * (mounts_free): the router frees only its own copies of the patterns. */
typedef struct static_mount {
    struct static_mount *next; /* the server's mount before this one */
    int root;                  /* O_PATH | O_DIRECTORY */
    int use_openat2;           /* cleared when the kernel says ENOSYS */
    char *prefix;              /* normalized, ends in '/' */
    size_t prefix_len;
    static_mime mime;
    sp_handler fallback; /* takes what names no file; NULL: 404 */
    void *fallback_ud;
} static_mount;

/* The request fields this handler reads, gathered in one pass. */
typedef struct static_fields {
    sp_str if_match[MAX_LINES], if_none_match[MAX_LINES], accept_encoding[MAX_LINES];
    size_t n_if_match, n_if_none_match, n_accept_encoding;
    sp_str if_modified_since, if_unmodified_since, if_range, range;
    int n_range;
} static_fields;

static int name_is(sp_str k, const char *lit, size_t n) {
    return k.len == n && strncasecmp(k.ptr, lit, n) == 0;
}

static void add_line(sp_str *v, size_t *n, sp_str x) {
    if (*n < MAX_LINES)
        v[(*n)++] = x;
}

static void gather(const sp_req *req, static_fields *f) {
    memset(f, 0, sizeof *f);
    sp_str k, v;
    for (size_t i = 0; sp_req_header_at(req, i, &k, &v); i++) {
        if (k.len < 5 || (k.ptr[0] | 0x20) == 'c' || (k.ptr[0] | 0x20) == 'h')
            continue; /* Host, Content-*, Connection, Cookie: the common ones, skipped fast */
        if (name_is(k, "if-match", 8))
            add_line(f->if_match, &f->n_if_match, v);
        else if (name_is(k, "if-none-match", 13))
            add_line(f->if_none_match, &f->n_if_none_match, v);
        else if (name_is(k, "accept-encoding", 15))
            add_line(f->accept_encoding, &f->n_accept_encoding, v);
        else if (name_is(k, "if-modified-since", 17))
            f->if_modified_since = v;
        else if (name_is(k, "if-unmodified-since", 19))
            f->if_unmodified_since = v;
        else if (name_is(k, "if-range", 8))
            f->if_range = v;
        else if (name_is(k, "range", 5)) {
            f->range = v;
            f->n_range++;
        }
    }
}

/* Opens rel beneath the root: the fd (fstat'ed into st) or -errno. */
static int open_file(static_mount *m, const char *rel, struct stat *st) {
    int fd = static_open(m->root, rel, m->use_openat2);
    if (fd == -ENOSYS && m->use_openat2) {
        m->use_openat2 = 0; /* this kernel lacks openat2: walk from now on */
        fd = static_open(m->root, rel, 0);
    }
    if (fd < 0)
        return fd;
    if (fstat(fd, st) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    return fd;
}

/* Opens rel and keeps it only if it is a regular file. */
static int open_regular(static_mount *m, const char *rel, struct stat *st) {
    int fd = open_file(m, rel, st);
    if (fd >= 0 && !S_ISREG(st->st_mode)) {
        close(fd);
        return -ENOENT;
    }
    return fd;
}

/* A path that names no file: 404, or the mount's fallback handler. */
static int not_found(static_mount *m, sp_req *req, sp_res *res) {
    if (m->fallback)
        return m->fallback(req, res, m->fallback_ud);
    return res_send_error(res, 404, 0, NULL);
}

/* The answer to a failed open: 403 for permissions, 404 for what does not
 * exist or is refused (a symlink out of the root, a loop, a long name),
 * else the error itself (500). */
static int open_error(static_mount *m, sp_req *req, sp_res *res, int err) {
    switch (err) {
    case -EACCES:
    case -EPERM:
        return res_send_error(res, 403, 0, NULL);
    case -ENOENT:
    case -ENOTDIR:
    case -ELOOP:
    case -EXDEV:
    case -ENAMETOOLONG:
    case -ENXIO:
        return not_found(m, req, res);
    default:
        return err;
    }
}

/* 301 to the path with a slash added (RFC 9110 §15.4.2), query kept. */
static int redirect_slash(sp_req *req, sp_res *res) {
    sp_str path = sp_req_path(req), q = sp_req_query(req);
    size_t cap = path.len + q.len + 3;
    char *loc = malloc(cap);
    if (!loc)
        return -ENOMEM;
    int n = snprintf(loc, cap, "%.*s/%s%.*s", (int)path.len, path.ptr, q.len ? "?" : "", (int)q.len,
                     q.ptr);
    int rc = n < 0 ? -EINVAL : sp_res_header(res, "Location", loc);
    free(loc);
    if (rc < 0)
        return rc;
    static const char body[] = "301 Moved Permanently\n";
    return sp_res_send(res, 301, "text/plain", body, sizeof body - 1);
}

/* Appends suffix to rel[0..len) in buf (STATIC_PATH_MAX). -1 if too long. */
static int join(char *buf, const char *rel, size_t len, const char *suffix) {
    size_t sl = strlen(suffix);
    if (len + sl + 1 > STATIC_PATH_MAX)
        return -1;
    memmove(buf, rel, len);
    memcpy(buf + len, suffix, sl + 1);
    return 0;
}

static int send_416(sp_res *res, uint64_t size) {
    char cr[48];
    snprintf(cr, sizeof cr, "bytes */%llu", (unsigned long long)size);
    int rc = sp_res_header(res, "Content-Range", cr);
    if (rc < 0)
        return rc;
    static const char body[] = "416 Range Not Satisfiable\n";
    return sp_res_send(res, 416, "text/plain", body, sizeof body - 1);
}

/* Serves the open regular file fd (takes it over). */
static int serve_file(sp_req *req, sp_res *res, const static_fields *f, int fd,
                      const struct stat *st, const char *type, int gz, int vary) {
    uint64_t size = (uint64_t)st->st_size;
    uint64_t mtime_ns = (uint64_t)st->st_mtim.tv_sec * 1000000000u + (uint64_t)st->st_mtim.tv_nsec;
    char etag[STATIC_ETAG_CAP], lm[STATIC_DATE_CAP];
    size_t etag_len = static_etag_format(etag, size, mtime_ns, gz);
    static_date_format((int64_t)st->st_mtim.tv_sec, lm);
    int rc = sp_res_header(res, "ETag", etag);
    if (rc == 0 && vary)
        rc = sp_res_header(res, "Vary", "Accept-Encoding");
    if (rc < 0)
        goto out;

    static_cond c = {f->if_match,        f->if_none_match,     f->n_if_match,
                     f->n_if_none_match, f->if_modified_since, f->if_unmodified_since};
    int pre = static_preconditions(&c, etag, etag_len, (int64_t)st->st_mtim.tv_sec);
    if (pre == 304) {
        /* §15.4.5: ETag and Vary as a 200 would have them; no body. As for
         * HEAD, sendfile on a 304 sends the head only, with the 200's
         * Content-Length (§8.6), and counts the body as accounted for. */
        rc = sp_res_status(res, 304);
        if (rc == 0)
            rc = sp_res_sendfile(res, fd, 0, (size_t)size);
        goto out;
    }
    if (pre == 412) {
        rc = res_send_error(res, 412, 0, NULL);
        goto out;
    }

    uint64_t off = 0, count = size;
    int status = 200;
    sp_str method = sp_req_method(req);
    /* §14.2: Range is defined for GET only (HEAD gets the 200 head). */
    if (f->range.ptr && f->n_range == 1 && method.len == 3 && memcmp(method.ptr, "GET", 3) == 0 &&
        static_if_range(f->if_range, etag, etag_len, (int64_t)st->st_mtim.tv_sec, time(NULL))) {
        switch (static_range_parse(f->range.ptr, f->range.len, size, &off, &count)) {
        case STATIC_RANGE_ONE:
            status = 206;
            break;
        case STATIC_RANGE_UNSATISFIABLE:
            rc = send_416(res, size);
            goto out;
        default: /* none, or several ranges: the whole file */
            off = 0;
            count = size;
            break;
        }
    }
    rc = sp_res_status(res, status);
    if (rc == 0)
        rc = sp_res_header(res, "Content-Type", type);
    if (rc == 0)
        rc = sp_res_header(res, "Last-Modified", lm);
    if (rc == 0)
        rc = sp_res_header(res, "Accept-Ranges", "bytes");
    if (rc == 0 && gz)
        rc = sp_res_header(res, "Content-Encoding", "gzip");
    if (rc == 0 && status == 206) {
        char cr[80];
        snprintf(cr, sizeof cr, "bytes %llu-%llu/%llu", (unsigned long long)off,
                 (unsigned long long)(off + count - 1), (unsigned long long)size);
        rc = sp_res_header(res, "Content-Range", cr);
    }
    if (rc == 0)
        rc = sp_res_sendfile(res, fd, (int64_t)off, (size_t)count);
out:
    close(fd);
    return rc;
}

static int static_handler(sp_req *req, sp_res *res, void *ud) {
    static_mount *m = ud;
    sp_str path = sp_req_path(req);
    const char *rest = "";
    size_t rest_len = 0;
    int at_mount = path.len < m->prefix_len; /* "/static" for the prefix "/static/" */
    if (!at_mount) {
        rest = path.ptr + m->prefix_len;
        rest_len = path.len - m->prefix_len;
    }
    char rel[STATIC_PATH_MAX];
    int slash;
    /* Room kept for "/index.html" or ".gz". */
    long rl = static_rel_path(rest, rest_len, rel, sizeof rel - 16, &slash);
    if (rl < 0)
        return not_found(m, req, res);

    struct stat st;
    int fd = open_file(m, rel, &st);
    if (fd < 0)
        return open_error(m, req, res, fd);
    const char *name = rel;
    size_t name_len = (size_t)rl;
    char alt[STATIC_PATH_MAX];
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        /* With a fallback, a directory without index.html is not a file:
         * the redirect to its slash waits until the index is known. */
        int redirect = at_mount || (rest_len > 0 && !slash);
        if (redirect && !m->fallback)
            return redirect_slash(req, res);
        /* A directory: its index.html, never a listing. */
        if (rl == 1 && rel[0] == '.')
            rl = 0;
        if (join(alt, rel, (size_t)rl, rl ? "/" INDEX_NAME : INDEX_NAME) < 0)
            return not_found(m, req, res);
        memcpy(rel, alt, strlen(alt) + 1);
        rl = (long)strlen(rel);
        fd = open_regular(m, rel, &st);
        if (fd < 0)
            return open_error(m, req, res, fd);
        if (redirect) {
            close(fd);
            return redirect_slash(req, res);
        }
        name = INDEX_NAME;
        name_len = sizeof INDEX_NAME - 1;
    } else if (!S_ISREG(st.st_mode) || slash) {
        close(fd);
        return not_found(m, req, res); /* a device, FIFO, socket; "file/" */
    }

    static_fields f;
    gather(req, &f);
    const static_mime_entry *me = static_mime_find(&m->mime, name, name_len);
    const char *type = me ? me->type : STATIC_MIME_DEFAULT;
    int gz = 0, vary = 0;
    /* No .gz of an image or a font: it would not be smaller, and the
     * failed open cost a syscall on every image of a page. */
    if (f.n_accept_encoding && !(me && me->compressed) &&
        static_accepts_gzip(f.accept_encoding, f.n_accept_encoding) &&
        join(alt, rel, (size_t)rl, ".gz") == 0) {
        struct stat gst;
        int gfd = open_regular(m, alt, &gst);
        if (gfd >= 0) {
            close(fd);
            fd = gfd;
            st = gst;
            gz = vary = 1;
        }
    }
    return serve_file(req, res, &f, fd, &st, type, gz, vary);
}

/* A prefix routes can match: starts with '/', normalized (no empty, "."
 * or ".." segment), none of the router's pattern characters. */
static int prefix_ok(const char *p) {
    if (p[0] != '/')
        return 0;
    for (const char *s = p; *s; s++) {
        if (strchr("*{}?#%", *s) || (unsigned char)*s <= ' ' || *s == 0x7f)
            return 0;
        if (s[0] == '/' &&
            (s[1] == '/' || (s[1] == '.' && (s[2] == '/' || s[2] == '\0' ||
                                             (s[2] == '.' && (s[3] == '/' || !s[3]))))))
            return 0;
    }
    return 1;
}

int sp_static(sp_server *s, const char *prefix, const char *dir) {
    return static_mount_fallback(s, prefix, dir, NULL, NULL);
}

/* Every method but GET and HEAD under an exclusive mount: nothing there
 * takes a body or changes state, and the application must not see it. */
static int not_allowed(sp_req *req, sp_res *res, void *ud) {
    (void)ud;
    sp_str m = sp_req_method(req);
    if (m.len == 7 && memcmp(m.ptr, "OPTIONS", 7) == 0) {
        int rc = sp_res_header(res, "Allow", "GET, HEAD, OPTIONS");
        return rc < 0 ? rc : sp_res_send(res, 204, NULL, NULL, 0);
    }
    return res_send_error(res, 405, 0, "GET, HEAD");
}

int static_mount_exclusive(sp_server *s, const char *prefix, const char *dir) {
    int rc = sp_static(s, prefix, dir);
    if (rc < 0)
        return rc;
    char pattern[STATIC_PATH_MAX];
    size_t pl = strlen(prefix);
    if (snprintf(pattern, sizeof pattern, "%s%s*", prefix, prefix[pl - 1] != '/' ? "/" : "") >=
        (int)sizeof pattern)
        return -ENAMETOOLONG;
    return sp_route(s, NULL, pattern, not_allowed, NULL);
}

/* A server's mounts, in its extension slot under mounts_key: one holder
 * per server, so adding a mount never replaces (and frees) the slot's data. */
typedef struct static_mounts {
    static_mount *head;
} static_mounts;

static const char mounts_key;

static void mount_free(static_mount *m) {
    free(m->prefix);
    static_mime_free(&m->mime);
    close(m->root);
    free(m);
}

static void mounts_free(void *data) {
    static_mounts *ms = data;
    for (static_mount *m = ms->head, *next; m; m = next) {
        next = m->next;
        mount_free(m);
    }
    free(ms);
}

static static_mounts *mounts_of(sp_server *s) {
    static_mounts *ms = server_ext_get(s, &mounts_key);
    if (ms)
        return ms;
    if (!(ms = calloc(1, sizeof *ms)))
        return NULL;
    if (server_ext_set(s, &mounts_key, ms, mounts_free) < 0) {
        free(ms);
        return NULL;
    }
    return ms;
}

int static_mount_fallback(sp_server *s, const char *prefix, const char *dir, sp_handler fallback,
                          void *fallback_ud) {
    if (!s || !prefix || !dir || !prefix_ok(prefix))
        return -EINVAL;
    size_t pl = strlen(prefix);
    int add_slash = prefix[pl - 1] != '/';
    static_mounts *ms = mounts_of(s);
    static_mount *m = calloc(1, sizeof *m);
    char *pattern = malloc(pl + 3);
    if (!ms || !m || !pattern) {
        free(m);
        free(pattern);
        return -ENOMEM;
    }
    int rc;
    m->root = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (m->root < 0) {
        rc = -errno;
        goto fail;
    }
    rc = static_mime_init(&m->mime, MIME_TYPES_FILE);
    if (rc < 0 && rc != -EACCES)
        goto fail_root;
    if (rc < 0) /* an unreadable mime.types: the built-in table */
        rc = static_mime_init(&m->mime, NULL);
    if (rc < 0)
        goto fail_root;
    m->use_openat2 = static_open_probe(m->root);
    m->fallback = fallback;
    m->fallback_ud = fallback_ud;
    snprintf(pattern, pl + 3, "%s%s*", prefix, add_slash ? "/" : "");
    m->prefix_len = pl + (size_t)add_slash;
    m->prefix = strndup(pattern, m->prefix_len);
    if (!m->prefix) {
        rc = -ENOMEM;
        goto fail_mime;
    }
    rc = sp_route(s, "GET", pattern, static_handler, m);
    if (rc < 0)
        goto fail_prefix;
    m->next = ms->head;
    ms->head = m;
    free(pattern);
    return 0;
fail_prefix:
    free(m->prefix);
fail_mime:
    static_mime_free(&m->mime);
fail_root:
    close(m->root);
fail:
    free(pattern);
    free(m);
    return rc;
}
