/* session.c — sp_session_of and the handler's side of sessions: the cookie
 * read and checked, the session loaded from the store or made fresh, the
 * Set-Cookie issued, and every change written through to the store at
 * once (so the response can never overtake the data it reports). */
#include "server/session/session.h"

#include "server/handler.h"
#include "server/session/session_cookie.h"
#include "server/session/session_data.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* "NAME=VALUE; Path=/; Expires=Sun, 06 Nov 1994 08:49:37 GMT; HttpOnly;
 * SameSite=Lax": fixed length, so it can be rewritten in place. */
#define SETCOOKIE_LEN                                                                              \
    (sizeof SESS_COOKIE_NAME + SESS_VALUE_LEN + sizeof "; Path=/; Expires=" - 1 + 29 +             \
     sizeof "; HttpOnly; SameSite=Lax" - 1)
#define SETCOOKIE_BUF (SETCOOKIE_LEN + 64)

struct sp_session {
    sess_cfg *cfg;
    sp_res *res;      /* the response it is issued on */
    size_t field;     /* its Set-Cookie: res->fields[field] */
    sp_session *next; /* in cfg->spare */
    char id[SESS_ID_HEX + 1];
    int64_t expiry;
    sess_data data;
};

/* A session object lives for one request: made by the first
 * sp_session_of, found again by later calls through the request's cleanup
 * list, and handed back to a small per-worker spare list when the request
 * ends (so steady state allocates nothing). */
#define SESS_SPARE_MAX 64

static void sess_release(void *arg) {
    sp_session *s = arg;
    sess_cfg *c = s->cfg;
    if (c->nspare >= SESS_SPARE_MAX) {
        sess_data_free(&s->data);
        free(s);
        return;
    }
    s->next = c->spare;
    c->spare = s;
    c->nspare++;
}

/* A session object for this request, registered to be released at its end. */
static sp_session *sess_take(sess_cfg *c, sp_req *req, sp_res *res) {
    sp_session *s = c->spare;
    if (s) {
        c->spare = s->next;
        c->nspare--;
    } else if (!(s = calloc(1, sizeof *s))) {
        return NULL;
    }
    s->cfg = c;
    s->res = res;
    if (req_defer(req, sess_release, s) < 0) {
        sess_release(s);
        return NULL;
    }
    return s;
}

/* Formats the Set-Cookie value into out (NUL-terminated); its length,
 * SETCOOKIE_LEN for any expiry before year 10000. */
static size_t make_setcookie(const sess_cfg *c, const sp_session *s, char out[SETCOOKIE_BUF]) {
    char value[SESS_VALUE_LEN + 1], date[64];
    sess_cookie_sign(c->key, c->key_len, s->id, s->expiry, value);
    time_t t = (time_t)s->expiry;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    int n = snprintf(out, SETCOOKIE_BUF, "%s=%s; Path=/; Expires=%s; HttpOnly; SameSite=Lax",
                     SESS_COOKIE_NAME, value, date);
    return n < 0 ? 0 : (size_t)n;
}

/* Rewrites our Set-Cookie after a new id or expiry (same length). */
static int reissue(sp_session *s) {
    char v[SETCOOKIE_BUF];
    if (s->res->head_sent)
        return -EALREADY;
    if (make_setcookie(s->cfg, s, v) != SETCOOKIE_LEN)
        return -ERANGE; /* an expiry past year 9999 */
    /* The field's bytes are the response's own header store. */
    memcpy((char *)s->res->fields[s->field].value, v, SETCOOKIE_LEN);
    return 0;
}

/* The first of the request's session cookies that verifies: 1 with id and
 * expiry, 0 if none does (absent, forged, truncated, expired). */
static int read_cookie(const sess_cfg *c, const sp_req *req, int64_t now, char *id,
                       int64_t *expiry) {
    static const char name[] = SESS_COOKIE_NAME "=";
    sp_str hn, hv;
    for (size_t i = 0; sp_req_header_at(req, i, &hn, &hv); i++) {
        if (hn.len != 6 || strncasecmp(hn.ptr, "cookie", 6) != 0)
            continue;
        const char *p = hv.ptr, *end = hv.ptr + hv.len;
        while (p < end) {
            while (p < end && (*p == ' ' || *p == ';' || *p == '\t'))
                p++;
            const char *e = memchr(p, ';', (size_t)(end - p));
            if (!e)
                e = end;
            size_t n = (size_t)(e - p);
            while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
                n--;
            if (n > sizeof name - 1 && !memcmp(p, name, sizeof name - 1) &&
                sess_cookie_verify(c->key, c->key_len, p + sizeof name - 1, n - (sizeof name - 1),
                                   now, id, expiry) == 0)
                return 1;
            p = e;
        }
    }
    return 0;
}

sp_session *sp_session_of(sp_req *req, sp_res *res) {
    sess_cfg *c = req ? sess_cfg_of(req->srv) : NULL;
    if (!c) {
        errno = ENXIO;
        return NULL;
    }
    if (res->head_sent) {
        errno = EALREADY;
        return NULL;
    }
    sp_session *s = req_deferred(req, sess_release);
    if (s)
        return s; /* this request's, made by an earlier call */
    if (!(s = sess_take(c, req, res))) {
        errno = ENOMEM;
        return NULL;
    }
    sess_data_clear(&s->data);
    s->field = SIZE_MAX;
    int64_t now = (int64_t)time(NULL);
    int rc;
    if (read_cookie(c, req, now, s->id, &s->expiry)) {
        char *blob;
        size_t len;
        rc = sess_store_load(c, s->id, now, &blob, &len);
        if (rc == 0) {
            if (sess_data_decode(&s->data, blob, len) < 0)
                sess_data_clear(&s->data); /* damaged in the store: empty */
            free(blob);
        } else if (rc != -ENOENT) {
            errno = -rc;
            return NULL;
        }
    } else {
        if ((rc = sess_id_new(s->id)) < 0) {
            errno = -rc;
            return NULL;
        }
        s->expiry = now + c->ttl;
    }
    char v[SETCOOKIE_BUF];
    if (make_setcookie(c, s, v) != SETCOOKIE_LEN) {
        errno = ERANGE;
        return NULL;
    }
    if ((rc = sp_res_header(res, "Set-Cookie", v)) < 0) {
        errno = -rc;
        return NULL;
    }
    s->field = res->nfields - 1;
    return s;
}

void sess_spare_free(sp_session *s) {
    while (s) {
        sp_session *next = s->next;
        sess_data_free(&s->data);
        free(s);
        s = next;
    }
}

const char *sp_session_id(const sp_session *s) {
    return s->id;
}

const char *sp_session_get(const sp_session *s, const char *key) {
    return sess_data_get(&s->data, key);
}

/* Writes the session through to the store (an empty one is deleted). */
static int persist(sp_session *s) {
    if (!s->data.n)
        return sess_store_del(s->cfg, s->id);
    char *blob;
    size_t len;
    int rc = sess_data_encode(&s->data, &blob, &len);
    if (rc == 0)
        rc = sess_store_save(s->cfg, s->id, blob, len, s->expiry, (int64_t)time(NULL));
    free(blob);
    return rc;
}

int sp_session_set(sp_session *s, const char *key, const char *value) {
    if (!key || !value)
        return -EINVAL;
    int rc = sess_data_set(&s->data, key, value);
    return rc < 0 ? rc : persist(s);
}

int sp_session_del(sp_session *s, const char *key) {
    if (!key)
        return -EINVAL;
    return sess_data_del(&s->data, key) ? persist(s) : 0;
}

int sp_session_clear(sp_session *s) {
    if (s->res->head_sent)
        return -EALREADY; /* the new cookie could not be sent */
    if (s->data.n) {
        sess_data_clear(&s->data);
        int rc = sess_store_del(s->cfg, s->id);
        if (rc < 0)
            return rc;
    }
    /* A new id too: whoever knew the old cookie does not share the new. */
    int rc = sess_id_new(s->id);
    if (rc < 0)
        return rc;
    s->expiry = (int64_t)time(NULL) + s->cfg->ttl;
    return reissue(s);
}

int sp_session_set_ttl(sp_session *s, int64_t seconds) {
    if (seconds < 1 || seconds > 100LL * 365 * 86400)
        return -EINVAL;
    if (s->res->head_sent)
        return -EALREADY;
    int64_t old = s->expiry;
    s->expiry = (int64_t)time(NULL) + seconds;
    int rc = s->data.n ? persist(s) : 0;
    if (rc < 0) {
        s->expiry = old;
        return rc;
    }
    return reissue(s);
}

int64_t sp_session_expiry(const sp_session *s) {
    return s->expiry;
}
