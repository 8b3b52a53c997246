/* sd_notify.c — one datagram to $NOTIFY_SOCKET (a path, or an abstract
 * name when it starts with '@'), as systemd's sd_notify(3) documents. */
#include "process/sd_notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int sd_notify_send(const char *text) {
    const char *path = getenv("NOTIFY_SOCKET");
    if (!path || !path[0])
        return 0;
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    size_t n = strlen(path);
    if (n >= sizeof sun.sun_path)
        return -ENAMETOOLONG;
    memcpy(sun.sun_path, path, n);
    if (sun.sun_path[0] == '@')
        sun.sun_path[0] = '\0'; /* abstract namespace */
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    ssize_t w = sendto(fd, text, strlen(text), MSG_NOSIGNAL, (struct sockaddr *)&sun, len);
    int err = w < 0 ? -errno : 0;
    close(fd);
    return err;
}
