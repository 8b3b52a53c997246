/* app_crash.c — a test application whose worker dies on request, for the
 * crash-log tests: /crash?how=segv|abort|exit (a segfault, abort(), exit
 * status 7), /block?s=N (blocks the loop: the watchdog's case), /grow?mb=N
 * (keeps N MiB resident: --max-worker-memory's), and /pid (which worker). */
#include "spindle.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int crash(sp_req *req, sp_res *res, void *ud) {
    sp_str how = sp_req_query_param(req, "how");
    if (how.ptr && how.len == 5 && memcmp(how.ptr, "abort", 5) == 0)
        abort();
    if (how.ptr && how.len == 4 && memcmp(how.ptr, "exit", 4) == 0)
        _exit(7);
    /* A real fault (not raise): the pointer is read from a volatile and the
     * store is volatile, so the compiler can neither drop it nor trap some
     * other way. */
    volatile int *volatile p = NULL;
    *p = 1;
    return sp_res_send(res, 500, "text/plain", "alive\n", 6);
}

static int block(sp_req *req, sp_res *res, void *ud) {
    sp_str s = sp_req_query_param(req, "s");
    sleep((unsigned)(s.ptr ? atoi(s.ptr) : 5));
    return sp_res_send(res, 200, "text/plain", "done\n", 5);
}

/* Kept where the compiler must store it (volatile), or malloc and memset go. */
static char *volatile hoard[16];
static int nhoard;

static int grow(sp_req *req, sp_res *res, void *ud) {
    sp_str mb = sp_req_query_param(req, "mb");
    size_t n = (size_t)(mb.ptr ? atoi(mb.ptr) : 64) << 20;
    char *p = nhoard < 16 ? malloc(n) : NULL; /* the worker's RSS stays past the limit */
    if (p) {
        memset(p, 1, n);
        hoard[nhoard++] = p;
    }
    return p ? sp_res_send(res, 200, "text/plain", "grown\n", 6)
             : sp_res_send(res, 503, "text/plain", "no memory\n", 10);
}

static int pid(sp_req *req, sp_res *res, void *ud) {
    char body[32];
    int n = snprintf(body, sizeof body, "%d\n", (int)getpid());
    return sp_res_send(res, 200, "text/plain", body, (size_t)n);
}

static int init(sp_server *s) {
    int rc = sp_route(s, "GET", "/crash", crash, NULL);
    if (rc == 0)
        rc = sp_route(s, "GET", "/block", block, NULL);
    if (rc == 0)
        rc = sp_route(s, "GET", "/grow", grow, NULL);
    return rc < 0 ? rc : sp_route(s, "GET", "/pid", pid, NULL);
}

SP_APP_MODULE(init)
