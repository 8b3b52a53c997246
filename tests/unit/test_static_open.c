/* test_static_open.c — opening beneath a root: both the openat2 path and
 * the component walk used where the kernel lacks openat2, against symlinks
 * inside and outside the root, "..", absolute links and special files. */
#include "server/static/static_open.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/spindle-open-XXXXXX";

static void mk(const char *rel, const char *text) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, text, strlen(text)), (long long)strlen(text));
    close(fd);
}

static void ln(const char *target, const char *rel) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    CHECK_EQ(symlink(target, p), 0);
}

static int setup(void) {
    CHECK(mkdtemp(dir) != NULL);
    char p[256];
    snprintf(p, sizeof p, "%s/sub", dir);
    CHECK_EQ(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/root", dir);
    CHECK_EQ(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/root/d", dir);
    CHECK_EQ(mkdir(p, 0755), 0);
    mk("secret", "outside");
    mk("root/a.txt", "hello");
    mk("root/d/b.txt", "nested");
    ln("a.txt", "root/link-in");      /* relative, stays inside */
    ln("d", "root/dirlink-in");       /* a directory link inside */
    ln("../secret", "root/link-out"); /* leaves the root */
    ln("/etc", "root/etc");           /* absolute: leaves */
    ln("/etc/passwd", "root/passwd");
    ln("../../secret", "root/d/up");
    snprintf(p, sizeof p, "%s/root/fifo", dir);
    CHECK_EQ(mkfifo(p, 0644), 0);
    snprintf(p, sizeof p, "%s/root", dir);
    int root = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
    CHECK(root >= 0);
    return root;
}

static void teardown(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ(system(cmd), 0);
}

static void reads(int root, const char *rel, int use2, const char *want) {
    int fd = static_open(root, rel, use2);
    if (fd < 0)
        fprintf(stderr, "  %s (openat2 %d): %d\n", rel, use2, fd);
    CHECK(fd >= 0);
    char buf[64] = {0};
    CHECK_EQ(read(fd, buf, sizeof buf - 1), (long long)strlen(want));
    CHECK_STR(buf, want);
    close(fd);
}

static void refused(int root, const char *rel, int use2) {
    int fd = static_open(root, rel, use2);
    if (fd >= 0) {
        fprintf(stderr, "  %s (openat2 %d) opened\n", rel, use2);
        close(fd);
    }
    CHECK(fd < 0);
}

static void both_modes(int use2) {
    int root = setup();
    reads(root, "a.txt", use2, "hello");
    reads(root, "d/b.txt", use2, "nested");
    refused(root, "missing", use2);
    refused(root, "../secret", use2);
    refused(root, "d/../../secret", use2);
    refused(root, "link-out", use2);
    refused(root, "etc/passwd", use2);
    refused(root, "passwd", use2);
    refused(root, "d/up", use2);
    refused(root, "a.txt/x", use2);
    /* The root itself, and a FIFO that must not block the open. */
    int fd = static_open(root, ".", use2);
    CHECK(fd >= 0);
    struct stat st;
    CHECK_EQ(fstat(fd, &st), 0);
    CHECK(S_ISDIR(st.st_mode));
    close(fd);
    fd = static_open(root, "fifo", use2);
    CHECK(fd >= 0);
    CHECK_EQ(fstat(fd, &st), 0);
    CHECK(S_ISFIFO(st.st_mode));
    close(fd);
    if (use2) {
        /* openat2 follows links that stay beneath the root. */
        reads(root, "link-in", 1, "hello");
        reads(root, "dirlink-in/b.txt", 1, "nested");
        CHECK_EQ(static_open(root, "link-out", 1), -EXDEV);
    } else {
        /* The walk follows none. */
        CHECK_EQ(static_open(root, "link-in", 0), -ELOOP);
        refused(root, "dirlink-in/b.txt", 0);
        CHECK_EQ(static_open(root, "d/../a.txt", 0), -EXDEV);
    }
    close(root);
    teardown();
}

TEST(open_with_openat2) {
    int root = open("/", O_PATH | O_DIRECTORY);
    int have = static_open_probe(root);
    close(root);
    if (!have) {
        fprintf(stderr, "  openat2 unavailable: skipped\n");
        return;
    }
    both_modes(1);
}

TEST(open_with_walk) {
    both_modes(0);
}
