/* session_data.c — the key/value array of one session and its stored form.
 * Sessions hold a handful of keys, so lookups are linear. */
#include "server/session/session_data.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static sess_kv *find(const sess_data *d, const char *key) {
    for (size_t i = 0; i < d->n; i++)
        if (!strcmp(d->kv[i].key, key))
            return &d->kv[i];
    return NULL;
}

const char *sess_data_get(const sess_data *d, const char *key) {
    sess_kv *kv = find(d, key);
    return kv ? kv->val : NULL;
}

int sess_data_set(sess_data *d, const char *key, const char *val) {
    size_t kl = strlen(key) + 1, vl = strlen(val) + 1;
    sess_kv *kv = find(d, key);
    size_t bytes = d->bytes + vl + (kv ? 0 : kl) - (kv ? strlen(kv->val) + 1 : 0);
    if (bytes > SESS_DATA_MAX)
        return -E2BIG;
    char *v = malloc(vl);
    if (!v)
        return -ENOMEM;
    memcpy(v, val, vl);
    if (kv) {
        free(kv->val);
        kv->val = v;
        d->bytes = bytes;
        return 0;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 8;
        sess_kv *a = realloc(d->kv, cap * sizeof *a);
        if (!a) {
            free(v);
            return -ENOMEM;
        }
        d->kv = a;
        d->cap = cap;
    }
    char *k = malloc(kl);
    if (!k) {
        free(v);
        return -ENOMEM;
    }
    memcpy(k, key, kl);
    d->kv[d->n++] = (sess_kv){k, v};
    d->bytes = bytes;
    return 0;
}

int sess_data_del(sess_data *d, const char *key) {
    sess_kv *kv = find(d, key);
    if (!kv)
        return 0;
    d->bytes -= strlen(kv->key) + strlen(kv->val) + 2;
    free(kv->key);
    free(kv->val);
    *kv = d->kv[--d->n];
    return 1;
}

void sess_data_clear(sess_data *d) {
    for (size_t i = 0; i < d->n; i++) {
        free(d->kv[i].key);
        free(d->kv[i].val);
    }
    d->n = 0;
    d->bytes = 0;
}

void sess_data_free(sess_data *d) {
    sess_data_clear(d);
    free(d->kv);
    d->kv = NULL;
    d->cap = 0;
}

int sess_data_encode(const sess_data *d, char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    if (!d->n)
        return 0;
    char *b = malloc(d->bytes), *p = b;
    if (!b)
        return -ENOMEM;
    for (size_t i = 0; i < d->n; i++) {
        size_t kl = strlen(d->kv[i].key) + 1, vl = strlen(d->kv[i].val) + 1;
        memcpy(p, d->kv[i].key, kl);
        memcpy(p + kl, d->kv[i].val, vl);
        p += kl + vl;
    }
    *out = b;
    *len = d->bytes;
    return 0;
}

int sess_data_decode(sess_data *d, const char *blob, size_t len) {
    sess_data_clear(d);
    if (len > SESS_DATA_MAX || (len && blob[len - 1] != '\0'))
        return -EBADMSG;
    const char *p = blob, *end = blob + len;
    while (p < end) {
        const char *k = p;
        p += strlen(p) + 1;
        if (p >= end) {
            sess_data_clear(d);
            return -EBADMSG;
        }
        const char *v = p;
        p += strlen(p) + 1;
        int rc = sess_data_set(d, k, v);
        if (rc < 0) {
            sess_data_clear(d);
            return rc == -E2BIG ? -EBADMSG : rc;
        }
    }
    return 0;
}
