/* app_module.c — a C application loaded by `spindle --app`: no main(),
 * just routes. Build: make (→ build/examples/app_module.so), then run
 *   build/spindle --app build/examples/app_module.so --bind 127.0.0.1:8080 */
#include "spindle.h"

#include <stdio.h>

static int hello(sp_req *req, sp_res *res, void *ud) {
    sp_str name = sp_req_param(req, "name");
    return (int)sp_res_printf(res, "Hello, %.*s!\n", (int)name.len, name.ptr);
}

static int init(sp_server *s) {
    return sp_route(s, "GET", "/hello/{name}", hello, NULL);
}

SP_APP_MODULE(init)
