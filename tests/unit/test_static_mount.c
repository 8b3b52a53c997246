/* test_static_mount.c — a server's static mounts (sp_static, the fallback
 * and exclusive mounts, a refused one) are freed with the server: its root
 * fds close, and under ASan LeakSanitizer finds nothing left (the runner's
 * children _exit, so the check is asked for here). */
#include "server/static/static.h"

#include "unit.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define LEAKS() __lsan_do_recoverable_leak_check()
#else
#define LEAKS() 0
#endif

static int open_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != NULL);
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static int fallback(sp_req *req, sp_res *res, void *ud) {
    (void)req;
    (void)res;
    (void)ud;
    return 0;
}

static sp_server *new_server(void) {
    sp_server_options o;
    sp_server_options_init(&o);
    sp_server *s = sp_server_new(&o);
    CHECK(s != NULL);
    return s;
}

TEST(mounts_are_freed_with_the_server) {
    int before = open_fds();
    sp_server *s = new_server();
    CHECK_EQ(sp_static(s, "/a", "/tmp"), 0);
    CHECK_EQ(sp_static(s, "/b/", "/tmp"), 0);
    CHECK_EQ(static_mount_exclusive(s, "/c", "/tmp"), 0);
    CHECK_EQ(static_mount_fallback(s, "/", "/tmp", fallback, NULL), 0);
    CHECK_EQ(sp_static(s, "/d", "/nonexistent-spindle-dir"), -ENOENT);
    CHECK_EQ(open_fds(), before + 4);
    sp_server_free(s);
    CHECK_EQ(open_fds(), before);
    CHECK_EQ(LEAKS(), 0);
}

TEST(a_refused_mount_alone_leaves_nothing) {
    int before = open_fds();
    sp_server *s = new_server();
    CHECK_EQ(sp_static(s, "/d", "/nonexistent-spindle-dir"), -ENOENT);
    CHECK_EQ(sp_static(s, "no-slash", "/tmp"), -EINVAL);
    sp_server_free(s);
    CHECK_EQ(open_fds(), before);
    CHECK_EQ(LEAKS(), 0);
}

TEST(two_servers_keep_their_own_mounts) {
    sp_server *a = new_server(), *b = new_server();
    CHECK_EQ(sp_static(a, "/x", "/tmp"), 0);
    CHECK_EQ(sp_static(b, "/x", "/tmp"), 0);
    int both = open_fds();
    sp_server_free(a);
    CHECK_EQ(open_fds(), both - 1);
    sp_server_free(b);
    CHECK_EQ(open_fds(), both - 2);
    CHECK_EQ(LEAKS(), 0);
}
