/* stats.h — per-request accounting (status class, bytes, latency) into the
 * worker's shared-memory slot, the access log line, and the --stats
 * endpoint that sums every worker's slot (Prometheus text, or an HTML page
 * that refreshes itself). */
#ifndef SPINDLE_STATS_H
#define SPINDLE_STATS_H

#include "server/server.h"

/* Records one answered request. status 0: none was sent. t0_ns: when its
 * head was complete (stats_clock_ns), 0 if not timed. */
void stats_record(sp_server *s, const sp_req *req, int status, uint64_t bytes_in,
                  uint64_t bytes_out, uint64_t t0_ns);
uint64_t stats_clock_ns(void);

/* Adds the GET route serving the counters at path. 0 or -errno. */
int stats_add_route(sp_server *s, const char *path);

#endif
