/* test_session_store.c — a session's key/value data and its stored form
 * (round trip, damaged blobs, the size limit), and the memory store (load,
 * save, delete, expiry, growth to many sessions). */
#include "server/session/session_cookie.h"
#include "server/session/session_data.h"
#include "server/session/session_store.h"
#include "unit.h"

#include <errno.h>
#include <stdlib.h>

TEST(data_set_get_del_round_trip) {
    sess_data d = {0};
    CHECK_EQ(sess_data_set(&d, "a", "1"), 0);
    CHECK_EQ(sess_data_set(&d, "b", ""), 0);
    CHECK_EQ(sess_data_set(&d, "a", "22"), 0);
    CHECK_STR(sess_data_get(&d, "a"), "22");
    CHECK_STR(sess_data_get(&d, "b"), "");
    CHECK(sess_data_get(&d, "c") == NULL);
    char *blob;
    size_t len;
    CHECK_EQ(sess_data_encode(&d, &blob, &len), 0);
    CHECK_EQ(len, d.bytes);
    sess_data e = {0};
    CHECK_EQ(sess_data_decode(&e, blob, len), 0);
    CHECK_EQ(e.n, 2);
    CHECK_STR(sess_data_get(&e, "a"), "22");
    CHECK_EQ(sess_data_del(&e, "a"), 1);
    CHECK_EQ(sess_data_del(&e, "a"), 0);
    CHECK(sess_data_get(&e, "a") == NULL);
    CHECK_EQ(e.bytes, 3);
    free(blob);
    sess_data_free(&d);
    sess_data_free(&e);
}

TEST(data_damaged_blob_refused) {
    sess_data d = {0};
    CHECK_EQ(sess_data_decode(&d, "k\0v", 3), -EBADMSG);      /* no final NUL */
    CHECK_EQ(sess_data_decode(&d, "k\0v\0x\0", 6), -EBADMSG); /* a key without value */
    CHECK_EQ(sess_data_decode(&d, "", 0), 0);
    CHECK_EQ(d.n, 0);
    sess_data_free(&d);
}

TEST(data_size_limit) {
    sess_data d = {0};
    char *big = malloc(SESS_DATA_MAX);
    memset(big, 'x', SESS_DATA_MAX - 1);
    big[SESS_DATA_MAX - 1] = '\0';
    CHECK_EQ(sess_data_set(&d, "k", big), -E2BIG);
    big[SESS_DATA_MAX - 10] = '\0';
    CHECK_EQ(sess_data_set(&d, "k", big), 0);
    CHECK_EQ(sess_data_set(&d, "k2", big), -E2BIG);
    CHECK_EQ(d.n, 1);
    free(big);
    sess_data_free(&d);
}

static sess_store mem(void) {
    sess_store st = {.ops = &sess_memory_ops};
    CHECK_EQ(st.ops->open(&st), 0);
    CHECK_EQ(st.ops->blocking, 0);
    return st;
}

TEST(memory_store_load_save_delete) {
    sess_store st = mem();
    char id[SESS_ID_HEX + 1], other[SESS_ID_HEX + 1];
    CHECK_EQ(sess_id_new(id), 0);
    CHECK_EQ(sess_id_new(other), 0);
    char *blob;
    size_t len;
    CHECK_EQ(st.ops->load(&st, id, 100, &blob, &len), -ENOENT);
    CHECK_EQ(st.ops->save(&st, id, "k\0v", 4, 200, 100), 0);
    CHECK_EQ(st.ops->load(&st, id, 100, &blob, &len), 0);
    CHECK_EQ(len, 4);
    CHECK(memcmp(blob, "k\0v", 4) == 0);
    free(blob);
    CHECK_EQ(st.ops->load(&st, other, 100, &blob, &len), -ENOENT); /* keyed by id only */
    CHECK_EQ(st.ops->save(&st, id, "k\0w", 4, 200, 100), 0);       /* replaced */
    CHECK_EQ(st.ops->load(&st, id, 100, &blob, &len), 0);
    CHECK(memcmp(blob, "k\0w", 4) == 0);
    free(blob);
    CHECK_EQ(st.ops->del(&st, id), 0);
    CHECK_EQ(st.ops->load(&st, id, 100, &blob, &len), -ENOENT);
    CHECK_EQ(st.ops->del(&st, id), 0);
    st.ops->close(&st);
}

TEST(memory_store_expiry) {
    sess_store st = mem();
    char id[SESS_ID_HEX + 1];
    CHECK_EQ(sess_id_new(id), 0);
    char *blob;
    size_t len;
    CHECK_EQ(st.ops->save(&st, id, "k\0v", 4, 200, 100), 0);
    CHECK_EQ(st.ops->load(&st, id, 199, &blob, &len), 0);
    free(blob);
    CHECK_EQ(st.ops->load(&st, id, 200, &blob, &len), -ENOENT);
    st.ops->close(&st);
}

TEST(memory_store_many_sessions_and_sweep) {
    sess_store st = mem();
    enum { N = 20000 };
    static char ids[N][SESS_ID_HEX + 1];
    for (int i = 0; i < N; i++) {
        CHECK_EQ(sess_id_new(ids[i]), 0);
        /* Half expire at 150: the sweep on later saves drops them. */
        CHECK_EQ(st.ops->save(&st, ids[i], "k\0v", 4, i % 2 ? 1000 : 150, 100), 0);
    }
    char *blob;
    size_t len;
    for (int i = 0; i < N; i++) {
        CHECK_EQ(st.ops->load(&st, ids[i], 120, &blob, &len), 0);
        free(blob);
    }
    for (int i = 0; i < N; i++) {
        int rc = st.ops->load(&st, ids[i], 160, &blob, &len);
        CHECK_EQ(rc, i % 2 ? 0 : -ENOENT);
        if (rc == 0)
            free(blob);
    }
    st.ops->close(&st);
}
