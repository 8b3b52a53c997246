/* app_privs.c — a test application for the privilege tests: /ids (the
 * worker's real and effective uid and gid, its pid and whether it may dump
 * core) and /open?path=P
 * (whether this worker can open P for reading: "opened", or the errno of
 * the refusal, as an application's file-read bug would see it). */
#include "spindle.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static int ids(sp_req *req, sp_res *res, void *ud) {
    char body[160];
    int n = snprintf(body, sizeof body, "uid=%d euid=%d gid=%d egid=%d pid=%d dumpable=%d\n",
                     (int)getuid(), (int)geteuid(), (int)getgid(), (int)getegid(), (int)getpid(),
                     prctl(PR_GET_DUMPABLE));
    return sp_res_send(res, 200, "text/plain", body, (size_t)n);
}

static int try_open(sp_req *req, sp_res *res, void *ud) {
    sp_str p = sp_req_query_param(req, "path");
    char path[PATH_MAX], body[96];
    if (!p.ptr || p.len == 0 || p.len >= sizeof path)
        return sp_res_send(res, 400, "text/plain", "want ?path=\n", 12);
    memcpy(path, p.ptr, p.len);
    path[p.len] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int n = fd >= 0 ? snprintf(body, sizeof body, "opened\n")
                    : snprintf(body, sizeof body, "errno=%d\n", errno);
    if (fd >= 0)
        close(fd);
    return sp_res_send(res, 200, "text/plain", body, (size_t)n);
}

static int init(sp_server *s) {
    int rc = sp_route(s, "GET", "/ids", ids, NULL);
    return rc < 0 ? rc : sp_route(s, "GET", "/open", try_open, NULL);
}

SP_APP_MODULE(init)
