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

struct sp_session {
    sess_cfg *cfg;
    sp_res *res;      /* the response it is issued on */
    size_t field;     /* its Set-Cookie: res->fields[field]; SIZE_MAX until added */
    int err;          /* registered, but its Set-Cookie could not be added: errno */
    int secure;       /* its cookie carries Secure */
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

/* A session object for this request, not yet registered with it. */
static sp_session *sess_take(sess_cfg *c, sp_res *res) {
    sp_session *s = c->spare;
    if (s) {
        c->spare = s->next;
        c->nspare--;
    } else if (!(s = calloc(1, sizeof *s))) {
        return NULL;
    }
    s->cfg = c;
    s->res = res;
    s->field = SIZE_MAX;
    s->err = 0;
    sess_data_clear(&s->data);
    return s;
}

/* Whether the calls that rewrite the cookie may: the object is whole (a
 * half-made one is never handed out; this is the guard behind that) and
 * the head is not out. 0 or -errno. */
static int writable(const sp_session *s) {
    if (s->res->head_sent)
        return -EALREADY;
    const http_field *f = s->field < s->res->nfields ? &s->res->fields[s->field] : NULL;
    /* Not ours any more if the head was cleared (an error answer). */
    if (s->err || !f || f->name_len != 10 || memcmp(f->name, "Set-Cookie", 10) != 0)
        return -EINVAL;
    return 0;
}

/* Rewrites our Set-Cookie after a new id or expiry (same length). */
static int reissue(sp_session *s) {
    char v[SESS_SETCOOKIE_BUF];
    int rc = writable(s);
    if (rc < 0)
        return rc;
    http_field *f = &s->res->fields[s->field];
    if (sess_setcookie_format(s->cfg->key, s->cfg->key_len, s->id, s->expiry, s->secure, v) !=
        f->value_len)
        return -ERANGE; /* an expiry past year 9999 */
    /* The field's bytes are the response's own header store. */
    memcpy((char *)f->value, v, f->value_len);
    return 0;
}

/* How many of a request's session cookies are tried against the store: a
 * client sending more gets a fresh session rather than a store call each. */
#define SESS_MAX_CANDIDATES 4

/* The visitor's session: the first session cookie that verifies (signed
 * with our key, unexpired) and whose id the store holds; others are
 * ignored. An id the store does not know (never saved, expired there,
 * cleared, or handed to the visitor by someone else: fixation) is never
 * taken on: the visitor gets a fresh id. 0 with s filled, or -errno of
 * the store. */
static int find_session(sess_cfg *c, const sp_req *req, int64_t now, sp_session *s) {
    sp_str hn, hv;
    int tried = 0;
    for (size_t i = 0; tried < SESS_MAX_CANDIDATES && sp_req_header_at(req, i, &hn, &hv); i++) {
        if (hn.len != 6 || strncasecmp(hn.ptr, "cookie", 6) != 0)
            continue;
        const char *p = hv.ptr, *v;
        size_t n;
        while (tried < SESS_MAX_CANDIDATES && sess_cookie_next(&p, hv.ptr + hv.len, &v, &n)) {
            if (sess_cookie_verify(c->key, c->key_len, v, n, now, s->id, &s->expiry) < 0)
                continue;
            tried++;
            char *blob;
            size_t len;
            int rc = sess_store_load(c, s->id, now, &blob, &len);
            if (rc == -ENOENT)
                continue;
            if (rc < 0)
                return rc;
            if (sess_data_decode(&s->data, blob, len) < 0)
                sess_data_clear(&s->data); /* damaged in the store: empty */
            free(blob);
            return 0;
        }
    }
    s->expiry = now + c->ttl;
    return sess_id_new(s->id);
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
    if (s) {
        if (s->err) {
            errno = s->err; /* the first call failed: so does every later one */
            return NULL;
        }
        return s; /* this request's, made by an earlier call */
    }
    if (!(s = sess_take(c, res))) {
        errno = ENOMEM;
        return NULL;
    }
    s->secure = c->cookie_secure || strcmp(sp_req_scheme(req), "https") == 0;
    int rc = find_session(c, req, (int64_t)time(NULL), s);
    char v[SESS_SETCOOKIE_BUF];
    if (rc == 0 && sess_setcookie_format(c->key, c->key_len, s->id, s->expiry, s->secure, v) !=
                       SESS_SETCOOKIE_LEN(s->secure))
        rc = -ERANGE;
    if (rc == 0 && req_defer(req, sess_release, s) < 0)
        rc = -ENOSPC;
    if (rc < 0) {
        sess_release(s); /* nothing of it is left with the request: a retry starts over */
        errno = -rc;
        return NULL;
    }
    /* Registered now, so the request's end releases it; if the cookie
     * cannot be added it stays refused (s->err), never handed out half. */
    if ((rc = sp_res_header(res, "Set-Cookie", v)) < 0) {
        s->err = -rc;
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

const char *sp_session_key(const sp_session *s, size_t i) {
    return i < s->data.n ? s->data.kv[i].key : NULL;
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
    int rc = writable(s); /* the new cookie must be able to go out */
    if (rc < 0)
        return rc;
    if (s->data.n) {
        sess_data_clear(&s->data);
        if ((rc = sess_store_del(s->cfg, s->id)) < 0)
            return rc;
    }
    /* A new id too: whoever knew the old cookie does not share the new. */
    if ((rc = sess_id_new(s->id)) < 0)
        return rc;
    s->expiry = (int64_t)time(NULL) + s->cfg->ttl;
    return reissue(s);
}

int sp_session_regenerate(sp_session *s) {
    int rc = writable(s);
    if (rc < 0)
        return rc;
    char old[SESS_ID_HEX + 1];
    memcpy(old, s->id, sizeof old);
    if ((rc = sess_id_new(s->id)) < 0)
        return rc;
    /* The data under the new id first, then the old id forgotten: a failure
     * on the way leaves the visitor on the old id with the data intact. */
    if (s->data.n && (rc = persist(s)) == 0 && (rc = sess_store_del(s->cfg, old)) < 0)
        sess_store_del(s->cfg, s->id);
    if (!s->data.n)
        rc = sess_store_del(s->cfg, old);
    if (rc < 0) {
        memcpy(s->id, old, sizeof old);
        return rc;
    }
    return reissue(s);
}

int sp_session_set_ttl(sp_session *s, int64_t seconds) {
    if (seconds < 1 || seconds > 100LL * 365 * 86400)
        return -EINVAL;
    int rc = writable(s);
    if (rc < 0)
        return rc;
    int64_t old = s->expiry;
    s->expiry = (int64_t)time(NULL) + seconds;
    rc = s->data.n ? persist(s) : 0;
    if (rc < 0) {
        s->expiry = old;
        return rc;
    }
    return reissue(s);
}

int64_t sp_session_expiry(const sp_session *s) {
    return s->expiry;
}
