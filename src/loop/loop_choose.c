/* loop_choose.c — the process-wide choice of loop backend and the one
 * fallback from io_uring to epoll, with its log line. */
#include "loop/loop_choose.h"

#include "base/log.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static backend_kind chosen = BACKEND_KIND_EPOLL;

void loop_set_default_backend(backend_kind kind) {
    chosen = kind;
}

backend_kind loop_default_backend(void) {
    return chosen;
}

int backend_kind_parse(const char *name) {
    if (!strcmp(name, "epoll"))
        return BACKEND_KIND_EPOLL;
    if (!strcmp(name, "uring") || !strcmp(name, "io_uring"))
        return BACKEND_KIND_URING;
    if (!strcmp(name, "auto"))
        return BACKEND_KIND_AUTO;
    return -1;
}

/* The measurements decide what auto means (README, Performance; bench/
 * README.md, "io_uring"): io_uring used less server CPU per request in 7
 * of 8 side-by-side runs and one syscall fewer per connection without
 * keep-alive (3.3 against 4.3), the same with it. Where it cannot be set
 * up, auto falls back to epoll like uring does. */
backend_kind backend_kind_auto(void) {
    return BACKEND_KIND_URING;
}

static const char *why(int err) {
    switch (err) {
    case ENOSYS:
        return "this kernel has no io_uring";
    case EPERM:
        return "forbidden (a seccomp filter, as in many containers, or "
               "kernel.io_uring_disabled)";
    case EACCES:
        return "not allowed for this user (kernel.io_uring_disabled / io_uring_group)";
    default:
        return strerror(err);
    }
}

const backend_ops *backend_open_chosen(void **b) {
    backend_kind k = chosen == BACKEND_KIND_AUTO ? backend_kind_auto() : chosen;
    if (k == BACKEND_KIND_URING) {
        int err = 0;
        *b = backend_uring_ops.open(&err);
        if (*b)
            return &backend_uring_ops;
        log_msg(LOG_WARNING, "worker %d: io_uring unavailable: %s (%s); using epoll", (int)getpid(),
                why(err), strerror(err));
    }
    int err = 0;
    *b = backend_epoll_ops.open(&err);
    if (*b)
        return &backend_epoll_ops;
    errno = err;
    return NULL;
}
