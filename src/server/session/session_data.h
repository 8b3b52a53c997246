/* session_data.h — a session's contents: string keys and values in a small
 * array, and their stored form (the strings back to back, each with its
 * NUL), which every store keeps as one opaque blob. */
#ifndef SPINDLE_SESSION_DATA_H
#define SPINDLE_SESSION_DATA_H

#include <stddef.h>

#define SESS_DATA_MAX 65536 /* encoded bytes per session (-E2BIG beyond) */

typedef struct sess_kv {
    char *key, *val;
} sess_kv;

typedef struct sess_data {
    sess_kv *kv;
    size_t n, cap;
    size_t bytes; /* encoded size */
} sess_data;

/* The value of key, or NULL. Valid until the key is changed. */
const char *sess_data_get(const sess_data *d, const char *key);
/* Sets key to val (both copied). 0, -ENOMEM, -E2BIG (over SESS_DATA_MAX). */
int sess_data_set(sess_data *d, const char *key, const char *val);
/* Removes key: 1 if it was there, 0 if not. */
int sess_data_del(sess_data *d, const char *key);
/* Removes every key; keeps the array for reuse. */
void sess_data_clear(sess_data *d);
/* Frees everything; d is empty and reusable. */
void sess_data_free(sess_data *d);
/* The stored form in a new buffer (*out, freed by the caller; NULL when
 * empty). 0 or -ENOMEM. */
int sess_data_encode(const sess_data *d, char **out, size_t *len);
/* Replaces d's contents with a stored form. 0, -EBADMSG (not a whole
 * number of NUL-terminated pairs), -ENOMEM. */
int sess_data_decode(sess_data *d, const char *blob, size_t len);

#endif
