/* bus_embed.h — what a binding may use of the bus beyond spindle.h's
 * sp_bus_* (the Python binding: its subscriber count for leak tests, and
 * ending a parked sp_bus_recv when its Python caller goes away), so that
 * the bus's structs (bus.h) stay its own. In bus.c. */
#ifndef SPINDLE_BUS_EMBED_H
#define SPINDLE_BUS_EMBED_H

#include "spindle.h"

#include <stddef.h>

/* The C bus's subscribers in this process (0 without a bus). */
size_t bus_subscriber_count(sp_server *s);
/* Makes sub's parked (or next) sp_bus_recv return -ESHUTDOWN, as the
 * server's stop does; bus_sub_resume undoes it while the server is not
 * stopping (a recv taken over by a new caller goes on). */
void bus_sub_interrupt(sp_bus_sub *sub);
void bus_sub_resume(sp_bus_sub *sub);

#endif
