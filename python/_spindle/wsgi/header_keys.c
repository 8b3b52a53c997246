/* header_keys.c — the environ key of a request header name ("User-Agent" ->
 * "HTTP_USER_AGENT") without letting names a client makes up pin memory.
 * The common names have prebuilt keys (a fixed set, interned once); other
 * names hit a small direct-mapped cache of strong references or get a fresh
 * str. In front of both, a direct-mapped cache keyed by the name exactly as
 * sent (clients repeat their own spelling), found with one short hash and
 * compare. Nothing per request is interned: on CPython 3.12 before
 * gh-113993 interned strings are immortal, so interning each new name grew a
 * worker without bound. */
#include "common/binding.h"

#include "http/http_chars.h"

#include <string.h>

#define COMMON_SLOTS 128 /* a power of two, over twice the names below */
#define RECENT_SLOTS 512
#define SENT_SLOTS   256 /* a power of two */
#define KEY_NAME_MAX 64

typedef struct key_slot {
    uint8_t len;
    char name[KEY_NAME_MAX]; /* lower-case field name */
    PyObject *key;           /* "HTTP_NAME" */
} key_slot;

/* Request headers browsers, clients and proxies send; Content-Type and
 * Content-Length never come here (CONTENT_TYPE, CONTENT_LENGTH). */
/* clang-format off */
static const char *const common_names[] = {
    "host", "user-agent", "accept", "accept-encoding", "accept-language", "accept-charset",
    "connection", "cookie", "referer", "origin", "authorization", "cache-control", "pragma",
    "if-modified-since", "if-none-match", "if-match", "if-unmodified-since", "if-range", "range",
    "upgrade-insecure-requests", "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host",
    "x-forwarded-port", "x-real-ip", "x-requested-with", "x-request-id", "x-csrftoken",
    "forwarded", "via", "dnt", "te", "expect", "upgrade", "keep-alive", "transfer-encoding",
    "content-encoding", "sec-fetch-site", "sec-fetch-mode", "sec-fetch-dest", "sec-fetch-user",
    "sec-ch-ua", "sec-ch-ua-mobile", "sec-ch-ua-platform", "sec-websocket-key",
    "sec-websocket-version", "priority", "purpose",
};
/* clang-format on */

static key_slot common[COMMON_SLOTS]; /* filled once per process, then read only */
static key_slot recent[RECENT_SLOTS]; /* the last uncommon name of each hash */
/* The last name of each hash as sent (any case), never one with '_'. */
static key_slot sent[SENT_SLOTS];
static size_t ncommon;

static uint32_t fnv1a(const char *lower, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)lower[i]) * 16777619u;
    return h;
}

/* A new "HTTP_" + upper-case name, '-' as '_'. Field names are tokens:
 * ASCII, so the str is compact ASCII. */
static PyObject *make_key(const char *name, size_t n) {
    PyObject *key = PyUnicode_New((Py_ssize_t)(n + 5), 127);
    if (!key)
        return NULL;
    char *k = (char *)PyUnicode_DATA(key);
    memcpy(k, "HTTP_", 5);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        k[5 + i] = c == '-' ? '_' : (char)(c >= 'a' && c <= 'z' ? c - 32 : c);
    }
    return key;
}

static key_slot *common_find(const char *lower, size_t n, uint32_t hash) {
    for (uint32_t i = hash & (COMMON_SLOTS - 1);; i = (i + 1) & (COMMON_SLOTS - 1)) {
        key_slot *s = &common[i];
        if (!s->key || (s->len == n && memcmp(s->name, lower, n) == 0))
            return s;
    }
}

int header_keys_init(void) {
    if (ncommon)
        return 0; /* once per process */
    for (size_t i = 0; i < sizeof common_names / sizeof common_names[0]; i++) {
        const char *name = common_names[i];
        size_t n = strlen(name);
        key_slot *s = common_find(name, n, fnv1a(name, n));
        if (s->key)
            continue;
        PyObject *key = make_key(name, n);
        if (!key)
            return -1;
        /* A fixed set: interning it costs nothing per request, and the
         * app's literals ("HTTP_HOST") then find the key by identity. */
        PyUnicode_InternInPlace(&key);
        s->len = (uint8_t)n;
        memcpy(s->name, name, n);
        s->key = key;
        ncommon++;
    }
    return 0;
}

/* A hash of the name as sent from its length and its first and last
 * octets (up to 8 each): a few instructions, where fnv1a takes a few per
 * octet. */
static uint32_t sent_hash(const char *s, size_t n) {
    uint64_t a = 0, b = 0;
    if (n >= 8) {
        memcpy(&a, s, 8);
        memcpy(&b, s + n - 8, 8);
    } else if (n >= 4) {
        uint32_t x, y;
        memcpy(&x, s, 4);
        memcpy(&y, s + n - 4, 4);
        a = x;
        b = y;
    } else {
        for (size_t i = 0; i < n; i++)
            a = a << 8 | (unsigned char)s[i];
    }
    uint64_t h = (a ^ n) * 0x9e3779b97f4a7c15u ^ b * 0xc2b2ae3d27d4eb4fu;
    return (uint32_t)(h >> 40);
}

static PyObject *key_of(const char *name, size_t n, int *skip);

PyObject *header_key(const char *name, size_t n, int *skip) {
    if (n > KEY_NAME_MAX)
        return key_of(name, n, skip);
    key_slot *s = &sent[sent_hash(name, n) & (SENT_SLOTS - 1)];
    if (s->key && s->len == n && memcmp(s->name, name, n) == 0) {
        *skip = 0;
        Py_INCREF(s->key);
        return s->key;
    }
    PyObject *key = key_of(name, n, skip);
    if (key) { /* a name with '_' returns NULL: never cached */
        Py_INCREF(key);
        Py_XSETREF(s->key, key);
        s->len = (uint8_t)n;
        memcpy(s->name, name, n);
    }
    return key;
}

/* The key by the lower-case name: the common table, else the recent cache. */
static PyObject *key_of(const char *name, size_t n, int *skip) {
    *skip = 0;
    char lower[KEY_NAME_MAX];
    for (size_t i = 0; i < n; i++) {
        if (name[i] == '_') {
            *skip = 1;
            return NULL;
        }
        if (i < KEY_NAME_MAX)
            lower[i] = (char)http_lower((unsigned char)name[i]);
    }
    if (n > KEY_NAME_MAX)
        return make_key(name, n);
    uint32_t hash = fnv1a(lower, n);
    key_slot *slot = common_find(lower, n, hash);
    if (!slot->key) {
        slot = &recent[hash % RECENT_SLOTS];
        if (!(slot->key && slot->len == n && memcmp(slot->name, lower, n) == 0)) {
            /* A slot holds the last name that hashed to it: made-up names
             * replace each other, never add up. */
            PyObject *key = make_key(name, n);
            if (!key)
                return NULL;
            Py_XSETREF(slot->key, key);
            slot->len = (uint8_t)n;
            memcpy(slot->name, lower, n);
        }
    }
    Py_INCREF(slot->key);
    return slot->key;
}

PyObject *py_header_key_cache(PyObject *self, PyObject *unused) {
    size_t used = 0, sent_used = 0;
    for (size_t i = 0; i < RECENT_SLOTS; i++)
        used += recent[i].key != NULL;
    for (size_t i = 0; i < SENT_SLOTS; i++)
        sent_used += sent[i].key != NULL;
    return Py_BuildValue("{snsnsnsnsn}", "common", (Py_ssize_t)ncommon, "recent", (Py_ssize_t)used,
                         "recent_slots", (Py_ssize_t)RECENT_SLOTS, "sent", (Py_ssize_t)sent_used,
                         "sent_slots", (Py_ssize_t)SENT_SLOTS);
}
