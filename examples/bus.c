/* bus.c — topics over HTTP: POST /say?room=R publishes the body on topic R
 * and answers its id; GET /listen?room=R&since=ID waits up to 25 s for the
 * messages after ID (or new ones) and answers them, one "id text" a line,
 * so a client long-polls from the last id it got and misses nothing.
 *   build/examples/bus [ADDR] [BUS]   BUS: memory (default; this one
 *   process) or redis://127.0.0.1:6379 (shared by every server on it) */
#include "spindle.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static sp_server *server;

static void room_of(sp_req *req, const char *name, char *out, size_t cap) {
    sp_str v = sp_req_query_param(req, name);
    size_t n = v.ptr && v.len < cap ? v.len : 0;
    memcpy(out, v.ptr ? v.ptr : "", n);
    out[n] = '\0';
}

static int say(sp_req *req, sp_res *res, void *ud) {
    char room[64], text[4096], id[SP_BUS_ID_MAX];
    room_of(req, "room", room, sizeof room);
    ssize_t n = sp_read(req, text, sizeof text); /* one read is enough for a demo */
    if (n < 0)
        return (int)n;
    int rc = sp_bus_publish(server, room, text, (size_t)n, id);
    if (rc < 0) /* not published: say so, never drop it silently */
        return sp_res_send(res, 503, "text/plain", strerror(-rc), strlen(strerror(-rc)));
    return sp_res_send(res, 200, "text/plain", id, strlen(id));
}

static int listen_room(sp_req *req, sp_res *res, void *ud) {
    char room[64], since[SP_BUS_ID_MAX];
    room_of(req, "room", room, sizeof room);
    room_of(req, "since", since, sizeof since);
    sp_bus_sub *sub = sp_bus_subscribe(server, room, since[0] ? since : NULL);
    if (!sub)
        return -errno;
    sp_bus_msg m;
    int rc = sp_bus_recv(sub, &m, 25000); /* parks this request only */
    while (rc == 1) {
        if (sp_res_printf(res, "%s %.*s\n", m.id, (int)m.len, (const char *)m.data) < 0)
            break;
        rc = sp_bus_recv(sub, &m, 0); /* and whatever else is already there */
    }
    sp_bus_unsubscribe(sub);
    return 0;
}

int main(int argc, char **argv) {
    const char *addr = argc > 1 ? argv[1] : "127.0.0.1:8080";
    server = sp_server_new(NULL);
    if (!server || sp_bus_configure(server, argc > 2 ? argv[2] : "memory") < 0)
        return 1;
    if (sp_server_listen(server, addr) < 0 || sp_route(server, "POST", "/say", say, NULL) < 0 ||
        sp_route(server, "GET", "/listen", listen_room, NULL) < 0)
        return 1;
    printf("bus demo on http://%s/ (POST /say?room=R, GET /listen?room=R&since=ID)\n", addr);
    fflush(stdout);
    return sp_server_run(server) < 0;
}
