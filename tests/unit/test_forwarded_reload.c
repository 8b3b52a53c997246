/* test_forwarded_reload.c — server_set_options (a HUP reload) with a bad
 * --forwarded-allow-ips or --forwarded-header is refused as a whole: the
 * server keeps the trust list it had, not the half parsed before the error. */
#include "server/server.h"

#include "unit.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sys/socket.h>

static int trusts(const sp_server *s, const char *ip) {
    uint8_t a[16] = {0};
    CHECK(inet_pton(AF_INET, ip, a) == 1);
    return fwd_peer_trusted(&s->fwd, AF_INET, a);
}

TEST(refused_list_keeps_the_old_one) {
    sp_server_options o;
    sp_server_options_init(&o);
    o.forwarded_allow_ips = "10.0.0.1";
    sp_server *s = sp_server_new(&o);
    CHECK(s != NULL);
    CHECK_EQ(trusts(s, "10.0.0.1"), 1);
    o.forwarded_allow_ips = "192.0.2.1, *, bogus";
    CHECK_EQ(server_set_options(s, &o), -EINVAL);
    CHECK_EQ(trusts(s, "10.0.0.1"), 1);
    CHECK_EQ(trusts(s, "192.0.2.1"), 0);
    CHECK_EQ(s->fwd.trust_all, 0);
    CHECK_EQ(s->fwd.ntrusted, 1);
    /* A good list replaces it whole. */
    o.forwarded_allow_ips = "192.0.2.1";
    CHECK_EQ(server_set_options(s, &o), 0);
    CHECK_EQ(trusts(s, "10.0.0.1"), 0);
    CHECK_EQ(trusts(s, "192.0.2.1"), 1);
    sp_server_free(s);
}

TEST(refused_header_keeps_the_old_settings) {
    sp_server_options o;
    sp_server_options_init(&o);
    o.forwarded_allow_ips = "10.0.0.1";
    o.forwarded_header = SP_FORWARDED_FORWARDED;
    sp_server *s = sp_server_new(&o);
    CHECK(s != NULL);
    CHECK_EQ(s->fwd.header, FWD_HDR_FORWARDED);
    o.forwarded_allow_ips = "192.0.2.1";
    o.forwarded_header = 7;
    CHECK_EQ(server_set_options(s, &o), -EINVAL);
    CHECK_EQ(s->fwd.header, FWD_HDR_FORWARDED);
    CHECK_EQ(trusts(s, "10.0.0.1"), 1);
    CHECK_EQ(trusts(s, "192.0.2.1"), 0);
    o.forwarded_header = 7;
    errno = 0;
    CHECK(sp_server_new(&o) == NULL);
    CHECK_EQ(errno, EINVAL);
    sp_server_free(s);
}
