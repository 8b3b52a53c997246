/* static_open.c — opens files beneath a root fd so that no request can
 * reach outside it: openat2 with RESOLVE_BENEATH, or, on kernels without
 * it, a walk that opens one component at a time and follows no symlink. */
#include "server/static/static_open.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

#define OPEN_FLAGS (O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)

static int openat2_beneath(int root, const char *rel, int flags) {
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = (unsigned long long)flags;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    int fd;
    do
        fd = (int)syscall(SYS_openat2, root, rel, &how, sizeof how);
    while (fd < 0 && errno == EINTR);
    return fd < 0 ? -errno : fd;
}

int static_open_probe(int root) {
    int fd = openat2_beneath(root, ".", O_PATH | O_CLOEXEC);
    if (fd == -ENOSYS || fd == -EPERM)
        return 0;
    if (fd >= 0)
        close(fd);
    return 1;
}

/* The walk: every directory component opened O_PATH | O_NOFOLLOW and
 * checked to be a directory (a symlink opened that way is not one). */
static int walk_beneath(int root, const char *rel) {
    int cur = root;
    const char *p = rel;
    int fd;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        char comp[NAME_MAX + 1];
        if (n == 0 || (n == 2 && p[0] == '.' && p[1] == '.') ||
            (n == 1 && p[0] == '.' && (slash || p != rel))) {
            fd = n == 0 ? -ENOENT : -EXDEV;
            break;
        }
        if (n > NAME_MAX) {
            fd = -ENAMETOOLONG;
            break;
        }
        memcpy(comp, p, n);
        comp[n] = '\0';
        if (!slash) {
            do
                fd = openat(cur, comp, OPEN_FLAGS | O_NOFOLLOW);
            while (fd < 0 && errno == EINTR);
            if (fd < 0)
                fd = -errno;
            break;
        }
        int next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0) {
            fd = -errno;
            break;
        }
        struct stat st = {0};
        if (fstat(next, &st) < 0 || !S_ISDIR(st.st_mode)) {
            fd = S_ISLNK(st.st_mode) ? -ELOOP : -ENOTDIR;
            close(next);
            break;
        }
        if (cur != root)
            close(cur);
        cur = next;
        p = slash + 1;
    }
    if (cur != root)
        close(cur);
    return fd;
}

int static_open(int root, const char *rel, int use_openat2) {
    if (use_openat2)
        return openat2_beneath(root, rel, OPEN_FLAGS);
    return walk_beneath(root, rel);
}
