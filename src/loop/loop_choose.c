/* loop_choose.c — the process-wide choice of loop backend and the one
 * fallback from io_uring to epoll, with its log line. */
#include "loop/loop_choose.h"

#include "base/log.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#ifdef SP_HAVE_VALGRIND
#include <valgrind/valgrind.h>
#endif

/* auto, as the --io-backend flag's default (src/cli/flags.c): a program
 * linking libspindle without the CLI gets what the binary gets. */
static backend_kind chosen = BACKEND_KIND_AUTO;

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

/* The measurements decide what auto means (docs/performance.md, "io_uring"):
 * io_uring used less server CPU per request than epoll in 12 of 18
 * side-by-side rows (keep-alive and close, three published runs; all 6 of
 * the full run) and more on none of TLS, h2c, static files and WSGI. Where
 * it cannot be set up, auto falls back to epoll like uring does.
 *
 * Under valgrind auto is epoll: valgrind (3.19, Debian 12's) holds its one
 * lock through io_uring_enter, so a worker waiting there stops every other
 * thread, the blocking pool's too, and the completion it waits for never
 * comes (make test's valgrind passes hung). --io-backend uring still asks. */
backend_kind backend_kind_auto(void) {
#ifdef SP_HAVE_VALGRIND
    if (RUNNING_ON_VALGRIND)
        return BACKEND_KIND_EPOLL;
#endif
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

/* What a worker's loop will run on for KIND: io_uring is opened and freed
 * once to find out (the start-up banner must not name a backend the
 * workers then fall back from). */
backend_kind backend_kind_effective(backend_kind k) {
    if (k == BACKEND_KIND_AUTO)
        k = backend_kind_auto();
    if (k != BACKEND_KIND_URING)
        return BACKEND_KIND_EPOLL;
    int err = 0;
    void *b = backend_uring_ops.open(&err);
    if (!b)
        return BACKEND_KIND_EPOLL;
    backend_uring_ops.free(b);
    return BACKEND_KIND_URING;
}

const backend_ops *backend_open_chosen(void **b) {
    backend_kind k = chosen == BACKEND_KIND_AUTO ? backend_kind_auto() : chosen;
    if (k == BACKEND_KIND_URING) {
        int err = 0;
        *b = backend_uring_ops.open(&err);
        if (*b)
            return &backend_uring_ops;
        /* Asked for by name, its absence is worth a warning; as the default
         * (auto) it is how this machine is, said once per worker. */
        log_msg(chosen == BACKEND_KIND_AUTO ? LOG_INFO : LOG_WARNING,
                "worker %d: io_uring unavailable: %s (%s); using epoll", (int)getpid(), why(err),
                strerror(err));
    }
    int err = 0;
    *b = backend_epoll_ops.open(&err);
    if (*b)
        return &backend_epoll_ops;
    errno = err;
    return NULL;
}
