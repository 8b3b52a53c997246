/* stats.c — accounting of each answered request: its time, what the
 * supervisor's observer is told (the process layer keeps the counters the
 * --stats page sums), and the access log line (the log's own life in a
 * worker is access_log.c's). */
#include "server/stats.h"

#include "server/access_log.h"
#include "server/handler.h"

#include <time.h>

uint64_t stats_clock_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The entry holds pointers to the request's and the response's header
 * arrays, nothing copied or looked up: the formatter finds only the
 * headers its format names. */
void stats_record(sp_server *s, const sp_req *req, const sp_res *res, int status, uint64_t bytes_in,
                  uint64_t bytes_out, uint64_t t0_ns) {
    uint64_t us = t0_ns ? (stats_clock_ns() - t0_ns) / 1000 : 0;
    if (s->obs.request_done)
        s->obs.request_done(s->obs.ud, status, bytes_in, bytes_out, us, t0_ns != 0);
    if (s->access_log) {
        const http_request *h = &req->head;
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        access_entry e = {.client = h->method ? sp_req_client_addr(req) : sp_req_peer(req),
                          .method = h->method,
                          .method_len = h->method ? h->method_len : 0,
                          .target = h->target,
                          .target_len = h->target ? h->target_len : 0,
                          .minor_version = h->minor_version,
                          .proto = req_protocol_label(req),
                          .status = status,
                          .bytes = bytes_out,
                          .req_fields = h->fields,
                          .req_nfields = h->fields ? h->nfields : 0,
                          .res_fields = res ? res->fields : NULL,
                          .res_nfields = res ? res->nfields : 0,
                          .duration_us = us,
                          .time_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000,
                          .pid = s->pid};
        access_log_write(s->access_log, &e);
    }
}

void server_set_timed(sp_server *s, int timed) {
    s->timed = timed;
}
