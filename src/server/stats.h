/* stats.h — per-request accounting (stats.c): the time of each request,
 * what the server's observer is told, and the access log line. */
#ifndef SPINDLE_STATS_H
#define SPINDLE_STATS_H

#include "server/server.h"

/* Records one answered request. res: its response (its headers are read
 * by %{Name}o), or NULL. status 0: none was sent. t0_ns: when its head was
 * complete (stats_clock_ns), 0 if not timed. */
void stats_record(sp_server *s, const sp_req *req, const sp_res *res, int status, uint64_t bytes_in,
                  uint64_t bytes_out, uint64_t t0_ns);
uint64_t stats_clock_ns(void);

/* The status logged for a request whose client left before its answer
 * (nginx's 499, "client closed request"): never sent on the wire, counted
 * by --stats under class="client_closed", not as a 4xx or a 5xx. */
#define SP_STATUS_CLIENT_CLOSED 499

#endif
