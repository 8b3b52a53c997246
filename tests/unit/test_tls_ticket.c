/* test_tls_ticket.c — session-ticket keys (tls_ticket.c): HKDF-SHA256 of
 * the master's secret with the epoch, the same in every worker; each epoch
 * its own key; a ticket of this or the previous epoch is found, an older
 * one is not. */
#include "unit.h"

#include "net/tls_ctx.h"

static unsigned char secret[32];

static void init_secret(void) {
    for (int i = 0; i < 32; i++)
        secret[i] = (unsigned char)i;
}

TEST(derive_known_answer) {
    /* Python: HKDF(salt="", ikm=bytes(range(32)), info=b"spindle ticket \0" + (1).to_bytes(8)) */
    static const unsigned char want[16] = {0x02, 0x0e, 0x50, 0xb4, 0x92, 0x4f, 0x4e, 0x4b,
                                           0xa7, 0x1f, 0xf9, 0x42, 0xb9, 0xee, 0x3d, 0x9f};
    init_secret();
    tls_ticket_key k;
    CHECK_EQ(tls_ticket_derive(secret, sizeof secret, 1, &k), 0);
    CHECK(memcmp(k.name, want, 16) == 0);
}

TEST(derive_is_deterministic_and_per_epoch) {
    init_secret();
    tls_ticket_key a, b, c;
    CHECK_EQ(tls_ticket_derive(secret, sizeof secret, 1000, &a), 0);
    CHECK_EQ(tls_ticket_derive(secret, sizeof secret, 1000, &b), 0);
    CHECK(memcmp(&a, &b, sizeof a) == 0); /* two workers agree */
    CHECK_EQ(tls_ticket_derive(secret, sizeof secret, 1001, &c), 0);
    CHECK(memcmp(a.name, c.name, 16) != 0);
    CHECK(memcmp(a.aes, c.aes, 32) != 0);
    CHECK(memcmp(a.hmac, c.hmac, 32) != 0);
    CHECK(memcmp(a.aes, a.hmac, 32) != 0);
    secret[0] ^= 1; /* another master's secret: other keys */
    CHECK_EQ(tls_ticket_derive(secret, sizeof secret, 1000, &c), 0);
    CHECK(memcmp(a.name, c.name, 16) != 0);
}

TEST(find_accepts_this_and_the_previous_epoch) {
    init_secret();
    tls_ticket_key e9, e10, e11;
    CHECK_EQ(tls_ticket_derive(secret, sizeof secret, 9, &e9), 0);
    CHECK_EQ(tls_ticket_derive(secret, sizeof secret, 10, &e10), 0);
    CHECK_EQ(tls_ticket_derive(secret, sizeof secret, 11, &e11), 0);
    /* now is epoch 11 */
    CHECK_EQ(tls_ticket_find(&e11, &e10, e11.name), 1);
    CHECK_EQ(tls_ticket_find(&e11, &e10, e10.name), 2); /* resumed, renewed */
    CHECK_EQ(tls_ticket_find(&e11, &e10, e9.name), 0);  /* too old: full handshake */
    CHECK_EQ(tls_ticket_find(NULL, NULL, e11.name), 0);
}

TEST(secret_is_made_once) {
    CHECK_EQ(tls_ticket_secret_init(), 0);
    CHECK_EQ(tls_ticket_secret_init(), 0); /* a reload keeps it */
}
